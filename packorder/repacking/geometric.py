"""`packorder repack --geometric=N`: roll the small packs up into one, in packorder's order,
and leave the ordered pack alone (geometry.py picks, rollup.py finds and orders).

As `git repack -d -l --geometric=N --write-midx` does, with three differences: the roll-up is
written in the configured order (tag tips, commits, trees, blob families; or `paths`), it is
proven before anything is removed, and its multi-pack-index is written natively where no
bitmap is asked for. The steps: lock (gc.pid) and list; choose the packs; collect and order
their objects; write, verify and install the new pack (the journal names it); write the
multi-pack-index of the packs that stay and the new one (it never names a pack about to go);
prove the packs that stay hold every object of what goes; remove the packs rolled up and the
loose objects now packed (the journal names them first); update the server info.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from packorder.errors import PackError, UsageError
from packorder.faults import crash_point
from packorder.progress import ProgressCallback
from packorder.repacking import geometry as geometry_mod
from packorder.repacking import install as install_mod
from packorder.repacking import midx_policy, recovery, rollup, space
from packorder.repacking import pack_groups as groups_mod
from packorder.repacking import snapshot as snapshot_mod
from packorder.repacking.options import RepackOptions, RepackRequest, read_options
from packorder.repacking.pack_groups import PROMISOR, REACHABLE, PackGroup
from packorder.repacking.repack_result import RepackResult, Warnings
from packorder.settings import peak_rss
from packorder.store import midx as midx_mod
from packorder.store.object_ids import keys, lookup
from packorder.store.repository import PackSource, Repository, open_repository
from packorder.walk.history import ObjectHistory
from packorder.walk.objects import ObjectTable


def candidates(repo: Repository, layered: frozenset[Path] = frozenset()) -> list[geometry_mod.Candidate]:
    """Every pack of `repo` as the geometric rule sees it; `layered`: packs of an
    incremental chain's layers the repack leaves alone."""
    return [
        geometry_mod.Candidate(
            p.path, p.index.count, not p.foreign, p.keep, p.cruft, p.promisor, in_old_layer=p.path in layered
        )
        for p in repo.packs
    ]


def geometric_bitmap(repo: Repository, given: bool | None, write_midx: str | None) -> bool:
    """Whether a geometric repack writes a bitmap: only a multi-pack-index can hold one
    (Git: "Incremental repacks are incompatible with bitmap indexes"), and only when asked
    (-b) or configured (`repack.writeBitmaps`): Git's geometric repack makes none by default,
    not even in a bare repository."""
    wanted = given
    for key in ("repack.writeBitmaps", "pack.writeBitmaps"):
        if wanted is None and repo.config.get(key) is not None:
            wanted = repo.config.get_bool(key, False)
    if wanted and write_midx is None:
        if given:
            raise UsageError(
                "Incremental repacks are incompatible with bitmap indexes. Use --no-write-bitmap-index "
                "or disable the pack.writeBitmaps configuration."
            )
        return False
    return bool(wanted)


def repack_geometric(
    repo_path: str | os.PathLike[str] | None,
    request: RepackRequest,
    *,
    progress: ProgressCallback | None = None,
    warn: Callable[[str], None] | None = None,
    lock: object = True,
) -> RepackResult:
    """Roll up the packs that break a geometric progression of factor `request.geometric`
    (and the loose objects) into one pack in the configured order; with `request.delete`,
    remove what it replaces; with `request.write_midx` ("plain" or "incremental"), write a
    multi-pack-index of the packs that stay, the ordered pack preferred. Raises PackError
    subclasses with the repository untouched on any failure. `lock`: True to take the
    repository's lock, or a lock the caller (packorder gc) holds."""
    factor, write_midx = request.geometric or 0, request.write_midx
    if factor < 1:
        raise UsageError("{factor} takes a positive number", params=("factor",))
    request.check()
    started = time.perf_counter()
    seconds: dict[str, float] = {}
    warnings = Warnings(warn)
    lock = False if request.dry_run else lock
    start = snapshot_mod.take(repo_path, lock=lock, order=request.order, warn=warnings, walks=False)
    with start:
        repo = open_repository(listing=start)
        bitmap = geometric_bitmap(repo, request.write_bitmap, write_midx)
        opts = read_options(repo, replace(request, write_bitmap=bitmap))
        t = time.perf_counter()
        layered = _old_layer_packs(repo) if write_midx == "incremental" else frozenset()
        geometry = geometry_mod.plan(candidates(repo, layered), factor, local=True)
        crash_point("geometry-chosen")
        found = rollup.collect(repo, geometry, opts.order, request.local, opts.threads)
        seconds["enumerate"] = time.perf_counter() - t
        table = found.table
        groups = [
            g
            for g in (
                PackGroup(REACHABLE, np.flatnonzero(~table.promisor)),
                PackGroup(PROMISOR, np.flatnonzero(table.promisor)),
            )
            if len(g.rows)
        ]
        t = time.perf_counter()
        groups_mod.choose_deltas(repo, table, groups, opts, progress)
        seconds["deltas"] = time.perf_counter() - t
        t = time.perf_counter()
        history = rollup.history(repo, found, opts.order, opts.threads) if groups else None
        seconds["order"] = time.perf_counter() - t
        going = [repo.packs[i] for i in found.packs]
        result = _result(repo, opts, geometry, table, groups, going, request.dry_run)
        if not request.dry_run:
            installed = _Installed(repo, opts, found, groups, going, result)
            _install(installed, request, geometry, bitmap, history, seconds, warnings, progress)
    return _finish(result, seconds, started, warnings)


@dataclass
class _Installed:
    """A roll-up about to be written and installed: what it holds and what it replaces."""

    repo: Repository
    opts: RepackOptions
    found: rollup.RollUp
    groups: list[PackGroup]
    going: list[PackSource]
    result: RepackResult


def _install(
    run: _Installed,
    request: RepackRequest,
    geometry: geometry_mod.Geometry,
    bitmap: bool,
    history: ObjectHistory | None,
    seconds: dict[str, float],
    warnings: Warnings,
    progress: ProgressCallback | None,
) -> None:
    """Write the roll-up, install it, then write the multi-pack-index and remove what it
    replaced (all withdrawn if that fails)."""
    repo, table, result = run.repo, run.found.table, run.result
    space.check(repo.pack_dir, sum(space.needed(repo, table.subset(g.rows), g.choice, g.deltas) for g in run.groups))
    journal = recovery.Journal(repo.git_dir)
    no_ages = np.zeros(table.count, dtype=np.int64)
    result.packs = install_mod.write_and_install(
        repo,
        table,
        run.groups,
        run.opts,
        repo.pack_dir,
        result,
        journal,
        history,
        None,
        no_ages,
        None,
        seconds,
        progress,
    )
    t = time.perf_counter()
    # A roll-up of exactly the objects one pack rolled up holds is that very pack again (a
    # run killed after installing it): it stays, and is not among what goes.
    going = [p for p in run.going if p.path not in result.packs]
    staying = [p for p in repo.packs if p not in going and not p.foreign and p.path not in result.packs]
    try:
        if request.write_midx is not None:
            _write_midx(repo, geometry, staying, result, request.write_midx, bitmap, warnings)
        if request.delete and (going or len(run.found.loose)):
            _remove_rolled_up(repo, going, run.found.loose, staying, result, journal, warnings)
    except BaseException:
        install_mod.withdraw(repo, result, journal)
        raise
    finally:
        journal.finish()
    if run.opts.update_server_info:
        result.server_info = install_mod.update_server_info(repo, warnings)
        crash_point("server-info-updated")
    seconds["install"] = time.perf_counter() - t


def _finish(result: RepackResult, seconds: dict[str, float], started: float, warnings: Warnings) -> RepackResult:
    seconds["total"] = time.perf_counter() - started
    result.seconds = seconds
    result.peak_rss_bytes = peak_rss()
    result.warnings = warnings.seen
    return result


def _result(
    repo: Repository,
    opts: RepackOptions,
    geometry: geometry_mod.Geometry,
    table: ObjectTable,
    groups: list[PackGroup],
    going: list[PackSource],
    dry_run: bool,
) -> RepackResult:
    """What the roll-up will report, before anything is written."""
    planned = RepackResult.planned(repo, opts, table, groups, dry_run)
    return replace(
        planned,
        old_pack_bytes=sum(p.size for p in going),
        strategy="geometric",
        rolled_up=[p.path for p in going],
        ordered_pack=geometry.preferred.path if geometry.preferred is not None else None,
    )


def _old_layer_packs(repo: Repository) -> frozenset[Path]:
    """The packs an incremental chain's layers name that a geometric repack leaves alone
    (repack-geometry.c): those of every layer but the newest, and the newest's too unless
    it has repack.midxNewLayerThreshold packs (8) or more."""
    layers = midx_mod.read_chain(repo.pack_dir, repo.fmt)
    if not layers:
        return frozenset()
    threshold = repo.config.get_int("repack.midxNewLayerThreshold", 8)
    tip = layers[-1]
    old = [name for layer in layers[:-1] for name in midx_mod.layer_packs(layer)]
    if len(tip.midx.pack_names) < threshold:
        old += midx_mod.layer_packs(tip)
    return frozenset(repo.pack_dir / name for name in old)


def _write_midx(
    repo: Repository,
    geometry: geometry_mod.Geometry,
    staying: list[PackSource],
    result: RepackResult,
    mode: str,
    bitmap: bool,
    warnings: Warnings,
) -> None:
    """The multi-pack-index of what stays (Git's midx_included_packs): the .keep packs, the
    new packs, the progression's packs that stay, and the cruft packs; the ordered pack
    preferred."""
    named = [p.path for p in staying if p.keep or p.cruft or not p.promisor]
    packs = [*result.packs, *(p for p in named if p not in result.packs)]
    preferred = geometry.preferred.path if geometry.preferred is not None else next(iter(result.packs), None)
    plan = None
    if mode == "incremental":
        plan = midx_policy.chain_plan(repo, geometry, result.packs, [p for p in named if p not in result.packs])
    wrote, with_bitmap = midx_policy.write(repo, packs, preferred, mode, bitmap, warnings, plan)
    if wrote:
        result.midx = mode
        result.bitmap = with_bitmap
        result.bitmap_kind = "multi-pack-index" if with_bitmap else ""


def _remove_rolled_up(
    repo: Repository,
    going: list[PackSource],
    loose_rows: np.ndarray,
    staying: list[PackSource],
    result: RepackResult,
    journal: recovery.Journal,
    warnings: Warnings,
) -> None:
    """Prove that the packs that stay (the new ones among them) hold every object of the
    packs rolled up and of the loose objects rolled up, then remove those."""
    from packorder.format import idx as idx_format

    kept = [keys(idx_format.read(str(p.with_suffix(".idx")), repo.fmt).names) for p in result.packs]
    kept += [keys(p.index.names) for p in [*staying, *(p for p in repo.packs if p.foreign)]]
    # One look-up in each pack that stays, of every object that goes.
    parts = [keys(p.index.names) for p in going] + [keys(repo.loose.oids[loose_rows])]
    want = np.concatenate(parts) if parts else np.zeros(0, dtype=f"S{repo.fmt.rawsz}")
    held = np.zeros(len(want), dtype=bool)
    for k in kept:
        if len(want) and not held.all():
            held[~held] = lookup(k, want[~held]) >= 0
    bounds = np.cumsum([0, *(len(p) for p in parts)])
    for pack, start, end in zip(going, bounds[: len(going)], bounds[1 : len(going) + 1], strict=True):
        if not held[start:end].all():
            raise PackError(f"the packs that stay lack objects of {pack.path.name}; nothing was removed")
    packed = held[bounds[-2] :]
    journal.removing([p.path for p in going])
    midx = midx_mod.find(repo.pack_dir)
    if going and midx.present and not result.midx:
        # An index written before this repack names the packs about to go.
        midx_mod.remove(repo.pack_dir)
    for pack in going:
        try:
            install_mod.remove_pack(pack.path)
        except OSError as e:
            warnings(f"could not remove {e.filename}: {e.strerror}; the new packs hold its objects")
            continue
        result.removed_packs.append(pack.path)
        crash_point("pack-removed")
    for row in loose_rows[packed]:
        path = repo.loose.paths[int(row)]
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as e:
            warnings(f"could not remove {e.filename}: {e.strerror}; the new packs hold its objects")
            continue
        result.removed_loose += 1
        crash_point("loose-removed")
