"""packorder: write Git packs in an order chosen for locality of access, index packs faster
than Git, and measure how far workloads seek inside a pack.

The library API is plain functions with keyword options returning small dataclasses; errors
are raised as PackError subclasses, never by exiting the process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from packorder.errors import CorruptPackError, Interrupted, PackError, RepositoryError, UsageError

__all__ = [
    "CorruptPackError",
    "Interrupted",
    "PackError",
    "RepositoryError",
    "UsageError",
    "index_pack",
    "seekstats",
]

if TYPE_CHECKING:
    from packorder.indexer import index_pack
    from packorder.seek.api import seekstats


def __getattr__(name: str) -> Any:
    # Imported on first use: `packorder index-pack` must not pay for numpy, pygit2 or plotting.
    if name == "index_pack":
        from packorder.indexer import index_pack

        return index_pack
    if name == "seekstats":
        from packorder.seek.api import seekstats

        return seekstats
    raise AttributeError(f"module 'packorder' has no attribute {name!r}")
