"""`packorder gc`: what `git gc` does, in Git's order, with packorder's repack in place of
`git repack`, so that regular maintenance keeps the order instead of undoing it.

Geometric by default (`packorder.strategy`, as Git's maintenance is since 2.54): the small
packs roll up into one in the order (`repack --geometric`, with a multi-pack-index), and
everything is repacked into one ordered pack only when the progression collapses (the
roll-ups outweigh half the ordered pack), when the layout has drifted past
`packorder.autoDrift`, or with --full or --aggressive. `packorder.strategy = full` repacks
everything every time, as `git gc` does.

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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packorder import gitcmd
from packorder.errors import RepositoryError
from packorder.format import object_format as object_formats
from packorder.format.object_format import ObjectFormat
from packorder.native_call import core_errors
from packorder.orders.catalog import configured_order
from packorder.progress import ProgressCallback
from packorder.repacking import expiry, recovery
from packorder.repacking import lock as lock_mod
from packorder.repacking.auto import DEFAULT_AUTO, AutoCheck, auto_check, loose_estimate, split_factor, strategy_of
from packorder.store.listing import list_loose

DEFAULT_PRUNE_EXPIRE = "2.weeks.ago"
DEFAULT_WORKTREE_PRUNE_EXPIRE = "3.months.ago"
DEFAULT_AGGRESSIVE_DEPTH, DEFAULT_AGGRESSIVE_WINDOW = 50, 250


class Configured:
    """The value of an option left to the repository's configuration (gc's `prune`:
    gc.pruneExpire, else two weeks)."""

    def __repr__(self) -> str:
        return "CONFIGURED"


CONFIGURED = Configured()


@dataclass
class GcResult:
    """What `packorder.gc` did: whether it ran (and, with `auto`, what the check found), the
    steps in the order they ran, the repack's RepackResult, timings and warnings."""

    git_dir: Path
    ran: bool  # False when --auto found nothing to do, or another gc holds the repository
    auto: AutoCheck | None
    steps: list[str] = field(default_factory=list)  # what ran, in order
    repack: object | None = None  # the RepackResult
    seconds: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


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


@core_errors
def gc(
    repo: str | os.PathLike[str] | None = None,
    *,
    auto: bool = False,
    aggressive: bool = False,
    full: bool = False,
    prune: str | Configured | None = CONFIGURED,
    force: bool = False,
    quiet: bool = False,
    order: str | None = None,
    verify: str | None = None,
    max_cruft_size: int | None = None,
    progress: ProgressCallback | None = None,
    warn: Callable[[str], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> GcResult:
    """Run Git's maintenance with packorder's repack: geometric (`packorder.strategy`), the
    small packs rolled up in order, unless the progression collapsed, the layout drifted, or
    `full`, `aggressive` or a `prune` date asks for one ordered pack (see the module's doc).
    `prune`: an expiry date (Git's syntax), None for `--no-prune`, or gc.pruneExpire by
    default (applied by the all-into-one repack).
    `max_cruft_size`: new cruft packs' cap (else gc.maxCruftSize). With `auto`, nothing runs
    unless a threshold is passed (GcResult.auto says which), and a repository held by
    another gc or by Git's maintenance is left alone quietly, as `git gc --auto` leaves it.
    `log` is called with Git's notices ("Auto packing the repository ...")."""
    started = time.perf_counter()
    run = GcRun(gitcmd.find_git_dir(repo), auto, aggressive, quiet, progress, warn)
    run.read_settings(full, prune, order, verify, max_cruft_size)
    plan = run.plan
    if auto:
        run.result.auto = plan
        if not plan.needed or not _pre_auto_gc_hook_allows(run.git_dir):
            return run.finish(started, ran=False)
        if log is not None and not quiet and plan.full:
            log("Auto packing the repository for optimum performance.")
            log('See "packorder gc --help" and docs/maintenance.md for manual housekeeping.')
    notes: list[str] = []
    try:
        held = lock_mod.acquire(run.git_dir, notes.append, force=force, maintenance_wait=0 if auto else None)
    except lock_mod.LockHeld:
        if auto:
            run.result.warnings = run.warnings
            return run.result  # quiet on --auto, as git gc is
        raise
    # A killed run's lock taken over and its leftovers cleaned: one line for both.
    recovery.recover(run.git_dir, notes.append)
    if notes:
        run.note("; ".join(notes))
    rolling = auto and not plan.full
    try:
        if rolling:
            run.roll_up(held)
        else:
            run.steps(held)
    finally:
        held.release()
    if rolling:
        # Git's geometric maintenance's other tasks, each on its own condition; after the
        # lock, since Git's maintenance skips its run while objects/maintenance.lock is held.
        _git_maintenance_tasks(run.result, run.git_dir)
    return run.finish(started, ran=True)


class GcRun:
    """One `packorder gc`: its settings read once from the call and the configuration, Git's
    steps and packorder's repack run in Git's order, into one GcResult."""

    def __init__(
        self,
        git_dir: Path,
        auto: bool,
        aggressive: bool,
        quiet: bool,
        progress: ProgressCallback | None,
        warn: Callable[[str], None] | None,
    ) -> None:
        self.git_dir = git_dir
        self.config = gitcmd.read_config(git_dir)
        self.auto, self.aggressive, self.quiet = auto, aggressive, quiet
        self.progress = None if quiet else progress
        self.warn = warn
        self.warnings: list[str] = []
        self.result = GcResult(git_dir, ran=False, auto=None)

    def note(self, message: str) -> None:
        self.warnings.append(message)
        if self.warn is not None:
            self.warn(message)

    def read_settings(
        self,
        full: bool,
        prune: str | Configured | None,
        order: str | None,
        verify: str | None,
        max_cruft_size: int | None,
    ) -> None:
        """The settings the run keeps, each from the call, else the configuration, else Git's
        default; and the plan (auto.py): what is due."""
        config, git_dir = self.config, self.git_dir
        self.order = configured_order(config, order)
        self.verify = verify
        if isinstance(prune, Configured):
            self.prune_expire = _expiry_setting(config, "gc.pruneExpire", DEFAULT_PRUNE_EXPIRE, git_dir)
        elif prune is None:
            self.prune_expire = None
        else:
            assert isinstance(prune, str)
            self.prune_expire = None if expiry.expiration(prune, "prune", git_dir) is None else prune
        self.worktree_expire = _expiry_setting(config, "gc.worktreePruneExpire", DEFAULT_WORKTREE_PRUNE_EXPIRE, git_dir)
        if not config.get_bool("gc.cruftPacks", True):
            self.note("gc.cruftPacks=false is not followed: packorder keeps unreachable objects in a cruft pack")
        self.max_cruft_size = (
            max_cruft_size if max_cruft_size is not None else config.get_int("gc.maxCruftSize", 0) or None
        )
        strategy = strategy_of(config)
        t = time.perf_counter()
        self.plan = auto_check(git_dir, config, self.order, strategy)
        self.result.seconds["auto_check"] = time.perf_counter() - t
        # An all-into-one repack where one is due, asked for, or needed to prune at a date
        # given (a roll-up keeps unreachable objects).
        pruning_at_a_date = not isinstance(prune, Configured) and self.prune_expire is not None
        if strategy == "full" or full or self.aggressive or pruning_at_a_date:
            self.plan.full = True

    def finish(self, started: float, ran: bool) -> GcResult:
        self.result.ran = ran
        self.result.warnings = self.warnings
        self.result.seconds["total"] = time.perf_counter() - started
        return self.result

    def step(self, name: str, *args: str) -> None:
        """One of Git's steps; its failure stops the run."""
        t = time.perf_counter()
        proc = gitcmd.run(list(args), git_dir=self.git_dir, check=False, capture_output=True)
        self.result.seconds[name] = time.perf_counter() - t
        if proc.returncode != 0:
            err = gitcmd.stderr_line(proc.stderr) or f"exit {proc.returncode}"
            raise RepositoryError(f"failed to run git {' '.join(args)}: {err}")
        self.result.steps.append(name)

    def steps(self, held: lock_mod.RepositoryLock) -> None:
        """Git's gc steps in Git's order, packorder's repack in the place of Git's."""
        config, git_dir = self.config, self.git_dir
        # What is cheap to prove before Git's steps change refs and reflogs: the loose objects
        # (damage inside a pack is for the repack to find, after them, as with git gc).
        check_loose_objects(git_dir, object_formats.named(config.object_format))
        if _pack_refs_wanted(config, config.bare(git_dir)):
            extra = ["--auto"] if self.auto and _git_supports(git_dir, "pack-refs", "--auto") else []
            self.step("pack-refs", "pack-refs", "--all", "--prune", *extra)
        if not _both_never(config, git_dir):
            self.step("reflog-expire", "reflog", "expire", "--all")
        if self.plan.full:
            self.full_repack(held)
        else:
            # The small packs and loose objects roll up in order; a roll-up keeps unreachable
            # objects (as Git's does), so there is nothing for `git prune` until the next
            # all-into-one repack moves them to a cruft pack.
            self.roll_up(held)
        if self.worktree_expire is not None:
            self.step("worktree-prune", "worktree", "prune", "--expire", self.worktree_expire)
        self.step("rerere-gc", "rerere", "gc")
        _remove_indexes_without_packs(git_dir / "objects" / "pack")
        if config.get_bool("gc.writeCommitGraph", True) and config.get_bool("core.commitGraph", True):
            self.step(
                "commit-graph", "commit-graph", "write", "--reachable", *(["--no-progress"] if self.quiet else [])
            )
        auto_limit = config.get_int("packorder.auto", config.get_int("gc.auto", DEFAULT_AUTO))
        if self.auto and self.plan.full and loose_estimate(git_dir / "objects") // 256 > math.ceil(auto_limit / 256):
            self.note("There are too many unreachable loose objects; run 'git prune' to remove them.")

    def aggressive_search(self) -> dict[str, int]:
        """With --aggressive, Git's aggressive window and depth (gc.aggressiveWindow and
        gc.aggressiveDepth; 0 or less leaves the one configured for repack)."""
        if not self.aggressive:
            return {}
        window = self.config.get_int("gc.aggressiveWindow", DEFAULT_AGGRESSIVE_WINDOW)
        depth = self.config.get_int("gc.aggressiveDepth", DEFAULT_AGGRESSIVE_DEPTH)
        return {name: value for name, value in (("window", window), ("depth", depth)) if value > 0}

    def full_repack(self, held: lock_mod.RepositoryLock) -> None:
        """The all-into-one repack in order (aggressive: deltas searched anew, Git's
        aggressive window and depth), then `git prune` where it could remove something."""
        from packorder.repacking import snapshot
        from packorder.repacking.pipeline import repack

        config, git_dir = self.config, self.git_dir
        t = time.perf_counter()
        geometric = self.plan.strategy == "geometric" and config.get_bool("core.multiPackIndex", True)
        start = snapshot.take(git_dir, lock=held, order=self.order, warn=self.note)
        self.result.repack = repack(
            git_dir,
            order=self.order,
            no_reuse_delta=self.aggressive,
            **self.aggressive_search(),
            verify=self.verify,
            cruft_expiration=self.prune_expire,
            max_cruft_size=self.max_cruft_size,
            local=True,
            write_midx="plain" if geometric else None,
            progress=self.progress,
            warn=self.note,
            start=start,
        )
        self.result.seconds["repack"] = time.perf_counter() - t
        self.result.steps.append("repack")
        if self.prune_expire is not None and _prune_could_remove(git_dir, self.prune_expire):
            args = ["prune", "--expire", self.prune_expire]
            if self.quiet:
                args.append("--no-progress")
            if _has_promisor_remote(config):
                args.append("--exclude-promisor-objects")
            self.step("prune", *args)

    def roll_up(self, held: lock_mod.RepositoryLock) -> None:
        """The geometric repack of Git's geometric maintenance, in packorder's order, with a
        multi-pack-index unless core.multiPackIndex is off."""
        from packorder.repacking.geometric import repack_geometric
        from packorder.repacking.options import RepackRequest

        t = time.perf_counter()
        request = RepackRequest(
            order=self.order,
            verify=self.verify,
            geometric=split_factor(self.config),
            write_midx="plain" if self.config.get_bool("core.multiPackIndex", True) else None,
        )
        self.result.repack = repack_geometric(self.git_dir, request, progress=self.progress, warn=self.note, lock=held)
        self.result.seconds["geometric-repack"] = time.perf_counter() - t
        self.result.steps.append("geometric-repack")


# Git's maintenance tasks that touch no pack, newest last: Git before 2.50 knows the first two.
MAINTENANCE_TASKS = ("commit-graph", "pack-refs", "reflog-expire", "worktree-prune", "rerere-gc")


def _git_maintenance_tasks(result: GcResult, git_dir: Path) -> None:
    """`git maintenance run --auto` of the tasks that touch no pack, each on its own
    condition (Git's), the others of Git's geometric maintenance. Their failure is Git's to
    report the next time it runs them: the repository is valid whatever they do."""
    t = time.perf_counter()
    for tasks in (MAINTENANCE_TASKS, MAINTENANCE_TASKS[:2]):
        args = ["maintenance", "run", "--auto", "--quiet", *(f"--task={task}" for task in tasks)]
        proc = gitcmd.run(args, git_dir=git_dir, check=False)
        if proc.returncode == 0 or b"is not a valid task" not in proc.stderr:
            break
    result.seconds["maintenance-tasks"] = time.perf_counter() - t
    result.steps.append("maintenance-tasks")


LOOSE_CHECK_LIMIT = 64 << 20  # bytes of loose files read before Git's steps; more: left to the repack


def check_loose_objects(git_dir: Path, fmt: ObjectFormat) -> None:
    """Every loose object of `git_dir` inflated and hashed (as long as they take less than
    LOOSE_CHECK_LIMIT bytes): one that is corrupt, or whose content is another object's,
    is found before gc changes anything."""
    import hashlib
    import zlib

    listed = list_loose(git_dir / "objects", fmt)
    sizes = []
    for _, path in listed:
        with contextlib.suppress(OSError):
            sizes.append(path.stat().st_size)
    if sum(sizes) > LOOSE_CHECK_LIMIT:
        return
    for oid, path in listed:
        try:
            data = zlib.decompress(path.read_bytes())
        except FileNotFoundError:
            continue  # pruned meanwhile
        except (OSError, zlib.error) as e:
            raise RepositoryError(f"loose object {path} is corrupt: {e}; nothing was changed") from None
        header, nul, _ = data.partition(b"\0")
        kind, _, size = header.partition(b" ")
        if not nul or kind not in (b"commit", b"tree", b"blob", b"tag") or not size.isdigit():
            raise RepositoryError(f"loose object {path} is corrupt: bad header; nothing was changed")
        if hashlib.new(fmt.name, data).digest() != oid:
            raise RepositoryError(f"loose object {path} holds another object's content; nothing was changed")


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
    """Git runs the pre-auto-gc hook before an automatic gc; a failing hook stops it. The
    recipe's hook (docs/maintenance.md), which runs packorder gc --auto itself, is not run
    from packorder gc: it is how Git starts this very run."""
    where = gitcmd.run(["rev-parse", "--git-path", "hooks/pre-auto-gc"], git_dir=git_dir, check=False)
    hook = Path(where.stdout.decode().strip())
    try:
        text = (hook if hook.is_absolute() else git_dir / hook).read_bytes()
    except FileNotFoundError:
        return True  # no hook: `git hook run --ignore-missing` would succeed (a process saved)
    except OSError:
        text = b""
    if b"packorder" in text and b"gc --auto" in text:
        return True
    proc = gitcmd.run(["hook", "run", "--ignore-missing", "pre-auto-gc"], git_dir=git_dir, check=False)
    return proc.returncode == 0
