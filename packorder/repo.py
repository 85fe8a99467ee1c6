"""A repository as repack sees it: its packs (with .keep and .promisor flags), its loose
objects, its tag tips, and every object it holds, enumerated in the order Git's
`rev-list --objects` discovers them.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from packorder import _native, gitcmd
from packorder import snapshot as snapshot_mod
from packorder.errors import CorruptPackError, RepositoryError
from packorder.format import idx as idx_format
from packorder.format import layout as layout_mod
from packorder.format.pack import OBJ_COMMIT, RAWSZ

LOOSE = -1


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


def _pack_sources(packs: list[Path], foreign: bool) -> list[PackSource]:
    out = []
    for pack in packs:
        stem = pack.name[: -len(".pack")]
        out.append(
            PackSource(
                path=pack,
                keep=pack.with_name(f"{stem}.keep").exists(),
                promisor=pack.with_name(f"{stem}.promisor").exists(),
                foreign=foreign,
                mtime=pack.stat().st_mtime,
                index=idx_format.read(str(layout_mod.idx_path_of(pack))),
            )
        )
    # Git looks objects up in local packs first, newest first.
    out.sort(key=lambda p: -p.mtime)
    return out


def _loose(listed: list[tuple[bytes, Path]]) -> LooseObjects:
    oids = (
        np.frombuffer(b"".join(oid for oid, _ in listed), dtype=np.uint8).reshape(-1, RAWSZ)
        if listed
        else np.zeros((0, RAWSZ), np.uint8)
    )
    return LooseObjects(oids, [path for _, path in listed])


def open_repository(
    path: str | os.PathLike[str] | None = None, snapshot: snapshot_mod.Snapshot | None = None
) -> Repository:
    """The repository at `path`, with the packs and loose objects `snapshot` listed (listed
    now when there is none)."""
    if snapshot is None:
        snapshot = snapshot_mod.listed(path)
    git_dir = snapshot.git_dir
    config = gitcmd.read_config(git_dir)
    packs = _pack_sources(snapshot.local_packs, foreign=False) + _pack_sources(snapshot.foreign_packs, foreign=True)
    bare = config.get_bool("core.bare", git_dir.name != ".git")
    return Repository(git_dir, config, packs, _loose(snapshot.loose), bare)


def keys(oids: np.ndarray) -> np.ndarray:
    """Object ids as numpy 'S20' scalars, which sort and search in byte order (memcmp)."""
    return np.ascontiguousarray(oids).view(f"S{RAWSZ}").ravel()


def lookup(sorted_keys: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Position of each of `want` in `sorted_keys` (its first copy), -1 where absent."""
    found = _native.find_ids(np.ascontiguousarray(sorted_keys).tobytes(), np.ascontiguousarray(want).tobytes())
    return np.frombuffer(found, dtype=np.int64).copy()


def id_order(k: np.ndarray) -> np.ndarray:
    """The permutation that sorts the keys `k`, equal keys in their order (a stable argsort,
    several times faster than numpy's on 20-byte strings)."""
    return np.frombuffer(_native.id_sort_order(np.ascontiguousarray(k).tobytes()), dtype=np.int64).copy()


def sort_keys(k: np.ndarray) -> np.ndarray:
    return k[id_order(k)]


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


def _walked(walk: snapshot_mod.ObjectWalk) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
    oids_b, hashes_b, missing_b = walk.result()
    oids = np.frombuffer(oids_b, dtype=np.uint8).reshape(-1, RAWSZ)
    hashes = np.frombuffer(hashes_b, dtype=np.uint32)
    missing = [missing_b[i : i + RAWSZ] for i in range(0, len(missing_b), RAWSZ)]
    return oids, hashes, missing


def _tag_keys(tags: snapshot_mod.TagTips) -> np.ndarray:
    """Ids of tag tips as sorted keys."""
    ids = tags.ids()
    return keys(np.frombuffer(b"".join(ids), dtype=np.uint8).reshape(-1, RAWSZ))


def enumerate_objects(
    repo: Repository, prune_unreachable: bool = False, snapshot: snapshot_mod.Snapshot | None = None
) -> ObjectTable:
    """Every object the new pack must hold: the reachable ones in Git's discovery order, then
    (unless pruned) the unreachable packed and loose ones. Objects in .keep packs are left to
    those packs, as `git repack -a` does. Takes the walk `snapshot` started, or starts one."""
    local = [i for i, p in enumerate(repo.packs) if not p.foreign]
    kept = [i for i in local if repo.packs[i].keep]
    movable = [i for i in range(len(repo.packs)) if i not in kept]
    if snapshot is not None:
        walk, tags = snapshot.take_walk()
    else:
        walk = snapshot_mod.ObjectWalk(repo.git_dir, missing_ok=repo.has_promisor_packs)
        tags = snapshot_mod.TagTips(repo.git_dir)  # runs beside rev-list
    try:
        return _enumerate(repo, walk, tags, kept, movable, prune_unreachable)
    finally:
        tags.stop()
        walk.stop()


def _enumerate(
    repo: Repository,
    walk: snapshot_mod.ObjectWalk,
    tags: snapshot_mod.TagTips,
    kept: list[int],
    movable: list[int],
    prune_unreachable: bool,
) -> ObjectTable:
    for i in movable:
        if not repo.packs[i].foreign:
            _ = repo.packs[i].layout  # read while rev-list runs
    oids, hashes, missing = _walked(walk)
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
    # Reachable but in nothing listed: a push that landed between the listing and the walk's
    # reading of the refs (its pack or loose objects appeared after the listing). Such objects
    # stay where they are (only what was listed is removed); any other is missing.
    unlisted = np.flatnonzero((source == LOOSE - 1) & ~in_kept)
    arrived = np.zeros(n, dtype=bool)
    if len(unlisted):
        present = _present_now(repo, [oids[i].tobytes().hex() for i in unlisted])
        gone = [oids[i].tobytes().hex() for i, here in zip(unlisted, present, strict=True) if not here]
        if gone:
            raise RepositoryError(f"object {gone[0]} is reachable but missing from the repository; nothing was changed")
        arrived[unlisted] = True
    keep_rows = ~in_kept & ~arrived
    oids, hashes, source, pos = oids[keep_rows], hashes[keep_rows], source[keep_rows], pos[keep_rows]
    reachable = np.ones(len(source), dtype=bool)

    if not prune_unreachable:
        # Unreachable objects follow, pack by pack in pack order, then loose ones by id.
        parts: list[tuple[np.ndarray, int, np.ndarray]] = []
        seen = sort_keys(keys(oids))
        candidates = [(i, repo.packs[i].layout.oids) for i in movable if not repo.packs[i].foreign]
        candidates.append((LOOSE, repo.loose.oids))
        for src, their in candidates:
            k = keys(their)
            absent = lookup(seen, k) < 0
            if absent.any():
                parts.append((their[absent], src, np.flatnonzero(absent).astype(np.int64)))
                seen = sort_keys(np.concatenate([seen, k[absent]]))
        if parts:
            oids = np.concatenate([oids] + [p[0] for p in parts])
            hashes = np.concatenate([hashes] + [np.zeros(len(p[2]), np.uint32) for p in parts])
            source = np.concatenate([source] + [np.full(len(p[2]), p[1], np.int32) for p in parts])
            pos = np.concatenate([pos] + [p[2] for p in parts])
            reachable = np.concatenate([reachable, np.zeros(sum(len(p[2]) for p in parts), bool)])

    kinds = _kinds(repo, source, pos)
    if walk.in_commit_order:
        # Discovery order: the walk's commits, then its other objects, each as printed.
        walked = np.flatnonzero(reachable)
        order = np.concatenate(
            [walked[kinds[walked] == OBJ_COMMIT], walked[kinds[walked] != OBJ_COMMIT], np.flatnonzero(~reachable)]
        )
        oids, hashes, source, pos, kinds = oids[order], hashes[order], source[order], pos[order], kinds[order]
    tagged = lookup(_tag_keys(tags), keys(oids)) >= 0
    promisor = np.zeros(len(source), dtype=bool)
    for i, p in enumerate(repo.packs):
        if p.promisor:
            promisor |= source == i
    return ObjectTable(oids, kinds, hashes, reachable, tagged, source, pos, promisor, missing)


@dataclass
class ObjectHistory:
    """Where each object of a table sits in history, for the orders that place objects by it."""

    intro: np.ndarray  # int64: table index of the commit that introduces it (introducing_commits), or -1
    unreleased: np.ndarray  # bool: reachable from HEAD but from no tag (unreleased_objects)

    def subset(self, rows: np.ndarray) -> ObjectHistory:
        """The same for the table cut to `rows` (indexes renumbered; commits outside: -1)."""
        at = np.full(len(self.intro), -1, dtype=np.int64)
        at[rows] = np.arange(len(rows))
        intro = self.intro[rows]
        return ObjectHistory(np.where(intro >= 0, at[np.maximum(intro, 0)], -1), self.unreleased[rows])


def object_history(
    repo: Repository,
    table: ObjectTable,
    walks: tuple[snapshot_mod.ObjectWalk | None, snapshot_mod.ObjectWalk | None] = (None, None),
    intro: bool = True,
    unreleased: bool = True,
) -> ObjectHistory:
    """introducing_commits and unreleased_objects of `table`, from `walks` (the snapshot's,
    started early) or from walks started now; what is not asked for is not walked (no
    introducing commit, nothing unreleased)."""
    for walk, wanted in zip(walks, (intro, unreleased), strict=True):
        if walk is not None and not wanted:
            walk.stop()
    return ObjectHistory(
        introducing_commits(repo, table, walks[0]) if intro else np.full(table.count, -1, dtype=np.int64),
        unreleased_objects(repo, table, walks[1]) if unreleased else np.zeros(table.count, dtype=bool),
    )


def unreleased_objects(repo: Repository, table: ObjectTable, walk: snapshot_mod.ObjectWalk | None = None) -> np.ndarray:
    """Which objects of `table` are reachable from HEAD (the default branch) but from no tag
    (`git rev-list --objects HEAD --not --tags`): what a fetch from the last release asks for.
    Nothing when HEAD is unborn."""
    if walk is None:
        walk = snapshot_mod.ObjectWalk(repo.git_dir, missing_ok=repo.has_promisor_packs, revs=snapshot_mod.UNRELEASED)
    try:
        oids, _, _ = _walked(walk)
    finally:
        walk.stop()
    if not len(oids) or not table.count:
        return np.zeros(table.count, dtype=bool)
    return lookup(sort_keys(keys(oids)), keys(table.oids)) >= 0


def introducing_commits(
    repo: Repository, table: ObjectTable, walk: snapshot_mod.ObjectWalk | None = None
) -> np.ndarray:
    """For each object of `table`, the table index of the commit that first refers to it in
    Git's walk (`rev-list --objects --in-commit-order`), or -1 (tags, index entries, and
    unreachable objects)."""
    if walk is None:
        walk = snapshot_mod.ObjectWalk(
            repo.git_dir, missing_ok=repo.has_promisor_packs, extra=snapshot_mod.IN_COMMIT_ORDER
        )
    try:
        oids, _, _ = _walked(walk)
    finally:
        walk.stop()
    sorted_order = id_order(keys(table.oids))
    at = lookup(keys(table.oids)[sorted_order], keys(oids))
    rows = np.where(at >= 0, sorted_order[np.maximum(at, 0)], -1)
    is_commit = np.zeros(len(rows), dtype=bool)
    is_commit[rows >= 0] = table.kinds[rows[rows >= 0]] == OBJ_COMMIT
    # The latest commit line at or before each line of the output.
    last_commit_line = np.where(is_commit, np.arange(len(rows)), -1)
    np.maximum.accumulate(last_commit_line, out=last_commit_line)
    intro = np.full(table.count, -1, dtype=np.int64)
    valid = (rows >= 0) & ~is_commit & (last_commit_line >= 0)
    intro[rows[valid]] = rows[last_commit_line[valid]]
    return intro


def _present_now(repo: Repository, oids_hex: list[str]) -> list[bool]:
    """Whether the repository has each object now (in any pack or loose file, listed or not)."""
    proc = repo.git("cat-file", "--batch-check=%(objectname)", input="".join(h + "\n" for h in oids_hex).encode())
    lines = proc.stdout.decode().splitlines()
    return [not line.endswith(" missing") for line in lines]


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
