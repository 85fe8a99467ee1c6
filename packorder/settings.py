"""Settings several commands share, read from Git's configuration (the verification levels
of a repack, threads, compression, the delta base cache), and the machine facts they are
weighed against. Light (standard library only), so that the command line can offer them
before numpy loads, and index-pack reads them without paying for more."""

from __future__ import annotations

import os
import resource
from typing import NamedTuple

from packorder.gitcmd import Config, parse_bool


class VerifyLevel(NamedTuple):
    # A named tuple, not a dataclass: `dataclasses` loads `inspect`, 1.3 MiB of index-pack's peak.
    function: str  # the function of repacking/writer.py that proves a new pack at this level
    proves: str  # what it proves, for the help


# Every verification level of a repack, one entry each (docs/repack.md has what each costs).
VERIFY_MODES = {
    "produced": VerifyLevel(
        "verify_produced", "copies by their CRC and the plan, every entry packorder produced by its hash"
    ),
    "full": VerifyLevel("verify_full", "the whole pack re-indexed: every object inflated, resolved and hashed"),
    "crc": VerifyLevel("verify_crc", "headers, CRCs and the trailer only, as Git checks its own repack"),
}
DEFAULT_VERIFY = "produced"
# The forms of multi-pack-index a repack writes (--write-midx): one file, or a chain of layers.
MIDX_MODES = ("plain", "incremental")
# core.deltaBaseCacheLimit's default: the delta bases Git keeps in memory, per thread.
DEFAULT_DELTA_BASE_CACHE_LIMIT = 96 << 20


class Limits(NamedTuple):
    """What one native job may use. The core reads it by name (native/src/python/limits.rs):
    three integers passed apart were taken in each job's own order."""

    threads: int
    budget: int  # bytes of inflated objects kept for reuse (a job that keeps none ignores it)
    object_limit: int  # the most bytes one object may declare: larger is corrupt, not allocated


def compression_level(config: Config) -> int:
    """`pack.compression`, else `core.compression`, else zlib's default 6 (Git's rule)."""
    level = config.get_int("pack.compression", config.get_int("core.compression", -1))
    return 6 if level < 0 else min(level, 9)


def thread_count(config: Config, threads: int | None, *keys: str) -> int:
    """Threads asked for, else the first of `keys` set (0 there means "all"), else every core."""
    if threads:
        return threads
    for key in keys:
        configured = config.get_int(key, 0)
        if configured:
            return configured
    return os.cpu_count() or 1


def write_bitmap(config: Config, given: bool | None, bare: bool, promisor: bool, kept: bool) -> bool:
    """Whether a repack writes a reachability bitmap: -b/-B if `given`, else
    `repack.writeBitmaps`, else Git's default: in a bare repository with neither promisor
    nor .keep packs."""
    if given is not None:
        return given
    configured = config.get("repack.writeBitmaps")
    if configured is not None:
        return parse_bool(configured)
    return bare and not promisor and not kept


def delta_base_cache_limit(config: Config) -> int:
    return config.get_int("core.deltaBaseCacheLimit", DEFAULT_DELTA_BASE_CACHE_LIMIT)


# Machine facts.


def physical_memory() -> int:
    """The machine's memory in bytes (a bound on what one object may take), or 2**62 unknown."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 1 << 62


def peak_rss() -> int:
    """This process's peak resident memory so far, in bytes.

    From VmHWM where Linux has it: `ru_maxrss` survives exec, so a repack started by a large
    process (a fleet's worker, after triaging a big repository) would report its parent's
    resident size at the fork (its peak ever, after a vfork) instead of its own."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
