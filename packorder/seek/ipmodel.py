"""A model of `git index-pack`'s second pass: which pack entries it reads, in which order, for a
pack laid out in a given order. The simulator uses it to judge the index-pack workload under
an order without writing the pack: unlike the other workloads, index-pack's reads follow the
pack's own order (roots are taken in pack order), so a recorded trace cannot just be re-laid.

What Git (2.47 and earlier; `builtin/index-pack.c`, `threaded_second_pass`) does, and this
model replays:

- Whole objects are dispatched in pack order. One with delta children is read (`pread`) and
  pushed on a shared LIFO work stack; one without children is not read again.
- A thread with work takes the next child of the base on top of the stack: REF_DELTA children
  first, then OFS_DELTA children, each in pack order. A base that has handed out its last
  child moves to a "done" list. The base's data is made present (`get_base_data`): when it
  was freed, the nearest ancestor that still has data (or the chain root) is read and every
  delta below it read and applied again. Then the child's delta is read and applied.
- A child with children of its own is pushed on the stack, counted in the cache, the cache is
  pruned, and the child's data is freed right away (so its first child re-reads it; Git 2.55
  keeps it). A child without children is dropped, and each ancestor whose last descendant it
  was is freed and removed.
- The cache (`core.deltaBaseCacheLimit` x threads) is pruned oldest first, the done list
  before the work stack, skipping bases a thread is using.

Each read is one access (the trace source counts the chunks of one entry once). With one
thread the model reproduces Git's reads exactly (checked against strace on libgit2's 161,981
objects). With several threads the interleaving depends on timing; the model runs the threads
as events: taking work and finishing it hold one lock, resolving a child costs a fixed step
plus a cost per byte of the object made. That matched Git's measured share of seeks under
2 MiB within a tenth of a point on the packs we measured (docs/locality.md).
"""

from __future__ import annotations

import heapq
import os
from collections import OrderedDict

import numpy as np

from packorder.format.layout import PackLayout
from packorder.format.pack import OBJ_REF_DELTA
from packorder.settings import DEFAULT_DELTA_BASE_CACHE_LIMIT

STEP = 1.0  # time to resolve one child, besides its bytes
PER_BYTE = 1e-4  # time per byte of the object made (inflate, apply, hash)
LOCK = 0.1  # time a thread holds the work lock to take or finish work


def git_threads(cpus: int | None = None) -> int:
    """The thread count git index-pack picks when pack.threads is not set (`cmd_index_pack`)."""
    n = cpus if cpus is not None else (os.cpu_count() or 1)
    if n < 4:
        return n
    if n < 6:
        return 3
    if n < 40:
        return n // 2
    return 20


class _Base:
    """Git's `struct base_data`: a resolved object that may still have children to hand out."""

    __slots__ = ("data", "id", "next", "obj", "parent", "remaining", "retain", "stop")

    def __init__(self, obj: int, parent: _Base | None, first: int, stop: int, ident: int) -> None:
        self.obj = obj
        self.parent = parent
        self.data = False
        self.next = first  # next child to hand out (index into the sorted child list)
        self.stop = stop
        self.remaining = stop - first  # children whose subtree is not finished
        self.retain = 0
        self.id = ident


class _SecondPass:
    def __init__(self, layout: PackLayout, cache_limit: int, threads: int) -> None:
        n = layout.count
        base = layout.base.astype(np.int64)
        has = np.flatnonzero(base >= 0)
        not_ref = layout.kinds[has] != OBJ_REF_DELTA
        # Children of each base: REF_DELTA ones first, then OFS_DELTA, each in pack order.
        kids = has[np.lexsort((has, not_ref, base[has]))]
        self.child: list[int] = kids.tolist()
        self.start: list[int] = np.searchsorted(base[kids], np.arange(n + 1)).tolist()
        self.size: list[int] = layout.object_sizes.astype(np.int64).tolist()
        self.roots: list[int] = np.flatnonzero(~layout.is_delta).tolist()
        self.limit = cache_limit * threads
        self.used = 0
        self.work: OrderedDict[int, _Base] = OrderedDict()  # last = top of the stack
        self.done: OrderedDict[int, _Base] = OrderedDict()
        self.reads: list[int] = []
        self.dispatched = 0
        self.made = 0

    def _new(self, obj: int, parent: _Base | None) -> _Base:
        self.made += 1
        return _Base(obj, parent, self.start[obj], self.start[obj + 1], self.made)

    def _free(self, b: _Base) -> None:
        if b.data:
            b.data = False
            self.used -= self.size[b.obj]

    def _prune(self, retain: _Base | None) -> None:
        if self.used <= self.limit:
            return
        for chain in (self.done, self.work):
            for b in list(chain.values()):
                if b is retain or b.retain or not b.data:
                    continue
                self._free(b)
                if self.used <= self.limit:
                    return

    def _load(self, b: _Base) -> None:
        """Git's get_base_data: read and apply what is needed to give `b` its data again."""
        if b.data:
            return
        chain = []
        c = b
        while c.parent is not None and not c.data:
            chain.append(c)
            c = c.parent
        if not chain:
            self.reads.append(c.obj)
            c.data = True
            self.used += self.size[c.obj]
            self._prune(c)
        for c in reversed(chain):
            assert c.parent is not None
            self._load(c.parent)
            self.reads.append(c.obj)
            c.data = True
            self.used += self.size[c.obj]
            self._prune(c)

    def take(self) -> tuple[int, _Base | None] | None:
        """Under the lock: the next object to resolve and its base, or None when done."""
        if not self.work:
            if self.dispatched >= len(self.roots):
                return None
            self.dispatched += 1
            return self.roots[self.dispatched - 1], None
        parent = next(reversed(self.work.values()))
        obj = self.child[parent.next]
        parent.next += 1
        if parent.next >= parent.stop:
            del self.work[parent.id]
            self.done[parent.id] = parent
        self._load(parent)
        parent.retain += 1
        return obj, parent

    def resolve(self, obj: int, parent: _Base | None) -> _Base:
        """Outside the lock: read the entry (a root only if it has children)."""
        child = self._new(obj, parent)
        if parent is not None or child.remaining:
            self.reads.append(obj)
            child.data = child.remaining > 0
        return child

    def finish(self, child: _Base, parent: _Base | None) -> None:
        """Under the lock: queue a child that has children, or free what it completes."""
        if parent is not None:
            parent.retain -= 1
        if child.data:
            self.work[child.id] = child
            self.used += self.size[child.obj]
            self._prune(None)
            self._free(child)
            return
        p = parent
        while p is not None:
            p.remaining -= 1
            if p.remaining:
                break
            self._free(p)
            self.work.pop(p.id, None)
            self.done.pop(p.id, None)
            p = p.parent


def index_pack_reads(
    layout: PackLayout, cache_limit: int = DEFAULT_DELTA_BASE_CACHE_LIMIT, threads: int = 1
) -> np.ndarray:
    """Pack positions of the entries `git index-pack` reads in its second pass over a pack with
    `layout`, in order, with `threads` threads and a delta base cache of `cache_limit` bytes
    per thread."""
    if threads < 1:
        raise ValueError("threads must be at least 1")
    work = _SecondPass(layout, cache_limit, threads)
    size = work.size
    # Events: (time, thread, pending work or None). A thread without pending work takes some
    # under the lock; with pending work, it finishes it under the lock.
    events: list[tuple[float, int, tuple[_Base, _Base | None] | None]] = [(0.0, t, None) for t in range(threads)]
    lock_free = 0.0
    while events:
        now, thread, pending = heapq.heappop(events)
        now = max(now, lock_free)
        lock_free = now + LOCK
        if pending is None:
            got = work.take()
            if got is None:
                continue  # no work on the stack and nothing left to dispatch: the thread ends
            obj, parent = got
            child = work.resolve(obj, parent)
            heapq.heappush(events, (lock_free + STEP + PER_BYTE * size[obj], thread, (child, parent)))
        else:
            work.finish(*pending)
            heapq.heappush(events, (lock_free, thread, None))
    return np.array(work.reads, dtype=np.int64)
