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


def _order(function: str, needs: str, summary: str) -> OrderInfo:
    """A catalog entry; `needs`: the HISTORY_FACTS it needs, by name, space-separated."""
    facts = frozenset(needs.split())
    if not facts <= set(HISTORY_FACTS):
        raise ValueError(f"{function} needs {sorted(facts - set(HISTORY_FACTS))}: not facts of history")
    return OrderInfo(function, facts, summary)


# Every order, one entry each: a new order is an entry here and its function. A summary is
# at most 53 characters, so that `--help` lists the orders in 80 columns.
CATALOG: dict[str, OrderInfo] = {
    "recency": _order("permutations.recency", "", "Git's order: tag tips, commits, trees, delta families"),
    "git": _order("permutations.git", "", "what git pack-objects writes when it reuses deltas"),
    "rev-list": _order("permutations.rev_list", "", "plain discovery order (Git before 2011)"),
    "type": _order("permutations.by_type", "", "commits, tags, trees, blobs, each in discovery order"),
    "interleaved": _order("permutations.interleaved", "intro", "recency, each commit before the trees it introduces"),
    "windowed": _order("permutations.windowed", "intro", "interleaved by windows of 16 commits"),
    "interleaved-recent": _order(
        "permutations.interleaved_recent_families", "intro", "interleaved, delta families by their newest commit"
    ),
    "windowed-256": _order("permutations.windowed_wide", "intro", "interleaved by windows of 256 commits"),
    "history": _order(
        "permutations.history", "intro unreleased", "tag tips, 2 MiB commit+tree windows, new blobs first"
    ),
    "history-each-commit": _order(
        "permutations.history_each_commit", "intro unreleased", "history, each commit followed by its own trees"
    ),
    "history-tags-midway": _order(
        "permutations.history_tags_midway", "intro unreleased", "history, tag tips halfway through the commits"
    ),
    "trees-first": _order(
        "permutations.trees_first", "intro unreleased", "history, each commit after the trees it introduces"
    ),
    "recency-dfs": _order("permutations.recency_depth_first", "", "recency, blob families depth first"),
    "recency-unreleased": _order(
        "permutations.recency_unreleased", "unreleased", "recency-dfs, HEAD's unreleased families first"
    ),
    "paths": _order("tree_paths.paths", "unreleased head", "HEAD's commits first, trees by path, new chains first"),
    "paths-unreleased-trees": _order(
        "tree_paths.paths_unreleased_trees", "unreleased head", "paths, only unreleased trees before those by path"
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
