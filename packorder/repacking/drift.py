"""How far a repository's layout has drifted from the order packorder wrote, read from the
packs' own structure in milliseconds (no workload is run): what `packorder gc` weighs,
beside the geometric progression, to decide on an all-into-one ordered repack.

Two things undo an order:
- objects outside the ordered pack (the largest, as the geometric rule sees packs): pushes
  add packs and loose objects, a geometric repack rolls them up beside it;
- a pack rewritten by Git: when `git gc` reuses deltas it writes a tree or commit stored as a
  delta among the blobs (by the type of its entry, not of its object), so commits and trees
  no longer come before the blobs. Every packorder order but `git` and `rev-list` writes all
  commits and trees before the first blob that is not a tag tip (a tag may name a blob:
  recency writes it among the other tag tips, in front).

The drift is the share of the repository's objects that are in either place: 0 just after a
packorder repack (docs/maintenance.md). The second count reads every entry header of the
ordered pack (0.2 s on git/git); a pack never changes, so it is kept in
`$GIT_DIR/packorder-drift` under the pack's name and size, and read from there until the
ordered pack is another.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from packorder import gitcmd
from packorder.durable import write_atomically
from packorder.format import idx as idx_format
from packorder.format.object_format import SHA1, ObjectFormat
from packorder.format.pack import OBJ_BLOB, OBJ_COMMIT, OBJ_TREE
from packorder.store.listing import list_packs

if TYPE_CHECKING:
    import numpy as np

    from packorder.format.layout import PackLayout

# Orders whose packs do not put commits and trees first: misplacement means nothing there.
UNSORTED_ORDERS = ("git", "rev-list")
CACHE = "packorder-drift"


@dataclass
class Drift:
    ordered_pack: Path | None  # the largest pack that is neither cruft, .keep nor promisor
    objects: int  # objects of that pack, the other such packs and the loose objects
    outside: int  # of those, not in the ordered pack
    misplaced: int | None  # commits and trees of the ordered pack after its first blob (not a tag tip)
    share: float  # (outside + misplaced) / objects
    seconds: float

    @property
    def outside_share(self) -> float:
        return self.outside / self.objects if self.objects else 0.0


def _counted_packs(pack_dir: Path) -> list[Path]:
    """The packs the order applies to: not cruft (unreachable objects), not .keep (left
    alone by every repack), not promisor (kept apart in a partial clone)."""
    return [
        p
        for p in list_packs(pack_dir)
        if not any(p.with_suffix(ext).exists() for ext in (".mtimes", ".keep", ".promisor"))
    ]


def misplaced_in(layout: PackLayout, tag_tips: Sequence[bytes]) -> int:
    """Commits and trees written after the pack's first blob that is not a tag tip (tag
    tips of any type left out of the count)."""
    import numpy as np

    from packorder.store.object_ids import keys, lookup, sort_keys

    kinds = layout.real_kinds()
    tip = np.zeros(len(kinds), dtype=bool)
    if tag_tips and len(kinds):
        tips = np.frombuffer(b"".join(tag_tips), np.uint8).reshape(-1, layout.oids.shape[1])
        tip = lookup(sort_keys(keys(tips)), keys(layout.oids)) >= 0
    return misplaced_count(kinds, tip)


def misplaced_count(kinds: np.ndarray, tip: np.ndarray) -> int:
    """misplaced_in of entries of real types `kinds`, in pack order, `tip` marking tag tips."""
    import numpy as np

    blobs = np.flatnonzero((kinds == OBJ_BLOB) & ~tip)
    if not len(blobs):
        return 0
    after = slice(int(blobs[0]), None)
    return int((((kinds[after] == OBJ_COMMIT) | (kinds[after] == OBJ_TREE)) & ~tip[after]).sum())


def loose_count(objects_dir: Path, fmt: ObjectFormat) -> int:
    """How many loose objects there are (names of the right length in the fan-out
    directories), counted without sorting or keeping them."""
    count = 0
    with contextlib.suppress(OSError):
        for sub in os.scandir(objects_dir):
            if len(sub.name) == 2 and sub.is_dir():
                with contextlib.suppress(OSError):
                    count += sum(1 for e in os.scandir(sub.path) if len(e.name) == fmt.hexsz - 2)
    return count


def _tag_tips(git_dir: Path) -> list[bytes]:
    proc = gitcmd.run(["show-ref", "--tags", "-d"], git_dir=git_dir, check=False)
    return sorted({bytes.fromhex(line.split()[0]) for line in proc.stdout.decode().splitlines() if line.strip()})


def _key(pack: Path) -> str:
    # A pack's name is its checksum: its bytes, and so the count, are the same while it
    # has that name (Git touches its mtime when a push brings objects it holds).
    return f"{pack.name} {pack.stat().st_size}"


def _cached(git_dir: Path, pack: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        key, _, value = (git_dir / CACHE).read_text().strip().rpartition(" ")
        if key == _key(pack):
            return int(value)
    return None


def remember(git_dir: Path, pack: Path, misplaced: int) -> None:
    """Keep the count of a pack written just now (a repack knows it from its plan)."""
    _remember(git_dir, pack, misplaced)


def _remember(git_dir: Path, pack: Path, misplaced: int) -> None:
    text = f"{_key(pack)} {misplaced}\n"
    # A cache: a repository that cannot be written to is measured again next time.
    with contextlib.suppress(OSError):
        write_atomically(git_dir / CACHE, lambda f: f.write(text.encode()), 0o644)


def measure(
    git_dir: Path,
    order: str,
    fmt: ObjectFormat = SHA1,
    layout_of: Callable[[Path], PackLayout] | None = None,
    remember: bool = True,
) -> Drift:
    """The drift of `git_dir`'s layout from `order`; `layout_of` gives a pack's layout when
    the caller has read it already (fleet triage), else it is read here. Without `remember`
    (a reader that changes nothing, as fleet triage), the count measured is not kept."""
    started = time.perf_counter()
    objects_dir = git_dir / "objects"
    packs = _counted_packs(objects_dir / "pack")
    counts = {p: idx_format.object_count(str(p.with_suffix(".idx"))) for p in packs}
    loose = loose_count(objects_dir, fmt)
    ordered = max(packs, key=lambda p: (counts[p], p.name)) if packs else None
    total = sum(counts.values()) + loose
    outside = total - (counts[ordered] if ordered is not None else 0)
    misplaced = None
    if ordered is not None and order not in UNSORTED_ORDERS:
        misplaced = _cached(git_dir, ordered)
        if misplaced is None:
            from packorder.format import layout as layout_mod

            layout = layout_of(ordered) if layout_of is not None else layout_mod.load(ordered, fmt=fmt)
            misplaced = misplaced_in(layout, _tag_tips(git_dir))
            if remember:
                _remember(git_dir, ordered, misplaced)
    share = (outside + (misplaced or 0)) / total if total else 0.0
    return Drift(ordered, total, outside, misplaced, share, time.perf_counter() - started)
