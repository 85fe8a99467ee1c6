#!/usr/bin/env python3
"""Run Git's own index-pack test scripts with packorder as index-pack, and report what passes.

Fetches nothing: it takes a Git source tree, builds it there if it is not built (`make`
without curl, gettext, Tcl/Tk or Python), and runs each script twice, once as Git ships it
and once with the build's `bin-wrappers/git` sending every `git index-pack` the test runs to
`packorder index-pack` (this Python's packorder). Indexing that Git itself starts from its
exec path (receive-pack's and fetch-pack's) stays Git's, as in the suite's own setup. The
wrapper is restored however the run ends.

    scripts/git_index_pack_suite.py GIT_SOURCE [--jobs 2] [--script t5300-pack-object.sh ...]
        [--verbose]

It prints, for each script, the tests passed with Git's index-pack and with ours, and each
test that fails with ours only (with --verbose, their output too). It is a benchmark-like
job, not part of .ci/run: it needs a Git source tree and some minutes of building.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPTS = (
    "t5300-pack-object.sh",
    "t5302-pack-index.sh",
    "t5309-pack-delta-cycles.sh",
    "t5313-pack-bounds-checks.sh",
    "t5325-reverse-index.sh",
)
BUILD = ("NO_CURL=1", "NO_GETTEXT=1", "NO_TCLTK=1", "NO_PYTHON=1")
RESULT = re.compile(r"^(ok|not ok) (\d+) - (.*?)( # TODO.*| # SKIP.*)?$")


def build(source: Path, jobs: int) -> None:
    if (source / "git").exists() and (source / "bin-wrappers" / "git").exists():
        return
    print(f"building Git in {source} ...", file=sys.stderr)
    subprocess.run(["make", f"-j{jobs}", *BUILD], cwd=source, check=True, stdout=subprocess.DEVNULL)


def routed(original: str) -> str:
    """The suite's git wrapper with index-pack sent to packorder, after the wrapper has set up
    the environment and just before it runs Git."""
    lines = original.splitlines(keepends=True)
    last_exec = max(i for i, line in enumerate(lines) if line.lstrip().startswith("exec "))
    hook = (
        'if test "$1" = index-pack\n'
        "then\n"
        f'\tshift; exec "{sys.executable}" -m packorder index-pack "$@"\n'
        "fi\n"
    )
    return "".join(lines[:last_exec]) + hook + "".join(lines[last_exec:])


def run_script(source: Path, script: str) -> tuple[dict[int, tuple[bool, str]], str]:
    """{test number: (passed, title)} and the script's output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(
        ["sh", script, "-v"], cwd=source / "t", env=env, capture_output=True, text=True, errors="replace"
    )
    results = {}
    for line in proc.stdout.splitlines():
        m = RESULT.match(line)
        if m and not (m.group(4) or "").startswith(" # SKIP"):
            results[int(m.group(2))] = (m.group(1) == "ok", m.group(3))
    return results, proc.stdout + proc.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path, help="a Git source tree")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--script", action="append", help="a script of t/ (default: the five index-pack ones)")
    ap.add_argument("--verbose", action="store_true", help="print the output of each test failing with ours")
    args = ap.parse_args()
    source = args.source.resolve()
    build(source, args.jobs)
    wrapper = source / "bin-wrappers" / "git"
    original = wrapper.read_text()
    print("| script | with Git's index-pack | with packorder's |")
    print("|---|---|---|")
    failing: list[tuple[str, int, str]] = []
    outputs = {}
    for script in args.script or SCRIPTS:
        theirs, _ = run_script(source, script)
        try:
            wrapper.write_text(routed(original))
            ours, out = run_script(source, script)
        finally:
            wrapper.write_text(original)
        outputs[script] = out
        passed = sum(ok for ok, _ in ours.values())
        print(f"| {script} | {sum(ok for ok, _ in theirs.values())} of {len(theirs)} | {passed} of {len(ours)} |")
        failing += [(script, n, title) for n, (ok, title) in ours.items() if not ok and theirs.get(n, (False,))[0]]
    for script, n, title in failing:
        print(f"fails with packorder only: {script} {n}: {title}")
        if args.verbose:
            out = outputs[script]
            start = out.find(f"expecting success of {script[1:5]}.{n} ")
            print(out[start : out.find(f"not ok {n} - ", start)] if start >= 0 else "(no output found)")


if __name__ == "__main__":
    main()
