"""Side-by-side tables in the study's layout for columns that are not all plain measurements:
simulated orders beside a measured repository (`seekstats --simulate-order`), or the orders of
an experiment with median wall times. `report.table` renders measured `SeekResult`s; this
renders any `Column`, with the rows it carries beyond the statistics."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field

from packorder.jsonable import csv_cell
from packorder.seek.analyze import size_label
from packorder.seek.seek_result import SeekResult, ViewStats
from packorder.seek.stats import PERCENTILES


@dataclass
class Column:
    label: str
    stats: ViewStats | None
    extra: dict[str, str] = field(default_factory=dict)  # row name -> cell (wall times, pack size)


def count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def share(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def seconds(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f} s"


def stat_rows(stats: Sequence[ViewStats | None]) -> list[tuple[str, list[str]]]:
    """The study's rows: access count, percentiles, share under the threshold, near-read share."""
    rows = [("Total number of access", [count(s.accesses if s else None) for s in stats])]
    for p in PERCENTILES:
        key = f"{p:g}"
        cells = [count(s.percentiles[key] if s and s.percentiles else None) for s in stats]
        rows.append((f"{p:.1f}% percentile", cells))
    first = next(s for s in stats if s is not None)
    below = [share(s.below_threshold if s else None) for s in stats]
    rows.append((f"Less than {size_label(first.threshold)} seek", below))
    rows.append((f"Within {size_label(first.near)} of data read", [share(s.near_read if s else None) for s in stats]))
    return rows


def table(heading: str, description: str, columns: Sequence[Column]) -> str:
    """One workload and view: a column per repository, order or simulation."""
    rows = stat_rows([c.stats for c in columns])
    extra_names: list[str] = []
    for c in columns:
        extra_names += [name for name in c.extra if name not in extra_names]
    rows += [(name, [c.extra.get(name, "-") for c in columns]) for name in extra_names]
    headers = [c.label for c in columns]
    label_width = max(len(name) for name, _ in rows)
    widths = [max(len(h), *(len(cells[i]) for _, cells in rows)) for i, h in enumerate(headers)]
    lines = [f"$ {heading}", description]
    lines.append(" " * (label_width + 2) + "  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)))
    for name, cells in rows:
        body = "  ".join(cell.rjust(w) for cell, w in zip(cells, widths, strict=True))
        lines.append(f"{name.ljust(label_width)} : {body}".rstrip())
    return "\n".join(lines)


def measured_column(result: SeekResult, view: str) -> Column:
    extra = {"Wall time, traced": seconds(result.seconds)}
    if result.cold_seconds is not None:
        extra["Wall time, cold"] = seconds(result.cold_seconds)
        extra["Wall time, warm"] = seconds(result.warm_seconds)
    extra["Pack size"] = count(result.pack_bytes)
    return Column(result.label, result.view(view), extra)


CSV_FIELDS = (
    ["label", "kind", "workload", "command", "view", "accesses", "seeks"]
    + [f"p{p:g}" for p in PERCENTILES]
    + ["threshold", "below_threshold", "near", "near_read", "pack_bytes"]
)


def csv_row(label: str, kind: str, workload: str, command: str, v: ViewStats, pack_bytes: int) -> list[object]:
    pct = v.percentiles or {}
    return (
        [label, kind, workload, command, v.view, v.accesses, v.seeks]
        + [pct.get(f"{p:g}", "") for p in PERCENTILES]
        + [v.threshold, v.below_threshold, v.near, v.near_read, pack_bytes]
    )


def csv_text(rows: Sequence[Sequence[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    writer.writerows([csv_cell(c) for c in row] for row in rows)
    return out.getvalue()
