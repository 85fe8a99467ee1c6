"""What a trace source produces: pack accesses in the order they happened.

A trace source is any function that runs something and returns a `Recording`: a `Trace` whose
offsets are entry starts in known pack files, plus the wall time of the traced run. The
analyzer (expansion, statistics, reports) only ever sees `Recording`s, so a new source — another
program's log, another tracer — plugs in by returning one. Two sources exist:

- `pack_access.record`: Git's `GIT_TRACE_PACK_ACCESS` log of a `git` run (the objects Git asked
  a pack for: kind REQUESTS);
- `pread.record`: an `strace` of `git index-pack`'s `pread64` calls (every entry it read:
  kind READS).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REQUESTS = "requests"
"""Objects a program asked the pack for; the delta bases read on the way are not in the trace."""

READS = "reads"
"""Every entry read from the pack, delta bases included: nothing left to expand."""


@dataclass(frozen=True)
class Trace:
    """Accesses in time order: access i read the entry starting at `offsets[i]` of the pack
    `packs[pack_index[i]]`."""

    packs: tuple[Path, ...]
    pack_index: np.ndarray  # int32, one per access
    offsets: np.ndarray  # uint64, one per access: the start of the entry read
    kind: str  # REQUESTS or READS
    source: str  # a short description of where the trace came from
    positions: np.ndarray | None = None  # int64: each entry's position in its pack, when known

    def __post_init__(self) -> None:
        if self.kind not in (REQUESTS, READS):
            raise ValueError(f"unknown trace kind {self.kind!r}")
        if len(self.pack_index) != len(self.offsets):
            raise ValueError("pack_index and offsets differ in length")
        if self.positions is not None and len(self.positions) != len(self.offsets):
            raise ValueError("positions and offsets differ in length")

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass(frozen=True)
class Recording:
    """A trace and what it cost to record it."""

    trace: Trace
    seconds: float  # wall time of the traced run
    commands: list[list[str]] = field(default_factory=list)  # what ran, for the report


def empty(kind: str, source: str) -> Trace:
    return Trace((), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint64), kind, source)


def concat(traces: Sequence[Trace]) -> Trace:
    """Traces recorded one after another (e.g. one per pack), as one; same kind required."""
    if not traces:
        raise ValueError("nothing to concatenate")
    kinds = {t.kind for t in traces}
    if len(kinds) != 1:
        raise ValueError(f"cannot concatenate traces of kinds {sorted(kinds)}")
    where: dict[Path, int] = {}  # pack -> its number in the result, by first appearance
    parts = []
    for t in traces:
        remap = np.array([where.setdefault(p, len(where)) for p in t.packs] or [0], dtype=np.int32)
        parts.append(remap[t.pack_index] if len(t) else t.pack_index)
    known = all(t.positions is not None for t in traces)
    return Trace(
        tuple(where),
        np.concatenate(parts).astype(np.int32),
        np.concatenate([t.offsets for t in traces]).astype(np.uint64),
        traces[0].kind,
        traces[0].source,
        np.concatenate([t.positions for t in traces]).astype(np.int64) if known else None,  # type: ignore[misc]
    )
