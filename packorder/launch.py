"""The `packorder` and `git-packorder` entry point: `index-pack` goes straight to its own
argument parser (index_pack_command.py, without click, for its memory); every other command
goes through the click command line in cli.py."""

from __future__ import annotations

import os
import sys


def main() -> None:
    from packorder.cli_base import stop_on_termination

    stop_on_termination()  # before the early walk takes the lock
    try:
        # `git packorder ...` runs the git-packorder script: its messages name the command so.
        prog = "git packorder" if os.path.basename(sys.argv[0]).startswith("git-") else "packorder"
        if sys.argv[1:2] == ["index-pack"]:
            from packorder.index_pack_command import main as index_pack_main

            index_pack_main(sys.argv[2:], prog=prog + " index-pack")
            return
        if sys.argv[1:2] == ["repack"]:
            from packorder import early_walk

            early_walk.start(sys.argv[2:])
        try:
            from packorder.cli import main as cli_main

            cli_main(prog_name=prog)
        finally:
            if "packorder.early_walk" in sys.modules:
                sys.modules["packorder.early_walk"].discard()
    except KeyboardInterrupt as e:
        # Interrupted while the commands load, before their own handling is in place.
        from packorder.cli_base import SIGNALLED, fail
        from packorder.errors import interruption

        stopped = interruption(e)
        fail(str(stopped), SIGNALLED + stopped.signum)
