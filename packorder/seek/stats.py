"""Seek statistics: pure functions over numpy arrays.

- The seek distance of an access is the absolute difference between its offset and the offset of
  the previous access to the same pack; the first access to each pack has none.
- Percentiles use the nearest-rank definition: the p-th percentile of n distances is the smallest
  distance d such that at least p% of the distances are <= d, i.e. the value of rank
  ceil(p * n / 100) (at least 1) in ascending order, computed exactly for decimal p. It is always
  a distance that occurred; the 0th is the smallest.
- The share below a threshold counts distances strictly less than it ("less than 2MiB seek").
- The near-read share counts accesses whose entry lies within `near` bytes of an entry read
  earlier from the same pack (the gap between the two byte ranges; 0 when they touch or are the
  same entry): what a page cache that kept everything read so far, plus some readahead around
  it, would serve without a far seek. Same population as the seek distances.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from packorder import _native

PERCENTILES: tuple[float, ...] = (0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9)


def seek_distances(pack_index: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Distances (int64) between consecutive accesses within each pack, grouped by pack."""
    if len(offsets) < 2:
        return np.zeros(0, dtype=np.int64)
    if np.all(pack_index == pack_index[0]):
        return np.abs(np.diff(offsets.astype(np.int64)))
    order = np.argsort(pack_index, kind="stable")
    packs = pack_index[order]
    dist = np.abs(np.diff(offsets[order].astype(np.int64)))
    return dist[packs[1:] == packs[:-1]]


def rank(p: float, n: int) -> int:
    """The 1-based nearest rank of the p-th percentile among n values."""
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p} is outside 0..100")
    return max(1, math.ceil(Fraction(str(p)) * n / 100))


def percentiles(distances: np.ndarray, points: Sequence[float] = PERCENTILES) -> list[int] | None:
    """The nearest-rank percentiles of `distances` at `points`; None when there are none."""
    n = len(distances)
    if n == 0:
        return None
    ranks = np.array([rank(p, n) - 1 for p in points], dtype=np.int64)
    part = np.partition(distances, np.unique(ranks))
    return [int(v) for v in part[ranks]]


def share_below(distances: np.ndarray, threshold: int) -> float | None:
    """The share of distances strictly below `threshold`; None when there are none."""
    if len(distances) == 0:
        return None
    return float(np.count_nonzero(distances < threshold)) / len(distances)


def near_read(pack_index: np.ndarray, starts: np.ndarray, ends: np.ndarray, near: int) -> np.ndarray:
    """For each access, whether an entry read earlier from the same pack lies within `near`
    bytes of its entry [start, end). Entries of one pack must not overlap (pack entries don't).
    Computed natively (`native/src/seek/nearness.rs`): an access is near when it repeats an entry,
    or when an entry within reach of its own was first read before it."""
    flags = _native.near_read(
        np.ascontiguousarray(pack_index, dtype=np.int32).tobytes(),
        np.ascontiguousarray(starts, dtype=np.uint64).tobytes(),
        np.ascontiguousarray(ends, dtype=np.uint64).tobytes(),
        int(near),
    )
    return np.frombuffer(flags, dtype=np.uint8).astype(bool)


def share_of(flags: np.ndarray, pack_index: np.ndarray) -> float | None:
    """The share of true flags among accesses that have a previous access in their pack."""
    if len(flags) == 0:
        return None
    _, first = np.unique(pack_index, return_index=True)
    population = len(flags) - len(first)
    if population == 0:
        return None
    # The first access of a pack is never near anything read before it.
    return float(np.count_nonzero(flags)) / population


def cdf(distances: np.ndarray, steps_per_octave: int = 4) -> list[tuple[int, float]]:
    """(d, share of distances <= d) at d = 0 and at log-spaced d up to the largest distance."""
    if len(distances) == 0:
        return []
    ordered = np.sort(distances)
    top = int(ordered[-1])
    grid = [0]
    k = 0
    while grid[-1] < top:
        d = math.ceil(2 ** (k / steps_per_octave))
        if d > grid[-1]:
            grid.append(min(d, top))
        k += 1
    counts = np.searchsorted(ordered, np.array(grid, dtype=np.int64), side="right")
    return [(d, float(c) / len(ordered)) for d, c in zip(grid, counts.tolist(), strict=True)]
