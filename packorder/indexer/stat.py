"""`index-pack --verify-stat`: Git's listing of a pack's objects (what `git verify-pack -v`
prints), and its histogram of delta chain lengths, from the indexer's tables. (Plain
memoryviews, not numpy: index-pack's process must not load it, for its memory.)"""

from __future__ import annotations

from collections import Counter

from packorder.format.object_format import ObjectFormat
from packorder.format.pack import TYPE_NAMES

_WHOLE = 2**32 - 1


def _objects(n: int) -> str:
    return f"{n} object" if n == 1 else f"{n} objects"


def pack_info(native, pack_size: int, stat_only: bool, fmt: ObjectFormat) -> list[str]:
    """Git's show_pack_info for the indexed pack: one line per object in pack order (unless
    `stat_only`), then the count of whole objects and of each chain length."""
    entries = native.entries()
    real_kinds, ids = entries.real_kinds, entries.ids
    bases_b, depths_b = native.delta_shape()
    offsets = memoryview(entries.offsets).cast("Q").tolist()
    # As Git lists them: an entry's stored size, a delta's being the delta's.
    sizes = memoryview(entries.sizes).cast("Q").tolist()
    bases = memoryview(bases_b).cast("I").tolist()
    depths = memoryview(depths_b).cast("I").tolist()
    ends = [*offsets[1:], pack_size - fmt.rawsz]
    lines = []
    if not stat_only:
        hexes = [oid.hex() for oid in fmt.split(ids)]
        for i, (offset, end, size, base) in enumerate(zip(offsets, ends, sizes, bases, strict=True)):
            line = f"{hexes[i]} {TYPE_NAMES[real_kinds[i]]:<6} {size} {end - offset} {offset}"
            if base != _WHOLE:
                line += f" {depths[i]} {hexes[base]}"
            lines.append(line)
    whole = bases.count(_WHOLE)
    if whole:
        lines.append(f"non delta: {_objects(whole)}")
    chains = Counter(d for d, b in zip(depths, bases, strict=True) if b != _WHOLE)
    lines += [f"chain length = {d}: {_objects(chains[d])}" for d in sorted(chains)]
    return lines
