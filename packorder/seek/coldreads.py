"""How many reads a workload would send to the disk, cold: a model of the kernel's read-around
for memory-mapped files (Git maps its packs), to judge a layout's cold time from a trace.

On a page fault in a mapping, Linux reads `read_ahead_kb` around the faulting page (half
before, half after) in one request, unless the access pattern looks random. So a cold run
costs one disk read per page it touches that no earlier read brought in; on a slow disk
(`experiment --cold-iops`) that count, not the distance of the seeks, is what the wall time
follows. The model ignores the asynchronous readahead of long sequential runs and the
kernel's giving up read-around after many misses: it is for comparing layouts on one trace,
and it ranked them as the throttled cold runs did (docs/locality.md).
"""

from __future__ import annotations

import numpy as np

PAGE = 4096


def disk_reads(packs: np.ndarray, starts: np.ndarray, ends: np.ndarray, readahead: int = 128 << 10) -> int:
    """Reads the kernel would send for accesses `(pack, start, end)` in time order (end
    exclusive), every file cold at the start, each fault reading `readahead` bytes around
    its page."""
    if readahead < PAGE:
        raise ValueError("the read-around window is at least a page")
    half = readahead // PAGE // 2
    span = 2 * half
    loaded: dict[int, bytearray] = {}
    reads = 0
    for pack, start, end in zip(packs.tolist(), starts.tolist(), ends.tolist(), strict=True):
        first, last = start // PAGE, (max(end, start + 1) - 1) // PAGE
        pages = loaded.get(pack)
        if pages is None or len(pages) <= last + span:
            grown = bytearray(max(2 * (last + span + 1), 1024))
            if pages is not None:
                grown[: len(pages)] = pages
            pages = loaded[pack] = grown
        for page in range(first, last + 1):
            if not pages[page]:
                reads += 1
                low = max(0, page - half)
                pages[low : low + span] = b"\x01" * span
    return reads
