#!/usr/bin/env python3
"""Benchmark a geometric repack: `packorder repack -d -l --geometric=2 --write-midx` against
`git repack -d -l --geometric=2 --write-midx` on copies of one repository after N pushes,
each kept as a pack; and against a full `packorder repack` of the same copy.

The repository is first repacked into one pack (by packorder, or by Git with `--start
git`), then a clone pushes N times (PUSH commits each changing a few files; the server
keeps every push as a pack, receive.unpackLimit=1). Every run gets a fresh copy of that
state (the copy is not timed); the tools run alternately, each first in turn, after a sync.
Reports medians of wall time, their ratios, and peak RSS (the child's, by wait4).

    scripts/bench_geometric.py REPO --work DIR [--pushes 20] [--push-commits 1] [--runs 5]
        [--git PATH] [--packorder PATH] [--start packorder|git] [--bitmap] [--json FILE]

`--git` is the Git measured (the newest, built from the git/git snapshot); the pushes go
through the Git on PATH. `--packorder` is packorder's entry point (not a pyenv shim, whose
bash start costs 60 ms). `--bitmap` asks both for a multi-pack-index bitmap
(repack.writeBitmaps).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def run(args: list[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def timed(args: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of one run of `args`."""
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed: {err.strip()}")
    return elapsed, usage.ru_maxrss * 1024


def make_state(repo: Path, work: Path, args: argparse.Namespace) -> Path:
    state = work / "state.git"
    if state.exists():
        shutil.rmtree(state)
    run(["git", "clone", "-q", "--bare", "--no-local", str(repo), str(state)])
    if args.start == "packorder":
        run([args.packorder, "repack", "-q", str(state)])
    else:
        run(["git", "-C", str(state), "repack", "-adq"])
    run(["git", "-C", str(state), "config", "receive.unpackLimit", "1"])
    run(["git", "-C", str(state), "config", "receive.autoGc", "false"])
    pusher = work / "pusher"
    if pusher.exists():
        shutil.rmtree(pusher)
    run(["git", "clone", "-q", str(state), str(pusher)])
    for key, value in (("user.name", "Ada"), ("user.email", "ada@example.com"), ("gc.auto", "0")):
        run(["git", "-C", str(pusher), "config", key, value])
    files = [f for f in run(["git", "-C", str(pusher), "ls-files"]).splitlines() if f.endswith((".c", ".h", ".txt"))]
    n = 0
    for push in range(args.pushes):
        for _ in range(args.push_commits):
            for k in range(4):
                path = pusher / files[(n * 7919 + k * 104729) % len(files)]
                with open(path, "a") as f:
                    f.write(f"/* push {push}, change {n}.{k} */\n")
            run(["git", "-C", str(pusher), "commit", "-q", "-a", "-m", f"push {push} change {n}"])
            n += 1
        run(["git", "-C", str(pusher), "push", "-q", "origin", "HEAD"])
    if args.bitmap:
        run(["git", "-C", str(state), "config", "repack.writeBitmaps", "true"])
    return state


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--pushes", type=int, default=20)
    parser.add_argument("--push-commits", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--git", default="git")
    parser.add_argument("--packorder", default=str(Path(sys.executable).with_name("packorder")))
    parser.add_argument("--start", choices=("packorder", "git"), default="packorder")
    parser.add_argument("--bitmap", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    state = make_state(args.repo, args.work, args)
    packs = len(list((state / "objects" / "pack").glob("*.pack")))
    print(f"{args.repo}: {packs} packs ({args.pushes} pushes beside the {args.start} pack)", file=sys.stderr)
    copy = args.work / "copy.git"
    commands = {
        "git --geometric": [args.git, "-C", str(copy), "repack", "-q", "-d", "-l", "--geometric=2", "--write-midx"],
        "packorder --geometric": [
            args.packorder,
            "repack",
            "-q",
            "-d",
            "-l",
            "--geometric=2",
            "--write-midx",
            str(copy),
        ],
        "packorder (full)": [args.packorder, "repack", "-q", str(copy)],
    }
    results: dict[str, list[tuple[float, int]]] = {name: [] for name in commands}
    names = list(commands)
    for r in range(args.runs):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            if copy.exists():
                shutil.rmtree(copy)
            shutil.copytree(state, copy, symlinks=True)
            os.sync()
            results[name].append(timed(commands[name]))
    base = statistics.median(t for t, _ in results["git --geometric"])
    full = statistics.median(t for t, _ in results["packorder (full)"])
    report = {}
    for name, runs in results.items():
        median = statistics.median(t for t, _ in runs)
        rss = statistics.median(m for _, m in runs)
        report[name] = {"seconds": [t for t, _ in runs], "median": median, "peak_rss": rss}
        print(
            f"{name:24s} {median:7.3f} s  x{median / base:5.2f} of git's  x{median / full:5.3f} of a full repack  "
            f"peak RSS {rss / 2**20:6.1f} MiB"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
