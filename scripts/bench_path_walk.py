#!/usr/bin/env python3
"""Benchmark the delta search by path: `packorder repack -f` (version-1 name hash,
`--path-walk`, `--name-hash-version 2`, and `--path-walk --order paths`) against `git repack
-adf` (plain, `--path-walk`, `--name-hash-version=2`) on copies of one repository.

Every run gets a fresh copy (not timed) of REPO as cloned (`git clone --bare --no-local`, or
REPO itself with --as-is); the commands run alternately, each first in turn, with the same
threads, after a sync. Reports the median wall time, peak RSS (the child's, by wait4), the
pack's size (the same every run with one thread; with two, Git's varies a little: the
median), and the ratios to Git's `--path-walk`. With --cold, the last copy of each
command is kept and the cold reads of log, log -- PATH, blame FILE and a fetch of recent
history are counted (128 KiB read-around, as scripts/bench_maintenance.py counts them).

    scripts/bench_path_walk.py REPO --work DIR [--runs 3] [--threads 2] [--git PATH]
        [--packorder PATH] [--only NAME,...] [--cold --log-path src --blame src/x.c]
        [--as-is] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from bench_geometric import timed  # this folder's: (wall seconds, peak RSS) of a command


def pack_size(git_dir: Path) -> int:
    return sum(p.stat().st_size for p in (git_dir / "objects" / "pack").glob("*.pack"))


def commands(args: argparse.Namespace, copy: Path) -> dict[str, list[str]]:
    git = [args.git, "-C", str(copy), "repack", "-q", "-adf", f"--threads={args.threads}", "--no-write-bitmap-index"]
    po = [args.packorder, "repack", "-q", "-f", "--threads", str(args.threads), "-B", str(copy)]
    return {
        "git -adf": git,
        "git -adf --path-walk": [*git, "--path-walk"],
        "git -adf --name-hash-version=2": [*git, "--name-hash-version=2"],
        "packorder -f": po,
        "packorder -f --path-walk": [*po, "--path-walk"],
        "packorder -f --name-hash-version 2": [*po, "--name-hash-version", "2"],
        "packorder -f --path-walk --order paths": [*po, "--path-walk", "--order", "paths"],
    }


def cold_reads(git_dir: Path, git: str, log_path: str, blame: str) -> dict[str, int]:
    from packorder.seek.api import cold_reads as reads_of

    workloads = (("log", None), ("log-path", log_path), ("blame", blame), ("pack-recent", None))
    return {workload: reads_of(git_dir, workload, path=path, git=git) for workload, path in workloads}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--git", default="git")
    parser.add_argument("--packorder", default=str(Path(sys.executable).with_name("packorder")))
    parser.add_argument("--only", default="", help="the commands to run, by name, comma-separated")
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--log-path", default="src")
    parser.add_argument("--blame", default=None)
    parser.add_argument("--as-is", action="store_true", help="copy REPO itself rather than a clone of it")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    source = args.repo
    if not args.as_is:
        source = args.work / "source.git"
        if source.exists():
            shutil.rmtree(source)
        subprocess.run(["git", "clone", "-q", "--bare", "--no-local", str(args.repo), str(source)], check=True)
    copy = args.work / "copy.git"
    cmds = commands(args, copy)
    names = [n for n in cmds if not args.only or n in args.only.split(",")]
    results: dict[str, list[tuple[float, int, int]]] = {name: [] for name in names}
    kept: dict[str, Path] = {}
    for r in range(args.runs):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            if copy.exists():
                shutil.rmtree(copy)
            shutil.copytree(source, copy, symlinks=True)
            os.sync()
            seconds, rss = timed(cmds[name])
            results[name].append((seconds, rss, pack_size(copy)))
            print(f"  run {r + 1}: {name}: {seconds:.2f} s, {pack_size(copy):,} bytes", file=sys.stderr, flush=True)
            if args.cold and r == args.runs - 1:
                kept[name] = args.work / f"kept-{len(kept)}.git"
                if kept[name].exists():
                    shutil.rmtree(kept[name])
                copy.rename(kept[name])
    reference = "git -adf --path-walk"
    medians = {name: [statistics.median(x[k] for x in runs) for k in range(3)] for name, runs in results.items()}
    medians = {name: [seconds, int(rss), int(size)] for name, (seconds, rss, size) in medians.items()}
    ref_time, _, ref_size = medians.get(reference, medians[names[0]])
    report: dict[str, dict] = {}
    print(
        f"{'command':40s} {'time':>8s} {'x path-walk':>11s} {'pack bytes':>13s} {'x path-walk':>11s} {'peak RSS':>9s}"
    )
    for name, (seconds, rss, size) in medians.items():
        report[name] = {
            "seconds": [x[0] for x in results[name]],
            "median": seconds,
            "pack_bytes": size,
            "peak_rss": rss,
        }
        print(
            f"{name:40s} {seconds:7.2f}s {seconds / ref_time:11.2f} {size:13,d} {size / ref_size:11.3f} "
            f"{rss / 2**20:7.0f}MiB"
        )
    if args.cold and args.blame:
        print("cold reads (128 KiB windows): log / log-path / blame / pack-recent")
        for name, where in kept.items():
            reads = cold_reads(where, args.git, args.log_path, args.blame)
            report[name]["cold_reads"] = reads
            print(f"  {name:40s} {reads['log']} / {reads['log-path']} / {reads['blame']} / {reads['pack-recent']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
