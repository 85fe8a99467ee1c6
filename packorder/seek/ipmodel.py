"""A model of `git index-pack`'s second pass: which pack entries it reads, in which order, for a
pack laid out in a given order. The simulator uses it to judge the index-pack workload under
an order without writing the pack: unlike the other workloads, index-pack's reads follow the
pack's own order (roots are taken in pack order), so a recorded trace cannot just be re-laid.

What Git (`builtin/index-pack.c`, `threaded_second_pass`) does, and this model replays:

- Whole objects are dispatched in pack order. One with delta children is read (`pread`) and
  pushed on a shared LIFO work stack; one without children is not read again.
- A thread with work takes the next child of the base on top of the stack: REF_DELTA children
  first, then OFS_DELTA children, each in pack order. A base that has handed out its last
  child moves to a "done" list. The base's data is made present (`get_base_data`): when it
  was freed, the nearest ancestor that still has data (or the chain root) is read and every
  delta below it read and applied again. Then the child's delta is read and applied.
- A child with children of its own is pushed on the stack, counted in the cache, the cache is
  pruned, and before Git 2.55 the child's data is freed right away (so its first child
  re-reads it); Git 2.55 keeps it, for the pruning to drop when the cache is full. A child
  without children is dropped, and each ancestor whose last descendant it was is freed and
  removed.
- The cache (`core.deltaBaseCacheLimit` x threads) is pruned oldest first, the done list
  before the work stack, skipping bases a thread is using.

Each read is one access (the trace source counts the chunks of one entry once). With one
thread the model reproduces Git's reads exactly (checked against strace on libgit2's 161,981
objects). With several threads the interleaving depends on timing; the model runs the threads
as events: taking work and finishing it hold one lock, resolving a child costs a fixed step
plus a cost per byte of the object made. That matched Git's measured share of seeks under
2 MiB within a tenth of a point on the packs we measured (docs/locality.md).

The model runs natively (native/src/seek/second_pass.rs): fleet triage runs it on every
pack of every repository, and in Python it took 0.4-0.7 s on a pack of 200,000 objects.
"""

from __future__ import annotations

import os

import numpy as np

from packorder import _native
from packorder.format.layout import PackLayout
from packorder.format.pack import OBJ_REF_DELTA
from packorder.gitcmd import git_version
from packorder.settings import DEFAULT_DELTA_BASE_CACHE_LIMIT


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


def keeps_child_bases(version: tuple[int, ...] | None = None) -> bool:
    """Whether Git `version` (default: the Git in use) keeps a queued child's data: 2.55 and
    later."""
    return (git_version() if version is None else version) >= (2, 55)


def index_pack_reads(
    layout: PackLayout,
    cache_limit: int = DEFAULT_DELTA_BASE_CACHE_LIMIT,
    threads: int = 1,
    version: tuple[int, ...] | None = None,
) -> np.ndarray:
    """Pack positions of the entries `git index-pack` reads in its second pass over a pack with
    `layout`, in order, with `threads` threads and a delta base cache of `cache_limit` bytes
    per thread, as Git `version` reads them (default: the Git in use)."""
    if threads < 1:
        raise ValueError("threads must be at least 1")
    n = layout.count
    base = layout.base.astype(np.int64)
    has = np.flatnonzero(base >= 0)
    not_ref = layout.kinds[has] != OBJ_REF_DELTA
    # Children of each base: REF_DELTA ones first, then OFS_DELTA, each in pack order.
    kids = has[np.lexsort((has, not_ref, base[has]))]
    start = np.searchsorted(base[kids], np.arange(n + 1))
    roots = np.flatnonzero(~layout.is_delta)
    reads = _native.index_pack_reads(
        kids.astype(np.int64).tobytes(),
        start.astype(np.int64).tobytes(),
        layout.object_sizes.astype(np.uint64).tobytes(),
        roots.astype(np.int64).tobytes(),
        cache_limit,
        threads,
        keeps_child_bases(version),
    )
    return np.frombuffer(reads, dtype=np.int64)
