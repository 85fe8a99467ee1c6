#!/usr/bin/env python3
"""Generate a pack of large blobs in deep delta chains, the worst case for an indexer's memory:
every level of a chain is a large object, and each level has sibling deltas, so a base is
still needed by other children while its descendants are resolved.

    scripts/make_chain_pack.py OUT.pack [--files 4] [--size-mib 16] [--depth 50] [--siblings 2]

Each file starts as random bytes; each level edits a few bytes of its parent (an OFS_DELTA
that copies the rest). The pack is written directly (zlib, SHA-1 trailer) and is valid for
`git index-pack`; nothing here depends on packorder.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import zlib
from pathlib import Path


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


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


def ofs(rel: int) -> bytes:
    out = [rel & 0x7F]
    rel >>= 7
    while rel:
        rel -= 1
        out.append(0x80 | (rel & 0x7F))
        rel >>= 7
    return bytes(reversed(out))


def copy(offset: int, size: int) -> bytes:
    """Copy ops for [offset, offset+size) in chunks of at most 64 KiB."""
    out = bytearray()
    while size:
        n = min(size, 0x10000)
        cmd, args = 0x80, bytearray()
        for i in range(4):
            if (offset >> (8 * i)) & 0xFF:
                cmd |= 1 << i
                args.append((offset >> (8 * i)) & 0xFF)
        if n != 0x10000:
            for i in range(3):
                if (n >> (8 * i)) & 0xFF:
                    cmd |= 0x10 << i
                    args.append((n >> (8 * i)) & 0xFF)
        out += bytes([cmd]) + args
        offset += n
        size -= n
    return bytes(out)


def edit(rng: random.Random, parent: bytes) -> tuple[bytes, bytes]:
    """A child of `parent` with 16 bytes replaced at a random place, and the delta for it."""
    at = rng.randrange(len(parent) - 16)
    patch = rng.randbytes(16)
    child = parent[:at] + patch + parent[at + 16 :]
    delta = varint(len(parent)) + varint(len(child)) + copy(0, at) + bytes([16]) + patch
    delta += copy(at + 16, len(parent) - at - 16)
    return child, delta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--size-mib", type=int, default=16)
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--siblings", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    body = bytearray()
    count = 0

    def put(entry: bytes) -> int:
        nonlocal count
        at = 12 + len(body)
        body.extend(entry)
        count += 1
        return at

    for _ in range(args.files):
        data = rng.randbytes(args.size_mib << 20)
        at = put(type_size(3, len(data)) + zlib.compress(data, 1))
        for _level in range(args.depth):
            for _s in range(args.siblings):
                _, delta = edit(rng, data)
                put(type_size(6, len(delta)) + ofs(12 + len(body) - at) + zlib.compress(delta))
            data, delta = edit(rng, data)
            at = put(type_size(6, len(delta)) + ofs(12 + len(body) - at) + zlib.compress(delta))
    head = b"PACK" + (2).to_bytes(4, "big") + count.to_bytes(4, "big")
    digest = hashlib.sha1(head + body).digest()
    args.out.write_bytes(head + bytes(body) + digest)
    print(f"{args.out}: {count} objects, {len(body) >> 20} MiB, pack-{digest.hex()}")


if __name__ == "__main__":
    main()
