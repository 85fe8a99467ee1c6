"""The cumulative distribution of seek distances, one line per repository (matplotlib, an
optional dependency: `pip install 'packorder[plot]'`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from packorder.errors import PackError
from packorder.seek.analyze import size_label
from packorder.seek.seek_result import SeekResult


def plot_cdf(results: Sequence[SeekResult], view: str, path: Path) -> None:
    """Write a PNG of the share of seeks at most d bytes long against d (log axis)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PackError("plots need matplotlib (pip install 'packorder[plot]')") from None
    shown = [(r, r.view(view)) for r in results]
    shown = [(r, v) for r, v in shown if v is not None and v.cdf]
    if not shown:
        raise PackError(f"nothing to plot: no seeks in the {view} view")
    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    try:
        for result, stats in shown:
            xs = [d for d, _ in stats.cdf]
            ys = [100 * share for _, share in stats.cdf]
            ax.plot(xs, ys, label=f"{result.label} ({stats.accesses:,} accesses)")
        threshold = shown[0][1].threshold
        ax.axvline(threshold, color="grey", linestyle="--", linewidth=1)
        ax.text(threshold, 96, f" {size_label(threshold)}", color="grey", va="top")
        # Symmetric log: a log axis from 1 byte up, and a seek of 0 bytes still shown.
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlim(left=0)
        ax.set_ylim(0, 100)
        ax.set_xlabel("seek distance (bytes, log scale)")
        ax.set_ylabel("seeks at most this long (%)")
        ax.set_title(f"{shown[0][0].workload.describe()} ({view})")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="upper left")
        fig.tight_layout()
        fig.savefig(path, format="png")
    except OSError as e:
        raise PackError(f"cannot write {path}: {e.strerror}") from None
    finally:
        plt.close(fig)
