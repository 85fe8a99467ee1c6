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

import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from packorder import bitmap as bitmap_mod
from packorder import cruft as cruft_mod
from packorder import deltas as deltas_mod
from packorder import install as install_mod
from packorder import snapshot as snapshot_mod
from packorder import writer as writer_mod
from packorder.errors import UsageError
from packorder.format import mtimes as mtimes_format
from packorder.indexer import peak_rss, physical_memory
from packorder.layout import write_order
from packorder.order import ORDERS
from packorder.progress import ProgressCallback
from packorder.repack_options import RepackOptions, RepackRequest, read_options
from packorder.repo import (
    ObjectHistory,
    ObjectTable,
    Repository,
    enumerate_objects,
    id_order,
    keys,
    object_history,
    open_repository,
)

REACHABLE, PROMISOR, CRUFT = "reachable", "promisor", "cruft"
# The cruft pack's order: its objects have no place in history, and recency needs no walk.
CRUFT_ORDER = "recency"


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


@dataclass
class PackGroup:
    """The objects of one pack to write."""

    kind: str  # REACHABLE, PROMISOR or CRUFT
    rows: np.ndarray  # table rows

    def order(self, asked: str) -> str:
        return CRUFT_ORDER if self.kind == CRUFT else asked


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
    repo: Repository,
    table: ObjectTable,
    groups: list[PackGroup],
    opts: RepackOptions,
    progress: ProgressCallback | None = None,
) -> tuple[deltas_mod.DeltaChoice, dict[int, bytes]]:
    """Reused deltas (unless -f) and new ones searched with --window (as `git repack -ad`
    and `-adf` do), with each new delta's data by table index. Each pack must hold its own
    bases, so the search runs on each group apart."""
    if len(groups) <= 1:
        found = _search(repo, table, opts, progress)
        return found.choice, found.deltas
    n = table.count
    choice = deltas_mod.DeltaChoice(
        np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    )
    new_deltas: dict[int, bytes] = {}
    for group in groups:
        rows = group.rows
        found = _search(repo, table.subset(rows), opts, progress)
        sub = found.choice
        choice.base[rows] = np.where(sub.base >= 0, rows[np.maximum(sub.base, 0)], -1)
        choice.stored_delta[rows] = sub.stored_delta
        choice.cut[rows] = sub.cut
        choice.new[rows] = sub.new
        new_deltas.update({int(rows[t]): d for t, d in found.deltas.items()})
    return choice, new_deltas


def _groups(table: ObjectTable) -> list[PackGroup]:
    """The packs to write: promisor objects stay in a promisor pack (reachable or not, as
    Git's repack keeps them), reachable objects go to the ordered pack, the others (all
    unexpired: cruft.select dropped the rest) to the cruft pack."""
    groups = [
        PackGroup(PROMISOR, np.flatnonzero(table.promisor)),
        PackGroup(REACHABLE, np.flatnonzero(table.reachable & ~table.promisor)),
        PackGroup(CRUFT, np.flatnonzero(~table.reachable & ~table.promisor)),
    ]
    return [g for g in groups if len(g.rows)]


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
    order_name: str,
    out_dir: Path,
    seconds: dict[str, float],
    progress: ProgressCallback | None,
    new_deltas: dict[int, bytes] | None = None,
    history: ObjectHistory | None = None,
    bitmap_heads: np.ndarray | None = None,
    mtimes: np.ndarray | None = None,
) -> tuple[Path, writer_mod.IndexFiles, writer_mod.WrittenPack, bitmap_mod.PackBitmap | None]:
    """Write, verify and index one pack; with `bitmap_heads` (the branch heads), also compute
    its reachability bitmap; with `mtimes` (each row's age), make it a cruft pack."""
    t = time.perf_counter()
    order = write_order(repo, table, choice, order_name, opts.ref_delta, history)
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
            budget = repo.config.get_int("core.deltaBaseCacheLimit", 96 << 20) * opts.threads
            files = writer_mod.verify(written, opts.verify, opts.threads, budget, physical_memory(), progress)
        finally:
            if builder is not None:
                builder.join()
        seconds["verify"] = seconds.get("verify", 0.0) + time.perf_counter() - t
        install_mod.crash_point("verified")
        if not opts.write_rev:
            files.rev = None
        if mtimes is not None:
            files.mtimes = _mtimes_file(written, mtimes[plan.rows])
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


def _mtimes_file(written: writer_mod.WrittenPack, ages: np.ndarray) -> bytes:
    """The .mtimes of a written pack whose entries (in pack order) have `ages`."""
    import io

    order = id_order(keys(written.plan.oids))
    out = io.BytesIO()
    mtimes_format.write(out, np.clip(ages[order], 0, 0xFFFFFFFF).astype(np.uint32), written.checksum)
    return out.getvalue()


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
        raise UsageError("-o DIR writes no bitmap: a bitmap belongs beside the repository's own packs (drop -b)")
    if start is None:
        start = snapshot_mod.take(repo_path, lock=in_place, order=order, warn=warnings)
    elif start.locked != in_place:
        start.close()
        raise UsageError("the snapshot given to repack must be locked exactly when it repacks in place")
    with start:
        repo = open_repository(snapshot=start)
        opts = read_options(repo, request)
        out_dir = Path(output_dir) if output_dir is not None else repo.pack_dir
        if output_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
        if in_place:
            install_mod.remove_stale_temporaries(out_dir)
        t = time.perf_counter()
        if progress is not None:
            progress("Counting objects", 0, 0)
        table = enumerate_objects(repo, snapshot=start, local=opts.local)
        selection = cruft_mod.select(repo, table, opts.cruft_expiration)
        pruned_oids = table.oids[selection.expired]
        survivors = np.flatnonzero(~selection.expired)
        ages = selection.mtimes[survivors]
        table = table.subset(survivors)
        if progress is not None:
            progress("Counting objects", table.count, table.count)
        seconds["enumerate"] = time.perf_counter() - t
        groups = _groups(table)
        t = time.perf_counter()
        choice, new_deltas = _choose_deltas(repo, table, groups, opts, progress)
        seconds["deltas"] = time.perf_counter() - t
        if opts.write_bitmap and output_dir is not None:
            opts.write_bitmap = False  # a bitmap belongs beside the repository's packs only
        if opts.write_bitmap and table.in_alternates:
            # No pack of ours can hold everything reachable; Git gives up bitmaps too.
            warnings("disabling bitmap writing, as some objects are not being packed (an alternate has them)")
            opts.write_bitmap = False
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
            bitmap=dry_run and opts.write_bitmap,
            dry_run=dry_run,
            verify=opts.verify,
            new_deltas=len(new_deltas),
            rescued=selection.rescued,
            in_alternates=table.in_alternates,
            settings=opts.describe(),
        )
        # Objects placed by where they sit in history: one pair of walks for the whole table
        # (started with the snapshot when the caller knew the order), cut per pack below.
        t = time.perf_counter()
        history = None
        spec = ORDERS[opts.order]
        if spec.needs_history:
            history = object_history(
                repo, table, start.take_history_walks(), intro=spec.needs_intro, unreleased=spec.needs_unreleased
            )
        seconds["order"] = time.perf_counter() - t
        bitmap_heads = _bitmap_heads(repo, table, groups) if opts.write_bitmap and in_place else None
        if dry_run:
            t = time.perf_counter()
            for group in groups:
                write_order(
                    repo,
                    table.subset(group.rows),
                    _restrict(choice, group.rows),
                    group.order(opts.order),
                    opts.ref_delta,
                    history.subset(group.rows) if history is not None and group.kind != CRUFT else None,
                )
            seconds["order"] += time.perf_counter() - t
        else:
            installed = []
            for group in groups:
                rows = group.rows
                sub = table.subset(rows)
                at = np.full(table.count, -1, dtype=np.int64)
                at[rows] = np.arange(len(rows))
                sub_deltas = {int(at[t]): d for t, d in new_deltas.items() if at[t] >= 0}
                sub_history = history.subset(rows) if history is not None and group.kind != CRUFT else None
                tmp_pack, files, written, bitmap = _write_group(
                    repo,
                    sub,
                    _restrict(choice, rows),
                    opts,
                    group.order(opts.order),
                    out_dir,
                    seconds,
                    progress,
                    sub_deltas,
                    sub_history,
                    bitmap_heads if group.kind != CRUFT else None,
                    ages[rows] if group.kind == CRUFT else None,
                )
                if bitmap is not None:
                    result.bitmap = bitmap.data is not None
                    result.bitmap_kind = "pack" if result.bitmap else ""
                    result.bitmaps = bitmap.bitmaps
                    result.bitmap_note = bitmap.why
                final = install_mod.install(tmp_pack, files, written.checksum, out_dir, group.kind == PROMISOR)
                installed.append(final)
                if group.kind == CRUFT:
                    result.cruft_packs.append(final)
                result.pack_bytes += written.size
            result.packs = installed
            if in_place:
                t = time.perf_counter()
                install_mod.check_complete(installed, table)
                result.removed_packs, result.removed_loose = install_mod.remove_replaced(
                    repo, table, pruned_oids, installed, opts.cruft_expiration, warnings
                )
                if opts.write_bitmap and installed and not result.bitmap:
                    result.bitmap = install_mod.write_bitmap(repo)
                    result.bitmap_kind = "multi-pack-index"
                if opts.update_server_info:
                    install_mod.update_server_info(repo)
                    result.server_info = True
                seconds["install"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - started
    result.seconds = seconds
    result.peak_rss_bytes = peak_rss()
    result.warnings = warnings.seen
    return result


def _bitmap_heads(repo: Repository, table: ObjectTable, groups: list[PackGroup]) -> np.ndarray | None:
    """The branch heads, when the pack holding the reachable objects may get a bitmap of its
    own: it must be the only one that does (not beside a promisor pack, nothing left to a
    .keep pack). Otherwise (None) a multi-pack-index bitmap covers them all."""
    if sum(g.kind != CRUFT for g in groups) != 1 or table.in_keep_packs or any(p.keep for p in repo.packs):
        return None
    return bitmap_mod.head_ids(repo)
