"""A repack that writes a cruft pack, killed (as kill -9 would) at 50 points spread over every
step it takes, and pushes landing while repacks run: every time the repository stays valid,
only expired objects are gone, and the next run succeeds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, all_ids, build_history, git, git_env

import packorder

DAY = 86400
EXPIRY = "2.weeks.ago"


def loose(repo: Repo, text: str, days: float) -> str:
    oid = repo.run("hash-object", "-w", "--stdin", input=text.encode()).decode().strip()
    when = time.time() - days * DAY
    os.utime(repo.git_dir / "objects" / oid[:2] / oid[2:], (when, when))
    return oid


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    """Three packs and loose commits of reachable history, an old cruft pack, and loose
    unreachable objects young and old; with the ids that expire at two weeks."""
    repo = build_history(tmp_path_factory.mktemp("kill") / "repo", commits=30)
    repo.run("repack", "-adq")
    expired = {loose(repo, f"old unreachable {i}\n", 30) for i in range(8)}
    repo.run("repack", "--cruft", "-d", "-q")  # their ages go to Git's cruft pack (30 days)
    for i in range(2):
        repo.commit_on_branch(f"b{i}", {f"b{i}.txt": f"branch {i}\n"}, f"branch {i}")
        repo.run("repack", "-q")
    for i in range(12):
        repo.write(f"late{i}.txt", f"late {i}\n")
        repo.commit(f"late {i}")  # loose, reachable
    for i in range(10):
        loose(repo, f"young unreachable {i}\n", 1)
    expired |= {loose(repo, f"old loose unreachable {i}\n", 40) for i in range(10)}
    return repo.path, expired


def points_of_a_run(work: Path, tmp_path: Path) -> list[str]:
    log = tmp_path / "points.log"
    env = {**git_env(), "PACKORDER_CRASH_LOG": str(log)}
    subprocess.run(
        [sys.executable, "-m", "packorder", "repack", "-q", "--cruft-expiration", EXPIRY, str(work)],
        env=env,
        check=True,
    )
    return log.read_text().split()


def test_killed_at_50_points_of_a_cruft_repack(source: tuple[Path, set[str]], tmp_path: Path) -> None:
    src, expired = source
    before = all_ids(src / ".git")
    assert expired <= before
    probe = tmp_path / "probe"
    shutil.copytree(src, probe, symlinks=True)
    points = points_of_a_run(probe, tmp_path)
    assert len(points) >= 50 and {"written", "mtimes-installed", "pack-removed", "loose-removed"} <= set(points)
    # The first time each kind of step is reached, and points spread over the rest: 50 kills.
    first = sorted({name: n for n, name in reversed(list(enumerate(points, 1)))}.values())
    rest = [n for n in range(1, len(points) + 1) if n not in first]
    spread = 50 - len(first)
    chosen = sorted(first + [rest[round(k * (len(rest) - 1) / max(spread - 1, 1))] for k in range(spread)])
    assert len(set(chosen)) == 50
    for n in chosen:
        work = tmp_path / f"work{n}"
        shutil.copytree(src, work, symlinks=True)
        env = {**git_env(), "PACKORDER_CRASH_AT": f"#{n}"}
        proc = subprocess.run(
            [sys.executable, "-m", "packorder", "repack", "-q", "--cruft-expiration", EXPIRY, str(work)],
            env=env,
            capture_output=True,
        )
        assert proc.returncode == 137, (n, points[n - 1], proc.stderr.decode())
        git(work, "fsck", "--full")
        after = all_ids(work / ".git")
        assert before - after <= expired, (n, points[n - 1])
        # The next run succeeds, takes over the dead run's lock, and drops only what expired.
        result = packorder.repack(work, cruft_expiration=EXPIRY)
        assert all_ids(work / ".git") == before - expired, (n, points[n - 1])
        assert len(result.warnings) <= 1
        git(work, "fsck", "--full")
        shutil.rmtree(work)


def test_pushes_during_repacks_all_land(source: tuple[Path, set[str]], tmp_path: Path) -> None:
    """A clone pushes commit after commit while packorder gc runs again and again (Git's
    default expiry: a push's objects are young until its ref lands)."""
    bare = tmp_path / "server.git"
    git(None, "clone", "-q", "--bare", "--no-local", str(source[0]), str(bare))
    git(bare, "config", "receive.unpackLimit", "5")  # small pushes arrive loose, larger as packs
    client = tmp_path / "client"
    git(None, "clone", "-q", str(bare), str(client))
    pushed: list[str] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def pusher() -> None:
        try:
            i = 0
            while not stop.is_set() and i < 40:
                files = 1 + (i % 8)  # some pushes above the unpack limit, some below
                for k in range(files):
                    (client / f"push{i}-{k}.txt").write_text(f"push {i}, file {k}\n" * (k + 1))
                git(client, "add", "-A")
                git(client, "commit", "-q", "-m", f"push {i}", when=1_800_000_000 + i)
                git(client, "push", "-q", "origin", "HEAD:main")
                pushed.append(git(client, "rev-parse", "HEAD").decode().strip())
                i += 1
        except BaseException as e:
            errors.append(e)

    thread = threading.Thread(target=pusher)
    thread.start()
    runs = 0
    try:
        while thread.is_alive():
            packorder.gc(bare) if runs % 2 else packorder.repack(bare)
            runs += 1
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    assert runs >= 3 and len(pushed) == 40
    packorder.repack(bare)
    git(bare, "fsck", "--full")
    for commit in pushed:
        git(bare, "cat-file", "-e", commit)
    assert git(bare, "rev-parse", "main").decode().strip() == pushed[-1]
