"""The packs one repack writes, and how each is made. Which objects go to which pack (the
reachable objects to the ordered pack, a promisor pack's objects to a new promisor pack, the
unexpired unreachable ones to cruft packs, split by --max-cruft-size as Git splits them),
the deltas of each (chosen within the pack: a pack holds its own bases), and writing one:
its order, the pack, its verification with the bitmap computed beside it, its .mtimes."""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from packorder.durable import temp_prefix
from packorder.faults import crash_point
from packorder.format import mtimes as mtimes_format
from packorder.progress import ProgressCallback
from packorder.repacking import bitmap as bitmap_mod
from packorder.repacking import deltas as deltas_mod
from packorder.repacking import writer as writer_mod
from packorder.repacking.options import RepackOptions
from packorder.repacking.placement import write_order
from packorder.settings import Limits, delta_base_cache_limit, physical_memory
from packorder.store.object_ids import id_order, keys
from packorder.store.repository import PackSource, Repository
from packorder.walk.history import ObjectHistory
from packorder.walk.objects import ObjectTable

REACHABLE, PROMISOR, CRUFT = "reachable", "promisor", "cruft"
# The cruft pack's order: its objects have no place in history, and recency needs no walk.
CRUFT_ORDER = "recency"
# `git pack-objects --max-pack-size` raises smaller limits to this; a cruft pack is split so.
MIN_PACK_SIZE_LIMIT = 1 << 20


@dataclass
class PackGroup:
    """The objects of one pack to write, with the deltas chosen among them (indexes of the
    group's own table: each pack holds its own delta bases)."""

    kind: str  # REACHABLE, PROMISOR or CRUFT
    rows: np.ndarray  # table rows
    choice: deltas_mod.DeltaChoice | None = None
    deltas: dict[int, bytes] = field(default_factory=dict)  # new deltas by group index

    def order(self, asked: str) -> str:
        return CRUFT_ORDER if self.kind == CRUFT else asked


def search_deltas(
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
        cache_budget=delta_base_cache_limit(repo.config),
        object_limit=physical_memory(),
        repick_backward=opts.repick_backward,
        by_path=opts.path_walk,
        name_hash_version=opts.name_hash_version,
        progress=progress,
    )


def choose_deltas(
    repo: Repository,
    table: ObjectTable,
    groups: list[PackGroup],
    opts: RepackOptions,
    progress: ProgressCallback | None = None,
) -> None:
    """Reused deltas (unless -f) and new ones searched with --window (as `git repack -ad`
    and `-adf` do), for each group apart: a pack must hold its own bases."""
    for group in groups:
        found = search_deltas(repo, table.subset(group.rows), opts, progress)
        group.choice, group.deltas = found.choice, found.deltas


def pack_groups(
    table: ObjectTable, cruft_sizes: np.ndarray | None = None, max_cruft: int | None = None
) -> list[PackGroup]:
    """The packs to write: promisor objects stay in a promisor pack (reachable or not, as
    Git's repack keeps them), reachable objects go to the ordered pack, the others (all
    unexpired: cruft.select dropped the rest) to the cruft pack, or to several of at most
    `max_cruft` bytes each (by `cruft_sizes`, each cruft row's entry size now)."""
    groups = [
        PackGroup(PROMISOR, np.flatnonzero(table.promisor)),
        PackGroup(REACHABLE, np.flatnonzero(table.reachable & ~table.promisor)),
    ]
    cruft = np.flatnonzero(~table.reachable & ~table.promisor)
    if max_cruft is None or cruft_sizes is None:
        groups.append(PackGroup(CRUFT, cruft))
    else:
        trailer = table.oids.shape[1]
        groups += [PackGroup(CRUFT, part) for part in split_by_size(cruft, cruft_sizes, max_cruft, trailer)]
    return [g for g in groups if len(g.rows)]


def split_by_size(rows: np.ndarray, sizes: np.ndarray, limit: int, trailer: int) -> list[np.ndarray]:
    """`rows` cut into consecutive runs of at most `limit` bytes (a row larger than that on
    its own), pack header and trailer (of `trailer` bytes) included."""
    parts, start, total = [], 0, 12 + trailer
    for k, size in enumerate(sizes):
        if k > start and total + int(size) > limit:
            parts.append(rows[start:k])
            start, total = k, 12 + trailer
        total += int(size)
    parts.append(rows[start:])
    return parts


def write_group(
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
    limits = Limits(opts.threads, delta_base_cache_limit(repo.config) * opts.threads, physical_memory())
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(), suffix=".pack", dir=out_dir)
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
            limits=limits,
            progress=progress,
        )
        seconds["write"] = seconds.get("write", 0.0) + time.perf_counter() - t
        crash_point("written")
        t = time.perf_counter()
        # The bitmap is computed from the new pack while it is verified (both release the
        # GIL; verification leaves a core idle much of the time). Nothing is installed unless
        # verification passes, and its failure is the one reported.
        bitmap_outcome: list[bitmap_mod.PackBitmap | BaseException] = []
        builder = None
        if bitmap_heads is not None:
            builder = threading.Thread(
                target=_bitmap_into,
                args=(bitmap_outcome, repo, written, table, bitmap_heads, limits, seconds),
                name="packorder-bitmap",
                daemon=True,  # an interrupt ends the process without waiting for it
            )
            builder.start()
        try:
            files = writer_mod.verify(written, opts.verify, limits, progress)
        finally:
            if builder is not None:
                builder.join()
        seconds["verify"] = seconds.get("verify", 0.0) + time.perf_counter() - t
        crash_point("verified")
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
    mtimes_format.write(out, np.clip(ages[order], 0, 0xFFFFFFFF).astype(np.uint32), written.checksum, written.fmt)
    return out.getvalue()


def _bitmap_into(
    out: list,
    repo: Repository,
    written: writer_mod.WrittenPack,
    table: ObjectTable,
    heads: np.ndarray,
    limits: Limits,
    seconds: dict,
) -> None:
    t = time.perf_counter()
    hash_cache = repo.config.get_bool("pack.writeBitmapHashCache", True)
    out.append(writer_mod.attempt(bitmap_mod.compute, written, table, heads, limits, hash_cache))
    seconds["bitmap"] = time.perf_counter() - t


def retained_cruft_packs(repo: Repository, opts: RepackOptions) -> list[PackSource]:
    """The cruft packs `--combine-cruft-below-size` leaves as they are, as Git 2.50 chooses
    them (combine_small_cruft_packs): those of at least that size; the smaller ones are
    rewritten. With an expiration every cruft pack is rewritten (expired objects must go)."""
    limit = opts.combine_cruft_below_size
    if limit is None or opts.cruft_expiration is not None:
        return []
    return [p for p in repo.packs if p.cruft and not p.keep and not p.foreign and p.size >= limit]


def over_cruft_size(group: PackGroup, written: writer_mod.WrittenPack, limit: int | None) -> bool:
    return group.kind == CRUFT and limit is not None and written.size > limit and len(group.rows) > 1


def bitmap_heads(repo: Repository, table: ObjectTable, groups: list[PackGroup]) -> np.ndarray | None:
    """The branch heads, when the pack holding the reachable objects may get a bitmap of its
    own: it must be the only one that does (not beside a promisor pack, nothing left to a
    .keep pack). Otherwise (None) a multi-pack-index bitmap covers them all."""
    if sum(g.kind != CRUFT for g in groups) != 1 or table.in_keep_packs or any(p.keep for p in repo.packs):
        return None
    return bitmap_mod.head_ids(repo)
