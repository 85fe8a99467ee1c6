"""`packorder repack` starts Git's walk before the command line loads.

The walk (`git rev-list`) is the longest part of a repack that reuses deltas, and nothing
after it can start before it ends: every millisecond before it starts is a millisecond of
the whole run. Loading click and the commands takes 70-80 ms; so the entry point reads the
few options that decide the walk (the repository, the order, whether the run locks it)
from a plain `repack` command line first, and takes the snapshot (snapshot.py) right away.
The click command then claims it if it parsed the same request, and any other command line
is parsed only by click, as before.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packorder.repacking.snapshot import Snapshot

# repack's options, as cli/repack.py declares them: those taking a value, and the flags.
VALUE_OPTIONS = frozenset(
    {"--order", "--window", "--depth", "--threads", "--cruft-expiration", "--max-cruft-size", "-o", "--verify"}
)
FLAGS = frozenset(
    {
        "-f",
        "--no-reuse-delta",
        "--ref-delta",
        "--repick-backward-deltas",
        "--cruft",
        "-l",
        "--local",
        "--no-local",
        "-b",
        "-B",
        "--write-bitmap-index",
        "--no-write-bitmap-index",
        "-n",
        "--dry-run",
        "-q",
        "--quiet",
        "-v",
        "--verbose",
        "--json",
        # Git's spellings, which change nothing of the walk.
        "-a",
        "-A",
        "-d",
        "-k",
        "--keep-unreachable",
        "-F",
        "-m",
    }
)
# The one-letter flags a script bundles as Git parses them (`-adb`, `-Ad`).
SHORT_FLAGS = frozenset(f[1] for f in FLAGS if len(f) == 2)


def _unbundled(args: list[str]) -> list[str]:
    """`-adb` as `-a -d -b`, when each letter is a flag (a value option stays as it is)."""
    out = []
    for word in args:
        letters = word[1:]
        if len(word) > 2 and word[0] == "-" and word[1] != "-" and all(c in SHORT_FLAGS for c in letters):
            out += [f"-{c}" for c in letters]
        else:
            out.append(word)
    return out


@dataclass(frozen=True)
class WalkRequest:
    repo: Path | None
    lock: bool
    order: str | None
    bitmap: bool | None = None  # -b / -B


def read(args: list[str]) -> WalkRequest | None:
    """The request of a repack command line made only of repack's own options and at most
    one REPO; None for anything else (help, an unknown option, a stray word)."""
    repo: Path | None = None
    order = None
    lock = True
    bitmap: bool | None = None
    args = _unbundled(args)
    i = 0
    while i < len(args):
        word = args[i]
        name, eq, value = word.partition("=")
        if word == "--":
            return None
        if name in VALUE_OPTIONS:
            if not eq:
                if i + 1 >= len(args):
                    return None
                value = args[i + 1]
                i += 1
            if name == "--order":
                order = value
            elif name == "-o":
                lock = False
        elif word in FLAGS:
            if word == "--dry-run":
                lock = False
            elif word in ("-b", "--write-bitmap-index"):
                bitmap = True
            elif word in ("-B", "--no-write-bitmap-index"):
                bitmap = False
        elif word.startswith("-") or repo is not None:
            return None
        else:
            repo = Path(word)
        i += 1
    return WalkRequest(repo, lock, order, bitmap)


_started: tuple[WalkRequest, Snapshot] | None = None


def start(args: list[str]) -> None:
    """Take the snapshot of the repack `args` ask for, if they are plain enough to read
    here; an error is left for the command to meet (and report) again."""
    global _started
    request = read(args)
    if request is None:
        return
    from packorder.cli.base import warn
    from packorder.errors import PackError
    from packorder.repacking import snapshot

    with contextlib.suppress(PackError, OSError):
        _started = (
            request,
            snapshot.take(request.repo, lock=request.lock, order=request.order, warn=warn, bitmap=request.bitmap),
        )


def claim(request: WalkRequest) -> Snapshot | None:
    """The snapshot taken early, if it was taken for exactly this request (else released)."""
    global _started
    started, _started = _started, None
    if started is None:
        return None
    if started[0] != request:
        started[1].close()
        return None
    return started[1]


def discard() -> None:
    """Release an early snapshot no command claimed (a command line click refused)."""
    global _started
    if _started is not None:
        _started[1].close()
        _started = None
