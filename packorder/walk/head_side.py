"""Which objects the default branch (HEAD) holds, for the `paths` order: the commits
`git log`, `git log -- PATH` and `git blame` walk (they start from HEAD), and the trees those
commits introduce.

A repository's other branches (release branches, pull requests, contributors' work) hold a
third of the commits on libgit2 and redis, and recency writes them among HEAD's by date, so a
cold `git log` reads their bytes too (docs/locality.md, "Trees by path").

The commits come from `git rev-list HEAD` (rev_list.HeadWalk, a commit walk: 0.2 s on
libgit2, 1.5-2.2 s on git/git without a commit-graph), run beside the object walk. The trees come from the object walk's
discovery order, without a second object walk: Git lists the trees of each commit in turn
(the commit's root tree, then the subtrees it meets first), so the trees from a commit's
new root tree up to the next root tree are the ones that commit introduces. A tree first met
under another branch's commit counts as not HEAD's even if HEAD reaches it later; it is a
layout's choice, not a claim about reachability.
"""

from __future__ import annotations

import numpy as np

from packorder.format.pack import OBJ_COMMIT, OBJ_TREE
from packorder.store.object_ids import keys, lookup, sort_keys
from packorder.walk.rev_list import HeadWalk


def head_side(oids: np.ndarray, kinds: np.ndarray, name_hash: np.ndarray, walk: HeadWalk) -> np.ndarray:
    """For each object of a table in discovery order: a commit HEAD reaches, or a tree one of
    HEAD's commits introduces (see the module's doc)."""
    rawsz = oids.shape[1]
    commit_ids, root_ids = walk.result()
    commits = np.frombuffer(commit_ids, np.uint8).reshape(-1, rawsz)
    roots = np.frombuffer(root_ids, np.uint8).reshape(-1, rawsz)
    out = np.zeros(len(kinds), dtype=bool)
    if not len(commits) or not len(kinds):
        return out
    table_keys = keys(oids)
    out |= (kinds == OBJ_COMMIT) & (lookup(sort_keys(keys(commits)), table_keys) >= 0)
    trees = np.flatnonzero(kinds == OBJ_TREE)
    # A root tree has the empty path, whose name hash is 0; each one opens its commit's run.
    opens = name_hash[trees] == 0
    heads = opens & (lookup(sort_keys(keys(roots)), table_keys[trees]) >= 0)
    run = np.cumsum(opens) - 1  # the run each tree belongs to (-1: before any root tree)
    head_run = np.zeros(int(opens.sum()) + 1, dtype=bool)
    head_run[run[heads] + 1] = True
    out[trees] = head_run[run + 1]
    return out
