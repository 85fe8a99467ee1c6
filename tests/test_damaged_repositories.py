"""Every command on damaged and unusual repositories, as a careless or hostile user would run
them: a failure is one `fatal:` line and status 128 (the fleet's status: its records, and
1), never a traceback, never a silent success; nothing is left behind (in the working
directory, in TMPDIR), and the repository is as it was (gc's own steps aside, which Git's gc
runs before its repack in the same order)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import build_history, git, git_env

DAMAGED = [
    "loose-header",
    "loose-body",
    "loose-swapped",
    "truncated-idx",
    "pack-without-idx",
    "missing-object",
    "corrupt-pack",
    "truncated-pack",
]
UNUSUAL = ["empty", "unborn"]


def flip(path: Path, at: int) -> None:
    path.chmod(0o644)
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def loose_blob(repo: Path, name: str) -> Path:
    oid = git(repo, "rev-parse", f"HEAD:{name}").decode().strip()
    return repo / ".git" / "objects" / oid[:2] / oid[2:]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """History in one pack, then commits whose objects are loose."""
    repo = build_history(tmp_path_factory.mktemp("damaged") / "repo", commits=12)
    repo.run("repack", "-adq")
    repo.write("late/one.txt", "".join(f"a loose blob, line {i}\n" for i in range(400)))
    repo.write("late/two.txt", "".join(f"another loose blob, line {i}\n" for i in range(300)))
    repo.commit("loose objects")
    return repo.path


def damaged(base: Path, tmp_path: Path, case: str) -> Path:
    repo = tmp_path / "repo"
    if case == "empty":
        git(None, "init", "-q", str(repo))
        return repo
    shutil.copytree(base, repo, symlinks=True)
    pack_dir = repo / ".git" / "objects" / "pack"
    (pack,) = sorted(pack_dir.glob("*.pack"))
    if case == "loose-header":
        flip(loose_blob(repo, "late/one.txt"), 4)
    elif case == "loose-body":
        blob = loose_blob(repo, "late/one.txt")
        flip(blob, blob.stat().st_size // 2)
    elif case == "loose-swapped":
        one, two = loose_blob(repo, "late/one.txt"), loose_blob(repo, "late/two.txt")
        one.chmod(0o644)
        shutil.copyfile(two, one)
    elif case == "truncated-idx":
        idx = pack.with_suffix(".idx")
        idx.chmod(0o644)
        idx.write_bytes(idx.read_bytes()[:1500])
    elif case == "pack-without-idx":
        pack.with_suffix(".idx").unlink()
    elif case == "missing-object":
        loose_blob(repo, "late/two.txt").unlink()
    elif case == "corrupt-pack":
        flip(pack, pack.stat().st_size // 2)
    elif case == "truncated-pack":
        pack.chmod(0o644)
        pack.write_bytes(pack.read_bytes()[: pack.stat().st_size // 2])
    elif case == "unborn":
        git(repo, "symbolic-ref", "HEAD", "refs/heads/nothing-yet")
    return repo


COMMANDS = {
    "repack": ["repack", "REPO", "-q"],
    "repack-dry-run": ["repack", "REPO", "--dry-run", "--json"],
    "repack-f": ["repack", "REPO", "-q", "-f"],
    "repack-geometric": ["repack", "REPO", "-q", "-d", "--geometric=2", "--write-midx"],
    "gc": ["gc", "REPO", "-q"],
    "gc-auto": ["gc", "REPO", "--auto"],
    "seekstats": ["seekstats", "REPO", "-w", "blame", "--path", "src/file1.c"],
    "experiment": ["experiment", "REPO", "--runs", "0", "-w", "log"],
    "fleet-status": ["fleet", "status", "REPO"],
}
# Where a success is right: the damage lies where the command does not read. A dry run reads
# no object's bytes; a geometric run (gc's default) reads what rolls up, not the ordered pack's
# data; fleet triage reads headers; gc --auto may find nothing to do.
MAY_SUCCEED = {
    ("repack-dry-run", "loose-swapped"),
    ("repack-dry-run", "loose-body"),
    ("repack-dry-run", "corrupt-pack"),
    ("repack-geometric", "corrupt-pack"),
    # A roll-up of the loose objects; the cut pack stays as it is (git update-server-info's
    # complaint about it is a warning, as in Git's repack).
    ("repack-geometric", "truncated-pack"),
    *(("seekstats", c) for c in ("loose-header", "loose-body", "loose-swapped", "missing-object", "corrupt-pack")),
    ("gc", "corrupt-pack"),
    *(("gc-auto", case) for case in DAMAGED),
    *(("fleet-status", case) for case in ("loose-body", "loose-swapped", "pack-without-idx", "corrupt-pack")),
    *(("fleet-status", case) for case in ("missing-object",)),
}


def state(repo: Path, objects_only: bool = False) -> dict[str, str]:
    """Every file of the repository with a hash of its bytes (objects/ alone for gc)."""
    root = repo / ".git" / "objects" if objects_only else repo
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name not in ("packorder-drift",):
            out[str(path.relative_to(root))] = hashlib.sha1(path.read_bytes()).hexdigest()
    return out


def run(args: list[str], repo: Path, cwd: Path, tmp: Path) -> subprocess.CompletedProcess:
    env = {**git_env(), "TMPDIR": str(tmp)}
    return subprocess.run(
        [sys.executable, "-m", "packorder", *(str(repo) if a == "REPO" else a for a in args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", DAMAGED + UNUSUAL)
def test_one_line_nothing_left_and_the_repository_as_it_was(
    base: Path, tmp_path: Path, case: str, command: str
) -> None:
    repo = damaged(base, tmp_path, case)
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    is_gc = command.startswith("gc")
    before = state(repo, objects_only=is_gc)
    proc = run(COMMANDS[command], repo, cwd, tmp)
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output, output
    assert list(cwd.iterdir()) == [] and list(tmp.iterdir()) == [], (os.listdir(cwd), os.listdir(tmp))
    may_succeed = case in UNUSUAL or (command, case) in MAY_SUCCEED
    if command == "fleet-status":
        # A record for the repository, its error named, the run's status 1.
        assert proc.returncode in ((0, 1) if may_succeed else (1,)), output
        if proc.returncode:
            assert str(repo) in proc.stdout, output
            # The repository's error in words, not an exception's name.
            assert not re.search(r"\b[A-Z][A-Za-z]+Error: ", output), output
        assert state(repo) == before
        return
    if not may_succeed:
        assert proc.returncode == 128, (proc.returncode, output)  # no silent success
    assert proc.returncode in (0, 128), (proc.returncode, output)
    if proc.returncode:
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("fatal: "), proc.stderr
        assert state(repo, objects_only=is_gc) == before
    elif command == "gc-auto":
        assert state(repo, objects_only=True) == before  # nothing to do: nothing done


@pytest.fixture(scope="module")
def fleet_root(base: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five repositories, the third with a loose object whose header is corrupt."""
    root = tmp_path_factory.mktemp("damaged-fleet")
    for i in range(5):
        shutil.copytree(base, root / f"repo{i}", symlinks=True)
    flip(loose_blob(root / "repo2", "late/one.txt"), 4)
    return root


@pytest.mark.parametrize("command", ["status", "repack"])
def test_the_fleet_goes_on_past_a_broken_repository(fleet_root: Path, tmp_path: Path, command: str) -> None:
    pytest.importorskip("distributed")
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    copy = work / "root"
    shutil.copytree(fleet_root, copy, symlinks=True)
    args = ["fleet", command, str(copy), "--json"]
    if command == "repack":
        args += ["--workers", "1", "--results", str(work / "results.jsonl")]
    proc = run(args, copy, work, tmp)
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output, output
    assert proc.returncode == 1, output
    if command == "status":
        found = json.loads(proc.stdout)["repositories"]
    else:
        found = [json.loads(line) for line in (work / "results.jsonl").read_text().splitlines()]
    # A repository is named by its work tree or by its git directory.
    records = {next(p.name for p in (Path(r["path"]), Path(r["path"]).parent) if p.name != ".git"): r for r in found}
    assert sorted(records) == [f"repo{i}" for i in range(5)], output
    assert "is corrupt" in records["repo2"]["error"]
    assert all(not records[f"repo{i}"]["error"] for i in (0, 1, 3, 4)), records
    # The Dask workers' scratch space went with the run.
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("command", ["repack", "gc", "seekstats", "experiment"])
def test_a_plain_file_as_the_repository_is_fatal(tmp_path: Path, command: str) -> None:
    plain = tmp_path / "plain"
    plain.write_text("not a repository\n")
    proc = run(COMMANDS[command], plain, tmp_path, tmp_path)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 128, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("fatal: "), proc.stderr


@pytest.mark.parametrize("what", ["directory", "device"])
def test_index_pack_names_what_it_was_given(tmp_path: Path, what: str) -> None:
    target = tmp_path if what == "directory" else Path("/dev/null")
    proc = run(["index-pack", str(target)], target, tmp_path, tmp_path)
    assert proc.returncode == 128, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("fatal: "), proc.stderr
    assert "no such file" not in proc.stderr.lower() and str(target) in proc.stderr
    assert ("a directory" if what == "directory" else "not a file") in proc.stderr


def test_max_cruft_size_zero_is_no_limit_as_in_git(base: Path, tmp_path: Path) -> None:
    repo = damaged(base, tmp_path, "unborn")
    git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    for args in (["repack", "REPO", "-q", "--max-cruft-size", "0"], ["gc", "REPO", "-q", "--max-cruft-size", "0"]):
        proc = run(args, repo, tmp_path, tmp_path)
        assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    git(repo, "fsck", "--full", "--strict")


def test_the_experiments_copies_are_writable_whatever_the_sources_bits(base: Path, tmp_path: Path) -> None:
    from packorder.experiments.run import copy_git_dir

    source = tmp_path / "source.git"
    shutil.copytree(base / ".git", source, symlinks=True)
    for where, _dirs, _files in os.walk(source):
        os.chmod(where, 0o555)
    try:
        copy_git_dir(source, tmp_path / "copy.git")
    finally:
        for where, _dirs, _files in os.walk(source):
            os.chmod(where, 0o755)
    for where, _dirs, _files in os.walk(tmp_path / "copy.git"):
        assert os.stat(where).st_mode & 0o700 == 0o700, where
