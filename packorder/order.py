"""Write orders: pure functions from arrays describing the objects (in discovery order) to a
permutation saying which object is written when. They know graphs, not bytes.

Inputs, all indexed by discovery position (the order Git's rev-list --objects finds them):
- `kinds`: object type per object (1 commit, 2 tree, 3 blob, 4 tag; 6/7 for a delta where an
  order should see the stored entry type, as Git's does);
- `tagged`: whether the object is a tag tip;
- `base`: discovery position of the object's delta base in the new pack, or -1.

Every order returned here is then passed through `bases_first`, which moves a delta's base
just before the delta when the order would write the delta first (an OFS_DELTA must point
backwards). That is what Git's write_one() does, and the only change made to an order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from packorder import _native

COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
OFS_DELTA, REF_DELTA = 6, 7


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
    root = np.arange(len(base), dtype=np.int64)
    cur = base.copy()
    active = cur >= 0
    steps = 0
    while active.any():
        root[active] = cur[active]
        cur[active] = base[cur[active]]
        active = cur >= 0
        steps += 1
        if steps > len(base):
            raise ValueError("delta cycle")
    return root


class _Writer:
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


def git_write_order(kinds: np.ndarray, tagged: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Git's compute_write_order (one layer, no delta islands), over the types given."""
    n = len(kinds)
    w = _Writer(n)
    if n == 0:
        return w.result()
    tagged_at = np.flatnonzero(tagged)
    last_untagged = int(tagged_at[0]) if len(tagged_at) else n
    # Objects in discovery order up to the first tag tip.
    w.add(np.arange(last_untagged))
    # Then all the tag tips together.
    w.add(tagged_at)
    rest = np.arange(last_untagged, n)
    # Then the remaining commits and tags, then all trees.
    w.add(rest[(kinds[rest] == COMMIT) | (kinds[rest] == TAG)])
    w.add(rest[kinds[rest] == TREE])
    # Finally everything else, a delta family at a time from its chain root, families in the
    # order of their first member not yet written. Writing a family fills only its own
    # members, so that order can be read off before writing any.
    start, child = children_lists(base)
    waiting = rest[~w.filled[rest]]
    roots = delta_roots(base)[waiting]
    _, first = np.unique(roots, return_index=True)
    w.add_families(roots[np.sort(first)], start, child)
    out = w.result()
    if len(out) != n:
        raise AssertionError(f"ordered {len(out)} objects, expected {n}")
    return out


def recency(kinds: np.ndarray, tagged: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Git's intended recency order, on every object's real type: tag tips together, commits,
    trees, then delta families. `kinds` must hold real types only."""
    if np.isin(kinds, (OFS_DELTA, REF_DELTA)).any():
        raise ValueError("recency order takes real object types")
    return git_write_order(kinds, tagged, base)


def rev_list(kinds: np.ndarray, tagged: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Plain discovery order: Git's layout before 2011, the baseline of the study."""
    return np.arange(len(kinds), dtype=np.int64)


TYPE_RANK = np.array([9, 0, 2, 3, 1, 9, 9, 9], dtype=np.int64)  # commit, tag, tree, blob


def by_type(kinds: np.ndarray, tagged: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Commits, tags, trees, blobs, each in discovery order."""
    return np.argsort(TYPE_RANK[kinds], kind="stable").astype(np.int64)


def bases_first(order: np.ndarray, base: np.ndarray) -> np.ndarray:
    """`order`, with each delta's base moved just before the delta if it came later (Git's
    write_one). Chains are followed to their root, so OFS_DELTA offsets always point back."""
    out = _native.bases_first(order.astype(np.int64).tobytes(), base.astype(np.int64).tobytes())
    return np.frombuffer(out, dtype=np.int64)


OrderFn = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]

ORDERS: dict[str, str] = {
    "recency": "Git's intended order on real types: tag tips, commits, trees, delta families",
    "git": "what git pack-objects writes when it reuses deltas (reused deltas join the families)",
    "rev-list": "plain discovery order (Git before 2011)",
    "type": "commits, tags, trees, blobs, each in discovery order",
}
