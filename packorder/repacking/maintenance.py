"""`packorder gc`: what `git gc` does, in Git's order, with packorder's repack in place of
`git repack`, so that regular maintenance keeps the order instead of undoing it.

Git runs every other step (builtin/gc.c, cmd_gc): pack-refs, reflog expire, then the repack,
prune, worktree prune, rerere gc, the removal of indexes without packs, the commit-graph.
The same configuration decides what runs (`gc.packRefs`, `gc.reflogExpire`,
`gc.pruneExpire`, `gc.worktreePruneExpire`, `gc.writeCommitGraph`, `gc.aggressiveDepth`,
`gc.aggressiveWindow`, `gc.maxCruftSize`), and `--auto` starts only past Git's thresholds
(`gc.auto`, `gc.autoPackLimit`) or, beyond Git, when the layout has drifted from the order
(drift.py, `packorder.autoDrift`). `packorder.auto` and `packorder.autoPackLimit` stand in
for Git's two keys, so that `gc.auto=0` can stop Git's own auto gc while packorder's runs
(docs/maintenance.md).

The whole run holds the repository's lock (Git's gc.pid), as `git gc` does.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packorder import gitcmd
from packorder.errors import RepositoryError
from packorder.format import object_format as object_formats
from packorder.orders.catalog import configured_order
from packorder.progress import ProgressCallback
from packorder.repacking import drift as drift_mod
from packorder.repacking import expiry, recovery
from packorder.repacking import lock as lock_mod
from packorder.store.listing import list_packs

DEFAULT_AUTO = 6700
DEFAULT_AUTO_PACK_LIMIT = 50
DEFAULT_AUTO_DRIFT = 0.05
DEFAULT_PRUNE_EXPIRE = "2.weeks.ago"
DEFAULT_WORKTREE_PRUNE_EXPIRE = "3.months.ago"
DEFAULT_AGGRESSIVE_DEPTH, DEFAULT_AGGRESSIVE_WINDOW = 50, 250
KEEP_CONFIGURED = object()  # `prune`: gc.pruneExpire decides


@dataclass
class AutoCheck:
    """Why `--auto` would run, from Git's thresholds and the layout's drift."""

    needed: bool
    reasons: list[str]
    loose_estimate: int  # loose objects, estimated as Git does from objects/17
    packs: int  # local packs without .keep
    drift: drift_mod.Drift | None


@dataclass
class GcResult:
    git_dir: Path
    ran: bool  # False when --auto found nothing to do, or another gc holds the repository
    auto: AutoCheck | None
    steps: list[str] = field(default_factory=list)  # what ran, in order
    repack: object | None = None  # the RepackResult
    seconds: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _loose_estimate(objects_dir: Path) -> int:
    """Loose objects, estimated as Git's too_many_loose_objects() does: those of objects/17,
    times 256."""
    try:
        names = os.listdir(objects_dir / "17")
    except OSError:
        return 0
    return 256 * sum(1 for n in names if re.fullmatch(r"[0-9a-f]{38}", n))


def auto_check(git_dir: Path, config: gitcmd.Config, order: str) -> AutoCheck:
    """Git's need_to_gc(), plus the drift of the layout."""
    threshold = config.get_int("packorder.auto", config.get_int("gc.auto", DEFAULT_AUTO))
    if threshold <= 0:
        return AutoCheck(False, [], 0, 0, None)
    pack_limit = config.get_int("packorder.autoPackLimit", config.get_int("gc.autoPackLimit", DEFAULT_AUTO_PACK_LIMIT))
    objects_dir = git_dir / "objects"
    packs = [p for p in list_packs(objects_dir / "pack") if not p.with_suffix(".keep").exists()]
    reasons = []
    if 0 < pack_limit < len(packs):
        reasons.append(f"{len(packs)} packs (gc.autoPackLimit {pack_limit})")
    loose = _loose_estimate(objects_dir)
    # Git compares the count in objects/17 with ceil(gc.auto / 256).
    if loose // 256 > math.ceil(threshold / 256):
        reasons.append(f"about {loose} loose objects (gc.auto {threshold})")
    measured = drift_mod.measure(git_dir, order, object_formats.named(config.object_format))
    limit = _float_setting(config, "packorder.autoDrift", DEFAULT_AUTO_DRIFT)
    if limit > 0 and measured.share > limit:
        reasons.append(f"layout drift {measured.share:.1%} (packorder.autoDrift {limit:.1%})")
    return AutoCheck(bool(reasons), reasons, loose, len(packs), measured)


def _float_setting(config: gitcmd.Config, key: str, default: float) -> float:
    value = config.get(key)
    if value is None:
        return default
    try:
        return float(value.strip().rstrip("%")) / (100 if value.strip().endswith("%") else 1)
    except ValueError:
        raise RepositoryError(f"bad numeric config value '{value}' for '{key}'") from None


def _expiry_setting(config: gitcmd.Config, key: str, default: str, git_dir: Path) -> str | None:
    """A gc.*Expire value, checked as git gc checks it; None for "never" (nothing expires)."""
    value = config.get(key)
    text = default if value is None else value.strip()
    return None if expiry.expiration(text, key, git_dir) is None else text


def _both_never(config: gitcmd.Config, git_dir: Path) -> bool:
    """Git skips `reflog expire` when both reflog expiries are never (gc_config)."""
    values = [config.get("gc.reflogExpire"), config.get("gc.reflogExpireUnreachable")]
    return all(v is not None and expiry.expiration(v, "gc.reflogExpire", git_dir) is None for v in values)


def _pack_refs_wanted(config: gitcmd.Config, bare: bool) -> bool:
    value = config.get("gc.packRefs")
    if value is None:
        return True
    if value.strip().lower() == "notbare":
        return not bare
    return gitcmd.parse_bool(value)


def _git_supports(git_dir: Path, *args: str) -> bool:
    """Whether this Git knows an option (`git pack-refs --auto` is Git 2.45's)."""
    proc = gitcmd.run([*args, "-h"], git_dir=git_dir, check=False)
    return args[-1] in (proc.stdout + proc.stderr).decode(errors="replace")


def gc(
    repo_path: str | os.PathLike[str] | None = None,
    *,
    auto: bool = False,
    aggressive: bool = False,
    prune: object = KEEP_CONFIGURED,
    force: bool = False,
    quiet: bool = False,
    order: str | None = None,
    verify: str | None = None,
    progress: ProgressCallback | None = None,
    warn: Callable[[str], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> GcResult:
    """Run Git's maintenance with packorder's repack. `prune`: an expiry date (Git's syntax),
    None for `--no-prune`, or gc.pruneExpire by default. With `auto`, nothing runs unless a
    threshold is passed (GcResult.auto says which), and a repository held by another gc is
    left alone quietly, as `git gc --auto` leaves it. `log` is called with Git's notices
    ("Auto packing the repository ...")."""
    from packorder.repacking.pipeline import repack

    started = time.perf_counter()
    warnings: list[str] = []

    def note(message: str) -> None:
        warnings.append(message)
        if warn is not None:
            warn(message)

    git_dir = gitcmd.find_git_dir(repo_path)
    config = gitcmd.read_config(git_dir)
    bare = config.bare(git_dir)
    order = configured_order(config, order)
    if prune is KEEP_CONFIGURED:
        prune_expire = _expiry_setting(config, "gc.pruneExpire", DEFAULT_PRUNE_EXPIRE, git_dir)
    elif prune is None:
        prune_expire = None
    else:
        assert isinstance(prune, str)
        prune_expire = None if expiry.expiration(prune, "prune", git_dir) is None else prune
    worktree_expire = _expiry_setting(config, "gc.worktreePruneExpire", DEFAULT_WORKTREE_PRUNE_EXPIRE, git_dir)
    if not config.get_bool("gc.cruftPacks", True):
        note("gc.cruftPacks=false is not followed: packorder keeps unreachable objects in a cruft pack")
    result = GcResult(git_dir, ran=False, auto=None)
    if auto:
        t = time.perf_counter()
        result.auto = auto_check(git_dir, config, order)
        result.seconds["auto_check"] = time.perf_counter() - t
        if not result.auto.needed or not _pre_auto_gc_hook_allows(git_dir):
            result.warnings = warnings
            result.seconds["total"] = time.perf_counter() - started
            return result
        if log is not None and not quiet:
            log("Auto packing the repository for optimum performance.")
            log('See "packorder gc --help" and docs/maintenance.md for manual housekeeping.')
    notes: list[str] = []
    try:
        held = lock_mod.acquire(git_dir, notes.append, force=force)
    except lock_mod.LockHeld:
        if auto:
            result.warnings = warnings
            return result  # quiet on --auto, as git gc is
        raise
    # A killed run's lock taken over and its leftovers cleaned: one line for both.
    recovery.recover(git_dir, notes.append)
    if notes:
        note("; ".join(notes))
    try:
        _run_steps(
            result,
            git_dir,
            config,
            bare=bare,
            auto=auto,
            aggressive=aggressive,
            prune_expire=prune_expire,
            worktree_expire=worktree_expire,
            quiet=quiet,
            order=order,
            verify=verify,
            progress=progress,
            note=note,
            held=held,
            repack=repack,
        )
    finally:
        held.release()
    result.ran = True
    result.warnings = warnings
    result.seconds["total"] = time.perf_counter() - started
    return result


def _run_steps(
    result: GcResult,
    git_dir: Path,
    config: gitcmd.Config,
    *,
    bare: bool,
    auto: bool,
    aggressive: bool,
    prune_expire: str | None,
    worktree_expire: str | None,
    quiet: bool,
    order: str,
    verify: str | None,
    progress: ProgressCallback | None,
    note: Callable[[str], None],
    held: lock_mod.RepositoryLock,
    repack: Callable[..., object],
) -> None:
    from packorder.repacking import snapshot

    def step(name: str, *args: str) -> None:
        t = time.perf_counter()
        proc = gitcmd.run(list(args), git_dir=git_dir, check=False, capture_output=True)
        result.seconds[name] = time.perf_counter() - t
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip().splitlines()
            raise RepositoryError(f"failed to run git {' '.join(args)}: {err[-1] if err else proc.returncode}")
        result.steps.append(name)

    if _pack_refs_wanted(config, bare):
        extra = ["--auto"] if auto and _git_supports(git_dir, "pack-refs", "--auto") else []
        step("pack-refs", "pack-refs", "--all", "--prune", *extra)
    if not _both_never(config, git_dir):
        step("reflog-expire", "reflog", "expire", "--all")
    t = time.perf_counter()
    depth = window = None
    if aggressive:
        depth = config.get_int("gc.aggressiveDepth", DEFAULT_AGGRESSIVE_DEPTH)
        window = config.get_int("gc.aggressiveWindow", DEFAULT_AGGRESSIVE_WINDOW)
        depth = depth if depth > 0 else None
        window = window if window > 0 else None
    max_cruft = config.get_int("gc.maxCruftSize", 0) or None
    start = snapshot.take(git_dir, lock=held, order=order, warn=note)
    result.repack = repack(
        git_dir,
        order=order,
        no_reuse_delta=aggressive,
        depth=depth,
        window=window,
        verify=verify,
        cruft_expiration=prune_expire,
        max_cruft_size=max_cruft,
        local=True,
        progress=None if quiet else progress,
        warn=note,
        start=start,
    )
    result.seconds["repack"] = time.perf_counter() - t
    result.steps.append("repack")
    if prune_expire is not None and _prune_could_remove(git_dir, prune_expire):
        args = ["prune", "--expire", prune_expire]
        if quiet:
            args.append("--no-progress")
        if _has_promisor_remote(config):
            args.append("--exclude-promisor-objects")
        step("prune", *args)
    if worktree_expire is not None:
        step("worktree-prune", "worktree", "prune", "--expire", worktree_expire)
    step("rerere-gc", "rerere", "gc")
    _remove_indexes_without_packs(git_dir / "objects" / "pack")
    if config.get_bool("gc.writeCommitGraph", True) and config.get_bool("core.commitGraph", True):
        step("commit-graph", "commit-graph", "write", "--reachable", *(["--no-progress"] if quiet else []))
    if auto and _loose_estimate(git_dir / "objects") // 256 > math.ceil(
        config.get_int("packorder.auto", config.get_int("gc.auto", DEFAULT_AUTO)) / 256
    ):
        note("There are too many unreachable loose objects; run 'git prune' to remove them.")


def _has_promisor_remote(config: gitcmd.Config) -> bool:
    """Git's repo_has_promisor_remote(): a partial clone's remote, or one marked promisor."""
    if config.get("extensions.partialclone") is not None:
        return True
    return any(k.startswith("remote.") and k.endswith(".promisor") and config.get_bool(k, False) for k in config.values)


def _prune_could_remove(git_dir: Path, prune_expire: str) -> bool:
    """Whether `git prune --expire` could remove anything: a loose object or a temporary
    file older than the expiry, or a shallow file to clean. After packorder's repack none
    of the loose objects it listed is left, so usually there is nothing, and Git's prune
    (a walk of the whole history) is skipped."""
    if (git_dir / "shallow").exists():
        return True
    when = expiry.expiration(prune_expire, "gc.pruneExpire", git_dir)
    if when is None:
        return False
    objects_dir = git_dir / "objects"
    for sub in [objects_dir, objects_dir / "pack", *objects_dir.glob("[0-9a-f][0-9a-f]")]:
        with contextlib.suppress(OSError), os.scandir(sub) as entries:
            for entry in entries:
                is_object = sub.name != "pack" and sub != objects_dir
                if (is_object or entry.name.startswith("tmp_")) and int(entry.stat().st_mtime) <= when:
                    return True
    return False


def _remove_indexes_without_packs(pack_dir: Path) -> None:
    """Git's clean_pack_garbage(): an .idx whose .pack is gone is garbage (an index is
    written after its pack, so none is half-made)."""
    for idx in pack_dir.glob("pack-*.idx"):
        if not idx.with_suffix(".pack").exists():
            with contextlib.suppress(FileNotFoundError):
                idx.unlink()


def _pre_auto_gc_hook_allows(git_dir: Path) -> bool:
    """Git runs the pre-auto-gc hook before an automatic gc; a failing hook stops it."""
    proc = gitcmd.run(["hook", "run", "--ignore-missing", "pre-auto-gc"], git_dir=git_dir, check=False)
    return proc.returncode == 0
