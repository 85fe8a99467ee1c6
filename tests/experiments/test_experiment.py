"""`packorder experiment` end to end on a small generated repository: copies, repacks, workloads,
report, the simulator's check, and the original left alone."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import git, git_env
from helpers.layered import build

import packorder
from packorder.format import layout as layout_mod


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("experiment") / "repo").path


def snapshot(repo: Path) -> dict[str, tuple[int, int]]:
    """Every file of the git directory: size and modification time."""
    git_dir = repo / ".git"
    return {
        str(p.relative_to(git_dir)): (p.stat().st_size, p.stat().st_mtime_ns) for p in git_dir.rglob("*") if p.is_file()
    }


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "packorder", "experiment", *args], capture_output=True, text=True, env=git_env()
    )


def test_experiment_end_to_end(source: Path, tmp_path: Path) -> None:
    before = snapshot(source)
    work = tmp_path / "work"
    out = tmp_path / "report"
    proc = run_cli(
        str(source),
        "--orders",
        "recency,history",
        "-w",
        "log,log-path:docs",
        "-w",
        "blame,index-pack",
        "--simulate",
        "interleaved",
        "--threshold",
        "16k",
        "--runs",
        "1",
        "--work-dir",
        str(work),
        "-o",
        str(out),
        "--json",
        "-q",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    # -q leaves only the warnings: here, that a single run of a few ms is no time to compare.
    assert proc.stderr.splitlines() == [f"warning: {w}" for w in data["warnings"]]
    for run in data["orders"]:
        for name, cold in run["cold"].items():
            if min(cold + run["warm"][name]) < 0.05:
                assert any(w.startswith(f"{name}: a single run of") for w in data["warnings"])
    assert snapshot(source) == before, "the original repository changed"
    assert list(work.iterdir()) == [], "the copies were not removed"

    assert [r["order"] for r in data["orders"]] == ["recency", "history"]
    assert [w["name"] for w in data["workloads"]] == ["log", "log-path", "blame", "index-pack"]
    assert data["workloads"][1]["path"] == "docs" and data["workloads"][2]["chosen"]
    for run in data["orders"]:
        # The same deltas in every copy; only the order differs.
        assert run["deltas"] == data["orders"][0]["deltas"] > 0
        assert abs(run["pack_bytes"] / data["orders"][0]["pack_bytes"] - 1) < 0.01
        for result in run["results"]:
            assert result["label"] == run["order"]
            assert result["cold_seconds"] > 0 and result["warm_seconds"] > 0
        assert all(len(times) == 1 for times in run["cold"].values())
    # The simulator, from the recency copy's traces, against the history copy's measurement.
    checked = {(a["workload"], a["view"], a["order"]) for a in data["agreement"]}
    assert ("log-path", "expanded", "history") in checked and ("index-pack", "raw", "history") in checked
    assert max(abs(a["simulated"] - a["measured"]) for a in data["agreement"]) <= 0.01
    assert {s["order"] for s in data["simulated"]} == {"recency", "history", "interleaved"}

    report = (out / "report.md").read_text()
    for heading in ("## Share of seeks under 16KiB", "## Pack sizes", "## Wall times", "## The simulator", "## Tables"):
        assert heading in report
    assert "`git log -- docs`" in report and "Less than 16KiB seek" in report
    assert json.loads((out / "experiment.json").read_text())["orders"][1]["order"] == "history"
    if pytest.importorskip("matplotlib"):
        for name in ("log", "log-path", "blame", "index-pack"):
            assert (out / f"{name}.png").read_bytes().startswith(b"\x89PNG")
            assert f"({name}.png)" in report


def test_library_keeps_the_copies_when_asked(source: Path, tmp_path: Path) -> None:
    result = packorder.experiment(
        source,
        orders=["history", "as-is"],
        workloads=["log"],
        output_dir=tmp_path / "out",
        runs=0,
        keep=True,
        work_dir=tmp_path / "work",
        threshold=16 << 10,
    )
    assert result.kept is not None and result.kept.is_dir()
    history, as_is = result.run("history"), result.run("as-is")
    git(history.git_dir, "fsck", "--no-dangling")
    (pack,) = (history.git_dir / "objects" / "pack").glob("*.pack")
    (original,) = (source / ".git" / "objects" / "pack").glob("*.pack")
    assert sorted(layout_mod.load(pack).oids.tobytes()) == sorted(layout_mod.load(original).oids.tobytes())
    assert as_is.pack_bytes == original.stat().st_size and as_is.repack_seconds == 0
    assert result.reference == "history" and result.runs == 0
    assert "## Wall times" not in result.report.read_text()
    shutil.rmtree(result.kept)


@pytest.mark.parametrize(
    "args, status, message",
    [
        (["--orders", "nosuch"], 129, "error: unknown order 'nosuch'"),
        (["--orders", "recency,recency"], 129, "error: an order is given twice"),
        (["-w", "custom"], 129, "error: the experiment runs the standard workloads"),
        (["-w", "log,log"], 129, "error: workload log given twice"),
        (["-w", "bogus"], 129, "error: unknown workload 'bogus'"),
        (["-w", "log:src"], 129, "error: the log workload takes no PATH"),
        (["-w", "blame:no/such/file"], 128, "fatal: no/such/file: no such path in HEAD"),
        (["--simulate", "nosuch"], 129, "error: unknown order 'nosuch'"),
    ],
)
def test_bad_input_is_one_line(source: Path, tmp_path: Path, args: list[str], status: int, message: str) -> None:
    """One line says what is wrong (a usage error adds the usage below it, as Git's do)."""
    proc = run_cli(str(source), "-o", str(tmp_path / "out"), "-q", *args)
    assert proc.returncode == status, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith(message)
    assert len(lines) == 1 if status == 128 else lines[1].startswith("usage: ")
    assert not (tmp_path / "out").exists()


def test_not_a_repository_or_bad_output(source: Path, tmp_path: Path) -> None:
    proc = run_cli(str(tmp_path / "missing"), "-q")
    assert proc.returncode == 128 and proc.stderr.startswith("fatal: ") and len(proc.stderr.splitlines()) == 1
    (tmp_path / "file").write_text("x")
    proc = run_cli(str(source), "-o", str(tmp_path / "file"), "-q")
    assert proc.returncode == 129 and proc.stderr.splitlines()[0] == f"error: {tmp_path / 'file'}: not a directory"


def test_copies_find_relative_alternates(tmp_path: Path) -> None:
    from packorder.experiments.run import copy_git_dir

    shared = tmp_path / "shared"
    (shared / "pack").mkdir(parents=True)
    repo = tmp_path / "repo.git"
    (repo / "objects" / "info").mkdir(parents=True)
    (repo / "objects" / "info" / "alternates").write_text("../../shared\n# a comment\n/absolute/path\n")
    (repo / "config.lock").write_text("held")
    copy_git_dir(repo, tmp_path / "copy.git")
    lines = (tmp_path / "copy.git" / "objects" / "info" / "alternates").read_text().splitlines()
    assert lines == [str(shared), "# a comment", "/absolute/path"]
    assert not (tmp_path / "copy.git" / "config.lock").exists()
