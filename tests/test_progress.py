"""Git's style of progress line."""

from __future__ import annotations

import io

from packorder.progress import ProgressLine


def printed(*calls: tuple[str, int, int]) -> str:
    """What a progress line writes for these (title, done, total) reports."""
    out = io.StringIO()
    line = ProgressLine(out, min_interval=0)
    for call in calls:
        line(*call)
    return out.getvalue()


def test_end_of_a_phase_is_printed_once() -> None:
    """The poller and the end of the phase both report done == total: one `, done.` line."""
    text = printed(
        ("Resolving deltas", 5, 10),
        ("Resolving deltas", 10, 10),
        ("Resolving deltas", 10, 10),
        ("Writing", 1, 2),
        ("Writing", 2, 2),
    )
    assert text == (
        "\rResolving deltas:  50% (5/10)\rResolving deltas: 100% (10/10), done.\n"
        "\rWriting:  50% (1/2)\rWriting: 100% (2/2), done.\n"
    )


def test_a_phase_may_run_again() -> None:
    text = printed(("Resolving deltas", 2, 2), ("Resolving deltas", 1, 3), ("Resolving deltas", 3, 3))
    assert text.count(", done.\n") == 2
