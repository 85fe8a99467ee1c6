#!/usr/bin/env python3
"""What `packorder seekstats` adds to a workload: parsing the pack access log and computing the
statistics, against the workload's own (untraced) wall time. Target: at most 10% on a trace of
a million accesses.

    scripts/bench_seekstats.py REPO [-w WORKLOAD] [--path PATH] [--runs 5] [-- GIT ARGS]
    scripts/bench_seekstats.py /tmp/million --generate 1000000     # git log of a million commits

With --generate N, REPO (if it does not exist yet) is first made with `git fast-import`: N
commits, a file changed every 100 of them, so `git log` asks for a million objects. Each stage
runs --runs times, alternating with the workload; medians are printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from packorder.gitcmd import find_git_dir, read_config
from packorder.seek import analyze, pack_access, runner, workloads
from packorder.seek.expand import expand
from packorder.settings import DEFAULT_DELTA_BASE_CACHE_LIMIT

T = TypeVar("T")


def generate(path: Path, commits: int) -> None:
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    proc = subprocess.Popen(["git", "--git-dir", str(path), "fast-import", "--quiet"], stdin=subprocess.PIPE)
    assert proc.stdin is not None
    when = 1_700_000_000
    chunk = []
    for c in range(commits):
        when += 60
        msg = b"change %d" % c
        chunk.append(
            b"commit refs/heads/main\ncommitter C <c@example.com> %d +0000\ndata %d\n%s\n" % (when, len(msg), msg)
        )
        if c % 100 == 0:
            body = b"version %d\n" % c
            chunk.append(b"M 100644 inline dir%d/file%d\ndata %d\n%s\n" % (c % 7, c % 1000, len(body), body))
        chunk.append(b"\n")
        if len(chunk) > 30_000:
            proc.stdin.write(b"".join(chunk))
            chunk = []
    proc.stdin.write(b"".join(chunk))
    proc.stdin.close()
    if proc.wait() != 0:
        sys.exit("fast-import failed")


def median_time(fn: Callable[[], T], runs: int) -> tuple[float, T]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo", type=Path)
    parser.add_argument("-w", "--workload", default="log")
    parser.add_argument("--path")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--generate", type=int, metavar="N", help="make REPO with N commits if it does not exist")
    argv = sys.argv[1:]
    git_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    args.git_args = git_args
    if args.generate and not args.repo.exists():
        start = time.perf_counter()
        generate(args.repo, args.generate)
        print(f"generated {args.repo} ({args.generate} commits) in {time.perf_counter() - start:.1f} s")

    git_dir = find_git_dir(args.repo)
    spec, _ = workloads.resolve(workloads.spec(args.workload, args.path, tuple(args.git_args)), git_dir)
    if spec.name == "index-pack":
        sys.exit("index-pack is traced with strace; this benchmark measures the pack access log")
    config = read_config(git_dir)
    work = workloads.build(spec, git_dir, "git", config, DEFAULT_DELTA_BASE_CACHE_LIMIT)

    # The workload alone, and with its pack access log on (as pack_access.record runs it).
    assert work.command is not None
    untraced = []
    traced = []
    tmp = tempfile.TemporaryDirectory(prefix="bench-seekstats-")
    log = Path(tmp.name) / "access.log"
    env = {**work.command.env, "GIT_TRACE_PACK_ACCESS": str(log), "GIT_TRACE_BARE": "1"}
    logged = dataclasses.replace(work.command, env=env)
    for _ in range(args.runs):
        untraced.append(work.timed())
        log.unlink(missing_ok=True)
        traced.append(runner.run(logged))
    workload = statistics.median(untraced)
    print(f"{spec.describe()} on {git_dir}")
    print(f"workload untraced: {workload:.3f} s   traced: {statistics.median(traced):.3f} s   (medians of {args.runs})")

    # Parsing includes reading the log, as `seekstats` does once the workload is done.
    parse, trace = median_time(lambda: pack_access.to_trace(log.read_bytes(), git_dir), args.runs)
    print(f"trace: {len(trace):,} accesses, {log.stat().st_size / 1e6:.1f} MB of log")
    load, layouts = median_time(lambda: analyze.layouts_of(trace), args.runs)
    locating, trace = median_time(lambda: analyze.locate(trace, layouts), args.runs)
    raw_stats, _ = median_time(
        lambda: analyze.view_stats(trace, layouts, "raw", "", 2 << 20, 4 << 10),
        args.runs,
    )
    expanding, expanded = median_time(lambda: expand(trace, layouts, DEFAULT_DELTA_BASE_CACHE_LIMIT), args.runs)
    expanded_stats, _ = median_time(
        lambda: analyze.view_stats(expanded, layouts, "expanded", "", 2 << 20, 4 << 10),
        args.runs,
    )
    print(f"expanded: {len(expanded):,} reads")
    rows = [
        ("parse the log", parse),
        ("load pack layouts", load),
        ("locate entries", locating),
        ("raw statistics", raw_stats),
        ("expand delta chains", expanding),
        ("expanded statistics", expanded_stats),
    ]
    for name, seconds in rows:
        print(f"  {name:22} {seconds:8.3f} s  {100 * seconds / workload:6.1f}% of the workload")
    raw_total = parse + load + locating + raw_stats
    all_total = raw_total + expanding + expanded_stats
    print(f"  {'raw view, total':22} {raw_total:8.3f} s  {100 * raw_total / workload:6.1f}%")
    print(f"  {'both views, total':22} {all_total:8.3f} s  {100 * all_total / workload:6.1f}%   (target: <= 10%)")
    tmp.cleanup()


if __name__ == "__main__":
    main()
