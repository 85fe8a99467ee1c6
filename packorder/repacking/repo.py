"""A repository as repack sees it: its packs (with .keep and .promisor flags), its loose
objects, its tag tips, and every object it holds, enumerated in the order Git's
`rev-list --objects` discovers them.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Collection
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from packorder import gitcmd
from packorder.errors import CorruptPackError, RepositoryError
from packorder.format import idx as idx_format
from packorder.format import layout as layout_mod
from packorder.format import mtimes as mtimes_format
from packorder.format.object_format import ObjectFormat
from packorder.format.pack import OBJ_COMMIT
from packorder.native_call import loose_header
from packorder.repacking import head_side as head_side_mod
from packorder.repacking import native_walk
from packorder.repacking import snapshot as snapshot_mod
from packorder.store.object_ids import id_order, keys, lookup, sort_keys
from packorder.store.promisor import check_promised

LOOSE = -1


@dataclass
class PackSource:
    path: Path
    keep: bool
    promisor: bool
    foreign: bool  # from an alternate object store: read, never removed
    mtime: float
    index: idx_format.PackIndex
    cruft: bool = False  # a cruft pack: unreachable objects, each with its age in a .mtimes
    _layout: layout_mod.PackLayout | None = None
    _mtimes: np.ndarray | None = None

    @property
    def idx_path(self) -> Path:
        return layout_mod.idx_path_of(self.path)

    @property
    def layout(self) -> layout_mod.PackLayout:
        if self._layout is None:
            self._layout = layout_mod.load(self.path, self.index)
        return self._layout

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    def sibling(self, ext: str) -> Path:
        return self.path.with_name(self.path.name[: -len(".pack")] + ext)

    def object_mtimes(self) -> np.ndarray:
        """Each object's age (epoch seconds) in .idx order: from the .mtimes of a cruft pack,
        the pack's own mtime for any other (as Git dates them)."""
        if self._mtimes is None:
            count = len(self.index.offsets)
            if self.cruft:
                self._mtimes = mtimes_format.read(str(self.sibling(".mtimes")), count, self.index.fmt).astype(np.int64)
            else:
                self._mtimes = np.full(count, int(self.mtime), dtype=np.int64)
        return self._mtimes


@dataclass
class LooseObjects:
    oids: np.ndarray  # (n, rawsz) uint8, sorted
    paths: list[Path]
    foreign: np.ndarray  # bool: in an alternate's object directory (read, never removed)


@dataclass
class Repository:
    git_dir: Path
    config: gitcmd.Config
    packs: list[PackSource]
    loose: LooseObjects
    bare: bool
    fmt: ObjectFormat  # the hash of its object names

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


def _pack_sources(packs: list[Path], foreign: bool, fmt: ObjectFormat) -> list[PackSource]:
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
                index=idx_format.read(str(layout_mod.idx_path_of(pack)), fmt),
                cruft=pack.with_name(f"{stem}.mtimes").exists(),
            )
        )
    # Git looks objects up in local packs first, newest first.
    out.sort(key=lambda p: -p.mtime)
    return out


def _loose(local: list[tuple[bytes, Path]], foreign: list[tuple[bytes, Path]], fmt: ObjectFormat) -> LooseObjects:
    """Both listings as one, by id (a local copy before an alternate's)."""
    listed = sorted([(oid, False, path) for oid, path in local] + [(oid, True, path) for oid, path in foreign])
    oids = id_rows(b"".join(oid for oid, _, _ in listed), fmt)
    return LooseObjects(oids, [path for _, _, path in listed], np.array([f for _, f, _ in listed], dtype=bool))


def open_repository(
    path: str | os.PathLike[str] | None = None, snapshot: snapshot_mod.Snapshot | None = None
) -> Repository:
    """The repository at `path`, with the packs and loose objects `snapshot` listed (listed
    now when there is none)."""
    if snapshot is None:
        snapshot = snapshot_mod.listed(path)
    git_dir, config, fmt = snapshot.git_dir, snapshot.config, snapshot.fmt
    packs = _pack_sources(snapshot.local_packs, False, fmt) + _pack_sources(snapshot.foreign_packs, True, fmt)
    bare = config.bare(git_dir)
    return Repository(git_dir, config, packs, _loose(snapshot.loose, snapshot.foreign_loose, fmt), bare, fmt)


@dataclass
class ObjectTable:
    """Every object to write, in discovery order (struct of arrays)."""

    oids: np.ndarray  # (n, rawsz) uint8
    kinds: np.ndarray  # uint8, the object's real type
    name_hash: np.ndarray  # uint32, Git's pack_name_hash of the path it was found at
    reachable: np.ndarray  # bool
    tagged: np.ndarray  # bool: a tag tip (a tag ref's target or what it peels to)
    source: np.ndarray  # int32: index into Repository.packs, or LOOSE
    pos: np.ndarray  # int64: pack position in that pack's layout, or index into loose
    promisor: np.ndarray  # bool: found in a .promisor pack
    missing: list[bytes] = field(default_factory=list)  # promised objects absent from the repository
    # Reachable objects left out because a .keep pack or (with `local`) an alternate has them.
    in_keep_packs: int = 0
    in_alternates: int = 0
    # The commit and tree graph the walk recorded (a _native.WalkEdges), for the bitmap: taken
    # by the first bitmap computed from it.
    graph: object | None = None
    # uint32, Git's pack_name_hash_v2 of the path; uint64, a hash of the whole path (0: none).
    # None where no walk gave them (a roll-up's table): the search by path then has nothing.
    name_hash_v2: np.ndarray | None = None
    path_hash: np.ndarray | None = None

    @property
    def count(self) -> int:
        return len(self.kinds)

    def subset(self, rows: np.ndarray) -> ObjectTable:
        """The table cut to `rows` (indexes or a mask), in their order: every array an object
        cut, the rest (counts, the graph, what a walk did not give) as it is."""
        arrays = {f.name: getattr(self, f.name) for f in fields(self)}
        return replace(self, **{name: a[rows] for name, a in arrays.items() if isinstance(a, np.ndarray)})


def id_rows(ids: bytes, fmt: ObjectFormat) -> np.ndarray:
    """Concatenated ids of `fmt` as an (n, rawsz) array."""
    return np.frombuffer(ids, dtype=np.uint8).reshape(-1, fmt.rawsz)


def _walk_of(repo: Repository, in_commit_order: bool) -> snapshot_mod.ObjectWalk | native_walk.NativeWalk:
    """The walk a repack would take (`packorder.walk`), over what `repo` lists."""
    loose = [(bytes(oid), path) for oid, path in zip(repo.loose.oids, repo.loose.paths, strict=True)]
    packs = [p.path for p in repo.packs]
    return snapshot_mod.object_walk(
        repo.git_dir, repo.fmt, repo.config, packs, loose, repo.has_promisor_packs, in_commit_order
    )


# The hashes of an object's path, one record an object (native_walk.Walked).
PATH_NAMES = np.dtype([("v1", np.uint32), ("v2", np.uint32), ("path", np.uint64)])


def _walked(walk: snapshot_mod.ObjectWalk, fmt: ObjectFormat) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
    """The walk's ids, the hashes of their paths (PATH_NAMES records) and the missing ids."""
    walked = walk.result()
    names = np.zeros(len(walked.name_hashes) // 4, dtype=PATH_NAMES)
    names["v1"] = np.frombuffer(walked.name_hashes, dtype=np.uint32)
    names["v2"] = np.frombuffer(walked.name_hashes_v2, dtype=np.uint32)
    names["path"] = np.frombuffer(walked.path_hashes, dtype=np.uint64)
    return id_rows(walked.ids, fmt), names, fmt.split(walked.missing)


def _tag_keys(tags: snapshot_mod.TagTips, fmt: ObjectFormat) -> np.ndarray:
    """Ids of tag tips as sorted keys."""
    return keys(id_rows(b"".join(tags.ids()), fmt))


def enumerate_objects(
    repo: Repository,
    snapshot: snapshot_mod.Snapshot | None = None,
    local: bool = True,
    unreachable: bool = True,
    retained: Collection[Path] = (),
) -> ObjectTable:
    """Every object a repack writes: the reachable ones in Git's discovery order, then (with
    `unreachable`) the unreachable ones of the local packs and loose objects, for the cruft
    pack. Objects of .keep packs are left to those packs, and with `local` (`git repack -l`,
    as `git gc` runs it) objects an alternate has are left to it. The unreachable objects of
    the `retained` packs (cruft packs that --combine-cruft-below-size keeps) stay in them. Takes the
    walk `snapshot` started, or starts one."""
    if snapshot is not None:
        walk, tags = snapshot.take_walk()
    else:
        walk = _walk_of(repo, in_commit_order=False)
        tags = snapshot_mod.TagTips(repo.git_dir)  # runs beside rev-list
    try:
        return _enumerate(repo, walk, tags, local, unreachable, frozenset(retained))
    finally:
        tags.stop()
        walk.stop()


def _present_in(packs: list[PackSource], want: np.ndarray) -> np.ndarray:
    found = np.zeros(len(want), dtype=bool)
    for pack in packs:
        found |= lookup(keys(pack.index.names), want) >= 0
    return found


def _enumerate(
    repo: Repository,
    walk: snapshot_mod.ObjectWalk,
    tags: snapshot_mod.TagTips,
    local: bool,
    unreachable: bool,
    retained: frozenset[Path],
) -> ObjectTable:
    kept_packs = [p for p in repo.packs if p.keep and not p.foreign]
    alternate_packs = [p for p in repo.packs if p.foreign]
    # The packs objects are read from: the local ones without .keep, and the alternates'
    # when their objects are copied (not `local`). Git prefers local packs, newest first.
    movable = [i for i, p in enumerate(repo.packs) if not (p.keep and not p.foreign) and not (local and p.foreign)]
    for i in movable:
        if not repo.packs[i].foreign:
            _ = repo.packs[i].layout  # read while rev-list runs
    oids, hashes, missing = _walked(walk, repo.fmt)
    if missing:
        check_promised(repo, missing)
    want = keys(oids)
    n = len(want)
    in_kept = _present_in(kept_packs, want)
    in_alternate = np.zeros(n, dtype=bool)
    if local:
        in_alternate = _present_in(alternate_packs, want) & ~in_kept
        foreign_loose = keys(repo.loose.oids[repo.loose.foreign])
        if len(foreign_loose):
            in_alternate |= (lookup(foreign_loose, want) >= 0) & ~in_kept
    source = np.full(n, LOOSE - 1, dtype=np.int32)  # LOOSE - 1: not found yet
    pos = np.full(n, -1, dtype=np.int64)
    for i in movable:
        pack = repo.packs[i]
        todo = source == LOOSE - 1
        if not todo.any():
            break
        at = lookup(keys(pack.index.names), want[todo])
        hit = at >= 0
        rows = np.flatnonzero(todo)[hit]
        source[rows] = i
        pos[rows] = pack.layout.idx_to_pack[at[hit]]
    loose_usable = ~repo.loose.foreign if local else np.ones(len(repo.loose.oids), dtype=bool)
    todo = source == LOOSE - 1
    if todo.any() and loose_usable.any():
        usable_rows = np.flatnonzero(loose_usable)
        at = lookup(keys(repo.loose.oids[usable_rows]), want[todo])
        rows = np.flatnonzero(todo)[at >= 0]
        source[rows] = LOOSE
        pos[rows] = usable_rows[at[at >= 0]]
    # Reachable but in nothing listed: a push that landed between the listing and the walk's
    # reading of the refs (its pack or loose objects appeared after the listing). Such objects
    # stay where they are (only what was listed is removed); any other is missing.
    unlisted = np.flatnonzero((source == LOOSE - 1) & ~in_kept & ~in_alternate)
    arrived = np.zeros(n, dtype=bool)
    if len(unlisted):
        present = _present_now(repo, [oids[i].tobytes().hex() for i in unlisted])
        gone = [oids[i].tobytes().hex() for i, here in zip(unlisted, present, strict=True) if not here]
        if gone:
            raise RepositoryError(f"object {gone[0]} is reachable but missing from the repository; nothing was changed")
        arrived[unlisted] = True
    keep_rows = ~in_kept & ~in_alternate & ~arrived
    oids, hashes, source, pos = oids[keep_rows], hashes[keep_rows], source[keep_rows], pos[keep_rows]
    reachable = np.ones(len(source), dtype=bool)

    # Unreachable objects follow, pack by pack in pack order, then loose ones by id: only
    # local copies (Git's cruft pack holds local objects), none a .keep pack or, with
    # `local`, an alternate has.
    parts: list[tuple[np.ndarray, int, np.ndarray]] = []
    seen = sort_keys(keys(oids))
    kept_as_they_are = [p for p in repo.packs if p.path in retained]
    excluded = kept_packs + kept_as_they_are + (alternate_packs if local else [])
    candidates = [
        (i, repo.packs[i].layout.oids, None)
        for i in movable
        if not repo.packs[i].foreign and repo.packs[i].path not in retained
    ]
    local_loose = np.flatnonzero(~repo.loose.foreign)
    candidates.append((LOOSE, repo.loose.oids[local_loose], local_loose))
    if not unreachable:
        candidates = []
    for src, their, rows_of in candidates:
        k = keys(their)
        absent = lookup(seen, k) < 0
        if absent.any() and excluded:
            absent[absent] = ~_present_in(excluded, k[absent])
        if local and absent.any() and repo.loose.foreign.any():
            absent[absent] = lookup(keys(repo.loose.oids[repo.loose.foreign]), k[absent]) < 0
        if absent.any():
            at = np.flatnonzero(absent).astype(np.int64)
            parts.append((their[absent], src, at if rows_of is None else rows_of[at]))
            seen = sort_keys(np.concatenate([seen, k[absent]]))
    if parts:
        oids = np.concatenate([oids] + [p[0] for p in parts])
        hashes = np.concatenate([hashes] + [np.zeros(len(p[2]), PATH_NAMES) for p in parts])
        source = np.concatenate([source] + [np.full(len(p[2]), p[1], np.int32) for p in parts])
        pos = np.concatenate([pos] + [p[2] for p in parts])
        reachable = np.concatenate([reachable, np.zeros(sum(len(p[2]) for p in parts), bool)])

    kinds = object_kinds(repo, source, pos)
    if walk.in_commit_order:
        # Discovery order: the walk's commits, then its other objects, each as printed.
        walked = np.flatnonzero(reachable)
        order = np.concatenate(
            [walked[kinds[walked] == OBJ_COMMIT], walked[kinds[walked] != OBJ_COMMIT], np.flatnonzero(~reachable)]
        )
        oids, hashes, source, pos, kinds = oids[order], hashes[order], source[order], pos[order], kinds[order]
    tagged = lookup(_tag_keys(tags, repo.fmt), keys(oids)) >= 0
    promisor = np.zeros(len(source), dtype=bool)
    for i, p in enumerate(repo.packs):
        if p.promisor:
            promisor |= source == i
    return ObjectTable(
        oids,
        kinds,
        np.ascontiguousarray(hashes["v1"]),
        reachable,
        tagged,
        source,
        pos,
        promisor,
        missing,
        in_keep_packs=int(in_kept.sum()),
        in_alternates=int(in_alternate.sum()),
        graph=walk.graph(),
        name_hash_v2=np.ascontiguousarray(hashes["v2"]),
        path_hash=np.ascontiguousarray(hashes["path"]),
    )


@dataclass
class ObjectHistory:
    """Where each object of a table sits in history, for the orders that place objects by it."""

    intro: np.ndarray  # int64: table index of the commit that introduces it (introducing_commits), or -1
    unreleased: np.ndarray  # bool: reachable from HEAD but from no tag (unreleased_objects)
    on_head: np.ndarray  # bool: a commit of HEAD's, or a tree one introduces (head_side.py)

    def subset(self, rows: np.ndarray) -> ObjectHistory:
        """The same for the table cut to `rows` (indexes renumbered; commits outside: -1)."""
        at = np.full(len(self.intro), -1, dtype=np.int64)
        at[rows] = np.arange(len(rows))
        intro = self.intro[rows]
        return ObjectHistory(
            np.where(intro >= 0, at[np.maximum(intro, 0)], -1), self.unreleased[rows], self.on_head[rows]
        )


# The snapshot's walks for object_history: in commit order, of unreleased history, of HEAD.
HistoryWalks = tuple[snapshot_mod.ObjectWalk | None, snapshot_mod.ObjectWalk | None, snapshot_mod.HeadWalk | None]


def object_history(
    repo: Repository,
    table: ObjectTable,
    walks: HistoryWalks = (None, None, None),
    intro: bool = True,
    unreleased: bool = True,
    head: bool = False,
) -> ObjectHistory:
    """introducing_commits, unreleased_objects and head_side of `table`, from `walks` (the
    snapshot's, started early) or from walks started now; what is not asked for is not
    walked (no introducing commit, nothing unreleased, nothing on HEAD)."""
    for walk, wanted in zip(walks, (intro, unreleased, head), strict=True):
        if walk is not None and not wanted:
            walk.stop()
    on_head = np.zeros(table.count, dtype=bool)
    if head:
        head_walk = walks[2] or snapshot_mod.HeadWalk(repo.git_dir, repo.fmt)
        try:
            on_head = head_side_mod.head_side(table.oids, table.kinds, table.name_hash, head_walk)
        finally:
            head_walk.stop()
    return ObjectHistory(
        introducing_commits(repo, table, walks[0]) if intro else np.full(table.count, -1, dtype=np.int64),
        unreleased_objects(repo, table, walks[1]) if unreleased else np.zeros(table.count, dtype=bool),
        on_head,
    )


def unreleased_objects(repo: Repository, table: ObjectTable, walk: snapshot_mod.ObjectWalk | None = None) -> np.ndarray:
    """Which objects of `table` are reachable from HEAD (the default branch) but from no tag
    (`git rev-list --objects HEAD --not --tags`): what a fetch from the last release asks for.
    Nothing when HEAD is unborn."""
    if walk is None:
        walk = snapshot_mod.ObjectWalk(
            repo.git_dir, repo.fmt, missing_ok=repo.has_promisor_packs, revs=snapshot_mod.UNRELEASED
        )
    try:
        oids, _, _ = _walked(walk, repo.fmt)
    finally:
        walk.stop()
    if not len(oids) or not table.count:
        return np.zeros(table.count, dtype=bool)
    return lookup(sort_keys(keys(oids)), keys(table.oids)) >= 0


def introducing_commits(
    repo: Repository, table: ObjectTable, walk: snapshot_mod.ObjectWalk | None = None
) -> np.ndarray:
    """For each object of `table`, the table index of the commit that first refers to it in
    the walk in commit order (ours or `rev-list --objects --in-commit-order`: the same), or
    -1 (tags, index entries, and unreachable objects)."""
    if walk is None:
        walk = _walk_of(repo, in_commit_order=True)
    try:
        oids, _, _ = _walked(walk, repo.fmt)
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


def object_kinds(repo: Repository, source: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The real type of each object at (source, pos); a delta whose base is in no listed
    pack is a corrupt pack."""
    kinds = np.zeros(len(source), dtype=np.uint8)
    for i, pack in enumerate(repo.packs):
        rows = np.flatnonzero(source == i)
        if len(rows):
            real = pack.layout.real_kinds()
            kinds[rows] = real[pos[rows]]
    for row in np.flatnonzero(source == LOOSE):
        kind, _ = loose_header(repo.loose.paths[int(pos[row])])
        kinds[row] = kind
    if (kinds == 0).any():
        row = int(np.flatnonzero(kinds == 0)[0])
        pack = repo.packs[int(source[row])]
        off = int(pack.layout.offsets[pos[row]])
        raise CorruptPackError("delta whose base is missing from its pack", off, str(pack.path))
    return kinds
