"""Which triaged repositories a fleet run repacks, and how they are grouped into tasks.

Repositories are taken in order of expected benefit. `min_gain` (points of predicted share)
and `max_hours` (one repack's estimated time) leave some out; `budget_hours` bounds the
estimated time of all those taken: one that does not fit in what is left is skipped, and a
smaller one after it may still fit. A repository triage could not read is
not repacked: it is recorded as failed with triage's error.

Small repositories go several to a task: a task costs the scheduler a few milliseconds,
nothing next to a large repack but not nothing next to a small one (docs/fleet.md).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from packorder.fleet.triage import Triage

DEFAULT_BATCH_SECONDS = 5.0
# Batches are kept small enough for this many tasks a worker, so that the last ones to finish
# do not leave the other workers idle.
TASKS_PER_WORKER = 4


@dataclass
class Selection:
    chosen: list[Triage] = field(default_factory=list)  # in order of expected benefit
    skipped: list[tuple[Triage, str]] = field(default_factory=list)  # with the reason
    broken: list[Triage] = field(default_factory=list)  # triage failed: recorded as failed
    resumed: int = 0  # finished by an earlier run (`--resume`)


def choose(
    triages: Sequence[Triage],
    min_gain: float | None = None,
    max_hours: float | None = None,
    budget_hours: float | None = None,
    finished: Collection[str] = (),
) -> Selection:
    out = Selection()
    spent = 0.0
    for t in triages:
        if str(t.path) in finished:
            out.resumed += 1
        elif t.error is not None:
            out.broken.append(t)
        elif min_gain is not None and t.gain < min_gain:
            out.skipped.append((t, f"predicted gain {t.gain:+.1f} points is below --min-gain {min_gain:g}"))
        elif max_hours is not None and t.estimated_seconds > max_hours * 3600:
            out.skipped.append((t, f"estimated {t.estimated_seconds / 3600:.2f} h is over --max-hours {max_hours:g}"))
        elif budget_hours is not None and spent + t.estimated_seconds > budget_hours * 3600:
            left = max(0.0, budget_hours - spent / 3600)
            out.skipped.append(
                (t, f"does not fit in what is left of the --budget of {budget_hours:g} h ({left:.2f} h)")
            )
        else:
            spent += t.estimated_seconds
            out.chosen.append(t)
    return out


def batches(
    chosen: Sequence[Triage], batch_seconds: float = DEFAULT_BATCH_SECONDS, workers: int = 1
) -> list[list[Triage]]:
    """Consecutive repositories grouped so that a task's estimated time stays within
    `batch_seconds`, and within the fleet's estimated time over TASKS_PER_WORKER tasks a
    worker (one repository over that is a task of its own; 0 makes one a task)."""
    total = sum(t.estimated_seconds for t in chosen)
    batch_seconds = min(batch_seconds, total / (TASKS_PER_WORKER * max(1, workers)))
    out: list[list[Triage]] = []
    current: list[Triage] = []
    seconds = 0.0
    for t in chosen:
        if current and seconds + t.estimated_seconds > batch_seconds:
            out.append(current)
            current, seconds = [], 0.0
        current.append(t)
        seconds += t.estimated_seconds
    if current:
        out.append(current)
    return out
