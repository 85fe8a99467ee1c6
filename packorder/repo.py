"""A repository as repack sees it: its packs (with .keep and .promisor flags), its loose
objects, its tag tips, and every object it holds, enumerated in the order Git's
`rev-list --objects` discovers them.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from packorder import _native, gitcmd
from packorder.errors import CorruptPackError, RepositoryError
from packorder.format import idx as idx_format
from packorder.format import layout as layout_mod
from packorder.format.pack import RAWSZ

LOOSE = -1
HEX2 = re.compile(r"^[0-9a-f]{2}$")
HEX38 = re.compile(r"^[0-9a-f]{38}$")


@dataclass
class PackSource:
    path: Path
    keep: bool
    promisor: bool
    foreign: bool  # from an alternate object store: read, never removed
    mtime: float
    index: idx_format.PackIndex
    _layout: layout_mod.PackLayout | None = None

    @property
    def idx_path(self) -> Path:
        return layout_mod.idx_path_of(self.path)

    @property
    def layout(self) -> layout_mod.PackLayout:
        if self._layout is None:
            self._layout = layout_mod.load(self.path, self.index)
        return self._layout

    def sibling(self, ext: str) -> Path:
        return self.path.with_name(self.path.name[: -len(".pack")] + ext)


@dataclass
class LooseObjects:
    oids: np.ndarray  # (n, 20) uint8, sorted
    paths: list[Path]


@dataclass
class Repository:
    git_dir: Path
    config: gitcmd.Config
    packs: list[PackSource]
    loose: LooseObjects
    bare: bool

    @property
    def objects_dir(self) -> Path:
        return self.git_dir / "objects"

    @property
    def pack_dir(self) -> Path:
        return self.objects_dir / "pack"

    @property
    def has_promisor_packs(self) -> bool:
        return any(p.promisor for p in self.packs)

    def git(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return gitcmd.run(list(args), git_dir=self.git_dir, **kw)

    @contextlib.contextmanager
    def lock(self) -> Iterator[Path]:
        """Exclusive repack lock: objects/pack/packorder-repack.lock, created atomically."""
        path = self.pack_dir / "packorder-repack.lock"
        self.pack_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = path.read_text(errors="replace").strip() if path.exists() else "?"
            raise RepositoryError(
                f"another repack holds {path} ({holder}); if no repack is running, remove that file"
            ) from None
        try:
            with os.fdopen(fd, "w") as f:
                f.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
            yield path
        finally:
            with contextlib.suppress(OSError):
                path.unlink()


def _alternates(objects_dir: Path) -> list[Path]:
    info = objects_dir / "info" / "alternates"
    if not info.exists():
        return []
    out = []
    for line in info.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            p = Path(line)
            out.append(p if p.is_absolute() else (objects_dir / p).resolve())
    return out


def _packs_in(pack_dir: Path, foreign: bool) -> list[PackSource]:
    out = []
    if not pack_dir.is_dir():
        return out
    for pack in sorted(pack_dir.glob("pack-*.pack")):
        idx = layout_mod.idx_path_of(pack)
        if not idx.exists():
            continue  # being written by someone else, or an orphan: not ours to touch
        stem = pack.name[: -len(".pack")]
        index = idx_format.read(str(idx))
        out.append(
            PackSource(
                path=pack,
                keep=(pack_dir / f"{stem}.keep").exists(),
                promisor=(pack_dir / f"{stem}.promisor").exists(),
                foreign=foreign,
                mtime=pack.stat().st_mtime,
                index=index,
            )
        )
    # Git looks objects up in local packs first, newest first.
    out.sort(key=lambda p: -p.mtime)
    return out


def _loose(objects_dir: Path) -> LooseObjects:
    names: list[bytes] = []
    paths: list[Path] = []
    for sub in sorted(objects_dir.iterdir()) if objects_dir.is_dir() else []:
        if not HEX2.match(sub.name) or not sub.is_dir():
            continue
        for entry in sorted(os.scandir(sub), key=lambda e: e.name):
            if HEX38.match(entry.name):
                names.append(bytes.fromhex(sub.name + entry.name))
                paths.append(Path(entry.path))
    oids = (
        np.frombuffer(b"".join(names), dtype=np.uint8).reshape(-1, RAWSZ) if names else np.zeros((0, RAWSZ), np.uint8)
    )
    return LooseObjects(oids, paths)


def open_repository(path: str | os.PathLike[str] | None = None) -> Repository:
    git_dir = gitcmd.find_git_dir(path)
    config = gitcmd.read_config(git_dir)
    objects = git_dir / "objects"
    if not objects.is_dir():
        raise RepositoryError(f"{git_dir} has no objects directory")
    packs = _packs_in(objects / "pack", foreign=False)
    for alt in _alternates(objects):
        packs += _packs_in(alt / "pack", foreign=True)
    bare = config.get_bool("core.bare", git_dir.name != ".git")
    return Repository(git_dir, config, packs, _loose(objects), bare)


def keys(oids: np.ndarray) -> np.ndarray:
    """Object ids as numpy 'S20' scalars, which sort and search in byte order (memcmp)."""
    return np.ascontiguousarray(oids).view(f"S{RAWSZ}").ravel()


def _prefixes(k: np.ndarray) -> np.ndarray:
    """The first 8 bytes of each key as an integer that sorts as the key does."""
    return np.frombuffer(k.tobytes(), dtype=np.uint8).reshape(-1, RAWSZ)[:, :8].copy().view(">u8").ravel()


def lookup(sorted_keys: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Position of each of `want` in `sorted_keys`, -1 where absent.

    Searched on the ids' first 8 bytes as integers (several times faster than comparing
    20-byte strings); the few whose prefix is shared by another id are searched in full."""
    if len(sorted_keys) == 0 or len(want) == 0:
        return np.full(len(want), -1, dtype=np.int64)
    have_p = _prefixes(sorted_keys)
    want_p = _prefixes(want)
    at = np.minimum(np.searchsorted(have_p, want_p), len(sorted_keys) - 1)
    found = sorted_keys[at] == want
    # Where the prefix matched but not the id, another id with that prefix may follow.
    again = np.flatnonzero(~found & (have_p[at] == want_p))
    if len(again):
        at2 = np.minimum(np.searchsorted(sorted_keys, want[again]), len(sorted_keys) - 1)
        at[again] = at2
        found[again] = sorted_keys[at2] == want[again]
    return np.where(found, at, -1).astype(np.int64)


@dataclass
class ObjectTable:
    """Every object to write, in discovery order (struct of arrays)."""

    oids: np.ndarray  # (n, 20) uint8
    kinds: np.ndarray  # uint8, the object's real type
    name_hash: np.ndarray  # uint32, Git's pack_name_hash of the path it was found at
    reachable: np.ndarray  # bool
    tagged: np.ndarray  # bool: a tag tip (a tag ref's target or what it peels to)
    source: np.ndarray  # int32: index into Repository.packs, or LOOSE
    pos: np.ndarray  # int64: pack position in that pack's layout, or index into loose
    promisor: np.ndarray  # bool: found in a .promisor pack
    missing: list[bytes] = field(default_factory=list)  # promised objects absent from the repository

    @property
    def count(self) -> int:
        return len(self.kinds)


class _RevListRun:
    """`git rev-list --objects` of everything, parsed natively in a thread as it streams, so
    the caller can read pack layouts meanwhile."""

    def __init__(self, repo: Repository, missing_ok: bool, extra: tuple[str, ...] = ()) -> None:
        args = [gitcmd.GIT, "--git-dir", str(repo.git_dir), "rev-list", "--objects", *extra, "--all", "--reflog"]
        if (repo.git_dir / "index").exists():
            args.append("--indexed-objects")
        if missing_ok:
            args.append("--missing=print")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=gitcmd.git_env())
        self.parser = _native.RevList()
        self.error: BaseException | None = None
        self.stderr = b""
        self.thread = threading.Thread(target=self._pump, name="packorder-rev-list", daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        try:
            while chunk := self.proc.stdout.read(1 << 20):
                self.parser.feed(chunk)
        except BaseException as e:  # reported by result()
            self.error = e
            self.proc.kill()
        self.stderr = self.proc.stderr.read()

    def result(self) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
        self.thread.join()
        code = self.proc.wait()
        if self.error is not None:
            raise RepositoryError(f"cannot list the repository's objects: {self.error}")
        if code != 0:
            err = self.stderr.decode(errors="replace").strip()
            first = err.splitlines()[0] if err else f"exit status {code}"
            raise RepositoryError(f"cannot list the repository's objects: {first}; nothing was changed")
        oids_b, hashes_b, _named, missing_b = self.parser.finish()
        oids = np.frombuffer(oids_b, dtype=np.uint8).reshape(-1, RAWSZ)
        hashes = np.frombuffer(hashes_b, dtype=np.uint32)
        missing = [missing_b[i : i + RAWSZ] for i in range(0, len(missing_b), RAWSZ)]
        return oids, hashes, missing


def _tag_tips_run(repo: Repository) -> subprocess.Popen:
    return subprocess.Popen(
        [gitcmd.GIT, "--git-dir", str(repo.git_dir), "show-ref", "--tags", "-d"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=gitcmd.git_env(),
    )


def tag_tips(run: subprocess.Popen) -> np.ndarray:
    """Ids of tag tips, sorted: each tag ref's target and the object it finally peels to, from
    the `git show-ref` started by _tag_tips_run."""
    out, _ = run.communicate()
    ids = {bytes.fromhex(line.split()[0]) for line in out.decode().splitlines() if line.strip()}
    arr = np.frombuffer(b"".join(sorted(ids)), dtype=np.uint8).reshape(-1, RAWSZ)
    return keys(arr)


def enumerate_objects(repo: Repository, prune_unreachable: bool = False) -> ObjectTable:
    """Every object the new pack must hold: the reachable ones in Git's discovery order, then
    (unless pruned) the unreachable packed and loose ones. Objects in .keep packs are left to
    those packs, as `git repack -a` does."""
    local = [i for i, p in enumerate(repo.packs) if not p.foreign]
    kept = [i for i in local if repo.packs[i].keep]
    movable = [i for i in range(len(repo.packs)) if i not in kept]
    run = _RevListRun(repo, missing_ok=repo.has_promisor_packs)
    tips_run = _tag_tips_run(repo)  # runs beside rev-list
    try:
        return _enumerate(repo, run, tips_run, kept, movable, prune_unreachable)
    finally:
        if tips_run.poll() is None:
            tips_run.kill()
        tips_run.wait()


def _enumerate(
    repo: Repository,
    run: _RevListRun,
    tips_run: subprocess.Popen,
    kept: list[int],
    movable: list[int],
    prune_unreachable: bool,
) -> ObjectTable:
    for i in movable:
        if not repo.packs[i].foreign:
            _ = repo.packs[i].layout  # read while rev-list runs
    oids, hashes, missing = run.result()
    if missing:
        _check_promised(repo, missing)
    want = keys(oids)
    n = len(want)
    source = np.full(n, LOOSE - 1, dtype=np.int32)  # LOOSE - 1: not found yet
    pos = np.full(n, -1, dtype=np.int64)
    in_kept = np.zeros(n, dtype=bool)
    for i in kept:
        in_kept |= lookup(keys(repo.packs[i].index.names), want) >= 0
    for i in movable:
        pack = repo.packs[i]
        todo = source == LOOSE - 1
        if not todo.any():
            break
        at = lookup(keys(pack.index.names), want[todo])
        hit = at >= 0
        idx_rows = at[hit]
        # idx order -> pack order
        order = np.argsort(pack.index.offsets, kind="stable")
        pack_pos = np.empty_like(order)
        pack_pos[order] = np.arange(len(order))
        rows = np.flatnonzero(todo)[hit]
        source[rows] = i
        pos[rows] = pack_pos[idx_rows]
    todo = source == LOOSE - 1
    if todo.any():
        at = lookup(keys(repo.loose.oids), want[todo])
        rows = np.flatnonzero(todo)[at >= 0]
        source[rows] = LOOSE
        pos[rows] = at[at >= 0]
    lost = (source == LOOSE - 1) & ~in_kept
    if lost.any():
        first = oids[np.flatnonzero(lost)[0]].tobytes().hex()
        raise RepositoryError(f"object {first} is reachable but missing from the repository; nothing was changed")
    keep_rows = ~in_kept
    oids, hashes, source, pos = oids[keep_rows], hashes[keep_rows], source[keep_rows], pos[keep_rows]
    reachable = np.ones(len(source), dtype=bool)

    if not prune_unreachable:
        # Unreachable objects follow, pack by pack in pack order, then loose ones by id.
        parts: list[tuple[np.ndarray, int, np.ndarray]] = []
        seen = np.sort(keys(oids))
        candidates = [(i, repo.packs[i].layout.oids) for i in movable if not repo.packs[i].foreign]
        candidates.append((LOOSE, repo.loose.oids))
        for src, their in candidates:
            k = keys(their)
            absent = lookup(seen, k) < 0
            if absent.any():
                parts.append((their[absent], src, np.flatnonzero(absent).astype(np.int64)))
                seen = np.sort(np.concatenate([seen, k[absent]]))
        if parts:
            oids = np.concatenate([oids] + [p[0] for p in parts])
            hashes = np.concatenate([hashes] + [np.zeros(len(p[2]), np.uint32) for p in parts])
            source = np.concatenate([source] + [np.full(len(p[2]), p[1], np.int32) for p in parts])
            pos = np.concatenate([pos] + [p[2] for p in parts])
            reachable = np.concatenate([reachable, np.zeros(sum(len(p[2]) for p in parts), bool)])

    kinds = _kinds(repo, source, pos)
    tagged = lookup(tag_tips(tips_run), keys(oids)) >= 0
    promisor = np.zeros(len(source), dtype=bool)
    for i, p in enumerate(repo.packs):
        if p.promisor:
            promisor |= source == i
    return ObjectTable(oids, kinds, hashes, reachable, tagged, source, pos, promisor, missing)


def introducing_commits(repo: Repository, table: ObjectTable) -> np.ndarray:
    """For each object of `table`, the table index of the commit that first refers to it in
    Git's walk (`rev-list --objects --in-commit-order`), or -1 (tags, index entries, and
    unreachable objects)."""
    run = _RevListRun(repo, missing_ok=repo.has_promisor_packs, extra=("--in-commit-order",))
    oids, _, _ = run.result()
    sorted_order = np.argsort(keys(table.oids), kind="stable")
    at = lookup(keys(table.oids)[sorted_order], keys(oids))
    rows = np.where(at >= 0, sorted_order[np.maximum(at, 0)], -1)
    is_commit = np.zeros(len(rows), dtype=bool)
    is_commit[rows >= 0] = table.kinds[rows[rows >= 0]] == 1
    # The latest commit line at or before each line of the output.
    last_commit_line = np.where(is_commit, np.arange(len(rows)), -1)
    np.maximum.accumulate(last_commit_line, out=last_commit_line)
    intro = np.full(table.count, -1, dtype=np.int64)
    valid = (rows >= 0) & ~is_commit & (last_commit_line >= 0)
    intro[rows[valid]] = rows[last_commit_line[valid]]
    return intro


def _kinds(repo: Repository, source: np.ndarray, pos: np.ndarray) -> np.ndarray:
    kinds = np.zeros(len(source), dtype=np.uint8)
    for i, pack in enumerate(repo.packs):
        rows = np.flatnonzero(source == i)
        if len(rows):
            real = pack.layout.real_kinds()
            kinds[rows] = real[pos[rows]]
    for row in np.flatnonzero(source == LOOSE):
        kind, _ = _native.loose_header(str(repo.loose.paths[int(pos[row])]))
        kinds[row] = kind
    if (kinds == 0).any():
        row = int(np.flatnonzero(kinds == 0)[0])
        pack = repo.packs[int(source[row])]
        off = int(pack.layout.offsets[pos[row]])
        raise CorruptPackError("delta whose base is missing from its pack", off, str(pack.path))
    return kinds


def _check_promised(repo: Repository, missing: list[bytes]) -> None:
    """Missing objects are acceptable only in a partial clone, where promisor packs promise
    them. When every pack is a promisor pack, every missing object is promised."""
    if not repo.has_promisor_packs:
        raise RepositoryError(f"object {missing[0].hex()} is missing from the repository; nothing was changed")
    if all(p.promisor for p in repo.packs if not p.foreign) and not len(repo.loose.oids):
        return
    promised = _promised_by_promisor_packs(repo, missing)
    for oid in missing:
        if oid not in promised:
            raise RepositoryError(f"object {oid.hex()} is missing and not promised; nothing was changed")


def _promised_by_promisor_packs(repo: Repository, missing: list[bytes]) -> set[bytes]:
    """Which of `missing` objects in promisor packs refer to (Git's is_promisor_object)."""
    want = set(missing)
    found: set[bytes] = set()
    ids = [p.layout.oid_hex(i) for p in repo.packs if p.promisor for i in range(p.layout.count)]
    proc = subprocess.run(
        [gitcmd.GIT, "--git-dir", str(repo.git_dir), "cat-file", "--batch"],
        input="\n".join(ids).encode() + b"\n",
        capture_output=True,
        env=gitcmd.git_env(),
    )
    data = proc.stdout
    at = 0
    while at < len(data):
        nl = data.index(b"\n", at)
        head = data[at:nl].split()
        at = nl + 1
        if len(head) < 3:
            continue
        size = int(head[2])
        body = data[at : at + size]
        at += size + 1
        for hexid in re.findall(rb"[0-9a-f]{40}", body) if head[1] != b"tree" else []:
            oid = bytes.fromhex(hexid.decode())
            if oid in want:
                found.add(oid)
        if head[1] == b"tree":
            i = 0
            while i < len(body):
                nul = body.index(b"\0", i)
                oid = body[nul + 1 : nul + 21]
                if oid in want:
                    found.add(oid)
                i = nul + 21
    return found
