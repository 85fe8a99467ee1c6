"""The `packorder` and `git-packorder` entry point: `index-pack` goes straight to its own
argument parser (cli/index_pack.py, without click, for its memory); every other command
goes through the click command line in cli/main.py."""

from __future__ import annotations

import os
import sys


def _auto_gc(args: list[str]) -> bool:
    """`gc --auto [-q] [REPO]` answered before click and the commands load (a server may
    run it after every push): with nothing to do, before numpy and the repack load too (70
    ms instead of 250); with -q, the run itself, which prints nothing. False for any other
    command line, which click parses."""
    words = [a for a in args if a not in ("--auto", "-q", "--quiet")]
    if "--auto" not in args or len(words) > 1 or any(w.startswith("-") for w in words):
        return False
    repo = words[0] if words else None
    from packorder.repacking.auto import nothing_to_do

    if nothing_to_do(repo):
        return True
    if "-q" not in args and "--quiet" not in args:
        return False
    from packorder.cli.base import guarded, warn
    from packorder.repacking.maintenance import gc

    guarded(lambda: gc(repo, auto=True, quiet=True, warn=warn) and None)()
    return True


def main() -> None:
    from packorder.cli.base import stop_on_termination

    stop_on_termination()  # before the early walk takes the lock
    try:
        # `git packorder ...` runs the git-packorder script: its messages name the command so.
        prog = "git packorder" if os.path.basename(sys.argv[0]).startswith("git-") else "packorder"
        if sys.argv[1:2] == ["index-pack"]:
            from packorder.cli.index_pack import main as index_pack_main

            index_pack_main(sys.argv[2:], prog=prog + " index-pack")
            return
        if sys.argv[1:2] == ["repack"]:
            from packorder.cli import early_walk

            early_walk.start(sys.argv[2:])
        if sys.argv[1:2] == ["gc"] and _auto_gc(sys.argv[2:]):
            return
        try:
            from packorder.cli.main import main as cli_main

            cli_main(prog_name=prog)
        finally:
            if "packorder.cli.early_walk" in sys.modules:
                sys.modules["packorder.cli.early_walk"].discard()
    except KeyboardInterrupt as e:
        # Interrupted while the commands load, before their own handling is in place.
        from packorder.cli.base import SIGNALLED, fail
        from packorder.errors import interruption

        stopped = interruption(e)
        fail(str(stopped), SIGNALLED + stopped.signum)
