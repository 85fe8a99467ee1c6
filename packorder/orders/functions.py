"""The orders by name with the functions that compute them: each catalog entry's function
(orders/catalog.py names it), found once."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from packorder.orders.catalog import CATALOG, OrderInfo
from packorder.orders.permutations import OrderInput

OrderFn = Callable[[OrderInput], np.ndarray]


@dataclass(frozen=True)
class OrderSpec(OrderInfo):
    """An order of the catalog with its function."""

    fn: OrderFn | None = None


def _function(qualified: str) -> OrderFn:
    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(f"packorder.orders.{module}"), name)


ORDERS: dict[str, OrderSpec] = {
    name: OrderSpec(**asdict(info), fn=_function(info.function)) for name, info in CATALOG.items()
}
