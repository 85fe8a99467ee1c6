"""Git's collision check for index-pack: every object of the pack that the repository
already has (in a pack, an alternate or a loose file) must be the repository's object of
that id, else `SHA1 COLLISION FOUND`."""

from __future__ import annotations

from pathlib import Path

from packorder import _native, gitcmd
from packorder.errors import CorruptPackError
from packorder.format import idx as idx_format
from packorder.format.object_format import ObjectFormat
from packorder.format.pack import TYPE_CODES


def _hashes_to(kind_name: str, data: bytes, oid: bytes, fmt: ObjectFormat) -> bool:
    """Whether an object read from the repository is the object `oid` names (a collision
    attack found in it by the hash's detection counts as not)."""
    try:
        return fmt.object_id(TYPE_CODES[kind_name], data) == oid
    except _native.PackFormatError:
        return False


def check_collisions(git_dir: Path, names: bytes, own_pack: Path | None, fmt: ObjectFormat) -> int:
    """Git's collision check: an object the repository already has must be the object of that
    id the pack carries, else `SHA1 COLLISION FOUND`. Git compares the two byte for byte; we
    hash the repository's copy (with collision detection, as the pack's objects were): equal
    ids of equal type mean equal bytes unless SHA-1 itself collides undetected. Returns how
    many of the pack's objects the repository had. `own_pack` (being indexed again) is skipped."""
    from packorder.errors import CollisionError
    from packorder.store import listing as store

    objects = git_dir / "objects"
    stores = [objects, *store.alternates(objects)]
    packs = [p for d in stores for p in store.list_packs(d / "pack") if own_pack is None or p.resolve() != own_pack]
    # Where the repository keeps each object the pack has: (pack number, offset), loose last.
    # Asked for in that order, Git reads each pack front to back, its delta bases cached
    # (in id order, reading every object of libgit2 took cat-file 24 s instead of 6).
    place: dict[int, tuple[int, int]] = {}
    for number, pack in enumerate(packs):
        idx = str(pack.with_suffix(".idx"))
        hits = [(i, at) for i, at in _hits(idx_format.names_of(idx, fmt), names, idx, fmt) if i not in place]
        for (i, _), offset in zip(hits, idx_format.offsets_at(idx, [at for _, at in hits], fmt), strict=True):
            place[i] = (number, offset)
    for d in stores:
        for i, at in _hits(store.loose_ids(d, fmt), names, f"loose objects of {d}", fmt):
            place.setdefault(i, (len(packs), at))
    if not place:
        return 0
    rawsz = fmt.rawsz
    wanted = [names[i * rawsz : (i + 1) * rawsz].hex() for i in sorted(place, key=place.__getitem__)]
    with gitcmd.ObjectReader(git_dir) as reader:
        for oid_hex, found_obj in reader.read_many(wanted):
            oid = bytes.fromhex(oid_hex)
            if found_obj is None:
                continue  # removed meanwhile (a repack): nothing to differ from
            if not _hashes_to(*found_obj, oid, fmt):
                raise CollisionError(f"SHA1 COLLISION FOUND WITH {oid.hex()} ! (the repository's copy differs)")
    return len(place)


def _hits(sorted_ids: bytes, names: bytes, where: str, fmt: ObjectFormat) -> list[tuple[int, int]]:
    """(index into `names`, position in `sorted_ids`) of each id of `names` found there."""
    try:
        at, pos = _native.find_hits(sorted_ids, names, fmt.name)
    except ValueError:
        raise CorruptPackError("index file is corrupt: ids out of order", None, where) from None
    return list(zip(memoryview(at).cast("Q"), memoryview(pos).cast("Q"), strict=True))
