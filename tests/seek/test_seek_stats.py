"""Seek statistics on hand-made traces: exact values, and the offline near-read computation
against a straightforward online reference built on an ordered set."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedDict

from packorder.seek import stats


def arr(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_seek_distances_are_absolute_and_per_pack() -> None:
    packs = np.array([0, 1, 0, 0, 1, 1], dtype=np.int32)
    offsets = np.array([100, 5000, 40, 1000, 12, 5000], dtype=np.uint64)
    # Pack 0: 100 -> 40 -> 1000; pack 1: 5000 -> 12 -> 5000. The switch between packs is no seek.
    assert sorted(stats.seek_distances(packs, offsets).tolist()) == [60, 960, 4988, 4988]


def test_seek_distances_of_one_pack_keep_time_order() -> None:
    offsets = np.array([12, 500, 100, 100, 2_000_000_000], dtype=np.uint64)
    assert stats.seek_distances(np.zeros(5, dtype=np.int32), offsets).tolist() == [488, 400, 0, 1_999_999_900]


def test_no_seek_without_two_accesses() -> None:
    assert len(stats.seek_distances(np.zeros(1, dtype=np.int32), arr(7).astype(np.uint64))) == 0
    assert stats.percentiles(arr()) is None
    assert stats.share_below(arr(), 10) is None


def test_nearest_rank_percentiles_of_ten_values() -> None:
    d = arr(50, 10, 40, 20, 30, 100, 90, 60, 80, 70)
    # Rank ceil(p * 10 / 100): 0% -> 1st (min), 10% -> 1st, 15% -> 2nd, 95% -> 10th, 99.9% -> 10th.
    assert stats.percentiles(d, [0, 10, 15, 20, 50, 90, 95, 99.9, 100]) == [10, 10, 20, 20, 50, 90, 100, 100, 100]


def test_percentile_ranks_are_exact_for_decimal_points() -> None:
    # 99.9% of 1000 is exactly 999: floating point would say 999.0000000000001 and take the 1000th.
    assert stats.rank(99.9, 1000) == 999
    assert stats.rank(99.5, 200) == 199
    assert stats.rank(0, 5) == 1
    assert stats.rank(100, 5) == 5
    d = np.arange(1, 1001, dtype=np.int64)[::-1].copy()
    assert stats.percentiles(d, [99.9, 99.5, 50]) == [999, 995, 500]
    with pytest.raises(ValueError):
        stats.rank(100.5, 3)


def test_standard_points_are_the_studys() -> None:
    assert stats.PERCENTILES == (0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9)


@given(st.lists(st.integers(0, 10**12), min_size=1, max_size=300), st.sampled_from(stats.PERCENTILES))
def test_percentile_is_smallest_value_covering_p_percent(values: list[int], p: float) -> None:
    d = np.array(values, dtype=np.int64)
    (v,) = stats.percentiles(d, [p]) or [None]
    assert v in values
    assert np.count_nonzero(d <= v) * 100 >= p * len(values)  # covers p%
    smaller = d[d < v]
    if len(smaller):  # and nothing smaller does
        assert np.count_nonzero(d <= smaller.max()) * 100 < p * len(values)


def test_share_below_is_strict() -> None:
    two_mib = 2 << 20
    d = arr(0, two_mib - 1, two_mib, two_mib + 1)
    assert stats.share_below(d, two_mib) == 0.5
    assert stats.share_below(d, 1) == 0.25


def near_reference(packs: list[int], starts: list[int], ends: list[int], near: int) -> list[bool]:
    """The definition, online: an ordered set of the regions read so far per pack (merged when
    they touch), and for each access a look at the closest region at or before its reach."""
    regions: dict[int, SortedDict] = {}
    out = []
    for p, s, e in zip(packs, starts, ends, strict=True):
        read = regions.setdefault(p, SortedDict())  # start -> end, disjoint
        i = read.bisect_right(e + near)  # regions starting within reach on the right
        hit = i > 0 and read.peekitem(i - 1)[1] >= s - near
        out.append(hit)
        lo, hi = s, e
        while True:  # merge [s, e) with the regions it overlaps or touches
            j = read.bisect_right(hi)
            if j == 0:
                break
            rs, re_ = read.peekitem(j - 1)
            if re_ < lo:
                break
            del read[rs]
            lo, hi = min(lo, rs), max(hi, re_)
        read[lo] = hi
    return out


@st.composite
def traces(draw: st.DrawFn) -> tuple[list[int], list[int], list[int], int]:
    cuts = sorted(set(draw(st.lists(st.integers(0, 20_000), min_size=2, max_size=40))))
    entries = list(itertools.pairwise(cuts))
    if not entries:
        entries = [(0, 10)]
    picks = draw(st.lists(st.tuples(st.integers(0, 1), st.integers(0, len(entries) - 1)), min_size=1, max_size=80))
    near = draw(st.integers(0, 3000))
    return [p for p, _ in picks], [entries[i][0] for _, i in picks], [entries[i][1] for _, i in picks], near


@settings(max_examples=300, deadline=None)
@given(traces())
def test_near_read_matches_online_reference(trace: tuple[list[int], list[int], list[int], int]) -> None:
    packs, starts, ends, near = trace
    got = stats.near_read(np.array(packs), np.array(starts, dtype=np.uint64), np.array(ends, dtype=np.uint64), near)
    assert got.tolist() == near_reference(packs, starts, ends, near)


def test_near_read_by_hand() -> None:
    # Entries [0,100) [100,200) [5000,5100) [9000,9100); near = 4 KiB.
    starts = np.array([5000, 0, 100, 9000, 0, 5000], dtype=np.uint64)
    ends = np.array([5100, 100, 200, 9100, 100, 5100], dtype=np.uint64)
    packs = np.zeros(6, dtype=np.int32)
    flags = stats.near_read(packs, starts, ends, 4096)
    # first: nothing read yet; [0,100): 4900 from [5000..]: far; [100,200) touches [0,100);
    # [9000..): 3900 from [5000,5100): near; repeats are near.
    assert flags.tolist() == [False, False, True, True, True, True]
    assert stats.share_of(flags, packs) == 4 / 5
    # Another pack does not count as read.
    packs2 = np.array([0, 1, 1, 1, 1, 1], dtype=np.int32)
    flags2 = stats.near_read(packs2, starts, ends, 4096)
    assert flags2.tolist() == [False, False, True, False, True, True]


def test_cdf_is_exact_at_its_points() -> None:
    d = arr(0, 0, 1, 3, 1000, 2_000_000)
    points = stats.cdf(d)
    assert points[0] == (0, 2 / 6)
    assert points[-1] == (2_000_000, 1.0)
    for x, share in points:
        assert share == np.count_nonzero(d <= x) / len(d)
    xs = [x for x, _ in points]
    assert xs == sorted(set(xs))
    assert stats.cdf(arr()) == []
