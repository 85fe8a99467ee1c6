#!/usr/bin/env python3
"""Hashing speed of packorder's core against OpenSSL's on this machine: SHA-256 (the `sha2`
crate, on the CPU's SHA instructions where present) and SHA-1 (plain, and with collision
detection as objects are hashed), in MB/s over 1 MiB buffers.

    scripts/bench_hash.py [--runs 5] [--mib 256]

Each run hashes the same buffer with packorder and then has `openssl speed -evp` hash 1 MiB
buffers for a second, alternately; it prints the medians and the ratio.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import time

from packorder import _native

CHUNK = 1 << 20


def ours(algo: str, data: bytes, collision_detection: bool) -> float:
    """MB/s of packorder hashing `data`: a file checksum, or one object (SHA-1 with detection)."""
    start = time.perf_counter()
    if collision_detection:
        _native.object_id(3, data, True, algo)
    else:
        h = _native.FileChecksum(algo)
        view = memoryview(data)
        for at in range(0, len(data), CHUNK):
            h.update(view[at : at + CHUNK])
        h.digest()
    return len(data) / (time.perf_counter() - start) / 1e6


def openssl(algo: str) -> float:
    """MB/s of `openssl speed -evp ALGO` on 1 MiB buffers (its own measure, in kB/s of 1000 bytes)."""
    out = subprocess.run(
        ["openssl", "speed", "-seconds", "1", "-bytes", str(CHUNK), "-evp", algo],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    line = next(line for line in out.splitlines() if line.lower().startswith(algo))
    return float(re.findall(r"([\d.]+)k", line)[-1]) / 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mib", type=int, default=256)
    args = ap.parse_args()
    data = os.urandom(args.mib << 20)
    cases = [("sha256", False), ("sha1", False), ("sha1", True)]
    results: dict[tuple[str, bool], tuple[list[float], list[float]]] = {c: ([], []) for c in cases}
    for _ in range(args.runs):
        for case in cases:
            results[case][0].append(ours(case[0], data, case[1]))
            results[case][1].append(openssl(case[0]))
    print(f"{'hash':<28} {'packorder MB/s':>15} {'openssl MB/s':>13} {'ratio':>6}")
    for (algo, detect), (mine, theirs) in results.items():
        a, b = statistics.median(mine), statistics.median(theirs)
        name = f"{algo} (collision detection)" if detect else algo
        print(f"{name:<28} {a:>15.0f} {b:>13.0f} {a / b:>6.2f}")


if __name__ == "__main__":
    main()
