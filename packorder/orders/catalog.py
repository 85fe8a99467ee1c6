"""The orders packorder writes, by name: the function that computes each, what it needs
from history, and one line about it. The functions (permutations.py, tree_paths.py, on
numpy arrays) are named, not imported, so that the command line can offer the orders and
start the history walks an order needs before numpy is imported."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packorder.errors import UsageError
from packorder.gitcmd import Config
from packorder.names import names

DEFAULT_ORDER = "recency"


# The facts about history an order may need besides the walk (walk/history.py): the commit
# introducing each object (a walk in commit order), which objects are unreleased (a second
# walk), which are HEAD's (a commit walk, head_side.py).
INTRO, UNRELEASED, HEAD = "intro", "unreleased", "head"
HISTORY_FACTS = (INTRO, UNRELEASED, HEAD)


@dataclass(frozen=True)
class OrderInfo:
    # The function that computes the order, in packorder.orders ("permutations.recency"): a
    # pure function from an OrderInput to a permutation (orders/functions.py finds it).
    function: str
    needs: frozenset[str]  # of HISTORY_FACTS
    summary: str

    @property
    def needs_intro(self) -> bool:
        return INTRO in self.needs

    @property
    def needs_unreleased(self) -> bool:
        return UNRELEASED in self.needs

    @property
    def needs_head(self) -> bool:
        return HEAD in self.needs


# Every order, one entry each: a new order is an entry here and its function.
CATALOG: dict[str, OrderInfo] = {
    "recency": OrderInfo(
        "permutations.recency",
        frozenset(),
        "Git's intended order on real types: tag tips, commits, trees, delta families",
    ),
    "git": OrderInfo(
        "permutations.git",
        frozenset(),
        "what git pack-objects writes when it reuses deltas",
    ),
    "rev-list": OrderInfo(
        "permutations.rev_list",
        frozenset(),
        "plain discovery order (Git before 2011)",
    ),
    "type": OrderInfo(
        "permutations.by_type",
        frozenset(),
        "commits, tags, trees, blobs, each in discovery order",
    ),
    "interleaved": OrderInfo(
        "permutations.interleaved",
        frozenset({INTRO}),
        "recency, with each commit followed by the trees it introduces",
    ),
    "windowed": OrderInfo(
        "permutations.windowed",
        frozenset({INTRO}),
        "interleaved by windows of 16 commits",
    ),
    "interleaved-recent": OrderInfo(
        "permutations.interleaved_recent_families",
        frozenset({INTRO}),
        "interleaved, delta families ordered by their newest commit",
    ),
    "windowed-256": OrderInfo(
        "permutations.windowed_wide",
        frozenset({INTRO}),
        "interleaved by windows of 256 commits",
    ),
    "history": OrderInfo(
        "permutations.history",
        frozenset({INTRO, UNRELEASED}),
        "tag tips alone, ~2 MiB windows of commits each followed by their trees, unreleased blobs first",
    ),
    "history-each-commit": OrderInfo(
        "permutations.history_each_commit",
        frozenset({INTRO, UNRELEASED}),
        "history, each commit followed by its own trees",
    ),
    "history-tags-midway": OrderInfo(
        "permutations.history_tags_midway",
        frozenset({INTRO, UNRELEASED}),
        "history, tag tips halfway through the commits",
    ),
    "trees-first": OrderInfo(
        "permutations.trees_first",
        frozenset({INTRO, UNRELEASED}),
        "history, each commit after the trees it introduces",
    ),
    "recency-dfs": OrderInfo(
        "permutations.recency_depth_first",
        frozenset(),
        "recency, blob families depth first",
    ),
    "recency-unreleased": OrderInfo(
        "permutations.recency_unreleased",
        frozenset({UNRELEASED}),
        "recency, blob families depth first, HEAD's unreleased families first",
    ),
    "paths": OrderInfo(
        "tree_paths.paths",
        frozenset({UNRELEASED, HEAD}),
        "for cold log, log -- PATH, blame, fetch: HEAD's commits first, trees by path, new blobs' chains first",
    ),
    "paths-unreleased-trees": OrderInfo(
        "tree_paths.paths_unreleased_trees",
        frozenset({UNRELEASED, HEAD}),
        "for cold log -- PATH: paths, with only the unreleased trees and their chains before the trees by path",
    ),
}


def history_needs(orders: Iterable[str]) -> frozenset[str]:
    """What the orders need from history, together (one set of walks serves them all)."""
    return frozenset().union(*(CATALOG[o].needs for o in orders))


def check_order(order: str, also: tuple[str, ...] = ()) -> None:
    """Refuse a name that is not an order (nor one of `also`, such as the experiment's as-is)."""
    if order not in CATALOG and order not in also:
        raise UsageError(f"unknown order '{order}' (choose from {', '.join((*also, *CATALOG))})")


def check_orders(orders: str | Iterable[str], purpose: str, also: tuple[str, ...] = ()) -> list[str]:
    """Order names in the form every call takes them (a sequence, or 'recency,history'),
    checked: at least one (`purpose` says for what), each known, none twice."""
    chosen = names(orders, "order")
    if not chosen:
        raise UsageError(f"no order to {purpose}")
    for name in chosen:
        check_order(name, also)
    if len(set(chosen)) < len(chosen):
        raise UsageError("an order is given twice")
    return chosen


def configured_order(config: Config, order: str | None) -> str:
    """The order asked for, else the repository's `packorder.order`, else recency; checked."""
    chosen = order or config.get("packorder.order") or DEFAULT_ORDER
    check_order(chosen)
    return chosen
