"""Parsing the two trace sources: Git's pack access log and strace's pread64 lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packorder.errors import PackError
from packorder.format.layout import PackLayout
from packorder.seek import pack_access, pread
from packorder.seek.trace import READS, REQUESTS, Trace, concat

PACK_A = b"/repo/.git/objects/pack/pack-" + b"a" * 40 + b".pack"
PACK_B = b"/repo/.git/objects/pack/pack-" + b"b" * 40 + b".pack"


def test_bare_lines() -> None:
    data = PACK_A + b" 12\n" + PACK_A + b" 4000\n" + PACK_B + b" 99\n" + PACK_A + b" 12\n"
    paths, index, offsets = pack_access.parse(data)
    assert paths == [PACK_A, PACK_B]
    assert index.tolist() == [0, 0, 1, 0]
    assert offsets.tolist() == [12, 4000, 99, 12]
    assert pack_access._parse_fast(data) is not None  # the fast path took it


def test_prefixed_lines_as_git_writes_them_without_bare() -> None:
    data = (
        b"03:42:01.417535 packfile.c:1668         " + PACK_A + b" 40215\n"
        b"03:42:01.417676 packfile.c:1668         " + PACK_B + b" 41142\n"
    )
    paths, index, offsets = pack_access.parse(data)
    assert paths == [PACK_A, PACK_B]
    assert index.tolist() == [0, 1]
    assert offsets.tolist() == [40215, 41142]


def test_paths_with_spaces_and_short_paths() -> None:
    spaced = b"/my repo/objects/pack/pack-1.pack"
    data = spaced + b" 12\n" + b"/p.pack 7\n" + spaced + b" 8\n"
    assert pack_access._parse_fast(data) is not None
    paths, index, offsets = pack_access.parse(data)
    assert paths == [spaced, b"/p.pack"]
    assert index.tolist() == [0, 1, 0]
    assert offsets.tolist() == [12, 7, 8]


def test_prefixed_and_malformed_logs_take_the_exact_parser() -> None:
    assert pack_access._parse_fast(b"03:42:01.417535 packfile.c:1668 " + PACK_A + b" 1\n") is None
    assert pack_access._parse_fast(PACK_A + b" 12\n" + PACK_A + b"\n") is None
    assert pack_access._parse_fast(PACK_A + b" 123456789012345678901\n") is None


def test_big_offsets_and_empty_log() -> None:
    data = PACK_A + b" 9223372036854775807\n" + PACK_A + b" 4294967296\n"
    assert pack_access.parse(data)[2].tolist() == [2**63 - 1, 2**32]
    paths, index, offsets = pack_access.parse(b"")
    assert paths == [] and len(index) == 0 and len(offsets) == 0


def test_a_line_that_is_not_an_access_is_an_error() -> None:
    with pytest.raises(PackError, match="line 2"):
        pack_access.parse(PACK_A + b" 12\nwarning: something else\n")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([PACK_A, PACK_B, PACK_A.replace(b"/repo", b"/rep0"), b"/tmp/x y/pack-z.pack", b"p"]),
            st.integers(0, 10**19 - 1),
        ),
        min_size=1,
        max_size=60,
    )
)
def test_fast_and_exact_parsers_agree(lines: list[tuple[bytes, int]]) -> None:
    data = b"".join(p + b" " + str(o).encode() + b"\n" for p, o in lines)
    paths, index, offsets = pack_access.parse(data)
    want_paths, want_index, want_offsets = pack_access._parse_lines(data)
    assert paths == want_paths
    assert index.tolist() == want_index.tolist()
    assert offsets.tolist() == want_offsets.tolist() == [o for _, o in lines]
    assert [paths[i] for i in index] == [p for p, _ in lines]


def test_paths_of_one_length_and_ending() -> None:
    a = b"/aaaa/objects/pack/pack-" + b"c" * 40 + b".pack"
    b = b"/bbbb/objects/pack/pack-" + b"c" * 40 + b".pack"
    data = a + b" 1\n" + b + b" 2\n" + a + b" 3\n"
    paths, index, _ = pack_access.parse(data)
    assert paths == [a, b]
    assert index.tolist() == [0, 1, 0]


def test_to_trace_resolves_relative_paths(tmp_path: Path) -> None:
    trace = pack_access.to_trace(b".git/objects/pack/pack-0123456789abcdef.pack 12\n", tmp_path)
    assert trace.packs == ((tmp_path / ".git/objects/pack/pack-0123456789abcdef.pack").resolve(),)
    assert trace.kind == REQUESTS and len(trace) == 1


STRACE = b"""\
19185 pread64(3, ""..., 784, 64) = 784
19251 pread64(5, ""..., 253, 83353) = 253
19250 pread64(4,  <unfinished ...>
19251 pread64(5, ""..., 65536, 1000) = 65536
19250 <... pread64 resumed>""..., 627, 55374) = 627
19251 pread64(5, ""..., 65536, 66536) = 65536
19251 pread64(5, ""..., 100, 132072) = 100
19250 pread64(4, ""..., 10, 500) = -1 EINTR (Interrupted system call)
19250 pread64(4, "", 10, 999999) = 0
"""


def test_strace_lines_including_resumed_calls() -> None:
    pids, offsets, counts = pread.parse(STRACE)
    assert pids.tolist() == [19185, 19251, 19251, 19250, 19251, 19251]
    assert offsets.tolist() == [64, 83353, 1000, 55374, 66536, 132072]
    assert counts.tolist() == [784, 253, 65536, 627, 65536, 100]
    assert len(pread.parse(b"")[0]) == 0


def fake_layout(starts: list[int], end: int) -> PackLayout:
    n = len(starts)
    offsets = np.array(starts, dtype=np.uint64)
    ends = np.append(offsets[1:], np.uint64(end))
    zeros = np.zeros(n, dtype=np.uint64)
    return PackLayout(
        Path("/x.pack"),
        offsets,
        ends,
        np.full(n, 3, dtype=np.uint8),
        zeros,
        zeros,
        np.full(n, 2, dtype=np.uint8),
        np.full(n, -1, dtype=np.int64),
        np.zeros((n, 20), dtype=np.uint8),
        b"\0" * 20,
    )


def test_preads_map_to_entries_and_chunks_of_one_read_count_once() -> None:
    layout = fake_layout([12, 900, 1000, 200_000], 300_000)
    pids = np.array([1, 1, 2, 1, 1, 2, 1, 1], dtype=np.int64)
    offsets = np.array([914, 1000, 1010, 66536, 132072, 250, 5, 300_000], dtype=np.uint64)
    counts = np.array([86, 65536, 20, 65536, 100, 10, 7, 20], dtype=np.uint64)
    got = layout.offsets[pread.entry_reads(pids, offsets, counts, layout)]
    # 914 -> entry 900; 1000 -> entry 1000 (a new read); thread 2 at 1010 -> entry 1000 (its own
    # read); 66536 and 132072 continue thread 1's read of entry 1000; 250 -> entry 12;
    # 5 (the pack header) and 300000 (the trailer) are in no entry.
    assert got.tolist() == [900, 1000, 1000, 12]


def test_concat_renumbers_packs() -> None:
    a = Trace((Path("/a"),), np.zeros(2, dtype=np.int32), np.array([1, 2], dtype=np.uint64), READS, "s")
    b = Trace((Path("/b"), Path("/a")), np.array([0, 1], dtype=np.int32), np.array([3, 4], dtype=np.uint64), READS, "s")
    c = concat([a, b])
    assert c.packs == (Path("/a"), Path("/b"))
    assert c.pack_index.tolist() == [0, 0, 1, 0]
    assert c.offsets.tolist() == [1, 2, 3, 4]
    with pytest.raises(ValueError):
        concat([a, Trace((), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint64), REQUESTS, "s")])
