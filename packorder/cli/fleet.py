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
from packorder.cli.base import fail, guarded, print_json, warn
from packorder.jsonable import to_jsonable
from packorder.orders.catalog import CATALOG
from packorder.units import human_size

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
NEEDS_DASK = "packorder fleet needs Dask: pip install 'packorder[fleet]'"


def dask_missing() -> bool:
    try:
        return importlib.util.find_spec("dask") is None or importlib.util.find_spec("distributed") is None
    except (ImportError, ValueError):
        return True


@click.group("fleet", context_settings=CONTEXT)
def fleet_cmd() -> None:
    """Triage and repack many repositories on a Dask cluster, and report what it did."""
    if dask_missing():
        fail(NEEDS_DASK)


quiet_option = click.option("-q", "--quiet", is_flag=True, help="Print nothing but warnings and errors.")
sources = [
    click.argument("paths", nargs=-1, type=click.Path(path_type=Path)),
    click.option(
        "--from",
        "list_file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Read repository paths from FILE, one a line.",
    ),
    click.option("--order", type=click.Choice(tuple(CATALOG)), metavar="ORDER", help="As repack --order."),
]


def with_sources(fn: Any) -> Any:
    for option in reversed(sources):
        fn = option(fn)
    return fn


def status_rows(status: Any) -> list[dict[str, Any]]:
    """One flat record a repository: the --json and --csv output."""
    rows = []
    for t in status.repositories:
        row = to_jsonable(t)
        row["gain"] = t.gain
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
@click.pass_context
@guarded
def status_cmd(
    ctx: click.Context,
    paths: tuple[Path, ...],
    list_file: Path | None,
    order: str | None,
    as_json: bool,
    as_csv: bool,
    quiet: bool,
) -> None:
    """Triage the repositories at or under PATHS (and --from FILE), sorted by expected
    benefit: packs, loose objects, cruft, layout drift, the predicted share of index-pack
    seeks under 2 MiB now and after a repack, and the repack's estimated time and memory."""
    from packorder.fleet.triage import status

    if as_json and as_csv:
        raise click.UsageError("--json and --csv cannot be used together", ctx)
    if not paths and list_file is None:
        raise click.UsageError("name repositories or roots to search, or --from FILE", ctx)
    show = progress_mod.auto(quiet=quiet)
    with progress_mod.closing_line(show):
        result = status(paths, list_file=list_file, order=order, progress=show)
    for problem in result.problems:
        warn(problem)
    if as_json:
        print_json({"repositories": status_rows(result), "problems": result.problems, "seconds": result.seconds})
    elif as_csv:
        rows = status_rows(result)
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else ["path"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    else:
        lines = [[f(t) for _, f in STATUS_COLUMNS] for t in result.repositories]
        click.echo(table([name for name, _ in STATUS_COLUMNS], lines))
        for t in result.repositories:
            if t.error:
                click.echo(f"{t.path}: {t.error}")
