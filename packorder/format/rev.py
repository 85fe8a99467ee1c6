"""Reverse index files (.rev): pack order to index position, written by Git since 2.41."""

from __future__ import annotations

import struct
from typing import BinaryIO

from packorder.errors import CorruptPackError
from packorder.format.idx import HashingWriter, sha1

RIDX_MAGIC = b"RIDX"
RAWSZ = 20
HASH_ID_SHA1 = 1


def write(out: BinaryIO, positions_be: bytes, pack_checksum: bytes) -> bytes:
    """Write a .rev from the idx position of each entry in pack order (big-endian u32s) to
    `out`; returns its own checksum."""
    w = HashingWriter(out)
    w.write(RIDX_MAGIC + struct.pack(">II", 1, HASH_ID_SHA1))
    w.write(positions_be)
    w.write(pack_checksum)
    return w.finish()


def read_positions(path: str, count: int) -> memoryview:
    """The positions of a .rev file, checked against its own checksum and the expected count."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) != 12 + 4 * count + 2 * RAWSZ or data[:4] != RIDX_MAGIC:
        raise CorruptPackError("reverse index has the wrong size or signature", 0, path)
    if sha1(data[:-RAWSZ]) != data[-RAWSZ:]:
        raise CorruptPackError("reverse index checksum mismatch", len(data) - RAWSZ, path)
    return memoryview(data)[12 : 12 + 4 * count].cast("B")
