#!/usr/bin/env python3
"""Send mutated copies of real packs through `packorder index-pack` and compare with Git.

Each run takes one of the given packs, damages it one way (bytes flipped, a range cut out,
bytes inserted, truncated, an entry's header or a delta's size rewritten, entries' bytes
swapped), recomputes the trailer for half of the runs (so that the damage gets past the
checksum to the entry it is in), and indexes it both as a file and through `--stdin` into a
scratch repository. What must hold:

- packorder ends with status 0 or 128, one `fatal:` line, no traceback, no panic, within
  the time limit;
- it agrees with `git index-pack` on whether the pack is good, and where both accept it the
  .idx and .rev are byte-identical;
- on failure nothing is left: no .idx or .rev beside the pack, nothing new in the
  repository's pack directory.

    scripts/mutate_packs.py PACK [PACK ...] [--runs 1000] [--seed 1] [--timeout 60] [--git git]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def mutate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    body = bytearray(data[:-20])
    kind = rng.choice(["flip", "flip-many", "cut", "insert", "truncate", "header", "count", "swap"])
    n = len(body)
    if kind == "flip":
        at = rng.randrange(12, n)
        body[at] ^= 1 << rng.randrange(8)
    elif kind == "flip-many":
        for _ in range(rng.randint(2, 32)):
            body[rng.randrange(12, n)] = rng.randrange(256)
    elif kind == "cut":
        at = rng.randrange(12, n)
        del body[at : at + rng.randint(1, 4096)]
    elif kind == "insert":
        at = rng.randrange(12, n)
        body[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif kind == "truncate":
        del body[rng.randrange(12, n) :]
    elif kind == "header":
        # A size field of some entry's header: a large value, or zero.
        at = rng.randrange(12, n)
        body[at] = rng.choice([0x00, 0x7F, 0xFF, 0x8F])
        if at + 1 < n:
            body[at + 1] = rng.choice([0x00, 0xFF, 0x80])
    elif kind == "count":
        count = int.from_bytes(body[8:12], "big")
        body[8:12] = max(0, count + rng.choice([-1, 1, 1000, -count])).to_bytes(4, "big")
    else:
        a, b = sorted(rng.sample(range(12, n), 2))
        size = rng.randint(1, min(512, n - b))
        body[a : a + size], body[b : b + size] = body[b : b + size], body[a : a + size]
    fixed = rng.random() < 0.5
    trailer = hashlib.sha1(body).digest() if fixed else data[-20:]
    return bytes(body) + trailer, kind + (" (trailer recomputed)" if fixed else "")


def run(cmd: list[str], timeout: float, stdin: bytes | None = None) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=timeout, input=stdin)
    except subprocess.TimeoutExpired:
        return None


def compare(
    label: str,
    git: subprocess.CompletedProcess | None,
    got: subprocess.CompletedProcess,
    mine: Path,
    theirs: Path,
    problems: list[str],
) -> str:
    """What Git and packorder made of one mutated pack: whether both accepted or both refused
    it; every difference (an answer, an index's bytes, a message's form) added to `problems`."""
    err = got.stderr.decode(errors="replace")
    if got.returncode not in (0, 128) or "Traceback" in err or "panicked" in err:
        problems.append(f"{label}: status {got.returncode}: {err.strip()[:300]}")
    if got.returncode == 128 and (err.count("\n") != 1 or not err.startswith("fatal: ")):
        problems.append(f"{label}: not one fatal line: {err[:300]!r}")
    git_ok = git is not None and git.returncode == 0
    if git_ok != (got.returncode == 0):
        problems.append(f"{label}: git {'accepts' if git_ok else 'refuses'}, packorder does not: {err[:200]}")
        return "disagreed"
    if git_ok:
        for ext in (".idx", ".rev"):
            if theirs.with_suffix(ext).exists() and (
                mine.with_suffix(ext).read_bytes() != theirs.with_suffix(ext).read_bytes()
            ):
                problems.append(f"{label}: {ext} differs from Git's")
        return "accepted by both"
    if any(mine.with_suffix(ext).exists() for ext in (".idx", ".rev")):
        problems.append(f"{label}: a refused pack left an index behind")
    return "refused by both"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("packs", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--git", default="git")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sources = [p.read_bytes() for p in args.packs]
    ours = [sys.executable, "-c", "from packorder.cli.launch import main; main()", "index-pack"]
    problems: list[str] = []
    counts = {"accepted by both": 0, "refused by both": 0, "disagreed": 0}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mutate-packs-") as tmp:
        work = Path(tmp)
        repo = work / "repo.git"
        subprocess.run([args.git, "init", "-q", "--bare", str(repo)], check=True)
        for i in range(args.runs):
            data, how = mutate(rng.choice(sources), rng)
            mine, theirs = work / "mine" / "p.pack", work / "theirs" / "p.pack"
            for p in (mine, theirs):
                shutil.rmtree(p.parent, ignore_errors=True)
                p.parent.mkdir()
                p.write_bytes(data)
            git = run([args.git, "index-pack", str(theirs)], args.timeout)
            got = run([*ours, str(mine)], args.timeout)
            label = f"run {i} ({how})"
            if got is None:
                problems.append(f"{label}: packorder index-pack took over {args.timeout} s")
                continue
            outcome = compare(label, git, got, mine, theirs, problems)
            counts[outcome] += 1
            # The same pack through --stdin into a repository: nothing new there on failure.
            before = sorted(p.name for p in (repo / "objects" / "pack").iterdir())
            piped = run([*ours, "--stdin", "--repo", str(repo)], args.timeout, stdin=data)
            if piped is None:
                problems.append(f"{label}: index-pack --stdin took over {args.timeout} s")
            elif piped.returncode != 0:
                after = sorted(p.name for p in (repo / "objects" / "pack").iterdir())
                if after != before:
                    problems.append(f"{label}: --stdin left {sorted(set(after) - set(before))}")
            if (i + 1) % 100 == 0:
                print(f"{i + 1} runs, {len(problems)} problems, {time.perf_counter() - started:.0f} s", flush=True)
    print(f"{args.runs} mutated packs: {counts}; {len(problems)} problems in {time.perf_counter() - started:.0f} s")
    for p in problems[:50]:
        print("  " + p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
