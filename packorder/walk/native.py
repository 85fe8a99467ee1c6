"""packorder's own walk of every reachable object (native/src/walk), giving what
`git rev-list --objects --all --reflog --indexed-objects` gives: the same objects, in the
same order, with the same name hashes. Git still says where the walk starts, since Git owns
those formats: the commits (`rev-list --no-walk=unsorted`, which reads refs of any backend
and reflogs without walking), the refs that are not commits (`for-each-ref`); the walk reads
the objects and the worktrees' index files itself.

The default (`packorder.walk = native`); `packorder.walk = git` runs `git rev-list` instead.
What it leaves to Git, falling back to `git rev-list` as a whole: a graft file, a split or sparse
index, a reftable repository, and reflog entries that name tags, trees or blobs (a reflog
of commits is what every repository has; the reflog files are only read to check that).
SHA-1 and SHA-256 repositories alike."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

from packorder import _native, gitcmd
from packorder.errors import Interrupted, RepositoryError
from packorder.format import object_format as object_formats
from packorder.format.object_format import ObjectFormat
from packorder.settings import Limits, delta_base_cache_limit, physical_memory, thread_count

WALKS = ("git", "native")


# What a walk gives, Git's or packorder's: the ids in Git's order, the hashes of their paths,
# the missing ids passed (native/src/python/walk.rs).
Walked = _native.Walked


class Walk(Protocol):
    def result(self) -> Walked: ...

    def graph(self) -> object | None: ...

    def stop(self) -> None: ...


# The walk's cache of rebuilt objects. Measured on git/git (3 runs each): 8, 16 and 96 MiB
# take the same time within the noise (3.4-4.9 s), peak RSS 166, 177 and 294 MiB: a tree's
# base is nearly always the version the walk met just before.
WALK_CACHE = 16 << 20
_HEX_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # an id of either hash


def walk_limits(config: gitcmd.Config, threads: int) -> Limits:
    """What a walk may use: `threads`, the walk's cache (core.deltaBaseCacheLimit if lower),
    objects as large as the machine's memory."""
    return Limits(threads, min(WALK_CACHE, delta_base_cache_limit(config)), physical_memory())


def index_files(git_dir: Path) -> list[Path]:
    """The worktrees' index files in the order Git reads them (get_worktrees: the main one,
    then the linked ones as the directory lists them)."""
    files = [Path(os.environ["GIT_INDEX_FILE"])] if os.environ.get("GIT_INDEX_FILE") else [git_dir / "index"]
    linked = git_dir / "worktrees"
    if linked.is_dir():
        files += [linked / name / "index" for name in os.listdir(linked)]
    return [f for f in files if f.exists()]


def walk_failed(stderr: bytes, code: int) -> RepositoryError:
    """What a repack says when a walk of its objects fails (Git's or ours): the first line."""
    err = stderr.decode(errors="replace").strip()
    first = err.splitlines()[0] if err else f"exit status {code}"
    return RepositoryError(f"cannot list the repository's objects: {first}; nothing was changed")


def _git(git_dir: Path, *args: str) -> bytes:
    proc = gitcmd.run(list(args), git_dir=git_dir, check=False)
    if proc.returncode != 0:
        raise walk_failed(proc.stderr, proc.returncode)
    return proc.stdout


def starting_points(git_dir: Path) -> tuple[bytes, list[tuple[bytes, None]]]:
    """(the starting commits in the order Git meets them, one id after another; the refs
    whose objects are not commits, in ref order)."""
    with ThreadPoolExecutor(2) as pool:
        commits = pool.submit(_git, git_dir, "rev-list", "--no-walk=unsorted", "--all", "--reflog")
        refs = pool.submit(_git, git_dir, "for-each-ref", "--format=%(objectname) %(objecttype)")
    ids = b"".join(bytes.fromhex(line.decode()) for line in commits.result().split())
    others = [
        (bytes.fromhex(oid.decode()), None)
        for oid, kind in (line.split() for line in refs.result().splitlines() if line.strip())
        if kind != b"commit"
    ]
    return ids, others


def reflogs_name_other_objects(git_dir: Path, commits: bytes, fmt: ObjectFormat) -> bool:
    """Whether a reflog entry names an object that exists and is not a commit: the starting
    commits (ids of `fmt`) cover every commit a reflog names, and nothing else."""
    if (git_dir / "reftable").is_dir():
        return True  # its reflogs are not files: leave the walk to Git
    starts = set(fmt.split(commits))
    named: set[str] = set()
    logs = [git_dir / "logs"] + [d / "logs" for d in (git_dir / "worktrees").glob("*")]
    for root in logs:
        for path in root.rglob("*") if root.is_dir() else ():
            if not path.is_file():
                continue
            for line in path.read_bytes().splitlines():
                for word in line.split(b" ", 2)[:2]:
                    if len(word) == fmt.hexsz and word != b"0" * fmt.hexsz:
                        named.add(word.decode())
    others = [oid for oid in named if bytes.fromhex(oid) not in starts]
    if not others:
        return False
    out = gitcmd.run(
        ["cat-file", "--batch-check=%(objecttype)"],
        git_dir=git_dir,
        check=False,
        input="".join(o + "\n" for o in others).encode(),
    ).stdout.decode()
    # A pruned commit is "missing" (Git warns and walks on); anything else is a reason.
    return any(kind not in ("commit", "missing") and not kind.endswith(" missing") for kind in out.split("\n") if kind)


def shallow_commits(git_dir: Path) -> bytes:
    try:
        text = (git_dir / "shallow").read_text()
    except OSError:
        return b""
    return b"".join(sorted(bytes.fromhex(w) for w in text.split()))


def graft_roots(git_dir: Path) -> list[str]:
    """Every commit a graft file names. Git walks without grafts here (gitcmd.git_env), and
    `git pack-objects --keep-true-parents`, which `git repack` runs, keeps both a grafted
    commit's true parents and its graft parents: walking from the graft parents too keeps
    what Git keeps (and, for a graft on an unreachable commit, a little more)."""
    path = os.environ.get("GIT_GRAFT_FILE") or str(git_dir / "info" / "grafts")
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return []
    return [w for line in text.splitlines() if not line.startswith("#") for w in line.split() if _HEX_ID.fullmatch(w)]


class NativeWalk:
    """The walk of every reachable object, run natively in a thread (the GIL released) while
    the caller goes on; `result()` as GitObjectWalk's.

    It reads the objects listed before it started. A push that lands between the listing and
    Git's reading of the refs names objects the listing lacks: the walk cannot follow them,
    so when an object it missed is in the repository by the time it ends, the walk is
    `fallback`'s (Git's, which reads whatever is there), as if chosen from the start."""

    def __init__(
        self,
        walker: _native.ObjectWalker,
        in_commit_order: bool,
        git_dir: Path,
        fmt: ObjectFormat,
        fallback: Callable[[], Walk],
    ) -> None:
        self.in_commit_order = in_commit_order
        self.walker = walker
        self.git_dir, self.fmt, self.fallback = git_dir, fmt, fallback
        self._result: _native.ObjectWalk | None = None
        self._fallen_back: Walk | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="packorder-walk", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self._result = self.walker.run()
        except BaseException as e:  # reported by result()
            self.error = e

    def result(self) -> Walked:
        self.thread.join()
        if isinstance(self.error, _native.PackFormatError):
            if self.error.kind == "interrupted":
                raise Interrupted()
            lost = self.error.object_id
            if self.error.kind == "missing" and lost is not None and self._arrived([lost.hex()]):
                return self._fall_back()
            raise walk_failed(self.error.args[0].encode(), 1)
        if self.error is not None:
            raise self.error
        assert self._result is not None
        walked = self._result.walked
        if walked.missing and self._arrived([oid.hex() for oid in self.fmt.split(walked.missing)]):
            return self._fall_back()
        return walked

    def _fall_back(self) -> Walked:
        if self._fallen_back is None:
            self._fallen_back = self.fallback()
        return self._fallen_back.result()

    def graph(self) -> object | None:
        """The commit and tree graph this walk recorded (a _native.WalkEdges), if asked to
        and its result is this walk's own; call after result()."""
        if self._fallen_back is not None:
            return self._fallen_back.graph()
        return self._result.edges if self._result is not None else None

    def _arrived(self, oids_hex: list[str]) -> bool:
        """Whether the repository has any of these objects now (unlisted: they arrived)."""
        return any(kind is not None for kind in gitcmd.object_types(self.git_dir, oids_hex))

    def stop(self) -> None:
        self.walker.cancel()
        self.thread.join()


def start(
    git_dir: Path,
    packs: list[Path],
    loose: list[tuple[bytes, Path]],
    missing_ok: bool,
    in_commit_order: bool,
    config: gitcmd.Config,
    fallback: Callable[[], Walk],
    threads: int | None = None,
    parallel_from: int | None = None,
    run_items: int | None = None,
    record_graph: bool = False,
) -> NativeWalk | None:
    """Start the walk over `packs` and `loose` (the snapshot's, alternates' included); None
    when the repository has what this walk leaves to Git. `fallback` starts Git's walk, for
    a walk that meets objects pushed after the listing (NativeWalk). `threads` (default: pack.threads,
    else every core) of 2 or more walk trees on that many cores, on packs of at least
    `parallel_from` objects, `run_items` trees a time (defaults: the core's; tests make
    runs small). `record_graph` keeps the commit and tree graph, for a bitmap."""
    if graft_roots(git_dir):
        return None
    fmt = object_formats.named(config.object_format)
    commits, refs = starting_points(git_dir)
    if reflogs_name_other_objects(git_dir, commits, fmt):
        return None
    # One path per id: an object may be loose both here and in an alternate.
    loose = sorted({oid: path for oid, path in reversed(loose)}.items())
    try:
        walker = _walker(
            git_dir,
            packs,
            loose,
            commits,
            refs,
            missing_ok,
            in_commit_order,
            config,
            threads,
            parallel_from,
            run_items,
            record_graph,
        )
    except _native.PackFormatError as e:  # an index file it cannot read
        raise walk_failed(e.args[0].encode(), 1) from None
    if walker.unsupported:
        return None
    return NativeWalk(walker, in_commit_order, git_dir, fmt, fallback)


def _walker(
    git_dir: Path,
    packs: list[Path],
    loose: list[tuple[bytes, Path]],
    commits: bytes,
    refs: list[tuple[bytes, None]],
    missing_ok: bool,
    in_commit_order: bool,
    config: gitcmd.Config,
    threads: int | None,
    parallel_from: int | None,
    run_items: int | None,
    record_graph: bool,
) -> _native.ObjectWalker:
    return _native.ObjectWalker(
        [str(p) for p in packs],
        b"".join(oid for oid, _ in loose),
        [str(p) for _, p in loose],
        commits,
        refs,
        [str(f) for f in index_files(git_dir)],
        in_commit_order,
        missing_ok,
        shallow_commits(git_dir),
        walk_limits(config, thread_count(config, threads, "packorder.threads", "pack.threads")),
        **({} if parallel_from is None else {"parallel_from": parallel_from}),
        **({} if run_items is None else {"run_items": run_items}),
        object_format=config.object_format,
        record_edges=record_graph,
    )
