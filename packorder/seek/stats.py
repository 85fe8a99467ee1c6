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

    Computed offline: an access is near when it repeats an entry, or when among the entries
    within reach of its entry, one was first read before it (a range minimum of first-read
    times over the neighbours on either side, in offset order).
    """
    n = len(starts)
    result = np.zeros(n, dtype=bool)
    for p in np.unique(pack_index):
        mine = np.flatnonzero(pack_index == p)
        s = starts[mine].astype(np.int64)
        e = ends[mine].astype(np.int64)
        uniq, first, inverse = np.unique(s, return_index=True, return_inverse=True)
        first = first.astype(np.int64)
        inverse = inverse.ravel()
        ends_u = e[first]
        here = np.zeros(len(mine), dtype=bool)
        here[first[inverse] != np.arange(len(mine))] = True  # the same entry was read before
        u = np.arange(len(uniq))
        lo = np.searchsorted(ends_u, uniq - near, side="left")  # entries left of u within reach
        hi = np.searchsorted(uniq, ends_u + near, side="right")  # entries right of u within reach
        earliest = np.minimum(range_min(first, lo, u), range_min(first, u + 1, hi))
        here[first] = earliest < first
        result[mine] = here
    return result


def range_min(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """min(values[lo[i]:hi[i]]) for each i (int64 max for an empty range), with a sparse table:
    level k holds the minimum of each run of 2**k values, so any range is two overlapping runs."""
    big = np.iinfo(np.int64).max
    lengths = hi - lo
    out = np.full(len(lo), big, dtype=np.int64)
    if len(values) == 0 or lengths.max(initial=0) <= 0:
        return out
    valid = lengths > 0
    level = np.frexp(np.maximum(lengths, 1).astype(np.float64))[1].astype(np.int64) - 1  # floor(log2), exact
    table = values.astype(np.int64)
    for k in range(int(level.max()) + 1):
        if k:
            half = 1 << (k - 1)
            table = np.minimum(table[:-half], table[half:])
        rows = np.flatnonzero(valid & (level == k))
        if len(rows):
            width = 1 << k
            out[rows] = np.minimum(table[lo[rows]], table[hi[rows] - width])
    return out


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
