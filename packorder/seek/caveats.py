"""When a measurement cannot show what it is read for. A seek inside a pack smaller than the
threshold is under it in any order, so every share is 100% and two orders look alike; a
wall time from a single run of a few milliseconds is mostly the process starting, so a
ratio of two such times is noise. Pure functions from the measured figures to warnings."""

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
