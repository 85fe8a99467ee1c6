"""The command line as a user of Git's tools expects it: the package installed runs whatever
the current directory holds, Git's spellings of repack's options, Git's answer to an unknown
option and a missing path, -v and -q on every command, and one schema key a JSON document."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import Repo, git_env
from test_index_pack_server import exec_path_routing_index_pack

# As the `packorder` script starts: its own folder first on sys.path, not the current directory.
SCRIPT = [sys.executable, "-P", "-c", "from packorder.cli.launch import main; main()"]


def small_repo(path: Path, commits: int = 3) -> Repo:
    repo = Repo(path)
    for c in range(commits):
        repo.write("f.txt", "".join(f"line {c} {n}\n" for n in range(20)))
        repo.commit(f"c{c}")
    return repo


def source_checkout(directory: Path) -> Path:
    """A directory that holds a `packorder/` folder, as a checkout of packorder's source does,
    whose import fails as a checkout's without its built core does."""
    (directory / "packorder").mkdir(parents=True)
    (directory / "packorder" / "__init__.py").write_text(
        "raise ImportError(\"cannot import name '_native' from a source checkout\")\n"
    )
    return directory


def test_fleet_workers_import_the_installed_package_from_a_source_checkout(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    repo = small_repo(tmp_path / "repo")
    cwd = source_checkout(tmp_path / "checkout")
    results = tmp_path / "results.jsonl"
    proc = subprocess.run(
        [
            *SCRIPT,
            "fleet",
            "repack",
            "-q",
            "--workers",
            "1",
            "--min-gain",
            "-1000",
            "--results",
            str(results),
            str(repo.path),
        ],
        cwd=cwd,
        env=git_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"status": "done"' in results.read_text()


def test_index_pack_run_by_git_in_a_source_checkout_imports_the_installed_package(tmp_path: Path) -> None:
    env, log = exec_path_routing_index_pack(tmp_path)
    server = small_repo(tmp_path / "server")
    client = Repo(source_checkout(tmp_path / "client"))
    fetch = subprocess.run(
        [
            "git",
            "-C",
            str(client.path),
            "-c",
            "fetch.unpackLimit=1",
            "fetch",
            "-q",
            str(server.path),
            "HEAD:refs/o/main",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert fetch.returncode == 0, fetch.stderr
    assert len(log.read_text().splitlines()) == 1  # the fetch's index-pack went through packorder
