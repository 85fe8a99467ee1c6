"""What a repack of a repository will cost, from what triage reads in its packs' headers: the
estimate triage prints, the fleet's budget spends, and the memory limit of the repack's
process is taken from.

A repack is a process start (Python, numpy and the core loaded) plus the walk, which reads
every commit and tree (a cost per object and per byte of tree: git/git's 168,000 trees hold
2.4 GB, libgit2's 73,500 hold 134 MB), plus a cost per byte stored (copy, CRC,
verification). Memory: the start, the object table (per object), the pack's buffers (per
byte stored), and with a bitmap the walk's graph of commits and trees. The coefficients
are a least-squares fit (relative error) to repacks run as a fleet task runs them, a child
process each (scripts/calibrate_cost.py, on this project's 2-core machine; docs/fleet.md,
"The cost model"): 12 small generated repositories, packorder's sample, libgit2, redis and git/git
(snapshots and complete clones), twice each. Estimated over measured: time 0.85-1.46 (the
small ones over), peak memory 0.83-1.07.
"""

from __future__ import annotations

from dataclasses import dataclass

START_SECONDS = 0.3
SECONDS_PER_COMMIT_OR_TREE = 4.3e-6
SECONDS_PER_TREE_BYTE = 1.05e-9
SECONDS_PER_BYTE = 5e-9

START_BYTES = 40 << 20
BYTES_PER_OBJECT = 550
BYTES_PER_PACK_BYTE = 0.11
BITMAP_BYTES_PER_COMMIT_OR_TREE = 440

# The memory limit is an address-space limit (RLIMIT_AS): thread stacks, the allocator's
# arenas and the mapped core reserve far more than they touch, so the limit is a multiple
# of the estimated resident peak, never below a floor at which a repack of an empty
# repository still starts.
ADDRESS_SPACE_FACTOR = 4
ADDRESS_SPACE_FLOOR = 2 << 30


@dataclass
class Cost:
    seconds: float
    peak_bytes: int


@dataclass
class Contents:
    """What a repack will read, as triage counts it."""

    objects: int
    stored_bytes: int  # packs and loose objects, as stored
    commits_and_trees: int = 0
    tree_bytes: int = 0  # the trees' sizes inflated (a delta's taken as its chain root's)
    bitmap: bool = False  # the repack writes a reachability bitmap


def estimate(c: Contents) -> Cost:
    seconds = (
        START_SECONDS
        + SECONDS_PER_COMMIT_OR_TREE * c.commits_and_trees
        + SECONDS_PER_TREE_BYTE * c.tree_bytes
        + SECONDS_PER_BYTE * c.stored_bytes
    )
    peak = START_BYTES + BYTES_PER_OBJECT * c.objects + BYTES_PER_PACK_BYTE * c.stored_bytes
    if c.bitmap:
        peak += BITMAP_BYTES_PER_COMMIT_OR_TREE * c.commits_and_trees
    return Cost(seconds, int(peak))


def address_space_limit(cost: Cost) -> int:
    return max(ADDRESS_SPACE_FLOOR, ADDRESS_SPACE_FACTOR * cost.peak_bytes)
