"""libgit2 as the benchmarks call it: the library pygit2 ships, through ctypes, for the calls
pygit2 does not wrap (the indexer, the pack builder's walk). Imported by the benchmark scripts
from this directory."""

from __future__ import annotations

import ctypes
import glob
import os


def load() -> ctypes.CDLL:
    """The libgit2 pygit2 bundles, initialized (importing pygit2 does that)."""
    import pygit2

    found = glob.glob(os.path.join(os.path.dirname(pygit2.__file__), "..", "pygit2.libs", "libgit2-*.so*"))
    if not found:
        raise SystemExit("no libgit2 library beside pygit2")
    return ctypes.CDLL(found[0])


def check(rc: int, what: str) -> None:
    """A libgit2 call's return code: anything but 0 ends the benchmark, naming the call."""
    if rc != 0:
        raise SystemExit(f"libgit2 {what} failed ({rc})")
