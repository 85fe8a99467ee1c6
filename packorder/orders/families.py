"""Delta families as arrays over object indexes (`base[i]`: the index of i's delta base, or
-1): children lists, chain roots and depths, depth-first positions; the write order being
built, which takes each object once and whole families at a time (Git's
add_to_write_order and add_descendants_to_write_order); and a base moved before its delta."""

from __future__ import annotations

import numpy as np

from packorder import _native
from packorder.format.layout import roots_and_depths


def children_lists(base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR lists of delta children, siblings in discovery order: the children of i are
    `child[start[i]:start[i + 1]]`."""
    n = len(base)
    has = base >= 0
    kids = np.flatnonzero(has)
    parents = base[kids]
    order = np.argsort(parents, kind="stable")
    child = kids[order]
    counts = np.bincount(parents, minlength=n) if len(parents) else np.zeros(n, dtype=np.int64)
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    return start, child


def delta_roots(base: np.ndarray) -> np.ndarray:
    """The root of each object's delta chain (itself for whole objects)."""
    return roots_and_depths(base)[0]


class WriteOrder:
    """Git's add_to_write_order: each object once, in the order first asked for."""

    def __init__(self, n: int) -> None:
        self.parts: list[np.ndarray] = []
        self.filled = np.zeros(n, dtype=bool)

    def add(self, items: np.ndarray) -> None:
        """Add `items` (distinct indexes), skipping those already written."""
        items = items[~self.filled[items]]
        self.filled[items] = True
        self.parts.append(items.astype(np.int64))

    def add_families(self, roots: np.ndarray, start: np.ndarray, child: np.ndarray) -> None:
        """Each root, then each sibling group whole, depth first (Git's
        add_descendants_to_write_order); the traversal itself runs natively."""
        added, filled = _native.add_families(
            roots.astype(np.int64).tobytes(),
            start.astype(np.int64).tobytes(),
            child.astype(np.int64).tobytes(),
            self.filled.view(np.uint8).tobytes(),
        )
        self.filled = np.frombuffer(filled, dtype=np.uint8).astype(bool)
        self.parts.append(np.frombuffer(added, dtype=np.int64))

    def result(self) -> np.ndarray:
        return np.concatenate(self.parts) if self.parts else np.zeros(0, dtype=np.int64)


def chain_depths(base: np.ndarray) -> np.ndarray:
    """The number of delta links from each object down to its chain root (0 for a root)."""
    return roots_and_depths(base)[1]


def depth_first_positions(base: np.ndarray) -> np.ndarray:
    """Each object's place in a depth-first preorder walk of its delta family (the root 0, each
    child right after its parent's earlier children's whole subtrees, children in discovery
    order). Computed a chain level at a time, so the cost grows with the chain depth, not
    with the number of objects handled in Python."""
    n = len(base)
    depth = chain_depths(base)
    by_level = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[by_level], np.arange(int(depth.max(initial=0)) + 2))
    size = np.ones(n, dtype=np.int64)  # objects in each subtree
    for d in range(len(bounds) - 2, 0, -1):
        level = by_level[bounds[d] : bounds[d + 1]]
        np.add.at(size, base[level], size[level])
    start, child = children_lists(base)
    before = np.cumsum(size[child]) - size[child]  # subtree sizes of earlier children, all parents
    group = np.repeat(np.arange(n), np.diff(start))  # the parent of each entry of `child`
    offset = np.zeros(n, dtype=np.int64)
    offset[child] = before - before[start[group]]
    position = np.zeros(n, dtype=np.int64)
    for d in range(1, len(bounds) - 1):
        level = by_level[bounds[d] : bounds[d + 1]]
        position[level] = position[base[level]] + 1 + offset[level]
    return position


def bases_first(order: np.ndarray, base: np.ndarray) -> np.ndarray:
    """`order`, with each delta's base moved just before the delta if it came later (Git's
    write_one). Chains are followed to their root, so OFS_DELTA offsets always point back."""
    out = _native.bases_first(order.astype(np.int64).tobytes(), base.astype(np.int64).tobytes())
    return np.frombuffer(out, dtype=np.int64)
