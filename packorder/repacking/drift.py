"""How far a repository's layout has drifted from the order packorder wrote, read from the
packs' own structure in milliseconds (no workload is run): what `packorder gc --auto` looks
at besides Git's thresholds.

Two things undo an order:
- objects outside the ordered pack: pushes add packs and loose objects, each holding the
  newest history, which every workload reads first;
- a pack rewritten by Git: when `git gc` reuses deltas it writes a tree or commit stored as a
  delta among the blobs (by the type of its entry, not of its object), so commits and trees
  no longer come before the blobs. Every packorder order but `git` and `rev-list` writes all
  commits and trees before the first blob.

The drift is the share of the repository's objects that are in either place: 0 just after a
packorder repack, about 0.2 on libgit2 after `git gc` (docs/maintenance.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from packorder.format import idx as idx_format
from packorder.format import layout as layout_mod
from packorder.format.layout import PackLayout
from packorder.format.object_format import SHA1, ObjectFormat
from packorder.format.pack import OBJ_BLOB, OBJ_COMMIT, OBJ_TREE
from packorder.store.listing import list_loose, list_packs

# Orders whose packs do not put commits and trees first: misplacement means nothing there.
UNSORTED_ORDERS = ("git", "rev-list")


@dataclass
class Drift:
    ordered_pack: Path | None  # the largest pack that is neither cruft, .keep nor promisor
    objects: int  # objects of that pack, the other such packs and the loose objects
    outside: int  # of those, not in the ordered pack
    misplaced: int | None  # commits and trees of the ordered pack after its first blob
    share: float  # (outside + misplaced) / objects
    seconds: float


def _counted_packs(pack_dir: Path) -> list[Path]:
    """The packs the order applies to: not cruft (unreachable objects), not .keep (left
    alone by every repack), not promisor (kept apart in a partial clone)."""
    return [
        p
        for p in list_packs(pack_dir)
        if not any(p.with_suffix(ext).exists() for ext in (".mtimes", ".keep", ".promisor"))
    ]


def measure(
    git_dir: Path, order: str, fmt: ObjectFormat = SHA1, layout_of: Callable[[Path], PackLayout] | None = None
) -> Drift:
    """The drift of `git_dir`'s layout from `order`; `layout_of` gives a pack's layout when
    the caller has read it already (fleet triage), else it is read here."""
    started = time.perf_counter()
    objects_dir = git_dir / "objects"
    packs = _counted_packs(objects_dir / "pack")
    sizes = {p: p.stat().st_size for p in packs}
    counts = {p: idx_format.object_count(str(layout_mod.idx_path_of(p))) for p in packs}
    loose = len(list_loose(objects_dir, fmt))
    ordered = max(packs, key=lambda p: sizes[p]) if packs else None
    total = sum(counts.values()) + loose
    outside = total - (counts[ordered] if ordered is not None else 0)
    misplaced = None
    if ordered is not None and order not in UNSORTED_ORDERS:
        layout = layout_of(ordered) if layout_of is not None else layout_mod.load(ordered, fmt=fmt)
        kinds = layout.real_kinds()
        blobs = np.flatnonzero(kinds == OBJ_BLOB)
        if len(blobs):
            after = kinds[blobs[0] :]
            misplaced = int(((after == OBJ_COMMIT) | (after == OBJ_TREE)).sum())
        else:
            misplaced = 0
    share = (outside + (misplaced or 0)) / total if total else 0.0
    return Drift(ordered, total, outside, misplaced, share, time.perf_counter() - started)
