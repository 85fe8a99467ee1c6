"""The objects a repack would write, in the order the repository already stores them, in
place of the order Git's walk discovers them: what fleet triage plans a repack from, in
milliseconds, where the walk takes seconds (docs/fleet.md).

Git's own packs are written in an order close to discovery order (tag tips, then commits
and trees in the order the walk met them, then blob families), and newer packs and loose
objects hold newer history, which the walk meets first. So the stored order is taken as
the discovery order: loose objects first, then the packs newest first, each in pack order
but for the commits and trees stored as deltas (`walk_order`), an object counted where
Git would read it (loose, else the newest pack). Every object of
those packs is taken as reachable: without a walk there is no telling, and what is
unreachable is either in a cruft pack already (left out here, as a repack leaves it apart)
or usually a small part of the rest.
"""

from __future__ import annotations

import numpy as np

from packorder.format.layout import PackLayout
from packorder.format.pack import OBJ_BLOB
from packorder.store.object_ids import first_copies, keys, lookup
from packorder.store.repository import LOOSE, Repository, id_rows, object_kinds
from packorder.walk.objects import ObjectTable
from packorder.walk.rev_list import TagTips


def movable_packs(repo: Repository) -> list[int]:
    """The packs a repack rewrites into the ordered pack: local, neither .keep nor cruft,
    newest first (Repository keeps them so)."""
    return [i for i, p in enumerate(repo.packs) if not (p.foreign or p.keep or p.cruft)]


def stored_table(repo: Repository) -> ObjectTable:
    """Every object of the movable packs and the local loose objects, as an ObjectTable in
    the order they are stored (see the module's docstring)."""
    tags = TagTips(repo.git_dir)
    try:
        local = np.flatnonzero(~repo.loose.foreign)
        oids_parts = [repo.loose.oids[local]]
        source_parts = [np.full(len(local), LOOSE, dtype=np.int32)]
        pos_parts = [local.astype(np.int64)]
        for i in movable_packs(repo):
            layout = repo.packs[i].layout
            at = walk_order(layout)
            oids_parts.append(layout.oids[at])
            source_parts.append(np.full(layout.count, i, dtype=np.int32))
            pos_parts.append(at)
        oids, source, pos = np.concatenate(oids_parts), np.concatenate(source_parts), np.concatenate(pos_parts)
        if sum(len(p) > 0 for p in pos_parts) > 1:
            # An object stored twice counts once, at its first place (loose, then newest pack).
            rows = first_copies(keys(oids))
            oids, source, pos = oids[rows], source[rows], pos[rows]
        kinds = object_kinds(repo, source, pos)
        tagged = _tag_tips(repo, source, pos, tags.ids())
    finally:
        tags.stop()
    promisor = np.zeros(len(source), dtype=bool)
    for i, p in enumerate(repo.packs):
        if p.promisor:
            promisor |= source == i
    n = len(source)
    return ObjectTable(oids, kinds, np.zeros(n, dtype=np.uint32), np.ones(n, dtype=bool), tagged, source, pos, promisor)


def _tag_tips(repo: Repository, source: np.ndarray, pos: np.ndarray, tips: list[bytes]) -> np.ndarray:
    """Which objects are tag tips: the few tips looked up in each pack's index and among the
    loose objects (both sorted by id), not the many objects among the tips."""
    tagged = np.zeros(len(source), dtype=bool)
    if not tips:
        return tagged
    want = keys(id_rows(b"".join(tips), repo.fmt))
    for i, pack in enumerate(repo.packs):
        rows = np.flatnonzero(source == i)
        if len(rows):
            at = lookup(keys(pack.index.names), want)
            tip = np.zeros(pack.index.count, dtype=bool)
            tip[pack.layout.idx_to_pack[at[at >= 0]]] = True
            tagged[rows] = tip[pos[rows]]
    rows = np.flatnonzero(source == LOOSE)
    if len(rows):
        at = lookup(keys(repo.loose.oids), want)
        tip = np.zeros(len(repo.loose.oids), dtype=bool)
        tip[at[at >= 0]] = True
        tagged[rows] = tip[pos[rows]]
    return tagged


def walk_order(layout: PackLayout) -> np.ndarray:
    """The pack's positions in about the order Git's walk would meet them. Whole commits
    and trees are in that order in Git's packs, but one stored as a delta may be anywhere:
    in its delta family among the blobs (Git, reusing deltas) or among blobs of its time
    (GitHub's packs). The walk meets the versions of a tree at one path near each other, so
    a commit or tree stored as a delta is taken right after its chain's root (a whole
    object, in its place), its family in pack order."""
    n = layout.count
    position = np.arange(n, dtype=np.int64)
    moved = layout.is_delta & (layout.real_kinds() != OBJ_BLOB)
    key = np.where(moved, layout.roots(), position)
    return np.lexsort((position, moved, key))
