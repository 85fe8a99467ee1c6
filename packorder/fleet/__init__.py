"""The fleet layer: find which of many repositories are worth repacking (discovery.py,
triage.py), repack them on a Dask cluster, each in a process of its own (cluster.py,
isolation.py), and sum up what it bought (summary.py).

Dask is an optional extra (`pip install 'packorder[fleet]'`): only cluster.py imports it,
when a fleet repack starts. `packorder.fleet.status`, `repack` and `report` are loaded on
first use, as the package's own functions are.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from packorder.fleet.cluster import repack
    from packorder.fleet.summary import report
    from packorder.fleet.triage import status

__all__ = ["repack", "report", "status"]

_LAZY = {
    "repack": "packorder.fleet.cluster",
    "report": "packorder.fleet.summary",
    "status": "packorder.fleet.triage",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'packorder.fleet' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
