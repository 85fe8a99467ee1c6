"""Traces from real git runs on a generated repository, the library call, and the command line."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers.gitrepo import Repo, git, git_env

import packorder
from packorder.errors import PackError, RepositoryError, UsageError
from packorder.format import layout as layout_mod
from packorder.seek import seekstats
from packorder.seek.stats import PERCENTILES


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "packorder", "seekstats", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env or git_env(),
    )


def the_pack(repo: Repo) -> layout_mod.PackLayout:
    (pack,) = repo.pack_files()
    return layout_mod.load(pack)


def commits(repo: Repo, *args: str) -> int:
    return int(repo.run("rev-list", "--count", *args).decode())


def test_log_asks_for_each_commit_once(history: Repo) -> None:
    result = seekstats(history.path, "log")
    raw = result.view("raw")
    assert raw is not None and result.view("expanded") is not None
    assert raw.accesses == commits(history, "HEAD")
    assert raw.seeks == raw.accesses - 1
    assert result.source == "GIT_TRACE_PACK_ACCESS"
    assert list(raw.percentiles or {}) == [f"{p:g}" for p in PERCENTILES]
    assert result.packs == [history.pack_files()[0].resolve()]
    assert result.cache_limit == 96 << 20


def test_log_path_reads_commits_and_trees(history: Repo) -> None:
    layout = the_pack(history)
    result = seekstats(history.path, "log-path", path="src")
    assert result.workload.path == "src" and not result.workload.chosen
    raw, expanded = result.view("raw"), result.view("expanded")
    assert raw is not None and expanded is not None
    # More than the commits: the trees along the path too; expanding adds their delta bases.
    assert raw.accesses > commits(history, "HEAD")
    assert expanded.accesses >= raw.accesses
    assert layout.count > 0


def test_blame_and_custom_traces_land_on_entries(history: Repo) -> None:
    layout = the_pack(history)
    kinds = layout.real_kinds()
    from packorder.seek import pack_access, runner

    for argv in (["blame", "HEAD", "--", "README"], ["log", "-p", "-3"]):
        command = runner.Command(["git", "--git-dir", str(history.git_dir), *argv])
        trace = pack_access.record(command).trace
        positions = layout.position_of_offset(trace.offsets)  # raises unless entry starts
        assert len(positions) > 0
        assert 3 in set(kinds[positions].tolist())  # blobs were read


def test_every_object_once_expands_to_every_entry(history: Repo) -> None:
    layout = the_pack(history)
    result = seekstats(history.path, "custom", git_args=["cat-file", "--batch-all-objects", "--batch", "--unordered"])
    raw, expanded = result.view("raw"), result.view("expanded")
    assert raw is not None and expanded is not None
    # In pack order a base is asked for before its deltas (so never from the cache); each base
    # is read once more when its first delta needs it, and stays cached for the others.
    bases = len(np.unique(layout.base[layout.base >= 0]))
    assert raw.accesses == layout.count
    assert expanded.accesses == layout.count + bases


def test_index_pack_reads_every_delta(history: Repo) -> None:
    layout = the_pack(history)
    from packorder.gitcmd import read_config
    from packorder.seek import workloads

    work = workloads.build(workloads.spec("index-pack"), history.git_dir, "git", read_config(history.git_dir), 96 << 20)
    trace = work.record(None).trace
    assert trace.kind == "reads"
    read = set(layout.position_of_offset(trace.offsets).tolist())
    # Resolving a delta means reading it, and reading the base it applies to.
    deltas = set(np.flatnonzero(layout.is_delta).tolist())
    assert deltas and deltas <= read
    assert set(layout.base[layout.base >= 0].tolist()) <= read
    result = seekstats(history.path, "index-pack", views=("expanded",))
    assert [v.view for v in result.views] == ["raw"]  # every read is there already
    assert result.views[0].accesses == len(trace)
    assert "strace" in result.source


def test_pack_recent_sends_what_is_not_tagged(history: Repo) -> None:
    result = seekstats(history.path, "pack-recent")
    raw = result.view("raw")
    assert raw is not None and raw.accesses > 0
    assert result.workload.describe().startswith("git pack-objects --revs --stdout")


def test_pack_recent_reads_the_same_with_or_without_a_bitmap(history: Repo, tmp_path: Path) -> None:
    """A bitmap would let pack-objects skip its walk: the workload measures the layout alone."""
    plain = tmp_path / "plain.git"
    git(None, "clone", "-q", "--bare", "--no-local", str(history.path), str(plain))
    with_bitmap = tmp_path / "bitmap.git"
    shutil.copytree(plain, with_bitmap)
    git(plain, "repack", "-adq", "--no-write-bitmap-index")
    git(with_bitmap, "repack", "-adq", "--write-bitmap-index")
    assert list((with_bitmap / "objects" / "pack").glob("*.bitmap"))
    assert not list((plain / "objects" / "pack").glob("*.bitmap"))
    counts = [seekstats(repo, "pack-recent", views=("raw",)).view("raw").accesses for repo in (plain, with_bitmap)]
    assert counts[0] == counts[1] > 0


def test_paths_are_chosen_from_history(history: Repo) -> None:
    log = history.run("log", "--no-renames", "--name-only", "--format=", "-n1000", "HEAD").decode().split()
    files = Counter(log)
    dirs: Counter[str] = Counter()
    for block in (
        history.run("log", "--no-renames", "--name-only", "--format=tformat:@", "-n1000", "HEAD").decode().split("@")
    ):
        dirs.update({os.path.dirname(f) for f in block.split()} - {""})
    at_head = set(history.run("ls-tree", "-r", "--name-only", "HEAD").decode().split())
    best_file = min((f for f in files if f in at_head), key=lambda f: (-files[f], f))
    best_dir = min(dirs, key=lambda d: (-dirs[d], d))
    blame = seekstats(history.path, "blame")
    assert blame.workload.path == best_file and blame.workload.chosen
    log_path = seekstats(history.path, "log-path")
    assert log_path.workload.path == best_dir and log_path.workload.chosen


def test_kinds_at_head_with_nested_paths(history: Repo) -> None:
    from packorder.seek.choose import kinds_at_head

    # Asking for a directory and a file inside it at once: both are found.
    got = kinds_at_head(history.git_dir, ["src", "src/file1.c", "README", "no/such", "src/nope"])
    assert got == {"src": "tree", "src/file1.c": "blob", "README": "blob"}


def test_bad_input_is_refused(history: Repo, tmp_path: Path) -> None:
    with pytest.raises(RepositoryError):
        seekstats(tmp_path, "log")
    with pytest.raises(UsageError):
        seekstats(history.path, "frobnicate")
    with pytest.raises(RepositoryError, match="no such path"):
        seekstats(history.path, "blame", path="no/such/file")
    with pytest.raises(RepositoryError, match="not a file"):
        seekstats(history.path, "blame", path="src")
    with pytest.raises(UsageError):
        seekstats(history.path, "log", path="src")
    with pytest.raises(UsageError):
        seekstats(history.path, "custom")
    with pytest.raises(PackError, match="not found"):
        seekstats(history.path, "log", git=str(tmp_path / "no-git"))


def test_library_api_is_lazy() -> None:
    assert "seekstats" in packorder.__all__
    assert packorder.seekstats is seekstats
    code = "import packorder.cli.main, sys; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_cli_table_names_workload_and_view(history: Repo) -> None:
    proc = run_cli(str(history.path), "--workload", "blame", "README")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.count("$ git blame HEAD -- README") == 2
    assert "\nraw: " in out and "\nexpanded: " in out
    for row in ("Total number of access", "0.0% percentile", "99.5% percentile", "99.9% percentile"):
        assert row in out
    assert "Less than 2MiB seek" in out and "Within 4KiB of data read" in out
    # The test pack is far below 2 MiB: every seek is under it, and the command says so.
    (warning,) = proc.stderr.splitlines()
    assert warning.startswith("warning: the largest pack read is ") and "below the 2.00 MiB threshold" in warning


def test_cli_chosen_path_goes_to_stderr(history: Repo) -> None:
    proc = run_cli("-w", "log-path", "--view", "raw", cwd=history.path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("seekstats: log-path: chose ")
    assert "\nexpanded: " not in proc.stdout


def test_cli_json_csv_and_compare(history: Repo, tmp_path: Path) -> None:
    other = tmp_path / "other"
    git(None, "clone", "-q", "--no-local", str(history.path), str(other))
    git(other, "-c", "pack.window=0", "repack", "-adf", "-q")
    proc = run_cli(str(history.path), "--compare", str(other), "-w", "log-path", "src", "--json")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert [r["label"] for r in results] == ["repo", "other"]
    assert {r["workload"]["path"] for r in results} == {"src"}
    assert all(r["views"][0]["percentiles"]["99.9"] >= r["views"][0]["percentiles"]["50"] for r in results)
    proc = run_cli(str(history.path), "--compare", str(other), "--csv", "--threshold", "1k")
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [(r["label"], r["view"]) for r in rows] == [
        ("repo", "raw"),
        ("repo", "expanded"),
        ("other", "raw"),
        ("other", "expanded"),
    ]
    assert {r["threshold"] for r in rows} == {"1024"}
    proc = run_cli(str(history.path), "--compare", str(other))
    header = next(line for line in proc.stdout.splitlines() if line.strip().startswith("repo"))
    assert header.split() == ["repo", "other"]


def test_cli_plot_and_cold(history: Repo, tmp_path: Path) -> None:
    png = tmp_path / "cdf.png"
    proc = run_cli(str(history.path), "--plot", str(png), "--cold", "--json")
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes().startswith(b"\x89PNG")
    (result,) = json.loads(proc.stdout)["results"]
    assert result["cold_seconds"] > 0 and result["warm_seconds"] > 0
    proc = run_cli(str(history.path), "--cold")
    assert "Wall time, cold" in proc.stdout and "Wall time, warm" in proc.stdout


def resident_pages(path: Path) -> int:
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "PAGES", str(path)], capture_output=True)
    return int(out.stdout.split()[0])


@pytest.mark.skipif(shutil.which("fincore") is None, reason="fincore (util-linux) is not installed")
def test_cold_drops_the_packs_from_the_page_cache(history: Repo, tmp_path: Path) -> None:
    from packorder.seek.runner import drop_from_page_cache

    fs = subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True, text=True).stdout.strip()
    if fs in ("tmpfs", "ramfs"):
        pytest.skip(f"{fs} files live in memory: nothing to drop")
    pack = tmp_path / "copy.pack"
    pack.write_bytes(history.pack_files()[0].read_bytes() * 64)
    os.sync()  # clean pages can be dropped
    pack.read_bytes()
    assert resident_pages(pack) > 0
    assert drop_from_page_cache([pack]) == pack.stat().st_size
    assert resident_pages(pack) == 0


def test_cli_custom_takes_git_arguments_after_double_dash(history: Repo) -> None:
    proc = run_cli(str(history.path), "-w", "custom", "--csv", "--", "cat-file", "-p", "HEAD")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert rows[0]["command"] == "git cat-file -p HEAD"
    # One object, so no seek: the statistics are empty, not made up.
    assert (rows[0]["accesses"], rows[0]["seeks"], rows[0]["p50"], rows[0]["below_threshold"]) == ("1", "0", "", "")
    proc = run_cli(str(history.path), "-w", "custom", "--", "cat-file", "-p", "HEAD")
    lines = proc.stdout.splitlines()
    assert any(line.startswith("50.0% percentile") and line.endswith(" -") for line in lines)
    # A command that reads no object: no access at all.
    proc = run_cli(str(history.path), "-w", "custom", "--json", "--", "rev-parse", "HEAD")
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)["results"]
    assert [v["accesses"] for v in result["views"]] == [0, 0]
    assert result["packs"] == []


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["-w", "frobnicate"], 129, "unknown workload"),
        (["-w", "custom"], 129, "needs git arguments"),
        (["-w", "log", "--", "log"], 129, "for the custom workload"),
        (["-w", "blame", "no/such"], 128, "no/such: no such path in HEAD"),
        (["--json", "--csv"], 129, "cannot be used together"),
        (["--threshold", "lots"], 129, "not a size"),
    ],
)
def test_cli_bad_input_is_one_line(history: Repo, args: list[str], status: int, message: str) -> None:
    proc = run_cli(str(history.path), *args)
    assert proc.returncode == status
    lines = proc.stderr.strip().splitlines()
    assert message in lines[0] and lines[0].startswith("fatal: " if status == 128 else "error: ")
    assert len(lines) == 1 or lines[1].startswith("usage: ")
    assert "Traceback" not in proc.stderr


def test_cli_outside_a_repository(tmp_path: Path) -> None:
    proc = run_cli(cwd=tmp_path)
    assert proc.returncode == 128
    assert proc.stderr.strip() == f"fatal: not a git repository: {tmp_path}"


def test_cli_without_strace(history: Repo, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real_git = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    (bin_dir / "git").symlink_to(real_git)
    env = {**git_env(), "PATH": str(bin_dir)}
    proc = run_cli(str(history.path), "-w", "index-pack", env=env)
    assert proc.returncode == 128
    assert proc.stderr.strip().startswith("fatal: strace: not found")


def test_partial_clone_failure_says_why(history: Repo, tmp_path: Path) -> None:
    source = tmp_path / "source"
    git(None, "clone", "-q", "--bare", "--no-local", str(history.path), str(source))
    git(source, "config", "uploadpack.allowFilter", "true")
    partial = tmp_path / "partial"
    git(None, "clone", "-q", "--bare", "--filter=blob:none", f"file://{source}", str(partial))
    assert list((partial / "objects" / "pack").glob("*.promisor"))
    proc = run_cli(str(partial), "-w", "blame", "README")
    assert proc.returncode == 128
    assert "partial clone" in proc.stderr and "GIT_NO_LAZY_FETCH" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    # Commits and trees are all there: log works.
    assert run_cli(str(partial), "-w", "log").returncode == 0


def test_repository_without_packs_says_so(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "loose")
    for i in range(3):
        repo.write(f"f{i}", f"{i}\n")
        repo.commit(f"c{i}")
    proc = run_cli(str(repo.path), "-w", "log")
    assert proc.returncode == 0, proc.stderr
    assert "no pack, so nothing to measure" in proc.stdout
    repo.run("repack", "-adq")
    assert "no pack" not in run_cli(str(repo.path), "-w", "log").stdout
