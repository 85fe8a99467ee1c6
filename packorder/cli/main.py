"""The `packorder` (and `git packorder`) command line. Thin: parse options, call the library,
render the result. Every PackError becomes one `fatal:` line and Git's exit status (128; 129
and the usage for bad usage).
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any

import click

from packorder import progress as progress_mod
from packorder.cli.base import (
    INTERRUPTED,
    SIGNALLED,
    Notes,
    command_usage,
    fail,
    guarded,
    option_needs_value,
    option_takes_no_value,
    parse_size,
    print_json,
    stop_on_termination,
    unknown_option,
    usage_error,
    warn,
)
from packorder.cli.experiment import experiment_cmd
from packorder.cli.fleet import fleet_cmd
from packorder.cli.options import CONTEXT, progress_of, quiet_option, verbose_option
from packorder.cli.repack import repack_cmd, repack_summary
from packorder.cli.seekstats import seekstats_cmd
from packorder.errors import interruption
from packorder.orders.catalog import CATALOG
from packorder.settings import VERIFY_MODES
from packorder.units import human_size


def _git_message(e: click.UsageError) -> str:
    """Git's words for what click refused, where Git has its own (click's suggestion of a
    similar option goes: `--bogus` is not a misspelt `--verbose`)."""
    if isinstance(e, click.NoSuchOption):
        return unknown_option(e.option_name)
    if isinstance(e, click.BadOptionUsage) and e.message.endswith("requires an argument."):
        return option_needs_value(e.option_name)
    if isinstance(e, click.BadOptionUsage) and e.message.endswith("does not take a value."):
        return option_takes_no_value(e.option_name)
    return e.format_message()


def _parsing_context(e: BaseException) -> click.Context | None:
    """The context of the command whose options click's parser refused (it raises a missing
    value without one): the last frame that had it, for the usage Git prints below."""
    found = None
    for frame, _ in traceback.walk_tb(e.__traceback__):
        ctx = frame.f_locals.get("ctx")
        if isinstance(ctx, click.Context):
            found = ctx
    return found


class _Commands(click.Group):
    """Git's answers for every command: a bad command line is `error: ...` with the usage and
    status 129 (click's own is `Error: ...` and 2); an interrupt is `fatal: interrupted` and
    130 (click's is "Aborted!" and 1), while arguments are parsed or while a command runs; no
    command at all prints the usage on stdout, and an unknown one is one line, both status 1
    (`git` alone, `git bogus`)."""

    def main(self, args: Any = None, prog_name: str | None = None, **extra: Any) -> Any:
        stop_on_termination()
        try:
            status = super().main(args=args, prog_name=prog_name, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:
            click.echo(e.ctx.get_help() if e.ctx is not None else e.format_message())
            sys.exit(1)
        except click.UsageError as e:
            ctx = e.ctx or _parsing_context(e)
            usage_error(_git_message(e), command_usage(ctx) if ctx is not None else None)
        except click.ClickException as e:
            fail(e.format_message())
        except click.Abort:
            fail("interrupted", INTERRUPTED)
        sys.exit(status if isinstance(status, int) else 0)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        if args and self.get_command(ctx, args[0]) is None and not args[0].startswith("-"):
            prog = ctx.command_path
            sys.stderr.write(f"{prog}: '{args[0]}' is not a {prog} command. See '{prog} --help'.\n")
            sys.exit(1)
        return super().resolve_command(ctx, args)

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


main.add_command(repack_cmd)


CONFIGURED = "\0configured"  # --prune without a date: gc.pruneExpire decides, as in Git


@main.command("gc", context_settings=CONTEXT)
@click.argument("repo", required=False, type=click.Path(path_type=Path))
@click.option(
    "--auto",
    is_flag=True,
    help="Run only when packs roll up, loose objects pass maintenance.geometric-repack.auto (gc.auto with "
    "packorder.strategy=full), or the layout has drifted past packorder.autoDrift.",
)
@click.option(
    "--full", is_flag=True, help="Repack everything into one ordered pack (default: only the small packs roll up)."
)
@click.option("--aggressive", is_flag=True, help="As --full, searching new deltas (gc.aggressiveWindow, ...Depth).")
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
@click.option("--max-cruft-size", metavar="SIZE", help="Split new cruft packs at SIZE (default: gc.maxCruftSize).")
@quiet_option
@verbose_option
@click.option("--json", "as_json", is_flag=True, help="Print what ran (and, with --auto, why) as JSON.")
@click.pass_context
@guarded
def gc_cmd(
    ctx: click.Context,
    repo: Path | None,
    auto: bool,
    full: bool,
    aggressive: bool,
    prune: str,
    no_prune: bool,
    cruft: bool,
    force: bool,
    order: str | None,
    verify: str | None,
    max_cruft_size: str | None,
    quiet: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Git's maintenance (pack-refs, reflog expire, prune, worktree prune, rerere gc,
    commit-graph), with packorder's repack in place of git repack, so that it keeps the order:
    the small packs roll up in order beside the ordered pack, and everything is repacked into
    one ordered pack when the progression collapses or the layout drifts."""
    from packorder.repacking import maintenance

    if no_prune and prune != CONFIGURED:
        raise click.UsageError("--prune and --no-prune cannot be used together", ctx)
    show = progress_of(quiet, verbose)
    notices = Notes(verbose=verbose, quiet=quiet, held=False)  # Git's "Auto packing ...": with -v
    with progress_mod.closing_line(show):
        result = maintenance.gc(
            repo,
            auto=auto,
            full=full,
            aggressive=aggressive,
            prune=None if no_prune else (maintenance.CONFIGURED if prune == CONFIGURED else prune),
            force=force,
            quiet=quiet,
            order=order,
            verify=verify,
            max_cruft_size=parse_size(max_cruft_size),
            progress=show,
            warn=warn,
            log=notices,
        )
    if as_json:
        print_json(result, "gc")
    elif not quiet and result.ran:
        click.echo(f"ran: {', '.join(result.steps)}")
        if result.repack is not None:
            click.echo("\n".join(repack_summary(result.repack)))


@main.command("sample", context_settings=CONTEXT)
@click.argument("directory", type=click.Path(path_type=Path))
@click.option(
    "--shape",
    type=click.Choice(["history", "monorepo"]),
    default="history",
    show_default=True,
    help="history: branches, tags, renames; monorepo: thousands of packages' package.json and changelogs.",
)
@click.option(
    "--commits", type=int, default=None, metavar="N", help="Commits to generate (default 6000; monorepo: 401)."
)
@click.option("--seed", type=int, default=1, show_default=True, help="Another seed, another history.")
@quiet_option
@verbose_option
@click.option("--json", "as_json", is_flag=True, help="Print what was made as JSON.")
@click.pass_context
@guarded
def sample_cmd(
    ctx: click.Context,
    directory: Path,
    shape: str,
    commits: int | None,
    seed: int,
    quiet: bool,
    verbose: bool,
    as_json: bool,
) -> None:
    """Create a bare repository in DIRECTORY to try packorder on: thousands of generated
    commits, branches, release tags and renames in a pack of about 34 MB; or, with --shape
    monorepo, 2,000 packages' package.json and changelogs changed by releases, where Git's
    version-1 name hash fails the delta search (--path-walk does not). The same seed gives
    the same repository on every machine."""
    from packorder.experiments.monorepo_sample import DEFAULT_RELEASES, monorepo
    from packorder.experiments.sample_repository import DEFAULT_COMMITS, sample

    show = progress_of(quiet, verbose)
    with progress_mod.closing_line(show):
        if shape == "monorepo":
            releases = DEFAULT_RELEASES if commits is None else commits - 1
            result = monorepo(directory, releases=releases, seed=seed, progress=show)
        else:
            result = sample(
                directory, commits=DEFAULT_COMMITS if commits is None else commits, seed=seed, progress=show
            )
    if as_json:
        print_json(result, "sample")
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
