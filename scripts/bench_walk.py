#!/usr/bin/env python3
"""Benchmark packorder's object walk (`packorder.walk = native`) against the walk repack
runs by default, `git rev-list --objects --all --reflog [--indexed-objects]` with its output
parsed as repack parses it, on the same repository.

Each side runs in a process of its own, in turn (a different one first each round), several
times; we report the median wall time and CPU time of each, the ratio to Git's, the peak RSS
(the largest of the process and its children: for Git's walk, rev-list's or the reader's),
and check that both gave the same objects in the same order with the same name hashes.

    scripts/bench_walk.py REPO [REPO...] [--runs 5] [--in-commit-order] [--record-graph]

With --record-graph, a third side: packorder's walk recording the commit and tree graph a
bitmap is computed from (what a repack that writes a bitmap asks of it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD = """
import hashlib, sys
from pathlib import Path
from packorder import gitcmd
from packorder.store.listing import list_repository
from packorder.walk import native as native_walk
from packorder.walk import rev_list
git_dir, walk, ico = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
snap = list_repository(git_dir)
packs = snap.local_packs + snap.foreign_packs
promisor = any(p.with_suffix(".promisor").exists() for p in packs)
if walk in ("native", "graph"):
    config = gitcmd.read_config(snap.git_dir)
    def no_fallback():
        raise SystemExit("the native walk met objects pushed meanwhile: run again on a quiet repository")
    loose = snap.loose + snap.foreign_loose
    w = native_walk.start(
        snap.git_dir, packs, loose, promisor, ico, config, no_fallback, record_graph=walk == "graph"
    )
else:
    w = rev_list.GitObjectWalk(snap.git_dir, snap.fmt, promisor, ("--in-commit-order",) if ico else ())
ids, hashes, missing = w.result()
print(len(ids) // snap.fmt.rawsz, hashlib.sha1(ids + hashes).hexdigest())
"""


def run(repo: Path, walk: str, ico: bool) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds, peak RSS and what the walk printed."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", CHILD, str(repo), walk, "1" if ico else "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{walk} walk of {repo} failed: {err.decode(errors='replace').strip()}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, out.decode().strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repos", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--in-commit-order", action="store_true")
    ap.add_argument("--record-graph", action="store_true", help="also packorder's walk recording the graph")
    args = ap.parse_args()
    walks = ["git", "native"] + (["graph"] if args.record_graph else [])
    failed = False
    for repo in args.repos:
        runs: dict[str, list[tuple[float, float, int, str]]] = {w: [] for w in walks}
        for i in range(args.runs):
            k = i % len(walks)
            for w in walks[k:] + walks[:k]:
                r = run(repo.resolve(), w, args.in_commit_order)
                runs[w].append(r)
                print(f"  run {i + 1} {w:6} {r[0]:6.2f} s (cpu {r[1]:6.2f} s) {r[2] / 2**20:7.1f} MiB", flush=True)
        digests = {w: {r[3] for r in runs[w]} for w in walks}
        same = all(digests[w] == digests["git"] for w in walks) and len(digests["git"]) == 1
        failed |= not same
        objects = next(iter(digests["git"])).split()[0]
        print(f"\n## {repo} ({objects} objects), {args.runs} runs each, in turn")
        print(f"same objects, order and name hashes: {'yes' if same else 'NO'}")
        print("| walk | median wall | ratio to git | median CPU | median peak RSS |")
        print("|---|---|---|---|---|")
        git_wall = statistics.median(r[0] for r in runs["git"])
        for w in walks:
            wall = statistics.median(r[0] for r in runs[w])
            cpu = statistics.median(r[1] for r in runs[w])
            rss = statistics.median(r[2] for r in runs[w])
            print(f"| {w} | {wall:.2f} s | {wall / git_wall:.2f} | {cpu:.2f} s | {rss / 2**20:.1f} MiB |")
        for w in walks:
            print(f"{w} runs: {', '.join(f'{r[0]:.2f}' for r in runs[w])}")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
