"""What `packorder.experiment` returns: plain dataclasses (JSON-ready through
`packorder.jsonable.to_jsonable`), apart from the experiment so that its report can read them
without importing it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packorder.seek.workloads import WorkloadSpec


@dataclass
class OrderRun:
    """One copy: its order, its packs, and every workload measured on it."""

    order: str
    git_dir: Path  # the copy (removed after the experiment unless kept)
    pack_bytes: int
    packs: int
    objects: int
    deltas: int  # delta entries (reused ones, in a repacked copy)
    repack_seconds: float
    results: list = field(default_factory=list)  # SeekResult per workload, cold/warm = medians
    cold: dict[str, list[float]] = field(default_factory=dict)  # workload name -> each run
    warm: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class Agreement:
    """A measured share of seeks under the threshold beside the simulator's for that order."""

    workload: str
    view: str
    order: str
    measured: float
    simulated: float

    @property
    def difference(self) -> float:
        return self.simulated - self.measured


@dataclass
class ExperimentResult:
    """What `packorder.experiment` measured: each order's copy (its packs, every workload's
    seek statistics and cold and warm times), the simulator's orders and how well it agreed
    with what was measured, the conditions (Git, load, runs) and the report written."""

    repository: Path
    output_dir: Path
    report: Path
    plots: list[Path]
    workloads: list[WorkloadSpec]  # paths resolved
    orders: list[OrderRun]
    reference: str | None  # the order whose traces the simulator re-laid
    simulated: list  # SimulatedResult per workload and simulated order
    agreement: list[Agreement]
    runs: int
    cold_iops: int | None
    threshold: int
    git_version: str
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    seconds: float
    kept: Path | None  # the work directory, when kept
    warnings: list[str] = field(default_factory=list)  # what the figures cannot show (seek/caveats.py)

    def run(self, order: str) -> OrderRun:
        return next(r for r in self.orders if r.order == order)
