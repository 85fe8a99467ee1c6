"""Whether `packorder gc --auto` runs, and what: the condition of Git's geometric
maintenance task (packs to roll up, loose objects past maintenance.geometric-repack.auto)
or, with `packorder.strategy = full`, of `git gc --auto` (gc.auto, gc.autoPackLimit); and
beyond Git, the drift of the layout from the order (drift.py, `packorder.autoDrift`), which
calls for an all-into-one ordered repack, as a collapsed progression does.

Light on purpose (no numpy, no repack): the command line answers `gc --auto` with it
before loading anything else, since a server may run it after every push.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from packorder import gitcmd
from packorder.errors import RepositoryError
from packorder.format import idx as idx_format
from packorder.format import object_format as object_formats
from packorder.orders.catalog import configured_order
from packorder.repacking import drift as drift_mod
from packorder.repacking import geometry as geometry_mod
from packorder.store.listing import list_packs

DEFAULT_AUTO = 6700
DEFAULT_AUTO_PACK_LIMIT = 50
# The drift that calls for an all-into-one ordered repack. Where packs roll up in order
# (geometric), the objects outside the ordered pack cost reads little until the progression
# collapses anyway (at a third of them, with factor 2), so the default is set to catch a
# pack Git rewrote in its own order (0.37-0.60 of the objects misplaced on libgit2, redis
# and git/git) rather than growth; where they arrive in Git's order and stay so (full), at
# 5% of them.
DEFAULT_AUTO_DRIFT = {"geometric": 0.25, "full": 0.05}
STRATEGIES = ("geometric", "full")
DEFAULT_STRATEGY = "geometric"
# Git's geometric maintenance task: loose objects past this start a run
# (maintenance.geometric-repack.auto), packs roll up by this factor (.splitFactor).
DEFAULT_GEOMETRIC_AUTO = 100
DEFAULT_SPLIT_FACTOR = 2


@dataclass
class AutoCheck:
    """Why `--auto` would run, from Git's thresholds and the layout's drift."""

    needed: bool
    reasons: list[str]
    loose_estimate: int  # loose objects, estimated as Git does from objects/17
    packs: int  # local packs without .keep
    drift: drift_mod.Drift | None
    strategy: str = DEFAULT_STRATEGY
    roll_up: int = 0  # geometric: packs that roll up
    full: bool = False  # an all-into-one ordered repack is due


def loose_estimate(objects_dir: Path) -> int:
    """Loose objects, estimated as Git's too_many_loose_objects() does: those of objects/17,
    times 256."""
    try:
        names = os.listdir(objects_dir / "17")
    except OSError:
        return 0
    return 256 * sum(1 for n in names if re.fullmatch(r"[0-9a-f]{38}", n))


def strategy_of(config: gitcmd.Config) -> str:
    value = (config.get("packorder.strategy") or DEFAULT_STRATEGY).strip().lower()
    if value not in STRATEGIES:
        raise RepositoryError(f"packorder.strategy is '{value}': it is one of {', '.join(STRATEGIES)}")
    return value


def split_factor(config: gitcmd.Config) -> int:
    factor = config.get_int("maintenance.geometric-repack.splitFactor", DEFAULT_SPLIT_FACTOR)
    if factor < 1:
        raise RepositoryError(f"maintenance.geometric-repack.splitFactor is {factor}: it is 1 or more")
    return factor


def listed_geometry(git_dir: Path, factor: int) -> geometry_mod.Geometry:
    """The geometric rule over the packs as listed (counts from their indexes' fan-out)."""
    pack_dir = git_dir / "objects" / "pack"
    found = [
        geometry_mod.Candidate(
            p,
            idx_format.object_count(str(p.with_suffix(".idx"))),
            keep=p.with_suffix(".keep").exists(),
            cruft=p.with_suffix(".mtimes").exists(),
            promisor=p.with_suffix(".promisor").exists(),
        )
        for p in list_packs(pack_dir)
    ]
    return geometry_mod.plan(found, factor)


def auto_check(git_dir: Path, config: gitcmd.Config, order: str, strategy: str = DEFAULT_STRATEGY) -> AutoCheck:
    """Whether `--auto` runs: Git's need_to_gc() (full strategy) or the condition of Git's
    geometric maintenance task (packs to roll up, or loose objects past its threshold),
    plus the drift of the layout; and whether what runs is an all-into-one repack (for the
    full strategy, always)."""
    objects_dir = git_dir / "objects"
    packs = [p for p in list_packs(objects_dir / "pack") if not p.with_suffix(".keep").exists()]
    loose = loose_estimate(objects_dir)
    key = "maintenance.geometric-repack.auto" if strategy == "geometric" else "gc.auto"
    default = DEFAULT_GEOMETRIC_AUTO if strategy == "geometric" else DEFAULT_AUTO
    threshold = config.get_int("packorder.auto", config.get_int(key, default))
    check = AutoCheck(False, [], loose, len(packs), None, strategy, full=strategy == "full")
    reasons = check.reasons
    if strategy == "geometric":
        geometry = listed_geometry(git_dir, split_factor(config))
        check.roll_up = geometry.split
        if geometry.collapsed and len(geometry.packs) > 1:
            reasons.append(f"no geometric progression left: {len(geometry.packs)} packs into one")
            check.full = True
        elif geometry.split:
            reasons.append(f"{geometry.split} packs roll up (geometric factor {geometry.factor})")
        if threshold < 0:
            reasons.append(f"{key} is negative: always")
    else:
        pack_limit = config.get_int(
            "packorder.autoPackLimit", config.get_int("gc.autoPackLimit", DEFAULT_AUTO_PACK_LIMIT)
        )
        if 0 < pack_limit < len(packs):
            reasons.append(f"{len(packs)} packs (gc.autoPackLimit {pack_limit})")
    # Git compares the count in objects/17 with ceil(threshold / 256).
    if threshold > 0 and loose // 256 > math.ceil(threshold / 256):
        reasons.append(f"about {loose} loose objects ({key} {threshold})")
    check.drift = drift_mod.measure(git_dir, order, object_formats.named(config.object_format))
    limit = _float_setting(config, "packorder.autoDrift", DEFAULT_AUTO_DRIFT[strategy])
    if limit > 0 and check.drift.share > limit:
        reasons.append(f"layout drift {check.drift.share:.1%} (packorder.autoDrift {limit:.1%})")
        check.full = True
    # 0 turns --auto off, as gc.auto=0 and maintenance.geometric-repack.auto=0 do (and a
    # negative gc.auto: Git's need_to_gc).
    off = threshold == 0 or (threshold < 0 and strategy == "full")
    check.needed = bool(reasons) and not off
    return check


def _float_setting(config: gitcmd.Config, key: str, default: float) -> float:
    value = config.get(key)
    if value is None:
        return default
    try:
        return float(value.strip().rstrip("%")) / (100 if value.strip().endswith("%") else 1)
    except ValueError:
        raise RepositoryError(f"bad numeric config value '{value}' for '{key}'") from None


def nothing_to_do(repo_path: str | None) -> bool:
    """Whether `packorder gc --auto` on `repo_path` would do nothing: the check alone, for
    the command line to answer without loading the rest (a server runs it after every
    push). False when in doubt (any error): the whole command then runs, and reports it."""
    try:
        git_dir = gitcmd.find_git_dir(repo_path)
        config = gitcmd.read_config(git_dir)
        return not auto_check(git_dir, config, configured_order(config, None), strategy_of(config)).needed
    except Exception:
        return False
