"""`packorder fleet status`: discovery (paths, a list file, roots searched; bare and non-bare;
a worktree counted once; symlink loops skipped; unreadable directories reported) and the
triage, sorted by expected benefit, as a table, JSON and CSV."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, build_history, git, git_env

import packorder
from packorder.fleet import discovery
from packorder.fleet.discovery import discover
from packorder.fleet.triage import status


def run_cli(*args: str, prelude: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", f"{prelude}from packorder.cli.launch import main; main()", *args],
        capture_output=True,
        env=git_env(),
    )


def small(path: Path, commits: int = 3, bare: bool = False) -> Repo:
    repo = Repo(path, bare=bare)
    if not bare:
        for c in range(commits):
            repo.write(f"f{c % 2}.txt", f"line {c}\n" * (c + 1))
            repo.commit(f"c{c}")
    return repo


@pytest.fixture(scope="module")
def fleet_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    work = small(root / "team" / "work", commits=4)
    # Tagged: without a tagged tip, recency keeps rev-list's order and drift.py counts its
    # trees after blobs as drift even just after a packorder repack.
    work.tag("v1")
    git(root, "clone", "-q", "--bare", "--no-local", str(work.path), str(root / "team" / "served.git"))
    # A worktree of `work`, beside it: the same repository, counted once.
    packorder.repack(root / "team" / "served.git")  # in order: no drift
    work.run("worktree", "add", "-q", str(root / "team" / "work-wt"), "-b", "wt")
    (root / "team" / "notes").mkdir()
    (root / "team" / "notes" / "loop").symlink_to(root / "team")
    (root / "team" / "link-to-served").symlink_to(root / "team" / "served.git")
    # Drifted: a push's pack and loose objects beside the main pack.
    drifted = build_history(root / "drifted", commits=12)
    drifted.run("repack", "-adq")
    for c in range(3):
        drifted.write("new.txt", f"more {c}\n")
        drifted.commit(f"late {c}")
    return root


def test_discovery_finds_bare_and_non_bare_once_and_skips_a_symlink_loop(fleet_root: Path) -> None:
    found = discover(roots=[fleet_root])
    names = sorted(p.relative_to(fleet_root).as_posix() for p in found.repositories)
    assert names == ["drifted/.git", "team/served.git", "team/work/.git"]
    assert any("notes/loop" in p and "already searched" in p for p in found.problems), found.problems


def test_paths_and_a_list_file_name_repositories_each_once(fleet_root: Path, tmp_path: Path) -> None:
    listing = tmp_path / "repos.txt"
    listing.write_text(f"# the team's\n{fleet_root / 'team' / 'work-wt'}\n\n{fleet_root / 'team' / 'served.git'}\n")
    found = discover(paths=[fleet_root / "team" / "work", fleet_root / "nothing"], list_file=listing)
    assert found.repositories == [(fleet_root / "team" / "work" / ".git").resolve(), fleet_root / "team" / "served.git"]
    assert found.problems == [f"{fleet_root / 'nothing'}: not a git repository"]


def test_an_unreadable_directory_is_reported_and_the_search_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small(tmp_path / "ok", commits=1, bare=True)
    secret = tmp_path / "secret"
    (secret / "inside").mkdir(parents=True)
    secret.chmod(0)
    if os.geteuid() == 0:
        # Root reads any directory: refuse this one as the kernel would refuse another user.
        real = os.scandir

        def scandir(path: str | os.PathLike[str]) -> object:
            if Path(path) == secret:
                raise PermissionError(13, "Permission denied", str(path))
            return real(path)

        monkeypatch.setattr(discovery.os, "scandir", scandir)
    try:
        found = discover(roots=[tmp_path])
    finally:
        secret.chmod(0o755)
    assert found.repositories == [tmp_path / "ok"]
    assert found.problems == [f"{secret}: Permission denied"]


def test_status_sorts_by_expected_benefit(fleet_root: Path) -> None:
    result = status([fleet_root])
    by_name = {t.path.relative_to(fleet_root).as_posix(): t for t in result.repositories}
    drifted = by_name["drifted/.git"]
    assert drifted.loose > 0 and drifted.packs == 1 and drifted.drift > 0 and drifted.error is None
    counts = dict(line.split(": ") for line in git(drifted.path, "count-objects", "-v").decode().splitlines())
    assert (drifted.loose, drifted.objects) == (int(counts["count"]), int(counts["count"]) + int(counts["in-pack"]))
    served = by_name["team/served.git"]
    assert served.packs == 1 and served.loose == 0 and served.drift == 0
    # Its pack has no delta: index-pack's second pass reads nothing, there is no seek.
    assert served.share_now is served.share_after is None
    # drifted's packs are far under 2 MiB: every seek is short, now and after.
    assert drifted.share_now == drifted.share_after == 1.0
    keys = [t.benefit_key() for t in result.repositories]
    assert keys == sorted(keys, reverse=True)
    # All loose (drift 1), then some loose, then in order.
    assert [t.path for t in result.repositories] == [by_name["team/work/.git"].path, drifted.path, served.path]


def test_status_json_and_csv_agree(fleet_root: Path) -> None:
    as_json = run_cli("fleet", "status", "--json", str(fleet_root))
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    as_csv = run_cli("fleet", "status", "--csv", str(fleet_root))
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout.decode())))
    assert [r["path"] for r in rows] == [r["path"] for r in data["repositories"]]
    assert len(rows) == 3
    assert [int(r["objects"]) for r in rows] == [r["objects"] for r in data["repositories"]]
    assert any("already searched" in p for p in data["problems"])
    table = run_cli("fleet", "status", str(fleet_root))
    lines = table.stdout.decode().splitlines()
    assert lines[0].split()[:3] == ["repository", "packs", "loose"]
    assert [line.split()[0] for line in lines[1:]] == [r["path"] for r in data["repositories"]]


def test_usage_errors_and_a_missing_dask(fleet_root: Path) -> None:
    both = run_cli("fleet", "status", "--json", "--csv", str(fleet_root))
    assert both.returncode == 129 and both.stderr.startswith(b"error: --json and --csv")
    assert run_cli("fleet", "status").returncode == 129
    blocked = "import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None; "
    proc = run_cli("fleet", "status", str(fleet_root), prelude=blocked)
    assert proc.returncode == 128
    assert proc.stderr.decode() == "fatal: packorder fleet needs Dask: pip install 'packorder[fleet]'\n"
    assert proc.stdout == b""


def test_other_commands_do_not_import_dask() -> None:
    code = (
        "import sys, packorder; from packorder.cli import main; import packorder.fleet; "
        "packorder.repack; packorder.fleet.status; print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('dask', 'distributed')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert out.stdout == b"[]\n"
