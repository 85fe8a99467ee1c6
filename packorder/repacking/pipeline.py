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
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from packorder.errors import UsageError
from packorder.faults import crash_point
from packorder.native_call import core_errors
from packorder.orders.catalog import CATALOG
from packorder.progress import ProgressCallback
from packorder.repacking import cruft as cruft_mod
from packorder.repacking import drift as drift_mod
from packorder.repacking import install as install_mod
from packorder.repacking import midx_policy, recovery, space
from packorder.repacking import pack_groups as groups_mod
from packorder.repacking import snapshot as snapshot_mod
from packorder.repacking.options import RepackOptions, RepackRequest, read_options
from packorder.repacking.pack_groups import CRUFT, MIN_PACK_SIZE_LIMIT
from packorder.repacking.placement import entry_sizes, write_order
from packorder.repacking.repack_result import RepackResult, Warnings
from packorder.repacking.snapshot import Snapshot
from packorder.settings import peak_rss
from packorder.store import midx as midx_mod
from packorder.store.repository import PackSource, Repository, open_repository
from packorder.walk.history import ObjectHistory, object_history
from packorder.walk.objects import ObjectTable, enumerate_objects


@core_errors
def repack(
    repo: str | os.PathLike[str] | None = None,
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
    path_walk: bool | None = None,
    name_hash_version: int | None = None,
    cruft_expiration: str | None = None,
    max_cruft_size: int | None = None,
    combine_cruft_below_size: int | None = None,
    local: bool = True,
    write_midx: str | None = None,
    delete: bool = True,
    geometric: int | None = None,
    update_server_info: bool | None = None,
    dry_run: bool = False,
    output_dir: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
    warn: Callable[[str], None] | None = None,
    start: Snapshot | None = None,
) -> RepackResult:
    """Rewrite the repository's reachable objects into one pack in the chosen order (the
    repository's `packorder.order`, else recency), its unreachable ones into a cruft pack
    (those older than `cruft_expiration`, Git's date syntax, are dropped; without it none
    expires; new cruft packs split at `max_cruft_size`; only cruft packs smaller than
    `combine_cruft_below_size` rewritten), and promisor objects into a promisor pack. With
    `write_midx` ("plain" or "incremental"), a multi-pack-index of the packs that result (the
    ordered pack preferred; a bitmap goes there). Without `delete` (Git's `repack -a`
    without -d), what the new packs replace stays. With `geometric` (N), only the packs that
    break a geometric progression of factor N roll up, into one pack in the same order, and
    the ordered pack stays (geometric.py; `git repack --geometric=N`). `path_walk` (Git's
    `--path-walk`; default pack.usePathWalk) searches new deltas among each path's versions
    first; `name_hash_version` 2 sorts the rest by Git's version-2 name hash. Returns what
    was done; raises
    PackError subclasses with the repository untouched on any failure. `warn` is called with
    each warning as it happens (they are in the result too). `start` is a snapshot.take() of
    the repository (locked when repacking in place), for a caller that starts Git's walk
    before importing this module; repack takes its own otherwise."""
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
        path_walk=path_walk,
        name_hash_version=name_hash_version,
        cruft_expiration=cruft_expiration,
        max_cruft_size=max_cruft_size,
        combine_cruft_below_size=combine_cruft_below_size,
        local=local,
        update_server_info=update_server_info,
        write_midx=write_midx,
        delete=delete,
        geometric=geometric,
        dry_run=dry_run,
        output_dir=output_dir,
    )
    request.check(snapshot_given=start is not None)
    if geometric:
        from packorder.repacking.geometric import repack_geometric

        return repack_geometric(repo, request, progress=progress, warn=warn)
    return RepackRun(request, progress, Warnings(warn)).run(repo, start)


class RepackRun:
    """One all-into-one repack, step by step: snapshot, enumerate, group, choose deltas,
    then plan (a dry run) or write, verify and install, and remove what was replaced."""

    def __init__(self, request: RepackRequest, progress: ProgressCallback | None, warnings: Warnings) -> None:
        self.request = request
        self.progress = progress
        self.warnings = warnings
        self.seconds: dict[str, float] = {}

    def run(self, repo_path: str | os.PathLike[str] | None, start: snapshot_mod.Snapshot | None) -> RepackResult:
        started = time.perf_counter()
        start = self._snapshot(repo_path, start)
        with start:
            repo = open_repository(listing=start)
            opts = read_options(repo, self.request)
            out_dir = self._out_dir(repo)
            found = self._enumerate(repo, start, opts)
            groups, split_at = self._groups(repo, found.table, opts)
            self._choose_deltas(repo, found.table, groups, opts, out_dir)
            midx_bitmap = self._decide_bitmap(opts, found.table)
            result = _result(repo, opts, found, groups, self.request.dry_run)
            # Objects placed by where they sit in history: one set of walks for the whole
            # table (started with the snapshot when the caller knew the order), cut per pack.
            t = time.perf_counter()
            needs = CATALOG[opts.order].needs
            history = object_history(repo, found.table, needs, start.take_history_walks()) if needs else None
            self.seconds["order"] = time.perf_counter() - t
            if self.request.dry_run:
                self._plan(repo, found.table, groups, opts, history)
            else:
                self._install(repo, found, groups, opts, out_dir, result, history, split_at, midx_bitmap)
        self.seconds["total"] = time.perf_counter() - started
        result.seconds = self.seconds
        result.peak_rss_bytes = peak_rss()
        result.warnings = self.warnings.seen
        return result

    def _snapshot(
        self, repo_path: str | os.PathLike[str] | None, start: snapshot_mod.Snapshot | None
    ) -> snapshot_mod.Snapshot:
        """The caller's snapshot (locked exactly when repacking in place), or one taken now."""
        request = self.request
        if start is None:
            return snapshot_mod.take(
                repo_path, lock=request.in_place, order=request.order, warn=self.warnings, bitmap=request.write_bitmap
            )
        if start.locked != request.in_place:
            start.close()
            raise UsageError("the snapshot given to repack must be locked exactly when it repacks in place")
        # Printed when the snapshot was taken (before this call); the result keeps them too.
        self.warnings.seen.extend(start.warnings)
        return start

    def _out_dir(self, repo: Repository) -> Path:
        if self.request.output_dir is None:
            return repo.pack_dir
        out_dir = Path(self.request.output_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        return out_dir

    def _enumerate(self, repo: Repository, start: snapshot_mod.Snapshot, opts: RepackOptions) -> _Enumerated:
        """Every object to write, those expired left out (and remembered, to be pruned)."""
        t = time.perf_counter()
        if self.progress is not None:
            self.progress("Counting objects", 0, 0)
        retained = groups_mod.retained_cruft_packs(repo, opts)
        table = enumerate_objects(repo, started=start, local=opts.local, retained=[p.path for p in retained])
        crash_point("enumerated")
        t_cruft = time.perf_counter()
        selection = cruft_mod.select(repo, table, opts.cruft_expiration)
        self.seconds["cruft"] = time.perf_counter() - t_cruft
        survivors = np.flatnonzero(~selection.expired)
        found = _Enumerated(
            table.subset(survivors), retained, table.oids[selection.expired], selection.mtimes[survivors], selection
        )
        if self.progress is not None:
            self.progress("Counting objects", found.table.count, found.table.count)
        self.seconds["enumerate"] = time.perf_counter() - t
        return found

    def _groups(
        self, repo: Repository, table: ObjectTable, opts: RepackOptions
    ) -> tuple[list[groups_mod.PackGroup], int | None]:
        """The packs to write, and the size new cruft packs split at (None: no limit)."""
        cruft_sizes = split_at = None
        if opts.max_cruft_size is not None:
            cruft_sizes = entry_sizes(repo, table.subset(~table.reachable & ~table.promisor))
            split_at = max(opts.max_cruft_size, MIN_PACK_SIZE_LIMIT)
            if opts.max_cruft_size < MIN_PACK_SIZE_LIMIT:
                self.warnings("minimum pack size limit is 1 MiB")  # Git's pack-objects raises it so too
        return groups_mod.pack_groups(table, cruft_sizes, split_at), split_at

    def _choose_deltas(
        self,
        repo: Repository,
        table: ObjectTable,
        groups: list[groups_mod.PackGroup],
        opts: RepackOptions,
        out_dir: Path,
    ) -> None:
        t = time.perf_counter()
        groups_mod.choose_deltas(repo, table, groups, opts, self.progress)
        self.seconds["deltas"] = time.perf_counter() - t
        crash_point("deltas-chosen")
        if not self.request.dry_run:
            needed = sum(space.needed(repo, table.subset(g.rows), g.choice, g.deltas) for g in groups if g.choice)
            space.check(out_dir, needed)

    def _decide_bitmap(self, opts: RepackOptions, table: ObjectTable) -> bool:
        """Whether the ordered pack gets a bitmap (opts.write_bitmap) or the multi-pack-index
        does (the result): Git writes one or the other."""
        if opts.write_bitmap and self.request.output_dir is not None:
            opts.write_bitmap = False  # a bitmap belongs beside the repository's packs only
        if opts.write_bitmap and table.in_alternates:
            # No pack of ours can hold everything reachable; Git gives up bitmaps too.
            self.warnings("disabling bitmap writing, as some objects are not being packed (an alternate has them)")
            opts.write_bitmap = False
        # With a multi-pack-index the bitmap is the index's, as Git writes it (no pack bitmap).
        midx_bitmap = opts.write_bitmap and self.request.write_midx is not None
        if midx_bitmap:
            opts.write_bitmap = False
        return midx_bitmap

    def _plan(
        self,
        repo: Repository,
        table: ObjectTable,
        groups: list[groups_mod.PackGroup],
        opts: RepackOptions,
        history: ObjectHistory | None,
    ) -> None:
        """A dry run: each pack's order computed, nothing written."""
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
        self.seconds["order"] += time.perf_counter() - t

    def _install(
        self,
        repo: Repository,
        found: _Enumerated,
        groups: list[groups_mod.PackGroup],
        opts: RepackOptions,
        out_dir: Path,
        result: RepackResult,
        history: ObjectHistory | None,
        split_at: int | None,
        midx_bitmap: bool,
    ) -> None:
        """Write, verify and install the packs; in place, then remove what they replace."""
        request, table = self.request, found.table
        in_place = request.in_place
        bitmap_heads = groups_mod.bitmap_heads(repo, table, groups) if opts.write_bitmap and in_place else None
        journal = recovery.Journal(repo.git_dir) if in_place else None
        result.packs = install_mod.write_and_install(
            repo,
            table,
            groups,
            opts,
            out_dir,
            result,
            journal,
            history,
            bitmap_heads,
            found.ages,
            split_at,
            self.seconds,
            self.progress,
            ordered=True,
        )
        if not in_place:
            return
        assert journal is not None
        midx = (request.write_midx, midx_bitmap) if request.write_midx is not None else None
        try:
            _replace_old(
                repo,
                table,
                found.pruned_oids,
                found.retained,
                opts,
                result,
                journal,
                self.warnings,
                self.seconds,
                midx,
                request.delete,
            )
        except BaseException:
            install_mod.withdraw(repo, result, journal)
            journal.finish()
            raise
        if result.misplaced is not None:
            drift_mod.remember(repo.git_dir, *result.misplaced)


@dataclass
class _Enumerated:
    """What the repack writes, and what it leaves out."""

    table: ObjectTable  # every object to write (the expired ones cut)
    retained: list[PackSource]  # cruft packs kept as they are (--combine-cruft-below-size)
    pruned_oids: np.ndarray  # the unreachable objects expired: removed with what they were in
    ages: np.ndarray  # each object's age, for the cruft pack's .mtimes
    selection: cruft_mod.CruftSelection


def _result(
    repo: Repository, opts: RepackOptions, found: _Enumerated, groups: list[groups_mod.PackGroup], dry_run: bool
) -> RepackResult:
    """What the repack will report, before anything is written."""
    planned = RepackResult.planned(repo, opts, found.table, groups, dry_run)
    return replace(
        planned,
        unreachable_pruned=len(found.pruned_oids),
        old_pack_bytes=sum(p.path.stat().st_size for p in repo.packs if not p.foreign and not p.keep),
        bitmap=dry_run and opts.write_bitmap,
        rescued=found.selection.rescued,
        in_alternates=found.table.in_alternates,
        retained_cruft_packs=[p.path for p in found.retained],
    )


def _replace_old(
    repo: Repository,
    table: ObjectTable,
    pruned_oids: np.ndarray,
    retained: list[PackSource],
    opts: RepackOptions,
    result: RepackResult,
    journal: recovery.Journal,
    warnings: Warnings,
    seconds: dict,
    midx: tuple[str, bool] | None = None,
    delete: bool = True,
) -> None:
    """Once the installed packs are proven to hold every object: write the multi-pack-index
    asked for (`midx`: its form and whether it has the bitmap), remove what the new packs
    replace (with `delete`), then write a multi-pack-index the repository had again, and the
    server info."""
    t = time.perf_counter()
    kept = result.packs + [p.path for p in retained]
    install_mod.check_complete(kept, table)
    if midx is not None:
        _write_midx(repo, result, retained, midx, delete, warnings)
    removal = install_mod.Removal(midx=midx_mod.Midx())
    if delete:
        removal = install_mod.remove_replaced(repo, table, pruned_oids, kept, opts.cruft_expiration, warnings, journal)
    journal.finish()
    result.removed_packs, result.removed_loose = removal.packs, removal.loose
    # Beside packs it does not replace the pack's bitmap would lack objects: a
    # multi-pack-index one covers them all. A multi-pack-index the repository had
    # is written again, in its form.
    midx_bitmap = opts.write_bitmap and bool(result.packs) and not result.bitmap
    if midx is None and (midx_bitmap or removal.midx.present):
        wrote = midx_mod.write(repo.git_dir, removal.midx, midx_bitmap or removal.midx.bitmap, warnings)
        if midx_bitmap and wrote:
            result.bitmap, result.bitmap_kind = True, "multi-pack-index"
    if opts.update_server_info:
        result.server_info = install_mod.update_server_info(repo, warnings)
        crash_point("server-info-updated")
    seconds["install"] = time.perf_counter() - t


def _write_midx(
    repo: Repository,
    result: RepackResult,
    retained: list[PackSource],
    midx: tuple[str, bool],
    delete: bool,
    warnings: Warnings,
) -> None:
    """The multi-pack-index of the packs the repack leaves (Git's midx_included_packs for an
    all-into-one repack): the new ones, the cruft packs kept as they are, the .keep packs,
    and without `delete` every pack there was; the ordered pack preferred."""
    mode, bitmap = midx
    staying = [p.path for p in repo.packs if not p.foreign and (p.keep or not delete)]
    packs = [*result.packs, *(p.path for p in retained), *(p for p in staying if p not in result.packs)]
    ordered = next(
        (p for p in result.packs if p not in result.cruft_packs and not p.with_suffix(".promisor").exists()), None
    )
    plan = (
        midx_policy.chain_plan(repo, None, result.packs, packs[len(result.packs) :]) if mode == "incremental" else None
    )
    wrote, with_bitmap = midx_policy.write(repo, packs, ordered, mode, bitmap, warnings, plan)
    if wrote:
        result.midx = mode
        if with_bitmap:
            result.bitmap, result.bitmap_kind = True, "multi-pack-index"
