"""The options of a repack, from the command line or the library and the repository's
configuration (Git's settings where Git has one)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from packorder import gitcmd
from packorder import order as order_mod
from packorder import writer as writer_mod
from packorder.errors import UsageError
from packorder.repo import Repository

ORDER_FUNCS = order_mod.ORDERS
DEFAULT_PRUNE_GRACE = 14 * 24 * 3600


@dataclass
class RepackOptions:
    order: str
    no_reuse_delta: bool
    window: int
    depth: int
    threads: int
    ref_delta: bool
    level: int
    write_bitmap: bool
    verify: str
    prune_grace: int
    repick_backward: bool = False


def check_choices(order: str, verify: str) -> None:
    if order not in ORDER_FUNCS:
        raise UsageError(f"unknown order '{order}' (choose from {', '.join(ORDER_FUNCS)})")
    if verify not in writer_mod.VERIFY_MODES:
        raise UsageError(f"unknown verification '{verify}' (choose from {', '.join(writer_mod.VERIFY_MODES)})")


def read_options(
    repo: Repository,
    order: str,
    no_reuse_delta: bool,
    window: int | None,
    depth: int | None,
    threads: int | None,
    ref_delta: bool,
    write_bitmap: bool | None,
    verify: str,
) -> RepackOptions:
    check_choices(order, verify)
    cfg = repo.config
    window = cfg.get_int("pack.window", 10) if window is None else window
    depth = cfg.get_int("pack.depth", 50) if depth is None else depth
    if window < 0 or depth < 0:
        raise UsageError("--window and --depth take non-negative numbers")
    if depth > 4095:
        depth = 4095  # Git's limit
    threads = threads or cfg.get_int("pack.threads", 0) or os.cpu_count() or 1
    level = cfg.get_int("pack.compression", cfg.get_int("core.compression", -1))
    level = 6 if level < 0 else min(level, 9)
    if not ref_delta and not cfg.get_bool("repack.useDeltaBaseOffset", True):
        ref_delta = True
    if write_bitmap is None:
        configured = cfg.get("repack.writeBitmaps")
        if configured is not None:
            write_bitmap = gitcmd.parse_bool(configured)
        else:
            write_bitmap = repo.bare and not repo.has_promisor_packs and not any(p.keep for p in repo.packs)
    expire = cfg.get("gc.pruneExpire")
    grace = DEFAULT_PRUNE_GRACE
    if expire is not None:
        if expire.strip() == "now":
            grace = 0
        elif expire.strip() == "never":
            grace = -1
        elif expire.strip().isdigit():
            grace = int(expire)
    return RepackOptions(order, no_reuse_delta, window, depth, threads, ref_delta, level, write_bitmap, verify, grace)
