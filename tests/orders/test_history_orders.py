"""The orders added by the locality search (history, history-tags-midway, trees-first,
recency-dfs, windowed-256): what each writes, checked on a generated repository's real object
table, and the depth-first family walk they share."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from helpers.gitrepo import Repo, git
from helpers.layered import build
from hypothesis import given, settings
from hypothesis import strategies as st

from packorder.orders import families
from packorder.orders import permutations as order_mod
from packorder.orders.catalog import HISTORY_FACTS
from packorder.orders.functions import ORDERS
from packorder.orders.permutations import BLOB, COMMIT, TREE, OrderInput
from packorder.repacking import deltas
from packorder.store.repository import open_repository
from packorder.walk.history import object_history, unreleased_objects
from packorder.walk.objects import enumerate_objects

NEW = ["history", "history-each-commit", "history-tags-midway", "trees-first", "recency-dfs", "recency-unreleased"]
NEW += ["windowed-256", "paths"]


@pytest.fixture(scope="module")
def objs(tmp_path_factory: pytest.TempPathFactory) -> OrderInput:
    # 170 commits: the last ten come after the last tag, so some blobs are unreleased.
    repo = build(tmp_path_factory.mktemp("orders") / "repo", commits=170)
    opened = open_repository(repo.path)
    table = enumerate_objects(opened)
    choice = deltas.reuse(opened, table, 50)
    history = object_history(opened, table, HISTORY_FACTS)
    assert (choice.base >= 0).sum() > 300 and table.tagged.sum() >= 8
    blobs = table.kinds == BLOB
    assert 0 < (history.unreleased & blobs).sum() < blobs.sum()
    return OrderInput(
        table.kinds,
        table.tagged,
        choice.base,
        None,
        history.intro,
        history.unreleased,
        name_hash=table.name_hash,
        on_head=history.on_head,
    )


def without_deltas(objs: OrderInput) -> OrderInput:
    return OrderInput(objs.kinds, objs.tagged, np.full(objs.count, -1), None, objs.intro, objs.unreleased)


def written(name: str, objs: OrderInput) -> np.ndarray:
    out = families.bases_first(ORDERS[name].fn(objs), objs.base)
    assert sorted(out.tolist()) == list(range(objs.count)), "not a permutation"
    return out


def positions(out: np.ndarray) -> np.ndarray:
    pos = np.empty(len(out), dtype=np.int64)
    pos[out] = np.arange(len(out))
    return pos


@pytest.mark.parametrize("name", NEW)
def test_every_delta_comes_after_its_base(name: str, objs: OrderInput) -> None:
    pos = positions(written(name, objs))
    deltas_at = np.flatnonzero(objs.base >= 0)
    assert np.all(pos[objs.base[deltas_at]] < pos[deltas_at])


@pytest.mark.parametrize("name", ["history", "history-tags-midway", "trees-first"])
def test_tag_tips_are_contiguous(name: str, objs: OrderInput) -> None:
    pos = np.sort(positions(written(name, objs))[np.flatnonzero(objs.tagged)])
    assert pos[-1] - pos[0] == len(pos) - 1


def test_history_writes_each_commit_then_the_trees_it_introduces(objs: OrderInput) -> None:
    plain = without_deltas(objs)
    out = written("history", plain)
    kinds, intro = plain.kinds, plain.intro
    assert intro is not None
    commits = np.flatnonzero(kinds == COMMIT)  # walk order
    introduced = {int(c): np.flatnonzero((intro == c) & (kinds == TREE)).tolist() for c in commits}
    pos = positions(out)
    for c in commits:
        if plain.tagged[c]:
            continue
        after = out[pos[c] + 1 : pos[c] + 1 + len(introduced[int(c)])].tolist()
        assert after == introduced[int(c)], f"commit {c}"
    # A tagged commit stands with the tag tips; its trees keep the commit's place in the walk:
    # right before the next commit's group.
    for at, c in enumerate(commits[:-1]):
        if plain.tagged[c] and introduced[int(c)]:
            following = commits[at + 1]
            if not plain.tagged[following]:
                trees = introduced[int(c)]
                assert out[pos[following] - len(trees) : pos[following]].tolist() == trees
    # Then the remaining trees, then the blobs.
    assert np.all(kinds[out[-np.count_nonzero(kinds == BLOB) :]] == BLOB)


@pytest.mark.parametrize("window", [20000, 60000])
def test_history_windows_commits_then_their_trees(
    objs: OrderInput, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With entry sizes, commits come in windows of about `window` bytes (a commit and the
    trees it introduces weigh their sizes; a commit goes to window (weight of the commits
    before it) // window), each window's commits then their trees, in walk order. Without
    sizes each commit is a window of its own."""
    rng = np.random.default_rng(5)
    sized = replace(without_deltas(objs), sizes=rng.integers(50, 900, objs.count))
    assert sized.sizes is not None and sized.intro is not None
    kinds, intro = sized.kinds, sized.intro
    start, trees = order_mod._introduced_trees(sized)
    commits = np.flatnonzero(kinds == COMMIT)
    weight = np.array([sized.sizes[c] + sized.sizes[trees[start[c] : start[c + 1]]].sum() for c in commits])
    # Windows restart after the first tag tip (the tag tips region stands between).
    split = int(np.flatnonzero(sized.tagged)[0])
    before, after = commits < split, commits >= split
    which = np.empty(len(commits), dtype=np.int64)
    which[before] = (np.cumsum(weight[before]) - weight[before]) // window
    offset = which[before].max() + 1 if before.any() else 0
    which[after] = offset + (np.cumsum(weight[after]) - weight[after]) // window
    assert 2 < which[-1] < len(commits) / 4  # several windows, several commits each
    monkeypatch.setattr(order_mod, "HISTORY_WINDOW_BYTES", window)
    out = written("history", sized)
    pos = positions(out)
    tagged = sized.tagged
    for k in range(int(which[-1]) + 1):
        members = commits[which == k]
        own = np.flatnonzero((kinds == TREE) & np.isin(intro, members))
        untagged = members[~tagged[members]]
        if len(untagged):
            assert np.array_equal(np.sort(pos[untagged]), pos[untagged])  # walk order
            assert np.all(np.diff(pos[untagged]) == 1)  # nothing between a window's commits
        if len(own):
            assert np.all(np.diff(pos[own]) == 1)  # then its trees, together, in walk order
            assert np.array_equal(out[pos[own]], own)
            if len(untagged):
                assert pos[own].min() == pos[untagged].max() + 1
    plain = without_deltas(objs)
    assert np.array_equal(written("history", plain), written("history-each-commit", plain))
    assert not np.array_equal(out, written("history-each-commit", sized))


def test_history_with_deltas_keeps_trees_after_their_commit(objs: OrderInput) -> None:
    """With reused deltas, a tree's base may be pulled ahead of it (bases first), but every
    tree still follows the commit that introduces it, and no later commit comes between."""
    out = written("history", objs)
    pos = positions(out)
    kinds, intro = objs.kinds, objs.intro
    assert intro is not None
    commit_pos = np.sort(pos[kinds == COMMIT])
    trees = np.flatnonzero((kinds == TREE) & (intro >= 0) & ~objs.tagged[np.maximum(intro, 0)])
    owner = intro[trees]
    assert np.all(pos[trees] > pos[owner])
    next_commit = commit_pos[np.searchsorted(commit_pos, pos[owner], side="right").clip(max=len(commit_pos) - 1)]
    last = next_commit == commit_pos[-1]
    assert np.all((pos[trees] < next_commit) | last)


def test_history_writes_blob_families_depth_first(objs: OrderInput) -> None:
    out = written("history", objs)
    pos = positions(out)
    blobs = np.flatnonzero(objs.kinds == BLOB)
    start, child = families.children_lists(objs.base)
    size = np.ones(objs.count, dtype=np.int64)
    for d in np.argsort(-families.chain_depths(objs.base)):
        if objs.base[d] >= 0:
            size[objs.base[d]] += size[d]
    for b in blobs:
        # A subtree occupies the places right after its root.
        members = out[pos[b] : pos[b] + size[b]]
        assert np.all(np.isin(families.delta_roots(objs.base)[members], families.delta_roots(objs.base)[b]))
        kids = child[start[b] : start[b + 1]]
        if len(kids):
            assert pos[kids[0]] == pos[b] + 1
            assert np.all(np.diff(pos[kids]) == size[kids[:-1]])


def test_history_writes_the_families_of_unreleased_blobs_first(objs: OrderInput) -> None:
    """Families holding a blob on HEAD but in no tag come first in the blob region; each
    group keeps the order it has without that mark."""
    assert objs.unreleased is not None
    marked, unmarked = written("history", objs), written("history", replace(objs, unreleased=None))
    roots = families.delta_roots(objs.base)
    touched = np.zeros(objs.count, dtype=bool)
    touched[roots[objs.unreleased & (objs.kinds == BLOB)]] = True
    blob_at = int(np.argmax(objs.kinds[marked] == BLOB))
    assert np.array_equal(marked[:blob_at], unmarked[:blob_at])
    region = marked[blob_at:]
    first = touched[roots[region]]
    assert first.any() and not first.all()
    assert np.all(first[: first.sum()])  # the touched families, then the rest
    for group in (True, False):

        def keep(out: np.ndarray, group: bool = group) -> list[int]:
            return out[touched[roots[out]] == group].tolist()

        assert keep(region) == keep(unmarked[blob_at:])


def test_unreleased_means_on_head_and_in_no_tag(tmp_path: Path) -> None:
    """Only HEAD's unreleased blobs are marked: another branch's are not (on libgit2 every
    branch's together lie in families of most of the blob bytes, and gathered nothing); and an
    unborn HEAD marks nothing instead of failing."""
    repo = Repo(tmp_path / "repo")
    repo.write("released.txt", "in v1\n")
    repo.commit("one")
    repo.tag("v1")
    repo.write("head.txt", "only on main, after v1\n")
    repo.commit("two")
    repo.commit_on_branch("side", {"side.txt": "only on side\n"}, "three")
    blob = {name: repo.run("rev-parse", f"side:{name}").decode().strip() for name in ("released.txt", "side.txt")}
    blob["head.txt"] = repo.run("rev-parse", "main:head.txt").decode().strip()

    def marked() -> set[str]:
        opened = open_repository(repo.path)
        table = enumerate_objects(opened)
        flags = unreleased_objects(opened, table)
        return {bytes(oid).hex() for oid in table.oids[flags]}

    found = marked()
    assert blob["head.txt"] in found
    assert blob["released.txt"] not in found and blob["side.txt"] not in found
    git(repo.path, "symbolic-ref", "HEAD", "refs/heads/unborn")
    assert marked() == set()


def test_recency_dfs_differs_from_recency_only_inside_blob_families(objs: OrderInput) -> None:
    a, b = written("recency", objs), written("recency-dfs", objs)
    blob_at = int(np.argmax(objs.kinds[a] == BLOB))
    assert np.array_equal(a[:blob_at], b[:blob_at])
    roots = families.delta_roots(objs.base)
    # The same families in the same order, each from its root.
    firsts = [r for i, r in enumerate(roots[a[blob_at:]].tolist()) if i == 0 or r != roots[a[blob_at + i - 1]]]
    assert firsts == [r for i, r in enumerate(roots[b[blob_at:]].tolist()) if i == 0 or r != roots[b[blob_at + i - 1]]]


def test_recency_unreleased_is_recency_then_the_blob_region_of_history(objs: OrderInput) -> None:
    """Recency's tag tips, commits and trees, object for object; then the blob families in
    history's order (HEAD's unreleased first, each depth first); without the unreleased mark,
    recency-dfs."""
    assert objs.unreleased is not None and objs.unreleased.any()
    ours, recency, history = (written(name, objs) for name in ("recency-unreleased", "recency", "history"))
    blob_at = int(np.argmax(objs.kinds[recency] == BLOB))
    assert np.array_equal(ours[:blob_at], recency[:blob_at])
    in_blob_region = np.zeros(objs.count, dtype=bool)
    in_blob_region[ours[blob_at:]] = True
    assert np.array_equal(ours[blob_at:], history[in_blob_region[history]])
    assert not np.array_equal(ours, written("recency-dfs", objs))
    assert np.array_equal(written("recency-unreleased", replace(objs, unreleased=None)), written("recency-dfs", objs))


def test_trees_first_puts_each_commit_after_its_trees(objs: OrderInput) -> None:
    plain = without_deltas(objs)
    out = written("trees-first", plain)
    pos = positions(out)
    assert plain.intro is not None
    for c in np.flatnonzero((plain.kinds == COMMIT) & ~plain.tagged):
        trees = np.flatnonzero((plain.intro == c) & (plain.kinds == TREE))
        assert out[pos[c] - len(trees) : pos[c]].tolist() == trees.tolist()


@pytest.mark.parametrize("name", sorted(ORDERS))
def test_each_order_needs_exactly_the_history_it_declares(name: str, objs: OrderInput) -> None:
    """The command line and the library walk history only for what an order declares (a walk
    in commit order for `intro`, a second walk for `unreleased`, a commit walk for HEAD's
    side): an order must give the same
    layout without what it does not declare, and a different one (or refuse) without what it
    does."""
    spec = ORDERS[name]
    real = replace(objs, entry_kinds=objs.kinds)
    full = written(name, real).tolist()
    given = replace(
        real,
        intro=real.intro if spec.needs_intro else None,
        unreleased=real.unreleased if spec.needs_unreleased else None,
        on_head=real.on_head if spec.needs_head else None,
    )
    assert written(name, given).tolist() == full
    if spec.needs_intro:
        with pytest.raises(ValueError, match="introducing commit"):
            spec.fn(replace(given, intro=None))
    if spec.needs_head:
        with pytest.raises(ValueError, match="HEAD's"):
            spec.fn(replace(given, on_head=None))
    if spec.needs_unreleased:
        assert written(name, replace(given, unreleased=None)).tolist() != full


def reference_preorder(base: list[int]) -> list[int]:
    kids: dict[int, list[int]] = {}
    for i, b in enumerate(base):
        if b >= 0:
            kids.setdefault(b, []).append(i)
    place = [0] * len(base)

    def walk(node: int, at: int) -> int:
        place[node] = at
        at += 1
        for k in kids.get(node, []):
            at = walk(k, at)
        return at

    for i, b in enumerate(base):
        if b < 0:
            walk(i, 0)
    return place


@st.composite
def forests(draw: st.DrawFn) -> list[int]:
    n = draw(st.integers(min_value=0, max_value=60))
    labels = draw(st.permutations(list(range(n))))
    base = [-1] * n
    for i in range(1, n):
        if draw(st.booleans()):
            base[labels[i]] = labels[draw(st.integers(min_value=0, max_value=i - 1))]
    return base


@settings(max_examples=200, deadline=None)
@given(forests())
def test_depth_first_positions_match_a_recursive_walk(base: list[int]) -> None:
    got = families.depth_first_positions(np.array(base, dtype=np.int64)).tolist()
    assert got == reference_preorder(base)


def test_depth_first_positions_on_a_deep_chain() -> None:
    rng = random.Random(3)
    n = 5000
    base = np.array([-1] + [i - 1 if rng.random() < 0.9 else rng.randrange(i) for i in range(1, n)], dtype=np.int64)
    assert families.depth_first_positions(base).tolist() == reference_preorder(base.tolist())


def test_the_depth_first_writer_skips_what_is_written(tmp_path: Path) -> None:
    # Families whose root is already written still get their other members, root first order kept.
    base = np.array([-1, 0, 0, 1, -1, 4], dtype=np.int64)
    objs = OrderInput(np.full(6, BLOB, dtype=np.uint8), np.zeros(6, dtype=bool), base)
    w = families.WriteOrder(6)
    w.add(np.array([0, 4]))
    order_mod.depth_first_families(w, objs, np.arange(6))
    assert w.result().tolist() == [0, 4, 1, 3, 2, 5]
