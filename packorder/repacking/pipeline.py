"""`packorder repack`: enumerate -> select deltas -> order -> write -> verify -> install.

Nothing the repository had is removed before the new packs, their .idx and .rev are
complete, synced to disk and verified to hold every object they replace. Reachable objects
go to the ordered pack; unreachable ones to a cruft pack with their ages (cruft.py), unless
they have expired; objects of .promisor packs to a new promisor pack. Packs with a .keep file
are left alone, and (with `local`, the default) objects an alternate has are not copied. The
repository's lock (lock.py, Git's gc.pid) keeps two repacks, or a repack and `git gc`, apart;
packs and loose objects that appear during the repack (a concurrent push) are never touched,
because only what was listed at the start can be removed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from packorder.errors import UsageError
from packorder.faults import crash_point
from packorder.orders.registry import ORDERS
from packorder.progress import ProgressCallback
from packorder.repacking import cruft as cruft_mod
from packorder.repacking import install as install_mod
from packorder.repacking import pack_groups as groups_mod
from packorder.repacking import recovery, space
from packorder.repacking import snapshot as snapshot_mod
from packorder.repacking.options import RepackOptions, RepackRequest, read_options
from packorder.repacking.pack_groups import CRUFT, MIN_PACK_SIZE_LIMIT, PROMISOR, PackGroup
from packorder.repacking.placement import entry_sizes, write_order
from packorder.repacking.repo import (
    ObjectHistory,
    ObjectTable,
    PackSource,
    Repository,
    enumerate_objects,
    object_history,
    open_repository,
)
from packorder.settings import peak_rss
from packorder.store import midx as midx_mod


@dataclass
class RepackResult:
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


class _Warnings:
    """Warnings of one repack: kept for the result, and passed on as they happen."""

    def __init__(self, warn: Callable[[str], None] | None) -> None:
        self.seen: list[str] = []
        self.warn = warn

    def __call__(self, message: str) -> None:
        self.seen.append(message)
        if self.warn is not None:
            self.warn(message)


def repack(
    repo_path: str | os.PathLike[str] | None = None,
    *,
    order: str | None = None,
    no_reuse_delta: bool = False,
    window: int | None = None,
    depth: int | None = None,
    threads: int | None = None,
    ref_delta: bool = False,
    write_bitmap: bool | None = None,
    verify: str | None = None,
    repick_backward_deltas: bool = False,
    cruft_expiration: str | None = None,
    max_cruft_size: int | None = None,
    local: bool = True,
    update_server_info: bool | None = None,
    dry_run: bool = False,
    output_dir: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
    warn: Callable[[str], None] | None = None,
    start: snapshot_mod.Snapshot | None = None,
) -> RepackResult:
    """Rewrite the repository's reachable objects into one pack in the chosen order (the
    repository's `packorder.order`, else recency), its unreachable ones into a cruft pack
    (those older than `cruft_expiration`, Git's date syntax, are dropped; without it none
    expires), and promisor objects into a promisor pack. Returns what was done; raises
    PackError subclasses with the repository untouched on any failure. `warn` is called with
    each warning as it happens (they are in the result too). `start` is a snapshot.take() of
    the repository (locked when repacking in place), for a caller that starts Git's walk
    before importing this module; repack takes its own otherwise."""
    started = time.perf_counter()
    seconds: dict[str, float] = {}
    warnings = _Warnings(warn)
    request = RepackRequest(
        order=order,
        no_reuse_delta=no_reuse_delta,
        window=window,
        depth=depth,
        threads=threads,
        ref_delta=ref_delta,
        write_bitmap=write_bitmap,
        verify=verify,
        repick_backward=repick_backward_deltas,
        cruft_expiration=cruft_expiration,
        max_cruft_size=max_cruft_size,
        local=local,
        update_server_info=update_server_info,
    )
    in_place = output_dir is None and not dry_run
    if output_dir is not None and write_bitmap:
        raise UsageError("a pack in output_dir gets no bitmap: a bitmap belongs beside the repository's own packs")
    if start is None:
        start = snapshot_mod.take(repo_path, lock=in_place, order=order, warn=warnings, bitmap=write_bitmap)
    else:
        if start.locked != in_place:
            start.close()
            raise UsageError("the snapshot given to repack must be locked exactly when it repacks in place")
        # Printed when the snapshot was taken (before this call); the result keeps them too.
        warnings.seen.extend(start.warnings)
    with start:
        repo = open_repository(snapshot=start)
        opts = read_options(repo, request)
        out_dir = Path(output_dir) if output_dir is not None else repo.pack_dir
        if output_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        if progress is not None:
            progress("Counting objects", 0, 0)
        retained = groups_mod.retained_cruft_packs(repo, opts)
        table = enumerate_objects(repo, snapshot=start, local=opts.local, retained=[p.path for p in retained])
        crash_point("enumerated")
        t_cruft = time.perf_counter()
        selection = cruft_mod.select(repo, table, opts.cruft_expiration)
        seconds["cruft"] = time.perf_counter() - t_cruft
        pruned_oids = table.oids[selection.expired]
        survivors = np.flatnonzero(~selection.expired)
        ages = selection.mtimes[survivors]
        table = table.subset(survivors)
        if progress is not None:
            progress("Counting objects", table.count, table.count)
        seconds["enumerate"] = time.perf_counter() - t
        cruft_sizes = split_at = None
        if opts.max_cruft_size is not None:
            cruft_sizes = entry_sizes(repo, table.subset(~table.reachable & ~table.promisor))
            split_at = max(opts.max_cruft_size, MIN_PACK_SIZE_LIMIT)
            if opts.max_cruft_size < MIN_PACK_SIZE_LIMIT:
                warnings("minimum pack size limit is 1 MiB")  # Git's pack-objects raises it so too
        groups = groups_mod.pack_groups(table, cruft_sizes, split_at)
        t = time.perf_counter()
        groups_mod.choose_deltas(repo, table, groups, opts, progress)
        seconds["deltas"] = time.perf_counter() - t
        crash_point("deltas-chosen")
        if not dry_run:
            space.check(
                out_dir,
                sum(space.needed(repo, table.subset(g.rows), g.choice, g.deltas) for g in groups if g.choice),
            )
        if opts.write_bitmap and output_dir is not None:
            opts.write_bitmap = False  # a bitmap belongs beside the repository's packs only
        if opts.write_bitmap and table.in_alternates:
            # No pack of ours can hold everything reachable; Git gives up bitmaps too.
            warnings("disabling bitmap writing, as some objects are not being packed (an alternate has them)")
            opts.write_bitmap = False
        choices = [g.choice for g in groups if g.choice is not None]
        result = RepackResult(
            git_dir=repo.git_dir,
            packs=[],
            order=opts.order,
            objects=table.count,
            reachable=int(table.reachable.sum()),
            unreachable_kept=int((~table.reachable).sum()),
            unreachable_pruned=len(pruned_oids),
            reused_deltas=sum(int(c.reused.sum()) for c in choices),
            cut_deltas=sum(int(c.cut.sum()) for c in choices),
            whole_objects=sum(int((c.base < 0).sum()) for c in choices),
            pack_bytes=0,
            old_pack_bytes=sum(p.path.stat().st_size for p in repo.packs if not p.foreign and not p.keep),
            removed_packs=[],
            removed_loose=0,
            kept_packs=[p.path for p in repo.packs if p.keep],
            promisor=bool(table.promisor.any()),
            bitmap=dry_run and opts.write_bitmap,
            dry_run=dry_run,
            verify=opts.verify,
            new_deltas=sum(len(g.deltas) for g in groups),
            rescued=selection.rescued,
            in_alternates=table.in_alternates,
            retained_cruft_packs=[p.path for p in retained],
            settings=opts.describe(),
        )
        # Objects placed by where they sit in history: one set of walks for the whole table
        # (started with the snapshot when the caller knew the order), cut per pack below.
        t = time.perf_counter()
        history = None
        spec = ORDERS[opts.order]
        if spec.needs_history:
            history = object_history(
                repo,
                table,
                start.take_history_walks(),
                intro=spec.needs_intro,
                unreleased=spec.needs_unreleased,
                head=spec.needs_head,
            )
        seconds["order"] = time.perf_counter() - t
        bitmap_heads = groups_mod.bitmap_heads(repo, table, groups) if opts.write_bitmap and in_place else None
        if dry_run:
            t = time.perf_counter()
            for group in groups:
                assert group.choice is not None
                write_order(
                    repo,
                    table.subset(group.rows),
                    group.choice,
                    group.order(opts.order),
                    opts.ref_delta,
                    history.subset(group.rows) if history is not None and group.kind != CRUFT else None,
                )
            seconds["order"] += time.perf_counter() - t
        else:
            journal = recovery.Journal(repo.git_dir) if in_place else None
            result.packs = _write_and_install(
                repo,
                table,
                groups,
                opts,
                out_dir,
                result,
                journal,
                history,
                bitmap_heads,
                ages,
                split_at,
                seconds,
                progress,
            )
            if in_place:
                assert journal is not None
                _replace_old(repo, table, pruned_oids, retained, opts, result, journal, warnings, seconds)
    seconds["total"] = time.perf_counter() - started
    result.seconds = seconds
    result.peak_rss_bytes = peak_rss()
    result.warnings = warnings.seen
    return result


def _write_and_install(
    repo: Repository,
    table: ObjectTable,
    groups: list[PackGroup],
    opts: RepackOptions,
    out_dir: Path,
    result: RepackResult,
    journal: recovery.Journal | None,
    history: ObjectHistory | None,
    bitmap_heads: np.ndarray | None,
    ages: np.ndarray,
    split_at: int | None,
    seconds: dict,
    progress: ProgressCallback | None,
) -> list[Path]:
    """Write each group's pack and install it beside the old ones (nothing is removed here).
    On any failure the packs this run installed are taken away again, so that a failed repack
    (a full disk, a signal) leaves the repository as it was."""
    installed: list[Path] = []
    fresh: list[Path] = []  # installed by this run (not there before it)
    queue = list(groups)
    try:
        while queue:
            group = queue.pop(0)
            assert group.choice is not None
            tmp_pack, files, written, bitmap = groups_mod.write_group(
                repo,
                table.subset(group.rows),
                group.choice,
                opts,
                group.order(opts.order),
                out_dir,
                seconds,
                progress,
                group.deltas,
                history.subset(group.rows) if history is not None and group.kind != CRUFT else None,
                bitmap_heads if group.kind != CRUFT else None,
                ages[group.rows] if group.kind == CRUFT else None,
            )
            if groups_mod.over_cruft_size(group, written, split_at):
                # Deltas made whole where their base fell in another part: halve and redo.
                tmp_pack.unlink()
                halves = [PackGroup(CRUFT, half) for half in np.array_split(group.rows, 2)]
                groups_mod.choose_deltas(repo, table, halves, opts)
                queue[:0] = halves
                continue
            if bitmap is not None:
                result.bitmap = bitmap.data is not None
                result.bitmap_kind = "pack" if result.bitmap else ""
                result.bitmaps = bitmap.bitmaps
                result.bitmap_note = bitmap.why
            name = out_dir / f"pack-{written.checksum.hex()}.pack"
            existed = name.with_suffix(".idx").exists()
            if journal is not None:
                journal.installing(name)
            final = install_mod.install(tmp_pack, files, written.checksum, out_dir, group.kind == PROMISOR)
            if not existed:
                fresh.append(final)
            installed.append(final)
            if group.kind == CRUFT:
                result.cruft_packs.append(final)
            result.pack_bytes += written.size
    except BaseException:
        for pack in fresh:
            install_mod.remove_pack(pack)
        if journal is not None:
            journal.finish()
        raise
    return installed


def _replace_old(
    repo: Repository,
    table: ObjectTable,
    pruned_oids: np.ndarray,
    retained: list[PackSource],
    opts: RepackOptions,
    result: RepackResult,
    journal: recovery.Journal,
    warnings: _Warnings,
    seconds: dict,
) -> None:
    """Once the installed packs are proven to hold every object, remove what they replace,
    then write the multi-pack-index and server info again."""
    t = time.perf_counter()
    kept = result.packs + [p.path for p in retained]
    install_mod.check_complete(kept, table)
    removal = install_mod.remove_replaced(repo, table, pruned_oids, kept, opts.cruft_expiration, warnings, journal)
    journal.finish()
    result.removed_packs, result.removed_loose = removal.packs, removal.loose
    # Beside packs it does not replace the pack's bitmap would lack objects: a
    # multi-pack-index one covers them all. A multi-pack-index the repository had
    # is written again, in its form.
    midx_bitmap = opts.write_bitmap and bool(result.packs) and not result.bitmap
    if midx_bitmap or removal.midx.present:
        wrote = midx_mod.write(repo.git_dir, removal.midx, midx_bitmap or removal.midx.bitmap, warnings)
        if midx_bitmap and wrote:
            result.bitmap, result.bitmap_kind = True, "multi-pack-index"
    if opts.update_server_info:
        install_mod.update_server_info(repo)
        result.server_info = True
        crash_point("server-info-updated")
    seconds["install"] = time.perf_counter() - t
