"""The tree as ruff (pinned in the test extra) holds it: pyproject.toml's rules, among them
a bound on each function's complexity and statements, and one formatting."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTS = ["packorder", "tests", "scripts"]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    program = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert program is not None, "ruff is in the test extra: pip install -e '.[test]'"
    return subprocess.run([program, *args, *PARTS], cwd=ROOT, capture_output=True, text=True)


def test_ruff_finds_nothing() -> None:
    proc = ruff("check", "--no-cache", "--output-format", "concise")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_tree_is_formatted() -> None:
    proc = ruff("format", "--check", "--no-cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
