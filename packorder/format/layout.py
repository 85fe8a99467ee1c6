"""The shape of an indexed pack: every entry's offset, packed size, stored type, inflated size
and delta base, in pack order, as numpy arrays. Read from the .idx and the entry headers
only; nothing is inflated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from packorder import _native
from packorder.errors import CorruptPackError
from packorder.format import idx as idx_format
from packorder.format import rev as rev_format
from packorder.format.object_format import SHA1, ObjectFormat
from packorder.format.pack import HEADER_LEN, OBJ_OFS_DELTA, OBJ_REF_DELTA
from packorder.native_call import pack_errors

NO_BASE = -1


def roots_and_depths(base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For delta bases `base` (NO_BASE for a whole object): the root of each chain (itself
    for a whole object) and the number of links down to it; ValueError on a cycle. One
    native pass, whatever the depth: a chain 100,000 deep costs what 100,000 objects cost."""
    try:
        roots, depths = _native.chain_roots_depths(np.ascontiguousarray(base, dtype=np.int64).tobytes())
    except ValueError:
        raise ValueError("delta cycle") from None
    return np.frombuffer(roots, dtype=np.int64), np.frombuffer(depths, dtype=np.int64)


class EntryColumns(NamedTuple):
    """A pack's entries as the native core reads them (the writer, the object check, the
    delta search: it takes each attribute by name), every column native-endian, in pack order."""

    path: str
    offsets: bytes  # u64 each
    data_end: int  # where the entries end: the trailer's offset
    header_lens: bytes  # u8 each
    kinds: bytes  # the stored types, u8 each
    sizes: bytes  # u64 each
    bases: bytes  # base positions, -1 for none, i64 each
    crcs: bytes  # u32 each, or empty when not known
    object_format: str


@dataclass
class PackLayout:
    pack_path: Path
    offsets: np.ndarray  # uint64, ascending
    ends: np.ndarray  # uint64: the next entry's offset, or the trailer's
    kinds: np.ndarray  # uint8: stored type (1-4 whole, 6 OFS_DELTA, 7 REF_DELTA)
    sizes: np.ndarray  # uint64: inflated size of the entry's data (object or delta)
    # uint64: size of the object each entry stands for; None until first asked for (reading it
    # inflates the first bytes of every delta), see `object_sizes`.
    _object_sizes: np.ndarray | None
    header_lens: np.ndarray  # uint8
    base: np.ndarray  # int64: pack position of the delta base, NO_BASE if whole or not in pack
    oids: np.ndarray  # (count, rawsz) uint8, in pack order
    checksum: bytes
    idx_to_pack: np.ndarray | None = None  # int64: the pack position of each .idx position
    fmt: ObjectFormat = SHA1  # the hash of its ids and trailer
    # Each entry's chain root and depth, computed once (`base` is not changed after loading).
    _roots_depths: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)

    @property
    def object_sizes(self) -> np.ndarray:
        """uint64: size of the object each entry stands for (read from delta headers once)."""
        if self._object_sizes is None:
            with pack_errors(self.pack_path):
                out = _native.read_entry_headers(str(self.pack_path), self.offsets.tobytes(), True, self.fmt.name)
            self._object_sizes = np.frombuffer(out.object_sizes, dtype=np.uint64)
        return self._object_sizes

    def estimate_object_sizes(self) -> None:
        """Take each delta's object to be as large as its chain's root, unless the sizes were
        read already: reading them inflates the first bytes of every delta (0.2-1.1 s on
        libgit2, redis and git/git), and fleet triage's model of index-pack only weighs
        its cache and threads' timing with them (docs/fleet.md: 0.3 points at most)."""
        if self._object_sizes is None:
            self._object_sizes = self.sizes[self.roots()].astype(np.uint64)

    @property
    def count(self) -> int:
        return len(self.offsets)

    def native_source(self, crcs: bytes = b"") -> EntryColumns:
        """The pack as the native core reads it (`crcs` in pack order, or b"" if unknown)."""
        return EntryColumns(
            path=str(self.pack_path),
            offsets=self.offsets.astype(np.uint64).tobytes(),
            data_end=self.data_end,
            header_lens=self.header_lens.astype(np.uint8).tobytes(),
            kinds=self.kinds.astype(np.uint8).tobytes(),
            sizes=self.sizes.astype(np.uint64).tobytes(),
            bases=self.base.astype(np.int64).tobytes(),
            crcs=crcs,
            object_format=self.fmt.name,
        )

    @property
    def data_end(self) -> int:
        """Where the entries end: the trailer's offset (12, after the header, when empty)."""
        return int(self.ends[-1]) if len(self.ends) else 12

    @property
    def packed_sizes(self) -> np.ndarray:
        return (self.ends - self.offsets).astype(np.int64)

    @property
    def is_delta(self) -> np.ndarray:
        return (self.kinds == OBJ_OFS_DELTA) | (self.kinds == OBJ_REF_DELTA)

    def position_of_offset(self, offsets: np.ndarray) -> np.ndarray:
        """Pack positions of entries starting at `offsets` (which must be entry starts)."""
        pos = np.searchsorted(self.offsets, offsets)
        pos = np.minimum(pos, self.count - 1)
        if not np.all(self.offsets[pos] == offsets):
            bad = offsets[self.offsets[pos] != offsets][0]
            raise CorruptPackError("offset is not the start of an entry", int(bad), str(self.pack_path))
        return pos

    def depths(self) -> np.ndarray:
        """Delta chain depth of each entry (0 for whole objects)."""
        return self._chains()[1]

    def real_kinds(self) -> np.ndarray:
        """The object type of each entry, following delta chains to their roots."""
        kinds = self.kinds[self._chains()[0]].copy()
        kinds[self.is_delta & (self.base == NO_BASE)] = 0
        return kinds

    def roots(self) -> np.ndarray:
        """The root of each entry's delta chain (itself for a whole object)."""
        return self._chains()[0]

    def _chains(self) -> tuple[np.ndarray, np.ndarray]:
        if self._roots_depths is None:
            try:
                self._roots_depths = roots_and_depths(self.base)
            except ValueError:
                raise CorruptPackError("delta cycle in pack", None, str(self.pack_path)) from None
        return self._roots_depths

    def oid_hex(self, pos: int) -> str:
        return self.oids[pos].tobytes().hex()


def idx_path_of(pack: str | os.PathLike[str]) -> Path:
    p = Path(pack)
    return p.with_name(p.name[: -len(".pack")] + ".idx") if p.name.endswith(".pack") else p.with_suffix(".idx")


def _pack_order(pack_path: Path, index: idx_format.PackIndex) -> np.ndarray:
    """Index positions in pack order: from the .rev when there is a good one (it is exactly
    that), else by sorting the offsets."""
    rev = pack_path.with_name(pack_path.name[: -len(".pack")] + ".rev")
    if rev.exists():
        try:
            positions = np.frombuffer(rev_format.read_positions(str(rev), index.count, index.fmt), dtype=">u4")
        except CorruptPackError:
            positions = None
        if positions is not None:
            order = positions.astype(np.int64)
            if index.count == 0 or (
                order.max() < index.count and np.all(np.diff(index.offsets[order].astype(np.int64)) > 0)
            ):
                return order
    return np.argsort(index.offsets)  # offsets are distinct: no need for a stable sort


def load(
    pack: str | os.PathLike[str], index: idx_format.PackIndex | None = None, fmt: ObjectFormat = SHA1
) -> PackLayout:
    """The layout of `pack`, using its .idx (read here, ids of `fmt`, unless given)."""
    pack_path = Path(pack)
    if index is None:
        index = idx_format.read(str(idx_path_of(pack_path)), fmt)
    fmt = index.fmt
    rawsz = fmt.rawsz
    order = _pack_order(pack_path, index)
    offsets = index.offsets[order].astype(np.uint64)
    oids = index.names[order]
    size = pack_path.stat().st_size
    if size < HEADER_LEN + rawsz:
        raise CorruptPackError(f"file of {size} bytes is too short to be a pack", None, str(pack_path))
    if len(offsets) and int(offsets.max()) >= size - rawsz:
        # The index names entries past the pack's end: a pack cut short (or not the index's).
        raise CorruptPackError("pack is shorter than its index says", int(offsets.max()), str(pack_path))
    ends = np.empty_like(offsets)
    if len(offsets):
        ends[:-1] = offsets[1:]
        ends[-1] = size - rawsz
    with pack_errors(pack_path):
        headers = _native.read_entry_headers(str(pack_path), offsets.tobytes(), False, fmt.name)
    kinds = np.frombuffer(headers.kinds, dtype=np.uint8)
    sizes = np.frombuffer(headers.sizes, dtype=np.uint64)
    header_lens = np.frombuffer(headers.header_lens, dtype=np.uint8)
    ofs_bases = np.frombuffer(headers.ofs_bases, dtype=np.uint64)
    base = np.full(len(offsets), NO_BASE, dtype=np.int64)
    ofs = kinds == OBJ_OFS_DELTA
    if ofs.any():
        base[ofs] = np.searchsorted(offsets, ofs_bases[ofs])
        found = base[ofs] < len(offsets)
        found[found] = offsets[base[ofs][found]] == ofs_bases[ofs][found]
        if not found.all():
            at = int(offsets[ofs][~found][0])
            raise CorruptPackError("delta base offset is not the start of an entry", at, str(pack_path))
    ref = kinds == OBJ_REF_DELTA
    if ref.any():
        ids = np.frombuffer(headers.ref_ids, dtype=np.uint8).reshape(-1, rawsz)[ref]
        # Look each base id up among the names (sorted in the idx) to find its offset.
        names = index.names
        keys = names.view(f"S{rawsz}").ravel()
        want = np.ascontiguousarray(ids).view(f"S{rawsz}").ravel()
        at = np.searchsorted(keys, want)
        at_c = np.minimum(at, len(keys) - 1)
        hit = keys[at_c] == want
        pos = np.full(len(want), NO_BASE, dtype=np.int64)
        pos[hit] = np.searchsorted(offsets, index.offsets[at_c[hit]])
        base[ref] = pos
    idx_to_pack = np.empty(len(order), dtype=np.int64)
    idx_to_pack[order] = np.arange(len(order))
    return PackLayout(
        pack_path, offsets, ends, kinds, sizes, None, header_lens, base, oids, index.pack_checksum, idx_to_pack, fmt
    )
