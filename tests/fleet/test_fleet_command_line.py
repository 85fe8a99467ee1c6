"""`packorder fleet repack` from the command line: on the cluster `--scheduler ADDRESS`
names, with its progress line on stderr when stderr is a terminal (a pty here) and none
when it is not."""

from __future__ import annotations

import errno
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, git_env

pytest.importorskip("distributed")

from distributed import Client, LocalCluster

from packorder.fleet import run_record as results_mod

COMMAND = [sys.executable, "-c", "from packorder.cli.launch import main; main()", "fleet", "repack"]
LINE = re.compile(rb"\rRepacking repositories: (\d+) done, (\d+) failed, (\d+) running, (\d+) left, about \d+ min left")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleetcli")
    for i in range(4):
        repo = Repo(root / f"repo{i}")
        for c in range(2 + i):
            repo.write(f"f{c % 2}.txt", "".join(f"line {i} {c} {n}\n" for n in range(30)))
            repo.commit(f"c{c}")
    return root


def run_with_a_terminal(argv: list[str]) -> tuple[int, bytes, bytes]:
    """Run `argv` with stderr on a pty: (status, stdout, what the terminal received)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=git_env())
    os.close(slave)
    terminal = bytearray()
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError as e:  # EIO: every end of the terminal's other side is closed
            if e.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        terminal += chunk
    os.close(master)
    stdout = proc.stdout.read() if proc.stdout else b""
    return proc.wait(timeout=120), stdout, bytes(terminal)


def test_on_the_scheduler_named_with_a_progress_line(root: Path, tmp_path: Path) -> None:
    results = tmp_path / "fleet.jsonl"
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        ours = set(client.scheduler_info()["workers"])
        dashboard = client.dashboard_link if "dashboard" in client.scheduler_info().get("services", {}) else None
        argv = [*COMMAND, "--scheduler", cluster.scheduler_address, "--results", str(results), str(root)]
        status, stdout, terminal = run_with_a_terminal(argv)
    assert status == 0, terminal
    records = results_mod.read(results)
    assert len(records) == 4 and all(r["status"] == results_mod.DONE for r in records), records
    assert {r["worker"] for r in records} <= ours  # run by the named cluster's worker, no other
    assert b"in 4 tasks on 1 workers" in stdout, stdout
    lines = [tuple(int(n) for n in m.groups()) for m in LINE.finditer(terminal)]
    assert lines, terminal
    # Done grows to all four; what is left shrinks to none.
    assert [done for done, *_ in lines] == sorted(done for done, *_ in lines)
    assert lines[-1] == (4, 0, 0, 0), terminal
    assert terminal.endswith(b"about 0 min left   \r\n"), terminal  # the line ended once finished
    if dashboard is not None:
        assert f"Dask dashboard: {dashboard}".encode() in terminal
    else:
        assert b"Dask dashboard" not in terminal


def test_no_progress_line_when_stderr_is_not_a_terminal(root: Path, tmp_path: Path) -> None:
    results = tmp_path / "fleet.jsonl"
    argv = [*COMMAND, "--workers", "1", "--results", str(results), str(root)]
    proc = subprocess.run(argv, capture_output=True, env=git_env())
    assert proc.returncode == 0, proc.stderr
    assert b"Repacking repositories" not in proc.stderr
    assert len(results_mod.read(results)) == 4
