"""The documentation as a reader meets it: every relative link leads to a file (and heading)
that exists, no words about how the work was organised, and a README short enough to be a
first screen that holds the test command CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CHANGELOG = ROOT / "CHANGELOG.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
MARKDOWN = [README, CHANGELOG, *DOCS]

# The line .ci/run executes; the README shows it in a code block.
TEST_COMMAND = "python3 -m pip install -e '.[test]' && python3 -m pytest -q"
README_MAX_LINES = 200

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto:, ...


def _without_code(text: str) -> str:
    """The text with fenced blocks and code spans blanked (their lines kept, for numbers)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return CODE_SPAN.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _anchors(markdown: Path) -> set[str]:
    """The heading anchors GitHub makes: lowercased, punctuation but `-` and `_` dropped,
    each space a `-`; a repeated heading gets `-1`, `-2`..."""
    seen: dict[str, int] = {}
    anchors = set()
    for line in FENCE.sub("", markdown.read_text()).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _broken_links(markdown: Path) -> list[str]:
    broken = []
    text = _without_code(markdown.read_text())
    for number, line in enumerate(text.splitlines(), 1):
        for target in LINK.findall(line):
            if EXTERNAL.match(target):
                continue
            path, _, anchor = target.partition("#")
            where = f"{markdown.relative_to(ROOT)}:{number}: {target}"
            file = (markdown.parent / path).resolve() if path else markdown
            if not file.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{where} (no such heading)")
    return broken


def test_every_relative_link_points_to_a_file_that_exists() -> None:
    assert CHANGELOG.exists()
    broken = [b for markdown in MARKDOWN for b in _broken_links(markdown)]
    assert broken == []


# Words that tell how the work was organised rather than what is true: "st op 12",
# "iss ue 19", "sess ion". Built from pieces so that this file does not match itself.
PROCESS_WORDS = re.compile(r"\b(?:" + "st" + r"op\s+\d+|" + "iss" + r"ue\s+\d+|" + "sess" + r"ions?)\b", re.IGNORECASE)

# Where the word is the name of something else, it is allowed; each use is listed here.
LEGITIMATE = [
    # pytest's fixture scope: one fixture for the whole test run.
    re.compile(r"""scope=["']""" + "sess" + r"""ion["']"""),
    # systemd-logind's cgroup of a login, as /proc/self/cgroup names it (tests of --cold-iops).
    re.compile(r"\b" + "sess" + r"ion-\d+\.scope\b"),
]


def _sources() -> list[Path]:
    return [
        *MARKDOWN,
        *sorted((ROOT / "packorder").rglob("*.py")),
        *sorted((ROOT / "tests").rglob("*.py")),
        *sorted((ROOT / "scripts").glob("*.py")),
        *sorted((ROOT / "native" / "src").rglob("*.rs")),
    ]


def test_no_words_about_how_the_work_was_organised() -> None:
    found = []
    for source in _sources():
        for number, line in enumerate(source.read_text().splitlines(), 1):
            for allowed in LEGITIMATE:
                line = allowed.sub("", line)
            for word in PROCESS_WORDS.findall(line):
                found.append(f"{source.relative_to(ROOT)}:{number}: {word}")
    assert found == []


def test_the_readme_is_a_first_screen_with_the_test_command_ci_runs() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    blocks = [block.group(0).splitlines() for block in FENCE.finditer(text)]
    assert any(TEST_COMMAND in block for block in blocks)  # alone on its line, in a code block
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert TEST_COMMAND in ci
