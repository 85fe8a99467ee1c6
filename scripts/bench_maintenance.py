#!/usr/bin/env python3
"""A simulated year of maintenance: rounds of "push COMMITS commits, run maintenance" on
copies of one repository, the same pushes under each design, timed; at the end, the cold
reads of log, log -- PATH, blame and a fetch of recent history, beside those of a fresh
ordered repack of the same objects.

Designs (`--designs`, in the order given; `NAME@N` runs the design's own command every N
rounds, as a schedule would, rather than after every push):
- packorder: docs/maintenance.md's recipe (Git's repacking tasks off), `packorder gc --auto`
  each round: geometric roll-ups in packorder's order, an all-into-one ordered repack when
  the progression collapses or the layout drifts;
- git: Git's own default maintenance, `git maintenance run --auto` (geometric since 2.54;
  its all-into-one repack writes Git's order);
- keep: Git's geometric maintenance each round with the ordered pack held by a .keep file,
  and `packorder repack` (the .keep lifted, then put on the new ordered pack) once the
  objects outside the ordered pack pass --keep-drift of all: the
  design where Git rolls up and packorder owns only the all-into-one repack (its check is
  made in this process, not by a command: it costs that design nothing here).

Every copy starts from REPO repacked by packorder (`--start git` keeps Git's pack). The
pushes come from one clone that made all the rounds' commits first (fixed dates and author,
each commit changing --files files), so every design receives the same packs. Only the
maintenance command of each round is timed; Git's runs with --git (the newest Git: its
default maintenance is geometric), packorder with --packorder (its entry point, not a pyenv
shim, whose bash start adds 60 ms). With --reuse-commits, the pushing clone and its rounds'
tips of an earlier run in the same --work are taken as they are (making them takes minutes).

    scripts/bench_maintenance.py REPO --work DIR [--rounds 200] [--until-git-collapse]
        [--commits 20] [--files 5] [--designs packorder,git,keep] [--git PATH]
        [--packorder PATH] [--log-path src/libgit2] [--blame src/libgit2/repository.c]
        [--keep-drift 0.33] [--config KEY=VALUE ...] [--reuse-commits] [--json FILE]

Prints each design's total and median maintenance time, its all-into-one repacks and final
pack count, and the cold reads (128 KiB read-around, `packorder.seek.coldreads`) of each
workload over the fresh ordered repack's.
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

GIT = "git"


def run(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None, check: bool = True) -> str:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def git(*args: str, cwd: Path | None = None, git_bin: str | None = None, check: bool = True) -> str:
    return run([git_bin or GIT, *args], cwd=cwd, check=check)


def commit_env(when: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME="Ada Author",
        GIT_AUTHOR_EMAIL="ada@example.com",
        GIT_COMMITTER_NAME="Cy Committer",
        GIT_COMMITTER_EMAIL="cy@example.com",
        GIT_AUTHOR_DATE=f"{when} +0000",
        GIT_COMMITTER_DATE=f"{when} +0000",
    )
    return env


def make_commits(repo: Path, work: Path, rounds: int, commits: int, files: int) -> list[str]:
    """A clone of `repo` with rounds x commits commits on its HEAD branch; the tip of each round."""
    if work.exists():
        shutil.rmtree(work)
    git("clone", "-q", "--no-checkout", str(repo), str(work))
    # No maintenance in the clone: a gc it starts in the background removes empty object
    # directories while the next commit writes into one.
    git("config", "gc.auto", "0", cwd=work)
    git("config", "maintenance.auto", "false", cwd=work)
    git("checkout", "-q", "HEAD", cwd=work)
    tracked = [f for f in git("ls-files", cwd=work).splitlines() if f.endswith((".c", ".h", ".md", ".txt", ".py"))]
    tracked = [f for f in tracked if (work / f).is_file() and (work / f).stat().st_size < 200_000]
    if not tracked:
        raise SystemExit("no text files to change in the repository")
    when = int(git("log", "-1", "--format=%ct", cwd=work)) + 3600
    tips = []
    n = 0
    for r in range(rounds):
        for _ in range(commits):
            for k in range(files):
                path = work / tracked[(n * 7919 + k * 104729) % len(tracked)]
                with open(path, "a") as f:
                    f.write(f"/* maintenance round {r}, change {n}.{k} */\n")
            run([GIT, "commit", "-q", "-a", "-m", f"round {r} change {n}"], cwd=work, env=commit_env(when))
            when += 600
            n += 1
        tips.append(git("rev-parse", "HEAD", cwd=work).strip())
    return tips


def pack_set(git_dir: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in (git_dir / "objects" / "pack").glob("pack-*.pack")}


def ordered_pack(git_dir: Path) -> str | None:
    packs = {
        p.name: p.stat().st_size
        for p in (git_dir / "objects" / "pack").glob("pack-*.pack")
        if not p.with_suffix(".mtimes").exists()
    }
    return max(packs, key=packs.get) if packs else None


def apply_recipe(git_dir: Path, recipe: str, packorder: str) -> None:
    """The recipe as written, with `packorder` first on PATH (the hook it writes runs that)."""
    env = {**os.environ, "PATH": f"{Path(packorder).parent}:{os.environ['PATH']}"}
    subprocess.run(["sh", "-e", "-c", recipe], cwd=git_dir, check=True, env=env)


def recipe_text() -> str:
    import re

    text = (Path(__file__).resolve().parent.parent / "docs" / "maintenance.md").read_text()
    block = re.search(r"<!-- recipe: begin -->\s*```sh\n(.*?)```\s*<!-- recipe: end -->", text, re.S)
    if block is None:
        raise SystemExit("docs/maintenance.md has no recipe block")
    return block.group(1)


def objects_outside(git_dir: Path) -> float:
    """The share of objects (in packs that are not cruft, and loose) outside the largest pack,
    the ordered pack's .keep notwithstanding."""
    from packorder.format import idx as idx_format
    from packorder.format.object_format import SHA1
    from packorder.repacking.drift import loose_count

    pack_dir = git_dir / "objects" / "pack"
    counts = [
        idx_format.object_count(str(p.with_suffix(".idx")))
        for p in pack_dir.glob("pack-*.pack")
        if not p.with_suffix(".mtimes").exists()
    ]
    total = sum(counts) + loose_count(git_dir / "objects", SHA1)
    return (total - max(counts, default=0)) / total if total else 0.0


def cold_reads(git_dir: Path, log_path: str, blame: str) -> dict[str, int]:
    from packorder.seek.api import cold_reads as reads_of

    workloads = (("log", None), ("log-path", log_path), ("blame", blame), ("pack-recent", None))
    return {workload: reads_of(git_dir, workload, path=path, git=GIT) for workload, path in workloads}


def maintain(design: str, server: Path, args: argparse.Namespace, round_number: int) -> float:
    """One round's maintenance under `design` (NAME or NAME@EVERY); its wall time."""
    design, _, every_text = design.partition("@")
    every = int(every_text or 1)
    scheduled = round_number % every == every - 1
    started = time.perf_counter()
    if design == "packorder":
        if scheduled:
            run([args.packorder, "gc", "--auto", "-q", str(server)])
    elif design == "git":
        git("-C", str(server), "maintenance", "run", "--auto", "--quiet", git_bin=args.git)
    elif design == "keep":
        git("-C", str(server), "maintenance", "run", "--auto", "--quiet", git_bin=args.git)
        if scheduled and objects_outside(server) > args.keep_drift:
            for keep in (server / "objects" / "pack").glob("*.keep"):
                keep.unlink()
            run([args.packorder, "repack", "-q", "-d", "--write-midx", str(server)])
            (server / "objects" / "pack" / ordered_pack(server)).with_suffix(".keep").write_text("packorder\n")
    return time.perf_counter() - started


def setup(design: str, start: Path, dest: Path, args: argparse.Namespace) -> None:
    design = design.partition("@")[0]
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(start, dest, symlinks=True)
    git("-C", str(dest), "config", "receive.autoGc", "false")  # maintenance runs when the round says
    git("-C", str(dest), "config", "gc.autoDetach", "false")
    git("-C", str(dest), "config", "maintenance.autoDetach", "false")
    if design == "packorder":
        apply_recipe(dest, recipe_text(), args.packorder)
        for setting in args.config:
            key, _, value = setting.partition("=")
            git("-C", str(dest), "config", key, value)
    if design == "keep":
        (dest / "objects" / "pack" / ordered_pack(dest)).with_suffix(".keep").write_text("packorder\n")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--work", type=Path, required=True, help="a directory for the copies and the pushing clone")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--until-git-collapse", action="store_true", help="stop once Git made an all-into-one")
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--files", type=int, default=5)
    parser.add_argument("--designs", default="packorder,git,keep")
    parser.add_argument("--git", default="git", help="the Git whose maintenance is measured (and pushes)")
    parser.add_argument("--packorder", default=str(Path(sys.executable).with_name("packorder")))
    parser.add_argument("--start", choices=("packorder", "git"), default="packorder")
    parser.add_argument("--log-path", default="src")
    parser.add_argument("--blame", default=None)
    parser.add_argument("--keep-drift", type=float, default=0.33)
    parser.add_argument("--reuse-commits", action="store_true", help="take the last run's pushing clone as it is")
    parser.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="set in the packorder design's copy"
    )
    parser.add_argument("--json", type=Path)
    return parser.parse_args()


def pushed_tips(start: Path, args: argparse.Namespace) -> list[str]:
    """The tip of each round's push: made now in a pushing clone, or (--reuse-commits) the
    last run's if it made as many of the same size."""
    tips_file = args.work / "tips.json"
    made = json.loads(tips_file.read_text()) if args.reuse_commits and tips_file.exists() else None
    if made and made["commits"] == args.commits and made["files"] == args.files and len(made["tips"]) >= args.rounds:
        return made["tips"]
    print(f"making {args.rounds} rounds of {args.commits} commits ...", file=sys.stderr)
    tips = make_commits(start, args.work / "pusher", args.rounds, args.commits, args.files)
    tips_file.write_text(json.dumps({"commits": args.commits, "files": args.files, "tips": tips}))
    return tips


def run_rounds(servers: dict[str, Path], tips: list[str], args: argparse.Namespace) -> dict[str, dict]:
    """Each round a push to every design's server, then its maintenance, timed."""
    branch = git("symbolic-ref", "--short", "HEAD", cwd=args.work / "pusher").strip()
    state = {d: {"seconds": [], "all_into_one": 0, "packs": [], "ordered": ordered_pack(s)} for d, s in servers.items()}
    # The designs take turns each round, so that the machine's load falls on all of them alike.
    for r in range(args.rounds):
        for design, server in servers.items():
            # Pushed with the Git on PATH: the newest snapshot's receive-pack leaves each push's .keep.
            git("push", "-q", str(server), f"{tips[r]}:refs/heads/{branch}", cwd=args.work / "pusher", git_bin="git")
            state[design]["seconds"].append(maintain(design, server, args, r))
            now = ordered_pack(server)
            if now != state[design]["ordered"]:
                state[design]["all_into_one"] += 1
                state[design]["ordered"] = now
            state[design]["packs"].append(len(pack_set(server)))
        if args.until_git_collapse and state.get("git", {}).get("all_into_one"):
            break
    return state


def compare_cold_reads(servers: dict[str, Path], report: dict[str, dict], args: argparse.Namespace) -> None:
    """Each design's cold reads at the end, over those of a fresh ordered repack of the first's."""
    fresh = args.work / "fresh.git"
    designs = list(servers)
    setup("fresh", servers[designs[0]], fresh, args)
    for keep in (fresh / "objects" / "pack").glob("*.keep"):
        keep.unlink()
    run([args.packorder, "repack", "-q", str(fresh)])
    reference = cold_reads(fresh, args.log_path, args.blame)
    print("cold reads (128 KiB read-around), over a fresh ordered repack's:")
    print(f"  fresh: {reference}")
    for design in designs:
        reads = cold_reads(servers[design], args.log_path, args.blame)
        report[design]["cold_reads"] = reads
        ratios = ", ".join(f"{w} {reads[w]} ({reads[w] / reference[w]:.3f})" for w in reads)
        print(f"  {design}: {ratios}")
    report["fresh"] = {"cold_reads": reference}


def main() -> int:
    global GIT
    args = parse_args()
    GIT = args.git
    designs = [d for d in args.designs.split(",") if d]
    args.work.mkdir(parents=True, exist_ok=True)
    start = args.work / "start.git"
    if start.exists():
        shutil.rmtree(start)
    git("clone", "-q", "--bare", "--no-local", str(args.repo), str(start))
    if args.start == "packorder":
        run([args.packorder, "repack", "-q", str(start)])
    tips = pushed_tips(start, args)
    servers = {d: args.work / f"{d.replace('@', '-every-')}.git" for d in designs}
    for design, server in servers.items():
        setup(design, start, server, args)
    state = run_rounds(servers, tips, args)
    report: dict[str, dict] = {}
    for design in designs:
        times = state[design]["seconds"]
        print(
            f"{design}: {len(times)} rounds, {sum(times):.2f} s in all, median {statistics.median(times):.3f} s, "
            f"{state[design]['all_into_one']} all-into-one repacks, {state[design]['packs'][-1]} packs at the end",
            flush=True,
        )
        report[design] = {k: v for k, v in state[design].items() if k != "ordered"}
    if args.blame:
        compare_cold_reads(servers, report, args)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
