"""Trace source: Git's `GIT_TRACE_PACK_ACCESS` log.

With `GIT_TRACE_PACK_ACCESS=<file>` Git appends one line per object it asks a pack for, from
`unpack_entry()`; the line ends with `<pack path> <offset>`, and `GIT_TRACE_BARE=1` drops the
`HH:MM:SS.micro packfile.c:N` prefix. The delta bases read on the way to an object, and objects
served from Git's delta base cache, are not logged: the trace holds requests (see `expand`).

A million-line log is parsed natively in one pass (a Python loop per line would cost more
than the workload's own time budget allows); any line the fast path cannot vouch for (Git's
trace prefix, a malformed line) sends the whole log through the exact line-by-line parser.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from pathlib import Path

import numpy as np

from packorder import _native
from packorder.errors import PackError
from packorder.progress import ProgressCallback
from packorder.seek import runner
from packorder.seek.trace import REQUESTS, Recording, Trace

SOURCE = "GIT_TRACE_PACK_ACCESS"

_PREFIX = re.compile(rb"^\d\d:\d\d:\d\d\.\d+ +\S+:\d+ +")
_LINE = re.compile(rb"^(.+) (\d{1,19})$")


class TraceFormatError(PackError):
    """A pack access log line that is not `<pack path> <offset>`."""


def parse(data: bytes) -> tuple[list[bytes], np.ndarray, np.ndarray]:
    """(distinct pack paths, index of each line's path in them, each line's offset)."""
    if not data:
        return [], np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint64)
    fast = _parse_fast(data)
    return fast if fast is not None else _parse_lines(data)


def _parse_lines(data: bytes) -> tuple[list[bytes], np.ndarray, np.ndarray]:
    """The exact parser: one line at a time, with or without Git's trace prefix."""
    paths: dict[bytes, int] = {}
    index: list[int] = []
    offsets: list[int] = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw:
            continue
        line = _PREFIX.sub(b"", raw, count=1)
        m = _LINE.match(line)
        if m is None:
            shown = raw[:120].decode(errors="replace")
            raise TraceFormatError(f"pack access trace, line {number}: not '<pack path> <offset>': {shown!r}")
        index.append(paths.setdefault(m.group(1), len(paths)))
        offsets.append(int(m.group(2)))
    return list(paths), np.array(index, dtype=np.int32), np.array(offsets, dtype=np.uint64)


def _parse_fast(data: bytes) -> tuple[list[bytes], np.ndarray, np.ndarray] | None:
    """Bare `<pack path> <offset>` lines, in one native pass; None when any line is not one."""
    parsed = _native.parse_pack_access(data)
    if parsed is None:
        return None
    paths, index, offsets = parsed
    return paths, np.frombuffer(index, dtype=np.int32), np.frombuffer(offsets, dtype=np.uint64)


def to_trace(data: bytes, cwd: Path | None = None) -> Trace:
    """A trace from the bytes of a pack access log; relative pack paths are taken from `cwd`."""
    paths, index, offsets = parse(data)
    base = Path(cwd) if cwd is not None else Path.cwd()
    packs = tuple((base / os.fsdecode(p)).resolve() for p in paths)
    return Trace(packs, index, offsets, REQUESTS, SOURCE)


def record(command: runner.Command, progress: ProgressCallback | None = None, title: str = "") -> Recording:
    """Run a `git` command with the pack access log on; the requests it made, in order."""
    with tempfile.TemporaryDirectory(prefix="packorder-trace-") as tmp:
        log = Path(tmp) / "pack-access.log"
        env = {**command.env, "GIT_TRACE_PACK_ACCESS": str(log), "GIT_TRACE_BARE": "1"}

        def logged() -> int:
            try:
                size = log.stat().st_size
            except FileNotFoundError:
                return 0
            return size // 80  # about one line per 80 bytes: a progress estimate only

        seconds = runner.run(dataclasses.replace(command, env=env), progress, title, logged)
        data = log.read_bytes() if log.exists() else b""
    trace = to_trace(data, command.cwd)
    if progress is not None:
        progress(title, len(trace), len(trace))
    return Recording(trace, seconds, [command.argv])
