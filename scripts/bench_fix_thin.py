#!/usr/bin/env python3
"""Benchmark `packorder index-pack --stdin --fix-thin` against `git index-pack` on the same
thin pack, received into copies of the same repository (the one that has the bases).

Each round copies BASE_REPO once per tool (not timed) and runs the tools in turn, a
different one first each round; we report the median wall time and peak RSS of each, the
ratio to Git's, how many bases were appended, and check that every tool's pack holds the
same objects in the same order as Git's (the appended bases' deflate bytes may differ:
zlib's output is not Git's to fix).

    scripts/bench_fix_thin.py THIN.pack BASE_REPO [--runs 5] [--packorder NAME=COMMAND ...]

A thin pack: `git pack-objects --thin --revs --stdout` given `NEW` and `^OLD`; BASE_REPO holds
OLD's objects (`git pack-objects --revs --stdout` given `OLD`, indexed into a bare one).
`--packorder before=/other/venv/bin/packorder` compares another build.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench_repack import timed


def run_one(command: list[str], thin: Path, repo: Path) -> tuple[float, int]:
    with thin.open("rb") as stdin:
        seconds, _, peak = timed(command, cwd=repo, stdin=stdin)
    return seconds, peak


def new_pack(repo: Path, before: set[str]) -> Path:
    (pack,) = [p for p in (repo / "objects" / "pack").glob("*.pack") if p.name not in before]
    return pack


def object_order(git: str, pack: Path) -> str:
    """A digest of the pack's object ids in pack order. Worked out by a shell pipeline: the
    peak RSS of a child counts its parent's (copied at fork, or shared until exec), so this
    process stays small."""
    idx = shlex.quote(str(pack.with_suffix(".idx")))
    # Inside the repository: outside one, Git 2.47's show-index does not know the hash and crashes.
    script = f"{shlex.quote(git)} show-index < {idx} | sort -n | cut -d' ' -f2 | sha1sum"
    return subprocess.run(script, shell=True, capture_output=True, check=True, cwd=pack.parent, text=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("thin", type=Path)
    ap.add_argument("base", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--git", default="git")
    ap.add_argument("--packorder", action="append", default=[], metavar="NAME=COMMAND")
    args = ap.parse_args()

    tools = {"git": [args.git, "index-pack", "--stdin", "--fix-thin"]}
    for spec in args.packorder or ["packorder=packorder"]:
        name, _, command = spec.partition("=")
        tools[name] = [command, "index-pack", "--stdin", "--fix-thin"]
    before = {p.name for p in (args.base / "objects" / "pack").iterdir()}
    times: dict[str, list[float]] = {name: [] for name in tools}
    rss: dict[str, list[int]] = {name: [] for name in tools}
    orders: dict[str, str] = {}
    names = list(tools)
    with tempfile.TemporaryDirectory(prefix="bench-fix-thin-") as tmp:
        for round_ in range(args.runs):
            for k in range(len(names)):
                name = names[(k + round_) % len(names)]
                repo = Path(tmp) / name
                shutil.rmtree(repo, ignore_errors=True)
                shutil.copytree(args.base, repo, symlinks=True)
                seconds, peak = run_one(tools[name], args.thin, repo)
                times[name].append(seconds)
                rss[name].append(peak)
                if name not in orders:
                    orders[name] = object_order(args.git, new_pack(repo, before))
                shutil.rmtree(repo)
    reference = statistics.median(times["git"])
    print(f"{args.thin} ({args.thin.stat().st_size / 2**20:.1f} MiB) into copies of {args.base}, {args.runs} runs")
    print("| tool | median s | × git | peak RSS MiB | same objects, same order as git |")
    print("|---|---|---|---|---|")
    for name in names:
        median = statistics.median(times[name])
        same = "yes" if orders[name] == orders["git"] else "NO"
        print(f"| {name} | {median:.2f} | {median / reference:.2f} | {max(rss[name]) / 2**20:.1f} | {same} |")


if __name__ == "__main__":
    main()
