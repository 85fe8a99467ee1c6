"""Pack index files (.idx), versions 1 and 2, as `git index-pack` writes them.

Writers are plain functions from a table sorted by object id to bytes; they know nothing of how
the table was made. Inputs are bulk buffers (bytes-like), so a ten-million-entry index is built
with a handful of C-level copies rather than a Python loop per entry.
"""

from __future__ import annotations

import bisect
import struct
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from packorder.errors import CorruptPackError
from packorder.format.object_format import SHA1, ObjectFormat

if TYPE_CHECKING:
    import numpy as np

IDX_V2_MAGIC = b"\xfftOc"
# Offsets above this go to the 64-bit table in a v2 index (Git's default off32_limit).
OFF32_LIMIT = 0x7FFFFFFF


def fanout(names: bytes | memoryview, count: int, rawsz: int) -> bytes:
    """256 big-endian counts: entry b is the number of ids whose first byte is <= b."""
    firsts = bytes(names[0::rawsz]) if count else b""
    return struct.pack(">256I", *(bisect.bisect_right(firsts, b) for b in range(256)))


def _be32_of_small_u64(raw: bytes | memoryview, count: int) -> bytes:
    """Native-endian u64 values known to be < 2**32, as big-endian u32, without a Python loop."""
    raw = bytes(raw)
    if sys.byteorder != "little":
        return struct.pack(f">{count}I", *struct.unpack(f"={count}Q", raw))
    out = bytearray(4 * count)
    out[0::4] = raw[3::8]
    out[1::4] = raw[2::8]
    out[2::4] = raw[1::8]
    out[3::4] = raw[0::8]
    return bytes(out)


def _as_u64(offsets: bytes | memoryview) -> memoryview:
    return memoryview(offsets).cast("B").cast("Q")


def needs_v2(offsets: bytes | memoryview, off32_limit: int = OFF32_LIMIT) -> bool:
    """Git writes v2 whatever was asked when an offset needs the 64-bit table."""
    offs = _as_u64(offsets)
    return len(offs) > 0 and (max(offs) > min(off32_limit, OFF32_LIMIT))


class HashingWriter:
    """Writes through to a binary file while hashing, to end the file with its own checksum
    (by the repository's hash)."""

    def __init__(self, out: BinaryIO, fmt: ObjectFormat) -> None:
        self.out = out
        self.sha = fmt.hasher()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.sha.update(data)
        self.out.write(data)

    def finish(self) -> bytes:
        digest = self.sha.digest()
        self.out.write(digest)
        return digest


def write_v2(
    out: BinaryIO,
    names: bytes,
    crcs: bytes,
    offsets: bytes | memoryview,
    pack_checksum: bytes,
    off32_limit: int = OFF32_LIMIT,
    forced_large: frozenset[int] = frozenset(),
    fmt: ObjectFormat = SHA1,
) -> bytes:
    """Write an idx v2 for entries sorted by id to `out`; returns the idx's own checksum.

    names: count ids of `fmt`; crcs: count big-endian u32; offsets: count native u64.
    forced_large: offsets kept in the 64-bit table although small (Git's "anomalies", only to
    reproduce an existing index under --verify).
    """
    count = len(names) // fmt.rawsz
    offs = _as_u64(offsets)
    if len(offs) != count or len(crcs) != 4 * count:
        raise ValueError("index table columns differ in length")
    limit = min(off32_limit, OFF32_LIMIT)
    largest = max(offs) if count else 0
    w = HashingWriter(out, fmt)
    w.write(IDX_V2_MAGIC + struct.pack(">I", 2) + fanout(names, count, fmt.rawsz))
    w.write(names)
    w.write(crcs)
    if largest <= limit and not forced_large:
        w.write(_be32_of_small_u64(offsets, count))
    else:
        small = bytearray()
        large = bytearray()
        for off in offs:
            if off > limit or off in forced_large:
                small += struct.pack(">I", 0x80000000 | (len(large) // 8))
                large += struct.pack(">Q", off)
            else:
                small += struct.pack(">I", off)
        w.write(small)
        w.write(large)
    w.write(pack_checksum)
    return w.finish()


def write_v1(
    out: BinaryIO, names: bytes, offsets: bytes | memoryview, pack_checksum: bytes, fmt: ObjectFormat = SHA1
) -> bytes:
    """Write an idx v1 (fanout, then offset/id pairs) to `out`; every offset must fit 31 bits.
    (Git writes v1 for SHA-256 too, its pairs 36 bytes long.)"""
    rawsz = fmt.rawsz
    row = 4 + rawsz
    count = len(names) // rawsz
    if needs_v2(offsets):
        raise ValueError("an offset needs 64 bits: a v1 index cannot hold it")
    be_offsets = _be32_of_small_u64(offsets, count)
    pairs = bytearray(row * count)
    for k in range(4):
        pairs[k::row] = be_offsets[k::4]
    for k in range(rawsz):
        pairs[4 + k :: row] = names[k::rawsz]
    w = HashingWriter(out, fmt)
    w.write(fanout(names, count, rawsz))
    w.write(pairs)
    w.write(pack_checksum)
    return w.finish()


class PackIndex(NamedTuple):
    """A parsed .idx. Columns are numpy arrays in id order. (Named tuples here and in
    indexer/, not dataclasses: `dataclasses` loads `inspect`, 1.3 MiB of index-pack's peak.)"""

    version: int
    names: np.ndarray  # (count, rawsz) uint8
    offsets: np.ndarray  # uint64
    crcs: np.ndarray | None  # uint32, None for v1
    pack_checksum: bytes
    large_small_offsets: frozenset[int]  # small offsets stored in the 64-bit table
    fmt: ObjectFormat = SHA1  # the hash of its ids

    @property
    def count(self) -> int:
        return len(self.offsets)

    def name(self, i: int) -> bytes:
        return self.names[i].tobytes()


def _version_and_count(head: bytes, path: str) -> tuple[int, int]:
    """(1 or 2, object count) from the first bytes of an index file (its fan-out table)."""
    fan_end = 8 + 1024 if head[:4] == IDX_V2_MAGIC else 1024
    if len(head) < fan_end:
        raise CorruptPackError("index file is corrupt: too short", None, path)
    return (2 if fan_end > 1024 else 1), struct.unpack(">I", head[fan_end - 4 : fan_end])[0]


def names_of(path: str, fmt: ObjectFormat = SHA1) -> bytes:
    """The sorted object ids of an index file (v1 or v2), for look-ups: only the ids are read
    (a large repository's index is mostly offsets and CRCs) and the checksum is not checked."""
    rawsz = fmt.rawsz
    with open(path, "rb") as f:
        version, count = _version_and_count(f.read(8 + 1024), path)
        if version == 2:
            names = f.read(count * rawsz)
        else:  # (offset, id) records after the fan-out table
            f.seek(1024)
            records = f.read(count * (rawsz + 4))
            names = b"".join(records[i + 4 : i + 4 + rawsz] for i in range(0, len(records), rawsz + 4))
    if len(names) != count * rawsz:
        raise CorruptPackError("index file is corrupt: truncated ids", None, path)
    return names


def offsets_at(path: str, positions: list[int], fmt: ObjectFormat = SHA1) -> list[int]:
    """Pack offsets of the entries at `positions` (in id order) of an index file (v1 or v2)."""
    rawsz = fmt.rawsz
    with open(path, "rb") as f:
        data = f.read()
    version, count = _version_and_count(data, path)
    try:
        if version == 1:
            return [struct.unpack_from(">I", data, 1024 + (rawsz + 4) * pos)[0] for pos in positions]
        small_at = 8 + 1024 + count * (rawsz + 4)
        large_at = small_at + count * 4
        out = []
        for pos in positions:
            small = struct.unpack_from(">I", data, small_at + 4 * pos)[0]
            if small & 0x80000000:
                small = struct.unpack_from(">Q", data, large_at + 8 * (small & 0x7FFFFFFF))[0]
            out.append(small)
        return out
    except struct.error:
        raise CorruptPackError("index file is corrupt: truncated offsets", None, path) from None


def object_count(path: str) -> int:
    """How many objects an index lists, from its fan-out table alone (v1 or v2)."""
    with open(path, "rb") as f:
        head = f.read(8 + 1024)
    start = 8 if head[:4] == IDX_V2_MAGIC else 0
    if len(head) < start + 1024:
        raise CorruptPackError("index file is corrupt: too short for its fan-out table", 0, path)
    return struct.unpack(">I", head[start + 1020 : start + 1024])[0]


def read(path: str, fmt: ObjectFormat = SHA1) -> PackIndex:
    with open(path, "rb") as f:
        data = f.read()
    return parse(data, path, fmt)


def _check_sorted(names: np.ndarray, bad: Callable[[str], CorruptPackError]) -> None:
    """Look-ups binary-search the ids: ids out of order are a corrupt index, not a miss."""
    if len(names) > 1:
        k = names.view(f"S{names.shape[1]}").ravel()
        if not (k[1:] >= k[:-1]).all():
            raise bad("object ids out of order")


def parse(data: bytes, path: str = "<idx>", fmt: ObjectFormat = SHA1) -> PackIndex:
    import numpy as np

    def bad(msg: str, offset: int | None = None) -> CorruptPackError:
        return CorruptPackError(f"index file is corrupt: {msg}", offset, path)

    rawsz = fmt.rawsz
    if len(data) < 1024 + 2 * rawsz:
        raise bad(f"file of {len(data)} bytes is too short")
    if fmt.checksum(data[:-rawsz]) != data[-rawsz:]:
        raise bad(f"checksum mismatch (not a {fmt.name} index?)", len(data) - rawsz)
    if data[:4] == IDX_V2_MAGIC:
        version = struct.unpack(">I", data[4:8])[0]
        if version != 2:
            raise bad(f"unsupported version {version}", 4)
        fan = np.frombuffer(data, dtype=">u4", count=256, offset=8)
        count = int(fan[255])
        base = 8 + 1024
        need = base + count * (rawsz + 8) + 2 * rawsz
        if len(data) < need:
            raise bad("truncated tables")
        names = np.frombuffer(data, dtype=np.uint8, count=count * rawsz, offset=base).reshape(count, rawsz)
        crcs = np.frombuffer(data, dtype=">u4", count=count, offset=base + count * rawsz).astype(np.uint32)
        small = np.frombuffer(data, dtype=">u4", count=count, offset=base + count * (rawsz + 4)).astype(np.uint64)
        is_large = (small & 0x80000000) != 0
        nlarge = int(is_large.sum())
        large_at = base + count * (rawsz + 8)
        if len(data) != large_at + 8 * nlarge + 2 * rawsz:
            raise bad("size does not match its 64-bit offset table")
        large = np.frombuffer(data, dtype=">u8", count=nlarge, offset=large_at).astype(np.uint64)
        offsets = small.copy()
        if nlarge:
            k = (small[is_large] & 0x7FFFFFFF).astype(np.int64)
            if k.max() >= nlarge:
                raise bad("64-bit offset index out of range")
            offsets[is_large] = large[k]
        anomalies = frozenset(int(o) for o in offsets[is_large] if o <= OFF32_LIMIT)
        checksum = data[-2 * rawsz : -rawsz]
        _check_sorted(names, bad)
        return PackIndex(2, names, offsets, crcs, checksum, anomalies, fmt)
    fan = np.frombuffer(data, dtype=">u4", count=256, offset=0)
    count = int(fan[255])
    row = 4 + rawsz
    if len(data) != 1024 + row * count + 2 * rawsz:
        raise bad("size does not match a version 1 index")
    rows = np.frombuffer(data, dtype=np.uint8, count=row * count, offset=1024).reshape(count, row)
    offsets = rows[:, :4].copy().view(">u4").reshape(count).astype(np.uint64)
    names = rows[:, 4:].copy()
    _check_sorted(names, bad)
    return PackIndex(1, names, offsets, None, data[-2 * rawsz : -rawsz], frozenset(), fmt)
