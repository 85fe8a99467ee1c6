"""What a repack starts from: the repack lock, the packs and loose objects that exist when it
starts (only these may be removed at the end), and Git's walk of every reachable object.

Taken before numpy and the rest of the repack are imported, so that `git rev-list` walks the
history on one core while Python loads and reads pack indexes on the other (the walk is most
of a reuse repack's time). The walk starts only after the listing: a pack pushed in between
would otherwise be listed, and so removable, while its objects were invisible to the walk.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import threading
from pathlib import Path

from packorder import _native, gitcmd, settings
from packorder.errors import RepositoryError, UsageError
from packorder.format import object_format as object_formats
from packorder.format.object_format import ObjectFormat
from packorder.orders.catalog import CATALOG, DEFAULT_ORDER, configured_order
from packorder.repacking import lock as lock_mod
from packorder.repacking import native_walk, recovery
from packorder.repacking.native_walk import graft_roots
from packorder.store.listing import alternates, list_loose, list_packs

IN_COMMIT_ORDER = ("--in-commit-order",)
# What the default branch (HEAD) holds that no tag does: the unreleased history a fetch from
# the last release wants (the `history` order writes the blob families it touches first).
# Only HEAD: on libgit2 every branch's unreleased blobs lie in families of 48 of the 67 MB of
# blobs, HEAD's in 12 MB, so gathering all of them gathered little (docs/locality.md).
# --ignore-missing: an unborn HEAD walks nothing instead of failing the repack.
UNRELEASED = ("--ignore-missing", "HEAD", "--not", "--tags")


class ObjectWalk:
    """`git rev-list --objects` of everything, read and parsed natively (without the GIL) in a
    thread as it streams, so the caller can do other work meanwhile. Reading it from Python
    stalled Git on a full pipe whenever imports held the GIL."""

    def __init__(
        self,
        git_dir: Path,
        fmt: ObjectFormat,
        missing_ok: bool,
        extra: tuple[str, ...] = (),
        revs: tuple[str, ...] | None = None,
    ) -> None:
        """`revs`: the revisions to walk; by default every ref, reflog and index entry. Git
        prints ids of `fmt`, the repository's hash."""
        # Git prints the same commits and the same other objects in the same order with
        # --in-commit-order as without, only interleaved (checked on libgit2, redis and git/git:
        # docs/repack.md); so one such walk gives the discovery order and each object's
        # introducing commit.
        self.in_commit_order = "--in-commit-order" in extra
        self._result: tuple[bytes, bytes, bytes] | None = None
        args = [gitcmd.GIT, "--git-dir", str(git_dir), "rev-list", "--objects", *extra]
        roots: list[str] = []
        if revs is not None:
            args += revs
        else:
            args += ["--all", "--reflog"]
            if (git_dir / "index").exists():
                args.append("--indexed-objects")
            roots = graft_roots(git_dir)
            if roots:
                args += ["--ignore-missing", "--stdin"]
        if missing_ok:
            args.append("--missing=print")
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if roots else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=gitcmd.git_env(),
        )
        if roots:
            assert self.proc.stdin is not None
            # rev-list reads all of its standard input before it prints anything.
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.write("".join(r + "\n" for r in roots).encode())
            self.proc.stdin.close()
        self.parser = _native.RevList(fmt.name)
        self.error: BaseException | None = None
        self.stderr = b""
        self.thread = threading.Thread(target=self._pump, name="packorder-rev-list", daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        try:
            self.parser.feed_fd(self.proc.stdout.fileno())
        except BaseException as e:  # reported by result()
            self.error = e
            self.proc.kill()
        self.stderr = self.proc.stderr.read()

    def result(self) -> native_walk.Walked:
        """The objects in the order Git printed them; the same again on later calls."""
        if self._result is not None:
            return self._result
        self.thread.join()
        code = self.proc.wait()
        if self.error is not None:
            raise RepositoryError(f"cannot list the repository's objects: {self.error}")
        if code != 0:
            raise native_walk.walk_failed(self.stderr, code)
        self._result = native_walk.Walked(*self.parser.finish())
        return self._result

    def graph(self) -> None:
        """Git's walk records no graph: a bitmap reads it from the new pack."""
        return None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.thread.join()
        self.proc.wait()


class GitBeside:
    """A Git command run beside the walk, its output kept in temporary files: nothing reads it
    until the walk is done, and in a pipe Git would stop once 64 KiB wait there (git/git's
    HEAD lists 6.7 MB of commits; `show-ref -d` of about 700 tags fills a pipe)."""

    def __init__(self, git_dir: Path, *args: str) -> None:
        self.out, self.err = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop)
        self.proc = subprocess.Popen(
            [gitcmd.GIT, "--git-dir", str(git_dir), *args],
            stdin=subprocess.DEVNULL,
            stdout=self.out,
            stderr=self.err,
            env=gitcmd.git_env(),
        )

    def output(self) -> tuple[int, bytes, bytes]:
        """Its exit status, standard output and standard error, once it has ended."""
        code = self.proc.wait()
        self.out.seek(0)
        self.err.seek(0)
        return code, self.out.read(), self.err.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.out.close()
        self.err.close()


class HeadWalk:
    """`git rev-list HEAD` with each commit's root tree, run beside the walk, for the `paths`
    order (head_side.py). An unborn HEAD holds nothing."""

    def __init__(self, git_dir: Path, fmt: ObjectFormat) -> None:
        self.fmt = fmt
        args = ("rev-list", "--no-commit-header", "--format=%H %T", "--ignore-missing", "HEAD")
        self.git = GitBeside(git_dir, *args)

    def result(self) -> tuple[bytes, bytes]:
        """HEAD's commits and their root trees, ids one after another."""
        code, out, err = self.git.output()
        if code != 0:
            line = err.decode(errors="replace").strip().splitlines()
            raise RepositoryError(f"cannot walk HEAD's commits: {line[-1] if line else 'git rev-list failed'}")
        width = 2 * self.fmt.rawsz
        text = out.decode("ascii", errors="replace").split()
        if len(text) % 2 or any(len(t) != width for t in text):
            raise RepositoryError("cannot walk HEAD's commits: unexpected output from git rev-list")
        try:
            commits, trees = bytes.fromhex("".join(text[0::2])), bytes.fromhex("".join(text[1::2]))
        except ValueError:
            raise RepositoryError("cannot walk HEAD's commits: unexpected output from git rev-list") from None
        return commits, trees

    def stop(self) -> None:
        self.git.stop()


class TagTips:
    """`git show-ref --tags -d`, run beside the walk: each tag ref's target and what it peels to."""

    def __init__(self, git_dir: Path) -> None:
        self.git = GitBeside(git_dir, "show-ref", "--tags", "-d")

    def ids(self) -> list[bytes]:
        # show-ref exits 1 when there is no tag: no tag tips, not an error.
        _, out, _ = self.git.output()
        return sorted({bytes.fromhex(line.split()[0]) for line in out.decode().splitlines() if line.strip()})

    def stop(self) -> None:
        self.git.stop()


class Snapshot:
    """The lock (when repacking in place), the listing, and the walk started after it. Use as
    a context manager: leaving it stops whatever still runs and releases the lock."""

    def __init__(self, git_dir: Path, locked: bool, config: gitcmd.Config) -> None:
        self.git_dir = git_dir
        self.locked = locked
        self.config = config
        self.fmt = object_formats.named(config.object_format)
        self.lock: lock_mod.RepositoryLock | None = None
        self.local_packs: list[Path] = []
        self.foreign_packs: list[Path] = []
        self.loose: list[tuple[bytes, Path]] = []
        self.foreign_loose: list[tuple[bytes, Path]] = []  # the alternates' loose objects
        self.walk: ObjectWalk | native_walk.NativeWalk | None = None
        self.tags: TagTips | None = None
        # For the orders that place objects by where they sit in history: the walk in commit
        # order (the main walk itself, made --in-commit-order) and the walk of unreleased
        # history, run beside it on the other core.
        self.intro_walk: ObjectWalk | native_walk.NativeWalk | None = None
        self.unreleased_walk: ObjectWalk | None = None
        self.head_walk: HeadWalk | None = None  # HEAD's commits, for the `paths` order
        self.order = DEFAULT_ORDER  # the order whose walks were started
        self.warnings: list[str] = []  # what taking it warned about (a lock taken over, leftovers)

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for run in (self.walk, self.tags, self.intro_walk, self.unreleased_walk, self.head_walk):
            if run is not None:
                run.stop()
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    @property
    def objects_dir(self) -> Path:
        return self.git_dir / "objects"

    def take_history_walks(self) -> tuple[ObjectWalk | None, ObjectWalk | None, HeadWalk | None]:
        """The `--in-commit-order` walk, the walk of unreleased history and the walk of HEAD's
        commits, if they were started, handed over once."""
        walks = (self.intro_walk, self.unreleased_walk, self.head_walk)
        self.intro_walk = self.unreleased_walk = self.head_walk = None
        return walks

    def take_walk(self) -> tuple[ObjectWalk, TagTips]:
        """The walk and tag listing started with the snapshot, handed over once."""
        if self.walk is None or self.tags is None:
            raise RuntimeError("the snapshot's walk was already used")
        walk, tags = self.walk, self.tags
        self.walk = self.tags = None
        return walk, tags


def _open(path: str | os.PathLike[str] | None, lock: bool) -> Snapshot:
    git_dir = gitcmd.find_git_dir(path)
    objects = git_dir / "objects"
    if not objects.is_dir():
        raise RepositoryError(f"{git_dir} has no objects directory")
    return Snapshot(git_dir, lock, gitcmd.read_config(git_dir))


def _may_write_bitmap(snap: Snapshot, bitmap: bool | None, promisor: bool) -> bool:
    """Whether the repack will write a bitmap, as options.py decides it from the same facts
    (it may still give it up: an alternate holds objects, or the repack's pack is written
    elsewhere)."""
    if not snap.locked:
        return False  # a pack written elsewhere, or none
    packs = snap.local_packs + snap.foreign_packs
    kept = any(p.with_suffix(".keep").exists() for p in packs)
    return settings.write_bitmap(snap.config, bitmap, snap.config.bare(snap.git_dir), promisor, kept)


def _main_walk(
    snap: Snapshot, promisor: bool, in_commit_order: bool, record_graph: bool
) -> ObjectWalk | native_walk.NativeWalk:
    """The walk of every reachable object, over the snapshot's listing; ours records the
    commit and tree graph with `record_graph`, for the bitmap."""
    return object_walk(
        snap.git_dir,
        snap.fmt,
        snap.config,
        snap.local_packs + snap.foreign_packs,
        snap.loose + snap.foreign_loose,
        promisor,
        in_commit_order,
        record_graph,
    )


def object_walk(
    git_dir: Path,
    fmt: ObjectFormat,
    config: gitcmd.Config,
    packs: list[Path],
    loose: list[tuple[bytes, Path]],
    promisor: bool,
    in_commit_order: bool,
    record_graph: bool = False,
) -> ObjectWalk | native_walk.NativeWalk:
    """The walk of every reachable object over `packs` and `loose` (alternates' included):
    `packorder.walk` chooses Git's or ours."""
    choice = config.get("packorder.walk") or "native"
    if choice not in native_walk.WALKS:
        raise UsageError(f"packorder.walk is {choice!r}: it is one of {', '.join(native_walk.WALKS)}")

    def gits() -> ObjectWalk:
        return ObjectWalk(git_dir, fmt, missing_ok=promisor, extra=IN_COMMIT_ORDER if in_commit_order else ())

    if choice == "native":
        walk = native_walk.start(
            git_dir, packs, loose, promisor, in_commit_order, config, gits, record_graph=record_graph
        )
        if walk is not None:
            return walk
    return gits()


def _list(snap: Snapshot) -> None:
    objects = snap.objects_dir
    snap.local_packs = list_packs(objects / "pack")
    for alt in alternates(objects):
        snap.foreign_packs += list_packs(alt / "pack")
        snap.foreign_loose += list_loose(alt, snap.fmt)
    snap.loose = list_loose(objects, snap.fmt)


def listed(path: str | os.PathLike[str] | None) -> Snapshot:
    """The listing alone: no lock, no walk (for reading a repository, not repacking it)."""
    snap = _open(path, lock=False)
    _list(snap)
    return snap


def take(
    path: str | os.PathLike[str] | None,
    lock: bool | lock_mod.RepositoryLock,
    order: str | None = None,
    warn: lock_mod.Warn | None = None,
    bitmap: bool | None = None,
    walks: bool = True,
) -> Snapshot:
    """Lock (if `lock`: lock.py; a lock the caller holds already is used as it is, and
    stays the caller's), list, then start the walks `order` needs (the repository's
    `packorder.order` when None): the main walk (in commit order when the order needs each
    object's introducing commit) and, beside it, the walk of unreleased history. `bitmap` is
    the repack's -b/-B, if given: with a bitmap to write, the walk records the graph. Without
    `walks` (a geometric repack, which walks only what it rolls up), nothing is started."""
    snap = _open(path, bool(lock))
    try:
        snap.order = configured_order(snap.config, order)
        needs = CATALOG[snap.order]
        if lock:
            # A killed run's lock taken over and its leftovers cleaned: one line for both.
            notes: list[str] = []
            if lock is True:
                snap.lock = lock_mod.acquire(snap.git_dir, notes.append)
            recovery.recover(snap.git_dir, notes.append)  # before the listing, which sees the result
            if notes:
                snap.warnings.append("; ".join(notes))
                if warn is not None:
                    warn(snap.warnings[-1])
        _list(snap)
        if not walks:
            return snap
        promisor = any(p.with_suffix(".promisor").exists() for p in snap.local_packs + snap.foreign_packs)
        snap.walk = _main_walk(snap, promisor, needs.needs_intro, _may_write_bitmap(snap, bitmap, promisor))
        snap.tags = TagTips(snap.git_dir)
        if needs.needs_intro:
            snap.intro_walk = snap.walk
        if needs.needs_unreleased:
            snap.unreleased_walk = ObjectWalk(snap.git_dir, snap.fmt, missing_ok=promisor, revs=UNRELEASED)
        if needs.needs_head:
            snap.head_walk = HeadWalk(snap.git_dir, snap.fmt)
    except BaseException:
        snap.close()
        raise
    return snap
