"""`experiment --cold-iops`: cold runs limited to N disk reads a second (cgroup v1 blkio).
What can be checked without timing: the workload's reads are counted against the limit's
cgroup, this process returns to its own cgroup, nothing is left behind, and every refusal is
one clear error before anything is made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import Repo, git_env

import packorder
from packorder.errors import UsageError
from packorder.seek import throttle


def blkio_usable(path: Path) -> bool:
    try:
        throttle.check(path, 1)
    except UsageError:
        return False
    return True


def own_cgroups() -> str:
    return Path("/proc/self/cgroup").read_text()


def test_reads_of_a_workload_are_counted_against_the_limit(tmp_path: Path) -> None:
    if not blkio_usable(tmp_path):
        pytest.skip("needs root, a cgroup v1 blkio hierarchy and a block device under the temporary directory")
    data = tmp_path / "data"
    with data.open("wb") as f:
        f.write(os.urandom(4 << 20))
        f.flush()
        os.fsync(f.fileno())  # dirty pages cannot be dropped
    fd = os.open(data, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    before = own_cgroups()
    with throttle.ReadLimit(tmp_path, 10_000) as limit:
        assert limit.group.is_dir() and limit.reads() == 0
        with limit.applied():
            assert any(line.endswith(f":/{limit.group.name}") for line in own_cgroups().splitlines())
            subprocess.run(["cat", str(data)], check=True, stdout=subprocess.DEVNULL)
        assert own_cgroups() == before
        assert limit.reads() > 0
        subprocess.run(["cat", str(data)], check=True, stdout=subprocess.DEVNULL)
        group = limit.group
    assert not group.exists()


def test_refusals_are_clear(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="positive number"):
        throttle.check(tmp_path, 0)
    shm = Path("/dev/shm")
    if shm.is_dir() and os.major(os.stat(shm).st_dev) == 0:
        with pytest.raises(UsageError, match="has no block device of its own"):
            throttle.check(shm / "not" / "made", 100)
        assert not (shm / "not").exists()


def test_cli_refuses_a_limit_without_timed_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for args, status, message in [
        (["--cold-iops", "100"], 129, "error: --cold-iops limits the cold runs: give --runs too"),
        (["--cold-iops", "0", "--runs", "1"], 129, "error: Invalid value for '--cold-iops'"),
    ]:
        command = [sys.executable, "-m", "packorder", "experiment", str(tmp_path), "-o", str(out), "-q"]
        proc = subprocess.run(
            [*command, "--runs=0", *args],
            capture_output=True,
            text=True,
            env=git_env(),
        )
        assert proc.returncode == status, proc.stderr
        assert message in proc.stderr
        assert not out.exists()


def test_an_experiment_times_its_cold_runs_under_the_limit(tmp_path: Path) -> None:
    if not blkio_usable(tmp_path):
        pytest.skip("needs root, a cgroup v1 blkio hierarchy and a block device under the temporary directory")
    repo = Repo(tmp_path / "repo")
    for k in range(3):
        repo.write("f.txt", f"version {k}\n")
        repo.commit(f"c{k}")
    hierarchy = throttle.check(tmp_path, 1)[1]
    before = sorted(p.name for p in hierarchy.glob("packorder-*"))
    home = own_cgroups()
    result = packorder.experiment(
        repo.path,
        orders=["recency"],
        workloads=["log"],
        runs=1,
        cold_iops=10_000,
        output_dir=tmp_path / "out",
        work_dir=tmp_path / "work",
    )
    assert result.cold_iops == 10_000
    assert result.run("recency").results[0].cold_seconds is not None
    assert "reads from the disk limited to 10000 a second" in result.report.read_text()
    assert sorted(p.name for p in hierarchy.glob("packorder-*")) == before
    assert own_cgroups() == home
