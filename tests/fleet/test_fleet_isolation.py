"""One repository's repack in its own process (timeout, memory limit), and the choice of
repositories for a fleet run (--min-gain, --max-hours, --budget, batches)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, git_env

from packorder.fleet import selection
from packorder.fleet.isolation import repack_one
from packorder.fleet.triage import Triage


@pytest.fixture()
def repo(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "repo")
    for c in range(3):
        repo.write("a.txt", f"{c}\n" * 50)
        repo.commit(f"c{c}")
    return repo


def test_a_repack_over_its_time_is_stopped_and_the_repository_stays_valid(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PACKORDER_PAUSE_AT", "locked")  # faults.py: sleeps a minute once locked
    record = repack_one(str(repo.git_dir), "recency", timeout=2, address_space=4 << 30)
    assert record["status"] == "failed" and record["error"] == "timed out after 2 s"
    assert 2 <= record["seconds"] < 20  # SIGTERM stopped it: no wait for SIGKILL
    fsck = subprocess.run(["git", "-C", str(repo.path), "fsck", "--full"], capture_output=True, env=git_env())
    assert fsck.returncode == 0
    # Stopped right after taking gc.pid: the next run takes over the lock of the dead holder.
    monkeypatch.delenv("PACKORDER_PAUSE_AT")
    assert repack_one(str(repo.git_dir), "recency", timeout=60, address_space=4 << 30)["status"] == "done"


def test_a_repack_over_its_memory_limit_fails_alone(repo: Repo) -> None:
    record = repack_one(str(repo.git_dir), "recency", timeout=60, address_space=64 << 20)
    assert record["status"] == "failed"
    assert record["error"] == "out of memory under its address-space limit (64 MiB)"
    assert record["packs_after"] == record["packs_before"] == 0


def test_a_repack_records_its_own_peak_memory_not_its_parents(repo: Repo) -> None:
    # A worker that triaged a large repository is large; the repack it forks must not report
    # the worker's resident size as its own (ru_maxrss survives exec). The large parent is a
    # process of its own: this one's peak is what in-process tests measure.
    parent = (
        "import json, sys\n"
        "from packorder.fleet.isolation import repack_one\n"
        "ballast = bytearray(400 << 20)\n"
        "ballast[:: 1 << 12] = b'x' * len(range(0, len(ballast), 1 << 12))\n"
        "print(json.dumps(repack_one(sys.argv[1], 'recency', timeout=60, address_space=4 << 30)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", parent, str(repo.git_dir)], capture_output=True, env=git_env())
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["status"] == "done"
    assert 0 < record["rss_bytes"] < 300 << 20


def triaged(name: str, gain: float, seconds: float) -> Triage:
    t = Triage(Path(name), "recency", share_now=0.5, share_after=0.5 + gain / 100, estimated_seconds=seconds)
    return t


def test_choice_by_gain_time_and_budget() -> None:
    fleet = [triaged("a", 20, 1800), triaged("b", 10, 7200), triaged("c", 5, 1800), triaged("d", 0.5, 10)]
    chosen = selection.choose(fleet, min_gain=1)
    assert [t.path.name for t in chosen.chosen] == ["a", "b", "c"]
    assert [(t.path.name, why) for t, why in chosen.skipped] == [
        ("d", "predicted gain +0.5 points is below --min-gain 1")
    ]
    chosen = selection.choose(fleet, max_hours=1)
    assert [t.path.name for t in chosen.chosen] == ["a", "c", "d"]
    chosen = selection.choose(fleet, budget_hours=1)
    assert [t.path.name for t in chosen.chosen] == ["a", "c"]  # half an hour each
    assert [(t.path.name, why) for t, why in chosen.skipped] == [
        ("b", "does not fit in what is left of the --budget of 1 h (0.50 h)"),
        ("d", "does not fit in what is left of the --budget of 1 h (0.00 h)"),
    ]
    broken = Triage(Path("e"), "recency", error="corrupt")
    chosen = selection.choose([*fleet, broken], finished={"a"})
    assert (chosen.resumed, chosen.broken, len(chosen.chosen)) == (1, [broken], 3)


def test_small_repositories_share_tasks() -> None:
    fleet = [triaged(f"r{i}", 1, 1.0) for i in range(40)] + [triaged("big", 1, 60.0)]
    groups = selection.batches(fleet, batch_seconds=5, workers=2)
    assert [len(g) for g in groups] == [5] * 8 + [1]
    # Never fewer than 4 tasks a worker: 10 small ones on 2 workers go 1 a task.
    assert [len(g) for g in selection.batches(fleet[:10], batch_seconds=5, workers=2)] == [1] * 10
    assert [len(g) for g in selection.batches(fleet[:6], batch_seconds=0, workers=1)] == [1] * 6
