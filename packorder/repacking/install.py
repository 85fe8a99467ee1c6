"""Putting a verified pack in place and removing what it replaces, in an order that keeps the
repository valid if the process is killed at any step (see docs/repack.md)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from packorder import gitcmd
from packorder.durable import fsync_dir, write_atomically
from packorder.errors import PackError
from packorder.faults import crash_point
from packorder.progress import ProgressCallback
from packorder.repacking import drift as drift_mod
from packorder.repacking import pack_groups as groups_mod
from packorder.repacking.options import RepackOptions
from packorder.repacking.pack_groups import CRUFT, PROMISOR, REACHABLE, PackGroup
from packorder.repacking.recovery import Journal
from packorder.repacking.repack_result import RepackResult
from packorder.repacking.writer import IndexFiles
from packorder.store import midx as midx_mod
from packorder.store.object_ids import keys, lookup, sort_keys
from packorder.store.repository import PackSource, Repository
from packorder.walk.history import ObjectHistory
from packorder.walk.objects import ObjectTable


def install(tmp_pack: Path, files: IndexFiles, checksum: bytes, out_dir: Path, promisor: bool) -> Path:
    """Put a verified pack in place: .rev, the pack, .promisor, .mtimes, .bitmap, and the .idx
    last (Git only sees a pack through its .idx, so until then the pack is invisible and
    harmless, and once it sees it, the pack is complete: a cruft pack already has its ages).
    If a step fails (a full disk, a signal), what was put in place is taken away again, and
    the error names the file."""
    final = out_dir / f"pack-{checksum.hex()}.pack"
    stem = final.with_suffix("")
    if final.exists() and (out_dir / f"{stem.name}.idx").exists():
        _refresh_companions(stem, files, promisor)
        tmp_pack.unlink()
        return final
    placed: list[Path] = []

    def place(ext: str, data: bytes, mode: int = 0o444) -> None:
        target = stem.with_suffix(ext)
        write_atomically(target, lambda f: f.write(data), mode)
        placed.append(target)

    try:
        if files.rev is not None:
            place(".rev", files.rev)
        crash_point("rev-installed")
        os.chmod(tmp_pack, 0o444)
        os.replace(tmp_pack, final)
        placed.append(final)
        crash_point("pack-renamed")
        if promisor:
            place(".promisor", b"", 0o644)
        if files.mtimes is not None:
            place(".mtimes", files.mtimes)
            crash_point("mtimes-installed")
        if files.bitmap is not None:
            place(".bitmap", files.bitmap)
            crash_point("bitmap-installed")
        place(".idx", files.idx)
        fsync_dir(out_dir)
        crash_point("idx-installed")
    except BaseException:
        # The .idx goes first (it is the last placed), so Git never sees a pack half taken away.
        for path in reversed(placed):
            with contextlib.suppress(OSError):
                path.unlink()
        raise
    return final


def _refresh_companions(stem: Path, files: IndexFiles, promisor: bool) -> None:
    """The very same pack is installed already: its companions become this run's, and one
    this run does not write goes, as `git repack` unlinks it."""
    companions = {
        ".rev": files.rev,
        ".mtimes": files.mtimes,
        ".bitmap": files.bitmap,
        ".promisor": b"" if promisor else None,
    }
    for ext, data in companions.items():
        if data is not None:
            mode = 0o644 if ext == ".promisor" else 0o444
            write_atomically(stem.with_suffix(ext), lambda f, data=data: f.write(data), mode)
        else:
            with contextlib.suppress(FileNotFoundError):
                stem.with_suffix(ext).unlink()


PACK_EXTS = (".idx", ".pack", ".rev", ".bitmap", ".promisor", ".mtimes")


def remove_pack(path: Path) -> None:
    """Remove an old pack, its .idx first so that no reader finds an index without a pack."""
    stem = path.name[: -len(".pack")]
    for ext in PACK_EXTS:
        with contextlib.suppress(FileNotFoundError):
            (path.parent / f"{stem}{ext}").unlink()
            crash_point("pack-file-removed")


def check_complete(new: list[Path], table: ObjectTable) -> None:
    """Every object we mean to keep is in the installed packs (read back from their .idx)."""
    from packorder.format import idx as idx_format
    from packorder.format.object_format import of_size

    want = keys(table.oids)
    if not new:  # nothing to keep (an empty repository, or every object pruned)
        if len(want):
            raise PackError("no pack was written for the objects to keep; nothing was removed")
        return
    fmt = of_size(table.oids.shape[1])
    have = sort_keys(np.concatenate([keys(idx_format.read(str(p.with_suffix(".idx")), fmt).names) for p in new]))
    if (lookup(have, want) < 0).any():
        raise PackError("the new packs lack objects they should hold; nothing was removed")


def remove_replaced(
    repo: Repository,
    table: ObjectTable,
    pruned_oids: np.ndarray,
    installed: list[Path],
    expiration: int | None = None,
    warn: Callable[[str], None] | None = None,
    journal: Journal | None = None,
) -> Removal:
    """Remove the packs and loose objects of the snapshot that the new packs replace, and the
    loose copies of expired objects (`pruned_oids`, older than `expiration`).

    An expired object may have been wanted again since the listing: Git then refreshes the
    mtime of its loose file or of the pack holding it (freshen_*_object) instead of writing
    it anew. So a pack holding an expired object whose mtime changed since the listing is
    kept, and so is a loose expired object whose file is no longer older than the expiration."""
    keep = {p.resolve() for p in installed}
    pruned = sort_keys(keys(pruned_oids))
    going = []
    for pack in repo.packs:
        if pack.foreign or pack.keep or pack.path.resolve() in keep:
            continue
        if len(pruned) and _freshened(pack) and (lookup(pruned, keys(pack.index.names)) >= 0).any():
            if warn is not None:
                warn(f"kept {pack.path.name}: it was used again during the repack, and holds expired objects")
            continue
        going.append(pack.path)
    if journal is not None:
        journal.removing(going)
    # An index that names a pack about to go goes first; one written for the new packs stays.
    names_going = going and midx_mod.names_any(repo.pack_dir, repo.fmt, going)
    removal = Removal(midx=midx_mod.remove(repo.pack_dir) if names_going else midx_mod.Midx())
    for path in going:
        try:
            remove_pack(path)
        except OSError as e:
            # The new packs hold every object: a pack that stays is only a duplicate.
            _could_not_remove(warn, e)
            continue
        removal.packs.append(path)
        crash_point("pack-removed")
    # Loose objects the new packs hold (wherever the table took them from), and those expired.
    failures: list[OSError] = []
    local = np.flatnonzero(~repo.loose.foreign)
    if len(local):
        written = sort_keys(keys(table.oids))
        local_keys = keys(repo.loose.oids[local])
        in_pack = lookup(written, local_keys) >= 0
        expired = (lookup(pruned, local_keys) >= 0) & ~in_pack if len(pruned) else np.zeros(len(local), dtype=bool)
        for k in np.flatnonzero(in_pack | expired):
            path = repo.loose.paths[int(local[k])]
            try:
                if expired[k] and expiration is not None and int(path.stat().st_mtime) > expiration:
                    continue  # refreshed since the listing: wanted again
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as e:
                failures.append(e)
                continue
            removal.loose += 1
            crash_point("loose-removed")
    if failures:
        more = f" (and {len(failures) - 1} more loose objects)" if len(failures) > 1 else ""
        _could_not_remove(warn, failures[0], more)
    with contextlib.suppress(OSError):
        fsync_dir(repo.pack_dir)
    return removal


@dataclass
class Removal:
    """What remove_replaced removed, and the multi-pack-index it found (and removed)."""

    midx: midx_mod.Midx
    packs: list[Path] = field(default_factory=list)
    loose: int = 0


def _could_not_remove(warn: Callable[[str], None] | None, e: OSError, more: str = "") -> None:
    """Once the new packs are in place a file that stays is a duplicate, not a failure:
    the run goes on and succeeds, saying so."""
    if warn is not None:
        warn(f"could not remove {e.filename}: {e.strerror}{more}; the new packs hold its objects")


def _freshened(pack: PackSource) -> bool:
    try:
        return pack.path.stat().st_mtime != pack.mtime
    except FileNotFoundError:
        return False


def update_server_info(repo: Repository, warn: Callable[[str], None]) -> bool:
    """objects/info/packs and info/refs for dumb-HTTP clients, as `git repack` updates them
    (unless -n); whether they were. Their failure is a warning, as in Git's repack: the packs
    are installed and the repository whole by then (a damaged pack the repack did not read
    fails it, for one)."""
    proc = repo.git("update-server-info", check=False, capture_output=True)
    if proc.returncode != 0:
        warn(f"git update-server-info failed: {gitcmd.stderr_line(proc.stderr) or f'exit {proc.returncode}'}")
        return False
    return True


def write_and_install(
    repo: Repository,
    table: ObjectTable,
    groups: list[PackGroup],
    opts: RepackOptions,
    out_dir: Path,
    result: RepackResult,
    journal: Journal | None,
    history: ObjectHistory | None,
    bitmap_heads: np.ndarray | None,
    ages: np.ndarray,
    split_at: int | None,
    seconds: dict,
    progress: ProgressCallback | None,
    ordered: bool = False,
) -> list[Path]:
    """Write each group's pack and install it beside the old ones (nothing is removed here).
    On any failure the packs this run installed are taken away again, so that a failed repack
    (a full disk, a signal) leaves the repository as it was; `result.fresh_packs` are those
    it installed that were not there before, for the caller to take away in turn if what it
    does next fails before anything is removed (withdraw). With `ordered` (a full repack:
    the reachable objects' pack is the ordered pack), its drift count goes to
    `result.misplaced`, for the caller to keep once the repack has succeeded (drift.py)."""
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
                result.bitmap_note = bitmap.why or ""
            name = out_dir / f"pack-{written.checksum.hex()}.pack"
            existed = name.with_suffix(".idx").exists()
            if journal is not None:
                journal.installing(name)
            try:
                final = install(tmp_pack, files, written.checksum, out_dir, group.kind == PROMISOR)
            except BaseException:
                with contextlib.suppress(OSError):
                    tmp_pack.unlink()  # not renamed into place: still the temporary file
                raise
            if not existed:
                fresh.append(final)
            installed.append(final)
            if group.kind == CRUFT:
                result.cruft_packs.append(final)
            elif group.kind == REACHABLE and ordered and journal is not None:
                part = table.subset(group.rows)
                rows = written.plan.rows
                result.misplaced = (final, drift_mod.misplaced_count(part.kinds[rows], part.tagged[rows]))
            result.pack_bytes += written.size
    except BaseException:
        for pack in fresh:
            remove_pack(pack)
        if journal is not None:
            journal.finish()
        raise
    result.fresh_packs = fresh
    return installed


def withdraw(repo: Repository, result: RepackResult, journal: Journal | None) -> None:
    """Take the packs a repack installed away again when it fails before removing anything
    (the journal names no removal): with the multi-pack-index it may have written for them,
    the repository is as it was. Once removal has begun, the new packs are what holds the
    objects, and they stay."""
    if journal is not None and journal.removal_started:
        return
    if result.midx and result.fresh_packs:
        midx_mod.remove(repo.pack_dir)
    for pack in result.fresh_packs:
        remove_pack(pack)
    result.fresh_packs = []
