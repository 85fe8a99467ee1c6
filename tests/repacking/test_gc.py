"""`packorder gc`: Git's maintenance with packorder's repack, against `git gc` on the same
repository; `--auto`'s thresholds and drift; the lock; and the recipe of docs/maintenance.md,
run as written, keeping the order where Git's automatic gc would undo it."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, all_ids, build_history, git, git_env

import packorder
from packorder.errors import RepositoryError
from packorder.repacking import drift
from packorder.repacking.maintenance import gc

DAY = 86400
DOCS = Path(__file__).resolve().parents[2] / "docs" / "maintenance.md"


def aged_loose(repo: Repo, text: str, days: float) -> str:
    oid = repo.run("hash-object", "-w", "--stdin", input=text.encode()).decode().strip()
    when = time.time() - days * DAY
    os.utime(repo.git_dir / "objects" / oid[:2] / oid[2:], (when, when))
    return oid


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """History packed with Git's deltas (so that trees are stored as deltas), a branch
    deleted with its reflog expiring, loose objects of several ages, and a worktree whose
    directory is gone."""
    repo = build_history(tmp_path_factory.mktemp("gc") / "repo", commits=40)
    repo.run("repack", "-adf", "-q")
    repo.commit_on_branch("gone", {"gone.txt": "on a branch deleted since\n"}, "gone")
    repo.run("branch", "-D", "gone")
    for days in (1, 10, 20, 40):
        aged_loose(repo, f"unreachable, {days} days old\n", days)
    linked = repo.path.parent / "linked"
    repo.run("worktree", "add", "-q", "--detach", str(linked))
    shutil.rmtree(linked)
    admin = repo.git_dir / "worktrees" / "linked"
    old = time.time() - 100 * DAY
    for p in [admin, *admin.rglob("*")]:
        os.utime(p, (old, old))
    repo.run("config", "--unset", "gc.auto")  # Git's defaults, for the comparison
    return repo


@pytest.fixture()
def work(base: Repo, tmp_path: Path) -> Repo:
    copy = Repo.__new__(Repo)
    copy.path = tmp_path / "work"
    copy.clock = base.clock
    shutil.copytree(base.path, copy.path, symlinks=True)
    return copy


def gc_state(git_dir: Path) -> dict[str, object]:
    """What a gc leaves that both gcs should agree on."""
    return {
        "objects": all_ids(git_dir),
        "packed-refs": (git_dir / "packed-refs").exists() and not list((git_dir / "refs" / "heads").iterdir()),
        "worktrees": sorted(p.name for p in (git_dir / "worktrees").iterdir())
        if (git_dir / "worktrees").exists()
        else [],
        "commit-graph": (git_dir / "objects" / "info" / "commit-graph").exists(),
        "reflog": git(None, "--git-dir", str(git_dir), "reflog", "--all").decode(),
    }


def test_packorder_gc_leaves_what_git_gc_leaves(work: Repo, tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    shutil.copytree(work.path, theirs, symlinks=True)
    git(theirs, "gc", "-q")
    result = gc(work.path, full=True)
    assert result.ran and result.steps[:3] == ["pack-refs", "reflog-expire", "repack"]
    assert "worktree-prune" in result.steps and "commit-graph" in result.steps
    ours, gits = gc_state(work.git_dir), gc_state(theirs / ".git")
    assert ours == gits
    assert ours["worktrees"] == [] and ours["commit-graph"] is True
    git(work.path, "fsck", "--full")
    assert "garbage: 0" in git(work.path, "count-objects", "-v").decode()


def test_git_gc_runs_cleanly_right_after_packorder_gc(work: Repo) -> None:
    gc(work.path)
    before = all_ids(work.git_dir)
    proc = subprocess.run(["git", "-C", str(work.path), "gc"], capture_output=True, text=True, env=git_env())
    assert proc.returncode == 0 and "warning" not in proc.stderr and "error" not in proc.stderr, proc.stderr
    assert all_ids(work.git_dir) == before
    git(work.path, "fsck", "--full")


@pytest.mark.parametrize(("prune", "kept"), [("now", set()), (None, {1, 10, 20, 40}), ("15.days.ago", {1, 10})])
def test_prune_dates(work: Repo, prune: str | None, kept: set[int]) -> None:
    ids = {d: work.run("hash-object", "--stdin", input=f"unreachable, {d} days old\n".encode()).decode().strip()
           for d in (1, 10, 20, 40)}  # fmt: skip
    result = gc(work.path, prune=prune)
    assert result.repack.strategy == ("full" if prune is not None else "geometric")
    have = all_ids(work.git_dir)
    assert {d for d, oid in ids.items() if oid in have} == kept


def test_gc_prune_expire_is_read_and_checked_as_git_does(work: Repo) -> None:
    work.run("config", "gc.pruneExpire", "1.week.ago")
    old = work.run("hash-object", "--stdin", input=b"unreachable, 10 days old\n").decode().strip()
    gc(work.path, full=True)
    assert old not in all_ids(work.git_dir)  # 1.week.ago is not two weeks
    work.run("config", "gc.pruneExpire", "false")
    with pytest.raises(RepositoryError, match=r"invalid gc\.pruneExpire: 'false'"):
        gc(work.path)
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "gc", str(work.path)], capture_output=True, text=True, env=git_env()
    )
    assert proc.returncode == 128 and proc.stderr.startswith("fatal: invalid gc.pruneExpire")


def test_aggressive_searches_new_deltas_with_gcs_window(work: Repo) -> None:
    work.run("config", "gc.aggressiveWindow", "20")
    result = gc(work.path, aggressive=True)
    assert result.repack.settings["window"] == 20 and result.repack.settings["no_reuse_delta"] is True
    assert result.repack.new_deltas > 0


def test_auto_does_nothing_below_the_thresholds(work: Repo) -> None:
    packorder.repack(work.path)  # the order, freshly written: no drift
    listing = sorted(str(p) for p in work.git_dir.rglob("*"))
    result = gc(work.path, auto=True)
    assert not result.ran and result.auto is not None and result.auto.reasons == []
    assert result.auto.drift is not None and result.auto.drift.share == 0.0
    assert sorted(str(p) for p in work.git_dir.rglob("*")) == listing
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "gc", "--auto", str(work.path)], capture_output=True, env=git_env()
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


def test_auto_runs_past_gits_thresholds(work: Repo) -> None:
    """packorder.strategy=full: git gc --auto's thresholds, gc.auto and gc.autoPackLimit."""
    packorder.repack(work.path)
    work.run("config", "packorder.strategy", "full")
    work.run("config", "gc.auto", "256")  # more than one loose object in objects/17
    for i in range(2000):
        oid = work.run("hash-object", "--stdin", input=f"loose {i}\n".encode()).decode().strip()
        if oid.startswith("17"):
            work.run("hash-object", "-w", "--stdin", input=f"loose {i}\n".encode())
    result = gc(work.path, auto=True)
    assert result.ran and any("loose objects" in r for r in result.auto.reasons)
    work.run("config", "gc.auto", "6700")
    work.run("config", "gc.autoPackLimit", "2")
    work.run("config", "maintenance.auto", "false")  # no git gc --auto after these commits
    for i in range(3):
        work.commit(f"pushed {i}")
        work.run("repack", "-q")  # a pack a push
    result = gc(work.path, auto=True)
    assert result.ran and any("packs" in r for r in result.auto.reasons)
    assert result.steps[2] == "repack" and result.repack.strategy == "full"
    work.run("config", "gc.auto", "0")
    assert not gc(work.path, auto=True).auto.needed  # 0 turns --auto off, as in Git


def loose_in_17(count: int) -> list[bytes]:
    """Contents of `count` blobs whose ids start with 17 (the directory Git counts)."""
    import hashlib

    found = []
    i = 0
    while len(found) < count:
        data = f"loose {i}\n".encode()
        if hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest().startswith("17"):
            found.append(data)
        i += 1
    return found


def test_auto_runs_past_the_geometric_tasks_thresholds(work: Repo) -> None:
    """The default: Git's geometric maintenance task's condition, packs to roll up or loose
    objects past maintenance.geometric-repack.auto (100)."""
    packorder.repack(work.path)
    work.run("config", "maintenance.auto", "false")  # no git maintenance after these commits
    for data in loose_in_17(2):
        work.run("hash-object", "-w", "--stdin", input=data)
    result = gc(work.path, auto=True)
    assert result.ran and any("loose objects" in r for r in result.auto.reasons), result.auto.reasons
    assert result.steps == ["geometric-repack", "maintenance-tasks"] and len(result.repack.packs) == 1
    assert not gc(work.path, auto=True).ran  # rolled up: nothing more to do
    for i in range(3):
        work.commit(f"pushed {i}")
        work.run("repack", "-q")  # a pack a push
    result = gc(work.path, auto=True)
    assert result.ran and any("roll up" in r for r in result.auto.reasons)
    work.run("config", "maintenance.geometric-repack.auto", "0")
    assert not gc(work.path, auto=True).auto.needed  # 0 turns it off, as in Git


def test_auto_runs_when_git_gc_undid_the_order(work: Repo) -> None:
    packorder.repack(work.path)
    assert drift.measure(work.git_dir, "recency").share == 0.0
    git(work.path, "gc", "-q")
    measured = drift.measure(work.git_dir, "recency")
    assert measured.misplaced and measured.share > 0.05
    result = gc(work.path, auto=True)
    assert result.ran and any("drift" in r for r in result.auto.reasons)
    assert drift.measure(work.git_dir, "recency").share == 0.0
    assert not gc(work.path, auto=True).ran


def test_a_failing_pre_auto_gc_hook_stops_auto_gc(work: Repo) -> None:
    git(work.path, "gc", "-q")  # drifted: --auto would run
    hook = work.git_dir / "hooks" / "pre-auto-gc"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    assert not gc(work.path, auto=True).ran
    hook.unlink()
    assert gc(work.path, auto=True).ran


def test_a_running_gc_stops_ours_and_auto_stays_quiet(work: Repo) -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (work.git_dir / "gc.pid").write_text(f"{sleeper.pid} {socket.gethostname()}")
        git(work.path, "gc", "-q", "--force")  # drift, so that --auto would run
        (work.git_dir / "gc.pid").write_text(f"{sleeper.pid} {socket.gethostname()}")
        proc = subprocess.run(
            [sys.executable, "-m", "packorder", "gc", str(work.path)], capture_output=True, text=True, env=git_env()
        )
        assert proc.returncode == 128 and "gc is already running" in proc.stderr
        assert not gc(work.path, auto=True).ran
        result = gc(work.path, force=True)
        assert result.ran and any("--force" in w for w in result.warnings)
    finally:
        sleeper.kill()
        sleeper.wait()


def recipe() -> str:
    text = DOCS.read_text()
    block = re.search(r"<!-- recipe: begin -->\s*```sh\n(.*?)```\s*<!-- recipe: end -->", text, re.S)
    assert block is not None, "docs/maintenance.md has no recipe block"
    return block.group(1)


def log_path_p90(repo: Path) -> int:
    result = packorder.seekstats(repo, workload="log-path", path="src/file2.c", views=("raw",))
    view = result.view("raw")
    assert view is not None and view.percentiles is not None
    return view.percentiles["90"]


def commit_enough_to_trigger_auto_gc(repo: Repo) -> None:
    """Commits (each runs Git's auto maintenance) past a low gc.autoPackLimit: a pack a commit."""
    for i in range(1, 5):
        repo.write(f"src/file{i}.c", repo.path.joinpath(f"src/file{i}.c").read_text() + f"line {i}\n")
        repo.commit(f"work {i}")
        repo.run("repack", "-q")
    repo.commit("one more, to run auto maintenance past the limit")


def test_the_recipe_keeps_the_order_through_commits_that_trigger_auto_gc(work: Repo, tmp_path: Path) -> None:
    control = Repo.__new__(Repo)
    control.path, control.clock = tmp_path / "control", work.clock
    shutil.copytree(work.path, control.path, symlinks=True)
    for repo in (work, control):
        gc(repo.path, full=True)
        repo.run("config", "gc.autoPackLimit", "2")
        repo.run("config", "gc.autoDetach", "false")
        repo.run("config", "maintenance.autoDetach", "false")
    before = log_path_p90(work.path)
    (ordered,) = [p for p in work.pack_files() if not p.with_suffix(".mtimes").exists()]
    subprocess.run(["sh", "-e", "-c", recipe()], cwd=work.path, check=True, env=git_env())

    # Without the recipe, Git's auto maintenance repacks during the commits (Git 2.47's gc
    # everything, the newest Git's geometric task the packs the commits made); with it, Git
    # leaves the packs alone, and packorder gc --auto rolls them up in order.
    packs = len(work.pack_files())
    commit_enough_to_trigger_auto_gc(control)
    commit_enough_to_trigger_auto_gc(work)
    assert len(work.pack_files()) == packs + 4  # one a commit: no git repack ran
    assert len(control.pack_files()) < len(work.pack_files())
    for run in (["maintenance", "run", "--auto"], ["maintenance", "run"]):
        work.run(*run)
    assert len(work.pack_files()) > packs and ordered.exists()
    result = gc(work.path, auto=True)
    assert result.ran and any("roll up" in r for r in result.auto.reasons)
    assert ordered.exists() and ordered in work.pack_files()
    measured = drift.measure(work.git_dir, "recency")
    assert measured.ordered_pack == ordered and measured.misplaced == 0
    after = log_path_p90(work.path)
    assert after <= 1.2 * before + 4096, (before, after)
    assert not gc(work.path, auto=True).ran
