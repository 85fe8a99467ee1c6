"""`packorder.fleet.report`: what a fleet run (or several appended to one results file)
did, from the last record of each repository: how many were repacked, failed, skipped; their
bytes before and after; the hours spent; the predicted share of index-pack seeks under 2 MiB
before and after, averaged over the repositories repacked that have one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packorder.errors import PackError
from packorder.fleet import run_record as results_mod


@dataclass
class FleetReport:
    results: Path
    repositories: int
    done: int
    failed: int
    skipped: int
    bytes_before: int  # of the repositories repacked
    bytes_after: int
    hours: float  # measured, repacked and failed alike
    share_before: float | None  # mean predicted share over repacked repositories with one
    share_after: float | None
    errors: dict[str, str] = field(default_factory=dict)  # path -> why it failed


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def report(results: str | os.PathLike[str]) -> FleetReport:
    path = Path(results)
    if not path.exists():
        raise PackError(f"{path}: no such file")
    last = results_mod.latest(results_mod.read(path))
    done = [r for r in last.values() if r["status"] == results_mod.DONE]
    failed = {p: r.get("error") or "" for p, r in last.items() if r["status"] == results_mod.FAILED}
    predicted = [r for r in done if r.get("share_before") is not None and r.get("share_after") is not None]
    return FleetReport(
        results=path,
        repositories=len(last),
        done=len(done),
        failed=len(failed),
        skipped=sum(r["status"] == results_mod.SKIPPED for r in last.values()),
        bytes_before=sum(r.get("bytes_before") or 0 for r in done),
        bytes_after=sum(r.get("bytes_after") or 0 for r in done),
        hours=sum(r.get("seconds") or 0.0 for r in last.values()) / 3600,
        share_before=_mean([r["share_before"] for r in predicted]),
        share_after=_mean([r["share_after"] for r in predicted]),
        errors=failed,
    )


def plot(results: str | os.PathLike[str], out: Path) -> None:
    """A PNG: each repacked repository's bytes before against after (log axes), and the
    predicted shares before and after."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PackError("plots need matplotlib (pip install 'packorder[plot]')") from None
    done = [r for r in results_mod.latest(results_mod.read(Path(results))).values() if r["status"] == "done"]
    sized = [r for r in done if r.get("bytes_before") and r.get("bytes_after")]
    if not sized:
        raise PackError("nothing to plot: no repository was repacked")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=100)
    try:
        _bytes(left, sized)
        _shares(right, done)
        fig.tight_layout()
        fig.savefig(out)
    finally:
        plt.close(fig)


def _bytes(ax: Any, done: list[dict[str, Any]]) -> None:
    before = [r["bytes_before"] for r in done]
    after = [r["bytes_after"] for r in done]
    ax.scatter(before, after, s=12)
    top = max(before + after)
    ax.plot([1, top], [1, top], color="grey", linewidth=0.8, label="unchanged")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bytes before")
    ax.set_ylabel("bytes after")
    ax.set_title(f"{len(done)} repositories repacked")
    ax.legend()


def _shares(ax: Any, done: list[dict[str, Any]]) -> None:
    pairs = [(r["share_before"], r["share_after"]) for r in done if r.get("share_before") is not None]
    pairs = [(b, a) for b, a in pairs if a is not None]
    if pairs:
        ax.hist([100 * b for b, _ in pairs], bins=20, alpha=0.6, label="before")
        ax.hist([100 * a for _, a in pairs], bins=20, alpha=0.6, label="after")
        ax.legend()
    ax.set_xlabel("predicted index-pack seeks under 2 MiB (%)")
    ax.set_ylabel("repositories")
    ax.set_title(f"predicted locality ({len(pairs)} with a prediction)")
