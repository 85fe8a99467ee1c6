#!/usr/bin/env python3
"""Run Git's own index-pack test scripts with packorder as index-pack, and report what passes.

Fetches nothing: it takes a Git source tree, builds it there if it is not built (`make`
without curl, gettext, Tcl/Tk or Python), and runs each script twice: once as Git ships it,
and once with packorder as index-pack. For the second run it makes a directory that stands in
for an installed Git (the suite's GIT_TEST_INSTALLED, also its exec path) with
packorder.indexer.route: every program of the build linked there, and a `git` that hands
`git [global options] index-pack ...` to `packorder index-pack` (this Python's packorder) and
everything else to the built git, so both the tests' own `git index-pack` and the ones
receive-pack and fetch-pack start from the exec path reach packorder. Each handed-over call is logged, and a
script whose run handed over none is reported as not tested rather than as passing.

    scripts/git_index_pack_suite.py GIT_SOURCE [--jobs 2] [--script t5300-pack-object.sh ...]
        [--verbose]

It prints, for each script, the tests passed with Git's index-pack and with ours, how many
index-packs went to packorder, and each test that fails with ours only (with --verbose,
their output too). It is a benchmark-like job, not part of .ci/run: it needs a Git source
tree and some minutes of building.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from packorder.indexer import route

SCRIPTS = (
    "t5300-pack-object.sh",
    "t5302-pack-index.sh",
    "t5309-pack-delta-cycles.sh",
    "t5313-pack-bounds-checks.sh",
    "t5325-reverse-index.sh",
)
BUILD = ("NO_CURL=1", "NO_GETTEXT=1", "NO_TCLTK=1", "NO_PYTHON=1")
RESULT = re.compile(r"^(ok|not ok) (\d+) - (.*?)( # TODO.*)?$")
SKIPPED = re.compile(r"^ok \d+ # skip (.*)$", re.IGNORECASE)


def build(source: Path, jobs: int) -> None:
    if (source / "git").exists() and (source / "bin-wrappers" / "git").exists():
        return
    print(f"building Git in {source} ...", file=sys.stderr)
    subprocess.run(["make", f"-j{jobs}", *BUILD], cwd=source, check=True, stdout=subprocess.DEVNULL)


def make_installed(source: Path, where: Path) -> Path:
    """A directory that stands in for an installed Git with packorder as index-pack."""
    # A dashed index-pack would run Git's builtin: the wrapper must see every one.
    return route.exec_path(where / "installed", real=source, skip=("git-index-pack",))


def run_script(
    source: Path, script: str, installed: Path | None, log: Path | None = None
) -> tuple[dict[int, tuple[bool, str]], str]:
    """{test number: (passed, title)} of the tests run (not those skipped for a missing
    prerequisite) and the script's output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    if installed is not None:
        env["GIT_TEST_INSTALLED"] = str(installed)
        env["GIT_TEST_EXEC_PATH"] = str(installed)
        # The suite clears GIT_* variables but not this one.
        env["PACKORDER_ROUTE_LOG"] = str(log)
    proc = subprocess.run(
        ["sh", script, "-v"], cwd=source / "t", env=env, capture_output=True, text=True, errors="replace"
    )
    results = {}
    for line in proc.stdout.splitlines():
        m = RESULT.match(line)
        if m:
            results[int(m.group(2))] = (m.group(1) == "ok", m.group(3))
    return results, proc.stdout + proc.stderr


def test_output(output: str, number: int) -> str:
    """The part of a -v run's output that belongs to test `number`."""
    lines = output.splitlines()
    end = next((i for i, line in enumerate(lines) if RESULT.match(line) and f" {number} - " in line), len(lines))
    start = max((i for i, line in enumerate(lines[:end]) if line.startswith("expecting success")), default=0)
    return "\n".join(lines[start : end + 1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path, help="a Git source tree")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--script", action="append", help="a script of t/ (default: the five index-pack ones)")
    ap.add_argument("--verbose", action="store_true", help="print the output of each test failing with ours")
    args = ap.parse_args()
    source = args.source.resolve()
    build(source, args.jobs)
    total_git = total_ours = total = 0
    with tempfile.TemporaryDirectory(prefix="packorder-suite-") as tmp:
        log = Path(tmp) / "handed-over.log"
        installed = make_installed(source, Path(tmp))
        for script in args.script or SCRIPTS:
            git_results, _ = run_script(source, script, None)
            log.write_text("")
            ours, output = run_script(source, script, installed, log)
            handed = len(log.read_text().splitlines())
            skipped = [m.group(1) for m in map(SKIPPED.match, output.splitlines()) if m]
            passed_git = sum(ok for ok, _ in git_results.values())
            passed_ours = sum(ok for ok, _ in ours.values())
            if handed == 0:
                print(f"{script}: no index-pack reached packorder: not tested")
                continue
            print(
                f"{script}: {passed_ours}/{len(ours)} pass with packorder ({handed} index-packs handed over), "
                f"{passed_git}/{len(git_results)} with Git's index-pack"
            )
            for title in skipped:
                print(f"  skipped by the suite itself: {title}")
            for number, (ok, title) in sorted(ours.items()):
                if not ok and git_results.get(number, (False, ""))[0]:
                    print(f"  fails with packorder only: {number} - {title}")
                    if args.verbose:
                        print("    " + test_output(output, number).replace("\n", "\n    "))
            total_git += passed_git
            total_ours += passed_ours
            total += len(ours)
    print(f"all: {total_ours}/{total} pass with packorder, {total_git} with Git's index-pack")


if __name__ == "__main__":
    main()
