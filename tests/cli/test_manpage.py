"""The manual page (packorder/cli/manpage.py) and docs/configuration.md: the page has the
sections a manual page has, names every command and fleet subcommand, lists every exit
status; every `packorder.*` key the code reads, and every Git key it reads by name, is in
the table both are written from (packorder/cli/config_keys.py); and the committed files
are a fresh generation."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from packorder.cli import config_keys, manpage
from packorder.cli.main import main

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "packorder"
SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "EXIT STATUS", "CONFIGURATION", "EXAMPLES"]
# Where the table itself is, and the generator that names the pages' folder, packorder.data.
TABLE_FILES = {PACKAGE / "cli" / "config_keys.py", PACKAGE / "cli" / "manpage.py"}


def _sections(page: str) -> dict[str, str]:
    """Each .SH section's roff source, by its heading."""
    parts = re.split(r"^\.SH (.+)$", page, flags=re.MULTILINE)
    return {name.strip('"'): body for name, body in zip(parts[1::2], parts[2::2], strict=True)}


@pytest.fixture(scope="module", params=manpage.PAGES)
def page(request: pytest.FixtureRequest) -> str:
    return manpage.render(request.param)


def _sources() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if p not in TABLE_FILES]


def _own_keys_read() -> set[str]:
    """Every `packorder.*` key the code names as a string of its own (what config.get and the
    fallback helpers are given), in double quotes as ruff formats every string; a module's name
    has two dots (`"packorder.seek.git_args"`), or is quoted inside a message (`'packorder.seek'`)."""
    pattern = re.compile(r'"(packorder\.[A-Za-z]+)"')
    return {name for path in _sources() for name in pattern.findall(path.read_text())}


def test_the_page_has_every_section(page: str) -> None:
    headings = list(_sections(page))
    assert [h for h in headings if h in SECTIONS] == SECTIONS


def test_the_page_names_every_command_and_fleet_subcommand(page: str) -> None:
    fleet = main.commands["fleet"]
    assert isinstance(fleet, click.Group)
    names = [*main.commands, *(f"fleet {name}" for name in fleet.commands)]
    assert {"fleet status", "fleet repack", "fleet report"} <= set(names)
    commands = _sections(page)["COMMANDS"]
    missing = [name for name in names if f'.SS "packorder {name}"' not in commands]
    assert missing == []
    # Each command's section holds its own usage line.
    assert "Usage: packorder fleet repack [OPTIONS] [PATHS]..." in commands


def test_the_page_lists_the_exit_statuses(page: str) -> None:
    statuses = re.findall(r"^\.TP\n\\fB(\d+)\\fR$", _sections(page)["EXIT STATUS"], flags=re.MULTILINE)
    assert {"0", "1", "128", "129", "130", "143"} <= set(statuses)


def test_every_packorder_key_the_code_reads_is_documented(page: str) -> None:
    read = _own_keys_read()
    # The grep finds what it should: keys of repack, the walk and gc --auto.
    assert {"packorder.order", "packorder.window", "packorder.walk", "packorder.autoDrift"} <= read
    assert read == {key.name for key in config_keys.OWN_KEYS}, "packorder/cli/config_keys.py's OWN_KEYS"
    configuration = _sections(page)["CONFIGURATION"].replace("\\-", "-")
    doc = manpage.CONFIGURATION_DOC.read_text()
    assert [k for k in sorted(read) if f"\\fB{k}\\fR" not in configuration] == []
    assert [k for k in sorted(read) if f"### `{k}`" not in doc] == []


def test_every_git_key_the_code_reads_by_name_is_documented() -> None:
    pattern = re.compile(r'\.get(?:_int|_bool|_all)?\(\s*"([A-Za-z]+\.[\w.-]+)"')
    read = {key for path in _sources() for key in pattern.findall(path.read_text())}
    read = {key for key in read if not key.startswith("packorder.")}
    assert {"pack.indexVersion", "gc.auto", "core.multiPackIndex"} <= read
    documented = {key.name for key in config_keys.GIT_KEYS}
    assert sorted(read - documented) == []


def test_the_committed_pages_and_configuration_doc_are_current() -> None:
    for name in manpage.PAGES:
        assert (manpage.MAN_DIR / name).read_text() == manpage.render(name), (
            f"{name} is stale: run `python -m packorder.cli.manpage`"
        )
    assert manpage.CONFIGURATION_DOC.read_text() == config_keys.markdown(), (
        "docs/configuration.md is stale: run `python -m packorder.cli.manpage`"
    )
