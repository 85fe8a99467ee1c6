"""From an object table, a delta choice and a write order to a pack on disk, its .idx and
.rev, and the proof that the pack holds what it should.

The bytes are written by the native writer from a plan (one row per entry); this module
decides each row, then verifies the result at one of three levels (`verify`):
- "crc": re-read every entry header and compare it with the plan, recompute every entry's
  CRC and the trailer from the file. Copied bytes were already checked against the CRCs of
  their source index while copying, so every byte is accounted for without hashing objects;
- "produced" (the default): that, and every entry whose bytes packorder produced read back,
  resolved and hashed, so that every object is proven;
- "full": index the new pack from scratch with our indexer (every delta resolved, every
  object hashed) and compare the ids with the expected ones.
"""

from __future__ import annotations

import io
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from packorder import _native
from packorder.errors import CorruptPackError, PackError
from packorder.format import idx as idx_format
from packorder.format import rev as rev_format
from packorder.format.layout import EntryColumns
from packorder.format.object_format import ObjectFormat
from packorder.format.pack import OBJ_OFS_DELTA, OBJ_REF_DELTA
from packorder.native_call import INDEXING, RESOLVING, run_job
from packorder.progress import ProgressCallback
from packorder.repacking.deltas import DeltaChoice
from packorder.settings import VERIFY_MODES, Limits
from packorder.store.object_ids import id_order, keys
from packorder.store.repository import LOOSE, Repository
from packorder.walk.objects import ObjectTable

COPY_WHOLE, COPY_DELTA, FROM_PACK, FROM_LOOSE, NEW_DELTA = 0, 1, 2, 3, 4


@dataclass
class Plan:
    how: np.ndarray  # uint8 per output entry
    src: np.ndarray  # uint32
    pos: np.ndarray  # uint64
    base: np.ndarray  # int64: output index of the delta base, -1
    kinds: np.ndarray  # uint8: real type
    oids: np.ndarray  # (n, 20) uint8
    sizes: np.ndarray  # uint64: entry data size (delta size for deltas), 0 where computed later
    sources: list[int]  # repository pack indexes used, in the order passed to the writer
    loose: list[Path]
    new_deltas: list[bytes]
    rows: np.ndarray  # int64: the table row of each output entry (the write order)
    # bool: the entry's bytes are copied from a source whose index gives CRCs, so the writer
    # checks them as it copies; every other entry is produced here, or copied unchecked.
    crc_checked: np.ndarray | None = None
    # Where each entry's object was read from in the repository (table source and position),
    # and the repository's packs and loose files, for an error to name.
    table_source: np.ndarray | None = None
    table_pos: np.ndarray | None = None
    pack_paths: list[Path] = field(default_factory=list)
    loose_paths: list[Path] = field(default_factory=list)

    def origin(self, entry: int) -> str:
        """Where the object of output entry `entry` was read from, for an error to name."""
        if self.table_source is None or self.table_pos is None:
            return "the repository"
        source, pos = int(self.table_source[entry]), int(self.table_pos[entry])
        if source == LOOSE:
            return f"the loose file {self.loose_paths[pos]}"
        return f"{self.pack_paths[source]} (its entry {pos} in pack order)"


def make_plan(
    repo: Repository,
    table: ObjectTable,
    choice: DeltaChoice,
    order: np.ndarray,
    new_deltas: dict[int, bytes] | None = None,
) -> Plan:
    """One row per object, in `order`. `new_deltas` maps a table index to delta data computed
    for this pack against `choice.base` of that object."""
    n = len(order)
    new_deltas = new_deltas or {}
    out_pos = np.empty(n, dtype=np.int64)
    out_pos[order] = np.arange(n)
    src_tab = table.source[order]
    pos_tab = table.pos[order]
    base_tab = choice.base[order]
    stored = choice.stored_delta[order]
    how = np.where(src_tab == LOOSE, FROM_LOOSE, np.where(stored, FROM_PACK, COPY_WHOLE)).astype(np.uint8)
    reused = (base_tab >= 0) & (src_tab != LOOSE) & stored
    how[reused] = COPY_DELTA
    base_out = np.where(base_tab >= 0, out_pos[np.maximum(base_tab, 0)], -1).astype(np.int64)
    used_sources = sorted({int(s) for s in np.unique(src_tab) if s != LOOSE})
    remap = {s: k for k, s in enumerate(used_sources)}
    src = np.zeros(n, dtype=np.uint32)
    pos = np.zeros(n, dtype=np.uint64)
    sizes = np.zeros(n, dtype=np.uint64)
    for s, k in remap.items():
        rows = np.flatnonzero(src_tab == s)
        src[rows] = k
        pos[rows] = pos_tab[rows]
        lay = repo.packs[s].layout
        # Sizes the new headers must carry: a copied entry keeps its own; a materialized
        # object's size is read from its delta header (only for those few, and only then).
        sizes[rows] = lay.sizes[pos_tab[rows]]
        rebuilt = rows[how[rows] == FROM_PACK]
        if len(rebuilt):
            sizes[rebuilt] = lay.object_sizes[pos_tab[rebuilt]]
    loose_rows = np.flatnonzero(src_tab == LOOSE)
    loose = [repo.loose.paths[int(p)] for p in pos_tab[loose_rows]]
    src[loose_rows] = np.arange(len(loose_rows), dtype=np.uint32)
    deltas: list[bytes] = []
    for table_idx, data in new_deltas.items():
        row = int(out_pos[table_idx])
        how[row] = NEW_DELTA
        src[row] = len(deltas)
        sizes[row] = len(data)
        deltas.append(data)
    # A delta is only written against an earlier entry; the order guarantees it (bases_first).
    bad = (base_out >= 0) & ((how == COPY_DELTA) | (how == NEW_DELTA)) & (base_out >= np.arange(n))
    if bad.any():
        raise AssertionError("write order puts a delta before its base")
    base_out[(how != COPY_DELTA) & (how != NEW_DELTA)] = -1
    has_crcs = np.array([repo.packs[s].index.crcs is not None for s in used_sources] + [False], dtype=bool)
    copied = (how == COPY_WHOLE) | (how == COPY_DELTA)
    crc_checked = copied & has_crcs[np.where(copied, src, len(used_sources))]
    return Plan(
        how,
        src,
        pos,
        base_out,
        table.kinds[order],
        table.oids[order],
        sizes,
        used_sources,
        loose,
        deltas,
        order,
        crc_checked,
        src_tab,
        pos_tab,
        [p.path for p in repo.packs],
        repo.loose.paths,
    )


def _source_args(repo: Repository, used: list[int]) -> list[EntryColumns]:
    out = []
    for s in used:
        pack = repo.packs[s]
        lay = pack.layout
        index = pack.index
        if index.crcs is not None:
            order = np.argsort(index.offsets, kind="stable")
            crcs = index.crcs[order].astype(np.uint32).tobytes()
        else:
            crcs = b""
        out.append(lay.native_source(crcs))
    return out


@dataclass
class WrittenPack:
    path: Path
    checksum: bytes
    size: int
    offsets: np.ndarray  # uint64, per output entry
    crcs: np.ndarray  # uint32 (big-endian source bytes decoded)
    plan: Plan
    fmt: ObjectFormat  # the hash of its ids and trailer


def write(
    repo: Repository,
    plan: Plan,
    path: Path,
    *,
    ref_delta: bool,
    level: int,
    limits: Limits,
    progress: ProgressCallback | None = None,
) -> WrittenPack:
    """Write the pack of `plan` to `path`; `limits.threads` compress the entries the plan
    produces (new deltas, loose objects, objects rebuilt from a chain) ahead of the writer."""
    writer = _native.PackWriter(
        _source_args(repo, plan.sources),
        plan.how.tobytes(),
        plan.src.astype(np.uint32).tobytes(),
        plan.pos.astype(np.uint64).tobytes(),
        plan.base.astype(np.int64).tobytes(),
        plan.kinds.astype(np.uint8).tobytes(),
        np.ascontiguousarray(plan.oids).tobytes(),
        [str(p) for p in plan.loose],
        plan.new_deltas,
        ref_delta,
        level,
        limits,
        repo.fmt.name,
    )

    # No path for its errors: each names the file it is about (a source pack, or the new one).
    wrote = run_job(
        writer, lambda: writer.write(str(path)), title="Writing objects", count=len(plan.how), progress=progress
    )
    offsets = np.frombuffer(wrote.offsets, dtype=np.uint64)
    crcs = np.frombuffer(wrote.crcs, dtype=">u4").astype(np.uint32)
    return WrittenPack(path, wrote.checksum, wrote.size, offsets, crcs, plan, repo.fmt)


@dataclass
class IndexFiles:
    idx: bytes
    rev: bytes | None  # None: pack.writeReverseIndex is off
    bitmap: bytes | None = None
    mtimes: bytes | None = None  # a cruft pack's


def _index_files(
    names: bytes, crcs_be: bytes, offsets: np.ndarray, positions_be: bytes, checksum: bytes, fmt: ObjectFormat
) -> IndexFiles:
    idx_buf, rev_buf = io.BytesIO(), io.BytesIO()
    idx_format.write_v2(idx_buf, names, crcs_be, offsets.astype(np.uint64).tobytes(), checksum, fmt=fmt)
    rev_format.write(rev_buf, positions_be, checksum, fmt)
    return IndexFiles(idx_buf.getvalue(), rev_buf.getvalue())


def attempt(work: Callable[..., Any], *args: Any) -> Any:
    """work(*args), or the exception it raised (for the caller to raise in its own order)."""
    try:
        return work(*args)
    except Exception as e:
        return e


def _file_checksum_into(out: list, path: Path, length: int, fmt: ObjectFormat) -> None:
    out.append(attempt(_native.file_checksum, str(path), length, fmt.name))


@dataclass
class _EntryHeaders:
    kinds: np.ndarray  # uint8, as stored
    sizes: np.ndarray  # uint64: the entry's data size
    header_lens: np.ndarray  # uint8
    crcs: np.ndarray  # uint32, read back from the file


def _check_against_plan(written: WrittenPack) -> _EntryHeaders:
    """Check the pack on disk against the plan without hashing objects: its header, trailer
    and every entry's CRC as written, every entry header (type, size, delta base) as planned.
    Copied bytes were checked against their source's CRCs while copying, so this proves
    every copied entry; what packorder produced itself needs more (verify_produced)."""
    plan, path = written.plan, written.path
    n = len(plan.how)
    with open(path, "rb") as f:
        head = f.read(12)
    if head != b"PACK" + struct.pack(">II", 2, n):
        raise PackError(f"new pack {path} has a wrong header")
    # Hashing the whole file is the longest part: it runs beside the reads of CRCs and headers
    # (all release the GIL). Their failures are reported in the order of the checks below.
    trailer: list[bytes | BaseException] = []
    hasher = threading.Thread(
        target=_file_checksum_into, args=(trailer, path, written.size - written.fmt.rawsz, written.fmt)
    )
    hasher.start()
    try:
        ends = _entry_ends(written)
        read_crcs = attempt(_native.range_crcs, str(path), written.offsets.tobytes(), ends.tobytes())
        headers = attempt(_native.read_entry_headers, str(path), written.offsets.tobytes(), False, written.fmt.name)
    finally:
        hasher.join()
    for outcome in (trailer[0], read_crcs):
        if isinstance(outcome, BaseException):
            raise outcome
    if trailer[0] != written.checksum:
        raise PackError(f"new pack {path} does not match its trailer")
    crcs = np.frombuffer(read_crcs, dtype=">u4").astype(np.uint32)
    if not np.array_equal(crcs, written.crcs):
        bad = int(np.flatnonzero(crcs != written.crcs)[0])
        raise PackError(f"new pack {path}: entry at offset {int(written.offsets[bad])} is not what was written")
    if isinstance(headers, BaseException):
        raise headers
    kinds = np.frombuffer(headers.kinds, dtype=np.uint8)
    sizes = np.frombuffer(headers.sizes, dtype=np.uint64)
    ofs = np.frombuffer(headers.ofs_bases, dtype=np.uint64)
    is_delta = (plan.how == COPY_DELTA) | (plan.how == NEW_DELTA)
    want_kinds = np.where(is_delta, np.where(kinds == OBJ_REF_DELTA, OBJ_REF_DELTA, OBJ_OFS_DELTA), plan.kinds)
    problems = kinds != want_kinds
    known = plan.sizes > 0
    problems |= known & (sizes != plan.sizes)
    ofs_rows = np.flatnonzero(is_delta & (kinds == OBJ_OFS_DELTA))
    problems[ofs_rows] |= ofs[ofs_rows] != written.offsets[plan.base[ofs_rows]]
    ref_rows = np.flatnonzero(is_delta & (kinds == OBJ_REF_DELTA))
    if len(ref_rows):
        ids = np.frombuffer(headers.ref_ids, dtype=np.uint8).reshape(-1, written.fmt.rawsz)
        problems[ref_rows] |= (ids[ref_rows] != plan.oids[plan.base[ref_rows]]).any(axis=1)
    if problems.any():
        bad = int(np.flatnonzero(problems)[0])
        raise PackError(f"new pack {path}: entry at offset {int(written.offsets[bad])} does not match the plan")
    return _EntryHeaders(kinds, sizes, np.frombuffer(headers.header_lens, dtype=np.uint8), crcs)


def _entry_ends(written: WrittenPack) -> np.ndarray:
    n = len(written.offsets)
    ends = np.empty(n, dtype=np.uint64)
    ends[:-1] = written.offsets[1:]
    if n:
        ends[-1] = written.size - written.fmt.rawsz
    return ends


def _planned_index(written: WrittenPack, crcs: np.ndarray) -> IndexFiles:
    """The .idx and .rev of the pack as planned (ids from the plan, CRCs read back)."""
    plan = written.plan
    n = len(plan.how)
    order = id_order(keys(plan.oids))
    names = np.ascontiguousarray(plan.oids[order]).tobytes()
    positions = np.empty(n, dtype=np.uint32)
    positions[order] = np.arange(n, dtype=np.uint32)
    return _index_files(
        names,
        crcs[order].astype(">u4").tobytes(),
        written.offsets[order],
        positions.astype(">u4").tobytes(),
        written.checksum,
        written.fmt,
    )


def verify_crc(written: WrittenPack, limits: Limits, progress: ProgressCallback | None = None) -> IndexFiles:
    """`--verify crc`: the checks of _check_against_plan only (what Git relies on); the index."""
    return _planned_index(written, _check_against_plan(written).crcs)


# Above this share of produced entries (a repack with -f), re-indexing the whole pack, which
# resolves each delta family once, costs less than reading each produced object by itself.
PRODUCED_SHARE_FOR_FULL = 0.25
FAILS = "new pack fails verification: "  # before what a verification found (path and offset after it)
# A full verification is an index-pack of the new pack: its two passes, named for a repack.
VERIFY_PHASES = {INDEXING: "Verifying objects", RESOLVING: "Verifying deltas"}


def verify_produced(written: WrittenPack, limits: Limits, progress: ProgressCallback | None = None) -> IndexFiles:
    """`--verify produced` (the default): every copied entry proven by its CRC and its header
    against the plan (_check_against_plan); every entry packorder produced (a new delta, a
    loose object, an object rebuilt from its chain), and any copied from a source without
    CRCs (a v1 index), read back from the pack (inflated, its chain applied), hashed, and
    compared with its planned id. Copies build on their bases, which are proven the same
    way, so every object of the pack is proven."""
    plan = written.plan
    headers = _check_against_plan(written)
    assert plan.crc_checked is not None
    targets = np.flatnonzero(~plan.crc_checked)
    if len(targets) > PRODUCED_SHARE_FOR_FULL * len(plan.how):
        return verify_full(written, limits, progress)
    if len(targets):
        source = EntryColumns(
            path=str(written.path),
            offsets=written.offsets.astype(np.uint64).tobytes(),
            data_end=written.size - written.fmt.rawsz,
            header_lens=headers.header_lens.tobytes(),
            kinds=headers.kinds.tobytes(),
            sizes=headers.sizes.astype(np.uint64).tobytes(),
            bases=plan.base.astype(np.int64).tobytes(),
            crcs=b"",
            object_format=written.fmt.name,
        )
        check = _native.ObjectCheck(
            source,
            targets.astype(np.uint64).tobytes(),
            np.ascontiguousarray(plan.oids[targets]).tobytes(),
            plan.kinds[targets].astype(np.uint8).tobytes(),
            limits,
        )
        try:
            run_job(
                check, title="Verifying objects", count=len(targets), path=written.path, what=FAILS, progress=progress
            )
        except CorruptPackError as e:
            if e.kind == "not-planned" and e.offset is not None:
                raise _not_the_planned_object(written, int(np.searchsorted(written.offsets, e.offset))) from None
            raise
    return _planned_index(written, headers.crcs)


def verify(written: WrittenPack, level: str, limits: Limits, progress: ProgressCallback | None = None) -> IndexFiles:
    """Prove the new pack at `level` (settings.VERIFY_MODES names each level's function here);
    its .idx and .rev."""
    prove = globals()[VERIFY_MODES[level].function]
    return prove(written, limits, progress)


def _not_the_planned_object(written: WrittenPack, entry: int, found: str | None = None) -> CorruptPackError:
    """The error of an entry that is not the object planned for it: a source that holds,
    under one object's name, another's content. Named by the object and where it was read
    (the new pack is a temporary file, removed once this is raised)."""
    plan = written.plan
    what = f", which hashes to {found}" if found else ""
    return CorruptPackError(
        f"{FAILS}object {plan.oids[entry].tobytes().hex()} read from {plan.origin(entry)} holds another object's"
        " content"
        f"{what}; nothing was changed"
    )


def verify_full(written: WrittenPack, limits: Limits, progress: ProgressCallback | None = None) -> IndexFiles:
    """Index the new pack from scratch (every object resolved and hashed); its ids must be
    exactly the planned ones. Plain SHA-1: collision detection guards against crafted input,
    and every object here comes from the repository under the id it already has; what this
    catches (a wrong byte, a wrong delta) plain SHA-1 catches (0.27 s of 1.9 s on libgit2)."""
    native = _native.PackIndexer(str(written.path), limits, False, False, object_format=written.fmt.name)
    for work in (native.scan, native.resolve):
        run_job(native, work, title=VERIFY_PHASES, path=written.path, what=FAILS, progress=progress)
    path = str(written.path)
    left = native.unresolved_offsets()
    if left:
        raise CorruptPackError(f"{FAILS}{len(left)} unresolved deltas", int(left[0]), path)
    table = native.index_table()
    order = id_order(keys(written.plan.oids))
    if table.names != np.ascontiguousarray(written.plan.oids[order]).tobytes():
        found = np.frombuffer(table.names, dtype=np.uint8).reshape(-1, written.fmt.rawsz)
        by_offset = np.argsort(np.frombuffer(table.offsets, dtype=np.uint64), kind="stable")
        got = found[by_offset]  # the id of each entry, in pack order
        if len(got) == len(written.plan.oids):
            entry = int(np.flatnonzero((got != written.plan.oids).any(axis=1))[0])
            raise _not_the_planned_object(written, entry, got[entry].tobytes().hex())
        raise CorruptPackError(f"{FAILS}its objects are not the planned ones", None, path)
    if not np.array_equal(np.frombuffer(table.offsets, dtype=np.uint64), written.offsets[order]):
        raise CorruptPackError(f"{FAILS}its objects are not where they were planned", None, path)
    if native.checksum != written.checksum:
        raise CorruptPackError(f"{FAILS}trailer mismatch", None, path)
    offsets = np.frombuffer(table.offsets, dtype=np.uint64)
    return _index_files(table.names, table.crcs, offsets, table.rev_positions, written.checksum, written.fmt)
