"""Trace source: Git's `GIT_TRACE_PACK_ACCESS` log.

With `GIT_TRACE_PACK_ACCESS=<file>` Git appends one line per object it asks a pack for, from
`unpack_entry()`; the line ends with `<pack path> <offset>`, and `GIT_TRACE_BARE=1` drops the
`HH:MM:SS.micro packfile.c:N` prefix. The delta bases read on the way to an object, and objects
served from Git's delta base cache, are not logged: the trace holds requests (see `expand`).

A million-line log is parsed with a few numpy passes over the bytes (a Python loop per line
would cost more than the workload's own time budget allows); any line the fast path cannot
vouch for sends the whole log through the exact line-by-line parser instead.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from pathlib import Path

import numpy as np

from packorder.errors import PackError
from packorder.progress import ProgressCallback
from packorder.seek import runner
from packorder.seek.trace import REQUESTS, Recording, Trace

SOURCE = "GIT_TRACE_PACK_ACCESS"

_PREFIX = re.compile(rb"^\d\d:\d\d:\d\d\.\d+ +\S+:\d+ +")
_LINE = re.compile(rb"^(.+) (\d{1,19})$")
_TAIL = 16  # bytes of each path's end that, with its length, name its pack on the fast path


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
    """Bare lines whose only space is the separator and whose paths are 16 bytes or longer,
    parsed without a per-line Python loop; None when any line does not fit."""
    if not data.endswith(b"\n") or _PREFIX.match(data):
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    # The offset: the digits right before each newline, in a window of the 20 bytes there.
    width = 20
    if newlines[0] < width:
        return None
    window = np.lib.stride_tricks.sliding_window_view(buf, width)[newlines - width].astype(np.int16) - 48
    digit = (window >= 0) & (window <= 9)
    # Trailing digits: up to the last byte in the window that is not one (there must be one).
    digit_lens = np.argmin(digit[:, ::-1], axis=1)
    if digit.all(axis=1).any() or digit_lens.min() < 1:
        return None
    sep = newlines - 1 - digit_lens
    starts = np.empty_like(newlines)
    starts[0] = 0
    starts[1:] = newlines[:-1] + 1
    path_lens = sep - starts
    # The byte before the digits is a space, the only one on its line, after a path of at
    # least _TAIL bytes.
    if path_lens.min() < _TAIL or not np.all(buf[sep] == 32) or np.count_nonzero(buf == 32) != len(newlines):
        return None
    window[np.arange(width)[None, :] < (width - digit_lens)[:, None]] = 0  # keep the offset's digits
    if digit_lens.max() <= 15:  # below 2**53: exact in floating point, and a fast product
        offsets = (window.astype(np.float64) @ 10.0 ** np.arange(width - 1, -1, -1)).astype(np.uint64)
    else:
        offsets = window.astype(np.uint64) @ (np.uint64(10) ** np.arange(width - 1, -1, -1, dtype=np.uint64))

    # With one space per line, a path occurs after a newline and before a space exactly as
    # often as lines have that path.
    def lines_with(path: bytes) -> int:
        return data.count(b"\n" + path + b" ") + data.startswith(path + b" ")

    first_path = data[: sep[0]]
    if lines_with(first_path) == len(newlines):  # one pack: the usual case
        return [first_path], np.zeros(len(newlines), dtype=np.int32), offsets
    # A path is named by a hash of its length and its last _TAIL bytes; checked exactly below.
    windows = np.lib.stride_tricks.sliding_window_view(buf, 8)
    with np.errstate(over="ignore"):
        key = path_lens.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        key ^= windows[sep - 16].copy().view(np.uint64).ravel() * np.uint64(0xC2B2AE3D27D4EB4F)
        key ^= windows[sep - 8].copy().view(np.uint64).ravel()
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    sizes = np.bincount(inverse)
    paths = [data[starts[i] : sep[i]] for i in first]
    # The key is a function of the path, so a group holds every line with its path; it holds
    # nothing else exactly when that path is on as many lines as the group has.
    if any(lines_with(path) != sizes[group] for group, path in enumerate(paths)):
        return None
    # Number packs by first appearance, as the line parser does.
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return [paths[i] for i in order], rank[inverse].astype(np.int32), offsets


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
