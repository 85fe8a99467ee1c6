"""What a repack did (`RepackResult`, which packorder.repack returns), and the warnings it
gave on the way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packorder.repacking.options import RepackOptions
    from packorder.repacking.pack_groups import PackGroup
    from packorder.store.repository import Repository
    from packorder.walk.objects import ObjectTable


@dataclass
class RepackResult:
    """What `packorder.repack` (and the repack of `packorder.gc`) did: the packs it wrote
    and removed, how many objects went where and how their deltas were chosen, the bitmap
    and multi-pack-index written, the settings it ran with, its timings and warnings.
    `--json` prints it."""

    git_dir: Path
    packs: list[Path]
    order: str
    objects: int
    reachable: int
    unreachable_kept: int  # in the cruft pack (or a promisor pack)
    unreachable_pruned: int  # expired: dropped
    reused_deltas: int
    cut_deltas: int
    whole_objects: int
    pack_bytes: int
    old_pack_bytes: int
    removed_packs: list[Path]
    removed_loose: int
    kept_packs: list[Path]
    promisor: bool
    bitmap: bool
    dry_run: bool
    verify: str
    seconds: dict[str, float] = field(default_factory=dict)
    peak_rss_bytes: int = 0
    new_deltas: int = 0  # deltas found by the search (not among reused_deltas)
    bitmap_kind: str = ""  # "pack" (the pack's own .bitmap) or "multi-pack-index"
    bitmaps: int = 0  # commits given a bitmap in the pack's own .bitmap
    bitmap_note: str = ""  # why the pack could not have its own bitmap (a multi-pack one was written)
    cruft_packs: list[Path] = field(default_factory=list)
    retained_cruft_packs: list[Path] = field(default_factory=list)  # left as they are (--max-cruft-size)
    rescued: int = 0  # old unreachable objects kept because a recent one reaches them
    in_alternates: int = 0  # reachable objects left to an alternate (`local`)
    server_info: bool = False  # objects/info/packs and info/refs were updated
    settings: dict[str, object] = field(default_factory=dict)  # the effective options
    warnings: list[str] = field(default_factory=list)
    strategy: str = "full"  # "full": everything into one pack; "geometric": the small packs rolled up
    rolled_up: list[Path] = field(default_factory=list)  # geometric: the packs rolled up
    ordered_pack: Path | None = None  # geometric: the pack left as it is, the multi-pack-index's preferred one
    midx: str = ""  # the multi-pack-index written: "plain", "incremental", or none
    fresh_packs: list[Path] = field(default_factory=list)  # installed by this run, not there before
    misplaced: tuple[Path, int] | None = None  # the ordered pack written and its drift count (drift.py)

    @classmethod
    def planned(
        cls,
        repo: Repository,
        opts: RepackOptions,
        table: ObjectTable,
        groups: Sequence[PackGroup],
        dry_run: bool,
    ) -> RepackResult:
        """What a repack writing `table` as `groups` will report, before anything is
        written; what an all-into-one repack and a roll-up count differently (what is
        pruned, the old packs' bytes, the bitmap) is theirs to `replace`."""
        choices = [g.choice for g in groups if g.choice is not None]
        reachable = int(table.reachable.sum())
        return cls(
            git_dir=repo.git_dir,
            packs=[],
            order=opts.order,
            objects=table.count,
            reachable=reachable,
            unreachable_kept=table.count - reachable,
            unreachable_pruned=0,
            reused_deltas=sum(int(c.reused.sum()) for c in choices),
            cut_deltas=sum(int(c.cut.sum()) for c in choices),
            whole_objects=sum(int((c.base < 0).sum()) for c in choices),
            pack_bytes=0,
            old_pack_bytes=0,
            removed_packs=[],
            removed_loose=0,
            kept_packs=[p.path for p in repo.packs if p.keep],
            promisor=bool(table.promisor.any()),
            bitmap=False,
            dry_run=dry_run,
            verify=opts.verify,
            new_deltas=sum(len(g.deltas) for g in groups),
            settings=opts.describe(),
        )


class Warnings:
    """Warnings of one repack: kept for the result, and passed on as they happen."""

    def __init__(self, warn: Callable[[str], None] | None) -> None:
        self.seen: list[str] = []
        self.warn = warn

    def __call__(self, message: str) -> None:
        self.seen.append(message)
        if self.warn is not None:
            self.warn(message)
