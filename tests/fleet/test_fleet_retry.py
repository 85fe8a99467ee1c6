"""A batch of repositories whose worker is killed mid-task: what the dead attempt finished
is kept, so the retry does not repack it again, and a task that fails for good still
records it as done."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.gitrepo import Repo, git_env

pytest.importorskip("distributed")

import dask
from distributed import Client, LocalCluster

from packorder.fleet import run_record as results_mod
from packorder.fleet.cluster import batch_records
from packorder.fleet.task import TOPIC, kept_records, run_batch
from packorder.fleet.triage import Triage

# Where the repack of the repository with loose objects pauses (faults.py): after its pack
# is installed, while it removes the loose objects. The Git-packed one has none.
PAUSE_AT = "loose-removed"


def small(path: Path, commits: int, seed: int) -> Repo:
    repo = Repo(path)
    for c in range(commits):
        repo.write(f"f{(c + seed) % 3}.txt", "".join(f"line {seed} {c} {i}\n" for i in range(20 + c)))
        repo.commit(f"c{c}")
    return repo


def item(repo: Repo) -> dict[str, Any]:
    return {"path": str(repo.git_dir), "order": "recency", "timeout": 300.0, "address_space": 4 << 30}


def fsck(git_dir: Path) -> int:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "fsck", "--full"], capture_output=True, env=git_env()
    ).returncode


def starts(client: Client) -> list[str]:
    return [event["path"] for _, event in client.get_events(TOPIC)]


def once_the_first_is_kept(client: Client, future: Any, first: Repo, second: Repo) -> tuple[str, dict[str, int]]:
    """Wait until the first repository's record is kept and the second's repack is paused
    holding its lock: the worker running the task, and every worker's pid."""
    deadline = time.monotonic() + 60
    while str(first.git_dir) not in kept_records(client, future.key) or not (second.git_dir / "gc.pid").exists():
        assert time.monotonic() < deadline, "the batch never reached its second repository"
        time.sleep(0.05)
    (busy,) = [w for w, keys in client.processing().items() if future.key in keys]
    return busy, client.run(os.getpid)


@pytest.fixture()
def batch(tmp_path: Path) -> tuple[Repo, Repo]:
    packed = small(tmp_path / "packed", commits=3, seed=1)
    packed.run("repack", "-adq")
    loose = small(tmp_path / "loose", commits=4, seed=2)
    return packed, loose


@contextlib.contextmanager
def paused_batch(
    batch: tuple[Repo, Repo], allowed_failures: int, workers: int
) -> Iterator[tuple[Client, Any, str, dict]]:
    """The batch running on a cluster whose repacks pause once their loose objects are
    removed, held there once the first repository's record is kept: (client, the batch's
    future, the busy worker, each worker's pid)."""
    packed, loose = batch
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": allowed_failures}),
        LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        client.run(os.putenv, "PACKORDER_PAUSE_AT", PAUSE_AT)
        future = client.submit(run_batch, [item(packed), item(loose)], pure=False)
        busy, pids = once_the_first_is_kept(client, future, packed, loose)
        yield client, future, busy, pids


def test_the_retry_does_not_repack_what_the_dead_attempt_finished(batch: tuple[Repo, Repo]) -> None:
    packed, loose = batch
    with paused_batch(batch, allowed_failures=1, workers=2) as (client, future, busy, pids):
        client.run(os.unsetenv, "PACKORDER_PAUSE_AT", workers=[w for w in pids if w != busy])
        os.kill(pids[busy], signal.SIGKILL)
        first, second = future.result(timeout=120)
        assert starts(client) == [str(packed.git_dir), str(loose.git_dir), str(loose.git_dir)]
    assert first["status"] == second["status"] == results_mod.DONE, (first, second)
    assert first["worker"] == busy  # the dead attempt's record, returned as it was kept
    assert second["worker"] != busy
    for repo in batch:
        assert fsck(repo.git_dir) == 0
        assert len(repo.pack_files()) == 1


def test_a_task_that_fails_for_good_keeps_what_it_finished(batch: tuple[Repo, Repo]) -> None:
    packed, loose = batch
    with paused_batch(batch, allowed_failures=0, workers=1) as (client, future, busy, pids):
        os.kill(pids[busy], signal.SIGKILL)
        triaged = [Triage(packed.git_dir, "recency"), Triage(loose.git_dir, "recency")]
        first, second = batch_records(client, future, triaged)
    assert first["status"] == results_mod.DONE and first["worker"] == busy
    assert second["status"] == results_mod.FAILED and "KilledWorker" in second["error"], second
    assert second["path"] == str(loose.git_dir)
    assert fsck(loose.git_dir) == 0  # killed while removing loose objects: still valid
