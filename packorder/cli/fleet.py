"""`packorder fleet status|repack|report`: the fleet layer's command line (packorder/fleet/).

Every fleet command needs Dask (the `fleet` extra); without it the group stops with one
`fatal:` line before any work, so that a fleet run never goes half way on a machine that
could not finish it.
"""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path
from typing import Any

import click

from packorder import progress as progress_mod
from packorder.cli.base import fail, guarded, print_json, quiet_or_verbose, warn
from packorder.cli.options import Subcommands, progress_of, verbose_option
from packorder.jsonable import csv_cell, to_jsonable
from packorder.orders.catalog import CATALOG
from packorder.units import human_size

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
NEEDS_DASK = "packorder fleet needs Dask: pip install 'packorder[fleet]'"


def dask_missing() -> bool:
    try:
        return importlib.util.find_spec("dask") is None or importlib.util.find_spec("distributed") is None
    except (ImportError, ValueError):
        return True


@click.group("fleet", cls=Subcommands, context_settings=CONTEXT)
def fleet_cmd() -> None:
    """Triage and repack many repositories on a Dask cluster, and report what it did."""
    if dask_missing():
        fail(NEEDS_DASK)


quiet_option = click.option("-q", "--quiet", is_flag=True, help="No progress and no dashboard note.")
sources = [
    click.argument("paths", nargs=-1, type=click.Path(path_type=Path)),
    click.option(
        "--from",
        "list_file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Read repository paths from FILE, one a line.",
    ),
    click.option("--order", type=click.Choice(tuple(CATALOG)), metavar="ORDER", help="As repack --order."),
    click.option(
        "--triage-cache",
        type=click.Path(dir_okay=False, path_type=Path),
        metavar="FILE",
        help="Keep each repository's triage in FILE; one unchanged since is not triaged again.",
    ),
]


def named_paths_exist(paths: tuple[Path, ...]) -> None:
    """A PATH of the command line that is not there is the command's fatal error, as in every
    command (a typo there would otherwise triage nothing and succeed); the lines of --from
    FILE, a fleet's list, stay each repository's own problem."""
    for path in paths:
        if not path.exists():
            fail(f"{path}: no such file or directory")


def with_sources(fn: Any) -> Any:
    for option in reversed(sources):
        fn = option(fn)
    return fn


def status_rows(status: Any) -> list[dict[str, Any]]:
    """One flat record a repository: the --json and --csv output."""
    rows = []
    for t in status.repositories:
        row = to_jsonable(t)
        # A fraction, as share_now and share_after are (the table prints points).
        row["gain"] = t.gain / 100
        rows.append(row)
    return rows


STATUS_COLUMNS = [
    ("repository", lambda t: str(t.path)),
    ("packs", lambda t: str(t.packs)),
    ("loose", lambda t: str(t.loose)),
    ("objects", lambda t: str(t.objects)),
    ("size", lambda t: human_size(t.pack_bytes + t.loose_bytes)),
    ("cruft", lambda t: human_size(t.cruft_bytes)),
    ("drift", lambda t: f"{t.drift:.1%}"),
    ("now", lambda t: _share(t.share_now)),
    ("after", lambda t: _share(t.share_after)),
    ("gain", lambda t: f"{t.gain:+.1f}"),
    ("est. time", lambda t: f"{t.estimated_seconds:.1f}s"),
    ("est. memory", lambda t: human_size(t.estimated_peak_bytes)),
]


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def table(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell, numbers and names alike left-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows])


@fleet_cmd.command("status", context_settings=CONTEXT)
@with_sources
@click.option("--json", "as_json", is_flag=True, help="Print the triage as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the triage as CSV.")
@quiet_option
@verbose_option
@click.pass_context
@guarded
def status_cmd(
    ctx: click.Context,
    paths: tuple[Path, ...],
    list_file: Path | None,
    order: str | None,
    triage_cache: Path | None,
    as_json: bool,
    as_csv: bool,
    quiet: bool,
    verbose: bool,
) -> None:
    """Triage the repositories at or under PATHS (and --from FILE), sorted by expected
    benefit: packs, loose objects, cruft, layout drift, the predicted share of index-pack
    seeks under 2 MiB now and after a repack, and the repack's estimated time and memory."""
    from packorder.fleet.triage import status

    if as_json and as_csv:
        raise click.UsageError("--json and --csv cannot be used together", ctx)
    if not paths and list_file is None:
        raise click.UsageError("name repositories or roots to search, or --from FILE", ctx)
    show = progress_of(quiet, verbose)
    named_paths_exist(paths)
    with progress_mod.closing_line(show):
        result = status(paths, list_file=list_file, order=order, triage_cache_file=triage_cache, progress=show)
    for problem in result.problems:
        warn(problem)
    if as_json:
        document = {"repositories": status_rows(result), "problems": result.problems, "seconds": result.seconds}
        print_json(document, "fleet.status")
    elif as_csv:
        rows = status_rows(result)
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else ["path"], lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)
    else:
        lines = [[f(t) for _, f in STATUS_COLUMNS] for t in result.repositories]
        click.echo(table([name for name, _ in STATUS_COLUMNS], lines))
        for t in result.repositories:
            if t.error:
                click.echo(f"{t.path}: {t.error}")
    if any(t.error for t in result.repositories):
        sys.exit(1)  # the others reported: a repository that failed is the run's status


class FleetLine:
    """The fleet's progress on one line of stderr, rewritten in place."""

    def __init__(self) -> None:
        self.shown = False

    def __call__(self, counts: Any) -> None:
        left = counts.total - counts.done - counts.failed
        sys.stderr.write(
            f"\rRepacking repositories: {counts.done} done, {counts.failed} failed, {counts.running} running, "
            f"{left} left, about {counts.seconds_left / 60:.0f} min left   "
        )
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


@fleet_cmd.command("repack", context_settings=CONTEXT)
@with_sources
@click.option(
    "--results",
    "results_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append a JSON line a repository to FILE (default: packorder-fleet.jsonl).",
)
@click.option(
    "--resume",
    "resume_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Skip the repositories RESULTS records as done, and append to it.",
)
@click.option(
    "--scheduler", metavar="ADDRESS", help="Run on the Dask cluster of this scheduler (default: a local one)."
)
@click.option("--workers", type=click.IntRange(min=1), help="Workers of the local cluster (default: one per core).")
@click.option("--min-gain", type=float, metavar="POINTS", help="Repack only for this predicted gain or more.")
@click.option("--max-hours", type=click.FloatRange(min=0), help="Leave out repositories estimated to take longer.")
@click.option(
    "--budget", type=click.FloatRange(min=0), metavar="HOURS", help="Choose no more estimated time than this in all."
)
@click.option(
    "--batch-seconds",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    help="Group small repositories into tasks of this estimated time.",
)
@click.option(
    "--timeout", type=click.FloatRange(min=1), help="Seconds before one repack is stopped (default: 20x est.)."
)
@quiet_option
@verbose_option
@click.option("--json", "as_json", is_flag=True, help="Print the run's summary as JSON.")
@click.pass_context
@guarded
def repack_cmd(
    ctx: click.Context,
    paths: tuple[Path, ...],
    list_file: Path | None,
    order: str | None,
    triage_cache: Path | None,
    results_file: Path | None,
    resume_file: Path | None,
    scheduler: str | None,
    workers: int | None,
    min_gain: float | None,
    max_hours: float | None,
    budget: float | None,
    batch_seconds: float,
    timeout: float | None,
    quiet: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Repack the repositories at or under PATHS (and --from FILE) worth it, on a Dask
    cluster, each in a process of its own; one JSON line a repository in the results."""
    from packorder.fleet.cluster import repack

    if not paths and list_file is None:
        raise click.UsageError("name repositories or roots to search, or --from FILE", ctx)
    if results_file is not None and resume_file is not None and results_file != resume_file:
        raise click.UsageError("--resume FILE appends to FILE: drop --results or name the same file", ctx)
    quiet_or_verbose(quiet, verbose)
    named_paths_exist(paths)
    line = FleetLine() if verbose or (not quiet and sys.stderr.isatty()) else None

    def announce(address: str) -> None:
        if not quiet:
            click.echo(f"Dask dashboard: {address}", err=True)

    try:
        run = repack(
            paths,
            results=resume_file or results_file or Path("packorder-fleet.jsonl"),
            list_file=list_file,
            resume=resume_file is not None,
            scheduler=scheduler,
            workers=workers,
            order=order,
            min_gain=min_gain,
            max_hours=max_hours,
            budget_hours=budget,
            batch_seconds=batch_seconds,
            timeout=timeout,
            triage_cache_file=triage_cache,
            progress=line,
            announce=announce,
        )
    finally:
        if line is not None:
            line.close()
    for problem in run.problems:
        warn(problem)
    if as_json:
        print_json(run, "fleet.repack")
    elif not quiet:
        click.echo(
            f"{run.done} repacked, {run.failed} failed, {run.skipped} skipped"
            + (f", {run.resumed} done before" if run.resumed else "")
            + f" of {run.repositories} repositories, in {run.tasks} tasks on {run.workers} workers "
            f"({run.seconds:.1f} s); results in {run.results}"
        )
    if run.failed:
        sys.exit(1)


@fleet_cmd.command("report", context_settings=CONTEXT)
@click.argument("results", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False, path_type=Path), help="Draw it in FILE.png.")
@click.option("--json", "as_json", is_flag=True, help="Print the sums as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the failures, one line each (nothing if none failed).")
@click.option("-v", "--verbose", is_flag=True, help="Print each repository's line below the sums.")
@click.pass_context
@guarded
def report_cmd(
    ctx: click.Context, results: Path, plot_file: Path | None, as_json: bool, quiet: bool, verbose: bool
) -> None:
    """Sum up a fleet run's RESULTS: repositories repacked, failed and skipped, bytes before
    and after, hours spent, predicted locality before and after."""
    from packorder.fleet.summary import plot, report

    quiet_or_verbose(quiet, verbose)
    summary = report(results)
    if plot_file is not None:
        plot(results, plot_file)
    if as_json:
        print_json(summary, "fleet.report")
        return
    if quiet:
        for path, error in summary.errors.items():
            click.echo(f"failed: {path}: {error}")
        return
    saved = summary.bytes_before - summary.bytes_after
    rows = [
        ["repositories", str(summary.repositories)],
        ["repacked", str(summary.done)],
        ["failed", str(summary.failed)],
        ["skipped", str(summary.skipped)],
        ["bytes before", human_size(summary.bytes_before)],
        ["bytes after", human_size(summary.bytes_after)],
        ["bytes saved", ("-" if saved < 0 else "") + human_size(abs(saved))],
        ["hours spent", f"{summary.hours:.3f}"],
        ["predicted share before", _share(summary.share_before)],
        ["predicted share after", _share(summary.share_after)],
    ]
    click.echo(table(["", "fleet"], rows))
    if verbose:
        click.echo()
        click.echo(table(["repository", "status", "before", "after", "seconds", "why"], repository_rows(results)))
        return
    for path, error in summary.errors.items():
        click.echo(f"failed: {path}: {error}")


def repository_rows(results: Path) -> list[list[str]]:
    """fleet report -v: each repository's last record, in the order of the results file."""
    from packorder.fleet import run_record as results_mod

    rows = []
    for path, r in results_mod.latest(results_mod.read(results)).items():
        done = r["status"] == results_mod.DONE
        rows.append(
            [
                path,
                r["status"],
                human_size(r.get("bytes_before") or 0) if r.get("bytes_before") is not None else "-",
                human_size(r.get("bytes_after") or 0) if done and r.get("bytes_after") is not None else "-",
                f"{r['seconds']:.1f}" if r.get("seconds") is not None else "-",
                r.get("error") or r.get("reason") or "",
            ]
        )
    return rows
