"""Trace source: the `pread64` calls of `git index-pack`, recorded with strace.

`git index-pack` reads the pack once in order (pass 1, with read()), then resolves deltas
reading each base and delta it needs with pread() at its offset (pass 2): one or more preads per
entry read, a large entry in consecutive chunks. Every pread lands in one entry; mapping its
file offset to that entry with the pack's layout gives one access per entry read (consecutive
chunks of one entry by one thread count once).
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
from pathlib import Path

import numpy as np

from packorder.format.layout import PackLayout
from packorder.progress import ProgressCallback
from packorder.seek import runner
from packorder.seek.trace import READS, Recording, Trace

SOURCE = "strace pread64"

# One completed call per match: a whole line, or the `resumed` half of a call split by a
# thread switch (its `<unfinished ...>` half holds nothing we need). strace -P keeps only calls
# on the pack, whichever of Git's threads (each opens the pack) made them.
_CALL = re.compile(
    rb"^(\d+) +(?:pread64\(\d+, |<\.\.\. pread64 resumed>)\"[^\"]*\"(?:\.\.\.)?, (\d+), (\d+)\) += (-?\d+)", re.M
)


def parse(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pid, offset, bytes read) of each successful pread64 in an `strace -f -s 0` log, in the
    order strace saw them complete."""
    calls = _CALL.findall(data)
    if not calls:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.astype(np.uint64), empty.astype(np.uint64)
    table = np.array(calls, dtype="S20").astype(np.int64)
    ok = table[:, 3] > 0
    return table[ok, 0], table[ok, 2].astype(np.uint64), table[ok, 3].astype(np.uint64)


def entry_reads(pids: np.ndarray, offsets: np.ndarray, counts: np.ndarray, layout: PackLayout) -> np.ndarray:
    """Pack positions of the entries read, in order: a pread continuing the same thread's previous
    pread inside the same entry is part of that read; preads outside every entry are dropped."""
    if len(offsets) == 0:
        return np.zeros(0, dtype=np.int64)
    pos = np.searchsorted(layout.offsets, offsets, side="right").astype(np.int64) - 1
    inside = pos >= 0
    inside[inside] = offsets[inside] < layout.ends[pos[inside]]
    pids, offsets, counts, pos = pids[inside], offsets[inside], counts[inside], pos[inside]
    # Compare each pread with the previous one of the same thread.
    order = np.argsort(pids, kind="stable")
    same_thread = pids[order][1:] == pids[order][:-1]
    continues = np.zeros(len(offsets), dtype=bool)
    continues[order[1:]] = (
        same_thread
        & (pos[order][1:] == pos[order][:-1])
        & (offsets[order][1:] == offsets[order][:-1] + counts[order][:-1])
    )
    return pos[~continues]


def record(
    index_pack: runner.Command,
    pack: Path,
    layout: PackLayout,
    progress: ProgressCallback | None = None,
    title: str = "",
) -> Recording:
    """Run `index_pack` (a `git index-pack` of `pack`) under strace; the entries it read."""
    strace = runner.check_program("strace", "the index-pack workload records git index-pack's reads with strace")
    pack = pack.resolve()
    with tempfile.TemporaryDirectory(prefix="packorder-strace-") as tmp:
        log = Path(tmp) / "strace.log"
        argv = [strace, "-f", "-qq", "-s", "0", "-e", "trace=pread64", "-e", "signal=none", "-P", str(pack)]
        argv += ["-o", str(log)]
        traced = dataclasses.replace(index_pack, argv=[*argv, "--", *index_pack.argv])

        def seen() -> int:
            return log.stat().st_size // 100 if log.exists() else 0  # about 100 bytes a line

        seconds = runner.run(traced, progress, title, seen)
        pids, offsets, counts = parse(log.read_bytes())
    positions = entry_reads(pids, offsets, counts, layout)
    zeros = np.zeros(len(positions), dtype=np.int32)
    trace = Trace((pack,), zeros, layout.offsets[positions], READS, SOURCE, positions=positions)
    if progress is not None:
        progress(title, len(trace), len(trace))
    return Recording(trace, seconds, [traced.argv])
