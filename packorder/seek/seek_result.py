"""What `seekstats` returns: plain dataclasses (JSON-ready through `packorder.jsonable.to_jsonable`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from packorder.seek.workloads import WorkloadSpec

RAW = "raw"
EXPANDED = "expanded"
VIEWS = (RAW, EXPANDED)


@dataclass
class ViewStats:
    """Seek statistics of one view of a trace: raw (as recorded) or expanded (delta chains,
    less the delta base cache)."""

    view: str
    description: str
    accesses: int
    seeks: int  # accesses with a previous access in the same pack
    percentiles: dict[str, int] | None  # "0", "10", ... "99.9" -> bytes (nearest rank)
    threshold: int
    below_threshold: float | None  # share of seeks shorter than `threshold`
    near: int
    near_read: float | None  # share of seeks landing within `near` bytes of an entry read before
    cdf: list[tuple[int, float]]  # (distance, share of seeks <= distance), log-spaced


@dataclass
class SeekResult:
    """One workload measured on one repository by `packorder.seekstats`: the packs it read,
    each view's seek statistics (`views`, `view(name)`), its wall times and the Git that ran it."""

    repository: Path  # the git directory
    label: str  # a short name for tables and plots
    workload: WorkloadSpec
    source: str  # the trace source
    git: str  # the git binary the workload ran with
    git_version: str
    packs: list[Path]  # the packs accessed
    pack_bytes: int
    cache_limit: int  # delta base cache modelled by the expanded view
    views: list[ViewStats]
    seconds: float  # wall time of the traced run
    cold_seconds: float | None = None  # untraced, after dropping the packs from the page cache
    warm_seconds: float | None = None  # untraced, right after the cold run
    warnings: list[str] = field(default_factory=list)  # what the figures cannot show (seek/caveats.py)

    def view(self, name: str) -> ViewStats | None:
        return next((v for v in self.views if v.view == name), None)
