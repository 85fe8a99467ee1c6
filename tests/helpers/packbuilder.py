"""Hand-built packs, entry by entry, for exact control over good and broken input.

Written independently of packorder's writer so that tests do not check the code with itself.
"""

from __future__ import annotations

import hashlib
import struct
import zlib

COMMIT, TREE, BLOB, TAG, OFS_DELTA, REF_DELTA = 1, 2, 3, 4, 6, 7
NAMES = {COMMIT: "commit", TREE: "tree", BLOB: "blob", TAG: "tag"}


def object_id(kind: int, data: bytes, hash: str = "sha1") -> bytes:
    return hashlib.new(hash, f"{NAMES[kind]} {len(data)}\0".encode() + data).digest()


def type_size(kind: int, size: int) -> bytes:
    out = bytearray()
    c = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(c | 0x80)
        c = size & 0x7F
        size >>= 7
    out.append(c)
    return bytes(out)


def ofs_varint(rel: int) -> bytes:
    out = [rel & 0x7F]
    rel >>= 7
    while rel:
        rel -= 1
        out.append(0x80 | (rel & 0x7F))
        rel >>= 7
    return bytes(reversed(out))


def size_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def copy_op(offset: int, size: int) -> bytes:
    cmd = 0x80
    args = bytearray()
    for i in range(4):
        b = (offset >> (8 * i)) & 0xFF
        if b:
            cmd |= 1 << i
            args.append(b)
    if size != 0x10000:
        for i in range(3):
            b = (size >> (8 * i)) & 0xFF
            if b:
                cmd |= 0x10 << i
                args.append(b)
    return bytes([cmd]) + bytes(args)


def insert_ops(data: bytes) -> bytes:
    out = bytearray()
    for i in range(0, len(data), 127):
        chunk = data[i : i + 127]
        out.append(len(chunk))
        out += chunk
    return bytes(out)


def make_delta(base: bytes, target: bytes) -> bytes:
    """A valid delta: copy the common prefix and suffix from the base, insert the middle."""
    p = 0
    while p < min(len(base), len(target)) and base[p] == target[p]:
        p += 1
    s = 0
    while s < min(len(base), len(target)) - p and base[-1 - s] == target[-1 - s]:
        s += 1
    ops = bytearray()
    for start in range(0, p, 0x10000):
        ops += copy_op(start, min(0x10000, p - start))
    ops += insert_ops(target[p : len(target) - s])
    for start in range(len(base) - s, len(base), 0x10000):
        ops += copy_op(start, min(0x10000, len(base) - start))
    return size_varint(len(base)) + size_varint(len(target)) + bytes(ops)


class PackBuilder:
    def __init__(self, version: int = 2, hash: str = "sha1") -> None:
        self.version = version
        self.hash = hash
        self.body = bytearray()
        self.count = 0

    @property
    def offset(self) -> int:
        return 12 + len(self.body)

    def raw(self, data: bytes, counts: bool = True) -> int:
        at = self.offset
        self.body += data
        self.count += counts
        return at

    def whole(self, kind: int, data: bytes, level: int = 6) -> int:
        return self.raw(type_size(kind, len(data)) + zlib.compress(data, level))

    def ofs_delta(self, base_offset: int, delta: bytes, declared: int | None = None) -> int:
        at = self.offset
        size = len(delta) if declared is None else declared
        return self.raw(type_size(OFS_DELTA, size) + ofs_varint(at - base_offset) + zlib.compress(delta))

    def ref_delta(self, base_id: bytes, delta: bytes) -> int:
        return self.raw(type_size(REF_DELTA, len(delta)) + base_id + zlib.compress(delta))

    def build(self, count: int | None = None, trailer: bool = True) -> bytes:
        head = b"PACK" + struct.pack(">II", self.version, self.count if count is None else count)
        data = head + bytes(self.body)
        return data + hashlib.new(self.hash, data).digest() if trailer else data


def with_trailer(data: bytes, hash: str = "sha1") -> bytes:
    """Recompute the trailer of a pack whose body was edited (keeps the damage inside)."""
    size = hashlib.new(hash).digest_size
    body = data[:-size]
    return body + hashlib.new(hash, body).digest()
