"""Git's style of progress line."""

from __future__ import annotations

import io

import pytest

from packorder import progress
from packorder.progress import ProgressLine, throughput_text
from packorder.units import git_humanise_bytes


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


def test_rates_are_written_as_git_writes_them() -> None:
    assert [git_humanise_bytes(n, rate=True) for n in (1, 2, 1025, (1 << 20) + 1, 5 << 30)] == [
        "1 byte/s",
        "2 bytes/s",
        "1.00 KiB/s",
        "1.00 MiB/s",
        "5.00 GiB/s",
    ]


class Clock:
    """time.monotonic and monotonic_ns, moved by hand."""

    def __init__(self) -> None:
        self.ns = 10**12

    def monotonic(self) -> float:
        return self.ns / 1e9

    def monotonic_ns(self) -> int:
        return self.ns


def test_the_last_line_has_every_byte_over_the_whole_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    """Git's stop_progress: the bytes counted last, over the time since the phase began, in
    1024ths of a second; a rate in bytes per such unit, times 1024, in 32 bits."""
    clock = Clock()
    monkeypatch.setattr(progress, "time", clock)
    out = io.StringIO()
    line = ProgressLine(out, min_interval=0)
    line.start("Receiving objects")
    clock.ns += 100_000_000
    line.throughput(4096)  # the first count: no rate yet
    line("Receiving objects", 1, 3)
    clock.ns += 1_900_000_000
    line.throughput(2_000_000)
    line("Receiving objects", 3, 3)
    misecs = (2_000_000_000 * 4398) >> 32
    rate = 2_000_000 // misecs
    assert out.getvalue().endswith(
        f"\rReceiving objects: 100% (3/3), 1.91 MiB | {git_humanise_bytes(rate * 1024, rate=True)}, done.\n"
    )
    assert throughput_text(5_000_000, 5_000_000) == f", 4.77 MiB | {git_humanise_bytes(825_032_704, rate=True)}"
