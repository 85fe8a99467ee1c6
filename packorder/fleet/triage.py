"""Triage: for each repository of a fleet, in milliseconds and without running a workload,
what it holds (packs, loose objects, unreachable bytes in cruft packs), how far its layout
has drifted from the order (`gc --auto`'s measure), the predicted share of index-pack seeks
under 2 MiB now and after a repack in its configured order, and what that repack would
cost. `packorder fleet status` prints it, sorted by expected benefit; `fleet repack` chooses
from it.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from packorder.errors import PackError
from packorder.fleet import cost as cost_mod
from packorder.fleet import prediction, triage_cache
from packorder.fleet.discovery import discover
from packorder.format import layout as layout_mod
from packorder.format.object_format import ObjectFormat, named
from packorder.format.pack import OBJ_COMMIT, OBJ_TREE
from packorder.gitcmd import read_config
from packorder.native_call import core_errors
from packorder.orders.catalog import configured_order
from packorder.progress import ProgressCallback
from packorder.repacking import drift as drift_mod
from packorder.settings import write_bitmap
from packorder.store.listing import list_packs, loose_ids
from packorder.store.repository import PackSource, Repository, open_repository

# Packs still there after a repack: .keep packs, left alone, and cruft packs, whose objects
# go to a new cruft pack of about the same layout. (A promisor pack's objects go to the new
# promisor pack, which the plan holds.)
KEPT_SUFFIXES = (".mtimes", ".keep")


@dataclass
class Triage:
    path: Path  # the git directory
    order: str  # the order a repack would write (packorder.order, else recency)
    packs: int = 0
    pack_bytes: int = 0
    loose: int = 0
    loose_bytes: int = 0
    objects: int = 0  # in packs (cruft included) and loose
    cruft_bytes: int = 0  # unreachable objects kept in cruft packs
    drift: float = 0.0  # gc --auto's layout drift: share of objects out of order
    share_now: float | None = None  # predicted share of index-pack seeks under 2 MiB
    share_after: float | None = None  # the same after a repack in `order`
    estimated_seconds: float = 0.0
    estimated_peak_bytes: int = 0
    seconds: float = 0.0  # the triage's own time
    error: str | None = None  # why the repository could not be triaged (then it is not repacked)
    fingerprint: str | None = None  # with a triage cache: what the triage was made from
    cached: bool = False  # taken from the triage cache: nothing it depends on had changed

    @property
    def gain(self) -> float:
        """Points of share gained by a repack (0 when either side is unknown)."""
        if self.share_now is None or self.share_after is None:
            return 0.0
        return 100 * (self.share_after - self.share_now)

    def benefit_key(self) -> tuple[float, float, int]:
        """Larger first: predicted gain, then drift, then objects outside packs."""
        return (self.gain, self.drift, self.loose + self.packs)


@dataclass
class FleetStatus:
    repositories: list[Triage]  # sorted by expected benefit, largest first
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def triage(git_dir: Path, order: str | None = None, cache: Mapping[str, dict[str, Any]] | None = None) -> Triage:
    """The triage of one repository; an error is recorded in it, never raised (one broken
    repository must not stop the fleet's status). With a `cache` (triage_cache.load), a
    repository whose fingerprint is unchanged is taken from it."""
    started = time.perf_counter()
    t = Triage(git_dir, order or "")
    try:
        if cache is not None:
            fingerprint = triage_cache.fingerprint(git_dir, order)
            known = cache.get(str(git_dir))
            if known is not None and known.get("fingerprint") == fingerprint:
                t = _from_record(known)
            t.fingerprint = fingerprint
        if not t.cached:
            _fill(t, order)
    except Exception as e:  # any failure of one repository is its record's, not the fleet's
        t.error = str(e) if isinstance(e, (PackError, OSError)) and str(e) else f"{type(e).__name__}: {e}"
    t.seconds = time.perf_counter() - started
    return t


def _from_record(record: dict[str, Any]) -> Triage:
    names = {f.name for f in fields(Triage)}
    t = Triage(**{k: v for k, v in record.items() if k in names})
    t.path, t.cached = Path(record["path"]), True
    return t


def _fill(t: Triage, order: str | None) -> None:
    repo = open_repository(t.path)
    config, fmt = repo.config, repo.fmt
    t.order = configured_order(config, order)
    local = [p for p in repo.packs if not p.foreign]
    t.packs = len(local)
    for pack in local:
        size = pack.size
        t.pack_bytes += size
        t.objects += pack.index.count
        if pack.cruft:
            t.cruft_bytes += size
    t.loose, t.loose_bytes = _loose(repo.objects_dir, fmt)
    t.objects += t.loose
    # By name: the listing's paths are under the git directory Git resolved, which may be
    # spelled otherwise than `t.path`; a pack pushed since the listing is read anew.
    by_name = {p.path.name: p.layout for p in local}

    def layout_of(pack: Path) -> layout_mod.PackLayout:
        return by_name[pack.name] if pack.name in by_name else layout_mod.load(pack, fmt=fmt)

    t.drift = drift_mod.measure(t.path, t.order, fmt, layout_of, remember=False).share
    estimate = cost_mod.estimate(repack_contents(t, repo, local))
    t.estimated_seconds, t.estimated_peak_bytes = estimate.seconds, estimate.peak_bytes
    t.share_now = prediction.modelled_share([p.layout for p in local], config)
    if t.objects:
        kept_packs = kept_after_repack([p.path for p in local])
        kept = [p.layout for p in local if p.path in kept_packs]
        t.share_after = prediction.modelled_share([prediction.planned_layout(repo, t.order), *kept], config)


def repack_contents(t: Triage, repo: Repository, local: list[PackSource]) -> cost_mod.Contents:
    c = cost_mod.Contents(t.objects, t.pack_bytes + t.loose_bytes)
    for pack in local:
        pack.layout.estimate_object_sizes()  # for the prediction too; nothing when read already
        kinds = pack.layout.real_kinds()
        trees = kinds == OBJ_TREE
        c.commits_and_trees += int(np.count_nonzero(trees | (kinds == OBJ_COMMIT)))
        c.tree_bytes += int(pack.layout.object_sizes[trees].sum())
    kept = any(p.keep for p in local)
    c.bitmap = write_bitmap(repo.config, None, repo.bare, repo.has_promisor_packs, kept)
    return c


def kept_after_repack(packs: list[Path]) -> list[Path]:
    return [p for p in packs if any(p.with_suffix(s).exists() for s in KEPT_SUFFIXES)]


def footprint(git_dir: Path) -> tuple[int, int]:
    """Packs, and the bytes of the packs and loose objects: what a repack changes."""
    packs = list_packs(git_dir / "objects" / "pack")
    fmt = named(read_config(git_dir).object_format)
    return len(packs), sum(p.stat().st_size for p in packs) + _loose(git_dir / "objects", fmt)[1]


def _loose(objects_dir: Path, fmt: ObjectFormat) -> tuple[int, int]:
    """Loose objects (ids of `fmt`) and their bytes (as stored, compressed)."""
    ids = fmt.split(loose_ids(objects_dir, fmt))
    total = 0
    for oid in ids:
        name = oid.hex()
        with contextlib.suppress(FileNotFoundError):  # pruned meanwhile
            total += os.stat(objects_dir / name[:2] / name[2:]).st_size
    return len(ids), total


@core_errors
def status(
    roots: Iterable[str | os.PathLike[str]] = (),
    *,
    paths: Iterable[str | os.PathLike[str]] = (),
    list_file: str | os.PathLike[str] | None = None,
    order: str | None = None,
    triage_cache_file: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
) -> FleetStatus:
    """Triage every repository named by `paths` or `list_file` or found under `roots` (a
    root that is a repository is taken as it is), sorted by expected benefit. With
    `triage_cache_file`, unchanged repositories are taken from it and the others added to it."""
    started = time.perf_counter()
    found = discover(paths, list_file, roots)
    cache = triage_cache.load(Path(triage_cache_file)) if triage_cache_file is not None else None
    out = []
    for done, git_dir in enumerate(found.repositories):
        out.append(triage(git_dir, order, cache))
        if progress is not None:
            progress("Triaging repositories", done + 1, len(found.repositories))
    if triage_cache_file is not None:
        triage_cache.save(Path(triage_cache_file), out)
    return FleetStatus(by_benefit(out), found.problems, time.perf_counter() - started)


def by_benefit(triages: Iterable[Triage]) -> list[Triage]:
    return sorted(triages, key=lambda t: t.benefit_key(), reverse=True)


def triage_all(
    git_dirs: list[Path], order: str | None = None, cache: Mapping[str, dict[str, Any]] | None = None
) -> list[Triage]:
    """The triage of several repositories: one task's work when a fleet run triages on
    the cluster (`cache`: the records of the triage cache about them)."""
    return [triage(git_dir, order, cache) for git_dir in git_dirs]
