"""Delta selection: which stored deltas the new pack reuses, and where chains are cut.

A stored delta is reused when its base is also written to the new pack. Chains longer than
`--depth` are cut as Git's break_delta_chains() cuts them: counting links from the chain's
root, every entry at a multiple of depth + 1 becomes a whole object, so no chain is deeper
than `depth` and as few deltas as possible are lost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from packorder.format.layout import NO_BASE
from packorder.repo import LOOSE, ObjectTable, Repository, keys, lookup


@dataclass
class DeltaChoice:
    base: np.ndarray  # int64: table index of the delta base each object is written against, or -1
    stored_delta: np.ndarray  # bool: the object is stored as a delta in its source
    cut: np.ndarray  # bool: a reusable delta dropped to respect --depth


def stored_bases(repo: Repository, table: ObjectTable) -> tuple[np.ndarray, np.ndarray]:
    """For each object: whether its source entry is a delta, and the table index of that
    delta's base (-1 when the base is not among the objects written)."""
    n = table.count
    is_delta = np.zeros(n, dtype=bool)
    base = np.full(n, -1, dtype=np.int64)
    sorted_order = np.argsort(keys(table.oids), kind="stable")
    sorted_keys = keys(table.oids)[sorted_order]
    for i, pack in enumerate(repo.packs):
        rows = np.flatnonzero(table.source == i)
        if not len(rows):
            continue
        lay = pack.layout
        pos = table.pos[rows]
        bpos = lay.base[pos]
        delta = lay.is_delta[pos]
        is_delta[rows] = delta
        have = bpos != NO_BASE
        at = lookup(sorted_keys, keys(lay.oids[bpos[have]]))
        found = np.full(len(rows), -1, dtype=np.int64)
        found[np.flatnonzero(have)[at >= 0]] = sorted_order[at[at >= 0]]
        base[rows] = found
    return is_delta, base


def chain_positions(base: np.ndarray) -> np.ndarray:
    """How many delta links separate each object from its chain's root."""
    depth = np.zeros(len(base), dtype=np.int64)
    cur = base.copy()
    active = cur >= 0
    while active.any():
        depth[active] += 1
        cur[active] = base[cur[active]]
        active = cur >= 0
        if depth.max(initial=0) > len(base):
            raise ValueError("delta cycle among stored deltas")
    return depth


def reuse(repo: Repository, table: ObjectTable, depth: int) -> DeltaChoice:
    """Reuse every stored delta whose base is written too, cutting chains at `depth`."""
    stored, base = stored_bases(repo, table)
    base[table.source == LOOSE] = -1
    if depth <= 0:
        cut = base >= 0
        return DeltaChoice(np.full(table.count, -1, dtype=np.int64), stored, cut)
    position = chain_positions(base)
    cut = (base >= 0) & (position % (depth + 1) == 0)
    base = np.where(cut, -1, base)
    return DeltaChoice(base, stored, cut)


def none(table: ObjectTable) -> DeltaChoice:
    """No deltas at all (every object whole)."""
    n = table.count
    return DeltaChoice(np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))
