#!/usr/bin/env python3
"""A SHA-256 copy of a SHA-1 repository, for benchmarks: `git fast-export --all` into a
`git init --object-format=sha256` repository through `git fast-import`, as Git's hash
transition documents it, then `git repack -adf` there.

    scripts/sha256_copy.py SOURCE DEST [--window 10 --depth 50] [--object-format sha1]

`--object-format sha1` makes the same copy in SHA-1: the like-for-like baseline (the same
commits, trees and blobs, packed the same way) for comparing the two hashes.

Two things fast-export alone cannot carry are mended in the stream, and counted on stderr:
gitlinks (submodule commits are SHA-1 ids that name nothing in the copy: dropped), and blobs
a partial clone lacks (replaced by a blob saying so, so the history keeps its shape). Blob
contents come through one `git cat-file --batch`, with GIT_NO_LAZY_FETCH so nothing is
fetched.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", type=Path)
    ap.add_argument("dest", type=Path)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--object-format", default="sha256")
    args = ap.parse_args()
    env = {**os.environ, "GIT_NO_LAZY_FETCH": "1"}
    subprocess.run(["git", "init", "-q", "--bare", f"--object-format={args.object_format}", str(args.dest)], check=True)
    export = subprocess.Popen(
        ["git", "-C", str(args.source), "fast-export", "--all", "--no-data", "--signed-tags=strip", "--reencode=no"],
        stdout=subprocess.PIPE,
        env=env,
    )
    blobs = subprocess.Popen(
        ["git", "-C", str(args.source), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    imp = subprocess.Popen(["git", "-C", str(args.dest), "fast-import", "--quiet"], stdin=subprocess.PIPE)
    assert export.stdout and blobs.stdin and blobs.stdout and imp.stdin
    dropped = missing = 0

    def blob(oid: bytes) -> bytes | None:
        blobs.stdin.write(oid + b"\n")
        blobs.stdin.flush()
        head = blobs.stdout.readline().split()
        if len(head) < 3 or head[1] != b"blob":
            return None
        data = blobs.stdout.read(int(head[2]))
        blobs.stdout.read(1)
        return data

    out = imp.stdin
    src = export.stdout
    while line := src.readline():
        if line.startswith(b"data "):
            # A commit or tag message: copied as is, whatever it holds.
            out.write(line)
            out.write(src.read(int(line.split()[1])))
            continue
        if line.startswith(b"M "):
            mode, oid, path = line[2:].split(b" ", 2)
            if mode == b"160000":
                dropped += 1
                continue
            data = blob(oid)
            if data is None:
                missing += 1
                data = b"blob " + oid + b" is missing from the source (a partial clone)\n"
            out.write(b"M " + mode + b" inline " + path)
            out.write(b"data %d\n" % len(data) + data + b"\n")
            continue
        out.write(line)
    out.close()
    blobs.stdin.close()
    if export.wait() or imp.wait():
        sys.exit("fast-export or fast-import failed")
    blobs.wait()
    print(f"gitlinks dropped: {dropped}; missing blobs replaced: {missing}", file=sys.stderr)
    subprocess.run(
        ["git", "-C", str(args.dest), "repack", "-adfq", f"--window={args.window}", f"--depth={args.depth}"],
        check=True,
    )


if __name__ == "__main__":
    main()
