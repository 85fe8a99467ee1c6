"""The manual page `git packorder --help` opens: Git turns `git packorder --help` into
`man git-packorder`, so without a page it only says "No manual entry". The page holds every
command's own help (the fleet's subcommands too), rendered as roff, and what no `--help`
says: the exit statuses, the configuration keys (from cli/config_keys.py, which
docs/configuration.md is written from as well) and examples. It is generated into
`packorder.data/data/share/man/man1/` (installed with the package under the environment's
`share/man`, where `man` looks for the commands on PATH) by `python -m
packorder.cli.manpage`, which writes docs/configuration.md too; tests/cli/test_manpage.py
checks that both are current."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from packorder.cli import config_keys

ROOT = Path(__file__).resolve().parent.parent.parent
MAN_DIR = ROOT / "packorder.data" / "data" / "share" / "man" / "man1"
PAGES = ("git-packorder.1", "packorder.1")
CONFIGURATION_DOC = ROOT / "docs" / "configuration.md"

# (status, when): what every command exits with (cli/base.py, cli/main.py, cli/fleet.py).
EXIT_STATUSES = (
    ("0", "Success; also `gc --auto` with nothing to do."),
    (
        "1",
        "`packorder` alone (its usage, on stdout) or an unknown command, as `git` alone and `git bogus`; "
        "`fleet status` and `fleet repack` when a repository failed (the others are reported; "
        "`fleet report` lists failures and exits 0); `index-pack --check-self-contained-and-connected` "
        "when the pack needs objects outside it, as Git.",
    ),
    (
        "128",
        "A fatal error: one `fatal:` line on stderr naming the file (and, for a broken pack, the "
        "offset), no partial output left behind: a missing path, a corrupt pack, a repository "
        "refused, a fleet command without Dask.",
    ),
    (
        "129",
        "A bad command line (an unknown option, a missing value, options that exclude each other): "
        "`error: ...` and the command's usage, as Git; also SIGHUP (a closed terminal), which stops "
        "a command as Ctrl-C does, with `fatal: terminated`.",
    ),
    (
        "130",
        "Interrupted (Ctrl-C, SIGINT): `fatal: interrupted`, after the cleanup (temporaries removed, lock released).",
    ),
    ("141", "The reader of standard output went away (SIGPIPE), as Git."),
    ("143", "Terminated (SIGTERM: `timeout`, `systemctl stop`): `fatal: terminated`, after the same cleanup."),
)

# (what, command lines): each run on `packorder sample DIR --commits 200` (a bare repository).
EXAMPLES = (
    ("A repository to try packorder on (bare, generated, the same on every machine):", ["packorder sample sample.git"]),
    ("Repack the current repository into one pack in the history order:", ["git packorder repack --order history"]),
    (
        "Git's spellings work as in git repack: everything into one pack, old packs removed, a bitmap:",
        ["packorder repack -adb"],
    ),
    (
        "Roll up only the small packs in order, beside the ordered pack, with a multi-pack-index:",
        ["packorder repack -d --geometric=2 --write-midx"],
    ),
    (
        "Git's maintenance with packorder's repack, from cron (nothing happens unless it is due):",
        ["0 3 * * * cd /srv/git/project.git && packorder gc --auto --quiet"],
    ),
    (
        "packorder's index-pack in place of Git's for pushes: a Git exec path whose `git` hands "
        "index-pack to packorder, named by GIT_EXEC_PATH in receive-pack's environment (here a push "
        "to a local path, whose receive-pack inherits the pusher's); with receive.unpackLimit=1 every "
        "push is indexed rather than unpacked. docs/index-pack.md has more:",
        [
            "python3 -m packorder.indexer.route --make /usr/local/lib/packorder-git",
            "git -C /srv/git/project.git config receive.unpackLimit 1",
            "GIT_EXEC_PATH=/usr/local/lib/packorder-git git push /srv/git/project.git main",
        ],
    ),
    ("How far `git log -- src` seeks in the pack:", ["packorder seekstats -w log-path:src"]),
    (
        "Compare orders on copies of a repository, every workload on each; the report goes to report/:",
        ["packorder experiment sample.git --orders recency,history,paths -o report"],
    ),
    (
        "Triage every repository under a directory, repack those worth it on a local Dask cluster, sum it up:",
        [
            "packorder fleet status /srv/git",
            "packorder fleet repack /srv/git --results run.jsonl",
            "packorder fleet report run.jsonl",
        ],
    ),
)


def _escape(text: str) -> str:
    # roff: a backslash starts an escape, a line starting with . or ' is a request.
    lines = []
    for line in text.replace("\\", "\\e").splitlines():
        lines.append("\\&" + line if line.startswith((".", "'")) else line)
    return "\n".join(lines)


def _prose(text: str) -> str:
    """One paragraph of roff from text with `code` spans (set in bold)."""
    text = _escape(text).replace("-", "\\-")
    return re.sub(r"`([^`]*)`", r"\\fB\1\\fR", text)


def _index_pack_help() -> str:
    """index-pack's help (cli/plain_parser.py), which wraps to $COLUMNS: the page must not depend
    on the terminal."""
    from packorder.cli.index_pack import parser

    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        return parser("packorder index-pack").format_help()
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns


def _help_texts() -> list[tuple[str, str]]:
    """(command, its --help) for the group and every command and subcommand (`fleet status`),
    as a terminal 80 wide shows it."""
    import click

    from packorder.cli.main import main

    def context(command: click.Command, name: str, parent: click.Context | None = None) -> click.Context:
        settings = {**command.context_settings, "terminal_width": 80, "max_content_width": 80}
        return click.Context(command, info_name=name, parent=parent, **settings)

    def walk(group: click.Group, ctx: click.Context, prefix: str) -> None:
        for name in sorted(group.commands):
            if prefix + name == "index-pack":
                out.append((name, _index_pack_help()))
                continue
            command = group.commands[name]
            with context(command, name, ctx) as sub:
                out.append((prefix + name, command.get_help(sub)))
                if isinstance(command, click.Group):
                    walk(command, sub, f"{prefix}{name} ")

    out: list[tuple[str, str]] = []
    with context(main, "packorder") as ctx:
        out.append(("packorder", main.get_help(ctx)))
        walk(main, ctx, "")
    return out


def _configuration() -> list[str]:
    lines = [
        ".SH CONFIGURATION",
        _prose(
            "Read from Git's configuration of the repository. An option wins over a key, a "
            "`packorder.*` key over the Git key it falls back to. docs/configuration.md has the same list."
        ),
        ".SS packorder's keys",
    ]
    for key in config_keys.OWN_KEYS:
        fallback = f" Falls back to {key.falls_back}." if key.falls_back else ""
        lines += [
            ".TP",
            _prose(f"`{key.name}`"),
            _prose(f"{key.does} Values: {key.values}. Default: {key.default}.{fallback}"),
        ]
    lines.append(".SS Git's keys packorder follows")
    for git_key in config_keys.GIT_KEYS:
        lines += [".TP", _prose(f"`{git_key.name}`"), _prose(git_key.use)]
    return lines


def _examples() -> list[str]:
    lines = [".SH EXAMPLES"]
    for what, commands in EXAMPLES:
        lines += [
            ".PP",
            _prose(what),
            ".PP",
            ".RS 4",
            ".nf",
            *(_escape(c).replace("-", "\\-") for c in commands),
            ".fi",
            ".RE",
        ]
    return lines


def render(page: str) -> str:
    """The roff source of `page` (git-packorder.1 or packorder.1)."""
    from importlib.metadata import version

    title = page.removesuffix(".1")
    texts = _help_texts()
    lines = [
        f'.TH {title.upper()} 1 "" "packorder {version("packorder")}" "packorder manual"',
        ".SH NAME",
        f"{title} \\- write Git packs in an order chosen for locality, index packs fast, measure seeks",
        ".SH SYNOPSIS",
        f".B {'git packorder' if title == 'git-packorder' else 'packorder'}",
        ".I COMMAND [OPTIONS] [ARGS]",
        ".SH DESCRIPTION",
        "Every command is also run as \\fBgit packorder COMMAND\\fR. OPTIONS and COMMANDS are "
        "each command's own \\fB\\-\\-help\\fR.",
        ".SH OPTIONS",
        ".nf",
        _escape(texts[0][1]),
        ".fi",
        ".SH COMMANDS",
    ]
    for command, text in texts[1:]:
        lines += [f'.SS "packorder {command}"', ".nf", _escape(text), ".fi"]
    lines.append(".SH EXIT STATUS")
    for status, when in EXIT_STATUSES:
        lines += [".TP", f"\\fB{status}\\fR", _prose(when)]
    lines += _configuration()
    lines += _examples()
    lines += [".SH SEE ALSO", "\\fBgit\\-repack\\fR(1), \\fBgit\\-gc\\fR(1), \\fBgit\\-index\\-pack\\fR(1)"]
    return "\n".join(lines) + "\n"


def write(directory: Path = MAN_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for page in PAGES:
        path = directory / page
        path.write_text(render(page))
        written.append(path)
    return written


def write_configuration(path: Path = CONFIGURATION_DOC) -> Path:
    """docs/configuration.md, from the table the page's CONFIGURATION comes from."""
    path.write_text(config_keys.markdown())
    return path


def _main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m packorder.cli.manpage",
        description="Write the manual pages and docs/configuration.md from the commands' help.",
    )
    parser.add_argument("directory", nargs="?", type=Path, help="write only the pages, into this directory")
    args = parser.parse_args()
    written = write(args.directory) if args.directory else [*write(), write_configuration()]
    for path in written:
        print(path)


if __name__ == "__main__":
    _main()
