"""The `paths` order: what a cold `git log`, `git log -- PATH` and `git blame` read,
gathered, on a disk that pays per read.

Every earlier order writes trees in discovery order, which mixes the trees of every path at
each commit: a cold `git log -- PATH` reads nearly every page of the tree region, though it
wants only the trees along PATH (the root trees, `src/`, `src/lib/`...). And recency writes
the commits of every branch by date, while those three commands walk HEAD's alone. So:

1. tag tips together, where recency writes them;
2. the commits HEAD reaches, in walk order, then the other branches' commits;
3. the recent trees: discovery order up to the last tree HEAD has and no tag has (a fetch of
   what is newer than the last release reads them, as it reads them in recency's tree region);
4. the other trees grouped by path (paths in the order first seen), HEAD's before the
   others' in each path, each path's by delta family, depth first;
5. the blobs HEAD has and no tag has, with the delta bases they need (each chain up to its
   root), then the other blobs; each part in the order of history's blob region (families
   depth first, those holding unreleased blobs first). History writes whole families first,
   every version of every file a recent commit touched; a fetch of what is newer than the
   last release reads only the new versions and their chains.

`paths-unreleased-trees` writes, in 3., only the trees HEAD has and no tag has, with the delta
chains they need, and every other tree by path: `git log -- PATH` reads fewer trees outside
its path's group, a fetch of what is new a few more (measured in docs/locality.md).

A tree's path is known by its name hash (Git's pack_name_hash of the path, 0 for root trees),
which is all the walk keeps: two paths sharing their last 16 characters share a group.
Modelled and measured in docs/locality.md, "Trees by path".
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from packorder.orders.families import WriteOrder
from packorder.orders.permutations import BLOB, TREE, OrderInput, history_blob_order, tag_tips_and_commits


def first_seen_rank(keys: np.ndarray) -> np.ndarray:
    """For each element, the rank of its key among the distinct keys, by first appearance."""
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    rank_of_key = np.empty(len(first), dtype=np.int64)
    rank_of_key[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank_of_key[inverse]


def paths(objs: OrderInput) -> np.ndarray:
    """See the module's doc."""
    return _by_path(objs, _recent_run)


def paths_unreleased_trees(objs: OrderInput) -> np.ndarray:
    """`paths` with only the unreleased trees, and the delta chains they need, in front: a
    cold `git log -- PATH` then finds more of its path's trees in their group, and a fetch of
    what is new reads a little further (docs/locality.md)."""
    return _by_path(objs, _unreleased_with_chains)


def _by_path(objs: OrderInput, front: Callable[[OrderInput, np.ndarray], np.ndarray]) -> np.ndarray:
    """Tag tips and commits, the trees `front` marks (in discovery order), every other tree by
    path, then the blobs (the module's doc)."""
    if objs.name_hash is None or objs.on_head is None:
        raise ValueError("the paths orders need each object's name hash and which objects are HEAD's")
    w = WriteOrder(objs.count)
    rest = tag_tips_and_commits(w, objs.kinds, objs.tagged, first=objs.on_head)
    trees = rest[objs.kinds[rest] == TREE]
    trees = trees[~w.filled[trees]]
    first = front(objs, trees)
    w.add(trees[first])
    w.add(trees_by_path(objs, trees[~first]))
    w.add(recent_chains_first(objs, w.filled))
    return w.result()


def _recent_run(objs: OrderInput, trees: np.ndarray) -> np.ndarray:
    """The trees in discovery order up to the last unreleased one."""
    first = np.zeros(len(trees), dtype=bool)
    if objs.unreleased is not None:
        recent = np.flatnonzero(objs.unreleased[trees])
        if len(recent):
            first[: recent[-1] + 1] = True
    return first


def _unreleased_with_chains(objs: OrderInput, trees: np.ndarray) -> np.ndarray:
    """The unreleased trees and every tree their delta chains go through."""
    if objs.unreleased is None:
        return np.zeros(len(trees), dtype=bool)
    return with_delta_ancestors(objs.base, objs.unreleased & (objs.kinds == TREE))[trees]


def trees_by_path(objs: OrderInput, trees: np.ndarray) -> np.ndarray:
    """`trees` (in discovery order) grouped by name hash, groups in the order first seen;
    in each group HEAD's trees first, then by delta family (families in the order first
    seen), each family depth first."""
    assert objs.name_hash is not None and objs.on_head is not None
    group = first_seen_rank(objs.name_hash[trees])
    family = first_seen_rank(objs.roots[trees])
    within = objs.depth_first[trees]
    return trees[np.lexsort((within, family, ~objs.on_head[trees], group))]


def recent_chains_first(objs: OrderInput, filled: np.ndarray) -> np.ndarray:
    """What history's blob region would write after the objects `filled`, the unreleased blobs
    and their delta ancestors taken out to the front."""
    ordered = history_blob_order(objs, filled)
    if objs.unreleased is None:
        return ordered
    needed = with_delta_ancestors(objs.base, objs.unreleased & (objs.kinds == BLOB))[ordered]
    return np.concatenate([ordered[needed], ordered[~needed]])


def with_delta_ancestors(base: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """`marked`, and every object a marked one's delta chain goes through."""
    out = marked.copy()
    level = np.flatnonzero(marked)
    while len(level):
        level = base[level]
        level = level[level >= 0]
        level = np.unique(level[~out[level]])
        out[level] = True
    return out
