"""Write orders: pure functions from arrays describing the objects (in discovery order) to a
permutation saying which object is written when. They know graphs, not bytes.

Inputs (`OrderInput`), all indexed by discovery position (the order Git's rev-list --objects
finds them):
- `kinds`: each object's real type (1 commit, 2 tree, 3 blob, 4 tag);
- `entry_kinds`: the type Git's pack-objects records for the entry (6/7 for a reused delta),
  which only the `git` order looks at;
- `tagged`: whether the object is a tag tip;
- `base`: discovery position of the object's delta base in the new pack, or -1;
- `intro`: discovery position of the commit that first refers to the object (what
  `rev-list --in-commit-order` tells), or -1; only the commit-interleaving orders need it.

Every order returned here is then passed through `bases_first`, which moves a delta's base
just before the delta when the order would write the delta first (an OFS_DELTA must point
backwards). That is what Git's write_one() does, and the only change made to an order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from packorder import _native

COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
OFS_DELTA, REF_DELTA = 6, 7


@dataclass
class OrderInput:
    kinds: np.ndarray
    tagged: np.ndarray
    base: np.ndarray
    entry_kinds: np.ndarray | None = None
    intro: np.ndarray | None = None

    @property
    def count(self) -> int:
        return len(self.kinds)


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


def recency(objs: OrderInput) -> np.ndarray:
    """Git's intended recency order, on every object's real type: tag tips together, commits,
    trees, then delta families."""
    if np.isin(objs.kinds, (OFS_DELTA, REF_DELTA)).any():
        raise ValueError("recency order takes real object types")
    return git_write_order(objs.kinds, objs.tagged, objs.base)


def git(objs: OrderInput) -> np.ndarray:
    """What pack-objects writes: its write order over the entry types it records, where a
    reused delta is an OFS_DELTA/REF_DELTA and so skips the commit and tree phases."""
    kinds = objs.kinds if objs.entry_kinds is None else objs.entry_kinds
    return git_write_order(kinds, objs.tagged, objs.base)


def rev_list(objs: OrderInput) -> np.ndarray:
    """Plain discovery order: Git's layout before 2011, the baseline of the study."""
    return np.arange(objs.count, dtype=np.int64)


TYPE_RANK = np.array([9, 0, 2, 3, 1, 9, 9, 9], dtype=np.int64)  # commit, tag, tree, blob


def by_type(objs: OrderInput) -> np.ndarray:
    """Commits, tags, trees, blobs, each in discovery order."""
    return np.argsort(TYPE_RANK[objs.kinds], kind="stable").astype(np.int64)


def _introduced_trees(objs: OrderInput) -> tuple[np.ndarray, np.ndarray]:
    """CSR lists: the trees each commit introduces, in discovery order."""
    if objs.intro is None:
        raise ValueError("this order needs each object's introducing commit (intro)")
    intro = np.where(objs.kinds == TREE, objs.intro, -1)
    return children_lists(intro)


def _with_trees(commits: np.ndarray, start: np.ndarray, trees: np.ndarray, keep_commits: bool = True) -> np.ndarray:
    """`commits`, each followed by the trees it introduces (only the trees, with
    `keep_commits=False`)."""
    counts = start[commits + 1] - start[commits]
    lengths = counts + 1
    total = int(lengths.sum())
    first = np.cumsum(lengths) - lengths
    owner = np.repeat(np.arange(len(commits)), lengths)
    within = np.arange(total) - first[owner]
    out = np.empty(total, dtype=np.int64)
    head = within == 0
    out[head] = commits[owner[head]]
    tail = ~head
    out[tail] = trees[start[commits[owner[tail]]] + within[tail] - 1]
    return out if keep_commits else out[tail]


def _interleaved_phases(objs: OrderInput, window: int) -> _Writer:
    """Recency's phases with each commit's new trees written after it, or after each window of
    `window` commits (1: right after the commit)."""
    kinds, n = objs.kinds, objs.count
    start, trees = _introduced_trees(objs)
    w = _Writer(n)

    def commits_with_trees(items: np.ndarray) -> None:
        commits = items[kinds[items] == COMMIT]
        others = items[kinds[items] != COMMIT]
        if window <= 1:
            w.add(_with_trees(commits, start, trees))
        else:
            for at in range(0, len(commits), window):
                group = commits[at : at + window]
                w.add(group)
                w.add(_with_trees(group, start, trees, keep_commits=False))
        w.add(others)

    tagged_at = np.flatnonzero(objs.tagged)
    last_untagged = int(tagged_at[0]) if len(tagged_at) else n
    commits_with_trees(np.arange(last_untagged))
    commits_with_trees(tagged_at)
    rest = np.arange(last_untagged, n)
    commits_with_trees(rest[(kinds[rest] == COMMIT) | (kinds[rest] == TAG)])
    w.add(rest[kinds[rest] == TREE])
    return w


def _families(w: _Writer, objs: OrderInput, rest: np.ndarray) -> None:
    start, child = children_lists(objs.base)
    waiting = rest[~w.filled[rest]]
    roots = delta_roots(objs.base)[waiting]
    _, first = np.unique(roots, return_index=True)
    w.add_families(roots[np.sort(first)], start, child)


def interleaved(objs: OrderInput) -> np.ndarray:
    """Tag tips together as Git does; each commit immediately followed by the trees it
    introduces; then blobs by delta family exactly as in recency. `git log -- PATH` and
    `git blame` then read a commit and its trees from one place instead of two regions."""
    w = _interleaved_phases(objs, 1)
    _families(w, objs, np.arange(objs.count))
    return w.result()


def windowed(objs: OrderInput, window: int = 16) -> np.ndarray:
    """Like interleaved, but commits in groups of `window`, each group followed by the trees
    its commits introduce: commits stay closer together for `git log`."""
    w = _interleaved_phases(objs, window)
    _families(w, objs, np.arange(objs.count))
    return w.result()


def interleaved_recent_families(objs: OrderInput) -> np.ndarray:
    """Interleaved commits and trees; then delta families ordered by the commit that
    introduces their root (the newest version first), so the blobs of recently changed files
    come first, for packing recent history."""
    w = _interleaved_phases(objs, 1)
    assert objs.intro is not None
    roots = delta_roots(objs.base)
    rest = np.arange(objs.count)
    waiting = rest[~w.filled[rest]]
    root_of = roots[waiting]
    key = objs.intro[root_of].astype(np.int64)
    key[key < 0] = objs.count
    by_intro = waiting[np.lexsort((waiting, key))]
    _families(w, objs, by_intro)
    return w.result()


def bases_first(order: np.ndarray, base: np.ndarray) -> np.ndarray:
    """`order`, with each delta's base moved just before the delta if it came later (Git's
    write_one). Chains are followed to their root, so OFS_DELTA offsets always point back."""
    out = _native.bases_first(order.astype(np.int64).tobytes(), base.astype(np.int64).tobytes())
    return np.frombuffer(out, dtype=np.int64)


OrderFn = Callable[[OrderInput], np.ndarray]


@dataclass(frozen=True)
class OrderSpec:
    fn: OrderFn
    needs_intro: bool
    summary: str


ORDERS: dict[str, OrderSpec] = {
    "recency": OrderSpec(
        recency, False, "Git's intended order on real types: tag tips, commits, trees, delta families"
    ),
    "git": OrderSpec(git, False, "what git pack-objects writes when it reuses deltas"),
    "rev-list": OrderSpec(rev_list, False, "plain discovery order (Git before 2011)"),
    "type": OrderSpec(by_type, False, "commits, tags, trees, blobs, each in discovery order"),
    "interleaved": OrderSpec(interleaved, True, "recency, with each commit followed by the trees it introduces"),
    "windowed": OrderSpec(windowed, True, "interleaved by windows of 16 commits"),
    "interleaved-recent": OrderSpec(
        interleaved_recent_families, True, "interleaved, delta families ordered by their newest commit"
    ),
}
