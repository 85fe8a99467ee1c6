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
   stays. The object finally produced is not cached.

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

from packorder.errors import CorruptPackError
from packorder.format.layout import NO_BASE, PackLayout
from packorder.progress import ProgressCallback
from packorder.seek.trace import READS, REQUESTS, Trace

DEFAULT_CACHE_LIMIT = 96 << 20  # Git's core.deltaBaseCacheLimit


class DeltaBaseCache:
    """Git's delta base cache as a size model: keys of cached bases, LRU by insertion, a byte
    budget. A hit detaches the entry, so least recently *added* is least recently used."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.entries: OrderedDict[int, int] = OrderedDict()  # key -> object size, oldest first

    def __contains__(self, key: int) -> bool:
        return key in self.entries

    def take(self, key: int) -> bool:
        """Detach `key` if cached (Git serves the base from the cache); whether it was."""
        size = self.entries.pop(key, None)
        if size is None:
            return False
        self.used -= size
        return True

    def add(self, key: int, size: int) -> None:
        """Cache a base just used; evict the oldest entries while over the limit first."""
        if key in self.entries:
            return
        self.used += size
        while self.used > self.limit and self.entries:
            _, old = self.entries.popitem(last=False)
            self.used -= old
        self.entries[key] = size


def unpack_entry(
    cache: DeltaBaseCache, key_base: int, pos: int, base: Sequence[int], sizes: Sequence[int], limit: int
) -> list[int]:
    """The pack positions one `unpack_entry()` of the entry at `pos` reads, in the order read.
    `base[i]` is the position of entry i's delta base (NO_BASE if none), `sizes[i]` the size of
    the object it stands for; cache keys are `key_base + position`."""
    chain: list[int] = []  # deltas above the entry served (from the cache or read), top first
    cur = pos
    while not cache.take(key_base + cur):
        below = base[cur]
        if below == NO_BASE:
            read = [cur]
            break
        chain.append(cur)
        cur = below
        if len(chain) > limit:
            raise CorruptPackError("delta chain does not end (a cycle of REF_DELTA entries?)", None)
    else:
        read = []
    for delta in reversed(chain):
        read.append(delta)
        cache.add(key_base + cur, sizes[cur])
        cur = delta
    return read


def expand(
    trace: Trace,
    layouts: Sequence[PackLayout],
    cache_limit: int = DEFAULT_CACHE_LIMIT,
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
    simple = np.ones(n, dtype=bool)
    for p, layout in enumerate(layouts):
        mine = trace.pack_index == p if len(layouts) > 1 else slice(None)
        pos = positions[mine]
        # A whole object that is no delta's base is never cached: its request reads it alone.
        is_base = np.zeros(layout.count, dtype=bool)
        is_base[layout.base[layout.base != NO_BASE]] = True
        simple[mine] = (layout.base[pos] == NO_BASE) & ~is_base[pos]
    title = "Expanding delta chains"
    bases = [array("q", layout.base.astype(np.int64).tobytes()) for layout in layouts]
    sizes = [array("Q", layout.object_sizes.astype(np.uint64).tobytes()) for layout in layouts]
    cache = DeltaBaseCache(cache_limit)
    lengths = np.ones(n, dtype=np.int64)
    reads: list[int] = []
    todo = np.flatnonzero(~simple)
    packs_of = trace.pack_index[todo].tolist()
    limits = [layout.count for layout in layouts]
    for done, (i, p, pos) in enumerate(zip(todo.tolist(), packs_of, positions[todo].tolist(), strict=True)):
        got = unpack_entry(cache, p << 32, pos, bases[p], sizes[p], limits[p])
        lengths[i] = len(got)
        reads.extend(got)
        if progress is not None and done & 0xFFFF == 0:
            progress(title, done, len(todo))
    if progress is not None:
        progress(title, len(todo), len(todo))
    # Requests read themselves alone (simple) or the list the model produced, in trace order.
    out_pack = np.repeat(trace.pack_index, lengths)
    out_pos = np.repeat(positions, lengths)
    out_pos[np.repeat(~simple, lengths)] = np.array(reads, dtype=np.int64)
    offsets = np.zeros(len(out_pos), dtype=np.uint64)
    for p, layout in enumerate(layouts):
        mine = out_pack == p if len(layouts) > 1 else slice(None)
        offsets[mine] = layout.offsets[out_pos[mine]]
    return Trace(trace.packs, out_pack.astype(np.int32), offsets, READS, f"{trace.source}, expanded", positions=out_pos)
