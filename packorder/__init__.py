"""packorder: write Git packs in an order chosen for locality of access, index packs faster
than Git, and measure how far workloads seek inside a pack.

The library API is plain functions with keyword options returning small records (dataclasses;
`index_pack`'s is a named tuple, to keep `dataclasses` out of index-pack's memory); errors are
raised as PackError subclasses, never by exiting the process.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from packorder.errors import CorruptPackError, Interrupted, PackError, RepositoryError, UsageError

__all__ = [
    "CorruptPackError",
    "Interrupted",
    "PackError",
    "RepositoryError",
    "UsageError",
    "__version__",
    "experiment",
    "gc",
    "index_pack",
    "repack",
    "sample",
    "seekstats",
]

if TYPE_CHECKING:
    from packorder.experiments.run import experiment
    from packorder.experiments.sample_repository import sample
    from packorder.indexer.index_pack import index_pack
    from packorder.repacking.maintenance import gc
    from packorder.repacking.pipeline import repack
    from packorder.seek.api import seekstats

# Imported on first use: `packorder index-pack` must not pay for numpy or plotting. (The
# modules are not named like the functions: importing packorder.repack would rebind
# `packorder.repack` to the module.)
_LAZY = {
    "experiment": "packorder.experiments.run",
    "gc": "packorder.repacking.maintenance",
    "index_pack": "packorder.indexer.index_pack",
    "repack": "packorder.repacking.pipeline",
    "sample": "packorder.experiments.sample_repository",
    "seekstats": "packorder.seek.api",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        # Read from the installed metadata on first use (importlib.metadata costs index-pack
        # memory it has no use for).
        from importlib.metadata import version

        return version("packorder")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'packorder' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    # So that help(packorder) and completion find the functions imported on first use.
    return sorted({*globals(), *_LAZY, "__version__"})
