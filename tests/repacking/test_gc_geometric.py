"""`packorder gc`, geometric by default: the small packs roll up in order beside the ordered
pack, which an all-into-one ordered repack replaces only when the progression collapses, the
layout drifts, or it is asked for; `--auto` twice does nothing the second time; Git's
maintenance, holding its lock, keeps packorder's repack from running beside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import all_ids, git, git_env
from helpers.pushes import server_with_pushes

import packorder
from packorder.repacking import drift
from packorder.repacking.lock import MAINTENANCE_LOCK


def ordered_of(git_dir: Path) -> Path:
    return drift.measure(git_dir, "recency").ordered_pack


def test_gc_rolls_up_and_leaves_the_ordered_pack(tmp_path: Path) -> None:
    server = server_with_pushes(tmp_path, pushes=0, commits=60)
    packorder.repack(server.git_dir)
    ordered = ordered_of(server.git_dir)
    for _ in range(5):
        server.push()
    before = all_ids(server.git_dir)
    result = packorder.gc(server.git_dir)
    assert "geometric-repack" in result.steps and "repack" not in result.steps
    assert result.repack.strategy == "geometric" and result.repack.ordered_pack == ordered
    assert ordered.exists() and len(server.packs()) == 2
    assert all_ids(server.git_dir) == before
    git(server.git_dir, "multi-pack-index", "verify")
    git(server.git_dir, "fsck", "--full")


def test_auto_twice_does_nothing_the_second_time(tmp_path: Path) -> None:
    server = server_with_pushes(tmp_path, pushes=0, commits=60)
    packorder.repack(server.git_dir)
    assert not packorder.gc(server.git_dir, auto=True).ran  # just repacked: nothing to do
    for _ in range(3):
        server.push()
    first = packorder.gc(server.git_dir, auto=True)
    assert first.ran and first.steps[0] == "geometric-repack"
    second = packorder.gc(server.git_dir, auto=True)
    assert not second.ran and second.auto.reasons == []
    assert second.auto.drift.misplaced == 0


def test_a_collapsed_progression_is_repacked_into_one_ordered_pack(tmp_path: Path) -> None:
    """Pushes that outweigh half the ordered pack: everything into one pack, in order."""
    server = server_with_pushes(tmp_path, pushes=0, commits=10)
    packorder.repack(server.git_dir)
    for commits in (12, 8, 1):
        server.push(commits=commits, files=3)
    before = all_ids(server.git_dir)
    result = packorder.gc(server.git_dir, auto=True)
    assert result.ran and result.auto.full and any("no geometric progression" in r for r in result.auto.reasons)
    assert "repack" in result.steps and result.repack.strategy == "full"
    assert len([p for p in server.packs() if not p.with_suffix(".mtimes").exists()]) == 1
    assert drift.measure(server.git_dir, "recency").share == 0.0
    assert all_ids(server.git_dir) == before
    git(server.git_dir, "multi-pack-index", "verify")


def test_a_pack_git_rewrote_is_ordered_again(tmp_path: Path) -> None:
    server = server_with_pushes(tmp_path, pushes=2, commits=60)
    git(server.git_dir, "-c", "pack.threads=1", "repack", "-adf", "-q")  # trees stored as deltas
    git(server.git_dir, "repack", "-ad", "-q")  # reused, they go among the blobs: Git's order
    assert drift.measure(server.git_dir, "recency").misplaced
    result = packorder.gc(server.git_dir, auto=True)
    assert result.ran and result.auto.full and any("drift" in r for r in result.auto.reasons)
    assert drift.measure(server.git_dir, "recency").share == 0.0


@pytest.mark.parametrize("how", ["--full", "strategy"])
def test_full_repacks_everything(tmp_path: Path, how: str) -> None:
    server = server_with_pushes(tmp_path, pushes=3, commits=60)
    if how == "strategy":
        git(server.git_dir, "config", "packorder.strategy", "full")
    result = packorder.gc(server.git_dir, full=how == "--full")
    assert "repack" in result.steps and result.repack.strategy == "full"
    assert len([p for p in server.packs() if not p.with_suffix(".mtimes").exists()]) == 1
    git(server.git_dir, "config", "packorder.strategy", "sideways")
    with pytest.raises(packorder.RepositoryError, match=r"packorder\.strategy is 'sideways'"):
        packorder.gc(server.git_dir)


def test_nothing_to_do_is_answered_without_loading_the_repack(tmp_path: Path) -> None:
    """A server may run `gc --auto` after every push: with nothing to do, it loads neither
    click nor numpy, and prints nothing."""
    server = server_with_pushes(tmp_path, pushes=0, commits=20)
    packorder.repack(server.git_dir)
    code = (
        "import sys\n"
        "from packorder.cli.launch import main\n"
        f"sys.argv = ['packorder', 'gc', '--auto', '-q', {str(server.git_dir)!r}]\n"
        "main()\n"
        "print(sorted(m for m in ('numpy', 'click') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=git_env())
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout == "[]\n", proc.stderr
    server.push()
    server.push()
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "gc", "--auto", "-q", str(server.git_dir)],
        capture_output=True,
        env=git_env(),
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    assert len(server.packs()) == 2


def test_gits_maintenance_running_keeps_ours_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Git's maintenance holds objects/maintenance.lock; its repacking tasks could rewrite
    packs beside ours, so packorder waits for it, then gives up, unless the recipe turned
    them off."""
    from packorder.repacking import lock as lock_mod

    monkeypatch.setattr(lock_mod, "MAINTENANCE_WAIT", 0.3)
    server = server_with_pushes(tmp_path, pushes=3, commits=60)
    lock = server.git_dir / MAINTENANCE_LOCK
    lock.write_text("")
    with pytest.raises(packorder.RepositoryError, match="git maintenance is running"):
        packorder.gc(server.git_dir)
    assert not packorder.gc(server.git_dir, auto=True).ran  # quiet, as git gc --auto is
    for task in ("geometric-repack", "incremental-repack", "loose-objects"):
        git(server.git_dir, "config", f"maintenance.{task}.enabled", "false")
    assert packorder.gc(server.git_dir).ran
    assert lock.exists() and lock.read_text() == ""  # Git's, left to Git
    lock.unlink()
    result = packorder.gc(server.git_dir, full=True)
    assert result.ran and not lock.exists()  # ours, taken and released


def test_a_maintenance_lock_left_by_a_killed_run_is_taken_over(tmp_path: Path) -> None:
    server = server_with_pushes(tmp_path, pushes=3, commits=60)
    lock = server.git_dir / MAINTENANCE_LOCK
    lock.write_text("999999 " + __import__("socket").gethostname() + "\n")
    result = packorder.gc(server.git_dir)
    assert result.ran and any("maintenance.lock" in w for w in result.warnings)
    assert not lock.exists()
