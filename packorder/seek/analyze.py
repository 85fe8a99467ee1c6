"""From a trace to the statistics of one view: entry ranges from the pack layouts, then the
pure functions of `stats`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from packorder.errors import RepositoryError
from packorder.format.layout import PackLayout
from packorder.format.layout import load as load_layout
from packorder.format.object_format import SHA1, ObjectFormat
from packorder.seek import stats
from packorder.seek.seek_result import ViewStats
from packorder.seek.trace import Trace


def layouts_of(trace: Trace, known: dict | None = None, fmt: ObjectFormat = SHA1) -> list[PackLayout]:
    """The layout of each pack of the trace (in `known` or read from its index, ids of `fmt`)."""
    out = []
    for pack in trace.packs:
        found = (known or {}).get(pack)
        if found is None:
            if not pack.is_file() or not pack.with_suffix(".idx").is_file():
                raise RepositoryError(f"{pack}: the pack the workload read, or its index, is gone")
            found = load_layout(pack, fmt=fmt)
        out.append(found)
    return out


def locate(trace: Trace, layouts: Sequence[PackLayout]) -> Trace:
    """The trace with the pack position of each access (checking it is an entry start)."""
    if trace.positions is not None:
        return trace
    positions = np.zeros(len(trace), dtype=np.int64)
    for p, layout in enumerate(layouts):
        mine = trace.pack_index == p if len(layouts) > 1 else slice(None)
        positions[mine] = layout.position_of_offset(trace.offsets[mine])
    return dataclasses.replace(trace, positions=positions)


def entry_ranges(trace: Trace, layouts: Sequence[PackLayout]) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of the entry each access read."""
    positions = locate(trace, layouts).positions
    assert positions is not None
    ends = np.zeros(len(trace), dtype=np.uint64)
    for p, layout in enumerate(layouts):
        mine = trace.pack_index == p if len(layouts) > 1 else slice(None)
        ends[mine] = layout.ends[positions[mine]]
    return trace.offsets, ends


def size_label(n: int) -> str:
    """2097152 -> '2MiB', 131072 -> '128KiB', 1000 -> '1000B' (the study's spelling)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def view_stats(
    trace: Trace, layouts: Sequence[PackLayout], view: str, description: str, threshold: int, near: int
) -> ViewStats:
    distances = stats.seek_distances(trace.pack_index, trace.offsets)
    values = stats.percentiles(distances)
    starts, ends = entry_ranges(trace, layouts)
    flags = stats.near_read(trace.pack_index, starts, ends, near)
    return ViewStats(
        view=view,
        description=description,
        accesses=len(trace),
        seeks=len(distances),
        percentiles=None if values is None else {f"{p:g}": v for p, v in zip(stats.PERCENTILES, values, strict=True)},
        threshold=threshold,
        below_threshold=stats.share_below(distances, threshold),
        near=near,
        near_read=stats.share_of(flags, trace.pack_index),
        cdf=stats.cdf(distances),
    )
