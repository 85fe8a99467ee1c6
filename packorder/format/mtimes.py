""".mtimes files: the age of every object of a cruft pack (gitformat-pack, "pack-*.mtimes").

A cruft pack holds unreachable objects. A pack has one mtime, so the age of each object,
which decides when it expires, is kept beside it: one big-endian u32 of epoch seconds per
object, in the order of the pack's .idx (by object id), then the pack's checksum and the
file's own. Git recognises a pack as a cruft pack by this file alone.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

import numpy as np

from packorder.errors import CorruptPackError
from packorder.format.idx import HashingWriter, sha1

MTIMES_MAGIC = b"MTME"
RAWSZ = 20
HASH_ID_SHA1 = 1
HEADER = MTIMES_MAGIC + struct.pack(">II", 1, HASH_ID_SHA1)


def write(out: BinaryIO, mtimes: np.ndarray, pack_checksum: bytes) -> bytes:
    """Write the .mtimes of a pack whose objects, in .idx order, have ages `mtimes` (epoch
    seconds); returns the file's own checksum."""
    if len(mtimes) and (int(mtimes.min()) < 0 or int(mtimes.max()) > 0xFFFFFFFF):
        raise ValueError("an mtime does not fit the .mtimes format's 32 bits")
    w = HashingWriter(out)
    w.write(HEADER)
    w.write(np.asarray(mtimes, dtype=">u4").tobytes())
    w.write(pack_checksum)
    return w.finish()


def read(path: str, count: int) -> np.ndarray:
    """The ages (uint32, epoch seconds) of a cruft pack's `count` objects in .idx order,
    checked as Git checks them (signature, version, hash, size) and against the checksum."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CorruptPackError(f"cannot read the cruft pack's mtimes: {e.strerror}", None, path) from None
    if len(data) < 12 or data[:4] != MTIMES_MAGIC:
        raise CorruptPackError("mtimes file has an unknown signature", 0, path)
    version, hash_id = struct.unpack(">II", data[4:12])
    if version != 1:
        raise CorruptPackError(f"mtimes file has unsupported version {version}", 4, path)
    if hash_id != HASH_ID_SHA1:
        raise CorruptPackError(f"mtimes file has unsupported hash id {hash_id}", 8, path)
    if len(data) != 12 + 4 * count + 2 * RAWSZ:
        raise CorruptPackError(f"mtimes file has the wrong size for {count} objects", 0, path)
    if sha1(data[:-RAWSZ]) != data[-RAWSZ:]:
        raise CorruptPackError("mtimes file checksum mismatch", len(data) - RAWSZ, path)
    return np.frombuffer(data, dtype=">u4", count=count, offset=12).astype(np.uint32)
