"""Every object a repack writes, enumerated: the reachable ones in the order the walk
discovers them (Git's `rev-list --objects` order, by either walk), each with where it is
stored, its real type and the hashes of its path; then the unreachable ones, for the cruft
pack. A promised object the walk missed is checked against the promisor packs."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Protocol

import numpy as np

from packorder.errors import RepositoryError
from packorder.format.object_format import ObjectFormat
from packorder.format.pack import OBJ_COMMIT
from packorder.store.object_ids import keys, lookup, sort_keys
from packorder.store.promisor import check_promised
from packorder.store.repository import LOOSE, PackSource, Repository, id_rows, object_kinds
from packorder.walk import native as native_walk
from packorder.walk import rev_list


class StartedWalk(Protocol):
    """A walk started early, beside other work (a repack's snapshot, repacking/snapshot.py)."""

    def take_walk(self) -> tuple[rev_list.GitObjectWalk | native_walk.NativeWalk, rev_list.TagTips]: ...


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


def walk_of(repo: Repository, in_commit_order: bool) -> rev_list.GitObjectWalk | native_walk.NativeWalk:
    """The walk a repack would take (`packorder.walk`), over what `repo` lists."""
    loose = [(bytes(oid), path) for oid, path in zip(repo.loose.oids, repo.loose.paths, strict=True)]
    packs = [p.path for p in repo.packs]
    return rev_list.object_walk(
        repo.git_dir, repo.fmt, repo.config, packs, loose, repo.has_promisor_packs, in_commit_order
    )


# The hashes of an object's path, one record an object (native_walk.Walked).
PATH_NAMES = np.dtype([("v1", np.uint32), ("v2", np.uint32), ("path", np.uint64)])


def walked(walk: rev_list.GitObjectWalk, fmt: ObjectFormat) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
    """The walk's ids, the hashes of their paths (PATH_NAMES records) and the missing ids."""
    result = walk.result()
    names = np.zeros(len(result.name_hashes) // 4, dtype=PATH_NAMES)
    names["v1"] = np.frombuffer(result.name_hashes, dtype=np.uint32)
    names["v2"] = np.frombuffer(result.name_hashes_v2, dtype=np.uint32)
    names["path"] = np.frombuffer(result.path_hashes, dtype=np.uint64)
    return id_rows(result.ids, fmt), names, fmt.split(result.missing)


def _tag_keys(tags: rev_list.TagTips, fmt: ObjectFormat) -> np.ndarray:
    """Ids of tag tips as sorted keys."""
    return keys(id_rows(b"".join(tags.ids()), fmt))


def enumerate_objects(
    repo: Repository,
    started: StartedWalk | None = None,
    local: bool = True,
    unreachable: bool = True,
    retained: Collection[Path] = (),
) -> ObjectTable:
    """Every object a repack writes: the reachable ones in Git's discovery order, then (with
    `unreachable`) the unreachable ones of the local packs and loose objects, for the cruft
    pack. Objects of .keep packs are left to those packs, and with `local` (`git repack -l`,
    as `git gc` runs it) objects an alternate has are left to it. The unreachable objects of
    the `retained` packs (cruft packs that --combine-cruft-below-size keeps) stay in them. Takes the
    walk `started` (a repack's snapshot) started, or starts one."""
    if started is not None:
        walk, tags = started.take_walk()
    else:
        walk = walk_of(repo, in_commit_order=False)
        tags = rev_list.TagTips(repo.git_dir)  # runs beside rev-list
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
    walk: rev_list.GitObjectWalk,
    tags: rev_list.TagTips,
    local: bool,
    unreachable: bool,
    retained: frozenset[Path],
) -> ObjectTable:
    kept_packs = [p for p in repo.packs if p.keep and not p.foreign]
    # The packs objects are read from: the local ones without .keep, and the alternates'
    # when their objects are copied (not `local`). Git prefers local packs, newest first.
    movable = [i for i, p in enumerate(repo.packs) if not (p.keep and not p.foreign) and not (local and p.foreign)]
    for i in movable:
        if not repo.packs[i].foreign:
            _ = repo.packs[i].layout  # read while rev-list runs
    oids, hashes, missing = walked(walk, repo.fmt)
    if missing:
        check_promised(repo, missing)
    want = keys(oids)
    in_kept = _present_in(kept_packs, want)
    in_alternate = _in_alternates(repo, want, in_kept) if local else np.zeros(len(want), dtype=bool)
    source, pos = _locate(repo, want, movable, local)
    # Reachable but in nothing listed: a push that landed between the listing and the walk's
    # reading of the refs (its pack or loose objects appeared after the listing). Such objects
    # stay where they are (only what was listed is removed); any other is missing.
    unlisted = np.flatnonzero((source == _UNFOUND) & ~in_kept & ~in_alternate)
    arrived = np.zeros(len(want), dtype=bool)
    if len(unlisted):
        present = _present_now(repo, [oids[i].tobytes().hex() for i in unlisted])
        gone = [oids[i].tobytes().hex() for i, here in zip(unlisted, present, strict=True) if not here]
        if gone:
            raise RepositoryError(f"object {gone[0]} is reachable but missing from the repository; nothing was changed")
        arrived[unlisted] = True
    keep_rows = ~in_kept & ~in_alternate & ~arrived
    oids, hashes, source, pos = oids[keep_rows], hashes[keep_rows], source[keep_rows], pos[keep_rows]
    reachable = np.ones(len(source), dtype=bool)
    if unreachable:
        excluded = kept_packs + [p for p in repo.packs if p.path in retained]
        excluded += [p for p in repo.packs if p.foreign] if local else []
        parts = _unreachable(repo, oids, movable, retained, excluded, local)
        if parts:
            oids = np.concatenate([oids] + [p[0] for p in parts])
            hashes = np.concatenate([hashes] + [np.zeros(len(p[2]), PATH_NAMES) for p in parts])
            source = np.concatenate([source] + [np.full(len(p[2]), p[1], np.int32) for p in parts])
            pos = np.concatenate([pos] + [p[2] for p in parts])
            reachable = np.concatenate([reachable, np.zeros(sum(len(p[2]) for p in parts), bool)])

    kinds = object_kinds(repo, source, pos)
    if walk.in_commit_order:
        # Discovery order: the walk's commits, then its other objects, each as printed.
        seen = np.flatnonzero(reachable)
        order = np.concatenate(
            [seen[kinds[seen] == OBJ_COMMIT], seen[kinds[seen] != OBJ_COMMIT], np.flatnonzero(~reachable)]
        )
        oids, hashes, source, pos, kinds = oids[order], hashes[order], source[order], pos[order], kinds[order]
    promisor = np.zeros(len(source), dtype=bool)
    for i, p in enumerate(repo.packs):
        if p.promisor:
            promisor |= source == i
    return ObjectTable(
        oids,
        kinds,
        np.ascontiguousarray(hashes["v1"]),
        reachable,
        lookup(_tag_keys(tags, repo.fmt), keys(oids)) >= 0,
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


_UNFOUND = LOOSE - 1  # a source for an object found in no listed pack nor loose file yet


def _in_alternates(repo: Repository, want: np.ndarray, in_kept: np.ndarray) -> np.ndarray:
    """Which of `want` an alternate holds (a pack or a loose file), among those no .keep pack holds."""
    found = _present_in([p for p in repo.packs if p.foreign], want) & ~in_kept
    foreign_loose = keys(repo.loose.oids[repo.loose.foreign])
    if len(foreign_loose):
        found |= (lookup(foreign_loose, want) >= 0) & ~in_kept
    return found


def _locate(repo: Repository, want: np.ndarray, movable: list[int], local: bool) -> tuple[np.ndarray, np.ndarray]:
    """Where each of `want` is read from: the first of the `movable` packs (in Git's
    preference) that has it and its pack position there, else its loose file (an
    alternate's too, unless `local`), else _UNFOUND."""
    source = np.full(len(want), _UNFOUND, dtype=np.int32)
    pos = np.full(len(want), -1, dtype=np.int64)
    for i in movable:
        pack = repo.packs[i]
        todo = source == _UNFOUND
        if not todo.any():
            break
        at = lookup(keys(pack.index.names), want[todo])
        hit = at >= 0
        rows = np.flatnonzero(todo)[hit]
        source[rows] = i
        pos[rows] = pack.layout.idx_to_pack[at[hit]]
    loose_usable = ~repo.loose.foreign if local else np.ones(len(repo.loose.oids), dtype=bool)
    todo = source == _UNFOUND
    if todo.any() and loose_usable.any():
        usable_rows = np.flatnonzero(loose_usable)
        at = lookup(keys(repo.loose.oids[usable_rows]), want[todo])
        rows = np.flatnonzero(todo)[at >= 0]
        source[rows] = LOOSE
        pos[rows] = usable_rows[at[at >= 0]]
    return source, pos


def _unreachable(
    repo: Repository,
    reachable: np.ndarray,
    movable: list[int],
    retained: frozenset[Path],
    excluded: list[PackSource],
    local: bool,
) -> list[tuple[np.ndarray, int, np.ndarray]]:
    """The objects of the local movable packs, then of the local loose files, that are not
    among the `reachable` ids nor in an `excluded` pack (nor, with `local`, an alternate's
    loose file), each once: (ids, source, positions) a source. Only local copies: Git's
    cruft pack holds local objects; the `retained` cruft packs keep theirs."""
    parts: list[tuple[np.ndarray, int, np.ndarray]] = []
    seen = sort_keys(keys(reachable))
    candidates = [
        (i, repo.packs[i].layout.oids, None)
        for i in movable
        if not repo.packs[i].foreign and repo.packs[i].path not in retained
    ]
    local_loose = np.flatnonzero(~repo.loose.foreign)
    candidates.append((LOOSE, repo.loose.oids[local_loose], local_loose))
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
    return parts


def _present_now(repo: Repository, oids_hex: list[str]) -> list[bool]:
    """Whether the repository has each object now (in any pack or loose file, listed or not)."""
    proc = repo.git("cat-file", "--batch-check=%(objectname)", input="".join(h + "\n" for h in oids_hex).encode())
    lines = proc.stdout.decode().splitlines()
    return [not line.endswith(" missing") for line in lines]
