#!/usr/bin/env python3
"""Benchmark `packorder index-pack` against `git index-pack` on the same packs.

Both run alternately on the same file, same thread count, several times; we report the
median wall time of each, their ratio, and each one's peak RSS (the child's ru_maxrss), and
check that both wrote the same .idx and .rev bytes.

    scripts/bench_index_pack.py PACK [PACK...] [--runs 5] [--threads N] [--git /usr/bin/git]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Run:
    seconds: float
    peak_rss: int


def timed(cmd: list[str]) -> Run:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({status}): {err.strip()}")
    return Run(elapsed, usage.ru_maxrss * 1024)


def mib(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def bench(pack: Path, runs: int, threads: int, gits: list[str], packorder: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-index-pack-") as tmp:
        work = Path(tmp)
        size = pack.stat().st_size
        print(f"\n## {pack.name} ({mib(size)}), {threads} threads, {runs} runs each, alternating")
        results: dict[str, list[Run]] = {g: [] for g in gits}
        ours: list[Run] = []
        for i in range(runs):
            for g in gits:
                results[g].append(
                    timed([g, "index-pack", f"--threads={threads}", "-o", str(work / "git.idx"), str(pack)])
                )
            ours.append(
                timed([*packorder, "index-pack", "-q", f"--threads={threads}", "-o", str(work / "ours.idx"), str(pack)])
            )
            if i == 0:
                same = all(
                    (work / f"git{ext}").read_bytes() == (work / f"ours{ext}").read_bytes() for ext in (".idx", ".rev")
                )
                print(f"outputs byte-identical: {'yes' if same else 'NO'}")
        ours_t = statistics.median(r.seconds for r in ours)
        ours_m = max(r.peak_rss for r in ours)
        print("| tool | median wall | ratio packorder/tool | peak RSS |")
        print("|---|---|---|---|")
        print(f"| packorder | {ours_t:.2f} s | | {mib(ours_m)} |")
        for g in gits:
            version = subprocess.run([g, "--version"], capture_output=True, text=True).stdout.split()[-1]
            t = statistics.median(r.seconds for r in results[g])
            m = max(r.peak_rss for r in results[g])
            print(f"| git {version} ({g}) | {t:.2f} s | {ours_t / t:.2f} | {mib(m)} |")
        print(f"packorder runs: {', '.join(f'{r.seconds:.2f}' for r in ours)}")
        for g in gits:
            print(f"{g} runs: {', '.join(f'{r.seconds:.2f}' for r in results[g])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("packs", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--git", action="append", help="git binary (repeatable; default: git on PATH)")
    args = ap.parse_args()
    script = shutil.which("packorder")
    packorder = [script] if script else [sys.executable, "-m", "packorder"]
    for pack in args.packs:
        if not pack.is_file():
            raise SystemExit(f"no such pack: {pack}")
        bench(pack, args.runs, args.threads, args.git or ["git"], packorder)


if __name__ == "__main__":
    main()
