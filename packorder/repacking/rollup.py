"""What a geometric repack rolls up, found in the order packorder writes it.

The objects are those `git pack-objects --stdin-packs --unpacked` packs for `git repack
--geometric`: every object of the packs that roll up and every local loose object, less
those a pack that stays already holds (the packs of the progression, .keep packs, and with
`local` an alternate's). Git's objects of promisor packs roll up apart, into a promisor pack.

They are the newest history, and packorder writes them in its order, as the ordered pack
is written: for that, the walk over them alone. packorder's own walk is given the packs
that roll up and the loose objects as the whole repository, with every commit of the set as
a starting point: what it cannot find (the history they build on, in the packs that stay)
it passes as missing, as a partial clone's walk passes promised objects. So the set is
walked in the order a walk of every ref meets it, each object with the name hash of its
path, for the price of the set. The history facts an order needs (introducing commits,
HEAD's side, what no tag holds) come from the same kind of walk from HEAD and from the tags.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from packorder import _native, gitcmd
from packorder.format.pack import OBJ_COMMIT, OBJ_TAG, OBJ_TREE
from packorder.native_call import run_job
from packorder.orders.catalog import CATALOG
from packorder.repacking.geometry import Geometry
from packorder.store.object_ids import first_copies, id_order, keys, lookup, sort_keys
from packorder.store.promisor import check_promised
from packorder.store.repository import LOOSE, PackSource, Repository, id_rows, object_kinds
from packorder.walk import head_side as head_side_mod
from packorder.walk.history import ObjectHistory, introducing_commits
from packorder.walk.native import Walked, shallow_commits, walk_limits
from packorder.walk.objects import ObjectTable
from packorder.walk.rev_list import TagTips


@dataclass
class RollUp:
    """The objects that roll up (promisor ones last, `promisor` marks them) and where."""

    table: ObjectTable
    packs: list[int]  # repo.packs indexes of the packs that roll up (their objects are all here or kept)
    loose: np.ndarray  # rows of repo.loose that roll up (local loose objects)
    walked: _Walked | None  # the walk of the regular objects, kept for the history facts

    @property
    def empty(self) -> bool:
        return self.table.count == 0


@dataclass
class _Walked:
    """A finished walk, as introducing_commits takes one."""

    walked: Walked
    in_commit_order: bool

    def result(self) -> Walked:
        return self.walked

    def stop(self) -> None:
        pass


def _pack_index(repo: Repository) -> dict[Path, int]:
    return {p.path: i for i, p in enumerate(repo.packs)}


def _held_by(packs: list[PackSource], want: np.ndarray) -> np.ndarray:
    held = np.zeros(len(want), dtype=bool)
    for pack in packs:
        if len(want):
            held |= lookup(keys(pack.index.names), want) >= 0
    return held


def collect(repo: Repository, geometry: Geometry, order: str, local: bool = True, threads: int = 1) -> RollUp:
    """The objects the packs and loose objects of `geometry`'s roll-up hold that no staying
    pack holds, in walk order (see the module's doc)."""
    at = _pack_index(repo)
    rolled = [at[c.path] for c in geometry.rolled_up]
    rolled_promisor = [at[c.path] for c in geometry.promisor_rolled_up]
    going = set(rolled) | set(rolled_promisor)
    staying = [p for i, p in enumerate(repo.packs) if i not in going and not (p.foreign and not local) and not p.cruft]
    loose_rows = np.flatnonzero(~repo.loose.foreign)

    regular = _walk_order(repo, _candidates(repo, rolled, loose_rows, staying, local), order, threads)
    promisor = _candidates(repo, rolled_promisor, np.zeros(0, dtype=np.int64), staying, local)
    if len(regular.oids) and len(promisor.oids):
        promisor.kept &= lookup(sort_keys(keys(regular.oids[regular.kept])), keys(promisor.oids)) < 0
    parts = [regular.subset(), promisor.subset()]
    oids = np.concatenate([p[0] for p in parts])
    source = np.concatenate([p[1] for p in parts])
    pos = np.concatenate([p[2] for p in parts])
    hashes = np.concatenate([p[3] for p in parts])
    kinds = object_kinds(repo, source, pos) if len(source) else np.zeros(0, dtype=np.uint8)
    table = ObjectTable(
        oids,
        kinds,
        hashes,
        np.ones(len(source), dtype=bool),
        _tag_tips(repo, oids),
        source,
        pos,
        np.concatenate([np.zeros(len(parts[0][1]), bool), np.ones(len(parts[1][1]), bool)]),
    )
    return RollUp(table, rolled + rolled_promisor, loose_rows, regular.walked)


@dataclass
class _Candidates:
    """The objects of some packs and loose objects, each once, with where to read it."""

    oids: np.ndarray
    source: np.ndarray
    pos: np.ndarray
    hashes: np.ndarray
    kept: np.ndarray  # bool: not held by a pack that stays
    walked: _Walked | None = None

    def subset(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        k = self.kept
        return self.oids[k], self.source[k], self.pos[k], self.hashes[k]


def _candidates(
    repo: Repository, packs: list[int], loose_rows: np.ndarray, staying: list[PackSource], local: bool
) -> _Candidates:
    """Every object of `packs` (newest first, as Repository lists them) and of the loose
    objects `loose_rows`, each once (its first copy), and whether a pack that stays holds it
    (then it does not roll up: Git's excluded packs, --honor-pack-keep, --local)."""
    rawsz = repo.fmt.rawsz
    oids = [np.zeros((0, rawsz), dtype=np.uint8)]
    source = [np.zeros(0, dtype=np.int32)]
    pos = [np.zeros(0, dtype=np.int64)]
    for i in sorted(packs):
        layout = repo.packs[i].layout
        oids.append(layout.oids)
        source.append(np.full(layout.count, i, dtype=np.int32))
        pos.append(np.arange(layout.count, dtype=np.int64))
    oids.append(repo.loose.oids[loose_rows])
    source.append(np.full(len(loose_rows), LOOSE, dtype=np.int32))
    pos.append(loose_rows.astype(np.int64))
    all_oids, all_source, all_pos = np.concatenate(oids), np.concatenate(source), np.concatenate(pos)
    rows = first_copies(keys(all_oids))
    all_oids, all_source, all_pos = all_oids[rows], all_source[rows], all_pos[rows]
    held = _held_by(staying, keys(all_oids))
    if local:
        foreign = repo.loose.foreign
        if foreign.any() and len(all_oids):
            held |= lookup(sort_keys(keys(repo.loose.oids[foreign])), keys(all_oids)) >= 0
    return _Candidates(all_oids, all_source, all_pos, np.zeros(len(all_oids), dtype=np.uint32), ~held)


def _walk(
    repo: Repository,
    packs: list[int],
    loose_rows: np.ndarray,
    commits: np.ndarray,
    roots: np.ndarray,
    in_commit_order: bool,
    threads: int,
) -> Walked:
    """packorder's walk over `packs` and the loose objects `loose_rows` alone, from
    `commits` and the other `roots` (ids), what lies outside passed as missing (ids, last)."""
    loose_ids = repo.loose.oids[loose_rows]
    order = id_order(keys(loose_ids))
    walker = _native.ObjectWalker(
        [str(repo.packs[i].path) for i in sorted(packs)],
        np.ascontiguousarray(loose_ids[order]).tobytes(),
        [str(repo.loose.paths[int(r)]) for r in loose_rows[order]],
        np.ascontiguousarray(commits).tobytes(),
        [(bytes(r), None) for r in roots],
        [],
        in_commit_order,
        True,
        shallow_commits(repo.git_dir),
        walk_limits(repo.config, threads),
        object_format=repo.fmt.name,
    )
    return run_job(walker, title="Counting objects").walked


def _walk_order(repo: Repository, found: _Candidates, order: str, threads: int) -> _Candidates:
    """`found`'s objects that roll up, in the order the walk meets them (then the rest in
    their stored order), each with its path's name hash."""
    kept = np.flatnonzero(found.kept)
    if not len(kept):
        return found
    packs = sorted({int(s) for s in found.source[kept] if s != LOOSE})
    loose_rows = found.pos[kept][found.source[kept] == LOOSE]
    kinds = object_kinds(repo, found.source[kept], found.pos[kept])
    commits = found.oids[kept][kinds == OBJ_COMMIT]
    tags = found.oids[kept][kinds == OBJ_TAG]
    in_commit_order = CATALOG[order].needs_intro
    walk = _walk(repo, packs, loose_rows, commits, tags, in_commit_order, threads)
    _check_held(repo, id_rows(walk.missing, repo.fmt))
    walked = id_rows(walk.ids, repo.fmt)
    hashes = np.frombuffer(walk.name_hashes, dtype=np.uint32)
    # The walk's place of each object; those it did not meet after, in stored order.
    k = keys(found.oids)
    sorted_k_order = id_order(k)
    at = lookup(k[sorted_k_order], keys(walked))
    rows_of_walked = np.where(at >= 0, sorted_k_order[np.maximum(at, 0)], -1)
    valid = (rows_of_walked >= 0) & found.kept[np.maximum(rows_of_walked, 0)]
    walked_rows, walked_hashes = rows_of_walked[valid], hashes[valid]
    _, first = np.unique(walked_rows, return_index=True)
    first.sort()
    walked_rows, walked_hashes = walked_rows[first], walked_hashes[first]
    met = np.zeros(len(found.oids), dtype=bool)
    met[walked_rows] = True
    rest = np.flatnonzero(found.kept & ~met)
    rows = np.concatenate([walked_rows, rest]).astype(np.int64)
    name_hash = np.zeros(len(found.oids), dtype=np.uint32)
    name_hash[walked_rows] = walked_hashes
    out = _Candidates(found.oids[rows], found.source[rows], found.pos[rows], name_hash[rows], found.kept[rows])
    out.walked = _Walked(walk, in_commit_order)
    return out


def _check_held(repo: Repository, outside: np.ndarray) -> None:
    """What the roll-up refers to outside itself must be in a pack that stays (or an
    alternate's, or loose): a missing object is found here, before anything changes, as a
    repack's full walk finds one. In a partial clone, missing objects must be promised."""
    if not len(outside):
        return
    want = keys(outside)
    held = _held_by(repo.packs, want)
    if len(repo.loose.oids):
        held |= lookup(sort_keys(keys(repo.loose.oids)), want) >= 0
    if not held.all():
        check_promised(repo, [bytes(o) for o in outside[~held]])


def _tag_tips(repo: Repository, oids: np.ndarray) -> np.ndarray:
    """Which objects are tag tips (a tag ref's target or what it peels to)."""
    if not len(oids):
        return np.zeros(0, dtype=bool)
    tips = TagTips(repo.git_dir)
    try:
        ids = tips.ids()
    finally:
        tips.stop()
    if not ids:
        return np.zeros(len(oids), dtype=bool)
    return lookup(sort_keys(keys(id_rows(b"".join(ids), repo.fmt))), keys(oids)) >= 0


def history(repo: Repository, rollup: RollUp, order: str, threads: int = 1) -> ObjectHistory | None:
    """The history facts `order` needs, of the objects that roll up (see the module's doc);
    None for an order that needs none."""
    needs = CATALOG[order]
    table = rollup.table
    if not needs.needs:
        return None
    n = table.count
    intro = np.full(n, -1, dtype=np.int64)
    if needs.needs_intro and rollup.walked is not None:
        intro = introducing_commits(repo, table, rollup.walked)
    unreleased = np.zeros(n, dtype=bool)
    on_head = np.zeros(n, dtype=bool)
    if needs.needs_unreleased or needs.needs_head:
        head_ids, head_hashes = _reached_from(repo, rollup, _head_commit(repo))
        from_head = _rows_in(table, head_ids)
        if needs.needs_unreleased:
            tips = table.oids[table.tagged & ((table.kinds == OBJ_COMMIT) | (table.kinds == OBJ_TAG))]
            tagged_ids, _ = _reached_from(repo, rollup, tips)
            unreleased = from_head & ~_rows_in(table, tagged_ids)
        if needs.needs_head:
            on_head = head_side_mod.head_side(
                table.oids, table.kinds, table.name_hash, _HeadOf(table, head_ids, head_hashes)
            )
    return ObjectHistory(intro, unreleased, on_head)


def _head_commit(repo: Repository) -> np.ndarray:
    proc = gitcmd.run(["rev-parse", "--verify", "-q", "HEAD^{commit}"], git_dir=repo.git_dir, check=False)
    text = proc.stdout.decode().strip()
    if proc.returncode != 0 or len(text) != repo.fmt.hexsz:
        return np.zeros((0, repo.fmt.rawsz), dtype=np.uint8)
    return id_rows(bytes.fromhex(text), repo.fmt)


def _reached_from(repo: Repository, rollup: RollUp, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The objects that roll up reached from `starts` (ids) within them, and their name hashes."""
    table = rollup.table
    rows = _lookup_rows(table, starts) if len(starts) else np.zeros(0, dtype=np.int64)
    rows = rows[rows >= 0]
    if not len(rows):
        return np.zeros((0, repo.fmt.rawsz), dtype=np.uint8), np.zeros(0, dtype=np.uint32)
    regular = ~table.promisor
    packs = sorted({int(s) for s in table.source[regular] if s != LOOSE})
    loose_rows = table.pos[regular & (table.source == LOOSE)]
    is_commit = table.kinds[rows] == OBJ_COMMIT
    walk = _walk(repo, packs, loose_rows, table.oids[rows[is_commit]], table.oids[rows[~is_commit]], False, 1)
    return id_rows(walk.ids, repo.fmt), np.frombuffer(walk.name_hashes, dtype=np.uint32)


def _lookup_rows(table: ObjectTable, ids: np.ndarray) -> np.ndarray:
    """The row of each of `ids` in `table`, -1 where it has none."""
    k = keys(table.oids)
    order = id_order(k)
    at = lookup(k[order], keys(ids))
    return np.where(at >= 0, order[np.maximum(at, 0)], -1)


def _rows_in(table: ObjectTable, ids: np.ndarray) -> np.ndarray:
    """Which rows of `table` are among `ids`."""
    if not len(ids) or not table.count:
        return np.zeros(table.count, dtype=bool)
    return lookup(sort_keys(keys(ids)), keys(table.oids)) >= 0


class _HeadOf:
    """HEAD's commits and their root trees among the objects that roll up, as
    head_side reads rev_list.HeadWalk's."""

    def __init__(self, table: ObjectTable, ids: np.ndarray, hashes: np.ndarray) -> None:
        rows = _lookup_rows(table, ids)
        kinds = np.where(rows >= 0, table.kinds[np.maximum(rows, 0)], 0) if len(rows) else np.zeros(0, np.uint8)
        self.commits = ids[kinds == OBJ_COMMIT]
        self.roots = ids[(kinds == OBJ_TREE) & (hashes == 0)]

    def result(self) -> tuple[bytes, bytes]:
        return np.ascontiguousarray(self.commits).tobytes(), np.ascontiguousarray(self.roots).tobytes()
