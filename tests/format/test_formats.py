"""Property tests for the byte formats: deltas, entry headers, .idx and .rev."""

from __future__ import annotations

import hashlib
import io
import struct

import numpy as np
import pytest
from helpers.packbuilder import copy_op, insert_ops, ofs_varint, size_varint, type_size
from hypothesis import given, settings
from hypothesis import strategies as st

from packorder import _native
from packorder.errors import CorruptPackError
from packorder.format import idx as idx_format
from packorder.format import pack as pack_format
from packorder.format import rev as rev_format
from packorder.format.object_format import SHA1, SHA256, ObjectFormat


def _copy_operands(delta: bytes, pos: int, cmd: int) -> tuple[int, int, int] | None:
    """A copy command's offset and size (its bits say which bytes follow), and where the
    next command starts; None if the delta ends first."""
    off = size = 0
    for i in range(7):
        if cmd & (1 << i):
            if pos >= len(delta):
                return None
            if i < 4:
                off |= delta[pos] << (8 * i)
            else:
                size |= delta[pos] << (8 * (i - 4))
            pos += 1
    return off, size or 0x10000, pos


def reference_apply(base: bytes, delta: bytes) -> bytes | None:
    """Git's delta format, plainly; None where Git would reject the delta."""
    pos = 0

    def varint() -> int | None:
        nonlocal pos
        value = shift = 0
        while True:
            if pos >= len(delta):
                return None
            b = delta[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    base_size, result_size = varint(), varint()
    if base_size is None or result_size is None or base_size != len(base):
        return None
    out = bytearray()
    while pos < len(delta):
        cmd = delta[pos]
        pos += 1
        if cmd & 0x80:
            copy = _copy_operands(delta, pos, cmd)
            if copy is None:
                return None
            off, size, pos = copy
            if off + size > len(base):
                return None
            out += base[off : off + size]
        elif cmd:
            if pos + cmd > len(delta):
                return None
            out += delta[pos : pos + cmd]
            pos += cmd
        else:
            return None
        if len(out) > result_size:
            return None
    return bytes(out) if len(out) == result_size else None


def native_apply(base: bytes, delta: bytes) -> bytes | None:
    try:
        return _native.apply_delta(base, delta)
    except _native.PackFormatError:
        return None


@st.composite
def valid_deltas(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    base = draw(st.binary(min_size=1, max_size=3000))
    ops = bytearray()
    target = bytearray()
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.booleans()):
            off = draw(st.integers(0, len(base) - 1))
            size = draw(st.integers(1, len(base) - off))
            ops += copy_op(off, size)
            target += base[off : off + size]
        else:
            lit = draw(st.binary(min_size=1, max_size=300))
            ops += insert_ops(lit)
            target += lit
    return base, size_varint(len(base)) + size_varint(len(target)) + bytes(ops), bytes(target)


@settings(max_examples=300, deadline=None)
@given(valid_deltas())
def test_valid_deltas_apply_like_the_reference(case: tuple[bytes, bytes, bytes]) -> None:
    base, delta, target = case
    assert reference_apply(base, delta) == target
    assert native_apply(base, delta) == target


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200), st.binary(max_size=60))
def test_arbitrary_deltas_agree_with_the_reference(base: bytes, tail: bytes) -> None:
    delta = size_varint(len(base)) + size_varint(len(tail)) + tail
    assert native_apply(base, delta) == reference_apply(base, delta)
    assert native_apply(base, tail) == reference_apply(base, tail)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([1, 2, 3, 4, 6, 7]), st.integers(0, (1 << 64) - 1), st.integers(1, 1 << 50))
def test_entry_headers_round_trip(kind: int, size: int, rel: int) -> None:
    offset = rel + 12 + 7
    if kind == 6:
        raw = type_size(kind, size) + ofs_varint(rel)
        assert pack_format.entry_header(kind, size, rel) == raw
    elif kind == 7:
        raw = type_size(kind, size) + b"\x11" * 20
    else:
        raw = type_size(kind, size)
        assert pack_format.entry_header(kind, size) == raw
    parsed = pack_format.parse_entry_header(raw + b"trailing", offset)
    assert parsed is not None
    assert (parsed.kind, parsed.size, parsed.header_len) == (kind, size, len(raw))
    assert parsed.base_offset == (offset - rel if kind == 6 else None)
    assert parsed.base_id == (b"\x11" * 20 if kind == 7 else None)
    assert pack_format.parse_entry_header(raw[:-1], offset) is None


def test_a_ref_delta_base_is_an_id_of_the_packs_hash() -> None:
    raw = type_size(7, 5) + b"\x22" * 32
    parsed = pack_format.parse_entry_header(raw + b"x", 12, "sha256")
    assert parsed is not None and parsed.base_id == b"\x22" * 32 and parsed.header_len == len(raw)
    # Cut at 20 of its 32 bytes: a header that needs more, not a SHA-1 id.
    assert pack_format.parse_entry_header(raw[:21], 12, "sha256") is None
    assert pack_format.parse_entry_header(raw, 12).base_id == b"\x22" * 20


def test_entry_header_errors() -> None:
    with pytest.raises(CorruptPackError):
        pack_format.parse_entry_header(bytes([0x50, 0]), 12)
    with pytest.raises(CorruptPackError):
        pack_format.parse_entry_header(type_size(6, 3) + ofs_varint(100), 50)


def reference_idx_v2(
    names: list[bytes], crcs: list[int], offsets: list[int], checksum: bytes, hash: str = "sha1"
) -> bytes:
    out = bytearray(b"\xfftOc" + struct.pack(">I", 2))
    for b in range(256):
        out += struct.pack(">I", sum(1 for n in names if n[0] <= b))
    for n in names:
        out += n
    for c in crcs:
        out += struct.pack(">I", c)
    large = []
    for o in offsets:
        if o > 0x7FFFFFFF:
            out += struct.pack(">I", 0x80000000 | len(large))
            large.append(o)
        else:
            out += struct.pack(">I", o)
    for o in large:
        out += struct.pack(">Q", o)
    out += checksum
    return bytes(out) + hashlib.new(hash, out).digest()


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([SHA1, SHA256]), st.data())
def test_idx_v2_matches_reference_and_parses_back(fmt: ObjectFormat, data: st.DataObject) -> None:
    ids = st.binary(min_size=fmt.rawsz, max_size=fmt.rawsz)
    names = sorted(data.draw(st.lists(ids, max_size=60, unique=True)))
    n = len(names)
    offsets = data.draw(st.lists(st.integers(12, (1 << 40)), min_size=n, max_size=n))
    crcs = data.draw(st.lists(st.integers(0, (1 << 32) - 1), min_size=n, max_size=n))
    checksum = hashlib.new(fmt.name, b"pack").digest()
    buf = io.BytesIO()
    idx_format.write_v2(
        buf, b"".join(names), struct.pack(f">{n}I", *crcs), struct.pack(f"={n}Q", *offsets), checksum, fmt=fmt
    )
    assert buf.getvalue() == reference_idx_v2(names, crcs, offsets, checksum, fmt.name)
    parsed = idx_format.parse(buf.getvalue(), fmt=fmt)
    assert parsed.version == 2 and parsed.count == n
    assert [int(o) for o in parsed.offsets] == offsets
    assert [parsed.name(i) for i in range(n)] == names
    assert parsed.crcs is not None and [int(c) for c in parsed.crcs] == crcs


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(min_size=20, max_size=20), max_size=40, unique=True), st.data())
def test_idx_v1_round_trips(names: list[bytes], data: st.DataObject) -> None:
    names = sorted(names)
    n = len(names)
    offsets = data.draw(st.lists(st.integers(12, 0x7FFFFFFF), min_size=n, max_size=n))
    buf = io.BytesIO()
    idx_format.write_v1(buf, b"".join(names), struct.pack(f"={n}Q", *offsets), b"\x22" * 20)
    parsed = idx_format.parse(buf.getvalue())
    assert parsed.version == 1
    assert [int(o) for o in parsed.offsets] == offsets
    assert [parsed.name(i) for i in range(n)] == names


def test_idx_rejects_damage() -> None:
    buf = io.BytesIO()
    idx_format.write_v2(buf, b"\x01" * 20, struct.pack(">I", 5), struct.pack("=Q", 12), b"\x00" * 20)
    data = bytearray(buf.getvalue())
    data[1040] ^= 1
    with pytest.raises(CorruptPackError, match="checksum"):
        idx_format.parse(bytes(data))
    with pytest.raises(CorruptPackError, match="too short"):
        idx_format.parse(b"\xfftOc")


@pytest.mark.parametrize("version", [1, 2])
def test_idx_with_ids_out_of_order_is_corrupt(version: int) -> None:
    """Its checksum is right (a buggy writer): look-ups would silently miss objects."""
    names = [b"\x05" * 20, b"\x01" * 20]  # not sorted
    offsets = struct.pack("=2Q", 12, 40)
    buf = io.BytesIO()
    if version == 2:
        idx_format.write_v2(buf, b"".join(names), struct.pack(">2I", 1, 2), offsets, b"\x00" * 20)
    else:
        idx_format.write_v1(buf, b"".join(names), offsets, b"\x00" * 20)
    with pytest.raises(CorruptPackError, match="object ids out of order"):
        idx_format.parse(buf.getvalue(), "bad.idx")


def test_rev_round_trips(tmp_path) -> None:
    positions = struct.pack(">3I", 2, 0, 1)
    path = tmp_path / "x.rev"
    with open(path, "wb") as f:
        rev_format.write(f, positions, b"\x33" * 20)
    data = path.read_bytes()
    assert data[:12] == b"RIDX" + struct.pack(">II", 1, 1)
    assert len(data) == 12 + 12 + 40
    assert bytes(rev_format.read_positions(str(path), 3)) == positions
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(CorruptPackError):
        rev_format.read_positions(str(path), 3)


def test_object_ids_match_git_hash_object() -> None:
    import subprocess

    data = b"some content\n"
    want = subprocess.run(["git", "hash-object", "--stdin"], input=data, capture_output=True).stdout.strip()
    assert _native.object_id(3, data).hex() == want.decode()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.binary(min_size=20, max_size=20), min_size=0, max_size=40, unique=True),
    st.lists(st.binary(min_size=20, max_size=20), min_size=0, max_size=20),
    st.data(),
)
def test_lookup_finds_ids_sharing_a_prefix(have: list[bytes], extra: list[bytes], data: st.DataObject) -> None:
    from packorder.store.object_ids import keys, lookup

    # Ids that share their first 8 bytes with another: the integer prefix search must fall back.
    twins = [h[:8] + bytes(12 - i) + b"\xff" * i for h in have[:5] for i in range(3)]
    ids = sorted(set(have + twins))
    want = data.draw(st.lists(st.sampled_from(ids + extra + [b"\x00" * 20]), max_size=30)) if ids else extra
    arr = lambda xs: np.frombuffer(b"".join(xs), dtype=np.uint8).reshape(-1, 20)  # noqa: E731
    got = lookup(keys(arr(ids)), keys(arr(want))) if want else np.zeros(0)
    assert list(got) == [ids.index(w) if w in ids else -1 for w in want]
