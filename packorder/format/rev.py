"""Reverse index files (.rev): pack order to index position, written by Git since 2.41."""

from __future__ import annotations

import struct
from typing import BinaryIO

from packorder.errors import CorruptPackError
from packorder.format.idx import HashingWriter
from packorder.format.object_format import SHA1, ObjectFormat

RIDX_MAGIC = b"RIDX"


def write(out: BinaryIO, positions_be: bytes, pack_checksum: bytes, fmt: ObjectFormat = SHA1) -> bytes:
    """Write a .rev from the idx position of each entry in pack order (big-endian u32s) to
    `out`; returns its own checksum."""
    w = HashingWriter(out, fmt)
    w.write(RIDX_MAGIC + struct.pack(">II", 1, fmt.format_id))
    w.write(positions_be)
    w.write(pack_checksum)
    return w.finish()


def read_positions(path: str, count: int, fmt: ObjectFormat = SHA1) -> memoryview:
    """The positions of a .rev file, checked against its own checksum and the expected count."""
    with open(path, "rb") as f:
        data = f.read()
    rawsz = fmt.rawsz
    if len(data) != 12 + 4 * count + 2 * rawsz or data[:4] != RIDX_MAGIC:
        raise CorruptPackError("reverse index has the wrong size or signature", 0, path)
    if fmt.checksum(data[:-rawsz]) != data[-rawsz:]:
        raise CorruptPackError("reverse index checksum mismatch", len(data) - rawsz, path)
    return memoryview(data)[12 : 12 + 4 * count].cast("B")
