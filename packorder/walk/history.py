"""Where each object of an enumerated table sits in history, for the orders that place
objects by it: the commit that introduces it, whether only unreleased history holds it,
whether it is on HEAD's side (head_side.py)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from packorder.format.pack import OBJ_COMMIT
from packorder.orders.catalog import HISTORY_FACTS
from packorder.store.object_ids import id_order, keys, lookup, sort_keys
from packorder.store.repository import Repository
from packorder.walk import head_side as head_side_mod
from packorder.walk import rev_list
from packorder.walk.objects import ObjectTable, walk_of, walked


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
HistoryWalks = tuple[rev_list.GitObjectWalk | None, rev_list.GitObjectWalk | None, rev_list.HeadWalk | None]


def object_history(
    repo: Repository,
    table: ObjectTable,
    needs: Collection[str],
    walks: HistoryWalks = (None, None, None),
) -> ObjectHistory:
    """The facts of history `needs` asks for (orders/catalog.py's HISTORY_FACTS: an order's
    needs, or several orders' together) about `table`: introducing_commits, unreleased_objects,
    head_side, from `walks` (a snapshot's, started early) or from walks started now. What is
    not asked for is not walked (no introducing commit, nothing unreleased, nothing on HEAD)."""
    unknown = set(needs) - set(HISTORY_FACTS)
    if unknown:
        raise ValueError(f"not a fact of history: {', '.join(sorted(unknown))}")
    intro, unreleased, head = (fact in needs for fact in HISTORY_FACTS)
    for walk, wanted in zip(walks, (intro, unreleased, head), strict=True):
        if walk is not None and not wanted:
            walk.stop()
    on_head = np.zeros(table.count, dtype=bool)
    if head:
        head_walk = walks[2] or rev_list.HeadWalk(repo.git_dir, repo.fmt)
        try:
            on_head = head_side_mod.head_side(table.oids, table.kinds, table.name_hash, head_walk)
        finally:
            head_walk.stop()
    return ObjectHistory(
        introducing_commits(repo, table, walks[0]) if intro else np.full(table.count, -1, dtype=np.int64),
        unreleased_objects(repo, table, walks[1]) if unreleased else np.zeros(table.count, dtype=bool),
        on_head,
    )


def unreleased_objects(repo: Repository, table: ObjectTable, walk: rev_list.GitObjectWalk | None = None) -> np.ndarray:
    """Which objects of `table` are reachable from HEAD (the default branch) but from no tag
    (`git rev-list --objects HEAD --not --tags`): what a fetch from the last release asks for.
    Nothing when HEAD is unborn."""
    if walk is None:
        walk = rev_list.GitObjectWalk(
            repo.git_dir, repo.fmt, missing_ok=repo.has_promisor_packs, revs=rev_list.UNRELEASED
        )
    try:
        oids, _, _ = walked(walk, repo.fmt)
    finally:
        walk.stop()
    if not len(oids) or not table.count:
        return np.zeros(table.count, dtype=bool)
    return lookup(sort_keys(keys(oids)), keys(table.oids)) >= 0


def introducing_commits(repo: Repository, table: ObjectTable, walk: rev_list.GitObjectWalk | None = None) -> np.ndarray:
    """For each object of `table`, the table index of the commit that first refers to it in
    the walk in commit order (ours or `rev-list --objects --in-commit-order`: the same), or
    -1 (tags, index entries, and unreachable objects)."""
    if walk is None:
        walk = walk_of(repo, in_commit_order=True)
    try:
        oids, _, _ = walked(walk, repo.fmt)
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
