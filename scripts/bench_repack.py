#!/usr/bin/env python3
"""Benchmark `packorder repack` against `git repack` on copies of the same repository.

Two modes, each with the same window, depth and threads on both sides:
- reuse: `git repack -ad` against `packorder repack` (stored deltas reused; objects that are
  not reused deltas searched with the window, as Git does);
- fresh: `git repack -adf` against `packorder repack -f` (every delta searched anew).
packorder runs once for each verification level of `--levels` (default: produced, the
default level, then crc and full).
Bitmaps are off on both sides (`-c repack.writeBitmaps=false`, `--no-write-bitmap-index`) so
both do the same work; `--bitmaps` turns them on on both sides instead (each writes a pack
bitmap; packorder falls back to a multi-pack-index bitmap only beside packs it keeps), as
a bare repository gets them by default. Every run gets a fresh copy of the repository (the copy is not timed);
the tools run alternately (each first in turn, after a sync), several times; we report the median wall time of each, the
ratio to Git's, peak RSS (the child's ru_maxrss, median over runs) and the pack size.

A partial clone's copy is set up so that Git accepts to repack it (repository format 1,
extensions.partialclone, a promisor remote); with `--drop-promisor` its `.promisor` files
are removed instead, making it a normal repository (only right when no object is missing).
In a partial clone, `git repack` repacks the objects of promisor packs by id alone, without
the paths that sort them for the delta search (its -adf pack can be far larger and slower to
make). `--git-pack-objects` runs, as the Git side, the `git pack-objects` command that
`git repack -ad(f)` runs in a normal repository (paths included; `--missing=allow-any` for
the objects a partial clone lacks), which compares the delta searches themselves.

`--libgit2` adds, in the fresh mode, libgit2's pack builder (the libgit2 pygit2 ships, called
directly): every ref and HEAD walked (`git_packbuilder_insert_walk`), annotated tags added,
one pack written with new deltas (libgit2 reuses none; its window and depth are fixed at 10
and 50, the defaults here). It writes the pack and its index, nothing more: no verification,
no old pack removed.

`--gix PATH` adds, in the reuse mode, gitoxide's `gix free pack create -e tree-traversal`
from every ref's commit (tags peeled; the tips listed before timing): one pack of the
commits, trees and blobs they reach, stored deltas reused, no tag objects, no index, no
verification, nothing removed.

`--dulwich` adds, in the reuse mode, dulwich's `porcelain.gc(prune=False)`: it reads every
object into memory and writes them into one pack in place of the old ones.

`--cruft` compares `git repack --cruft -d` (unreachable objects into a cruft pack, as `git
gc` repacks) with packorder, which always does that; `--cruft-expiration DATE` passes the
date to both. Without `--cruft`, `git repack -ad` drops unreachable packed objects, and the
comparison is fair only on a repository that has none (a fresh clone).

    scripts/bench_repack.py REPO [--runs 5] [--modes reuse,fresh] [--levels produced,crc,full] [--baseline PYTHON]
        [--git-walk]
                           [--window 10] [--depth 50] [--threads N] [--cruft]
                           [--cruft-expiration DATE] [--drop-promisor] [--git-pack-objects]
                           [--git git] [--libgit2] [--gix PATH] [--dulwich] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO


@dataclass
class Run:
    seconds: float
    cpu: float  # user + system seconds of the child
    peak_rss: int
    pack_bytes: int
    objects: int


@dataclass
class Variant:
    name: str
    mode: str
    runs: list[Run] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(r.seconds for r in self.runs)

    @property
    def cpu(self) -> float:
        return statistics.median(r.cpu for r in self.runs)

    @property
    def rss(self) -> int:
        return int(statistics.median(r.peak_rss for r in self.runs))


def mib(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def git_dir_of(repo: Path) -> Path:
    return repo / ".git" if (repo / ".git").is_dir() else repo


TMP_PACK = ".tmp-bench-pack"


LIBGIT2_OUT = "libgit2-pack"
GIX_OUT = "gix-pack"


def pack_totals(repo: Path, prefix: str = "pack-", pack_dir: Path | None = None) -> tuple[int, int]:
    """(bytes of the .pack files whose names start with `prefix`, objects their headers count)."""
    pack_dir = pack_dir or git_dir_of(repo) / "objects" / "pack"
    size = objects = 0
    for pack in pack_dir.glob(f"{prefix}*.pack"):
        size += pack.stat().st_size
        with open(pack, "rb") as f:
            objects += int.from_bytes(f.read(12)[8:12], "big")
    return size, objects


def prepare_copy(src: Path, dst: Path, git: str, drop_promisor: bool) -> None:
    shutil.copytree(src, dst, symlinks=True)
    pack_dir = git_dir_of(dst) / "objects" / "pack"
    for f in pack_dir.glob("*"):
        f.chmod(0o644)
    promisor = list(pack_dir.glob("*.promisor"))
    if not promisor:
        return
    if drop_promisor:
        for p in promisor:
            p.unlink()
        return
    for key, value in (
        ("core.repositoryformatversion", "1"),
        ("extensions.partialclone", "origin"),
        ("remote.origin.promisor", "true"),
    ):
        subprocess.run([git, "--git-dir", str(git_dir_of(dst)), "config", key, value], check=True)


def timed(cmd: list[str], cwd: Path | None = None, stdin: BinaryIO | None = None) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS of `cmd` (a failure ends the benchmark)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
    assert proc.stderr is not None
    err = proc.stderr.read()  # drained while it runs, so the child never blocks on the pipe
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({status}): {err.decode(errors='replace').strip()}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def libgit2_pack(repo: str, out_dir: str, threads: int) -> None:
    """Write one pack of everything reachable with libgit2's pack builder, into `out_dir`."""
    import ctypes

    import pygit2
    from libgit2_ctypes import check, load

    lib = load()
    handle, pb, walk = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    check(lib.git_repository_open(ctypes.byref(handle), repo.encode()), "git_repository_open")
    check(lib.git_packbuilder_new(ctypes.byref(pb), handle), "git_packbuilder_new")
    lib.git_packbuilder_set_threads(pb, threads)
    check(lib.git_revwalk_new(ctypes.byref(walk), handle), "git_revwalk_new")
    check(lib.git_revwalk_push_glob(walk, b"refs/*"), "git_revwalk_push_glob")
    lib.git_revwalk_push_head(walk)  # an unborn HEAD adds nothing
    # The walk takes commits and their trees; tag objects, and refs naming a tree or a blob, by name.
    opened = pygit2.Repository(repo)
    for name in opened.references:
        ref = opened.references[name]
        if ref.type == pygit2.enums.ReferenceType.SYMBOLIC:
            continue
        if opened[ref.target].type != pygit2.enums.ObjectType.COMMIT:
            check(lib.git_packbuilder_insert_recur(pb, ctypes.c_char_p(ref.target.raw), None), "insert_recur")
    check(lib.git_packbuilder_insert_walk(pb, walk), "git_packbuilder_insert_walk")
    check(lib.git_packbuilder_write(pb, out_dir.encode(), 0, None, None), "git_packbuilder_write")


def dulwich_gc(repo: str) -> None:
    from dulwich import porcelain

    porcelain.gc(repo, prune=False)


def commands(args: argparse.Namespace, copy: Path, variant: str, mode: str) -> list[str]:
    fresh = mode == "fresh"
    if variant == "gix":
        out = copy / GIX_OUT
        out.mkdir()
        listed = subprocess.run(
            [args.git, "--git-dir", str(git_dir_of(copy)), "for-each-ref", "--format=%(objectname) %(*objectname)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
        tips = sorted({line.split()[-1] for line in listed if line.strip()})
        return [args.gix, "free", "pack", "create", "-r", str(copy), "-e", "tree-traversal", "-o", str(out), *tips]
    if variant == "dulwich":
        return [sys.executable, str(Path(__file__).resolve()), "--run-dulwich", str(copy)]
    if variant == "libgit2":
        out = copy / LIBGIT2_OUT
        out.mkdir()
        return [sys.executable, str(Path(__file__).resolve()), "--run-libgit2", str(copy), str(out), str(args.threads)]
    window, depth, threads = f"--window={args.window}", f"--depth={args.depth}", f"--threads={args.threads}"
    if variant == "git" and args.git_pack_objects:
        out = git_dir_of(copy) / "objects" / "pack" / TMP_PACK
        return (
            [args.git, "--git-dir", str(git_dir_of(copy)), "pack-objects", window, depth, threads]
            + (["--no-reuse-delta"] if fresh else [])
            + ["--quiet", "--delta-base-offset", str(out), "--keep-true-parents", "--honor-pack-keep"]
            + ["--non-empty", "--all", "--reflog", "--indexed-objects", "--missing=allow-any"]
        )
    expiration = [f"--cruft-expiration={args.cruft_expiration}"] if args.cruft_expiration else []
    if variant == "git":
        bitmaps = "true" if args.bitmaps else "false"
        return (
            [args.git, "-C", str(copy), "-c", f"repack.writeBitmaps={bitmaps}", "repack", "-dq"]
            + (["--cruft", *expiration] if args.cruft else ["-a"])
            + (["-f"] if fresh else [])
            + [window, depth, threads]
        )
    verify = variant.split()[-1]
    python = args.baseline if variant.startswith("baseline ") else sys.executable
    # packorder.walk = git for this run only, as `git -c` would set it.
    walk = ["env", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=packorder.walk", "GIT_CONFIG_VALUE_0=git"]
    return (
        (walk if variant.startswith("git-walk ") else [])
        + [
            # -I: the interpreter's own packorder, never one in the working directory.
            python,
            "-I",
            "-m",
            "packorder",
            "repack",
            "-q",
            f"--verify={verify}",
            *expiration,
        ]
        + (["--write-bitmap-index"] if args.bitmaps else ["--no-write-bitmap-index"])
        + (["-f"] if fresh else [])
        + [window, depth, threads, str(copy)]
    )


def bench(args: argparse.Namespace) -> dict:
    repo: Path = args.repo.resolve()
    version = subprocess.run([args.git, "--version"], capture_output=True, text=True).stdout.strip()
    before_size, before_objects = pack_totals(repo)
    print(f"## {repo} ({mib(before_size)} in packs, {before_objects} objects)")
    if args.git_pack_objects:
        print("Git side: the `git pack-objects` command of `git repack`, run directly (--git-pack-objects)")
    print(
        f"{version}; window {args.window}, depth {args.depth}, threads {args.threads}, {args.runs} runs each, "
        f"alternating; load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    ours = [f"packorder {lv}" for lv in args.levels]
    if args.git_walk:
        ours += [f"git-walk {lv}" for lv in args.levels]
    if args.baseline:
        ours += [f"baseline {lv}" for lv in args.levels]
    variants = [Variant(v, m) for m in args.modes for v in ("git", *ours)]
    if args.libgit2 and "fresh" in args.modes:
        variants.append(Variant("libgit2", "fresh"))
    if args.gix and "reuse" in args.modes:
        variants.append(Variant("gix", "reuse"))
    if args.dulwich and "reuse" in args.modes:
        variants.append(Variant("dulwich", "reuse"))
    with tempfile.TemporaryDirectory(prefix="bench-repack-", dir=args.tmp) as tmp:
        for i in range(args.runs):
            # Each tool runs first in turn, so none always follows the same one (whose
            # writes the kernel may still be flushing); the copy is on disk before the clock.
            turn = i % len(variants)
            for v in variants[turn:] + variants[:turn]:
                copy = Path(tmp) / "repo"
                prepare_copy(repo, copy, args.git, args.drop_promisor)
                os.sync()
                seconds, cpu, rss = timed(commands(args, copy, v.name, v.mode))
                prefix = TMP_PACK if v.name == "git" and args.git_pack_objects else "pack-"
                out_dir = {"libgit2": copy / LIBGIT2_OUT, "gix": copy / GIX_OUT}.get(v.name)
                size, objects = pack_totals(copy, "" if v.name == "gix" else prefix, out_dir)
                if i == 0 and v.name == "libgit2":
                    # Its pack must hold what the repository holds: index it as Git would.
                    (pack,) = (copy / LIBGIT2_OUT).glob("*.pack")
                    subprocess.run(
                        [args.git, "index-pack", "-o", str(copy / "check.idx"), str(pack)],
                        check=True,
                        stdout=subprocess.DEVNULL,
                    )
                if i == 0 and args.fsck:
                    subprocess.run([args.git, "-C", str(copy), "fsck", "--full", "--no-dangling"], check=True)
                v.runs.append(Run(seconds, cpu, rss, size, objects))
                shutil.rmtree(copy)
                print(
                    f"  run {i + 1} {v.mode:5} {v.name:14} {seconds:7.2f} s (cpu {cpu:7.2f} s) "
                    f"{mib(rss):>10}  {mib(size)}",
                    flush=True,
                )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for mode in args.modes:
        rows = [v for v in variants if v.mode == mode]
        base = rows[0]
        git_side = (
            "git pack-objects" if args.git_pack_objects else "git repack --cruft -d" if args.cruft else "git repack -ad"
        )
        label = f"{git_side} / packorder repack" if mode == "reuse" else f"{git_side} (-f) / packorder repack -f"
        print(f"\n### {mode}: {label}")
        print(
            "| tool | median wall | ratio to git | median CPU | CPU ratio | peak RSS | RSS ratio "
            "| pack size | size ratio | objects |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for v in rows:
            size = v.runs[0].pack_bytes
            print(
                f"| {v.name} | {v.median:.2f} s | {v.median / base.median:.2f} | {v.cpu:.2f} s | "
                f"{v.cpu / base.cpu:.2f} | {mib(v.rss)} | "
                f"{v.rss / base.rss:.2f} | {mib(size)} ({size}) | {size / base.runs[0].pack_bytes:.4f} | "
                f"{v.runs[0].objects} |"
            )
        for v in rows:
            print(f"{v.name} runs: {', '.join(f'{r.seconds:.2f}' for r in v.runs)}")
    return {
        "repo": str(repo),
        "git": version,
        "window": args.window,
        "depth": args.depth,
        "threads": args.threads,
        "git_side": "pack-objects" if args.git_pack_objects else "repack",
        "variants": [{"name": v.name, "mode": v.mode, "runs": [asdict(r) for r in v.runs]} for v in variants],
    }


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--run-libgit2":
        libgit2_pack(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--run-dulwich":
        dulwich_gc(sys.argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--modes", default="reuse,fresh", help="comma-separated: reuse, fresh")
    ap.add_argument("--levels", default="produced,crc,full", help="packorder's --verify levels, comma-separated")
    ap.add_argument("--cruft", action="store_true", help="Git side: git repack --cruft -d")
    ap.add_argument("--cruft-expiration", metavar="DATE", help="passed to both (with --cruft)")
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--drop-promisor", action="store_true", help="remove .promisor files from the copies")
    ap.add_argument(
        "--git-pack-objects", action="store_true", help="Git side: git repack's pack-objects command, with paths"
    )
    ap.add_argument("--fsck", action="store_true", help="git fsck --full each tool's first pack")
    ap.add_argument(
        "--bitmaps",
        action="store_true",
        help="both sides write a reachability bitmap (what a bare repository gets by default)",
    )
    ap.add_argument("--libgit2", action="store_true", help="fresh mode: also libgit2's pack builder (needs pygit2)")
    ap.add_argument("--gix", metavar="PATH", help="reuse mode: also gitoxide's `gix free pack create`")
    ap.add_argument("--dulwich", action="store_true", help="reuse mode: also dulwich's gc (needs dulwich)")
    ap.add_argument("--git", default="git", help="git binary (default: git on PATH)")
    ap.add_argument(
        "--baseline",
        metavar="PYTHON",
        help="also run packorder from another installation (its python), as 'baseline LEVEL', to compare builds",
    )
    ap.add_argument("--git-walk", action="store_true", help="also packorder with packorder.walk = git (Git's rev-list)")
    ap.add_argument("--tmp", default=None, help="directory for the copies (default: the system's)")
    ap.add_argument("--json", type=Path, help="also write the raw runs here")
    args = ap.parse_args()
    if args.bitmaps and args.git_pack_objects:
        ap.error("--bitmaps compares `git repack` with packorder; it cannot go with --git-pack-objects")
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    args.levels = [v.strip() for v in args.levels.split(",") if v.strip()]
    if not set(args.levels) <= {"produced", "crc", "full"}:
        raise SystemExit("--levels takes produced, crc and/or full")
    if args.cruft_expiration and not args.cruft:
        raise SystemExit("--cruft-expiration goes with --cruft")
    if not set(args.modes) <= {"reuse", "fresh"}:
        raise SystemExit("--modes takes reuse and/or fresh")
    if not git_dir_of(args.repo).joinpath("objects").is_dir():
        raise SystemExit(f"not a repository: {args.repo}")
    doc = bench(args)
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
