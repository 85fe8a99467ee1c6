"""Rendering results: the study's table layout (one column per repository), and CSV.

The study printed, per workload, "Total number of access", the 0.0% .. 99.9% percentile rows of
seek distance, and "Less than 2MiB seek". We add the near-read share and the wall times, and
head each table with the workload and the view it shows.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from packorder.jsonable import csv_cell
from packorder.seek.analyze import size_label
from packorder.seek.seek_result import SeekResult, ViewStats
from packorder.seek.stats import PERCENTILES


def _count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _share(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _seconds(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f} s"


def _rows(view: str, results: Sequence[SeekResult]) -> list[tuple[str, list[str]]]:
    stats: list[ViewStats | None] = [r.view(view) for r in results]
    rows: list[tuple[str, list[str]]] = [("Total number of access", [_count(s.accesses if s else None) for s in stats])]
    for p in PERCENTILES:
        key = f"{p:g}"
        rows.append(
            (
                f"{p:.1f}% percentile",
                [_count(s.percentiles[key] if s and s.percentiles else None) for s in stats],
            )
        )
    first = next(s for s in stats if s is not None)
    below = [_share(s.below_threshold if s else None) for s in stats]
    rows.append((f"Less than {size_label(first.threshold)} seek", below))
    rows.append((f"Within {size_label(first.near)} of data read", [_share(s.near_read if s else None) for s in stats]))
    return rows


def table(results: Sequence[SeekResult], view: str) -> str:
    """One workload, one view, a column per repository."""
    shown = [r for r in results if r.view(view) is not None]
    first = shown[0].view(view)
    assert first is not None
    rows = _rows(view, shown)
    rows.append(("Wall time, traced", [_seconds(r.seconds) for r in shown]))
    if any(r.cold_seconds is not None for r in shown):
        rows.append(("Wall time, cold", [_seconds(r.cold_seconds) for r in shown]))
        rows.append(("Wall time, warm", [_seconds(r.warm_seconds) for r in shown]))
    headers = [r.label for r in shown]
    label_width = max(len(name) for name, _ in rows)
    widths = [max(len(h), *(len(cells[i]) for _, cells in rows)) for i, h in enumerate(headers)]
    lines = [f"$ {shown[0].workload.describe()}", first.description]
    lines.append(" " * (label_width + 2) + "  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)))
    for name, cells in rows:
        body = "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))
        lines.append(f"{name.ljust(label_width)} : {body}".rstrip())
    return "\n".join(lines)


def tables(results: Sequence[SeekResult]) -> str:
    """A table per view present, in the order raw, expanded."""
    views = []
    for r in results:
        for v in r.views:
            if v.view not in views:
                views.append(v.view)
    parts = [table(results, v) for v in views]
    notes = [f"{r.label}: {r.repository} ({len(r.packs)} pack(s), {r.pack_bytes:,} bytes)" for r in results]
    notes += [
        f"{r.label}: no pack, so nothing to measure (its objects are loose); pack it first, "
        "e.g. `packorder repack` or `git repack -ad`"
        for r in results
        if not r.packs
    ]
    return "\n\n".join(parts) + "\n\n" + "\n".join(notes) + "\n"


CSV_FIELDS = (
    ["repository", "label", "workload", "command", "view", "accesses", "seeks"]
    + [f"p{p:g}" for p in PERCENTILES]
    + ["threshold", "below_threshold", "near", "near_read", "seconds", "cold_seconds", "warm_seconds"]
)


def csv_text(results: Sequence[SeekResult]) -> str:
    """One row per repository and view."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for r in results:
        for v in r.views:
            pct = v.percentiles or {}
            row = (
                [str(r.repository), r.label, r.workload.name, r.workload.describe(), v.view, v.accesses, v.seeks]
                + [pct.get(f"{p:g}", "") for p in PERCENTILES]
                + [v.threshold, v.below_threshold, v.near, v.near_read, r.seconds, r.cold_seconds, r.warm_seconds]
            )
            writer.writerow([csv_cell(c) for c in row])
    return out.getvalue()
