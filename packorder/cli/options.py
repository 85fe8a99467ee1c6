"""The click options the repository commands share (`repack`, `gc`, and the others of
cli/main.py): quiet and verbose, the progress line they choose, the list of orders."""

from __future__ import annotations

from typing import Any

import click

from packorder import progress as progress_mod
from packorder.cli.base import quiet_or_verbose
from packorder.orders.catalog import CATALOG

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# One line an order, below the options (`\b`: click keeps these lines as they are).
_NAME_WIDTH = max(map(len, CATALOG))
ORDERS_EPILOG = "\b\nOrders:\n" + "\n".join(f"  {name:<{_NAME_WIDTH}} {info.summary}" for name, info in CATALOG.items())

quiet_option = click.option("-q", "--quiet", "quiet", is_flag=True, help="Print nothing but warnings and errors.")
verbose_option = click.option(
    "-v", "--verbose", "verbose", is_flag=True, help="Show progress even when stderr is not a terminal."
)


class Subcommands(click.Group):
    """A command's subcommands (`fleet status|repack|report`): an unknown one is refused as
    Git refuses one, with the usage and status 129."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            raise click.UsageError(f"unknown subcommand: `{args[0]}'", ctx)
        return super().resolve_command(ctx, args)


def progress_of(quiet: bool, verbose: bool) -> progress_mod.ProgressCallback | None:
    """The progress line -q and -v ask for (refused together)."""
    quiet_or_verbose(quiet, verbose)
    return progress_mod.auto(quiet=quiet, force=verbose)
