"""Multi-pack-index files (gitformat-pack, "multi-pack-index (MIDX)"): one index of the
objects of several packs, a plain `objects/pack/multi-pack-index` or a layer
`multi-pack-index.d/multi-pack-index-HASH.midx` of an incremental chain (the same format;
a layer's objects are those its bases lack).

A header (signature, version, hash, chunk count, pack count), a table of chunks, the chunks:
pack names (PNAM), an id fan-out (OIDF), the ids (OIDL), each object's pack and offset
(OOFF), 64-bit offsets (LOFF, only when some offset needs more than 32 bits), and, for a
bitmap, the objects in pseudo-pack order (RIDX) with each pack's run of that order (BTMP);
then the checksum of all of it. Chunks Git does not write here are kept out: a reader knows
them by their ids. The writer is a function from a table sorted by id to bytes; which copy
of an object a table names is store/midx.py's choice.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple

import numpy as np

from packorder.errors import CorruptPackError
from packorder.format.idx import HashingWriter
from packorder.format.object_format import FORMATS, SHA1, ObjectFormat

SIGNATURE = b"MIDX"
HEADER_SIZE = 12
PNAM, BTMP, OIDF, OIDL, OOFF, LOFF, RIDX = b"PNAM", b"BTMP", b"OIDF", b"OIDL", b"OOFF", b"LOFF", b"RIDX"
LARGE_OFFSET_NEEDED = 0x80000000
# The hash ids of the header's object id version.
OID_VERSIONS = {1: FORMATS["sha1"], 2: FORMATS["sha256"]}


class MultiPackIndex(NamedTuple):
    """A parsed multi-pack-index (or one layer of a chain); columns in id order."""

    version: int
    fmt: ObjectFormat
    pack_names: list[str]  # `pack-HASH.idx`, in the file's pack order (pack ids)
    names: np.ndarray  # (count, rawsz) uint8
    pack_ids: np.ndarray  # uint32: each object's pack
    offsets: np.ndarray  # uint64: each object's offset in its pack
    pseudo_order: np.ndarray | None  # uint32 (RIDX): positions in pseudo-pack order, or None
    bitmapped: np.ndarray | None  # (packs, 2) uint32 (BTMP): each pack's first bit and count
    checksum: bytes

    @property
    def count(self) -> int:
        return len(self.offsets)

    def preferred_pack(self) -> int | None:
        """The pack Git takes for this index's preferred one: the pack of the first object
        in pseudo-pack order (Git reads it so, midx_preferred_pack); None without RIDX."""
        if self.pseudo_order is None or not len(self.pseudo_order):
            return None
        return int(self.pack_ids[int(self.pseudo_order[0])])


def _chunk_table(chunks: list[tuple[bytes, int]], start: int) -> bytes:
    """The table of contents: each chunk's id and offset, then a zero id at the end offset."""
    out = bytearray()
    at = start
    for cid, size in chunks:
        out += cid + struct.pack(">Q", at)
        at += size
    out += b"\0\0\0\0" + struct.pack(">Q", at)
    return bytes(out)


def pack_names_chunk(pack_names: list[str]) -> bytes:
    data = b"".join(name.encode() + b"\0" for name in pack_names)
    return data + b"\0" * (-len(data) % 4)


def fanout(names: np.ndarray) -> bytes:
    counts = np.bincount(names[:, 0], minlength=256) if len(names) else np.zeros(256, dtype=np.int64)
    return np.cumsum(counts).astype(">u4").tobytes()


def write(
    out: BinaryIO,
    pack_names: list[str],
    names: np.ndarray,
    pack_ids: np.ndarray,
    offsets: np.ndarray,
    fmt: ObjectFormat = SHA1,
    version: int = 1,
    pseudo_order: np.ndarray | None = None,
    bitmapped: np.ndarray | None = None,
) -> bytes:
    """Write a multi-pack-index of objects sorted by id (`names`, each in pack `pack_ids[i]`
    at `offsets[i]`; ids unique) over `pack_names` (`pack-HASH.idx`, in pack id order) to
    `out`; with `pseudo_order` and `bitmapped` (for a bitmap: see store/midx.py), their
    RIDX and BTMP chunks too. Returns the file's checksum, which names its bitmap and a
    chain's layer."""
    count = len(names)
    if len(pack_ids) != count or len(offsets) != count:
        raise ValueError("multi-pack-index columns differ in length")
    if version not in (1, 2):
        raise ValueError(f"unknown multi-pack-index version {version}")
    offsets = np.asarray(offsets, dtype=np.uint64)
    # Git keeps 64-bit offsets only once some offset needs them (past 4 GiB); then every
    # offset past 2 GiB goes there, as in a .idx v2.
    large = offsets > 0x7FFFFFFF if count and int(offsets.max()) > 0xFFFFFFFF else np.zeros(count, dtype=bool)
    small = offsets.astype(np.uint32, copy=True) if not large.any() else np.where(large, 0, offsets).astype(np.uint32)
    if large.any():
        small[large] = LARGE_OFFSET_NEEDED | np.arange(int(large.sum()), dtype=np.uint32)
    object_offsets = np.empty((count, 2), dtype=">u4")
    object_offsets[:, 0] = pack_ids
    object_offsets[:, 1] = small
    chunks: list[tuple[bytes, bytes]] = [
        (PNAM, pack_names_chunk(pack_names)),
        (OIDF, fanout(names)),
        (OIDL, np.ascontiguousarray(names).tobytes()),
        (OOFF, object_offsets.tobytes()),
    ]
    if large.any():
        chunks.append((LOFF, offsets[large].astype(">u8").tobytes()))
    if pseudo_order is not None:
        if bitmapped is None:
            raise ValueError("a pseudo-pack order needs each pack's run of it (BTMP)")
        chunks.append((RIDX, np.asarray(pseudo_order, dtype=">u4").tobytes()))
        chunks.append((BTMP, np.asarray(bitmapped, dtype=">u4").tobytes()))
    oid_version = next(v for v, f in OID_VERSIONS.items() if f == fmt)
    w = HashingWriter(out, fmt)
    w.write(SIGNATURE + struct.pack(">BBBBI", version, oid_version, len(chunks), 0, len(pack_names)))
    w.write(_chunk_table([(cid, len(data)) for cid, data in chunks], HEADER_SIZE + 12 * (len(chunks) + 1)))
    for _, data in chunks:
        w.write(data)
    return w.finish()


def pack_names_of(path: str, fmt: ObjectFormat = SHA1) -> list[str]:
    """The pack names (`pack-HASH.idx`) of a multi-pack-index, read from its header and
    PNAM chunk alone (a large index is mostly ids and offsets)."""

    def bad(msg: str, offset: int | None = None) -> CorruptPackError:
        return CorruptPackError(f"multi-pack-index is corrupt: {msg}", offset, path)

    with open(path, "rb") as f:
        head = f.read(HEADER_SIZE)
        if len(head) < HEADER_SIZE or head[:4] != SIGNATURE:
            raise bad("bad signature", 0)
        nchunks, npacks = head[6], struct.unpack(">I", head[8:12])[0]
        table = f.read(12 * (nchunks + 1))
        if len(table) < 12 * (nchunks + 1):
            raise bad("truncated chunk table", HEADER_SIZE)
        for k in range(nchunks):
            if table[12 * k : 12 * k + 4] == PNAM:
                start, end = (
                    struct.unpack(">Q", table[12 * k + 4 : 12 * k + 12])[0],
                    struct.unpack(">Q", table[12 * k + 16 : 12 * k + 24])[0],
                )
                f.seek(start)
                names = f.read(max(end - start, 0)).split(b"\0")[:npacks]
                if len(names) != npacks:
                    raise bad("pack names do not match the pack count")
                return [n.decode(errors="replace") for n in names]
    raise bad("missing required PNAM chunk")


def read(path: str, fmt: ObjectFormat = SHA1) -> MultiPackIndex:
    with open(path, "rb") as f:
        data = f.read()
    return parse(data, path, fmt)


def parse(data: bytes, path: str = "<multi-pack-index>", fmt: ObjectFormat = SHA1) -> MultiPackIndex:
    """A multi-pack-index checked as Git checks one before it trusts it: signature, version,
    hash, chunk table, the required chunks' sizes, and the checksum."""

    def bad(msg: str, offset: int | None = None) -> CorruptPackError:
        return CorruptPackError(f"multi-pack-index is corrupt: {msg}", offset, path)

    rawsz = fmt.rawsz
    version, nchunks, npacks = _header(data, fmt, bad)
    chunks = _Chunks(data, _chunk_extents(data, nchunks, rawsz, bad), bad)
    fan = np.frombuffer(chunks.get(OIDF), dtype=">u4")
    if len(fan) != 256:
        raise bad("OID fanout chunk has the wrong size")
    count = int(fan[-1]) if len(fan) else 0
    oidl = chunks.get(OIDL)
    ooff = chunks.get(OOFF)
    if len(oidl) != count * rawsz or len(ooff) != 8 * count:
        raise bad("OID lookup or object offset chunk has the wrong size")
    names = np.frombuffer(oidl, dtype=np.uint8).reshape(count, rawsz)
    pairs = np.frombuffer(ooff, dtype=">u4").reshape(count, 2)
    pack_ids = pairs[:, 0].astype(np.uint32)
    offsets = _offsets(pairs, chunks.get(LOFF, required=False), bad)
    names_raw = bytes(chunks.get(PNAM)).split(b"\0")
    pack_names = [n.decode(errors="replace") for n in names_raw[:npacks]]
    if len(pack_names) != npacks or any(not n for n in pack_names):
        raise bad("pack names do not match the pack count")
    if count and int(pack_ids.max()) >= npacks:
        raise bad("object names a pack it does not list")
    ridx = chunks.get(RIDX, required=False)
    pseudo = None
    if ridx is not None:
        if len(ridx) != 4 * count:
            raise bad("RIDX chunk has the wrong size")
        pseudo = np.frombuffer(ridx, dtype=">u4").astype(np.uint32)
    btmp = chunks.get(BTMP, required=False)
    bitmapped = None
    if btmp is not None:
        if len(btmp) != 8 * npacks:
            raise bad("BTMP chunk has the wrong size")
        bitmapped = np.frombuffer(btmp, dtype=">u4").reshape(npacks, 2).astype(np.uint32)
    return MultiPackIndex(version, fmt, pack_names, names, pack_ids, offsets, pseudo, bitmapped, data[-rawsz:])


Bad = Callable[..., CorruptPackError]


def _header(data: bytes, fmt: ObjectFormat, bad: Bad) -> tuple[int, int, int]:
    """The version, chunk count and pack count, once the signature, versions and the
    checksum of the whole file are right."""
    rawsz = fmt.rawsz
    if len(data) < HEADER_SIZE + rawsz:
        raise bad(f"file of {len(data)} bytes is too short")
    if data[:4] != SIGNATURE:
        raise bad("bad signature", 0)
    version, oid_version, nchunks, _, npacks = struct.unpack(">BBBBI", data[4:HEADER_SIZE])
    if version not in (1, 2):
        raise bad(f"unsupported version {version}", 4)
    if OID_VERSIONS.get(oid_version) != fmt:
        raise bad(f"object id version {oid_version} is not the repository's {fmt.name}", 5)
    if fmt.checksum(data[:-rawsz]) != data[-rawsz:]:
        raise bad("checksum mismatch", len(data) - rawsz)
    return version, nchunks, npacks


def _chunk_extents(data: bytes, nchunks: int, rawsz: int, bad: Bad) -> dict[bytes, tuple[int, int]]:
    """Each chunk's id and (start, end), each within the file."""
    table_end = HEADER_SIZE + 12 * (nchunks + 1)
    if len(data) < table_end + rawsz:
        raise bad("truncated chunk table", HEADER_SIZE)
    chunks: dict[bytes, tuple[int, int]] = {}
    for k in range(nchunks):
        at = HEADER_SIZE + 12 * k
        cid, start = data[at : at + 4], struct.unpack(">Q", data[at + 4 : at + 12])[0]
        end = struct.unpack(">Q", data[at + 16 : at + 24])[0]
        if not table_end <= start <= end <= len(data) - rawsz:
            raise bad(f"chunk {cid!r} out of bounds", at)
        chunks[cid] = (start, end)
    return chunks


@dataclass
class _Chunks:
    data: bytes
    table: dict[bytes, tuple[int, int]]
    bad: Bad

    def get(self, cid: bytes, required: bool = True) -> memoryview | None:
        if cid not in self.table:
            if required:
                raise self.bad(f"missing required {cid.decode(errors='replace')} chunk")
            return None
        start, end = self.table[cid]
        return memoryview(self.data)[start:end]


def _offsets(pairs: np.ndarray, loff: memoryview | None, bad: Bad) -> np.ndarray:
    """Each object's offset in its pack, the large ones from the LOFF chunk."""
    offsets = pairs[:, 1].astype(np.uint64)
    flagged = (pairs[:, 1] & LARGE_OFFSET_NEEDED) != 0
    if loff is not None and flagged.any():
        large = np.frombuffer(loff, dtype=">u8")
        rows = (pairs[flagged, 1] & 0x7FFFFFFF).astype(np.int64)
        if rows.max() >= len(large):
            raise bad("large offset out of range")
        offsets[flagged] = large[rows].astype(np.uint64)
    return offsets
