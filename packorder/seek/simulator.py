"""The simulator: how would a recorded workload seek if the repository were packed in another
order? Judged in seconds, without writing a pack.

`layout.plan_layout` says where each object would be under an order, reusing the stored
deltas (each entry keeps its packed size). On that planned pack:

- Git-traced workloads (every one but index-pack) ask for the same objects in the same
  sequence whatever the pack's order: their trace is re-laid, each request moved to the
  planned offset of the object it asked for, then expanded through the planned pack's delta
  chains and the delta base cache model, exactly as a measured trace is. (pack-objects'
  threaded delta search and grep's threads reorder a few requests from run to run.) Not so
  for those that serve with a bitmap (fetch-bitmap, clone): pack-objects takes the objects
  it does not copy verbatim in bitmap order, which is the pack's; the re-laid trace keeps
  the measured pack's sequence, and the result says so.
- index-pack reads in the pack's own order, so its reads are not re-laid but modelled on the
  planned pack (`ipmodel`), with the threads and cache Git would use on the repository.

An object the plan does not hold (one of a .keep pack, which a repack leaves alone) keeps its
place in its own pack.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from packorder.errors import UsageError
from packorder.format.layout import NO_BASE, PackLayout
from packorder.format.object_format import of_size
from packorder.format.pack import OBJ_OFS_DELTA
from packorder.gitcmd import version_numbers
from packorder.native_call import loose_header
from packorder.orders.catalog import check_orders, history_needs
from packorder.progress import ProgressCallback
from packorder.seek import analyze, caveats
from packorder.seek.api import DEFAULT_NEAR, DEFAULT_THRESHOLD, Measurement, describe_view, measure
from packorder.seek.expand import expand
from packorder.seek.ipmodel import index_pack_reads
from packorder.seek.seek_result import EXPANDED, RAW, VIEWS, SeekResult, ViewStats
from packorder.seek.trace import READS, REQUESTS, Trace
from packorder.seek.workload_catalog import USES_BITMAP
from packorder.seek.workloads import WorkloadSpec

if TYPE_CHECKING:
    from packorder.repacking.placement import PlannedLayout
    from packorder.store.repository import Repository

PACK_HEADER = 12  # "PACK", version, count


@dataclass
class PlannedPack:
    """An order's planned pack, shaped like a measured one (`PackLayout`) for the analyzer."""

    order: str
    layout: PackLayout
    pack_bytes: int  # header, entries and trailer
    seconds: float  # time to plan it


@dataclass
class SimulatedResult:
    """A workload's statistics under an order, simulated from a measured trace."""

    order: str
    label: str  # "ORDER (simulated)"
    workload: WorkloadSpec
    source: str  # how the accesses were obtained
    pack_bytes: int  # of the planned pack
    cache_limit: int
    views: list[ViewStats]
    seconds: float  # time to simulate (planning excluded)

    def view(self, name: str) -> ViewStats | None:
        return next((v for v in self.views if v.view == name), None)


@dataclass
class Simulation:
    measured: SeekResult
    simulated: list[SimulatedResult]
    plan_seconds: float  # enumerating the repository and planning every order


def plan(
    repo: str | os.PathLike[str] | Repository | None,
    orders: Sequence[str],
    progress: ProgressCallback | None = None,
    stored: bool = False,
) -> list[PlannedPack]:
    """Enumerate the repository once and plan the pack each order would write. With
    `stored`, the objects are taken in the order the packs store them instead of walked
    (walk/stored_order.py: milliseconds instead of seconds, for fleet triage)."""
    from packorder.repacking.placement import plan_layout
    from packorder.store.repository import LOOSE, Repository, open_repository
    from packorder.walk.history import object_history
    from packorder.walk.objects import enumerate_objects
    from packorder.walk.stored_order import stored_table

    orders = check_orders(orders, "simulate")
    repository = repo if isinstance(repo, Repository) else open_repository(repo)
    if progress is not None:
        progress("Planning layouts", 0, len(orders))
    # The ordered pack holds only the reachable objects.
    table = stored_table(repository) if stored else enumerate_objects(repository, unreachable=False)
    sizes = np.zeros(table.count, dtype=np.uint64)
    for i, pack in enumerate(repository.packs):
        rows = np.flatnonzero(table.source == i)
        if len(rows):
            sizes[rows] = pack.layout.object_sizes[table.pos[rows]]
    for row in np.flatnonzero(table.source == LOOSE):
        sizes[row] = loose_header(repository.loose.paths[int(table.pos[row])])[1]
    # The orders placing objects by where they sit in history share one pair of walks.
    needs = history_needs(orders)
    history = object_history(repository, table, needs) if needs else None
    out = []
    for done, order in enumerate(orders):
        start = time.perf_counter()
        planned = plan_layout(order=order, repo=repository, table=table, history=history)
        rows = planned.rows
        out.append(_as_pack(planned, table.kinds[rows], sizes[rows], time.perf_counter() - start))
        if progress is not None:
            progress("Planning layouts", done + 1, len(orders))
    return out


def _as_pack(planned: PlannedLayout, kinds: np.ndarray, object_sizes: np.ndarray, seconds: float) -> PlannedPack:
    n = len(planned.offsets)
    offsets = planned.offsets.astype(np.uint64)
    ends = offsets + planned.packed_sizes.astype(np.uint64)
    end = int(ends[-1]) if n else PACK_HEADER
    base = planned.base.astype(np.int64)
    entry_kinds = np.where(base >= 0, OBJ_OFS_DELTA, kinds).astype(np.uint8)
    layout = PackLayout(
        pack_path=Path(f"(planned {planned.order} pack)"),
        offsets=offsets,
        ends=ends,
        kinds=entry_kinds,
        sizes=object_sizes.astype(np.uint64),  # not the delta's own size: nothing here needs it
        _object_sizes=object_sizes.astype(np.uint64),
        header_lens=np.zeros(n, dtype=np.uint8),
        base=np.where(base >= 0, base, NO_BASE),
        oids=planned.oids,
        checksum=b"",
        fmt=of_size(planned.oids.shape[1]),
    )
    return PlannedPack(planned.order, layout, end + layout.fmt.rawsz, seconds)


def relay(trace: Trace, layouts: Sequence[PackLayout], planned: PackLayout) -> tuple[Trace, list[PackLayout]]:
    """The requests of `trace` (located in `layouts`), each moved to the object's place in the
    planned pack (pack 0 of the result); objects the plan lacks stay in their own packs."""
    from packorder.store.object_ids import keys, lookup

    if trace.positions is None:
        trace = analyze.locate(trace, layouts)
    assert trace.positions is not None
    oids = np.zeros((len(trace), planned.oids.shape[1]), dtype=np.uint8)
    for p, layout in enumerate(layouts):
        mine = trace.pack_index == p
        oids[mine] = layout.oids[trace.positions[mine]]
    order = np.argsort(keys(planned.oids), kind="stable")
    at = lookup(keys(planned.oids)[order], keys(oids))
    found = at >= 0
    positions = np.where(found, order[np.maximum(at, 0)], trace.positions)
    pack_index = np.where(found, 0, trace.pack_index.astype(np.int64) + 1).astype(np.int32)
    kept = sorted({int(p) for p in trace.pack_index[~found]})
    out_layouts = [planned]
    if kept:
        # Renumber the packs still used after the planned one.
        remap = np.zeros(len(layouts) + 1, dtype=np.int32)
        for k, p in enumerate(kept):
            remap[p + 1] = k + 1
            out_layouts.append(layouts[p])
        pack_index = remap[pack_index]
    offsets = np.zeros(len(trace), dtype=np.uint64)
    for p, layout in enumerate(out_layouts):
        mine = pack_index == p
        offsets[mine] = layout.offsets[positions[mine]]
    packs = tuple(layout.pack_path for layout in out_layouts)
    relaid = Trace(packs, pack_index, offsets, trace.kind, f"{trace.source}, re-laid", positions=positions)
    return relaid, out_layouts


def simulate_views(
    measured: Measurement,
    planned: PlannedPack,
    views: Sequence[str] = VIEWS,
    threshold: int = DEFAULT_THRESHOLD,
    near: int = DEFAULT_NEAR,
    progress: ProgressCallback | None = None,
) -> SimulatedResult:
    """The statistics `measured`'s workload would show on the planned pack."""
    start = time.perf_counter()
    result = measured.result
    cache_limit = result.cache_limit
    stats = []
    if measured.trace.kind == READS:
        version = version_numbers(result.git_version)  # the Git measured
        reads = index_pack_reads(planned.layout, cache_limit, measured.threads, version)
        zeros = np.zeros(len(reads), dtype=np.int32)
        source = f"model of git index-pack's reads ({measured.threads} thread(s))"
        trace = Trace((planned.layout.pack_path,), zeros, planned.layout.offsets[reads], READS, source, reads)
        description = describe_view(RAW, READS, cache_limit) + " (modelled)"
        stats.append(analyze.view_stats(trace, [planned.layout], RAW, description, threshold, near))
    else:
        trace, layouts = relay(measured.trace, measured.layouts, planned.layout)
        source = f"{result.source} of {result.label}, re-laid"
        for view in VIEWS:
            if view not in views:
                continue
            shown = expand(trace, layouts, cache_limit, progress) if view == EXPANDED else trace
            description = describe_view(view, REQUESTS, cache_limit)
            stats.append(analyze.view_stats(shown, layouts, view, description, threshold, near))
    return SimulatedResult(
        order=planned.order,
        label=f"{planned.order} (simulated)",
        workload=result.workload,
        source=source,
        pack_bytes=planned.pack_bytes,
        cache_limit=cache_limit,
        views=stats,
        seconds=time.perf_counter() - start,
    )


def simulate(
    repo: str | os.PathLike[str] | None = None,
    workload: str | WorkloadSpec = "log",
    *,
    orders: Sequence[str],
    path: str | None = None,
    git_args: Sequence[str] = (),
    git: str = "git",
    views: Sequence[str] = VIEWS,
    threshold: int = DEFAULT_THRESHOLD,
    near: int = DEFAULT_NEAR,
    cache_limit: int | None = None,
    cold: bool = False,
    label: str | None = None,
    planned: Sequence[PlannedPack] | None = None,
    progress: ProgressCallback | None = None,
) -> Simulation:
    """Measure `workload` on the repository (as `seekstats` does, `cold` included), then
    simulate it under each of `orders`. Pass `planned` (from `plan`) to reuse plans across
    workloads."""
    orders = check_orders(orders, "simulate")
    measured = measure(
        repo,
        workload,
        path=path,
        git_args=git_args,
        git=git,
        views=views,
        threshold=threshold,
        near=near,
        cache_limit=cache_limit,
        cold=cold,
        label=label,
        progress=progress,
    )
    start = time.perf_counter()
    if planned is None:
        planned = plan(repo, orders, progress)
    plan_seconds = time.perf_counter() - start
    by_order = {p.order: p for p in planned}
    missing = [o for o in orders if o not in by_order]
    if missing:
        raise UsageError(f"no planned layout for order '{missing[0]}'")
    simulated = [simulate_views(measured, by_order[o], views, threshold, near, progress) for o in orders]
    if measured.result.workload.name in USES_BITMAP:
        measured.result.warnings.append(caveats.relaid_bitmap_order(measured.result.workload.name))
    return Simulation(measured.result, simulated, plan_seconds)
