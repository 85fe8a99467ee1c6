"""The `packorder` (and `git packorder`) command line. Thin: parse options, call the library,
render the result. Every PackError becomes one `fatal:` line and Git's exit status (128; 129
and the usage for bad usage).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from packorder import progress as progress_mod
from packorder.cli.base import (
    INTERRUPTED,
    SIGNALLED,
    command_usage,
    fail,
    guarded,
    parse_size,
    print_json,
    stop_on_termination,
    usage_error,
    warn,
)
from packorder.cli.experiment import experiment_cmd
from packorder.cli.fleet import fleet_cmd
from packorder.cli.seekstats import seekstats_cmd
from packorder.errors import interruption
from packorder.orders.catalog import CATALOG
from packorder.settings import VERIFY_MODES
from packorder.units import human_size

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class _Commands(click.Group):
    """Git's answers for every command: a bad command line is `error: ...` with the usage and
    status 129 (click's own is `Error: ...` and 2); an interrupt is `fatal: interrupted` and
    130 (click's is "Aborted!" and 1), while arguments are parsed or while a command runs."""

    def main(self, args: Any = None, prog_name: str | None = None, **extra: Any) -> Any:
        stop_on_termination()
        try:
            status = super().main(args=args, prog_name=prog_name, standalone_mode=False, **extra)
        except click.UsageError as e:
            usage_error(e.format_message(), command_usage(e.ctx) if e.ctx is not None else None)
        except click.ClickException as e:
            fail(e.format_message())
        except click.Abort:
            fail("interrupted", INTERRUPTED)
        sys.exit(status if isinstance(status, int) else 0)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt as e:
            stopped = interruption(e)
            fail(str(stopped), SIGNALLED + stopped.signum)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            stopped = interruption(e)
            fail(str(stopped), SIGNALLED + stopped.signum)


@click.group(cls=_Commands, context_settings=CONTEXT)
@click.version_option(package_name="packorder")
def main() -> None:
    """Write Git packs in an order chosen for locality, index packs fast, measure seeks."""


@main.command(
    "index-pack",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
    help="Build the .idx and .rev of PACK, byte-identical to `git index-pack`.",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def index_pack_cmd(args: tuple[str, ...]) -> None:
    # Parsed without click (cli/index_pack.py); the `packorder` script goes there directly.
    from packorder.cli.index_pack import main as index_pack_main

    index_pack_main(list(args))


main.add_command(seekstats_cmd)
main.add_command(experiment_cmd)
main.add_command(fleet_cmd)


# One line an order, below the options (`\b`: click keeps these lines as they are).
ORDERS_EPILOG = "\b\nOrders:\n" + "\n".join(f"  {name:<20} {info.summary}" for name, info in CATALOG.items())


quiet_option = click.option("-q", "--quiet", "quiet", is_flag=True, help="Print nothing but warnings and errors.")
verbose_option = click.option(
    "-v", "--verbose", "verbose", is_flag=True, help="Show progress even when stderr is not a terminal."
)


def _progress(ctx: click.Context, quiet: bool, verbose: bool) -> progress_mod.ProgressCallback | None:
    """The progress line -q and -v ask for (refused together)."""
    if quiet and verbose:
        raise click.UsageError("-q and -v cannot be used together", ctx)
    return progress_mod.auto(quiet=quiet, force=verbose)


def _removed_option(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        raise click.UsageError(
            "--prune-unreachable was removed: unreachable objects now go to a cruft pack; "
            "--cruft-expiration=DATE drops those older than DATE (packorder gc passes gc.pruneExpire)",
            ctx,
        )


@main.command("repack", context_settings=CONTEXT, epilog=ORDERS_EPILOG)
@click.argument("repo", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--order",
    type=click.Choice(tuple(CATALOG)),
    metavar="ORDER",
    help="Write order (default: packorder.order, else recency; the orders are listed below).",
)
@click.option("-f", "--no-reuse-delta", is_flag=True, help="Search new deltas instead of reusing stored ones.")
@click.option(
    "--window", type=click.IntRange(min=0), help="Delta search window (default: packorder.window, pack.window, 10)."
)
@click.option(
    "--depth", type=click.IntRange(min=0), help="Longest delta chain (default: packorder.depth, pack.depth, 50)."
)
@click.option(
    "--threads", type=click.IntRange(min=0), help="Threads (default: packorder.threads, pack.threads, or all cores)."
)
@click.option("--ref-delta", is_flag=True, help="Write REF_DELTA entries instead of OFS_DELTA.")
@click.option(
    "--repick-backward-deltas",
    is_flag=True,
    help="Search new bases for stored tree deltas whose base is an older tree (instead of writing that base early).",
)
@click.option(
    "--cruft", is_flag=True, help="Unreachable objects go to a cruft pack with their ages (always; Git's spelling)."
)
@click.option(
    "--cruft-expiration",
    metavar="DATE",
    help="Drop unreachable objects older than DATE (Git's dates: 2.weeks.ago, 2024-01-01, now, never); "
    "default: none expires.",
)
@click.option("--max-cruft-size", metavar="SIZE", help="Keep cruft packs larger than SIZE; split new ones at SIZE.")
@click.option("--prune-unreachable", is_flag=True, hidden=True, expose_value=False, callback=_removed_option)
@click.option(
    "-l/--no-local",
    "--local",
    "local",
    default=True,
    help="Leave objects an alternate has to it (default, as git gc); --no-local copies them.",
)
@click.option(
    "-b/-B",
    "--write-bitmap-index/--no-write-bitmap-index",
    "write_bitmap",
    default=None,
    help="Write a reachability bitmap (default: repack.writeBitmaps, on in bare repositories).",
)
@click.option("-n", "no_server_info", is_flag=True, help="Do not update objects/info/packs and info/refs.")
@click.option("--dry-run", is_flag=True, help="Enumerate and order, but write nothing.")
@click.option("-o", "output_dir", type=click.Path(file_okay=False, path_type=Path), help="Write the packs to DIR only.")
@click.option(
    "--verify",
    type=click.Choice(tuple(VERIFY_MODES)),
    help="What to prove before anything is removed (default: packorder.verify, else produced). "
    + "; ".join(f"{k}: {v}" for k, v in VERIFY_MODES.items())
    + ".",
)
@quiet_option
@verbose_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
@guarded
def repack_cmd(
    ctx: click.Context,
    repo: Path | None,
    order: str | None,
    no_reuse_delta: bool,
    window: int | None,
    depth: int | None,
    threads: int | None,
    ref_delta: bool,
    repick_backward_deltas: bool,
    cruft: bool,
    cruft_expiration: str | None,
    max_cruft_size: str | None,
    local: bool,
    write_bitmap: bool | None,
    no_server_info: bool,
    dry_run: bool,
    output_dir: Path | None,
    verify: str | None,
    quiet: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Rewrite REPO's reachable objects into one pack ordered for locality, its unreachable
    ones into a cruft pack."""
    from packorder.cli import early_walk
    from packorder.repacking import snapshot

    if output_dir is not None and write_bitmap:
        raise click.UsageError("-o DIR writes no bitmap (a bitmap belongs beside the repository's packs): drop -b", ctx)
    show = _progress(ctx, quiet, verbose)
    cruft_size = parse_size(max_cruft_size)
    # Git starts walking the history before the repack's heavy imports (snapshot.py says why),
    # or before this command line loaded (early_walk.py).
    start = None
    try:
        lock = output_dir is None and not dry_run
        start = early_walk.claim(early_walk.WalkRequest(repo, lock, order, write_bitmap))
        if start is None:
            start = snapshot.take(repo, lock=lock, order=order, warn=warn, bitmap=write_bitmap)
        from packorder.repacking.pipeline import repack
    except BaseException:
        if start is not None:
            start.close()
        raise

    with progress_mod.closing_line(show):
        result = repack(
            repo,
            order=order,
            no_reuse_delta=no_reuse_delta,
            window=window,
            depth=depth,
            threads=threads,
            ref_delta=ref_delta,
            repick_backward_deltas=repick_backward_deltas,
            cruft_expiration=cruft_expiration,
            max_cruft_size=cruft_size,
            local=local,
            write_bitmap=write_bitmap,
            update_server_info=False if no_server_info else None,
            dry_run=dry_run,
            output_dir=output_dir,
            verify=verify,
            progress=show,
            warn=warn,
            start=start,
        )
    if as_json:
        print_json(result)
    elif not quiet:
        click.echo("\n".join(repack_summary(result)))


def repack_summary(result: Any) -> list[str]:
    """What a repack did, in a few lines (the command's output without --json)."""
    if result.objects == 0:
        return [
            "nothing to pack" + (f", {len(result.removed_packs)} old packs removed" if result.removed_packs else "")
        ]
    what = "would write" if result.dry_run else "wrote"
    lines = [
        f"{what} {result.reachable} reachable objects in {result.order} order"
        + (f" and {result.unreachable_kept} unreachable ones in a cruft pack" if result.unreachable_kept else "")
        + f": {result.reused_deltas} reused deltas, {result.new_deltas} new deltas, {result.whole_objects} whole "
        f"objects ({result.cut_deltas} deltas cut at --depth)"
    ]
    if result.unreachable_pruned:
        lines.append(f"{result.unreachable_pruned} expired unreachable objects dropped")
    lines += [f"  {pack}" for pack in result.packs]
    if not result.dry_run:
        lines.append(
            f"pack size {human_size(result.pack_bytes)} (was {human_size(result.old_pack_bytes)}), "
            f"{len(result.removed_packs)} old packs and {result.removed_loose} loose objects removed"
            + (_bitmap_summary(result) if result.bitmap else "")
        )
    return lines


def _bitmap_summary(result) -> str:
    if result.bitmap_kind == "pack":
        return f", bitmap written ({result.bitmaps} commits)"
    why = f" (the pack alone has no closure: {result.bitmap_note})" if result.bitmap_note else ""
    return ", multi-pack-index bitmap written" + why


CONFIGURED = "\0configured"  # --prune without a date: gc.pruneExpire decides, as in Git


@main.command("gc", context_settings=CONTEXT)
@click.argument("repo", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--auto", is_flag=True, help="Run only past Git's thresholds (gc.auto, gc.autoPackLimit) or on drift.")
@click.option("--aggressive", is_flag=True, help="Search new deltas (gc.aggressiveWindow, gc.aggressiveDepth).")
@click.option(
    "--prune",
    "prune",
    is_flag=False,
    flag_value=CONFIGURED,
    default=CONFIGURED,
    metavar="[=DATE]",
    help="Drop unreachable objects older than DATE (default: gc.pruneExpire, else 2.weeks.ago).",
)
@click.option("--no-prune", is_flag=True, help="Keep every unreachable object (in the cruft pack).")
@click.option("--cruft", is_flag=True, help="Unreachable objects go to a cruft pack (always; Git's spelling).")
@click.option("--force", is_flag=True, help="Run even if gc.pid names another gc that may be running.")
@click.option("--order", type=click.Choice(tuple(CATALOG)), metavar="ORDER", help="As repack --order.")
@click.option("--verify", type=click.Choice(tuple(VERIFY_MODES)), help="As repack --verify.")
@quiet_option
@verbose_option
@click.option("--json", "as_json", is_flag=True, help="Print what ran (and, with --auto, why) as JSON.")
@click.pass_context
@guarded
def gc_cmd(
    ctx: click.Context,
    repo: Path | None,
    auto: bool,
    aggressive: bool,
    prune: str,
    no_prune: bool,
    cruft: bool,
    force: bool,
    order: str | None,
    verify: str | None,
    quiet: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Git's maintenance (pack-refs, reflog expire, prune, worktree prune, rerere gc,
    commit-graph), with packorder's repack in place of git repack, so that it keeps the order."""
    from packorder.repacking.maintenance import KEEP_CONFIGURED, gc

    if no_prune and prune != CONFIGURED:
        raise click.UsageError("--prune and --no-prune cannot be used together", ctx)
    show = _progress(ctx, quiet, verbose)
    with progress_mod.closing_line(show):
        result = gc(
            repo,
            auto=auto,
            aggressive=aggressive,
            prune=None if no_prune else (KEEP_CONFIGURED if prune == CONFIGURED else prune),
            force=force,
            quiet=quiet,
            order=order,
            verify=verify,
            progress=show,
            warn=warn,
            log=lambda line: click.echo(line, err=True),
        )
    if as_json:
        print_json(result)
    elif not quiet and result.ran:
        click.echo(f"ran: {', '.join(result.steps)}")
        if result.repack is not None:
            click.echo("\n".join(repack_summary(result.repack)))


@main.command("sample", context_settings=CONTEXT)
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--commits", type=int, default=None, metavar="N", help="Commits to generate (default 6000).")
@click.option("--seed", type=int, default=1, show_default=True, help="Another seed, another history.")
@quiet_option
@verbose_option
@click.option("--json", "as_json", is_flag=True, help="Print what was made as JSON.")
@click.pass_context
@guarded
def sample_cmd(
    ctx: click.Context,
    directory: Path,
    commits: int | None,
    seed: int,
    quiet: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Create a bare repository in DIRECTORY to try packorder on: thousands of generated
    commits, branches, release tags and renames in a pack of about 34 MB. The same seed
    gives the same repository on every machine."""
    from packorder.experiments.sample_repository import DEFAULT_COMMITS, sample

    show = _progress(ctx, quiet, verbose)
    with progress_mod.closing_line(show):
        result = sample(directory, commits=DEFAULT_COMMITS if commits is None else commits, seed=seed, progress=show)
    if as_json:
        print_json(result)
    elif not quiet:

        def count(n: int, noun: str, plural: str) -> str:
            return f"{n} {noun if n == 1 else plural}"

        click.echo(
            f"{result.path}: {count(result.commits, 'commit', 'commits')}, "
            f"{count(result.branches, 'branch', 'branches')}, {count(result.tags, 'tag', 'tags')}, "
            f"a pack of {human_size(result.pack_bytes)}"
        )


if __name__ == "__main__":
    main()
