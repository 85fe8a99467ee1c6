#!/usr/bin/env python3
"""The fleet layer's numbers (docs/fleet.md): triage time, repack throughput, the
scheduler's overhead, the cost model's estimates against the repacks, and the predicted share against seekstats.

    scripts/bench_fleet.py DIR [--triage 1000] [--repack 200] [--workers N] [--calibrate] [--real REPO ...]

Generates repositories of mixed sizes under DIR (each with `git fast-import`, fixed dates:
70% small, 25% medium, 5% large; a third with a second pack and loose objects pushed on
top), then:

1. triages `--triage` of them (`packorder.fleet.status`, in this process, then as
   `fleet repack` does, on a LocalCluster) and prints the time a repository;
2. repacks `--repack` others on a LocalCluster of `--workers` workers, once with one
   repository a task and once batched, printing repositories and GB an hour a worker core,
   the scheduler's overhead (wall time x workers, less the repacks' own time, a task) next
   to a small repository's repack, and cost.py's estimates against the repacks measured
   (scripts/calibrate_cost.py fits its coefficients);
3. with `--calibrate`, the predicted share of index-pack seeks under 2 MiB against seekstats
   (strace) on some generated repositories of each size, with Git's default threads, before
   and after a repack, and the prediction after it from Git's walk (as triage planned before
   it planned from the packs' stored order); with `--real REPO...`, the same on copies of
   those repositories instead.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "Ada Author",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Cy Committer",
    "GIT_COMMITTER_EMAIL": "cy@example.com",
}
TRIAGE_RUNS = 3  # of one repository in --calibrate, for a median on a shared machine
SIZES = {"small": (8, 6, 40), "medium": (80, 30, 120), "large": (700, 120, 400)}  # commits, files, lines a file


def size_of(i: int) -> str:
    r = i % 20
    return "large" if r == 0 else "medium" if r % 4 == 1 else "small"


def fast_import_stream(rng: random.Random, commits: int, files: int, lines: int, first: int, mark0: int) -> bytes:
    words = ["alpha", "beta", "gamma", "delta", "pack", "tree", "blob", "commit", "seek", "order"]
    bodies = {
        f"src/d{f % 7}/file{f}.c": [" ".join(rng.choices(words, k=8)) for _ in range(lines)] for f in range(files)
    }
    out = []
    for c in range(commits):
        when = 1_700_000_000 + 3600 * (first + c)
        changed = list(bodies) if c == 0 and first == 0 else rng.sample(sorted(bodies), k=min(3, files))
        out.append(f"commit refs/heads/main\nmark :{mark0 + c + 1}\n")
        out.append(f"author Ada Author <ada@example.com> {when} +0000\n")
        out.append(f"committer Cy Committer <cy@example.com> {when} +0000\n")
        msg = f"change {first + c}\n"
        out.append(f"data {len(msg)}\n{msg}")
        if c == 0 and first > 0:
            out.append("from refs/heads/main^0\n")
        for name in changed:
            body = bodies[name]
            for _ in range(rng.randint(1, 4)):
                body[rng.randrange(len(body))] = " ".join(rng.choices(words, k=8))
            data = ("\n".join(body) + "\n").encode()
            out.append(f"M 100644 inline {name}\ndata {len(data)}\n")
            out.append(data.decode() + "\n")
        if (first + c) % 50 == 0:
            out.append(f"reset refs/tags/v{first + c}\nfrom :{mark0 + c + 1}\n\n")
    return "".join(out).encode()


def generate(path: Path, i: int) -> None:
    rng = random.Random(i)
    commits, files, lines = SIZES[size_of(i)]
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True, env=GIT_ENV)
    subprocess.run(["git", "-C", str(path), "config", "gc.auto", "0"], check=True, env=GIT_ENV)
    stream = fast_import_stream(rng, commits, files, lines, 0, 0)
    subprocess.run(["git", "-C", str(path), "fast-import", "--quiet"], input=stream, check=True, env=GIT_ENV)
    if i % 3 == 0:  # a push on top: a second pack, and loose objects
        more = fast_import_stream(rng, max(2, commits // 10), files, lines, commits, commits)
        subprocess.run(["git", "-C", str(path), "fast-import", "--quiet"], input=more, check=True, env=GIT_ENV)
        subprocess.run(
            ["git", "-C", str(path), "hash-object", "-w", "--stdin"],
            input=f"loose {i}\n".encode(),
            capture_output=True,
            check=True,
            env=GIT_ENV,
        )


def fleet_of(root: Path, n: int, offset: int) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(offset, offset + n):
        path = root / f"repo{i:05d}.git"
        if not path.exists():
            generate(path, i)
        out.append(path)
    return out


def bench_triage(root: Path, n: int) -> None:
    from packorder.fleet import status

    started = time.perf_counter()
    repos = fleet_of(root / "triage", n, 0)
    print(f"generated {len(repos)} repositories in {time.perf_counter() - started:.1f} s")
    cache = root / "triage-cache.jsonl"
    cache.unlink(missing_ok=True)
    runs = [("1", None), ("2", None), ("3, filling a triage cache", cache), ("4, from the triage cache", cache)]
    for run, cache_file in runs:
        result = status([root / "triage"], triage_cache_file=cache_file)
        errors = sum(t.error is not None for t in result.repositories)
        cached = sum(t.cached for t in result.repositories)
        per = 1000 * result.seconds / len(result.repositories)
        own = sorted(1000 * t.seconds for t in result.repositories)
        print(
            f"triage run {run}: {len(result.repositories)} repositories in {result.seconds:.1f} s "
            f"({per:.1f} ms a repository; median {own[len(own) // 2]:.1f} ms, max {own[-1]:.0f} ms); "
            f"errors {errors}, from the cache {cached}"
        )


def bench_triage_on_cluster(root: Path, workers: int) -> None:
    from packorder.fleet import cluster
    from packorder.fleet.discovery import discover

    found = discover(roots=[root / "triage"])
    with cluster.connect(None, workers) as client:
        for run in (1, 2):
            started = time.perf_counter()
            triaged = cluster.triage_on(client, found.repositories, None, workers)
            took = time.perf_counter() - started
            print(
                f"triage on a LocalCluster of {workers} workers, run {run}: {len(triaged)} repositories "
                f"in {took:.1f} s "
                f"({1000 * took / len(triaged):.1f} ms a repository)"
            )


def bench_repack(root: Path, n: int, workers: int) -> None:
    from distributed import Client, LocalCluster

    from packorder.fleet import cluster
    from packorder.fleet import run_record as results_mod

    repos = fleet_of(root / "repack", n, 100_000)
    total = sum(sum(f.stat().st_size for f in (p / "objects").rglob("*") if f.is_file()) for p in repos)
    print(f"{len(repos)} repositories to repack, {total / 1e6:.1f} MB of objects")
    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as lc,
        Client(lc) as client,
    ):
        started = time.perf_counter()
        client.gather(client.map(lambda x: x, range(n), pure=False))
        noop = (time.perf_counter() - started) * workers / n
        print(f"Dask alone: {1000 * noop:.1f} ms of a worker a no-op task ({n} tasks, {workers} workers)")
    records_all = []
    for label, batch in (("one repository a task", 0.0), ("batched", 5.0)):
        out = root / f"results-{int(batch)}.jsonl"
        out.unlink(missing_ok=True)
        started = time.perf_counter()
        run = cluster.repack([root / "repack"], results=out, workers=workers, batch_seconds=batch)
        wall = time.perf_counter() - started
        records = results_mod.read(out)
        records_all += records
        done = [r for r in records if r["status"] == "done"]
        repack_s = sum(r["seconds"] for r in records)
        gb = sum(r["bytes_before"] for r in done) / 1e9
        hours = wall / 3600
        small = sorted(r["seconds"] for r in done if r["objects"] and r["objects"] < 200)
        busy = run.task_seconds * workers
        overhead = (busy - repack_s) / max(1, run.tasks)
        print(
            f"{label}: {len(done)} done, {run.failed} failed in {run.tasks} tasks; {wall:.1f} s in all, of which "
            f"triage {run.triage_seconds:.1f} s and tasks {run.task_seconds:.1f} s (first submission to last result); "
            f"repacks' own time {repack_s:.1f} s; "
            f"{len(done) / hours / workers:.0f} repositories and {gb / hours / workers:.2f} GB an hour a worker core "
            f"(wall time in all); tasks' worker time not in a repack {overhead * 1000:.0f} ms a task = "
            f"{100 * (busy - repack_s) / busy:.1f}% of it; a small repository's repack (median, <200 objects) "
            + (f"{1000 * small[len(small) // 2]:.0f} ms" if small else "-")
        )
    estimates_against(records_all)


def estimates_against(records: list[dict]) -> None:
    """cost.py's estimates against these repacks (scripts/calibrate_cost.py fits them)."""
    done = [r for r in records if r["status"] == "done" and r.get("objects")]
    secs = np.array([r["seconds"] for r in done])
    rss = np.array([r["rss_bytes"] for r in done], dtype=float)
    est = np.array([r["estimated_seconds"] for r in done])
    est_rss = np.array([r["estimated_peak_bytes"] for r in done], dtype=float)
    print(
        f"cost.py estimate / measured: time {np.min(est / secs):.2f}-{np.max(est / secs):.2f} "
        f"(median {np.median(est / secs):.2f}), peak RSS {np.min(est_rss / rss):.2f}-{np.max(est_rss / rss):.2f}; "
        f"peak RSS max {rss.max() / 2**20:.0f} MiB"
    )


def calibrate(root: Path, real: list[Path]) -> None:
    import packorder

    chosen = []
    if not real:
        repos = fleet_of(root / "calibrate", 40, 200_000)
        bigger = [p for i, p in enumerate(repos) if size_of(200_000 + i) != "small"][:6]
        chosen = list(dict.fromkeys(bigger + repos[:2]))
        sample = root / "calibrate" / "sample"
        if not sample.exists():
            packorder.sample(sample)
        chosen.append(sample)
    compare(root, chosen + real)


def compare(root: Path, chosen: list[Path]) -> None:
    """Each repository copied under `root` (the original is not touched), triaged, measured,
    repacked and measured again."""
    import packorder
    from packorder.fleet.triage import triage

    print("repository, pack MiB, threshold: predicted / measured before; predicted / measured after a repack")
    for repo in chosen:
        copy = root / "calibrate-copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(repo, copy, symlinks=True)
        git_dir = copy / ".git" if (copy / ".git").is_dir() else copy
        times = []
        for _ in range(TRIAGE_RUNS):
            t = triage(git_dir)
            times.append(t.seconds)
        print(f"{repo}: triage {', '.join(f'{s:.3f}' for s in times)} s (median {np.median(times):.3f} s)")
        walked = walked_share_after(git_dir, t.order)
        print(f"{repo}: predicted after a repack from the stored order {t.share_after}, from Git's walk {walked}")
        before = packorder.seekstats(copy, "index-pack").views[0].below_threshold
        started = time.perf_counter()
        repacked = packorder.repack(copy)
        print(
            f"{repo}: {t.objects} objects, repack {time.perf_counter() - started:.1f} s "
            f"(estimated {t.estimated_seconds:.1f} s), peak RSS {repacked.peak_rss_bytes / 2**20:.0f} MiB "
            f"(estimated {t.estimated_peak_bytes / 2**20:.0f} MiB)"
        )
        after = packorder.seekstats(copy, "index-pack").views[0].below_threshold
        err = [
            abs(p - m) for p, m in ((t.share_now, before), (t.share_after, after)) if p is not None and m is not None
        ]
        print(
            f"{repo}: {t.pack_bytes / 2**20:.1f} MiB, 2 MiB: {t.share_now} / {before}; {t.share_after} / {after}; "
            f"error {100 * max(err):.2f} points"
            if err
            else f"{repo}: no seek"
        )
    shutil.rmtree(root / "calibrate-copy", ignore_errors=True)


def walked_share_after(git_dir: Path, order: str) -> float | None:
    """The prediction after a repack as triage made it before it planned from the stored
    order: the plan from Git's walk (beside the packs a repack keeps), for comparison."""
    from packorder.fleet import prediction
    from packorder.fleet.triage import kept_after_repack
    from packorder.format import layout as layout_mod
    from packorder.gitcmd import read_config
    from packorder.seek.simulator import plan
    from packorder.store.listing import list_packs

    kept = [layout_mod.load(p) for p in kept_after_repack(list_packs(git_dir / "objects" / "pack"))]
    (planned,) = plan(git_dir, [order])
    return prediction.modelled_share([planned.layout, *kept], read_config(git_dir))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--triage", type=int, default=1000)
    parser.add_argument("--repack", type=int, default=200)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--calibrate", action="store_true", help="on generated repositories and packorder's sample")
    parser.add_argument("--real", type=Path, nargs="*", default=[], help="calibrate on these (copied under DIR)")
    args = parser.parse_args()
    print(json.dumps({"cores": os.cpu_count(), "python": sys.version.split()[0]}))
    if args.triage:
        bench_triage(args.dir, args.triage)
        bench_triage_on_cluster(args.dir, args.workers)
    if args.repack:
        bench_repack(args.dir, args.repack, args.workers)
    if args.calibrate or args.real:
        calibrate(args.dir, args.real)


if __name__ == "__main__":
    main()
