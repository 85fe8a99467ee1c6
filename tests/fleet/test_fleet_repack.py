"""`packorder fleet repack` on a LocalCluster of 2 workers over 30 generated repositories,
among them a corrupt pack, one locked by a live gc, an empty one, a partial clone, a
`git clone --shared` one and one deleted while queued: the results file line by line,
`--resume`, and a worker killed in the middle of a task (the repository stays valid, the task
runs again on another worker)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, git, git_env

pytest.importorskip("distributed")

import dask
from distributed import Client, LocalCluster

import packorder
import packorder.fleet
from packorder.fleet import run_record as results_mod
from packorder.fleet.summary import report
from packorder.repacking import lock as lock_mod


def small(path: Path, commits: int, seed: int) -> Repo:
    repo = Repo(path)
    for c in range(commits):
        repo.write(f"f{(c + seed) % 3}.txt", "".join(f"line {seed} {c} {i}\n" for i in range(20 + c)))
        repo.commit(f"c{c}")
    repo.tag("v1")
    return repo


def fsck(git_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "--git-dir", str(git_dir), "fsck", "--full"], capture_output=True, env=git_env())


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fleet")
    named: dict[str, Path] = {}
    for i in range(24):
        repo = small(root / f"plain{i:02d}", commits=2 + i % 4, seed=i)
        if i % 3 == 0:
            repo.run("repack", "-adq")  # packed by Git; the others loose
        named[f"plain{i:02d}"] = repo.git_dir
    source = named["plain05"].parent
    git(source, "config", "uploadpack.allowFilter", "true")
    git(root, "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{source}", str(root / "partial"))
    named["partial"] = root / "partial" / ".git"
    git(root, "clone", "-q", "--shared", "--no-checkout", str(named["plain06"].parent), str(root / "shared"))
    named["shared"] = root / "shared" / ".git"
    empty = Repo(root / "empty")
    named["empty"] = empty.git_dir
    corrupt = small(root / "corrupt", commits=4, seed=99)
    corrupt.run("repack", "-adq")
    (pack,) = corrupt.pack_files()
    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0xFF  # in the middle of an entry's data: the headers still read
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    named["corrupt"] = corrupt.git_dir
    named["locked"] = small(root / "locked", commits=3, seed=50).git_dir
    # Packed in order, so triage ranks it last but for the empty one: still queued when the
    # first result comes in (one repository a task, two workers).
    named["vanishing"] = small(root / "vanishing", commits=2, seed=60).git_dir
    packorder.repack(named["vanishing"])
    named["root"] = root
    assert len(named) == 31  # 30 repositories and the root
    return named


def test_thirty_repositories_on_two_workers_then_resume(fleet: dict[str, Path], tmp_path: Path) -> None:
    root = fleet["root"]
    results = tmp_path / "fleet.jsonl"
    held = lock_mod.acquire(fleet["locked"])  # this test process is the live holder
    deleted = []

    def progress(counts: packorder.fleet.cluster.Counts) -> None:
        if not deleted:
            shutil.rmtree(fleet["vanishing"].parent)  # queued behind the others (one a task)
            deleted.append(True)

    try:
        run = packorder.fleet.repack([root], results=results, workers=2, batch_seconds=0, progress=progress)
    finally:
        held.release()
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(records) == 30 and len({r["path"] for r in records}) == 30
    by_name = {name: r for name, path in fleet.items() if name != "root" for r in records if r["path"] == str(path)}
    assert len(by_name) == 30
    failed = {name for name, r in by_name.items() if r["status"] == results_mod.FAILED}
    assert failed == {"corrupt", "locked", "vanishing"}, {n: by_name[n]["error"] for n in failed}
    assert "gc is already running" in by_name["locked"]["error"]
    assert by_name["vanishing"]["error"] == "no repository there any more"
    assert by_name["corrupt"]["error"]
    assert (run.done, run.failed, run.skipped, run.workers) == (27, 3, 0, 2)
    # Triage reads the corrupt pack's entry headers, which are whole, and no object: its
    # repack is the one to find the damage, in its own process, and change nothing.
    assert "nothing was changed" in by_name["corrupt"]["error"], by_name["corrupt"]
    for name, r in by_name.items():
        assert r["order"] == "recency" and r["attempts"] == 1 and r["worker"].startswith("tcp://")
        assert r["estimated_seconds"] > 0
        if name in failed:
            continue
        assert r["seconds"] > 0
        assert r["error"] is None and r["verified"] is True and r["verify"] == "produced"
        assert r["rss_bytes"] > 0
        assert fsck(fleet[name]).returncode == 0, name
        if name in ("empty", "shared"):  # nothing of its own: a --shared clone's objects are its alternate's
            assert (r["packs_after"], r["bytes_after"]) == (0, 0), name
        else:
            assert r["packs_after"] >= 1 and r["bytes_after"] > 0, name
    # Loose objects went into one pack; a Git-packed one stayed one pack.
    assert (by_name["plain01"]["packs_before"], by_name["plain01"]["packs_after"]) == (0, 1)
    assert (by_name["plain03"]["packs_before"], by_name["plain03"]["packs_after"]) == (1, 1)
    assert (fleet["partial"] / "objects" / "pack").glob("*.promisor")
    assert fsck(fleet["corrupt"]).returncode != 0  # left as it was: the repack refused it

    # The rerun skips what is done: only the lock's repository is tried again (now free);
    # the corrupt one fails again; the deleted one is gone from the fleet.
    again = packorder.fleet.repack([root], results=results, resume=True, workers=2)
    new = [json.loads(line) for line in results.read_text().splitlines()][30:]
    assert sorted((Path(r["path"]).parent.name, r["status"]) for r in new) == [
        ("corrupt", "failed"),
        ("locked", "done"),
    ]
    assert (again.resumed, again.done, again.failed) == (27, 1, 1)
    assert results_mod.finished(results) >= {str(fleet["locked"])}

    # The report counts each repository by its last record.
    summary = report(results)
    last = {r["path"]: r for r in records + new}
    done = [r for r in last.values() if r["status"] == "done"]
    assert (summary.repositories, summary.done, summary.failed, summary.skipped) == (30, 28, 2, 0)
    assert summary.bytes_before == sum(r["bytes_before"] for r in done) > 0
    assert summary.bytes_after == sum(r["bytes_after"] for r in done)
    assert summary.hours == pytest.approx(sum(r.get("seconds", 0) for r in last.values()) / 3600)
    assert set(summary.errors) == {str(fleet["corrupt"]), str(fleet["vanishing"])}
    code = "from packorder.cli.launch import main; main()"
    png = tmp_path / "fleet.png"
    proc = subprocess.run(
        [sys.executable, "-c", code, "fleet", "report", str(results), "--plot", str(png)], capture_output=True
    )
    assert proc.returncode == 0, proc.stderr
    table = {" ".join(line.split()[:-1]): line.split()[-1] for line in proc.stdout.decode().splitlines()[1:]}
    assert (table["repacked"], table["failed"], table["skipped"]) == ("28", "2", "0")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_worker_killed_mid_task_leaves_the_repository_valid_and_the_task_runs_again(tmp_path: Path) -> None:
    target = small(tmp_path / "target", commits=6, seed=3)
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 1}),
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        # Every repack pauses once locked (faults.py), until the worker is killed; the task's
        # second run, on the other worker or a restarted one, runs without the pause.
        client.run(os.putenv, "PACKORDER_PAUSE_AT", "locked")
        results = tmp_path / "fleet.jsonl"
        outcome: list[object] = []
        runner = threading.Thread(
            target=lambda: outcome.append(
                packorder.fleet.repack(paths=[target.path], results=results, scheduler=cluster.scheduler_address)
            )
        )
        runner.start()
        gc_pid = target.git_dir / "gc.pid"
        deadline = time.monotonic() + 60
        while not gc_pid.exists() or not any(client.processing().values()):
            assert time.monotonic() < deadline, "the repack never took the lock"
            time.sleep(0.05)
        (busy,) = [w for w, keys in client.processing().items() if keys]
        pids = client.run(os.getpid)
        client.run(os.unsetenv, "PACKORDER_PAUSE_AT", workers=[w for w in pids if w != busy])
        os.kill(pids[busy], signal.SIGKILL)
        runner.join(120)
        assert not runner.is_alive()
    (record,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert record["status"] == "done", record
    assert record["attempts"] == 2 and record["worker"] != busy
    assert fsck(target.git_dir).returncode == 0
    assert len(target.pack_files()) == 1
    assert outcome and outcome[0].done == 1


def test_the_command_line(fleet: dict[str, Path], tmp_path: Path) -> None:
    results = tmp_path / "cli.jsonl"
    code = "from packorder.cli.launch import main; main()"
    argv = [sys.executable, "-c", code, "fleet", "repack", "--workers", "1", "--results", str(results)]
    cache = tmp_path / "triage.jsonl"
    for _ in range(2):  # the second run takes the triage from the cache, on the cluster too
        proc = subprocess.run(
            [*argv, "--min-gain", "1", "--triage-cache", str(cache), str(fleet["plain02"].parent)],
            capture_output=True,
            env=git_env(),
        )
        assert proc.returncode == 0, proc.stderr
        assert len(results_mod.read(cache)) == 1
    first, second = results_mod.read(results)
    assert first["status"] == "skipped" and "below --min-gain 1" in first["reason"]
    assert second == first
    proc = subprocess.run([*argv, "--resume", str(tmp_path / "other.jsonl"), "x"], capture_output=True, env=git_env())
    assert proc.returncode == 129 and proc.stderr.startswith(b"error: --resume FILE appends to FILE")
