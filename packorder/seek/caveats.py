"""When a measurement cannot show what it is read for. A seek inside a pack smaller than the
threshold is under it in any order, so every share is 100% and two orders look alike; a
wall time from a single run of a few milliseconds is mostly the process starting, so a
ratio of two such times is noise; a workload that serves with a reachability bitmap, run where
there is none, does the walk a bitmap would spare, and re-laid on another order it keeps an order of requests
that followed the measured pack. Pure functions from the measured figures to warnings."""

from __future__ import annotations

from collections.abc import Sequence

from packorder.units import human_size

SHORT_RUN = 0.05  # seconds: a single run shorter than this is not timed, only started


def small_pack(largest_pack: int, threshold: int) -> str | None:
    """A warning when every pack read is smaller than `threshold` bytes."""
    if largest_pack >= threshold:
        return None
    return (
        f"the largest pack read is {human_size(largest_pack)}, below the {human_size(threshold)} threshold: "
        "every seek is under it, in any order (a sample repository from `packorder sample` is large enough)"
    )


def single_short_run(what: str, seconds: Sequence[float]) -> str | None:
    """A warning when the time of `what` is one run shorter than SHORT_RUN."""
    if len(seconds) != 1 or seconds[0] >= SHORT_RUN:
        return None
    return f"{what}: a single run of {seconds[0] * 1000:.0f} ms: a ratio of such times is noise (take more runs)"


def no_bitmap(workload: str, has_bitmap: bool) -> str | None:
    """A warning when a workload meant to use a reachability bitmap finds none."""
    if has_bitmap:
        return None
    return (
        f"{workload}: the repository has no reachability bitmap, so pack-objects walks history as pack-recent "
        "does (a repack that writes one, as packorder's does in a bare repository, reads far less)"
    )


def relaid_bitmap_order(workload: str) -> str:
    """The simulator's caveat for a workload that serves with a bitmap."""
    return (
        f"{workload}: pack-objects takes the objects it does not copy verbatim in the pack's own order (the "
        "bitmap's); re-laid, they keep the measured pack's order, so the simulated shares are rough "
        "(docs/locality.md, 'Workloads users run')"
    )
