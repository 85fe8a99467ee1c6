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
from packorder.format.idx import HashingWriter
from packorder.format.object_format import SHA1, ObjectFormat

MTIMES_MAGIC = b"MTME"


def write(out: BinaryIO, mtimes: np.ndarray, pack_checksum: bytes, fmt: ObjectFormat = SHA1) -> bytes:
    """Write the .mtimes of a pack whose objects, in .idx order, have ages `mtimes` (epoch
    seconds); returns the file's own checksum."""
    if len(mtimes) and (int(mtimes.min()) < 0 or int(mtimes.max()) > 0xFFFFFFFF):
        raise ValueError("an mtime does not fit the .mtimes format's 32 bits")
    w = HashingWriter(out, fmt)
    w.write(MTIMES_MAGIC + struct.pack(">II", 1, fmt.format_id))
    w.write(np.asarray(mtimes, dtype=">u4").tobytes())
    w.write(pack_checksum)
    return w.finish()


def read(path: str, count: int, fmt: ObjectFormat = SHA1) -> np.ndarray:
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
    rawsz = fmt.rawsz
    if hash_id != fmt.format_id:
        raise CorruptPackError(f"mtimes file has unsupported hash id {hash_id}", 8, path)
    if len(data) != 12 + 4 * count + 2 * rawsz:
        raise CorruptPackError(f"mtimes file has the wrong size for {count} objects", 0, path)
    if fmt.checksum(data[:-rawsz]) != data[-rawsz:]:
        raise CorruptPackError("mtimes file checksum mismatch", len(data) - rawsz, path)
    return np.frombuffer(data, dtype=">u4", count=count, offset=12).astype(np.uint32)
