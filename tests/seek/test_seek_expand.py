"""The model of Git's unpack_entry() and delta base cache, on hand-made chains and on a real
pack with deep chains."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers.gitrepo import git

from packorder.errors import CorruptPackError
from packorder.format import layout as layout_mod
from packorder.format.layout import NO_BASE, PackLayout
from packorder.seek.expand import expand, replay
from packorder.seek.trace import READS, REQUESTS, Trace

A, B, C, D, E = range(5)


def chain_layout(bases: list[int], sizes: list[int], name: str = "/p.pack") -> PackLayout:
    """Entries 100 bytes apart; entry i is a delta of bases[i] (or whole when NO_BASE)."""
    n = len(bases)
    offsets = np.arange(n, dtype=np.uint64) * 100 + 12
    kinds = np.array([3 if b == NO_BASE else 6 for b in bases], dtype=np.uint8)
    return PackLayout(
        Path(name),
        offsets,
        offsets + 100,
        kinds,
        np.array(sizes, dtype=np.uint64),
        np.array(sizes, dtype=np.uint64),
        np.full(n, 2, dtype=np.uint8),
        np.array(bases, dtype=np.int64),
        np.zeros((n, 20), dtype=np.uint8),
        b"\0" * 20,
    )


# A <- B <- C, A <- E, D alone.
FAMILY = chain_layout([NO_BASE, A, B, NO_BASE, A], [100, 100, 100, 50, 80])


def reads(layout: PackLayout, requests: list[int], limit: int = 96 << 20) -> list[int]:
    """The positions read to answer `requests` (positions), through one cache, in order."""
    trace = Trace(
        (layout.pack_path,),
        np.zeros(len(requests), dtype=np.int32),
        layout.offsets[np.array(requests, dtype=np.int64)],
        REQUESTS,
        "test",
    )
    got = expand(trace, [layout], limit)
    assert got.kind == READS
    return np.searchsorted(layout.offsets, got.offsets).tolist()


def test_chain_read_root_first_then_served_from_cache() -> None:
    # C: nothing cached -> read A, B, C (bases cached: A, B).
    # C again: B is cached -> only C. E: A is cached -> only E. A: cached -> nothing read.
    # D: whole, never a base -> itself.
    assert reads(FAMILY, [C]) == [A, B, C]
    assert reads(FAMILY, [C, C]) == [A, B, C, C]
    assert reads(FAMILY, [C, C, E, A, D]) == [A, B, C, C, E, D]


def test_hit_detaches_the_entry() -> None:
    # After A is served from the cache as the object itself, it is gone: E must read A again.
    assert reads(FAMILY, [C, A, E]) == [A, B, C, A, E]


def test_eviction_is_oldest_added_first_and_the_new_entry_stays() -> None:
    # Limit 150: C caches A (100) then B (200 > 150: A evicted). E: A is gone -> read A, E;
    # caching A evicts B. C: B gone, A cached -> B, C.
    assert reads(FAMILY, [C, E, C], limit=150) == [A, B, C, A, E, B, C]
    # Limit 10: every base is alone over the limit, yet the newest stays.
    assert reads(FAMILY, [C, C], limit=10) == [A, B, C, C]


def test_cache_keeps_bases_by_bytes() -> None:
    # Four chains root <- delta: (0 <- 1), (2 <- 3), (4 <- 5), (6 <- 7); bases of 100 bytes,
    # except 6: an empty object (a cached empty base is still cached). Room for 250 bytes.
    bases = [[NO_BASE, 0, NO_BASE, 2, NO_BASE, 4, NO_BASE, 6]]
    sizes = [[100, 9, 100, 9, 100, 9, 0, 9]]
    requests = [1, 3, 5, 1, 5, 3, 7, 7]
    reads, counts = replay(requests, [0] * len(requests), bases, sizes, 250)
    # 1: reads 0, 1; cache {0}. 3: {0, 2}. 5: adding 4 makes 300 > 250, 0 goes: {2, 4}.
    # 1 again: 0 is gone, read it; adding it evicts 2: {4, 0}. 5: 4 is cached, only 5 is read
    # (4 detached and added again: {0, 4}). 3: read 2, 3; 0 goes: {4, 2}. 7: reads 6, 7; the
    # empty base costs nothing: {4, 2, 6}. 7 again: 6 is cached.
    assert reads == [0, 1, 2, 3, 4, 5, 0, 1, 5, 2, 3, 6, 7, 7]
    assert counts == [2, 2, 2, 2, 1, 2, 2, 1]


def test_packs_have_separate_keys_but_one_budget() -> None:
    p0 = FAMILY
    p1 = chain_layout([NO_BASE, A, B, NO_BASE, A], [100, 100, 100, 50, 80], "/q.pack")
    trace = Trace(
        (p0.pack_path, p1.pack_path),
        np.array([0, 1, 0], dtype=np.int32),
        np.array([p0.offsets[C], p1.offsets[C], p0.offsets[C]], dtype=np.uint64),
        REQUESTS,
        "test",
    )
    got = expand(trace, [p0, p1], 96 << 20)
    assert got.pack_index.tolist() == [0, 0, 0, 1, 1, 1, 0]
    assert np.searchsorted(p0.offsets, got.offsets).tolist() == [A, B, C, A, B, C, C]
    # With room for two bases, pack 1's bases push both of pack 0's out; with room for three,
    # pack 0's A goes (the oldest) and its B is still there.
    got = expand(trace, [p0, p1], 200)
    assert np.searchsorted(p0.offsets, got.offsets).tolist() == [A, B, C, A, B, C, A, B, C]
    got = expand(trace, [p0, p1], 300)
    assert np.searchsorted(p0.offsets, got.offsets).tolist() == [A, B, C, A, B, C, C]


def test_a_delta_cycle_is_reported() -> None:
    cyclic = chain_layout([1, 0], [10, 10])
    trace = Trace((cyclic.pack_path,), np.zeros(1, dtype=np.int32), cyclic.offsets[:1], REQUESTS, "t")
    with pytest.raises(CorruptPackError):
        expand(trace, [cyclic], 1 << 20)


def test_only_requests_expand() -> None:
    trace = Trace((FAMILY.pack_path,), np.zeros(1, dtype=np.int32), FAMILY.offsets[:1], READS, "t")
    with pytest.raises(ValueError):
        expand(trace, [FAMILY], 1 << 20)


@pytest.fixture(scope="module")
def deep(packs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> PackLayout:
    """The fixture's pack with deep delta chains, with its index."""
    pack = tmp_path_factory.mktemp("deep") / packs["deep"].name
    shutil.copy(packs["deep"], pack)
    git(None, "index-pack", str(pack))
    return layout_mod.load(pack)


def test_real_pack_each_cold_request_reads_its_whole_chain(deep: PackLayout) -> None:
    layout = deep
    depths = layout.depths()
    assert depths.max() > 5  # the fixture has deep chains
    for pos in np.argsort(-depths, kind="stable")[:20].tolist():
        trace = Trace((layout.pack_path,), np.zeros(1, dtype=np.int32), layout.offsets[[pos]], REQUESTS, "t")
        got = np.searchsorted(layout.offsets, expand(trace, [layout], 96 << 20).offsets).tolist()
        assert len(got) == depths[pos] + 1
        assert got[-1] == pos
        for below, above in itertools.pairwise(got):
            assert layout.base[above] == below  # each read is the base of the next


def test_real_pack_every_object_in_pack_order(deep: PackLayout) -> None:
    # Asking for every object once, in pack order, with a cache big enough for all: an object
    # asked for is not cached (only bases used to apply a delta are), so a base is read when
    # asked for and once more for its first delta, which caches it for the others. Bases come
    # before their deltas in the pack, so nothing else is ever read twice.
    layout = deep
    trace = Trace((layout.pack_path,), np.zeros(layout.count, dtype=np.int32), layout.offsets.copy(), REQUESTS, "t")
    got = np.searchsorted(layout.offsets, expand(trace, [layout], 1 << 40).offsets)
    is_base = np.zeros(layout.count, dtype=np.int64)
    is_base[layout.base[layout.base != NO_BASE]] = 1
    assert is_base.sum() > 10
    assert np.bincount(got, minlength=layout.count).tolist() == (1 + is_base).tolist()
