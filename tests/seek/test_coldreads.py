"""The cold-read model (`seek.coldreads`): one disk read per fault, `readahead` bytes around
the faulting page, per file."""

from __future__ import annotations

import numpy as np
import pytest

from packorder.seek.coldreads import PAGE, disk_reads

KIB = 1024


def reads(accesses: list[tuple[int, int, int]], readahead: int = 128 * KIB) -> int:
    packs, starts, ends = (np.array(column, dtype=np.int64) for column in zip(*accesses, strict=True))
    return disk_reads(packs, starts, ends, readahead)


def test_a_fault_brings_the_window_around_its_page() -> None:
    assert reads([(0, 0, 100)]) == 1
    # The window of a fault at the start of the file is [0, 128 KiB): within it, nothing more.
    assert reads([(0, 0, 100), (0, 60 * KIB, 61 * KIB), (0, 127 * KIB, 128 * KIB)]) == 1
    # A fault at 200 KiB reads [136 KiB, 264 KiB); 130 KiB lies between the two windows.
    assert reads([(0, 0, 100), (0, 200 * KIB, 201 * KIB), (0, 140 * KIB, 141 * KIB)]) == 2
    assert reads([(0, 0, 100), (0, 200 * KIB, 201 * KIB), (0, 130 * KIB, 131 * KIB)]) == 3


def test_an_entry_across_pages_and_files_apart() -> None:
    assert reads([(0, PAGE - 10, PAGE + 10)]) == 1
    assert reads([(0, 0, 100), (1, 0, 100), (0, 50, 60)]) == 2
    # A far entry longer than the window faults every half window past its first: pages 256,
    # 272, 288 and 304 of the 50 it spans.
    assert reads([(0, 1 << 20, (1 << 20) + 200 * KIB)]) == 4


def test_a_sequential_scan_faults_every_half_window() -> None:
    scan = [(0, at, at + PAGE) for at in range(0, 1 << 20, PAGE)]
    # [0, 32) pages, then each fault at page p brings [p - 16, p + 16): a fault every 16 pages.
    assert reads(scan) == 1 + (256 - 32) // 16
    assert reads(scan, readahead=1 << 20) == 1 + (256 - 256) // 128


def test_the_window_is_at_least_a_page() -> None:
    with pytest.raises(ValueError):
        reads([(0, 0, 1)], readahead=PAGE - 1)
