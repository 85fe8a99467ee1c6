"""The `packorder` and `git-packorder` entry point: `index-pack` goes straight to its own
argument parser (cli/index_pack.py, without click, for its memory); every other command
goes through the click command line in cli.py."""

from __future__ import annotations

import os
import sys


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
