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

import functools
from dataclasses import dataclass

import numpy as np

from packorder.orders.families import WriteOrder, children_lists, delta_roots, depth_first_positions

COMMIT, TREE, BLOB, TAG = 1, 2, 3, 4
OFS_DELTA, REF_DELTA = 6, 7


@dataclass
class OrderInput:
    kinds: np.ndarray
    tagged: np.ndarray
    base: np.ndarray
    entry_kinds: np.ndarray | None = None
    intro: np.ndarray | None = None
    unreleased: np.ndarray | None = None  # bool: reachable from HEAD but from no tag
    sizes: np.ndarray | None = None  # int64: each object's entry bytes in its source (an estimate)
    name_hash: np.ndarray | None = None  # uint32: Git's name hash of the path each object was found at
    on_head: np.ndarray | None = None  # bool: a commit of HEAD's or a tree one introduces (head_side.py)

    @property
    def count(self) -> int:
        return len(self.kinds)

    # Computed once per input: an order's regions ask for them in turn (paths: trees, blobs).
    @functools.cached_property
    def roots(self) -> np.ndarray:
        """The root of each object's delta chain (itself for a whole object)."""
        return delta_roots(self.base)

    @functools.cached_property
    def depth_first(self) -> np.ndarray:
        """Each object's place in a depth-first walk of its delta family (families.py)."""
        return depth_first_positions(self.base)


def git_write_order(kinds: np.ndarray, tagged: np.ndarray, base: np.ndarray, intended: bool = False) -> np.ndarray:
    """Git's compute_write_order (one layer, no delta islands), over the types given; with
    `intended`, its intended order (see tag_tips_and_commits)."""
    n = len(kinds)
    w = WriteOrder(n)
    if n == 0:
        return w.result()
    rest = _tag_tips_commits_trees(w, kinds, tagged, intended)
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


def _tag_tips_commits_trees(w: WriteOrder, kinds: np.ndarray, tagged: np.ndarray, intended: bool = True) -> np.ndarray:
    """The first phases of Git's write order: objects in discovery order up to the first tag
    tip, all the tag tips together, the remaining commits and tags, then all trees. Returns
    the objects from the first tag tip on (what later phases choose from)."""
    rest = tag_tips_and_commits(w, kinds, tagged, intended=intended)
    w.add(rest[kinds[rest] == TREE])
    return rest


def tag_tips_and_commits(
    w: WriteOrder, kinds: np.ndarray, tagged: np.ndarray, first: np.ndarray | None = None, intended: bool = True
) -> np.ndarray:
    """Git's write order up to its tree region: objects in discovery order up to the first
    tag tip, all the tag tips together, the remaining commits and tags (those `first` marks
    before the others). Returns the objects from the first tag tip on.

    With `intended` (every order but `git`), the discovery order also stops at the first
    object that is neither a commit nor a tag: Git's rule writes a repository without tags
    (or whose tags are all on trees and blobs) in plain discovery order, trees and blobs
    mixed, which is no order of its phases."""
    n = len(kinds)
    tagged_at = np.flatnonzero(tagged)
    last_untagged = int(tagged_at[0]) if len(tagged_at) else n
    if intended:
        other = np.flatnonzero((kinds != COMMIT) & (kinds != TAG))
        last_untagged = min(last_untagged, int(other[0]) if len(other) else n)
    w.add(np.arange(last_untagged))
    w.add(tagged_at)
    rest = np.arange(last_untagged, n)
    commits = rest[(kinds[rest] == COMMIT) | (kinds[rest] == TAG)]
    if first is not None:
        commits = commits[np.argsort(~first[commits], kind="stable")]
    w.add(commits)
    return rest


def recency(objs: OrderInput) -> np.ndarray:
    """Git's intended recency order, on every object's real type: tag tips together, commits,
    trees, then delta families."""
    if np.isin(objs.kinds, (OFS_DELTA, REF_DELTA)).any():
        raise ValueError("recency order takes real object types")
    return git_write_order(objs.kinds, objs.tagged, objs.base, intended=True)


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


def _interleaved_phases(objs: OrderInput, window: int) -> WriteOrder:
    """Recency's phases with each commit's new trees written after it, or after each window of
    `window` commits (1: right after the commit)."""
    kinds, n = objs.kinds, objs.count
    start, trees = _introduced_trees(objs)
    w = WriteOrder(n)

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


def _families(w: WriteOrder, objs: OrderInput, rest: np.ndarray) -> None:
    start, child = children_lists(objs.base)
    waiting = rest[~w.filled[rest]]
    roots = objs.roots[waiting]
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
    roots = objs.roots
    rest = np.arange(objs.count)
    waiting = rest[~w.filled[rest]]
    root_of = roots[waiting]
    key = objs.intro[root_of].astype(np.int64)
    key[key < 0] = objs.count
    by_intro = waiting[np.lexsort((waiting, key))]
    _families(w, objs, by_intro)
    return w.result()


def depth_first_families(w: WriteOrder, objs: OrderInput, rest: np.ndarray) -> None:
    """Like `_families` (families in the order of their first member not yet written), but each
    family written depth first: a delta's own deltas right after it. `git index-pack` resolves
    a family in that order (children in pack order, each child's subtree before the next), so
    it then reads a family front to back instead of jumping between sibling groups."""
    w.add(depth_first_family_order(objs, rest, w.filled))


def depth_first_family_order(objs: OrderInput, rest: np.ndarray, filled: np.ndarray) -> np.ndarray:
    """What `depth_first_families` writes: every member not `filled` of the families of `rest`'s
    members not `filled`, families in the order of those members, each depth first."""
    waiting = rest[~filled[rest]]
    if not len(waiting):
        return waiting.astype(np.int64)
    roots = objs.roots
    first_roots = roots[waiting]
    _, first = np.unique(first_roots, return_index=True)
    family_rank = np.full(objs.count, -1, dtype=np.int64)
    family_rank[first_roots[np.sort(first)]] = np.arange(len(first))
    members = np.flatnonzero(family_rank[roots] >= 0)
    members = members[~filled[members]]
    key = family_rank[roots[members]] * (objs.count + 1) + objs.depth_first[members]
    return members[np.argsort(key, kind="stable")]


# History's windows: commits with the trees they introduce, cut every ~2 MiB. Each commit is
# within 2 MiB of its trees (what `git log -- PATH` and `git blame` read next), while `git
# log`, which reads commits only, meets a stretch of trees once a window rather than at every
# commit: on a slow disk a cold `git log` then takes 1.07-1.11x recency's time, where each
# commit followed by its own trees took 1.74-1.90x (docs/locality.md, "Cold-cache wall
# times"; larger windows would take commits beyond 2 MiB of their trees). Read at call time so
# that tests on small repositories can scale it as they scale the seek threshold.
HISTORY_WINDOW_BYTES = 2 << 20


def _windowed(items: np.ndarray, start: np.ndarray, trees: np.ndarray, objs: OrderInput, window: int) -> np.ndarray:
    """`items` (commits, in walk order) with the trees each introduces, grouped in windows of
    about `window` bytes: a window's commits, then their trees. Without sizes, or with
    `window` 0, each commit is a window of its own."""
    out = _with_trees(items, start, trees)
    if objs.sizes is None or window <= 0 or not len(items):
        return out
    lengths = start[items + 1] - start[items] + 1
    owner = np.repeat(np.arange(len(items)), lengths)
    weight = np.bincount(owner, weights=objs.sizes[out], minlength=len(items))
    which = ((np.cumsum(weight) - weight) // window).astype(np.int64)[owner]
    is_tree = np.ones(len(out), dtype=bool)
    is_tree[np.cumsum(lengths) - lengths] = False
    # Each window: its commits, then its trees, each in walk order (lexsort is stable).
    return out[np.lexsort((is_tree, which))]


def _history_phases(objs: OrderInput, tags_midway: bool = False, window: int | None = None) -> WriteOrder:
    """Commits in walk order in windows of `window` bytes (default HISTORY_WINDOW_BYTES; 0:
    each commit alone), each window followed by the trees its commits introduce; tag tips
    (only the tips themselves) together where Git puts them (or halfway through the commits);
    a tagged commit's trees stay where the commit comes in the walk; then the trees no commit
    introduces."""
    kinds, n = objs.kinds, objs.count
    window = HISTORY_WINDOW_BYTES if window is None else window
    start, trees = _introduced_trees(objs)
    w = WriteOrder(n)
    tagged_at = np.flatnonzero(objs.tagged)
    commits = np.flatnonzero(kinds == COMMIT)
    if tags_midway:
        split = int(commits[len(commits) // 2]) if len(commits) else n
    else:
        split = int(tagged_at[0]) if len(tagged_at) else n
    before = np.arange(split)
    first = _windowed(before[kinds[before] == COMMIT], start, trees, objs, window)
    w.add(first[~objs.tagged[first] | (kinds[first] != COMMIT)])  # tagged commits: with the tips
    w.add(before[(kinds[before] != COMMIT) & ~objs.tagged[before]])
    w.add(tagged_at)
    # Tagged commits are written already: `add` skips them and keeps their trees here.
    w.add(_windowed(commits[commits >= split], start, trees, objs, window))
    w.add(np.flatnonzero(kinds == TAG))
    w.add(np.flatnonzero(kinds == TREE))
    return w


def history(objs: OrderInput) -> np.ndarray:
    """The layout kept from the search (docs/locality.md): tag tips together as Git writes them,
    but only the tips; commits in walk order, in windows of about 2 MiB, each window followed
    by the trees its commits introduce, a tagged commit's trees included (at the commit's
    place in the walk, so the tag tips region stays small and pulls no delta bases into it);
    then the trees no commit introduces; then blobs by delta family as in recency, each family
    depth first, the families holding unreleased blobs (on the default branch, HEAD, in no
    tag) first.

    `git log -- PATH` and `git blame` read a commit and its trees within 2 MiB; `git log`
    reads commits in runs of a window, skipping its trees once per window; index-pack
    reads each blob family front to back; a fetch of what is newer than the last release
    reads its blob families from one stretch at the start of the blob region (in discovery
    order they lie among the families of every file at HEAD)."""
    w = _history_phases(objs)
    history_families(w, objs)
    return w.result()


def history_each_commit(objs: OrderInput) -> np.ndarray:
    """`history` with each commit immediately followed by the trees it introduces (the
    `history` order's first layout, kept for comparison): the same seeks under 2 MiB, but
    `git log` reads twice the bytes cold."""
    w = _history_phases(objs, window=0)
    history_families(w, objs)
    return w.result()


def history_tags_midway(objs: OrderInput) -> np.ndarray:
    """`history` with the tag tips written halfway through the commits instead of at the
    first tag tip: `git log` then finds a tagged commit within reach from both halves of
    history, but a fetch's walk from the tags starts far from the recent commits."""
    w = _history_phases(objs, tags_midway=True)
    history_families(w, objs)
    return w.result()


def _recency_regions(objs: OrderInput) -> tuple[WriteOrder, np.ndarray]:
    """Recency's tag tips, commits and trees written, on real types; and what remains to
    choose the blob region from."""
    if np.isin(objs.kinds, (OFS_DELTA, REF_DELTA)).any():
        raise ValueError("recency order takes real object types")
    w = WriteOrder(objs.count)
    return w, _tag_tips_commits_trees(w, objs.kinds, objs.tagged)


def recency_depth_first(objs: OrderInput) -> np.ndarray:
    """Recency with each blob family written depth first instead of by sibling groups: the
    same regions, with index-pack reading every family in pack order."""
    w, rest = _recency_regions(objs)
    depth_first_families(w, objs, rest)
    return w.result()


def recency_unreleased(objs: OrderInput) -> np.ndarray:
    """Recency's tag tips, commits and trees, then history's blob region (families depth
    first, those holding HEAD's unreleased blobs first). On a disk that pays per read it was
    no slower than recency on any workload, and a fetch of recent history 15-18% faster
    (docs/locality.md, "Cold-cache wall times"); its seeks for `git log -- PATH` and blame
    are recency's."""
    w, _ = _recency_regions(objs)
    history_families(w, objs)
    return w.result()


def trees_first(objs: OrderInput) -> np.ndarray:
    """`history` with each commit written after the trees it introduces instead of before
    them: a candidate to see whether the direction of the commit-to-tree step matters."""
    kinds, n = objs.kinds, objs.count
    start, trees = _introduced_trees(objs)
    w = WriteOrder(n)
    tagged_at = np.flatnonzero(objs.tagged)
    split = int(tagged_at[0]) if len(tagged_at) else n
    commits = np.flatnonzero(kinds == COMMIT)

    def trees_then_commits(items: np.ndarray) -> np.ndarray:
        lengths = start[items + 1] - start[items] + 1
        group = np.repeat(np.arange(len(items)), lengths)
        is_commit = np.arange(len(group)) == np.repeat(np.cumsum(lengths) - lengths, lengths)
        # Each group [commit, trees...] becomes [trees..., commit] (lexsort is stable).
        return _with_trees(items, start, trees)[np.lexsort((is_commit, group))]

    before = commits[commits < split]
    w.add(trees_then_commits(before))
    w.add(np.arange(split)[kinds[:split] != COMMIT])
    w.add(tagged_at)
    w.add(trees_then_commits(commits[commits >= split]))
    w.add(np.flatnonzero(kinds == TAG))
    w.add(np.flatnonzero(kinds == TREE))
    history_families(w, objs)
    return w.result()


def history_families(w: WriteOrder, objs: OrderInput) -> None:
    """The blob region of `history` and its variants: families depth first, those holding an
    unreleased blob first."""
    w.add(history_blob_order(objs, w.filled))


def history_blob_order(objs: OrderInput, filled: np.ndarray) -> np.ndarray:
    """What `history_families` writes after the objects `filled`."""
    return depth_first_family_order(objs, _unreleased_families_first(objs, np.arange(objs.count)), filled)


def _unreleased_families_first(objs: OrderInput, rest: np.ndarray) -> np.ndarray:
    """`rest`, with the objects of every delta family that holds an unreleased blob (on
    HEAD, in no tag) moved ahead of the others, each group in its own order."""
    if objs.unreleased is None:
        return rest
    roots = objs.roots
    touched = np.zeros(objs.count, dtype=bool)
    touched[roots[objs.unreleased & (objs.kinds == BLOB)]] = True
    return rest[np.argsort(~touched[roots[rest]], kind="stable")]


def windowed_wide(objs: OrderInput) -> np.ndarray:
    """`windowed` with groups of 256 commits: does the grain of the interleaving matter?"""
    return windowed(objs, 256)
