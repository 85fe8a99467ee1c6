"""Progress display shared by all commands: Git's style of line on stderr, shown only when
stderr is a terminal (or when asked). (A long native call is polled by native_call.run_job.)"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")

ProgressCallback = Callable[[str, int, int], None]
"""(title, done, total): called repeatedly during a phase, then once with done == total."""


class ProgressLine:
    """Git's `Title:  42% (420/1000)` line, rewritten in place, closed with `, done.`"""

    def __init__(self, stream: TextIO | None = None, min_interval: float = 0.1) -> None:
        self.stream = stream or sys.stderr
        self.min_interval = min_interval
        self._title: str | None = None
        self._last = 0.0
        self._last_text = ""
        self._done_title: str | None = None

    def __call__(self, title: str, done: int, total: int) -> None:
        finished = total > 0 and done >= total
        if finished and title == self._done_title:
            return  # the poller and the phase's end both report the end: print it once
        self._done_title = None
        if title != self._title:
            self.close()
            self._title = title
            self._last = 0.0
        now = time.monotonic()
        if not finished and now - self._last < self.min_interval:
            return
        self._last = now
        text = f"{title}: {min(100, done * 100 // total):3d}% ({done}/{total})" if total else f"{title}: {done}"
        if finished:
            self.stream.write(f"\r{text}, done.\n")
            self._title = None
            self._done_title = title
        elif text != self._last_text:
            self.stream.write(f"\r{text}")
        self._last_text = text
        self.stream.flush()

    def close(self) -> None:
        if self._title is not None:
            self.stream.write("\n")
            self.stream.flush()
            self._title = None


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
