"""Whether the new packs fit on the disk, asked before anything is written. A full disk
found in the middle is handled too (the write fails, what was installed is taken away), but
finding it first costs nothing and leaves no half-written pack behind."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from packorder.errors import RepositoryError
from packorder.repacking import deltas as deltas_mod
from packorder.repacking.placement import entry_sizes
from packorder.store.repository import Repository
from packorder.units import human_size
from packorder.walk.objects import ObjectTable

# Each file's fixed part and its part an object (.idx v2: id, CRC, offset; .rev, .mtimes:
# one u32), a bitmap's guess, and the directory entries and rounding of a filesystem; ids
# and checksums are the repository's hash's length.
PER_OBJECT = 4 + 4 + 4 + 4
FIXED = 12 + 8 + 1024 + 3 * 12
SLACK = 64 << 10


def needed(repo: Repository, table: ObjectTable, choice: deltas_mod.DeltaChoice, new_deltas: dict[int, bytes]) -> int:
    """About the bytes a pack of `table` takes, with its index files: each copied entry its
    size where it is now, a new delta its length, an object written whole from a stored delta
    its inflated size (an upper bound on what it compresses to)."""
    sizes = entry_sizes(repo, table)
    for row, data in new_deltas.items():
        sizes[row] = len(data)
    rebuilt = np.flatnonzero(choice.stored_delta & (choice.base < 0))
    if len(rebuilt):
        sizes[rebuilt] = deltas_mod.object_sizes(repo, table, rebuilt).astype(np.int64)
    rawsz = repo.fmt.rawsz
    return int(sizes.sum()) + (PER_OBJECT + rawsz) * table.count + FIXED + 6 * rawsz


def check(directory: Path, need: int) -> None:
    """Refuse, before anything is written, if `directory`'s filesystem has less room than
    `need` bytes."""
    stats = os.statvfs(directory)
    free = stats.f_bavail * stats.f_frsize
    if free < need + SLACK:
        raise RepositoryError(
            f"not enough space in {directory} for the new packs: about {human_size(need + SLACK)} needed, "
            f"{human_size(free)} free; nothing was changed"
        )
