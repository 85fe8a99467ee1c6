"""What a repack of a repository will cost, from its object count and bytes alone: the
estimate triage prints, the fleet's budget spends, and the memory limit of the repack's
process is taken from.

A repack is a process start (Python, numpy and the core loaded, Git's walk started) plus a
cost per object (walk, enumeration, order, index) plus a cost per byte (copy, CRC,
verification); memory likewise. The coefficients are fitted by hand to repacks measured by
scripts/bench_fleet.py on this project's 2-core machine (docs/fleet.md): 400 of small
generated repositories (0.7 s and 49-53 MiB, mostly the process), packorder's sample
(72,391 objects, 34 MiB: 1.6 s, 108 MiB), libgit2 (161,981, 80 MiB: 1.3-1.8 s, 136 MiB) and
redis (201,267, 368 MiB: 4.9-5.0 s, 130-198 MiB). A least-squares fit on the small ones
alone is meaningless: their time is the process start and noise.
"""

from __future__ import annotations

from dataclasses import dataclass

START_SECONDS = 0.7
SECONDS_PER_OBJECT = 8e-6
SECONDS_PER_BYTE = 6e-9

START_BYTES = 50 << 20
BYTES_PER_OBJECT = 500
BYTES_PER_PACK_BYTE = 0.25

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


def estimate(objects: int, stored_bytes: int) -> Cost:
    seconds = START_SECONDS + SECONDS_PER_OBJECT * objects + SECONDS_PER_BYTE * stored_bytes
    peak = START_BYTES + BYTES_PER_OBJECT * objects + BYTES_PER_PACK_BYTE * stored_bytes
    return Cost(seconds, int(peak))


def address_space_limit(cost: Cost) -> int:
    return max(ADDRESS_SPACE_FLOOR, ADDRESS_SPACE_FACTOR * cost.peak_bytes)
