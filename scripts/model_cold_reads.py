#!/usr/bin/env python3
"""Modelled cold disk reads of each workload under each order: the simulator's re-laid traces
(expanded through delta chains and the delta base cache, as Git reads them) counted with
`packorder.seek.coldreads` (mmap read-around). Judges a layout's cold time in seconds, where
`experiment --cold-iops` takes many minutes; docs/locality.md compares the two.

    scripts/model_cold_reads.py REPO [--orders recency,history,...] [-w log,log-path,blame,pack-recent]
                                [--readahead 128k]

Prints, per workload, each order's reads and their ratio to the first order's, beside its
share of seeks under 2 MiB (raw / expanded). Any Git-traced workload of seekstats (NAME or
NAME:PATH; log-patch, diff-tags, fetch-bitmap, clone, archive, grep too) but custom;
index-pack reads with pread, not a mapping, and is left out.
"""

from __future__ import annotations

import argparse
import sys

from packorder.cli.base import parse_size
from packorder.seek.analyze import entry_ranges
from packorder.seek.api import measure
from packorder.seek.coldreads import disk_reads
from packorder.seek.expand import expand
from packorder.seek.simulator import plan, relay, simulate_views
from packorder.seek.workload_catalog import CATALOG


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--orders", default="recency,history")
    parser.add_argument("-w", "--workloads", default="log,log-path,blame,pack-recent")
    parser.add_argument("--readahead", default="128k", help="bytes read around each fault (read_ahead_kb)")
    args = parser.parse_args()
    orders = [o for o in args.orders.split(",") if o]
    readahead = parse_size(args.readahead) or 0
    planned = plan(args.repo, orders)
    for workload in [w for w in args.workloads.split(",") if w]:
        info = CATALOG.get(workload.partition(":")[0])
        if info is not None and not info.traced_by_git:
            sys.exit(f"{workload} reads with pread, not a mapping: the read-around model does not apply")
        measured = measure(args.repo, workload)
        cells, first = [], None
        for pack in planned:
            trace, layouts = relay(measured.trace, measured.layouts, pack.layout)
            read = expand(trace, layouts, measured.result.cache_limit)
            starts, ends = entry_ranges(read, layouts)
            count = disk_reads(read.pack_index, starts, ends, readahead)
            first = first or count
            shares = "/".join(f"{100 * v.below_threshold:.2f}" for v in simulate_views(measured, pack).views)
            cells.append(f"{pack.order} {count} ({count / first:.2f}) {shares}")
        print(f"{workload:12s} " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
