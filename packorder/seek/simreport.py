"""Rendering `seekstats --simulate-order`: the measured repositories and the simulated orders
side by side (table, CSV, plot)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from packorder.seek import columns
from packorder.seek.seek_result import SeekResult
from packorder.seek.simulator import SimulatedResult, Simulation


def simulated_column(sim: SimulatedResult, view: str) -> columns.Column:
    return columns.Column(sim.label, sim.view(view), {"Pack size": columns.count(sim.pack_bytes)})


def _views(results: Sequence[SeekResult], simulation: Simulation) -> list[str]:
    names: list[str] = []
    for r in [*results, *simulation.simulated]:
        names += [v.view for v in r.views if v.view not in names]
    return names


def tables(results: Sequence[SeekResult], simulation: Simulation) -> str:
    """A table per view, measured columns first; then where each column comes from."""
    parts = []
    for view in _views(results, simulation):
        cols = [columns.measured_column(r, view) for r in results if r.view(view) is not None]
        cols += [simulated_column(s, view) for s in simulation.simulated if s.view(view) is not None]
        first = next(c.stats for c in cols if c.stats is not None)
        assert first is not None
        parts.append(columns.table(results[0].workload.describe(), first.description, cols))
    notes = [f"{r.label}: {r.repository} ({len(r.packs)} pack(s), {r.pack_bytes:,} bytes), measured" for r in results]
    for s in simulation.simulated:
        notes.append(f"{s.label}: {s.source}, on the pack `repack --order {s.order}` would write ({s.seconds:.2f} s)")
    notes.append(f"planning the orders took {simulation.plan_seconds:.2f} s")
    return "\n\n".join(parts) + "\n\n" + "\n".join(notes) + "\n"


def csv_text(results: Sequence[SeekResult], simulation: Simulation) -> str:
    rows = []
    for r in results:
        for v in r.views:
            rows.append(columns.csv_row(r.label, "measured", r.workload.name, r.workload.describe(), v, r.pack_bytes))
    for s in simulation.simulated:
        for v in s.views:
            rows.append(columns.csv_row(s.label, "simulated", s.workload.name, s.workload.describe(), v, s.pack_bytes))
    return columns.csv_text(rows)


def plot(results: Sequence[SeekResult], simulation: Simulation, path: Path) -> None:
    """The cumulative distributions, a line per measured repository and simulated order."""
    import dataclasses

    from packorder.seek.plot import plot_cdf

    view = "expanded" if results[0].view("expanded") is not None else "raw"
    base = results[0]
    lines = list(results)
    for s in simulation.simulated:
        # plot_cdf draws SeekResults; a simulated line is one with the simulated statistics.
        lines.append(dataclasses.replace(base, label=s.label, views=s.views, pack_bytes=s.pack_bytes))
    plot_cdf(lines, view, path)
