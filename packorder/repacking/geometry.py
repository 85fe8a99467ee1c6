"""Which packs a geometric repack rolls up: Git's rule (repack-geometry.c), so that
`packorder repack --geometric=N` picks what `git repack --geometric=N` picks.

The candidates are the local packs that are neither .keep nor cruft (promisor packs form a
progression of their own), sorted by object count. The largest packs that already form a
progression (each at least N times the next smaller) stay; the others roll up into one new
pack, and so do the smallest of those that stay while they are less than N times what rolls
up. A repository whose packs roll up entirely has no progression left: maintenance then
repacks everything into one pack (Git's geometric maintenance, and `packorder gc`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Candidate:
    """A pack as the rule sees it."""

    path: Path
    objects: int
    local: bool = True
    keep: bool = False
    cruft: bool = False
    promisor: bool = False
    in_old_layer: bool = False  # in an incremental chain, named by a layer the repack leaves alone


def split_at(weights: Sequence[int], factor: int) -> int:
    """How many of `weights` (ascending) roll up (compute_pack_geometry_split)."""
    n = len(weights)
    if not n:
        return 0
    i = n - 1
    while i > 0 and weights[i] >= factor * weights[i - 1]:
        i -= 1
    split = i + 1 if i else 0
    total = sum(weights[:split])
    while split < n and weights[split] < factor * total:
        total += weights[split]
        split += 1
    return split


@dataclass
class Geometry:
    """The candidates by object count, and how many of each progression roll up."""

    factor: int
    packs: list[Candidate] = field(default_factory=list)
    split: int = 0
    promisor_packs: list[Candidate] = field(default_factory=list)
    promisor_split: int = 0

    @property
    def rolled_up(self) -> list[Candidate]:
        return self.packs[: self.split]

    @property
    def staying(self) -> list[Candidate]:
        return self.packs[self.split :]

    @property
    def promisor_rolled_up(self) -> list[Candidate]:
        return self.promisor_packs[: self.promisor_split]

    @property
    def collapsed(self) -> bool:
        """Every pack rolls up: no progression is left (Git then repacks all into one)."""
        return self.split == len(self.packs)

    @property
    def preferred(self) -> Candidate | None:
        """The largest pack that stays (pack_geometry_preferred_pack): the multi-pack-index's
        preferred pack, and the ordered pack."""
        return next((p for p in reversed(self.staying) if p.local), None)


def plan(candidates: Sequence[Candidate], factor: int, local: bool = True, pack_kept: bool = False) -> Geometry:
    """Git's pack_geometry_init and pack_geometry_split over `candidates`: with `local`,
    alternates' packs are left out; without `pack_kept` (--pack-kept-objects), .keep packs;
    cruft packs always; packs named only by an older layer of an incremental chain too."""
    if factor < 1:
        raise ValueError("the geometric factor is a positive number")
    geometry = Geometry(factor)
    for pack in candidates:
        if pack.in_old_layer or (local and not pack.local) or (pack.keep and not pack_kept) or pack.cruft:
            continue
        (geometry.promisor_packs if pack.promisor else geometry.packs).append(pack)
    # Git sorts with qsort by count alone; ties are broken here by name, so that the choice
    # is the same on every run (which of two equal packs is "largest" decides nothing else).
    geometry.packs.sort(key=lambda p: (p.objects, p.path.name))
    geometry.promisor_packs.sort(key=lambda p: (p.objects, p.path.name))
    geometry.split = split_at([p.objects for p in geometry.packs], factor)
    geometry.promisor_split = split_at([p.objects for p in geometry.promisor_packs], factor)
    return geometry
