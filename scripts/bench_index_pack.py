#!/usr/bin/env python3
"""Benchmark `packorder index-pack` against `git index-pack` on the same packs, and
optionally against the other indexers Git users have: libgit2's (through the library pygit2
bundles: `--libgit2`), dulwich's (`--dulwich`) and gitoxide's (`--gix PATH`, the `gix` binary).

All run alternately on the same file, same thread count where the tool takes one, several
times; we report the median wall time of each, packorder's ratio to it, and each one's peak
RSS (the child's ru_maxrss), and check that every tool wrote the same .idx bytes as Git (and
packorder the same .rev).

    scripts/bench_index_pack.py PACK [PACK...] [--runs 5] [--threads N] [--git /usr/bin/git]
        [--libgit2] [--dulwich] [--gix PATH] [--other-runs N] [--index-arg=--strict ...]
        [--stdin [--pipe]] [--object-format sha256]

`--index-arg` passes an option to both `git index-pack` and `packorder index-pack` (for
example --strict, the object checks a server runs on every push). Both run in an empty bare
repository, as a server indexes the first push of a history (Git 2.47 crashes on --strict
outside one). With `--stdin` the pack comes on standard input and is stored in that
repository, as receive-pack runs index-pack (with --strict, Git reads the .gitattributes
blobs trees name back from the stored pack, which it cannot do with `-o` elsewhere): from the
file itself, or with `--pipe` through a pipe from `cat`, as receive-pack hands it over (both
indexers then read it in Git's reads of 4096 bytes, and make their first pass on one thread).

libgit2's indexer reads a pack as a stream (`git_indexer_append`) and writes a copy of it
beside the index, as `git index-pack --stdin` does; there is no call indexing a pack file in
place. libgit2 and dulwich run in a Python process (about 20 MiB of the peak RSS).
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


def timed(cmd: list[str], cwd: Path | None = None, stdin: Path | None = None, pipe: bool = False) -> Run:
    """Run `cmd` to its end: wall time and its own peak RSS. With `pipe`, `stdin` comes through a
    pipe from `cat`, as receive-pack hands a push to index-pack (not counted in the RSS)."""
    start = time.perf_counter()
    with open(stdin or os.devnull, "rb") as f:
        feeder = subprocess.Popen(["cat"], stdin=f, stdout=subprocess.PIPE) if pipe else None
        feed = feeder.stdout if feeder else f
        proc = subprocess.Popen(cmd, stdin=feed, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
        if feeder:
            feeder.stdout.close()
        # Read to the end before waiting: a child with more to say than a pipe holds blocks.
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        _, status, usage = os.wait4(proc.pid, 0)
        if feeder:
            feeder.wait()
    elapsed = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({status}): {err.strip()}")
    return Run(elapsed, usage.ru_maxrss * 1024)


def mib(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def libgit2_index(pack: str, out_dir: str) -> None:
    """Index `pack` with libgit2's git_indexer (the libgit2 pygit2 ships), into `out_dir`."""
    import ctypes

    from libgit2_ctypes import check, load

    lib = load()
    indexer = ctypes.c_void_p()
    stats = ctypes.create_string_buffer(256)  # git_indexer_progress, with room to spare
    check(lib.git_indexer_new(ctypes.byref(indexer), out_dir.encode(), 0, None, None), "git_indexer_new")
    with open(pack, "rb") as f:
        while chunk := f.read(1 << 20):
            check(lib.git_indexer_append(indexer, chunk, ctypes.c_size_t(len(chunk)), stats), "git_indexer_append")
    check(lib.git_indexer_commit(indexer, stats), "git_indexer_commit")
    lib.git_indexer_free(indexer)


def dulwich_index(pack: str, idx: str) -> None:
    from dulwich.object_format import SHA1
    from dulwich.pack import PackData

    PackData(pack, SHA1).create_index(idx, version=2)


@dataclass
class Tool:
    name: str
    argv: list[str]
    idx: Path  # where its .idx lands (a glob pattern's directory for libgit2)
    runs: list[Run]


def version_of(module: str, expr: str) -> str:
    """A Python library's version, asked of a child: importing it here would raise this
    process's RSS, which a child started from it inherits as the floor of its peak."""
    code = f"import {module}; print({expr})"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def others(pack: Path, work: Path, threads: int, args: argparse.Namespace) -> list[Tool]:
    me = [sys.executable, str(Path(__file__).resolve())]
    tools = []
    if args.libgit2:
        out = work / "libgit2"
        out.mkdir()
        name = "libgit2 " + version_of("pygit2", "pygit2.LIBGIT2_VERSION")
        tools.append(Tool(name, [*me, "--run-libgit2", str(pack), str(out)], out, []))
    if args.dulwich:
        idx = work / "dulwich.idx"
        name = "dulwich " + version_of("dulwich", "'.'.join(map(str, dulwich.__version__))")
        tools.append(Tool(name, [*me, "--run-dulwich", str(pack), str(idx)], idx, []))
    if args.gix:
        version = subprocess.run([args.gix, "--version"], capture_output=True, text=True).stdout.strip()
        out = work / "gix"
        out.mkdir()
        argv = [args.gix, "--threads", str(threads), "free", "pack", "index", "create", "-p", str(pack), str(out)]
        tools.append(Tool(version, argv, out, []))
    return tools


def idx_bytes(tool: Tool) -> bytes:
    if tool.idx.is_dir():
        (found,) = tool.idx.glob("*.idx")
        data = found.read_bytes()
        for f in tool.idx.iterdir():
            f.unlink()
        return data
    return tool.idx.read_bytes()


def bench(pack: Path, runs: int, threads: int, gits: list[str], packorder: list[str], args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-index-pack-") as tmp:
        work = Path(tmp)
        size = pack.stat().st_size
        fed = (" through a pipe" if args.pipe else " from a file on stdin") if args.stdin else ""
        print(f"\n## {pack.name} ({mib(size)}){fed}, {threads} threads, {runs} runs each, alternating")
        results: dict[str, list[Run]] = {g: [] for g in gits}
        ours: list[Run] = []
        tools = others(pack, work, threads, args)
        extra = args.index_arg or []
        repo = work / "empty.git"
        subprocess.run(["git", "init", "-q", "--bare", f"--object-format={args.object_format}", str(repo)], check=True)
        if extra:
            print(f"options given to both: {' '.join(extra)}")

        def index(cmd: list[str], name: str) -> Run:
            if not args.stdin:
                return timed([*cmd, "-o", str(work / f"{name}.idx"), str(pack.resolve())], cwd=repo)
            run = timed([*cmd, "--stdin"], cwd=repo, stdin=pack, pipe=args.pipe)
            for f in (repo / "objects" / "pack").iterdir():
                if f.suffix in (".idx", ".rev"):
                    shutil.move(f, work / f"{name}{f.suffix}")
                else:
                    f.unlink()
            return run

        for i in range(runs):
            for g in gits:
                results[g].append(index([g, "index-pack", f"--threads={threads}", *extra], "git"))
            ours.append(index([*packorder, "index-pack", "-q", f"--threads={threads}", *extra], "ours"))
            if i == 0:
                same = all(
                    (work / f"git{ext}").read_bytes() == (work / f"ours{ext}").read_bytes() for ext in (".idx", ".rev")
                )
                print(f"outputs byte-identical: {'yes' if same else 'NO'}")
            for tool in tools:
                if i >= (args.other_runs or runs):
                    continue
                tool.runs.append(timed(tool.argv))
                same = idx_bytes(tool) == (work / "git.idx").read_bytes()
                if i == 0:
                    print(f"{tool.name}: .idx byte-identical to Git's: {'yes' if same else 'NO'}")
        report(ours, results, tools)


def report(ours: list[Run], results: dict[str, list[Run]], tools: list) -> None:
    """The medians, ratios and peak memory of every tool, then each run's time."""
    ours_t = statistics.median(r.seconds for r in ours)
    ours_m = max(r.peak_rss for r in ours)
    print("| tool | median wall | ratio packorder/tool | peak RSS |")
    print("|---|---|---|---|")
    print(f"| packorder | {ours_t:.2f} s | | {mib(ours_m)} |")
    for g, runs in results.items():
        version = subprocess.run([g, "--version"], capture_output=True, text=True).stdout.split()[-1]
        t = statistics.median(r.seconds for r in runs)
        m = max(r.peak_rss for r in runs)
        print(f"| git {version} ({g}) | {t:.2f} s | {ours_t / t:.2f} | {mib(m)} |")
    for tool in tools:
        t = statistics.median(r.seconds for r in tool.runs)
        m = max(r.peak_rss for r in tool.runs)
        print(f"| {tool.name} ({len(tool.runs)} runs) | {t:.2f} s | {ours_t / t:.2f} | {mib(m)} |")
    print(f"packorder runs: {', '.join(f'{r.seconds:.2f}' for r in ours)}")
    for g, runs in results.items():
        print(f"{g} runs: {', '.join(f'{r.seconds:.2f}' for r in runs)}")
    for tool in tools:
        print(f"{tool.name} runs: {', '.join(f'{r.seconds:.2f}' for r in tool.runs)}")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] in ("--run-libgit2", "--run-dulwich"):
        (libgit2_index if sys.argv[1] == "--run-libgit2" else dulwich_index)(sys.argv[2], sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("packs", nargs="+", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--git", action="append", help="git binary (repeatable; default: git on PATH)")
    ap.add_argument("--libgit2", action="store_true", help="also libgit2's indexer (needs pygit2)")
    ap.add_argument("--dulwich", action="store_true", help="also dulwich's (needs dulwich)")
    ap.add_argument("--gix", metavar="PATH", help="also gitoxide's (`gix free pack index create`)")
    ap.add_argument("--other-runs", type=int, help="runs of those (default: --runs)")
    ap.add_argument("--index-arg", action="append", help="an option for both index-packs (repeatable)")
    ap.add_argument("--stdin", action="store_true", help="feed the pack on stdin into an empty repository")
    ap.add_argument("--pipe", action="store_true", help="with --stdin: through a pipe, as receive-pack does")
    ap.add_argument(
        "--object-format", default="sha1", help="the packs' hash: the empty repository both index in has it (sha256)"
    )
    args = ap.parse_args()
    if args.pipe and not args.stdin:
        ap.error("--pipe feeds --stdin: give both")
    script = shutil.which("packorder")
    packorder = [script] if script else [sys.executable, "-m", "packorder"]
    for pack in args.packs:
        if not pack.is_file():
            raise SystemExit(f"no such pack: {pack}")
        bench(pack, args.runs, args.threads, args.git or ["git"], packorder, args)


if __name__ == "__main__":
    main()
