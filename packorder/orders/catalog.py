"""The orders packorder writes, by name: what each needs from history, and one line about
it. Apart from order.py (the functions, on numpy arrays) so that the command line can offer
the orders and start the history walks an order needs before numpy is imported."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packorder.errors import UsageError
from packorder.gitcmd import Config
from packorder.names import names

DEFAULT_ORDER = "recency"


@dataclass(frozen=True)
class OrderInfo:
    # What the order needs from history besides the walk: the commit introducing each object
    # (`intro`, a walk in commit order), which objects are unreleased (a second walk) and
    # which are HEAD's (a commit walk).
    needs_intro: bool
    needs_unreleased: bool
    summary: str
    needs_head: bool = False  # which commits HEAD reaches, and the trees they introduce (head_side.py)

    @property
    def needs_history(self) -> bool:
        return self.needs_intro or self.needs_unreleased or self.needs_head


CATALOG: dict[str, OrderInfo] = {
    "recency": OrderInfo(False, False, "Git's intended order on real types: tag tips, commits, trees, delta families"),
    "git": OrderInfo(False, False, "what git pack-objects writes when it reuses deltas"),
    "rev-list": OrderInfo(False, False, "plain discovery order (Git before 2011)"),
    "type": OrderInfo(False, False, "commits, tags, trees, blobs, each in discovery order"),
    "interleaved": OrderInfo(True, False, "recency, with each commit followed by the trees it introduces"),
    "windowed": OrderInfo(True, False, "interleaved by windows of 16 commits"),
    "interleaved-recent": OrderInfo(True, False, "interleaved, delta families ordered by their newest commit"),
    "windowed-256": OrderInfo(True, False, "interleaved by windows of 256 commits"),
    "history": OrderInfo(
        True, True, "tag tips alone, ~2 MiB windows of commits each followed by their trees, unreleased blobs first"
    ),
    "history-each-commit": OrderInfo(True, True, "history, each commit followed by its own trees"),
    "history-tags-midway": OrderInfo(True, True, "history, tag tips halfway through the commits"),
    "trees-first": OrderInfo(True, True, "history, each commit after the trees it introduces"),
    "recency-dfs": OrderInfo(False, False, "recency, blob families depth first"),
    "recency-unreleased": OrderInfo(
        False, True, "recency, blob families depth first, HEAD's unreleased families first"
    ),
    "paths": OrderInfo(
        False,
        True,
        "for cold log, log -- PATH, blame, fetch: HEAD's commits first, trees by path, new blobs' chains first",
        needs_head=True,
    ),
    "paths-unreleased-trees": OrderInfo(
        False,
        True,
        "for cold log -- PATH: paths, with only the unreleased trees and their chains before the trees by path",
        needs_head=True,
    ),
}


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
