"""The orders by name: the catalog's entries (orders/catalog.py) with the functions that
compute them (permutations.py, tree_paths.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from packorder.orders import permutations as p
from packorder.orders.catalog import CATALOG, OrderInfo
from packorder.orders.tree_paths import paths, paths_unreleased_trees

OrderFn = Callable[[p.OrderInput], np.ndarray]


@dataclass(frozen=True)
class OrderSpec(OrderInfo):
    """An order of the catalog (orders/catalog.py) with its function."""

    fn: OrderFn | None = None


_FUNCTIONS: dict[str, OrderFn] = {
    "recency": p.recency,
    "git": p.git,
    "rev-list": p.rev_list,
    "type": p.by_type,
    "interleaved": p.interleaved,
    "windowed": p.windowed,
    "interleaved-recent": p.interleaved_recent_families,
    "windowed-256": p.windowed_wide,
    "history": p.history,
    "history-each-commit": p.history_each_commit,
    "history-tags-midway": p.history_tags_midway,
    "trees-first": p.trees_first,
    "recency-dfs": p.recency_depth_first,
    "recency-unreleased": p.recency_unreleased,
    "paths": paths,
    "paths-unreleased-trees": paths_unreleased_trees,
}
ORDERS: dict[str, OrderSpec] = {name: OrderSpec(fn=_FUNCTIONS[name], **asdict(info)) for name, info in CATALOG.items()}
