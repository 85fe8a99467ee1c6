"""packorder: write Git packs in an order chosen for locality of access, index packs faster
than Git, and measure how far workloads seek inside a pack.

Functions (each the library side of the command of the same name):

    repack(repo, *, order=..., ...) -> RepackResult      rewrite the packs in an order
    gc(repo, *, auto=False, ...) -> GcResult             Git's maintenance, packorder's repack
    index_pack(pack, *, repo=..., ...) -> IndexResult     .idx and .rev as git index-pack writes them
    seekstats(repo, workload, ...) -> SeekResult         how far a workload seeks in the packs
    experiment(repo, *, orders=..., ...) -> ExperimentResult
                                                         repack copies in several orders, measure each
    sample(path, *, commits=6000) -> SampleResult        a deterministic repository to try them on

Every function takes keyword options named as the command's long options and returns a small
record (a dataclass; `IndexResult` is a named tuple, to keep `dataclasses` out of
index-pack's memory). Errors are raised as PackError subclasses (CorruptPackError,
RepositoryError, UsageError, Interrupted), never by exiting the process. What this module
exports is the library; the subpackages are internal and may change between versions.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from packorder.errors import CorruptPackError, Interrupted, PackError, RepositoryError, UsageError

__all__ = [
    "CONFIGURED",
    "CorruptPackError",
    "ExperimentResult",
    "GcResult",
    "IndexResult",
    "Interrupted",
    "PackError",
    "RepackResult",
    "RepositoryError",
    "SampleResult",
    "SeekResult",
    "UsageError",
    "ViewStats",
    "WorkloadSpec",
    "__version__",
    "experiment",
    "gc",
    "index_pack",
    "repack",
    "sample",
    "seekstats",
]

if TYPE_CHECKING:
    from packorder.experiments.experiment_result import ExperimentResult
    from packorder.experiments.run import experiment
    from packorder.experiments.sample_repository import SampleResult, sample
    from packorder.indexer.index_pack import IndexResult, index_pack
    from packorder.repacking.maintenance import CONFIGURED, GcResult, gc
    from packorder.repacking.pipeline import repack
    from packorder.repacking.repack_result import RepackResult
    from packorder.seek.api import seekstats
    from packorder.seek.seek_result import SeekResult, ViewStats
    from packorder.seek.workload_catalog import WorkloadSpec

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
    "CONFIGURED": "packorder.repacking.maintenance",
    "ExperimentResult": "packorder.experiments.experiment_result",
    "GcResult": "packorder.repacking.maintenance",
    "IndexResult": "packorder.indexer.index_pack",
    "RepackResult": "packorder.repacking.repack_result",
    "SampleResult": "packorder.experiments.sample_repository",
    "SeekResult": "packorder.seek.seek_result",
    "ViewStats": "packorder.seek.seek_result",
    "WorkloadSpec": "packorder.seek.workload_catalog",
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
