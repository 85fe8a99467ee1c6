"""Git's style of progress line."""

from __future__ import annotations

import io

from packorder.progress import ProgressLine


def test_end_of_a_phase_is_printed_once() -> None:
    """The poller and the end of the phase both report done == total: one `, done.` line."""
    out = io.StringIO()
    line = ProgressLine(out, min_interval=0)
    line("Resolving deltas", 5, 10)
    line("Resolving deltas", 10, 10)
    line("Resolving deltas", 10, 10)
    line("Writing", 1, 2)
    line("Writing", 2, 2)
    assert out.getvalue() == (
        "\rResolving deltas:  50% (5/10)\rResolving deltas: 100% (10/10), done.\n"
        "\rWriting:  50% (1/2)\rWriting: 100% (2/2), done.\n"
    )


def test_a_phase_may_run_again() -> None:
    out = io.StringIO()
    line = ProgressLine(out, min_interval=0)
    line("Resolving deltas", 2, 2)
    line("Resolving deltas", 1, 3)
    line("Resolving deltas", 3, 3)
    assert out.getvalue().count(", done.\n") == 2
