"""An argparse parser that reads as the click commands do: its help and usage laid out as
click lays out theirs, and a bad command line answered in Git's words (`error: unknown
option `bogus'`, the usage, 129), so that `index-pack`, parsed without click for its memory
(cli/index_pack.py), answers as every other command. Imports nothing of click."""

from __future__ import annotations

import argparse
import shutil
import textwrap
from typing import NoReturn

from packorder.cli.base import option_needs_value, option_takes_no_value, unknown_option, usage_error

# click's layout: options' names in a column of at most 30 characters, then their help.
NAMES_MAX, SPACING, MAX_WIDTH = 30, 2, 100


class PlainParser(argparse.ArgumentParser):
    """`optional_value`: options whose value is optional (`--keep[=MSG]`), shown so."""

    def __init__(self, *args: object, optional_value: tuple[str, ...] = (), **kwargs: object) -> None:
        super().__init__(*args, add_help=False, **kwargs)  # type: ignore[arg-type]
        self.optional_value = optional_value
        self.add_argument("-h", "--help", action="help", help="Show this message and exit.")

    def error(self, message: str) -> NoReturn:
        usage_error(self._git_message(message), self.usage_text())

    def _git_message(self, message: str) -> str:
        """argparse's message in the words Git (unknown options, missing values) or click
        (the rest) uses."""
        if message.startswith("unrecognized arguments: "):
            first = message.removeprefix("unrecognized arguments: ").split()[0]
            return unknown_option(first) if first.startswith("-") else f"Got unexpected extra argument ({first})"
        if message.startswith("argument "):
            names, _, why = message.removeprefix("argument ").partition(": ")
            name = names.split("/")[0]
            if why.startswith("expected one argument"):
                return option_needs_value(name)
            if why.startswith("ignored explicit argument"):
                return option_takes_no_value(name)
            return f"Invalid value for '{names}': {why}"
        return message

    def format_usage(self) -> str:
        positionals = [a.metavar or a.dest for a in self._actions if not a.option_strings]
        words = ["Usage:", self.prog, "[OPTIONS]", *(f"[{p}]" for p in positionals)]
        return " ".join(str(w) for w in words) + "\n"

    def format_help(self) -> str:
        width = max(min(shutil.get_terminal_size().columns, MAX_WIDTH) - 2, 50)
        description = textwrap.fill(self.description or "", width - 2, initial_indent="  ", subsequent_indent="  ")
        return f"{self.format_usage()}\n{description}\n\n{self._options(width)}"

    def usage_text(self) -> str:
        """What Git prints under a usage error: the usage and the options."""
        width = max(min(shutil.get_terminal_size().columns, MAX_WIDTH) - 2, 50)
        return "usage:" + self.format_usage().removeprefix("Usage:") + "\n" + self._options(width)

    def _options(self, width: int) -> str:
        rows = [(self._names(a), a.help or "") for a in self._actions if a.option_strings]
        column = min(max(len(n) for n, _ in rows), NAMES_MAX) + SPACING
        lines = ["Options:"]
        for names, text in rows:
            wrapped = textwrap.wrap(text, max(width - column - 2, 10)) or [""]
            if len(names) <= column - SPACING:
                lines.append(f"  {names:<{column}}{wrapped[0]}".rstrip())
            else:
                lines += [f"  {names}", f"  {'':<{column}}{wrapped[0]}".rstrip()]
            lines += [f"  {'':<{column}}{rest}" for rest in wrapped[1:]]
        return "\n".join(lines) + "\n"

    def _names(self, action: argparse.Action) -> str:
        if isinstance(action, argparse.BooleanOptionalAction):
            return " / ".join(action.option_strings)
        names = ", ".join(action.option_strings)
        if action.nargs == 0:
            return names
        metavar = action.metavar or action.dest.upper()
        if action.nargs == "?" or any(name in self.optional_value for name in action.option_strings):
            return f"{names}[={metavar}]"
        return f"{names} {metavar}"
