"""`experiment --cold-iops`: cold runs limited to N disk reads a second (cgroup v2 io, or v1 blkio).
What can be checked without timing: the workload's reads are counted against the limit's
cgroup, this process returns to its own cgroup, nothing is left behind, and every refusal is
one clear error before anything is made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, git_env

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
        pytest.skip("needs root, cgroup v2 io or v1 blkio, and a block device under the temporary directory")
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
        pytest.skip("needs root, cgroup v2 io or v1 blkio, and a block device under the temporary directory")
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


def cgroup_tree(tmp_path: Path, mounts: list[tuple[str, str, str]], files: dict[str, str]) -> Path:
    """A /proc/mounts naming `mounts` (type, directory under tmp_path, options), and the files
    of those directories the detection reads."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    table = tmp_path / "mounts"
    table.write_text("".join(f"{kind} {tmp_path / where} {kind} {options} 0 0\n" for kind, where, options in mounts))
    return table


def test_cgroup_v2_is_used_where_its_top_enables_io(tmp_path: Path) -> None:
    unified = [("cgroup2", "cg", "rw,nosuid")]
    table = cgroup_tree(
        tmp_path, unified, {"cg/cgroup.controllers": "cpu io memory\n", "cg/cgroup.subtree_control": ""}
    )
    with pytest.raises(UsageError, match=r"io controller is not enabled .* echo \+io > .*cg/cgroup.subtree_control"):
        throttle.find_hierarchy(table)
    (tmp_path / "cg" / "cgroup.subtree_control").write_text("cpu io memory\n")
    assert throttle.find_hierarchy(table) == throttle.Hierarchy(tmp_path / "cg", 2)


def test_a_hybrid_machine_throttles_with_blkio_and_none_is_one_clear_error(tmp_path: Path) -> None:
    hybrid = [("cgroup", "blkio", "rw,relatime,blkio"), ("cgroup2", "unified", "rw")]
    table = cgroup_tree(tmp_path, hybrid, {"unified/cgroup.controllers": "hugetlb\n", "blkio/tasks": ""})
    assert throttle.find_hierarchy(table) == throttle.Hierarchy(tmp_path / "blkio", 1)
    table = cgroup_tree(tmp_path, [("cgroup", "cpu", "rw,cpu")], {})
    with pytest.raises(UsageError, match=r"^--cold-iops needs cgroup v2 with the io controller or a cgroup v1 blkio"):
        throttle.find_hierarchy(table)


def test_each_version_writes_its_limit_and_reads_its_counts(tmp_path: Path) -> None:
    v2, v1 = throttle.Hierarchy(tmp_path, 2), throttle.Hierarchy(tmp_path, 1)
    assert v2.limit_file("8:0", 100) == ("io.max", "8:0 riops=100\n")
    assert v1.limit_file("8:0", 100) == ("blkio.throttle.read_iops_device", "8:0 100\n")
    (tmp_path / "io.stat").write_text(
        "8:16 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n"
        "8:0 rbytes=4096 wbytes=0 rios=17 wios=0 dbytes=0 dios=0\n"
    )
    (tmp_path / "blkio.throttle.io_serviced").write_text("8:0 Read 23\n8:0 Write 5\nTotal 28\n")
    assert (v2.reads(tmp_path, "8:0"), v1.reads(tmp_path, "8:0"), v2.reads(tmp_path, "9:0")) == (17, 23, 0)
    own = tmp_path / "cgroup"
    own.write_text("7:blkio:/batch\n4:memory:/x\n0::/user.slice/session-1.scope\n")
    assert v2.own_group(own) == tmp_path / "user.slice" / "session-1.scope"
    assert v1.own_group(own) == tmp_path / "batch"


def test_the_limit_on_cgroup_v2_is_io_max(tmp_path: Path) -> None:
    if not blkio_usable(tmp_path) or throttle.find_hierarchy().version != 2:
        pytest.skip("needs root, cgroup v2 with io enabled at its top (a hybrid machine has blkio in v1 instead)")
    with throttle.ReadLimit(tmp_path, 10_000) as limit:
        assert f"{limit.device} rbps=max wbps=max riops=10000 wiops=max" in (limit.group / "io.max").read_text()
