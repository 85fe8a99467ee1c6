"""The native core's Python face (native/src/lib.rs registers it, native/src/python/ holds
it). Arrays travel as bytes, native-endian unless told; ids as concatenated raw ids of the
pack's hash; "object_format" is "sha1" or "sha256"."""

import os
from collections.abc import Sequence
from typing import Final, Literal, TypeAlias, final

from typing_extensions import Buffer

from packorder.format.layout import EntryColumns
from packorder.indexer.fsck import Checks
from packorder.settings import Limits

_StrPath: TypeAlias = str | os.PathLike[str]
# (phase, done, total) of a job; the phases are the PHASE_* constants (4: the delta search).
_Progress: TypeAlias = tuple[int, int, int]

__all__ = [
    "PHASE_CHECKSUM",
    "PHASE_INDEXING",
    "PHASE_RESOLVING",
    "PHASE_WALKING",
    "BitmapOutcome",
    "CheckOutcome",
    "DeltaIndex",
    "DeltaSearch",
    "EntryHeaders",
    "FileChecksum",
    "Finding",
    "FoundDeltas",
    "IndexTable",
    "IndexedEntries",
    "ObjectCheck",
    "ObjectWalk",
    "ObjectWalker",
    "PackFormatError",
    "PackIndexer",
    "PackStream",
    "PackWriter",
    "RevList",
    "StreamCounts",
    "WalkEdges",
    "Walked",
    "WriteOutcome",
    "add_families",
    "apply_delta",
    "bases_first",
    "chain_roots_depths",
    "encode_entry_header",
    "file_checksum",
    "find_hits",
    "find_ids",
    "fsck_messages",
    "id_sort_order",
    "index_pack_reads",
    "loose_header",
    "near_read",
    "object_id",
    "pack_bitmap",
    "parse_entry_header",
    "parse_pack_access",
    "range_crcs",
    "read_entry_headers",
    "read_loose",
    "tune_allocator",
]

PHASE_INDEXING: int
PHASE_RESOLVING: int
PHASE_CHECKSUM: int
PHASE_WALKING: int

class PackFormatError(Exception):
    """Raised as PackFormatError(message, offset or None)."""

    kind: Literal["corrupt", "io", "interrupted", "missing", "not-planned"]
    object_id: bytes | None  # the object a "missing" one is about

@final
class BitmapOutcome:
    data: Final[bytes | None]
    bitmaps: Final[int]
    xored: Final[int]
    why: Final[str | None]
    edges_stored: Final[int]
    edges_named: Final[int]
    graph_from_walk: Final[bool]

@final
class Finding:
    id: Final[bytes]
    lines: Final[list[tuple[int, str]]]  # (level, text) as Git prints them
    fatal: Final[str | None]  # the line Git dies with, if this fails the pack

@final
class CheckOutcome:
    findings: Final[list[Finding]]
    foreign_ids: Final[bytes]
    foreign_kinds: Final[bytes]
    outside: Final[list[tuple[bytes, str]]]

@final
class IndexTable:
    names: Final[bytes]
    crcs: Final[bytes]
    offsets: Final[bytes]
    rev_positions: Final[bytes]

@final
class IndexedEntries:
    offsets: Final[bytes]
    kinds: Final[bytes]
    real_kinds: Final[bytes]
    sizes: Final[bytes]
    ids: Final[bytes]

@final
class EntryHeaders:
    kinds: Final[bytes]
    sizes: Final[bytes]
    header_lens: Final[bytes]
    ofs_bases: Final[bytes]
    ref_ids: Final[bytes]
    object_sizes: Final[bytes]

@final
class StreamCounts:
    entries_read: Final[int]
    entries_declared: Final[int]  # what the pack's header declares
    bytes_used: Final[int]  # what the pack so far takes of the input
    bytes_git_read: Final[int]  # what Git's reads would have read by now (its progress)

@final
class PackStream:
    def __new__(
        cls,
        header: bytes = ...,
        limit: int = 0,
        object_format: str = "sha1",
        detect_collisions: bool = True,
        budget: int = ...,
        threads: int = 1,
        git_buffer: int = ...,
    ) -> PackStream: ...
    def set_checks(self, checks: Checks) -> None: ...
    def want(self) -> int: ...
    def feed(self, data: bytes) -> None: ...
    def end_of_input(self) -> None: ...
    def counts(self) -> StreamCounts: ...
    def rest(self) -> bytes: ...
    in_entries: Final[bool]
    done: Final[bool]
    over_limit: Final[bool]

@final
class PackIndexer:
    def __new__(
        cls,
        path: _StrPath,
        limits: Limits,
        detect_collisions: bool = True,
        writable: bool = False,
        split_min_bytes: int | None = None,
        trace: bool = False,
        object_format: str = "sha1",
    ) -> PackIndexer: ...
    def scan(self) -> None: ...
    def adopt(self, stream: PackStream) -> None: ...
    def resolve(self) -> None: ...
    def set_checks(self, checks: Checks) -> None: ...
    def checks_failed(self) -> bool: ...
    def finish_checks(self) -> CheckOutcome: ...
    def check_special_blob(self, id: bytes, special: str, kind: int | None, data: bytes) -> list[Finding]: ...
    def record_shape(self) -> None: ...
    def delta_shape(self) -> tuple[bytes, bytes]: ...
    def unresolved_offsets(self) -> list[int]: ...
    def missing_bases(self) -> list[bytes]: ...
    def append_bases(self, bases: Sequence[tuple[bytes, int, bytes]], level: int) -> tuple[int, int | None]: ...
    def finish_thin(self) -> bytes: ...
    def index_table(self) -> IndexTable: ...
    def entries(self) -> IndexedEntries: ...
    def trace_offsets(self) -> bytes: ...
    def progress(self) -> _Progress: ...
    def cancel(self) -> None: ...
    checksum: Final[bytes | None]
    version: Final[int | None]
    pack_size: Final[int]
    def stats(self) -> dict[str, int]: ...

@final
class FileChecksum:
    def __new__(cls, object_format: str = "sha1") -> FileChecksum: ...
    def update(self, data: Buffer) -> None: ...
    def digest(self) -> bytes: ...

@final
class RevList:
    def __new__(cls, object_format: str = "sha1") -> RevList: ...
    def feed(self, data: bytes) -> None: ...
    def feed_fd(self, fd: int) -> None: ...
    def finish(self) -> Walked: ...

@final
class WalkEdges: ...

@final
class Walked:
    ids: Final[bytes]
    name_hashes: Final[bytes]
    name_hashes_v2: Final[bytes]
    path_hashes: Final[bytes]
    missing: Final[bytes]
    def __eq__(self, value: object, /) -> bool: ...

@final
class ObjectWalk:
    walked: Final[Walked]
    edges: Final[WalkEdges | None]

@final
class ObjectWalker:
    def __new__(
        cls,
        packs: Sequence[_StrPath],
        loose_ids: bytes,
        loose_paths: Sequence[_StrPath],
        commits: bytes,
        roots: Sequence[tuple[bytes, bytes | None]],
        index_files: Sequence[_StrPath],
        in_commit_order: bool,
        missing_ok: bool,
        shallow: bytes,
        limits: Limits,
        parallel_from: int = ...,
        run_items: int = ...,
        object_format: str = "sha1",
        record_edges: bool = False,
    ) -> ObjectWalker: ...
    def run(self) -> ObjectWalk: ...
    def progress(self) -> _Progress: ...
    def cancel(self) -> None: ...
    unsupported: Final[str | None]

@final
class WriteOutcome:
    offsets: Final[bytes]
    crcs: Final[bytes]
    checksum: Final[bytes]
    size: Final[int]

@final
class PackWriter:
    def __new__(
        cls,
        sources: Sequence[EntryColumns],
        how: bytes,
        src: bytes,
        pos: bytes,
        base: bytes,
        kinds: bytes,
        oids: bytes,
        loose: Sequence[_StrPath],
        new_deltas: Sequence[bytes],
        ref_delta: bool,
        level: int,
        limits: Limits,
        object_format: str = "sha1",
    ) -> PackWriter: ...
    def write(self, path: _StrPath) -> WriteOutcome: ...
    def progress(self) -> _Progress: ...
    def cancel(self) -> None: ...

@final
class ObjectCheck:
    def __new__(
        cls,
        pack: EntryColumns,
        targets: bytes,
        ids: bytes,
        kinds: bytes,
        limits: Limits,
    ) -> ObjectCheck: ...
    def run(self) -> None: ...
    def progress(self) -> _Progress: ...
    def cancel(self) -> None: ...

@final
class DeltaIndex:
    def __new__(cls, base: bytes) -> DeltaIndex: ...
    def encode(self, target: bytes, max_size: int | None = None) -> bytes | None: ...
    memory: Final[int]

@final
class FoundDeltas:
    bases: Final[bytes]
    deltas: Final[list[bytes]]
    stats: Final[dict[str, int]]

@final
class DeltaSearch:
    def __new__(
        cls,
        packs: Sequence[EntryColumns],
        loose: Sequence[_StrPath],
        kinds: bytes,
        sizes: bytes,
        sources: bytes,
        positions: bytes,
        max_depths: bytes,
        same_pack: bytes,
        chunks: bytes,
        window: int,
        limits: Limits,
        ranks: bytes | None = None,
    ) -> DeltaSearch: ...
    def run(self) -> FoundDeltas: ...
    def progress(self) -> _Progress: ...
    def cancel(self) -> None: ...

def pack_bitmap(
    pack_path: _StrPath,
    offsets: bytes,
    data_end: int,
    bases: bytes,
    kinds: bytes,
    oids: bytes,
    name_hashes: bytes,
    selected: bytes,
    checksum: bytes,
    hash_cache: bool,
    limits: Limits,
    edges: WalkEdges | None,
) -> BitmapOutcome: ...
def loose_header(path: _StrPath) -> tuple[int, int]: ...
def read_loose(path: _StrPath) -> tuple[int, bytes]: ...
def id_sort_order(oids: bytes, object_format: str = "sha1") -> bytes: ...
def find_ids(sorted: bytes, want: bytes, object_format: str = "sha1") -> bytes: ...
def find_hits(sorted: bytes, want: bytes, object_format: str = "sha1") -> tuple[bytes, bytes]: ...
def object_id(kind: int, data: bytes, detect_collisions: bool = True, object_format: str = "sha1") -> bytes: ...
def tune_allocator() -> bool: ...
def fsck_messages() -> list[tuple[str, str]]: ...
def read_entry_headers(
    path: _StrPath, offsets: bytes, object_sizes: bool = True, object_format: str = "sha1"
) -> EntryHeaders: ...
def range_crcs(path: _StrPath, starts: bytes, ends: bytes) -> bytes: ...
def add_families(roots: bytes, start: bytes, child: bytes, filled: bytes) -> tuple[bytes, bytes]: ...
def bases_first(order: bytes, base: bytes) -> bytes: ...
def chain_roots_depths(base: bytes) -> tuple[bytes, bytes]: ...
def file_checksum(path: _StrPath, length: int, object_format: str = "sha1") -> bytes: ...
def parse_pack_access(data: bytes) -> tuple[list[bytes], bytes, bytes] | None: ...
def near_read(packs: bytes, starts: bytes, ends: bytes, near: int) -> bytes: ...
def index_pack_reads(
    child: bytes, start: bytes, size: bytes, roots: bytes, cache_limit: int, threads: int, keeps_children: bool
) -> bytes: ...
def apply_delta(base: bytes, delta: bytes) -> bytes: ...
def parse_entry_header(
    buf: bytes, offset: int, object_format: str = "sha1"
) -> tuple[int, int, int, int | None, bytes | None] | None: ...
def encode_entry_header(kind: int, size: int, ofs_distance: int | None = None) -> bytes: ...
