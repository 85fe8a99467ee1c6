"""`packorder sample`: a deterministic generated repository, complete and valid, made in one
step (nothing left on failure); and the warnings seekstats and experiment give when the
figures cannot show a difference (a pack below the threshold, a single run of a few ms)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import git as git_bytes
from helpers.gitrepo import git_env

import packorder
from packorder.seek import caveats


def git(git_dir: Path, *args: str) -> str:
    return git_bytes(git_dir, *args).decode().strip()


def refs(git_dir: Path) -> str:
    return git(git_dir, "for-each-ref", "--format=%(refname) %(objectname)")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "packorder", *args], capture_output=True, text=True, env=git_env())


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, packorder.experiments.sample_repository.SampleResult]:
    where = tmp_path_factory.mktemp("sample") / "repo"
    return where, packorder.sample(where, commits=700)


def test_a_valid_repository_with_branches_tags_merges_and_renames(made) -> None:
    where, result = made
    git(where, "fsck", "--full", "--strict")
    assert result.commits == 700 and result.path == str(where)
    names = refs(where).split("\n")
    assert len([n for n in names if n.startswith("refs/tags/")]) == result.tags == 2
    assert len([n for n in names if n.startswith("refs/heads/")]) == result.branches >= 2
    assert git(where, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert int(git(where, "rev-list", "--all", "--count")) == 700
    assert int(git(where, "rev-list", "--merges", "--count", "main")) > 5
    assert git(where, "cat-file", "-t", "v1.1") == "tag"
    renames = git(where, "log", "-M", "--diff-filter=R", "--format=", "--name-status", "main")
    assert renames.count("\nR") + renames.startswith("R") >= 2
    (pack,) = (where / "objects" / "pack").glob("*.pack")
    assert result.pack_bytes == pack.stat().st_size
    assert not list(where.parent.glob(".repo.sample-*")), "the work directory was left behind"


def test_the_same_seed_makes_the_same_repository(made, tmp_path: Path) -> None:
    where, _ = made
    again = tmp_path / "again"
    packorder.sample(again, commits=700)
    assert refs(again) == refs(where)
    # Fixed names, dates, contents and seed: this id on every machine and Git version.
    assert git(where, "rev-parse", "main") == "f58403fd27e05fd60ef4470ede459aa55e994aa1"
    other = tmp_path / "other"
    packorder.sample(other, commits=700, seed=2)
    assert refs(other) != refs(where)


def test_refuses_a_directory_in_use_and_leaves_nothing(tmp_path: Path) -> None:
    used = tmp_path / "used"
    used.mkdir()
    (used / "keep").write_text("mine")
    with pytest.raises(packorder.RepositoryError, match=r"destination path .* already exists"):
        packorder.sample(used)
    assert [p.name for p in used.iterdir()] == ["keep"]
    with pytest.raises(packorder.UsageError, match="commits must be at least 2"):
        packorder.sample(tmp_path / "new", commits=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["used"]
    empty = tmp_path / "empty"
    empty.mkdir()
    packorder.sample(empty, commits=20)
    assert int(git(empty, "rev-list", "--all", "--count")) == 20


def test_command_line(tmp_path: Path) -> None:
    proc = run_cli("sample", str(tmp_path / "s"), "--commits", "30", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["commits"] == 30
    proc = run_cli("sample", str(tmp_path / "s"), "--commits", "30")
    assert (
        proc.returncode == 128
        and proc.stderr == f"fatal: destination path '{tmp_path / 's'}' already exists and is not an empty directory\n"
    )
    proc = run_cli("sample", str(tmp_path / "t"), "--commits", "1")
    assert proc.returncode == 129 and proc.stderr.startswith("error: --commits must be at least 2")


def test_caveats() -> None:
    assert caveats.small_pack(1 << 20, 2 << 20) is not None
    assert caveats.small_pack(2 << 20, 2 << 20) is None
    assert "12 ms" in caveats.single_short_run("log", [0.012])
    assert caveats.single_short_run("log", [0.012, 0.011]) is None
    assert caveats.single_short_run("log", [0.2]) is None


def test_seekstats_warns_on_a_pack_below_the_threshold(made) -> None:
    where, result = made
    small = packorder.seekstats(where, "log", threshold=result.pack_bytes + 1)
    assert any("below the" in w for w in small.warnings)
    large = packorder.seekstats(where, "log", threshold=1 << 20)
    assert not any("below the" in w for w in large.warnings)
    proc = run_cli("seekstats", str(where), "-w", "log", "--threshold", str(result.pack_bytes + 1))
    assert proc.returncode == 0 and "warning: the largest pack read is" in proc.stderr


def test_experiment_on_the_sample_shows_the_orders_apart(made, tmp_path: Path) -> None:
    where, _ = made
    result = packorder.experiment(
        where, orders="recency,history", workloads="log-path", output_dir=tmp_path / "out", runs=1, threshold=256 << 10
    )
    (recency,) = result.run("recency").results
    (history,) = result.run("history").results
    assert history.view("raw").below_threshold > recency.view("raw").below_threshold + 0.1
    # A single run of a few ms cannot be compared: said in the result and in the report.
    short = [w for w in result.warnings if "a single run of" in w]
    assert len(short) == (
        min(recency.cold_seconds, recency.warm_seconds, history.cold_seconds, history.warm_seconds) < 0.05
    )
    for message in result.warnings:
        assert message in result.report.read_text()
