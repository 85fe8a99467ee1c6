"""The repository lock is Git's gc.pid, taken by Git's rule: two live repacks exclude each
other, a repack and `git gc` exclude each other, and a lock left by a dead process costs the
next run one warning."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.gitrepo import build_history, git, git_env

import packorder
from packorder.errors import RepositoryError
from packorder.repacking import lock


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = build_history(tmp_path_factory.mktemp("lock") / "repo", commits=12)
    repo.run("repack", "-adq")
    return repo.path


@pytest.fixture()
def work(base: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "work"
    shutil.copytree(base, dst, symlinks=True)
    return dst


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_dead_holders_lock_is_taken_over_with_one_warning(work: Path) -> None:
    pid_file = work / ".git" / "gc.pid"
    pid_file.write_text(f"{dead_pid()} {socket.gethostname()}")
    warnings: list[str] = []
    result = packorder.repack(work, warn=warnings.append)
    assert len(warnings) == 1 and "no longer running" in warnings[0] and result.warnings == warnings
    assert not pid_file.exists()
    git(work, "fsck", "--full")


def test_the_command_prints_that_warning_and_succeeds(work: Path) -> None:
    (work / ".git" / "gc.pid").write_text(f"{dead_pid()} {socket.gethostname()}")
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "repack", "-q", str(work)],
        capture_output=True,
        text=True,
        env=git_env(),
    )
    assert proc.returncode == 0 and proc.stdout == ""
    assert proc.stderr.startswith("warning: took over ") and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("entry", ["packorder.cli.main", "packorder.cli.launch"])
def test_the_json_result_keeps_that_warning(work: Path, entry: str) -> None:
    """Whether the command line took the lock itself or before it loaded (launch.py's early
    walk), the warning is printed once and is in --json's warnings."""
    (work / ".git" / "gc.pid").write_text(f"{dead_pid()} {socket.gethostname()}")
    proc = subprocess.run(
        [sys.executable, "-c", f"from {entry} import main; main()", "repack", "-q", "--json", str(work)],
        capture_output=True,
        text=True,
        env=git_env(),
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("warning: took over ")
    assert json.loads(proc.stdout)["warnings"] == [line.removeprefix("warning: ")]


def test_a_live_holder_on_this_host_stops_the_repack(work: Path) -> None:
    (work / ".git" / "gc.pid").write_text(f"{os.getppid()} {socket.gethostname()}")
    before = sorted(p.name for p in (work / ".git" / "objects" / "pack").iterdir())
    with pytest.raises(lock.LockHeld, match=f"pid {os.getppid()}"):
        packorder.repack(work)
    assert sorted(p.name for p in (work / ".git" / "objects" / "pack").iterdir()) == before
    assert (work / ".git" / "gc.pid").exists()  # not ours to remove


def test_a_lock_older_than_12_hours_is_stale_even_if_its_pid_lives(work: Path) -> None:
    pid_file = work / ".git" / "gc.pid"
    pid_file.write_text(f"{os.getppid()} {socket.gethostname()}")
    old = time.time() - 13 * 3600
    os.utime(pid_file, (old, old))
    warnings: list[str] = []
    packorder.repack(work, warn=warnings.append)
    assert len(warnings) == 1 and "older than 12 hours" in warnings[0]


def test_a_reused_pid_is_recognised_by_its_start_time(work: Path) -> None:
    """packorder records its start time: a live process with the same pid but another start
    time is not the holder."""
    (work / ".git" / "gc.pid").write_text(f"{os.getppid()} {socket.gethostname()}\npackorder-start 1\n")
    warnings: list[str] = []
    packorder.repack(work, warn=warnings.append)
    assert len(warnings) == 1 and "no longer running" in warnings[0]


def test_two_live_repacks_exclude_each_other(work: Path) -> None:
    held = lock.acquire(work / ".git")
    try:
        with pytest.raises(lock.LockHeld, match="gc is already running"):
            packorder.repack(work)
    finally:
        held.release()
    assert not (work / ".git" / "gc.pid").exists()
    packorder.repack(work)


def test_git_gc_refuses_to_run_beside_a_repack(work: Path) -> None:
    held = lock.acquire(work / ".git")
    try:
        proc = subprocess.run(["git", "-C", str(work), "gc"], capture_output=True, text=True, env=git_env())
        assert proc.returncode != 0 and "gc is already running" in proc.stderr
        auto = subprocess.run(["git", "-C", str(work), "-c", "gc.auto=1", "gc", "--auto"], env=git_env())
        assert auto.returncode == 0  # quiet, as Git's auto gc is when another gc runs
    finally:
        held.release()


def test_a_repack_refuses_to_run_beside_git_gc(work: Path) -> None:
    """A `git gc` in progress holds gc.pid (simulated: Git writes "PID HOST" there)."""
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (work / ".git" / "gc.pid").write_text(f"{sleeper.pid} {socket.gethostname()}")
        with pytest.raises(RepositoryError, match=f"pid {sleeper.pid}"):
            packorder.repack(work)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_lock_is_not_garbage_to_git(work: Path) -> None:
    held = lock.acquire(work / ".git")
    try:
        out = git(work, "count-objects", "-v").decode()
        assert "garbage: 0" in out
    finally:
        held.release()


def test_an_earlier_versions_lock_left_by_a_crash_is_removed(work: Path) -> None:
    legacy = work / ".git" / "objects" / "pack" / "packorder-repack.lock"
    legacy.write_text(f"pid {dead_pid()} on {socket.gethostname()}\n")
    warnings: list[str] = []
    packorder.repack(work, warn=warnings.append)
    assert not legacy.exists() and len(warnings) == 1
    assert "garbage: 0" in git(work, "count-objects", "-v").decode()


def test_a_stale_lockfile_of_gc_pid_is_removed(work: Path) -> None:
    """gc.pid.lock lives for microseconds; one minutes old was left by a killed process."""
    stale = work / ".git" / "gc.pid.lock"
    stale.write_text("")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    warnings: list[str] = []
    packorder.repack(work, warn=warnings.append)
    assert not stale.exists() and len(warnings) == 1
