"""`packorder seekstats`: the command line of the analyzer.

Registered in `packorder.cli.main`; it imports nothing heavy at startup (numpy and the analyzer load
when the command runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from packorder.seek.workload_catalog import TAKES_PATH, usage

GIT_ARGS = "packorder.seek.git_args"


class SeekCommand(click.Command):
    """Accepts the spellings `--workload log-path PATH` (the word after a workload that takes a
    PATH is its PATH unless it starts with '-') and `custom -- GIT ARGS` (everything after the
    first `--` goes to git)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args = list(args)
        if "--" in args:
            at = args.index("--")
            ctx.meta[GIT_ARGS] = args[at + 1 :]
            args = args[:at]
        out: list[str] = []
        taken: tuple[str, str] | None = None  # (workload, the word taken as its PATH)
        i = 0
        while i < len(args):
            word = args[i]
            out.append(word)
            name = None
            if word in ("--workload", "-w") and i + 1 < len(args):
                name = args[i + 1]
                out.append(name)
                i += 1
            elif word.startswith("--workload="):
                name = word.partition("=")[2]
            if name in TAKES_PATH and i + 1 < len(args) and not args[i + 1].startswith("-"):
                out += ["--path", args[i + 1]]
                taken = (name, args[i + 1])
                i += 1
            i += 1
        rest = super().parse_args(ctx, out)
        if taken is not None and ctx.params.get("repo") is None:
            # `-w log-path X` alone: X may be the PATH in the current repository or the REPO.
            name, word = taken
            raise click.UsageError(
                f"'-w {name} {word}' is ambiguous: write '--path {word}' for a path in the current "
                f"repository, or name the repository too ('-w {name} {word} REPO')",
                ctx,
            )
        return rest


@click.command(
    "seekstats",
    cls=SeekCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.argument("repo", required=False, type=click.Path(path_type=Path))
@click.option(
    "-w",
    "--workload",
    default="log",
    show_default=True,
    metavar="NAME[:PATH]",
    help=f"{usage()}; or NAME:PATH, as experiment -w takes it.",
)
@click.option("--path", "path", metavar="PATH",
              help=f"The PATH of {', '.join(TAKES_PATH)} (default: chosen from history).")  # fmt: skip
@click.option("--compare", "compare", multiple=True, type=click.Path(path_type=Path), metavar="REPO2",
              help="Run the same workload on REPO2 too and show it side by side (repeatable).")  # fmt: skip
@click.option("--git", "git", default="git", show_default=True, help="The git binary the workload runs with.")
@click.option("--view", type=click.Choice(["raw", "expanded", "both"]), default="both", show_default=True,
              help="Raw requests as Git logs them, or expanded into the delta chain entries read.")  # fmt: skip
@click.option("--threshold", default="2m", show_default=True, metavar="SIZE", help="Report seeks shorter than SIZE.")
@click.option("--near", default="4k", show_default=True, metavar="SIZE",
              help="Report accesses within SIZE of data read before.")  # fmt: skip
@click.option("--cache-limit", metavar="SIZE", help="Delta base cache to model (default: core.deltaBaseCacheLimit).")
@click.option(
    "--cold", is_flag=True, help="Also time the workload untraced, its packs out of the page cache, then warm."
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the results as CSV, a row per repository and view.")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE.png",
              help="Plot the distribution of seek distances, a line per repository.")  # fmt: skip
@click.option("--simulate-order", "simulate", multiple=True, metavar="ORDER[,ORDER...]",
              help="Also show the workload re-laid as if REPO were packed in ORDER (no pack written).")  # fmt: skip
@click.option("-v", "--verbose", "verbose", is_flag=True, help="Show progress even when stderr is not a terminal.")
@click.option("-q", "--quiet", "quiet", is_flag=True, help="No progress, no note of the chosen path.")
@click.pass_context
def seekstats_cmd(ctx: click.Context, **options: Any) -> None:
    """Run a workload on REPO (default: the current repository), record every pack offset it
    reads, and report seek-distance percentiles the way Git's recency-order study did."""
    from packorder.cli.base import guarded

    guarded(_run)(ctx.meta.get(GIT_ARGS, []), **options)


def _run(
    git_args: list[str],
    repo: Path | None,
    workload: str,
    path: str | None,
    compare: tuple[Path, ...],
    git: str,
    view: str,
    threshold: str,
    near: str,
    cache_limit: str | None,
    cold: bool,
    as_json: bool,
    as_csv: bool,
    plot: Path | None,
    simulate: tuple[str, ...],
    verbose: bool,
    quiet: bool,
) -> None:
    from packorder import progress as progress_mod
    from packorder.cli.base import Notes, parse_size, quiet_or_verbose, warn
    from packorder.errors import PackError, UsageError
    from packorder.gitcmd import find_git_dir
    from packorder.names import names
    from packorder.seek import api, workloads

    quiet_or_verbose(quiet, verbose)
    if as_json and as_csv:
        raise UsageError("--json and --csv cannot be used together")
    if workload == "custom" and not git_args:
        raise UsageError("the custom workload needs git arguments after '--', e.g. custom -- log --all")
    if git_args and workload != "custom":
        raise UsageError(f"git arguments after '--' are for the custom workload, not {workload}")
    if plot is not None and not plot.resolve().parent.is_dir():
        # Before the workload runs, not after its minutes: the one line is the failure.
        raise PackError(f"cannot write {plot}: {plot.parent}: no such directory")
    spec = workloads.parse(workload, path, tuple(git_args))  # NAME:PATH as experiment -w takes it
    repos = [repo, *compare]
    git_dirs = [find_git_dir(r) for r in repos]
    spec, choice = workloads.resolve(spec, git_dirs[0])
    notes = Notes("seekstats: ", verbose=verbose, quiet=quiet)
    if choice is not None:
        notes(f"{spec.name}: {choice.note}")
    labels = [api.label_of(d) for d in git_dirs]
    if len(set(labels)) < len(labels):
        labels = [str(d) for d in git_dirs]
    views = ("raw", "expanded") if view == "both" else (view,)
    show = progress_mod.auto(quiet=quiet, force=verbose)
    orders = names(simulate, "order")
    if simulate and not orders:
        raise UsageError("--simulate-order needs an order name")
    results = []
    simulation = None
    with progress_mod.closing_line(show):
        for at, (where, label) in enumerate(zip(repos, labels, strict=True)):
            options = {
                "git": git,
                "views": views,
                "threshold": parse_size(threshold) or 0,
                "near": parse_size(near) or 0,
                "cache_limit": parse_size(cache_limit),
                "label": label,
                "progress": show,
            }
            if at == 0 and orders:
                from packorder.seek.simulator import simulate as simulate_orders

                simulation = simulate_orders(where, spec, orders=orders, cold=cold, **options)
                results.append(simulation.measured)
            else:
                results.append(api.seekstats(where, spec, cold=cold, **options))
    notes.flush()
    for message in dict.fromkeys(w for result in results for w in result.warnings):
        warn(message)
    _show(results, simulation, plot, as_json, as_csv)


def _show(results: list, simulation: object | None, plot: Path | None, as_json: bool, as_csv: bool) -> None:
    """The results (and the simulated orders') as tables, JSON or CSV, and the plot."""
    from packorder.cli.base import print_json
    from packorder.seek import report

    if simulation is not None:
        from packorder.seek import simreport

        if plot is not None:
            simreport.plot(results, simulation, plot)
        if as_json:
            print_json({"measured": results, "simulated": simulation.simulated}, "seekstats")
        elif as_csv:
            click.echo(simreport.csv_text(results, simulation), nl=False)
        else:
            click.echo(simreport.tables(results, simulation), nl=False)
        return
    if plot is not None:
        from packorder.seek.plot import plot_cdf

        plotted = "expanded" if results[0].view("expanded") is not None else "raw"
        plot_cdf(results, plotted, plot)
    if as_json:
        print_json(results, "seekstats")
    elif as_csv:
        click.echo(report.csv_text(results), nl=False)
    else:
        click.echo(report.tables(results), nl=False)
