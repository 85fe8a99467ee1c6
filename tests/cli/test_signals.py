"""SIGTERM (`timeout`, `systemctl stop`) and SIGHUP stop a command as Ctrl-C does: one line,
`fatal: terminated`, Git's status (128 + the signal), the temporary files removed, the lock
released, the repository as it was; the next run succeeds."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.gitrepo import build_history, git, git_env

import packorder


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = build_history(tmp_path_factory.mktemp("signals") / "repo", commits=20)
    repo.run("repack", "-adq")
    repo.run("hash-object", "-w", "--stdin", input=b"unreachable: for a cruft pack\n")
    return repo.path


def listing(repo: Path) -> list[str]:
    return sorted(str(p.relative_to(repo)) for p in (repo / ".git").rglob("*") if "logs" not in p.parts)


def stopped_at(work: Path, point: str, sig: signal.Signals, args: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run a repack paused at `point`, send it `sig` there, and wait for it."""
    env = {**git_env(), "PACKORDER_PAUSE_AT": point}
    proc = subprocess.Popen(
        [sys.executable, "-m", "packorder", "repack", "-q", *args, str(work)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = work / ".git" / "gc.pid"
    deadline = time.monotonic() + 30
    # The pause is reached once the lock is held and the named step done; a second more
    # makes sure the process sleeps there.
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# The crash point a repack is stopped at, and the signal that stops it.
SIGNAL_AT = {
    "enumerated": signal.SIGTERM,
    "written": signal.SIGTERM,
    "verified": signal.SIGHUP,
    "pack-renamed": signal.SIGTERM,
    "mtimes-installed": signal.SIGTERM,
    "idx-installed": signal.SIGHUP,
}


@pytest.mark.parametrize(("point", "sig"), SIGNAL_AT.items())
def test_a_signal_stops_a_repack_cleanly(base: Path, tmp_path: Path, point: str, sig: signal.Signals) -> None:
    work = tmp_path / "work"
    shutil.copytree(base, work, symlinks=True)
    before = listing(work)
    proc = stopped_at(work, point, sig)
    assert proc.returncode == 128 + sig, proc.stderr
    assert proc.stderr == "fatal: terminated\n" and proc.stdout == ""
    # Nothing left: no lock, no temporary, no pack this run installed; what was there stays.
    assert listing(work) == before
    git(work, "fsck", "--full")
    packorder.repack(work)
    git(work, "fsck", "--full")


def test_a_signal_stops_index_pack_stdin_cleanly(base: Path, tmp_path: Path) -> None:
    """A pack arriving on standard input: the command is stopped while it waits for the rest
    of the pack; its temporary file goes."""
    work = tmp_path / "work"
    shutil.copytree(base, work, symlinks=True)
    (pack,) = (work / ".git" / "objects" / "pack").glob("*.pack")
    data = pack.read_bytes()
    before = listing(work)
    proc = subprocess.Popen(
        [sys.executable, "-m", "packorder", "index-pack", "--stdin", "--repo", str(work)],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=git_env(),
    )
    assert proc.stdin is not None
    proc.stdin.write(data[: len(data) // 2])
    proc.stdin.flush()
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and err == b"fatal: terminated\n"
    assert listing(work) == before
