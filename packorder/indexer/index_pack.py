"""`packorder index-pack`: build a pack's .idx and .rev, byte-identical to `git index-pack`.

The two passes run in the native core (packorder._native.PackIndexer) with the GIL released;
this module owns the options, the files (temporary names, renamed only when complete), thin
pack completion from the repository, --stdin, --verify and the result record.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, NamedTuple

from packorder import _native, gitcmd
from packorder.durable import fsync_dir, write_atomically
from packorder.errors import CorruptPackError, PackError, RepositoryError, UsageError
from packorder.format import idx as idx_format
from packorder.format import object_format as object_formats
from packorder.format import rev as rev_format
from packorder.format.object_format import ObjectFormat
from packorder.indexer import fsck, receive
from packorder.indexer.collisions import check_collisions
from packorder.indexer.stat import pack_info
from packorder.indexer.thin import fix_thin_from
from packorder.native_call import CHECKSUM, INDEXING, RESOLVING, core_errors, run_job
from packorder.progress import ProgressCallback
from packorder.settings import compression_level, delta_base_cache_limit, peak_rss, physical_memory, thread_count

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


class _Settings:
    def __init__(
        self, threads: int, budget: int, index_version: int, off32_limit: int, write_rev: bool, compression: int
    ) -> None:
        self.threads = threads
        self.budget = budget
        self.index_version = index_version
        self.off32_limit = off32_limit
        self.write_rev = write_rev
        self.compression = compression


def _settings(
    config: gitcmd.Config,
    threads: int | None,
    max_memory: int | None,
    index_version: int | None,
    off32_limit: int | None,
    rev_index: bool | None,
) -> _Settings:
    threads = thread_count(config, threads, "pack.threads")
    if threads < 1:
        raise UsageError(f"invalid number of threads: {threads}")
    if max_memory is None:
        # Git's budget for index-pack: core.deltaBaseCacheLimit per thread.
        max_memory = delta_base_cache_limit(config) * threads
    if max_memory < 0:
        raise UsageError(f"invalid memory budget: {max_memory}")
    if index_version is None:
        index_version = config.get_int("pack.indexVersion", 2)
    if index_version not in (1, 2):
        raise UsageError(f"unsupported index version {index_version}")
    if rev_index is None:
        rev_index = config.get_bool("pack.writeReverseIndex", True)
    return _Settings(
        threads=threads,
        budget=max_memory,
        index_version=index_version,
        off32_limit=idx_format.OFF32_LIMIT if off32_limit is None else off32_limit,
        write_rev=rev_index,
        compression=compression_level(config),
    )


class _Run:
    """One indexer handle plus the polling of its progress."""

    def __init__(
        self,
        path: Path,
        settings: _Settings,
        writable: bool,
        detect: bool,
        progress: ProgressCallback | None,
        fmt: ObjectFormat,
        first_title: str | None = PHASE_TITLES[INDEXING],
    ):
        self.native = _native.PackIndexer(
            str(path),
            settings.threads,
            settings.budget,
            physical_memory(),
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


Writer = Callable[[BinaryIO], object]


def _index_writers(
    native, settings: _Settings, checksum: bytes, anomalies: frozenset[int], fmt: ObjectFormat
) -> tuple[bytes, Writer, Writer, int]:
    """(sorted ids, idx writer, rev writer, idx version) for the resolved pack."""
    names, crcs, offsets, rev_positions = native.index_table()
    version = settings.index_version
    if version == 1 and idx_format.needs_v2(offsets, settings.off32_limit):
        version = 2  # as Git does: v1 cannot hold a 64-bit offset

    def write_idx(out: BinaryIO) -> object:
        if version == 1:
            return idx_format.write_v1(out, names, offsets, checksum, fmt)
        return idx_format.write_v2(out, names, crcs, offsets, checksum, settings.off32_limit, anomalies, fmt)

    def write_rev(out: BinaryIO) -> object:
        return rev_format.write(out, rev_positions, checksum, fmt)

    return names, write_idx, write_rev, version


def _derive(name: Path, old: str, new: str) -> Path:
    if not name.name.endswith("." + old):
        raise UsageError(f"packfile name '{name}' does not end with '.{old}'")
    return name.with_name(name.name[: -len(old)] + new)


def _check_resolved(run: _Run) -> None:
    left = run.native.unresolved_offsets()
    if left:
        noun = "delta" if len(left) == 1 else "deltas"
        raise CorruptPackError(f"pack has {len(left)} unresolved {noun}", left[0], str(run.path))


@contextlib.contextmanager
def _cleanup_on_error(paths: list[Path]) -> Iterator[None]:
    try:
        yield
    except BaseException:
        for p in paths:
            with contextlib.suppress(OSError):
                p.unlink()
        raise


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
    started = time.perf_counter()
    if (pack is None) == (stdin is None):
        raise UsageError("give either a pack file or {stdin}", params=("stdin",))
    if fix_thin and stdin is None:
        raise UsageError("{fix_thin} requires {stdin}", params=("fix_thin", "stdin"))
    if verify and stdin is not None:
        raise UsageError("{verify} cannot be used with {stdin}", params=("verify", "stdin"))
    if stat is not None and not verify:
        raise UsageError("{stat} requires {verify}", params=("stat", "verify"))
    # Git dies (128) on these, rather than showing its usage.
    if promisor is not None and stdin is None:
        raise PackError("--promisor cannot be used with a pack name")
    if pack_header is not None and stdin is None:
        raise UsageError("{pack_header} requires {stdin}", params=("pack_header", "stdin"))
    header = receive.pack_header(pack_header) if pack_header is not None else b""
    if object_format is not None:
        object_formats.named(object_format)  # Git's words for a name it does not know
        if stdin is not None:
            raise PackError("options '--object-format' and '--stdin' cannot be used together")

    git_dir: Path | None = None
    if stdin is not None or repo is not None:
        git_dir = gitcmd.find_git_dir(repo)
    else:
        with contextlib.suppress(RepositoryError):
            git_dir = gitcmd.find_git_dir()
    config = gitcmd.read_config(git_dir)
    # As Git: --object-format names the pack's hash; without it, the repository's (SHA-1
    # outside one).
    fmt = object_formats.named(object_format or config.object_format)
    checks = fsck.checks(
        strict=strict,
        fsck_objects=fsck_objects,
        self_contained=check_self_contained_and_connected,
        fmt=fmt,
        msg_types=fsck_msg_types,
    )
    settings = _settings(config, threads, max_memory, index_version, off32_limit, rev_index)
    # A special blob a promisor pack's trees name, or a partial clone's, may be promised.
    promised = promisor not in (None, False) or config.get("extensions.partialclone") is not None

    # Git's titles: what fetch-pack and receive-pack show their users while a pack arrives.
    first = progress_title or ("Receiving objects" if stdin is not None else PHASE_TITLES[INDEXING])
    received: Path | None = None
    got: receive.Received | None = None
    if stdin is not None:
        assert git_dir is not None
        t = time.perf_counter()
        first_pass = {
            "detect_collisions": detect_collisions,
            "budget": settings.budget,
            "threads": settings.threads,
            "checks": tuple(checks) if checks is not None else None,
        }
        pack_dir = git_dir / "objects" / "pack"
        got = receive.receive(stdin, pack_dir, header, max_input_size, fmt.name, progress, first, first_pass)
        receive_seconds = time.perf_counter() - t
        pack_path = received = got.path
    else:
        pack_path = Path(pack)  # type: ignore[arg-type]
        if not pack_path.is_file():
            why = "no such file" if not pack_path.exists() else ("a directory" if pack_path.is_dir() else "not a file")
            raise PackError(f"cannot open packfile '{pack_path}': {why}")
        if max_input_size and pack_path.stat().st_size > max_input_size:
            raise receive.too_large(max_input_size)

    temporaries = [received] if received else []
    with _cleanup_on_error(temporaries):
        if output is not None:
            idx_path = Path(output)
        elif received is None:
            idx_path = _derive(pack_path, "pack", "idx")
        else:
            idx_path = received  # replaced by the final name below
        if settings.write_rev and received is None:
            _derive(idx_path, "idx", "rev")  # fail on a bad name before the work, not after
        anomalies: frozenset[int] = frozenset()
        if verify:
            if not idx_path.is_file():
                raise PackError(f"cannot verify: index file '{idx_path}' does not exist")
            existing = idx_format.read(str(idx_path), fmt)
            settings.index_version = existing.version
            anomalies = existing.large_small_offsets

        run = _Run(
            pack_path,
            settings,
            writable=fix_thin,
            detect=detect_collisions,
            progress=progress,
            fmt=fmt,
            # What arrived through a pipe was shown arriving (receive); its scan is not shown.
            first_title=None if got is not None and not got.copied else first,
        )
        if got is not None:
            run.seconds["receive"] = receive_seconds
        if got is not None and got.parsed is not None:
            run.call("scan", run.native.adopt, got.parsed)  # made as the pack arrived
        else:
            if checks is not None:
                run.native.set_checks(checks)
            if got is not None and got.copied:
                receive.scan_copied(run, got, first, fmt)
            else:
                run.call("scan", run.native.scan)
        if on_end_of_input is not None:
            on_end_of_input()
        if stat is not None:
            run.native.record_shape()
        if not run.native.stats().get("deltas"):
            run.titles[RESOLVING] = None  # as Git: no deltas, no "Resolving deltas" line
        run.call("resolve", run.native.resolve)

        def failed_checks() -> None:
            # Resolving stopped at an object that failed: its failure, as Git dies at it.
            if checks is not None and run.native.checks_failed():
                fsck.finish(run.native, checks, git_dir, fmt, promised)  # raises

        failed_checks()
        appended = 0
        if fix_thin and run.native.unresolved_offsets():
            assert git_dir is not None
            appended = fix_thin_from(run, git_dir, settings.compression)
            failed_checks()
        _check_resolved(run)
        checksum = run.native.checksum
        if appended:
            checksum = run.call("fix_thin", run.native.finish_thin)

        info = pack_info(run.native, run.native.pack_size, stat == "only", fmt) if stat is not None else None
        checked = None
        if checks is not None:
            t = time.perf_counter()
            checked = fsck.finish(run.native, checks, git_dir, fmt, promised)
            run.seconds["check"] = time.perf_counter() - t
        names, write_idx, write_rev, version = _index_writers(run.native, settings, checksum, anomalies, fmt)
        if git_dir is not None and config.object_format == fmt.name:
            # Git compares with the repository it runs in, whatever the mode (a repository of
            # the other hash can hold none of the pack's objects).
            t = time.perf_counter()
            check_collisions(git_dir, names, pack_path.resolve() if received is None else None, fmt)
            run.seconds["collisions"] = time.perf_counter() - t

        keep_path = None
        if received is not None:
            assert git_dir is not None
            final = received.parent / f"pack-{checksum.hex()}.pack"
            idx_path = final.with_suffix(".idx")
            # Written before the pack is in place, as Git does, so no repack removes it first;
            # a .keep there already is not ours (Git then reports "pack", not "keep").
            if keep and _write_special(final.with_suffix(".keep"), keep):
                keep_path = final.with_suffix(".keep")
                temporaries.append(keep_path)
            promisor_file = final.with_suffix(".promisor")
            if promisor not in (None, False) and _write_special(promisor_file, promisor):
                temporaries.append(promisor_file)
            if final.exists():
                received.unlink()
            else:
                os.chmod(received, 0o444)
                os.replace(received, final)
            pack_path = final
            temporaries.clear()

        if keep and received is None and not verify:
            # As Git: the .keep of a pack file is named after the pack (a --verify writes none).
            keep_path = _derive(pack_path, "pack", "keep")
            _write_special(keep_path, keep)
        rev_path = _derive(idx_path, "idx", "rev") if settings.write_rev else None
        if verify:
            _verify_same(idx_path, write_idx, "index")
            if rev_path is not None and rev_path.exists():
                _verify_same(rev_path, write_rev, "reverse index")
        else:
            if rev_path is not None:
                write_atomically(rev_path, write_rev)
            write_atomically(idx_path, write_idx)
            fsync_dir(idx_path.parent)

    stats = dict(run.native.stats())
    seconds = dict(run.seconds)
    seconds["total"] = time.perf_counter() - started
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
        threads=settings.threads,
        memory_budget=settings.budget,
        verified=verify,
        seconds=seconds,
        peak_rss_bytes=peak_rss(),
        stats=stats,
        checked=checked,
        pack_info=info,
        past_end=got.rest if got is not None else b"",
    )


def _write_special(path: Path, message: str | bool) -> bool:
    """A .keep or .promisor file holding `message` (none for a bare --keep or --promisor);
    whether it was written: one already there is left as it is, as Git leaves it."""
    if path.exists():
        return False
    text = f"{message}\n" if message and message is not True else ""
    write_atomically(path, lambda f: f.write(text.encode()), 0o644)
    return True


def _verify_same(path: Path, write: Writer, what: str) -> None:
    buf = io.BytesIO()
    write(buf)
    expected = buf.getvalue()
    actual = path.read_bytes()
    if actual == expected:
        return
    pairs = enumerate(zip(actual, expected, strict=False))
    at = next((i for i, (a, b) in pairs if a != b), min(len(actual), len(expected)))
    # Git's words (its checked file writer's), then where the two part.
    raise PackError(f"sha1 file '{path}' validation error: the {what} differs from the pack's from byte {at}")
