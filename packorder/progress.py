"""Progress display shared by all commands: Git's style of line on stderr, shown only when
stderr is a terminal (or when asked). (A long native call is polled by native_call.run_job.)"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import TextIO, TypeVar

from packorder.units import git_humanise_bytes

T = TypeVar("T")

ProgressCallback = Callable[[str, int, int], None]
"""(title, done, total): called repeatedly during a phase, then once with done == total."""


# Git's throughput (progress.c): a moving average over the last 8 samples, each taken at
# least half a second after the one before, in "misecs" (1024ths of a second).
_TP_SAMPLES = 8
_TP_INTERVAL_NS = 500_000_000
_U32 = 0xFFFFFFFF


def _misecs(ns: int) -> int:
    """Nanoseconds in 1024ths of a second, as Git counts them."""
    return ((ns * 4398) >> 32) & _U32


def throughput_text(total: int, rate: int) -> str:
    """`, 1.20 MiB | 2.40 MiB/s`: `total` bytes, `rate` in bytes per misec (about KiB/s), as
    Git's progress prints them (its unsigned 32-bit arithmetic included)."""
    return f", {git_humanise_bytes(total)} | {git_humanise_bytes((rate * 1024) & _U32, rate=True)}"


class _Throughput:
    def __init__(self, total: int, now_ns: int) -> None:
        self.curr_total = self.prev_total = total
        self.prev_ns = now_ns
        self.avg_bytes = self.avg_misecs = 0
        self.last_bytes = [0] * _TP_SAMPLES
        self.last_misecs = [0] * _TP_SAMPLES
        self.idx = 0
        self.text = ""

    def sample(self, total: int, now_ns: int) -> bool:
        """Git's display_throughput: whether the text changed."""
        self.curr_total = total
        if now_ns - self.prev_ns <= _TP_INTERVAL_NS:
            return False
        misecs = _misecs(now_ns - self.prev_ns)
        count = (total - self.prev_total) & _U32
        self.prev_total, self.prev_ns = total, now_ns
        self.avg_bytes = (self.avg_bytes + count) & _U32
        self.avg_misecs = (self.avg_misecs + misecs) & _U32
        rate = self.avg_bytes // self.avg_misecs if self.avg_misecs else 0
        self.avg_bytes = (self.avg_bytes - self.last_bytes[self.idx]) & _U32
        self.avg_misecs = (self.avg_misecs - self.last_misecs[self.idx]) & _U32
        self.last_bytes[self.idx], self.last_misecs[self.idx] = count, misecs
        self.idx = (self.idx + 1) % _TP_SAMPLES
        self.text = throughput_text(total, rate)
        return True

    def final(self, started_ns: int, now_ns: int) -> str:
        """Git's last word at the end of the phase: all bytes over all of its time."""
        misecs = _misecs(now_ns - started_ns)
        return throughput_text(self.curr_total, (self.curr_total // (misecs or 1)) & _U32)


class ProgressLine:
    """Git's `Title:  42% (420/1000)` line, rewritten in place, closed with `, done.`; with
    `throughput`, the bytes and the rate after the counts (`, 1.20 MiB | 2.40 MiB/s`)."""

    def __init__(self, stream: TextIO | None = None, min_interval: float = 0.1) -> None:
        self.stream = stream or sys.stderr
        self.min_interval = min_interval
        self._title: str | None = None
        self._shown = False
        self._last = 0.0
        self._last_text = ""
        self._last_len = 0
        self._last_counts: tuple[int, int] | None = None
        self._started_ns = 0
        self._tp: _Throughput | None = None
        self._done_title: str | None = None

    def start(self, title: str) -> None:
        """Begin a phase (Git's start_progress), unless it is the one running: its time runs
        from here; nothing is shown before the first report."""
        if title == self._title:
            return
        self.close()
        self._title = title
        self._last = 0.0
        self._last_text = ""
        self._last_len = 0
        self._last_counts = None
        self._started_ns = time.monotonic_ns()
        self._tp = None

    def throughput(self, total: int) -> None:
        """`total` bytes so far in this phase (Git's display_throughput): the first call only
        starts the count, later ones update the rate at most every half second."""
        now = time.monotonic_ns()
        if self._tp is None:
            self._tp = _Throughput(total, now)
        elif self._tp.sample(total, now) and self._title is not None and self._last_counts is not None:
            self(self._title, *self._last_counts)

    def __call__(self, title: str, done: int, total: int) -> None:
        finished = total > 0 and done >= total
        if finished and title == self._done_title:
            return  # the poller and the phase's end both report the end: print it once
        self._done_title = None
        if title != self._title:
            self.start(title)
        self._last_counts = (done, total)
        now = time.monotonic()
        if not finished and now - self._last < self.min_interval:
            return
        self._last = now
        counters = f"{min(100, done * 100 // total):3d}% ({done}/{total})" if total else f"{done}"
        if self._tp is not None:
            counters += self._tp.final(self._started_ns, time.monotonic_ns()) if finished else self._tp.text
        # As Git: spaces over what is left of a longer line before.
        pad = " " * (self._last_len - len(counters) + 1) if len(counters) < self._last_len else ""
        text = f"{title}: {counters}{pad}"
        if finished:
            self.stream.write(f"\r{text}, done.\n")
            self._title = None
            self._shown = False
            self._done_title = title
        elif text != self._last_text:
            self.stream.write(f"\r{text}")
            self._shown = True
            self._last_len = len(counters)
        self._last_text = text
        self.stream.flush()

    def close(self) -> None:
        if self._title is not None and self._shown:
            self.stream.write("\n")
            self.stream.flush()
        self._title = None
        self._shown = False


def start_phase(progress: ProgressCallback | None, title: str) -> None:
    """Begin a phase of `progress` (a ProgressLine; other callbacks have no notion of it)."""
    if isinstance(progress, ProgressLine):
        progress.start(title)


def show_bytes(progress: ProgressCallback | None, total: int) -> None:
    """The bytes a phase of `progress` has read so far, if it shows them (a ProgressLine)."""
    if isinstance(progress, ProgressLine):
        progress.throughput(total)


@contextlib.contextmanager
def closing_line(show: ProgressCallback | None) -> Iterator[ProgressCallback | None]:
    """Close `show`'s line however the work inside ends, so that what follows (an error, the
    result) starts on a line of its own."""
    try:
        yield show
    finally:
        if isinstance(show, ProgressLine):
            show.close()


def auto(quiet: bool = False, force: bool = False) -> ProgressCallback | None:
    """A progress line if stderr is a terminal (or `force`), unless `quiet`."""
    if quiet:
        return None
    if force or sys.stderr.isatty():
        return ProgressLine()
    return None
