"""`packorder repack`: enumerate -> select deltas -> order -> write -> verify -> install.

Nothing the repository had is removed before the new pack, its .idx and .rev are complete,
synced to disk and verified to hold every object they replace. Packs with a .keep file are
left alone; objects of .promisor packs go to a new promisor pack; a lock keeps two repacks
apart; packs and loose objects that appear during the repack (a concurrent push) are never
touched, because only what was enumerated at the start can be removed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from packorder import bitmap as bitmap_mod
from packorder import deltas as deltas_mod
from packorder import install as install_mod
from packorder import snapshot as snapshot_mod
from packorder import writer as writer_mod
from packorder.errors import UsageError
from packorder.indexer import peak_rss, physical_memory
from packorder.layout import write_order
from packorder.progress import ProgressCallback
from packorder.repack_options import ORDER_FUNCS, RepackOptions, check_choices, read_options
from packorder.repo import (
    LOOSE,
    ObjectHistory,
    ObjectTable,
    Repository,
    enumerate_objects,
    object_history,
    open_repository,
)


@dataclass
class RepackResult:
    git_dir: Path
    packs: list[Path]
    order: str
    objects: int
    reachable: int
    unreachable_kept: int
    unreachable_pruned: int
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


def _source_mtime(repo: Repository, table: ObjectTable, row: int) -> float:
    s = int(table.source[row])
    if s == LOOSE:
        return repo.loose.paths[int(table.pos[row])].stat().st_mtime
    return repo.packs[s].mtime


def _prune(repo: Repository, table: ObjectTable, grace: int) -> tuple[ObjectTable, np.ndarray]:
    """Drop unreachable objects whose file is older than the grace period: a push writes its
    objects before its refs, so young unreachable objects may be about to become reachable."""
    none = np.zeros((0, table.oids.shape[1]), dtype=np.uint8)
    if grace < 0:
        return table, none
    now = time.time()
    unreachable = np.flatnonzero(~table.reachable)
    old = [r for r in unreachable if now - _source_mtime(repo, table, int(r)) >= grace]
    if not old:
        return table, none
    keep = np.ones(table.count, dtype=bool)
    keep[old] = False
    return _subset(table, keep), table.oids[old]


def _subset(table: ObjectTable, rows: np.ndarray) -> ObjectTable:
    return ObjectTable(
        table.oids[rows],
        table.kinds[rows],
        table.name_hash[rows],
        table.reachable[rows],
        table.tagged[rows],
        table.source[rows],
        table.pos[rows],
        table.promisor[rows],
        table.missing,
    )


def _search(
    repo: Repository, table: ObjectTable, opts: RepackOptions, progress: ProgressCallback | None
) -> deltas_mod.SearchResult:
    return deltas_mod.search(
        repo,
        table,
        window=opts.window,
        depth=opts.depth,
        threads=opts.threads,
        reuse_deltas=not opts.no_reuse_delta,
        big_file_threshold=repo.config.get_int("core.bigFileThreshold", deltas_mod.BIG_FILE_THRESHOLD),
        cache_budget=repo.config.get_int("core.deltaBaseCacheLimit", 96 << 20),
        object_limit=physical_memory(),
        repick_backward=opts.repick_backward,
        progress=progress,
    )


def _choose_deltas(
    repo: Repository, table: ObjectTable, opts: RepackOptions, progress: ProgressCallback | None = None
) -> tuple[deltas_mod.DeltaChoice, dict[int, bytes]]:
    """Reused deltas (unless -f) and new ones searched with --window (as `git repack -ad`
    and `-adf` do), with each new delta's data by table index. Promisor objects go to a pack
    of their own, so the search runs on each group apart."""
    groups = _groups(table)
    if len(groups) <= 1:
        found = _search(repo, table, opts, progress)
        return found.choice, found.deltas
    n = table.count
    choice = deltas_mod.DeltaChoice(
        np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    )
    new_deltas: dict[int, bytes] = {}
    for _, rows in groups:
        found = _search(repo, _subset(table, rows), opts, progress)
        sub = found.choice
        choice.base[rows] = np.where(sub.base >= 0, rows[np.maximum(sub.base, 0)], -1)
        choice.stored_delta[rows] = sub.stored_delta
        choice.cut[rows] = sub.cut
        choice.new[rows] = sub.new
        new_deltas.update({int(rows[t]): d for t, d in found.deltas.items()})
    return choice, new_deltas


def _groups(table: ObjectTable) -> list[tuple[bool, np.ndarray]]:
    """(promisor?, table rows) of each pack to write: promisor objects stay in a promisor pack."""
    groups = []
    if table.promisor.any():
        groups.append((True, np.flatnonzero(table.promisor)))
    if (~table.promisor).any():
        groups.append((False, np.flatnonzero(~table.promisor)))
    return groups


def _restrict(choice: deltas_mod.DeltaChoice, rows: np.ndarray) -> deltas_mod.DeltaChoice:
    """The delta choice for a subset of the table: bases outside it cannot be used."""
    new_index = np.full(len(choice.base), -1, dtype=np.int64)
    new_index[rows] = np.arange(len(rows))
    base = choice.base[rows]
    base = np.where(base >= 0, new_index[np.maximum(base, 0)], -1)
    return deltas_mod.DeltaChoice(base, choice.stored_delta[rows], choice.cut[rows], choice.new[rows] & (base >= 0))


def _write_group(
    repo: Repository,
    table: ObjectTable,
    choice: deltas_mod.DeltaChoice,
    opts: RepackOptions,
    out_dir: Path,
    seconds: dict[str, float],
    progress: ProgressCallback | None,
    new_deltas: dict[int, bytes] | None = None,
    history: ObjectHistory | None = None,
    bitmap_heads: np.ndarray | None = None,
) -> tuple[Path, writer_mod.IndexFiles, writer_mod.WrittenPack, bitmap_mod.PackBitmap | None]:
    """Write, verify and index one pack; with `bitmap_heads` (the branch heads), also compute
    its reachability bitmap."""
    t = time.perf_counter()
    order = write_order(repo, table, choice, opts.order, opts.ref_delta, history)
    plan = writer_mod.make_plan(repo, table, choice, order, new_deltas)
    seconds["order"] = seconds.get("order", 0.0) + time.perf_counter() - t
    fd, tmp = tempfile.mkstemp(prefix=install_mod.TMP_PACK_PREFIX, suffix=".pack", dir=out_dir)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        t = time.perf_counter()
        written = writer_mod.write(
            repo,
            plan,
            tmp_path,
            ref_delta=opts.ref_delta,
            level=opts.level,
            object_limit=physical_memory(),
            progress=progress,
        )
        seconds["write"] = seconds.get("write", 0.0) + time.perf_counter() - t
        install_mod.crash_point("written")
        t = time.perf_counter()
        if progress is not None:
            progress("Verifying", 0, 1)
        # The bitmap is computed from the new pack while it is verified (both release the
        # GIL; verification leaves a core idle much of the time). Nothing is installed unless
        # verification passes, and its failure is the one reported.
        bitmap_outcome: list[bitmap_mod.PackBitmap | BaseException] = []
        builder = None
        if bitmap_heads is not None:
            builder = threading.Thread(
                target=_bitmap_into,
                args=(bitmap_outcome, repo, written, table, bitmap_heads, opts.threads, seconds),
                name="packorder-bitmap",
                daemon=True,  # an interrupt ends the process without waiting for it
            )
            builder.start()
        try:
            if opts.verify == "full":
                budget = repo.config.get_int("core.deltaBaseCacheLimit", 96 << 20) * opts.threads
                files = writer_mod.verify_full(written, opts.threads, budget, physical_memory())
            else:
                files = writer_mod.verify_crc(written)
        finally:
            if builder is not None:
                builder.join()
        if progress is not None:
            progress("Verifying", 1, 1)
        seconds["verify"] = seconds.get("verify", 0.0) + time.perf_counter() - t
        install_mod.crash_point("verified")
        bitmap = None
        if bitmap_outcome:
            if isinstance(bitmap_outcome[0], BaseException):
                raise bitmap_outcome[0]
            bitmap = bitmap_outcome[0]
            files.bitmap = bitmap.data
    except BaseException:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        raise
    return tmp_path, files, written, bitmap


def _bitmap_into(
    out: list,
    repo: Repository,
    written: writer_mod.WrittenPack,
    table: ObjectTable,
    heads: np.ndarray,
    threads: int,
    seconds: dict,
) -> None:
    t = time.perf_counter()
    hash_cache = repo.config.get_bool("pack.writeBitmapHashCache", True)
    out.append(writer_mod.attempt(bitmap_mod.compute, written, table, heads, threads, physical_memory(), hash_cache))
    seconds["bitmap"] = time.perf_counter() - t


def repack(
    repo_path: str | os.PathLike[str] | None = None,
    *,
    order: str = "recency",
    no_reuse_delta: bool = False,
    window: int | None = None,
    depth: int | None = None,
    threads: int | None = None,
    ref_delta: bool = False,
    prune_unreachable: bool = False,
    write_bitmap: bool | None = None,
    dry_run: bool = False,
    output_dir: str | os.PathLike[str] | None = None,
    verify: str = "full",
    repick_backward_deltas: bool = False,
    progress: ProgressCallback | None = None,
    start: snapshot_mod.Snapshot | None = None,
) -> RepackResult:
    """Rewrite every object of the repository into one pack in the chosen order (two when
    promisor objects have to stay apart). Returns what was done; raises PackError subclasses
    with the repository untouched on any failure. `start` is a snapshot.take() of the
    repository (locked when repacking in place), for a caller that starts Git's walk before
    importing this module; repack takes its own otherwise."""
    started = time.perf_counter()
    seconds: dict[str, float] = {}
    in_place = output_dir is None and not dry_run
    if start is None:
        check_choices(order, verify)
        spec = ORDER_FUNCS[order]
        start = snapshot_mod.take(repo_path, lock=in_place, intro=spec.needs_intro, unreleased=spec.needs_unreleased)
    elif start.locked != in_place:
        start.close()
        raise UsageError("the snapshot given to repack must be locked exactly when it repacks in place")
    with start:
        repo = open_repository(snapshot=start)
        opts = read_options(repo, order, no_reuse_delta, window, depth, threads, ref_delta, write_bitmap, verify)
        opts.repick_backward = repick_backward_deltas
        out_dir = Path(output_dir) if output_dir is not None else repo.pack_dir
        if output_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
        if in_place:
            install_mod.remove_stale_temporaries(out_dir)
        t = time.perf_counter()
        if progress is not None:
            progress("Counting objects", 0, 0)
        table = enumerate_objects(repo, prune_unreachable=False, snapshot=start)
        pruned_oids = np.zeros((0, table.oids.shape[1]), dtype=np.uint8)
        if prune_unreachable:
            table, pruned_oids = _prune(repo, table, opts.prune_grace)
        if progress is not None:
            progress("Counting objects", table.count, table.count)
        seconds["enumerate"] = time.perf_counter() - t
        t = time.perf_counter()
        choice, new_deltas = _choose_deltas(repo, table, opts, progress)
        seconds["deltas"] = time.perf_counter() - t
        result = RepackResult(
            git_dir=repo.git_dir,
            packs=[],
            order=opts.order,
            objects=table.count,
            reachable=int(table.reachable.sum()),
            unreachable_kept=int((~table.reachable).sum()),
            unreachable_pruned=len(pruned_oids),
            reused_deltas=int(choice.reused.sum()),
            cut_deltas=int(choice.cut.sum()),
            whole_objects=int((choice.base < 0).sum()),
            pack_bytes=0,
            old_pack_bytes=sum(p.path.stat().st_size for p in repo.packs if not p.foreign and not p.keep),
            removed_packs=[],
            removed_loose=0,
            kept_packs=[p.path for p in repo.packs if p.keep],
            promisor=bool(table.promisor.any()),
            bitmap=False,
            dry_run=dry_run,
            verify=opts.verify,
            new_deltas=len(new_deltas),
        )
        # Objects placed by where they sit in history: one pair of walks for the whole table
        # (started with the snapshot when the caller knew the order), cut per pack below.
        t = time.perf_counter()
        history = None
        spec = ORDER_FUNCS[opts.order]
        if spec.needs_history:
            history = object_history(
                repo, table, start.take_history_walks(), intro=spec.needs_intro, unreleased=spec.needs_unreleased
            )
        seconds["order"] = time.perf_counter() - t
        if dry_run:
            t = time.perf_counter()
            write_order(repo, table, choice, opts.order, opts.ref_delta, history)
            seconds["order"] += time.perf_counter() - t
        else:
            installed = []
            groups = _groups(table)
            # The new pack gets a bitmap of its own when it will be the repository's only
            # pack; beside packs it does not replace, a multi-pack-index bitmap covers them all.
            own_bitmap = (
                opts.write_bitmap and in_place and len(groups) == 1 and not any(p.keep or p.foreign for p in repo.packs)
            )
            heads = bitmap_mod.head_ids(repo) if own_bitmap else None
            for promisor, rows in groups:
                sub = _subset(table, rows)
                sub_choice = _restrict(choice, rows)
                at = np.full(table.count, -1, dtype=np.int64)
                at[rows] = np.arange(len(rows))
                sub_deltas = {int(at[t]): d for t, d in new_deltas.items() if at[t] >= 0}
                sub_history = history.subset(rows) if history is not None else None
                tmp_pack, files, written, bitmap = _write_group(
                    repo, sub, sub_choice, opts, out_dir, seconds, progress, sub_deltas, sub_history, heads
                )
                if bitmap is not None:
                    result.bitmap = bitmap.data is not None
                    result.bitmap_kind = "pack" if result.bitmap else ""
                    result.bitmaps = bitmap.bitmaps
                    result.bitmap_note = bitmap.why
                installed.append(install_mod.install(tmp_pack, files, written.checksum, out_dir, promisor))
                result.pack_bytes += written.size
            result.packs = installed
            if in_place:
                t = time.perf_counter()
                install_mod.check_complete(installed, table)
                result.removed_packs, result.removed_loose = install_mod.remove_replaced(
                    repo, table, pruned_oids, installed
                )
                if opts.write_bitmap and installed and not result.bitmap:
                    result.bitmap = install_mod.write_bitmap(repo)
                    result.bitmap_kind = "multi-pack-index"
                seconds["install"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - started
    result.seconds = seconds
    result.peak_rss_bytes = peak_rss()
    return result
