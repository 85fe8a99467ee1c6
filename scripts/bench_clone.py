#!/usr/bin/env python3
"""A clone with packorder as the client's indexer against plain Git: the end-to-end check.

`git clone --bare --no-local SOURCE` runs `git index-pack --stdin --fix-thin ...` on the
pack upload-pack sends; run with GIT_EXEC_PATH set to a directory made by
packorder.indexer.route, that index-pack is packorder's. Both clones run alternately on the
same source, each after `sync` and a drop of the page cache (when this process may write
/proc/sys/vm/drop_caches; otherwise it says so and runs warm), and the clones are checked to
hold the same objects and refs (and, when the sender sent the same pack, the same bytes).

    scripts/bench_clone.py SOURCE.git [SOURCE.git ...] [--runs 5] [--fsck-objects]

Prints, per source, the median wall time of each clone, packorder's ratio to Git, and the
clone's peak RSS (the largest of the clone's processes). `--fsck-objects` clones with
`transfer.fsckObjects=true`, as a careful client does (the indexer then runs --strict).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from packorder.indexer import route


def drop_caches() -> bool:
    subprocess.run(["sync"], check=True)
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def clone(source: Path, dest: Path, env: dict[str, str], fsck: bool) -> tuple[float, int]:
    config = ["-c", "transfer.fsckObjects=true"] if fsck else []
    start = time.perf_counter()
    proc = subprocess.Popen(
        ["git", *config, "clone", "-q", "--bare", "--no-local", str(source), str(dest)],
        env=env,
        stderr=subprocess.PIPE,
    )
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"clone of {source} failed: {err.strip()}")
    return elapsed, usage.ru_maxrss * 1024


def outcome(repo: Path) -> tuple[tuple[str, str], list[tuple[str, bytes]]]:
    """((the objects the clone holds, its refs), its pack indexes). The serving side's
    pack-objects searches deltas on several threads, so two clones of one source may get
    packs of different bytes: the objects and refs must be the same, the bytes are reported."""
    ids = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    refs = subprocess.run(["git", "-C", str(repo), "show-ref"], capture_output=True, text=True).stdout
    packs = sorted((p.name, p.read_bytes()) for p in (repo / "objects" / "pack").glob("*.idx"))
    return (ids, refs), packs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sources", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--fsck-objects", action="store_true", help="clone with transfer.fsckObjects=true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-clone-") as tmp:
        work = Path(tmp)
        env_git = {k: v for k, v in os.environ.items() if k != "GIT_EXEC_PATH"}
        env_ours = {**env_git, "GIT_EXEC_PATH": str(route.exec_path(work / "exec-path"))}
        log = work / "handed-over.log"
        env_ours["PACKORDER_ROUTE_LOG"] = str(log)
        cold = drop_caches()
        print(f"page cache {'dropped before each clone' if cold else 'NOT dropped (no permission): warm runs'}")
        for source in args.sources:
            times: dict[str, list[float]] = {"git": [], "packorder": []}
            rss: dict[str, int] = {"git": 0, "packorder": 0}
            results = {}
            for i in range(args.runs):
                for who, env in (("git", env_git), ("packorder", env_ours)):
                    dest = work / f"{who}.git"
                    shutil.rmtree(dest, ignore_errors=True)
                    drop_caches()
                    t, m = clone(source, dest, env, args.fsck_objects)
                    times[who].append(t)
                    rss[who] = max(rss[who], m)
                    if i == 0:
                        results[who] = outcome(dest)
            handed = len(log.read_text().splitlines()) if log.exists() else 0
            log.unlink(missing_ok=True)
            same = results["git"][0] == results["packorder"][0]
            same_bytes = results["git"][1] == results["packorder"][1]
            g, o = statistics.median(times["git"]), statistics.median(times["packorder"])
            checked = ", transfer.fsckObjects" if args.fsck_objects else ""
            print(f"\n## {source} ({args.runs} runs each, alternating{checked})")
            print(
                f"same objects and refs: {'yes' if same else 'NO'}; same pack and index bytes: "
                f"{'yes' if same_bytes else 'no (the sender packed differently)'}; "
                f"index-packs handed to packorder: {handed}"
            )
            print("| clone | median wall | ratio | peak RSS |")
            print("|---|---|---|---|")
            print(f"| git | {g:.2f} s | | {rss['git'] / (1 << 20):.1f} MiB |")
            print(f"| packorder as indexer | {o:.2f} s | {o / g:.2f} | {rss['packorder'] / (1 << 20):.1f} MiB |")
            for who in times:
                print(f"{who} runs: {', '.join(f'{t:.2f}' for t in times[who])}")


if __name__ == "__main__":
    main()
