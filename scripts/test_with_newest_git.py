#!/usr/bin/env python3
"""Run packorder's test suite with another Git first on PATH: the newest, built from a
git/git snapshot, or any Git already built or installed.

The suite compares packorder with the `git` it finds on PATH, and follows that Git where its
behaviour changed (index-pack's input buffer, its words, its second pass), so it must pass
with Git 2.47 and with the newest Git alike. This script gives it the newest:

    scripts/test_with_newest_git.py --snapshot GIT_DIR [--source DIR] [--jobs N] [-- PYTEST ARGS]
    scripts/test_with_newest_git.py --source DIR [--jobs N] [-- PYTEST ARGS]
    scripts/test_with_newest_git.py --git PATH [-- PYTEST ARGS]

--snapshot takes a Git repository of git/git (a bare mirror will do) and writes its HEAD's
tree to --source (default: a directory named after the commit under the system's temporary
directory, kept for the next run); --source alone takes a Git source tree. Either is built
there if it is not built yet, as scripts/git_index_pack_suite.py builds one (its build
function: `make` without curl, gettext, Tcl/Tk or Python), and its bin-wrappers/git is put
first on PATH. --git takes a `git` to use as it is. The suite then runs from the repository's
root (`python3 -m pytest -q -p no:randomly`, then the arguments after `--`), and the last
line printed says when, with which Git, and pytest's counts, as docs/benchmarks.md records
them. The exit status is pytest's.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from git_index_pack_suite import build

ROOT = Path(__file__).resolve().parent.parent
COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


def export_snapshot(git_dir: Path, source: Path | None) -> Path:
    """HEAD's tree of the git/git repository `git_dir`, written to `source` unless there."""
    head = subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    source = source or Path(tempfile.gettempdir()) / f"packorder-git-{head[:12]}"
    if not (source / "Makefile").exists():
        source.mkdir(parents=True, exist_ok=True)
        print(f"writing git/git {head[:12]} to {source} ...", file=sys.stderr)
        archive = subprocess.Popen(["git", "--git-dir", str(git_dir), "archive", "HEAD"], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(source)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise SystemExit(f"fatal: git archive of {git_dir} failed")
    return source


def git_on_path(git: Path, where: Path) -> Path:
    """A directory holding only `git`, a link to `git`, to put first on PATH."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "git").symlink_to(git.resolve())
    return where


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--snapshot", type=Path, help="a Git repository of git/git: its HEAD is built")
    which.add_argument("--git", type=Path, help="a built or installed git to use as it is")
    ap.add_argument("--source", type=Path, help="a Git source tree (built if not built; with --snapshot, written)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args, pytest_args = ap.parse_known_args()
    if pytest_args[:1] == ["--"]:
        pytest_args = pytest_args[1:]
    if (args.git is None) == (args.snapshot is None and args.source is None):
        ap.error("a Git to run: --snapshot, --source, or --git alone")
    with tempfile.TemporaryDirectory(prefix="packorder-newest-git-") as tmp:
        if args.git is not None:
            first = git_on_path(args.git, Path(tmp) / "bin")
        else:
            source = export_snapshot(args.snapshot, args.source) if args.snapshot else args.source.resolve()
            build(source, args.jobs)
            first = source / "bin-wrappers"
        env = {**os.environ, "PATH": f"{first}{os.pathsep}{os.environ.get('PATH', '')}"}
        version = subprocess.run(["git", "--version"], env=env, capture_output=True, text=True, check=True)
        print(f"{version.stdout.strip()} ({first / 'git'})", file=sys.stderr)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *pytest_args]
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, errors="replace")
        last = ""
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            if COUNTS.search(line):
                last = line
        status = proc.wait()
    counts = ", ".join(f"{n} {what}" for n, what in COUNTS.findall(last)) or "no counts"
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    print(f"{today}: {version.stdout.strip()}: {counts}")
    return status


if __name__ == "__main__":
    sys.exit(main())
