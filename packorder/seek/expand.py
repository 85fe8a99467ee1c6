"""From the objects Git asked for to the entries it read: delta chains and the delta base cache.

`GIT_TRACE_PACK_ACCESS` logs one line per call of `unpack_entry()` (packfile.c), at the object
asked for. To produce a delta object Git reads more than that entry, and less than its whole
chain: its delta base cache holds recently used bases. `unpack_entry()` works like this:

1. Walk down the chain from the object asked for. If an entry (the object itself first) is in
   the cache, take it from there, detaching it from the cache; otherwise keep walking to the
   chain root, which is read.
2. Going back up, read each delta and apply it to the base below; the base just used goes into
   the cache (`add_delta_base_cache`): its size is added, and least recently added entries are
   evicted until the total is within `core.deltaBaseCacheLimit` again; the new entry always
   stays. The object finally produced is not cached. (Git checks that a base is not cached
   already, for its threads; in one sequence of calls it never is: it was just read or taken.)

`expand` replays a trace of requests through that model and returns the entries read, in the
order Git reads their data (root first, then each delta up to the object). Calls that Git served
from the cache without `unpack_entry()` (`packed_object_info`) are neither logged nor change the
cache, so the replay of the logged calls alone follows the same cache states.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from packorder.format.layout import NO_BASE, PackLayout
from packorder.progress import ProgressCallback
from packorder.seek.trace import READS, REQUESTS, Trace
from packorder.settings import DEFAULT_DELTA_BASE_CACHE_LIMIT


def replay(
    requests: Sequence[int],
    packs: Sequence[int],
    bases: Sequence[Sequence[int]],
    sizes: Sequence[Sequence[int]],
    cache_limit: int,
    progress: ProgressCallback | None = None,
) -> tuple[list[int], list[int]]:
    """`unpack_entry()` for each request (pack position `requests[i]` in pack `packs[i]`),
    through one delta base cache: the positions read, in order, and how many each request read.

    `bases[p][i]` is the position of the delta base of entry i of pack p (NO_BASE if none),
    `sizes[p][i]` the size of the object it stands for. The cache maps (pack, position) to that
    size, oldest first; taking an entry detaches it, so least recently added is least recently
    used. The loop is flat (no calls per step): it is the analyzer's hot loop.
    """
    cache: OrderedDict[int, int] = OrderedDict()
    pop, evict = cache.pop, cache.popitem
    used = 0
    reads: list[int] = []
    read = reads.append
    counts: list[int] = []
    title = "Expanding delta chains"
    step = 1 << 16
    for start in range(0, len(requests), step):
        if progress is not None:
            progress(title, start, len(requests))
        for pos, p in zip(requests[start : start + step], packs[start : start + step], strict=True):
            base, size, tag = bases[p], sizes[p], p << 32
            before = len(reads)
            chain: list[int] = []  # deltas above the entry served, top first
            cur = pos
            while True:  # walk down: the cache first, then the entry's base
                got = pop(tag | cur, None)
                if got is not None:
                    used -= got  # served from the cache (detached)
                    break
                below = base[cur]
                if below == NO_BASE:
                    read(cur)  # the chain root (or a delta whose base is not in this pack): read
                    break
                chain.append(cur)
                cur = below
            for delta in reversed(chain):  # back up: read each delta, cache the base it applies to
                read(delta)
                got = size[cur]
                used += got
                while used > cache_limit and cache:
                    used -= evict(last=False)[1]
                cache[tag | cur] = got  # the newest entry stays, even alone over the limit
                cur = delta
            counts.append(len(reads) - before)
    if progress is not None:
        progress(title, len(requests), len(requests))
    return reads, counts


def check_acyclic(layout: PackLayout) -> None:
    """Raise CorruptPackError if following delta bases can loop. Only a REF_DELTA whose base
    comes later in the pack can start a loop (an OFS_DELTA's base is always earlier)."""
    if np.any(layout.base > np.arange(layout.count)):
        layout.depths()  # raises on a cycle


def expand(
    trace: Trace,
    layouts: Sequence[PackLayout],
    cache_limit: int = DEFAULT_DELTA_BASE_CACHE_LIMIT,
    progress: ProgressCallback | None = None,
) -> Trace:
    """The entries Git read to answer the requests of `trace` (one layout per pack of the
    trace), through one delta base cache of `cache_limit` bytes shared by all packs."""
    if trace.kind != REQUESTS:
        raise ValueError("only a trace of requests can be expanded")
    n = len(trace)
    positions = trace.positions
    if positions is None:
        positions = np.zeros(n, dtype=np.int64)
        for p, layout in enumerate(layouts):
            mine = trace.pack_index == p
            positions[mine] = layout.position_of_offset(trace.offsets[mine])
    # A whole object that is no delta's base is never cached: its request reads it alone, and
    # leaves the cache as it was. Only the other requests go through the model.
    simple = np.ones(n, dtype=bool)
    for p, layout in enumerate(layouts):
        check_acyclic(layout)
        mine = trace.pack_index == p if len(layouts) > 1 else slice(None)
        pos = positions[mine]
        is_base = np.zeros(layout.count, dtype=bool)
        is_base[layout.base[layout.base != NO_BASE]] = True
        simple[mine] = (layout.base[pos] == NO_BASE) & ~is_base[pos]
    todo = np.flatnonzero(~simple)
    bases = [array("q", layout.base.astype(np.int64).tobytes()) for layout in layouts]
    sizes = [array("Q", layout.object_sizes.astype(np.uint64).tobytes()) for layout in layouts]
    reads, counts = replay(
        positions[todo].tolist(), trace.pack_index[todo].tolist(), bases, sizes, cache_limit, progress
    )
    lengths = np.ones(n, dtype=np.int64)
    lengths[todo] = counts
    # Requests read themselves alone (simple) or what the model read, in trace order.
    out_pack = np.repeat(trace.pack_index, lengths)
    out_pos = np.repeat(positions, lengths)
    out_pos[np.repeat(~simple, lengths)] = np.array(reads, dtype=np.int64)
    offsets = np.zeros(len(out_pos), dtype=np.uint64)
    for p, layout in enumerate(layouts):
        mine = out_pack == p if len(layouts) > 1 else slice(None)
        offsets[mine] = layout.offsets[out_pos[mine]]
    return Trace(trace.packs, out_pack.astype(np.int32), offsets, READS, f"{trace.source}, expanded", positions=out_pos)
