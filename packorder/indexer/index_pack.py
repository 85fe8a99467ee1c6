"""`packorder index-pack`: build a pack's .idx and .rev, byte-identical to `git index-pack`.

The two passes run in the native core (packorder._native.PackIndexer) with the GIL released;
this module owns the options, the files (temporary names, renamed only when complete), thin
pack completion from the repository, --stdin, --verify and the result record.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO, NamedTuple

from packorder import _native, gitcmd
from packorder.errors import CorruptPackError, PackError, RepositoryError
from packorder.format import idx as idx_format
from packorder.format import object_format as object_formats
from packorder.format import rev as rev_format
from packorder.format.object_format import ObjectFormat
from packorder.indexer import fsck, receive
from packorder.indexer.collisions import check_collisions
from packorder.indexer.files import Writer, cleanup_on_error, derive, write_or_verify, write_special
from packorder.indexer.request import IndexPackRequest, Settings, read_settings
from packorder.indexer.stat import pack_info
from packorder.indexer.thin import fix_thin_from
from packorder.native_call import CHECKSUM, INDEXING, RESOLVING, core_errors, run_job
from packorder.progress import ProgressCallback
from packorder.settings import Limits, peak_rss, physical_memory

PHASE_TITLES = {INDEXING: "Indexing objects", RESOLVING: "Resolving deltas", CHECKSUM: "Checksumming"}


class IndexResult(NamedTuple):
    """What index_pack did (a named tuple: see format/idx.py's PackIndex for why)."""

    pack: Path
    idx: Path
    rev: Path | None
    keep: Path | None
    checksum: str
    objects: int
    deltas: int
    appended_bases: int
    pack_bytes: int
    index_version: int
    threads: int
    memory_budget: int
    verified: bool
    seconds: dict[str, float]
    peak_rss_bytes: int
    stats: dict[str, int]
    # Git's object checks (--strict, --fsck-objects): the warnings they printed, the
    # .gitmodules blobs nobody has (Git prints their ids on stdout) and how many linked
    # objects only the repository holds.
    checked: fsck.Outcome | None = None
    # --verify-stat: Git's listing of the objects and chain lengths.
    pack_info: list[str] | None = None
    # From a stream: what was read past the pack's end (Git echoes it after the pack's name).
    past_end: bytes = b""


class _Run:
    """One indexer handle plus the polling of its progress."""

    def __init__(
        self,
        path: Path,
        settings: Settings,
        writable: bool,
        detect: bool,
        progress: ProgressCallback | None,
        fmt: ObjectFormat,
        first_title: str | None = PHASE_TITLES[INDEXING],
    ):
        self.native = _native.PackIndexer(
            str(path),
            Limits(settings.threads, settings.budget, physical_memory()),
            detect,
            writable,
            object_format=fmt.name,
        )
        self.path = path
        self.progress = progress
        self.titles: dict[int, str | None] = {**PHASE_TITLES, INDEXING: first_title}
        self.seconds: dict[str, float] = {}

    def call(self, name: str, fn, *args):
        start = time.perf_counter()
        out = run_job(self.native, lambda: fn(*args), title=self.titles, path=self.path, progress=self.progress)
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
        return out


def _index_writers(
    native, settings: Settings, checksum: bytes, anomalies: frozenset[int], fmt: ObjectFormat
) -> tuple[bytes, Writer, Writer, int]:
    """(sorted ids, idx writer, rev writer, idx version) for the resolved pack."""
    table = native.index_table()
    names, offsets = table.names, table.offsets
    version = settings.index_version
    if version == 1 and idx_format.needs_v2(offsets, settings.off32_limit):
        version = 2  # as Git does: v1 cannot hold a 64-bit offset

    def write_idx(out: BinaryIO) -> object:
        if version == 1:
            return idx_format.write_v1(out, names, offsets, checksum, fmt)
        return idx_format.write_v2(out, names, table.crcs, offsets, checksum, settings.off32_limit, anomalies, fmt)

    def write_rev(out: BinaryIO) -> object:
        return rev_format.write(out, table.rev_positions, checksum, fmt)

    return names, write_idx, write_rev, version


def _check_resolved(run: _Run) -> None:
    left = run.native.unresolved_offsets()
    if left:
        noun = "delta" if len(left) == 1 else "deltas"
        raise CorruptPackError(f"pack has {len(left)} unresolved {noun}", left[0], str(run.path))


@core_errors
def index_pack(
    pack: str | os.PathLike[str] | None = None,
    *,
    stdin: BinaryIO | None = None,
    repo: str | os.PathLike[str] | None = None,
    output: str | os.PathLike[str] | None = None,
    index_version: int | None = None,
    off32_limit: int | None = None,
    rev_index: bool | None = None,
    fix_thin: bool = False,
    verify: bool = False,
    keep: str | bool | None = None,
    promisor: str | bool | None = None,
    pack_header: str | None = None,
    max_input_size: int | None = None,
    object_format: str | None = None,
    on_end_of_input: Callable[[], None] | None = None,
    progress_title: str | None = None,
    strict: bool = False,
    fsck_objects: bool = False,
    fsck_msg_types: Sequence[str] = (),
    check_self_contained_and_connected: bool = False,
    stat: str | None = None,
    threads: int | None = None,
    max_memory: int | None = None,
    detect_collisions: bool = True,
    progress: ProgressCallback | None = None,
) -> IndexResult:
    """Index a pack: write its .idx (and .rev) as `git index-pack` would.

    Either `pack` names a pack file, or `stdin` is a binary stream carrying one, which is
    stored in the repository's objects/pack (like `git index-pack --stdin`), read as Git
    reads it: a pipe never more than 4096 bytes past the pack's end (an unbuffered stream,
    such as `sys.stdin.buffer.raw`, in Git's very read(2) calls), what was read past it being
    the result's `past_end`; a regular file to its end, where the pack must end too. Raises a
    PackError subclass on bad input; nothing is left behind then.

    As Git's options: `promisor` writes the stored pack's .promisor (with its message);
    `pack_header` is the header the caller read from `stdin` already ("2,OBJECTS");
    `max_input_size` fails a larger pack; `object_format` names the hash of a pack file
    outside a repository; `on_end_of_input` is called once the whole pack is read;
    `progress_title` replaces the first phase's title ("Receiving objects" from `stdin`).
    `strict` and `fsck_objects` check every object by Git's fsck rules (`fsck_msg_types`:
    the values of `--strict=` and `--fsck-objects=`), `strict` and
    `check_self_contained_and_connected` that every object linked to is in the pack or the
    repository; a failure raises fsck.FsckError. `stat` ("all" or "only", with `verify`)
    lists the objects and chain lengths as `--verify-stat` and `--verify-stat-only` do.
    """
    request = IndexPackRequest(
        pack=pack,
        stdin=stdin,
        repo=repo,
        output=output,
        index_version=index_version,
        off32_limit=off32_limit,
        rev_index=rev_index,
        fix_thin=fix_thin,
        verify=verify,
        keep=keep,
        promisor=promisor,
        pack_header=pack_header,
        max_input_size=max_input_size,
        object_format=object_format,
        on_end_of_input=on_end_of_input,
        progress_title=progress_title,
        strict=strict,
        fsck_objects=fsck_objects,
        fsck_msg_types=fsck_msg_types,
        check_self_contained_and_connected=check_self_contained_and_connected,
        stat=stat,
        threads=threads,
        max_memory=max_memory,
        detect_collisions=detect_collisions,
    )
    request.check()
    return _IndexPack(request, progress).run()


class _IndexPack:
    """One index-pack, step by step: open (the repository, its configuration, the checks),
    take the pack (a file, or a stream stored under a temporary name), index it (scan,
    resolve, complete a thin pack), then install the received pack and write (or verify)
    the .idx and .rev. Whatever it made is removed if a step fails."""

    def __init__(self, request: IndexPackRequest, progress: ProgressCallback | None) -> None:
        self.request = request
        self.progress = progress
        self.started = time.perf_counter()
        self.header = receive.pack_header(request.pack_header) if request.pack_header is not None else b""
        request.check_object_format()
        self.received: Path | None = None
        self.got: receive.Received | None = None
        self.receive_seconds = 0.0

    def run(self) -> IndexResult:
        request = self.request
        self._open()
        pack_path = self._take()
        temporaries = [self.received] if self.received else []
        with cleanup_on_error(temporaries):
            idx_path, anomalies = self._idx_path(pack_path)
            run, appended, checksum = self._index(pack_path)
            info = None
            if request.stat is not None:
                info = pack_info(run.native, run.native.pack_size, request.stat == "only", self.fmt)
            checked = None
            if self.checks is not None:
                t = time.perf_counter()
                checked = fsck.finish(run.native, self.checks, self.git_dir, self.fmt, self.promised)
                run.seconds["check"] = time.perf_counter() - t
            names, write_idx, write_rev, version = _index_writers(
                run.native, self.settings, checksum, anomalies, self.fmt
            )
            if self.git_dir is not None and self.config.object_format == self.fmt.name:
                # Git compares with the repository it runs in, whatever the mode (a repository of
                # the other hash can hold none of the pack's objects).
                t = time.perf_counter()
                given = pack_path.resolve() if self.received is None else None
                check_collisions(self.git_dir, names, given, self.fmt)
                run.seconds["collisions"] = time.perf_counter() - t
            keep_path = None
            if self.received is not None:
                pack_path, idx_path, keep_path = self._install_received(checksum, temporaries)
            if request.keep and self.received is None and not request.verify:
                # As Git: the .keep of a pack file is named after the pack (a --verify writes none).
                keep_path = derive(pack_path, "pack", "keep")
                write_special(keep_path, request.keep)
            rev_path = derive(idx_path, "idx", "rev") if self.settings.write_rev else None
            write_or_verify(request.verify, idx_path, rev_path, write_idx, write_rev)
        stats = dict(run.native.stats())
        seconds = dict(run.seconds)
        seconds["total"] = time.perf_counter() - self.started
        return IndexResult(
            pack=pack_path,
            idx=idx_path,
            rev=rev_path,
            keep=keep_path,
            checksum=checksum.hex(),
            objects=stats.get("objects", 0),
            deltas=stats.get("deltas", 0),
            appended_bases=appended,
            pack_bytes=run.native.pack_size,
            index_version=version,
            threads=self.settings.threads,
            memory_budget=self.settings.budget,
            verified=request.verify,
            seconds=seconds,
            peak_rss_bytes=peak_rss(),
            stats=stats,
            checked=checked,
            pack_info=info,
            past_end=self.got.rest if self.got is not None else b"",
        )

    def _open(self) -> None:
        """The repository (if any), its configuration, the pack's hash, the checks asked for
        and the settings."""
        request = self.request
        self.git_dir: Path | None = None
        if request.stdin is not None or request.repo is not None:
            self.git_dir = gitcmd.find_git_dir(request.repo)
        else:
            with contextlib.suppress(RepositoryError):
                self.git_dir = gitcmd.find_git_dir()
        self.config = config = gitcmd.read_config(self.git_dir)
        # As Git: --object-format names the pack's hash; without it, the repository's (SHA-1
        # outside one).
        self.fmt = object_formats.named(request.object_format or config.object_format)
        self.checks = fsck.checks(
            strict=request.strict,
            fsck_objects=request.fsck_objects,
            self_contained=request.check_self_contained_and_connected,
            fmt=self.fmt,
            msg_types=request.fsck_msg_types,
        )
        self.settings = read_settings(
            config, request.threads, request.max_memory, request.index_version, request.off32_limit, request.rev_index
        )
        # A special blob a promisor pack's trees name, or a partial clone's, may be promised.
        self.promised = request.promisor not in (None, False) or config.get("extensions.partialclone") is not None
        # Git's titles: what fetch-pack and receive-pack show their users while a pack arrives.
        self.first = request.progress_title or (
            "Receiving objects" if request.stdin is not None else PHASE_TITLES[INDEXING]
        )

    def _take(self) -> Path:
        """The pack to index: the file named, or the stream stored in objects/pack under a
        temporary name (scanned as it arrives)."""
        request = self.request
        if request.stdin is None:
            pack_path = Path(request.pack)  # type: ignore[arg-type]
            if not pack_path.is_file():
                why = (
                    "no such file"
                    if not pack_path.exists()
                    else ("a directory" if pack_path.is_dir() else "not a file")
                )
                raise PackError(f"cannot open packfile '{pack_path}': {why}")
            if request.max_input_size and pack_path.stat().st_size > request.max_input_size:
                raise receive.too_large(request.max_input_size)
            return pack_path
        assert self.git_dir is not None
        t = time.perf_counter()
        first_pass = {
            "detect_collisions": request.detect_collisions,
            "budget": self.settings.budget,
            "threads": self.settings.threads,
            "checks": self.checks,
        }
        pack_dir = self.git_dir / "objects" / "pack"
        self.got = got = receive.receive(
            request.stdin,
            pack_dir,
            self.header,
            request.max_input_size,
            self.fmt.name,
            self.progress,
            self.first,
            first_pass,
        )
        self.receive_seconds = time.perf_counter() - t
        self.received = got.path
        return got.path

    def _idx_path(self, pack_path: Path) -> tuple[Path, frozenset[int]]:
        """Where the .idx goes (a received pack's is named once its checksum is known), and
        with --verify the existing index's oddities to reproduce."""
        request = self.request
        if request.output is not None:
            idx_path = Path(request.output)
        elif self.received is None:
            idx_path = derive(pack_path, "pack", "idx")
        else:
            idx_path = self.received  # replaced by the final name below
        if self.settings.write_rev and self.received is None:
            derive(idx_path, "idx", "rev")  # fail on a bad name before the work, not after
        anomalies: frozenset[int] = frozenset()
        if request.verify:
            if not idx_path.is_file():
                raise PackError(f"cannot verify: index file '{idx_path}' does not exist")
            existing = idx_format.read(str(idx_path), self.fmt)
            self.settings.index_version = existing.version
            anomalies = existing.large_small_offsets
        return idx_path, anomalies

    def _index(self, pack_path: Path) -> tuple[_Run, int, bytes]:
        """Both passes over the pack, a thin pack completed: the run, how many bases were
        appended, and the pack's checksum."""
        request, got, checks = self.request, self.got, self.checks
        run = _Run(
            pack_path,
            self.settings,
            writable=request.fix_thin,
            detect=request.detect_collisions,
            progress=self.progress,
            fmt=self.fmt,
            # What arrived through a pipe was shown arriving (receive); its scan is not shown.
            first_title=None if got is not None and not got.copied else self.first,
        )
        if got is not None:
            run.seconds["receive"] = self.receive_seconds
        if got is not None and got.parsed is not None:
            run.call("scan", run.native.adopt, got.parsed)  # made as the pack arrived
        else:
            if checks is not None:
                run.native.set_checks(checks)
            if got is not None and got.copied:
                receive.scan_copied(run, got, self.first, self.fmt)
            else:
                run.call("scan", run.native.scan)
        if request.on_end_of_input is not None:
            request.on_end_of_input()
        if request.stat is not None:
            run.native.record_shape()
        if not run.native.stats().get("deltas"):
            run.titles[RESOLVING] = None  # as Git: no deltas, no "Resolving deltas" line
        run.call("resolve", run.native.resolve)
        self._failed_checks(run)
        appended = 0
        if request.fix_thin and run.native.unresolved_offsets():
            assert self.git_dir is not None
            appended = fix_thin_from(run, self.git_dir, self.settings.compression)
            self._failed_checks(run)
        _check_resolved(run)
        checksum = run.native.checksum
        if appended:
            checksum = run.call("fix_thin", run.native.finish_thin)
        return run, appended, checksum

    def _failed_checks(self, run: _Run) -> None:
        # Resolving stopped at an object that failed: its failure, as Git dies at it.
        if self.checks is not None and run.native.checks_failed():
            fsck.finish(run.native, self.checks, self.git_dir, self.fmt, self.promised)  # raises

    def _install_received(self, checksum: bytes, temporaries: list[Path]) -> tuple[Path, Path, Path | None]:
        """The received pack under its final name, with its .keep and .promisor: (pack, idx,
        keep)."""
        request, received = self.request, self.received
        assert self.git_dir is not None and received is not None
        final = received.parent / f"pack-{checksum.hex()}.pack"
        keep_path = None
        # Written before the pack is in place, as Git does, so no repack removes it first;
        # a .keep there already is not ours (Git then reports "pack", not "keep").
        if request.keep and write_special(final.with_suffix(".keep"), request.keep):
            keep_path = final.with_suffix(".keep")
            temporaries.append(keep_path)
        promisor_file = final.with_suffix(".promisor")
        if request.promisor not in (None, False) and write_special(promisor_file, request.promisor):
            temporaries.append(promisor_file)
        if final.exists():
            received.unlink()
        else:
            os.chmod(received, 0o444)
            os.replace(received, final)
        temporaries.clear()
        return final, final.with_suffix(".idx"), keep_path
