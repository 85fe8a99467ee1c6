"""packorder and Git run as a user runs them, in the tests' Git environment (fixed dates and
authors, no user configuration)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.gitrepo import git, git_env


def run_cli(*args: str, input: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "packorder", *args], input=input, capture_output=True, cwd=cwd, env=git_env()
    )


def bare_repo(path: Path) -> Path:
    git(None, "init", "-q", "--bare", str(path))
    return path
