"""Fault injection for the kill tests: the process ends at a named point, as kill -9 would
(no cleanup, no exception handlers).

- PACKORDER_CRASH_AT=NAME ends it at the first point so named;
- PACKORDER_CRASH_AT=#N at the N-th point reached, whatever its name, so that a test can
  kill a run at every step it takes;
- PACKORDER_CRASH_LOG=FILE appends the name of every point reached to FILE (to count them);
- PACKORDER_PAUSE_AT=NAME sleeps there for a minute, for a test to send a signal then.
"""

from __future__ import annotations

import os

_reached = 0


def crash_point(name: str) -> None:
    global _reached
    _reached += 1
    log = os.environ.get("PACKORDER_CRASH_LOG")
    if log:
        with open(log, "a") as f:
            f.write(name + "\n")
    at = os.environ.get("PACKORDER_CRASH_AT")
    if at is not None and (at == name or at == f"#{_reached}"):
        os._exit(137)
    if os.environ.get("PACKORDER_PAUSE_AT") == name:
        import time

        time.sleep(60)
