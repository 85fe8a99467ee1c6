"""The experiment's report: DIR/report.md (summary, pack sizes, wall times, the simulator's
check, candidates, and the study's tables per workload), a plot per workload, and
DIR/experiment.json with everything measured."""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path
from typing import Any

from packorder.errors import PackError
from packorder.experiments.experiment_result import ExperimentResult
from packorder.jsonable import to_jsonable
from packorder.seek import columns
from packorder.seek.analyze import size_label
from packorder.seek.api import label_of


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _both(result: Any) -> str:
    """'raw / expanded' shares under the threshold (one value when the trace has one view)."""
    cells = [_pct(v.below_threshold) for v in result.views]
    return " / ".join(cells)


def _workload_title(spec: Any) -> str:
    return f"`{spec.describe()}`"


def summary(result: ExperimentResult) -> list[str]:
    names = [r.order for r in result.orders]
    lines = ["| workload | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for spec in result.workloads:
        cells = [_both(next(x for x in run.results if x.workload.name == spec.name)) for run in result.orders]
        lines.append(f"| {_workload_title(spec)} | " + " | ".join(cells) + " |")
    return lines


def pack_sizes(result: ExperimentResult) -> list[str]:
    first = result.orders[0]
    lines = [
        f"| order | pack bytes | vs {first.order} | packs | objects | deltas | repack time |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in result.orders:
        ratio = f"{100 * (run.pack_bytes / first.pack_bytes - 1):+.3f}%" if first.pack_bytes else "-"
        repacked = "-" if run.order == "as-is" else f"{run.repack_seconds:.1f} s"
        lines.append(
            f"| {run.order} | {run.pack_bytes:,} | {ratio} | {run.packs} | {run.objects:,} | "
            f"{run.deltas:,} | {repacked} |"
        )
    return lines


def wall_times(result: ExperimentResult) -> list[str]:
    names = [r.order for r in result.orders]
    first = names[0]
    lines = [
        "| workload | " + " | ".join(f"{n} cold / warm" for n in names) + f" | cold vs {first} |",
        "|---" * (len(names) + 2) + "|",
    ]
    for spec in result.workloads:
        cells = []
        ratios = []
        base = None
        for run in result.orders:
            got = next(x for x in run.results if x.workload.name == spec.name)
            cells.append(f"{columns.seconds(got.cold_seconds)} / {columns.seconds(got.warm_seconds)}")
            if base is None:
                base = got.cold_seconds
            elif base and got.cold_seconds is not None:
                ratios.append(f"{run.order} {got.cold_seconds / base:.2f}×")
        lines.append(f"| {_workload_title(spec)} | " + " | ".join(cells) + f" | {', '.join(ratios) or '-'} |")
    return lines


def agreement(result: ExperimentResult) -> list[str]:
    lines = [
        "| workload | view | order | measured | simulated | difference |",
        "|---|---|---|---|---|---|",
    ]
    for a in result.agreement:
        lines.append(
            f"| {a.workload} | {a.view} | {a.order} | {_pct(a.measured)} | {_pct(a.simulated)} | "
            f"{100 * a.difference:+.2f} points |"
        )
    worst = max((abs(a.difference) for a in result.agreement), default=0.0)
    lines += ["", f"Largest difference: {100 * worst:.2f} points."]
    return lines


def candidates(result: ExperimentResult) -> list[str]:
    from packorder.orders.functions import ORDERS

    orders = list(dict.fromkeys(s.order for s in result.simulated))
    lines = ["| order | " + " | ".join(_workload_title(w) for w in result.workloads) + " | what it writes |"]
    lines.append("|---" * (len(result.workloads) + 2) + "|")
    for order in orders:
        cells = []
        for spec in result.workloads:
            sim = next(s for s in result.simulated if s.order == order and s.workload.name == spec.name)
            cells.append(_both(sim))
        lines.append(f"| {order} | " + " | ".join(cells) + f" | {ORDERS[order].summary} |")
    return lines


def plots(result: ExperimentResult) -> tuple[list[Path], str | None]:
    """A PNG per workload (the cumulative distribution, a line per order); why none, if so."""
    if importlib.util.find_spec("matplotlib") is None:
        return [], "plots skipped: matplotlib is not installed (pip install 'packorder[plot]')"
    from packorder.seek.plot import plot_cdf

    made = []
    for spec in result.workloads:
        shown = [next(x for x in run.results if x.workload.name == spec.name) for run in result.orders]
        view = "expanded" if shown[0].view("expanded") is not None else "raw"
        path = result.output_dir / f"{spec.name}.png"
        try:
            plot_cdf(shown, view, path)
        except PackError as e:
            return made, f"plot of {spec.name} skipped: {e}"
        made.append(path)
    return made, None


def tables(result: ExperimentResult, plotted: list[Path]) -> list[str]:
    lines = []
    for spec in result.workloads:
        shown = [next(x for x in run.results if x.workload.name == spec.name) for run in result.orders]
        lines += ["", f"### {_workload_title(spec)}", ""]
        png = result.output_dir / f"{spec.name}.png"
        if png in plotted:
            lines += [f"![{spec.describe()}]({png.name})", ""]
        for view in [v.view for v in shown[0].views]:
            cols = [columns.measured_column(r, view) for r in shown]
            for col, run in zip(cols, result.orders, strict=True):
                col.extra.pop("Pack size", None)
                col.extra["Pack size"] = columns.count(run.pack_bytes)
            first = next(c.stats for c in cols if c.stats is not None)
            assert first is not None
            lines += ["```", columns.table(spec.describe(), first.description, cols), "```", ""]
    return lines


def write_report(result: ExperimentResult, command: str | None = None) -> None:
    made, plot_note = plots(result)
    result.plots = made
    as_found = result.orders[0]
    load = ", ".join(f"{x:.2f}" for x in result.load_before)
    load_after = ", ".join(f"{x:.2f}" for x in result.load_after)
    lines = [f"# Locality experiment: {label_of(result.repository)}", ""]
    if command:
        lines += [f"    {command}", ""]
    lines += [
        f"- Repository: `{result.repository}`, {as_found.objects:,} objects.",
        f"- Orders: {', '.join(r.order for r in result.orders)}. Each is a copy of the git directory, "
        'repacked with `packorder.repack(copy, order=ORDER, window=0, verify="crc", write_bitmap=False)`: '
        "the stored deltas reused and none searched, so the copies differ in order only"
        + (" (`as-is`: the copy left as it was)" if any(r.order == "as-is" for r in result.orders) else "")
        + ".",
        "- Workloads: "
        + ", ".join(
            _workload_title(s) + (" (path chosen: most often changed)" if s.chosen else "") for s in result.workloads
        )
        + ", the same PATH on every copy.",
        f"- Far seeks: {size_label(result.threshold)} and more. Raw counts the objects Git asked the pack for, "
        "expanded adds the delta chain entries it reads (less its delta base cache); index-pack counts its reads.",
        f"- Wall times: median of {result.runs} untraced run(s) of each workload, cold (the copy's pack files "
        "dropped from the page cache"
        + (f"; reads from the disk limited to {result.cold_iops} a second" if result.cold_iops else "")
        + ") then warm, copies taken in turn.",
        f"- Git {result.git_version}; {os.cpu_count()} CPUs; load average {load} before, {load_after} after; "
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}; the experiment took {result.seconds:.0f} s.",
        *(f"- **Warning:** {message}." for message in result.warnings),
        "",
        f"## Share of seeks under {size_label(result.threshold)} (raw / expanded)",
        "",
        *summary(result),
        "",
        "## Pack sizes",
        "",
        *pack_sizes(result),
        "",
    ]
    if result.runs:
        limited = f", cold reads at most {result.cold_iops} a second" if result.cold_iops else ""
        lines += [f"## Wall times (median of {result.runs} runs{limited})", "", *wall_times(result), ""]
    if result.reference is not None:
        lines += [
            "## The simulator against the measurements",
            "",
            f"The traces measured on the {result.reference} copy, re-laid on the pack each order would write "
            "(index-pack: its reads modelled on that pack), beside the measurement on that order's copy "
            f"(share of seeks under {size_label(result.threshold)}):",
            "",
            *agreement(result),
            "",
            f"## Every order simulated from the {result.reference} copy's traces (raw / expanded)",
            "",
            *candidates(result),
            "",
        ]
    lines += ["## Tables", *tables(result, made)]
    if plot_note:
        lines += ["", plot_note]
    if result.kept is not None:
        lines += ["", f"The copies are kept in `{result.kept}`."]
    result.report.write_text("\n".join(lines) + "\n")
    (result.output_dir / "experiment.json").write_text(json.dumps(to_jsonable(result), indent=2, sort_keys=True) + "\n")
