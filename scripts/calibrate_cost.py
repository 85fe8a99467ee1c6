#!/usr/bin/env python3
"""Fit the fleet's cost model (packorder/fleet/cost.py) to repacks run as a fleet task runs
them: a child process each, `python -m packorder repack --json`, its wall time measured
around it and its peak RSS as it reports it.

    scripts/calibrate_cost.py DIR REPO... [--runs 2]

Each REPO is copied under DIR (the original is not touched), triaged, and repacked `--runs`
times. Prints a JSON line a run (what triage counts, cost.py's estimate, the measurement),
then the least-squares fit of cost.py's terms, minimising the relative error, and the range
of estimated over measured, for the fit and for cost.py as it is.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from packorder.fleet import cost
from packorder.fleet.triage import repack_contents, triage
from packorder.store.repository import open_repository


def measure(src: Path, copy: Path, runs: int) -> list[dict]:
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(src, copy, symlinks=True)
    git_dir = copy / ".git" if (copy / ".git").is_dir() else copy
    t = triage(git_dir)
    repo = open_repository(git_dir)
    contents = repack_contents(t, repo, [p for p in repo.packs if not p.foreign])
    records = []
    for run in range(runs):
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "packorder", "repack", "--json", str(git_dir)], capture_output=True, text=True
        )
        wall = time.perf_counter() - started
        if out.returncode:
            raise SystemExit(f"{src}: {out.stderr.strip()}")
        rec = {
            "repo": str(src),
            "run": run,
            **vars(contents),
            "estimated_seconds": t.estimated_seconds,
            "estimated_peak_bytes": t.estimated_peak_bytes,
            "seconds": wall,
            "peak_bytes": json.loads(out.stdout)["peak_rss_bytes"],
        }
        print(json.dumps(rec), flush=True)
        records.append(rec)
    shutil.rmtree(copy, ignore_errors=True)
    return records


def fit(label: str, x: np.ndarray, y: np.ndarray, names: list[str], current: np.ndarray) -> None:
    w = 1 / y
    coef, *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
    ratio = (x @ coef) / y
    print(f"{label}: " + ", ".join(f"{n} {c:.3g}" for n, c in zip(names, coef, strict=True)))
    print(f"  fit: estimated / measured {ratio.min():.2f}-{ratio.max():.2f}")
    now = current / y
    print(f"  cost.py as it is: estimated / measured {now.min():.2f}-{now.max():.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("repos", type=Path, nargs="+")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    records = [r for repo in args.repos for r in measure(repo, args.dir / "copy", args.runs)]
    ct = np.array([r["commits_and_trees"] for r in records], dtype=float)
    ones = np.ones(len(records))
    time_x = np.column_stack([ones, ct, [r["tree_bytes"] for r in records], [r["stored_bytes"] for r in records]])
    fit(
        "seconds",
        time_x,
        np.array([r["seconds"] for r in records]),
        ["start", "a commit or tree", "a tree byte", "a byte stored"],
        np.array([r["estimated_seconds"] for r in records]),
    )
    bitmap = np.array([r["bitmap"] for r in records], dtype=float)
    memory_x = np.column_stack(
        [ones, [r["objects"] for r in records], [r["stored_bytes"] for r in records], bitmap * ct]
    )
    fit(
        "peak bytes",
        memory_x,
        np.array([r["peak_bytes"] for r in records], dtype=float),
        ["start", "an object", "a byte stored", "a commit or tree with a bitmap"],
        np.array([r["estimated_peak_bytes"] for r in records], dtype=float),
    )
    print(f"cost.py: {cost.__file__}")


if __name__ == "__main__":
    main()
