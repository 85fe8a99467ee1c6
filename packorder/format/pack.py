"""Pack files (.pack): header, entry headers, trailer. See gitformat-pack."""

from __future__ import annotations

import struct
from typing import NamedTuple

from packorder import _native
from packorder.errors import CorruptPackError
from packorder.native_call import pack_errors

PACK_MAGIC = b"PACK"
HEADER_LEN = 12

OBJ_COMMIT, OBJ_TREE, OBJ_BLOB, OBJ_TAG = 1, 2, 3, 4
OBJ_OFS_DELTA, OBJ_REF_DELTA = 6, 7
TYPE_NAMES = {OBJ_COMMIT: "commit", OBJ_TREE: "tree", OBJ_BLOB: "blob", OBJ_TAG: "tag"}
TYPE_CODES = {name: code for code, name in TYPE_NAMES.items()}


class EntryHeader(NamedTuple):
    kind: int
    size: int
    header_len: int
    base_offset: int | None
    base_id: bytes | None


def header(count: int, version: int = 2) -> bytes:
    return PACK_MAGIC + struct.pack(">II", version, count)


def parse_header(data: bytes, path: str = "<pack>") -> tuple[int, int]:
    """(version, object count) of a pack's first 12 bytes."""
    if len(data) < HEADER_LEN or data[:4] != PACK_MAGIC:
        raise CorruptPackError("bad pack signature (not a pack file)", 0, path)
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3):
        raise CorruptPackError(f"pack version {version} is not supported", 4, path)
    return version, count


def entry_header(kind: int, size: int, ofs_distance: int | None = None) -> bytes:
    """The bytes before an entry's zlib stream (REF_DELTA callers append the base id)."""
    return _native.encode_entry_header(kind, size, ofs_distance)


def parse_entry_header(buf: bytes, offset: int, object_format: str = "sha1") -> EntryHeader | None:
    """Parse the header of the entry at pack offset `offset` of a pack of `object_format`;
    None if `buf` is too short."""
    with pack_errors():
        parsed = _native.parse_entry_header(buf, offset, object_format)
    return None if parsed is None else EntryHeader(*parsed)


def object_header(kind: int, size: int) -> bytes:
    return f"{TYPE_NAMES[kind]} {size}\0".encode()
