"""The analyzer: run a workload on a repository, record every pack entry it reads, and report
how far those reads seek (docs/design.md, section 1).

Trace sources (`pack_access`, `pread`) produce a `trace.Trace`; `expand` turns Git's requests
into the entries it reads; `stats` holds the pure statistics; `report` and `plot` render
results; `api.seekstats` ties them together and `command` is the CLI. Importing this package
is cheap: the modules load on first use (the CLI registers `command` at startup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["SeekResult", "ViewStats", "WorkloadSpec", "seekstats"]

if TYPE_CHECKING:
    from packorder.seek.api import seekstats
    from packorder.seek.seek_result import SeekResult, ViewStats
    from packorder.seek.workloads import WorkloadSpec


def __getattr__(name: str) -> Any:
    if name == "seekstats":
        from packorder.seek.api import seekstats

        return seekstats
    if name in ("SeekResult", "ViewStats"):
        from packorder.seek import seek_result as result

        return getattr(result, name)
    if name == "WorkloadSpec":
        from packorder.seek.workloads import WorkloadSpec

        return WorkloadSpec
    raise AttributeError(f"module 'packorder.seek' has no attribute {name!r}")
