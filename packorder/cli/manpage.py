"""The manual page `git packorder --help` opens: Git turns `git packorder --help` into
`man git-packorder`, so without a page it only says "No manual entry". The page is the
commands' own help, rendered as roff, so it cannot say anything `--help` does not; it is
generated into `packorder.data/data/share/man/man1/` (installed with the package under the
environment's `share/man`, where `man` looks for the commands on PATH) by
`python -m packorder.cli.manpage`, and a test checks that the committed page is current."""

from __future__ import annotations

import os
import sys
from pathlib import Path

MAN_DIR = Path(__file__).resolve().parent.parent.parent / "packorder.data" / "data" / "share" / "man" / "man1"
PAGES = ("git-packorder.1", "packorder.1")


def _escape(text: str) -> str:
    # roff: a backslash starts an escape, a line starting with . or ' is a request.
    lines = []
    for line in text.replace("\\", "\\e").splitlines():
        lines.append("\\&" + line if line.startswith((".", "'")) else line)
    return "\n".join(lines)


def _help_texts() -> list[tuple[str, str]]:
    """(command, its --help) for the group and every command, as a terminal 80 wide shows it."""
    import click

    from packorder.cli.index_pack import parser
    from packorder.cli.main import main

    def context(command: click.Command, name: str, parent: click.Context | None = None) -> click.Context:
        settings = {**command.context_settings, "terminal_width": 80, "max_content_width": 80}
        return click.Context(command, info_name=name, parent=parent, **settings)

    out = []
    with context(main, "packorder") as ctx:
        out.append(("packorder", main.get_help(ctx)))
        for name in sorted(main.commands):
            if name == "index-pack":
                # index-pack's help (cli/plain_parser.py) wraps to $COLUMNS: the page must not depend on the terminal.
                columns = os.environ.get("COLUMNS")
                os.environ["COLUMNS"] = "80"
                try:
                    out.append((name, parser("packorder index-pack").format_help()))
                finally:
                    if columns is None:
                        del os.environ["COLUMNS"]
                    else:
                        os.environ["COLUMNS"] = columns
                continue
            command = main.commands[name]
            with context(command, name, ctx) as sub:
                out.append((name, command.get_help(sub)))
    return out


def render(page: str) -> str:
    """The roff source of `page` (git-packorder.1 or packorder.1)."""
    from importlib.metadata import version

    title = page.removesuffix(".1")
    lines = [
        f'.TH {title.upper()} 1 "" "packorder {version("packorder")}" "packorder manual"',
        ".SH NAME",
        f"{title} \\- write Git packs in an order chosen for locality, index packs fast, measure seeks",
        ".SH SYNOPSIS",
        f".B {'git packorder' if title == 'git-packorder' else 'packorder'}",
        ".I COMMAND [OPTIONS] [ARGS]",
        ".SH DESCRIPTION",
        "Every command is also run as \\fBgit packorder COMMAND\\fR. What follows is each command's "
        "own \\fB\\-\\-help\\fR.",
    ]
    for command, text in _help_texts():
        lines += [".SH " + ("COMMANDS" if command == "packorder" else command.upper()), ".nf", _escape(text), ".fi"]
    return "\n".join(lines) + "\n"


def write(directory: Path = MAN_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for page in PAGES:
        path = directory / page
        path.write_text(render(page))
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else MAN_DIR):
        print(path)
