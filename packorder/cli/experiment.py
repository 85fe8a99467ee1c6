"""`packorder experiment`: the command line of `packorder.experiment` (registered in
`packorder.cli.main`; it imports nothing heavy until it runs)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import click

from packorder.seek.workload_catalog import DEFAULT_EXPERIMENT, usage


@click.command("experiment", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.argument("repo", required=False, type=click.Path(path_type=Path))
@click.option("--orders", multiple=True, metavar="ORDER[,ORDER...]",
              help="Orders to compare, 'as-is' for the repository's own packs (default: recency,history).")  # fmt: skip
@click.option("-w", "--workloads", multiple=True, metavar="NAME[:PATH][,...]",
              help=f"{usage(experiment=True)} (default: {','.join(DEFAULT_EXPERIMENT)}).")  # fmt: skip
@click.option("-o", "output_dir", default="packorder-experiment", show_default=True,
              type=click.Path(path_type=Path), help="Where report.md, plots and JSON go.")  # fmt: skip
@click.option("--runs", default=3, show_default=True, type=click.IntRange(min=0),
              help="Cold and warm timed runs of each workload (0: no timing).")  # fmt: skip
@click.option("--cold-iops", type=click.IntRange(min=1), metavar="N",
              help="Cold runs may send N read requests a second to the disk: a slow disk, where the "
                   "host caches this one (Linux, root, cgroup v2 io or v1 blkio).")  # fmt: skip
@click.option("--simulate", multiple=True, metavar="ORDER[,ORDER...]",
              help="More orders to simulate from the first order's traces (not repacked).")  # fmt: skip
@click.option("--git", "git", default="git", show_default=True, help="The git binary the workloads run with.")
@click.option("--threshold", default="2m", show_default=True, metavar="SIZE", help="Report seeks shorter than SIZE.")
@click.option("--near", default="4k", show_default=True, metavar="SIZE",
              help="Report accesses within SIZE of data read before.")  # fmt: skip
@click.option("--cache-limit", metavar="SIZE", help="Delta base cache to model (default: core.deltaBaseCacheLimit).")
@click.option("--work-dir", type=click.Path(path_type=Path),
              help="Where the copies go (default: the system's temporary directory).")  # fmt: skip
@click.option("--keep", is_flag=True, help="Keep the repacked copies.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("-v", "--verbose", "verbose", is_flag=True, help="Show progress even when stderr is not a terminal.")
@click.option("-q", "--quiet", "quiet", is_flag=True, help="No progress and no notes on stderr.")
def experiment_cmd(**options: Any) -> None:
    """Copy REPO once per order, repack each copy in its order (same deltas), run every workload
    on each, and write a report comparing them (tables, sizes, cold and warm times, plots)."""
    from packorder.cli.base import guarded

    guarded(_run)(**options)


def _run(
    repo: Path | None,
    orders: tuple[str, ...],
    workloads: tuple[str, ...],
    output_dir: Path,
    runs: int,
    cold_iops: int | None,
    simulate: tuple[str, ...],
    git: str,
    threshold: str,
    near: str,
    cache_limit: str | None,
    work_dir: Path | None,
    keep: bool,
    as_json: bool,
    verbose: bool,
    quiet: bool,
) -> None:
    from packorder import progress as progress_mod
    from packorder.cli.base import Notes, parse_size, print_json, quiet_or_verbose, warn
    from packorder.errors import UsageError
    from packorder.experiments.report import summary
    from packorder.experiments.run import DEFAULT_ORDERS, DEFAULT_WORKLOADS, experiment
    from packorder.names import names

    quiet_or_verbose(quiet, verbose)
    chosen_orders = names(orders) if orders else list(DEFAULT_ORDERS)
    chosen_workloads = names(workloads) if workloads else list(DEFAULT_WORKLOADS)
    if (orders and not chosen_orders) or (workloads and not chosen_workloads):
        raise UsageError("--orders and --workloads take names")
    show = progress_mod.auto(quiet=quiet, force=verbose)
    note = Notes("experiment: ", verbose=verbose, quiet=quiet)
    if isinstance(show, progress_mod.ProgressLine):
        note.before = show.close

    with progress_mod.closing_line(show):
        result = experiment(
            repo,
            orders=chosen_orders,
            workloads=chosen_workloads,
            output_dir=output_dir,
            runs=runs,
            cold_iops=cold_iops,
            simulate=names(simulate),
            git=git,
            threshold=parse_size(threshold) or 0,
            near=parse_size(near) or 0,
            cache_limit=parse_size(cache_limit),
            work_dir=work_dir,
            keep=keep,
            command="packorder experiment " + " ".join(shlex.quote(a) for a in sys.argv[2:]),
            progress=show,
            note=note,
        )
    note.flush()
    for message in result.warnings:
        warn(message)
    if as_json:
        print_json(result, "experiment")
        return
    click.echo("\n".join(summary(result)))
    click.echo(f"report: {result.report}")
