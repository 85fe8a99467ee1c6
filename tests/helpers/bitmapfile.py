"""An independent reader of Git's `.bitmap` files (version 1), for checking the ones repack
writes against Git's own: EWAH decoding, XOR chains, the name-hash cache."""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

FULL_DAG, HASH_CACHE = 0x1, 0x4


def _ewah(buf: bytes, at: int) -> tuple[int, int]:
    """(the decoded bitmap as an int, bit i = object i; offset after it)."""
    _bits, nwords = struct.unpack_from(">II", buf, at)
    words = struct.unpack_from(f">{nwords}Q", buf, at + 8)
    value, pos, k = 0, 0, 0
    while k < len(words):
        rlw = words[k]
        run, literals = (rlw >> 1) & 0xFFFFFFFF, rlw >> 33
        if rlw & 1:
            value |= ((1 << (64 * run)) - 1) << (64 * pos)
        pos += run
        for w in words[k + 1 : k + 1 + literals]:
            value |= w << (64 * pos)
            pos += 1
        k += 1 + literals
    rlw_at = struct.unpack_from(">I", buf, at + 8 + 8 * nwords)[0]
    assert rlw_at < max(nwords, 1), "last RLW position out of range"
    return value, at + 12 + 8 * nwords


@dataclass
class Bitmap:
    flags: int
    pack_checksum: bytes
    types: list[int]  # commits, trees, blobs, tags
    entries: dict[int, int]  # .idx position of a commit -> its reachable set (pack order bits)
    xored: int
    name_hashes: list[int] | None  # in .idx order


def read(path: Path, objects: int) -> Bitmap:
    buf = Path(path).read_bytes()
    assert buf[-20:] == hashlib.sha1(buf[:-20]).digest(), "bad trailing checksum"
    magic, version, flags, count = struct.unpack_from(">4sHHI", buf, 0)
    assert magic == b"BITM" and version == 1 and flags & FULL_DAG
    checksum = buf[12:32]
    at = 32
    types = []
    for _ in range(4):
        value, at = _ewah(buf, at)
        types.append(value)
    entries, order, xored = {}, [], 0
    for i in range(count):
        pos, xor, _flags = struct.unpack_from(">IBB", buf, at)
        value, at = _ewah(buf, at + 6)
        if xor:
            assert xor <= min(i, 160)
            value ^= entries[order[i - xor]]
            xored += 1
        entries[pos] = value
        order.append(pos)
    hashes = None
    if flags & HASH_CACHE:
        hashes = list(struct.unpack_from(f">{objects}I", buf, at))
        at += 4 * objects
    assert at == len(buf) - 20, "unexpected bytes after the entries"
    return Bitmap(flags, checksum, types, entries, xored, hashes)
