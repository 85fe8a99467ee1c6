"""A full disk: on a small tmpfs of every size from too small to write the new packs to just
enough, a repack either succeeds or stops with one line that names the place, leaving the
repository as it was; it is never left with a half-installed pack."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import all_ids, build_history, git, git_env


def used_bytes(root: Path) -> int:
    """What `root` takes on a filesystem of 4 KiB blocks."""
    return sum(-(-p.stat().st_size // 4096) * 4096 for p in root.rglob("*") if p.is_file()) + 4096 * sum(
        1 for p in root.rglob("*") if p.is_dir()
    )


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = build_history(tmp_path_factory.mktemp("disk") / "work", commits=40, big_blob=200_000)
    repo.run("repack", "-adq")
    repo.write("late.txt", "loose, to be packed\n")
    repo.commit("late")
    repo.run("hash-object", "-w", "--stdin", input=b"unreachable, for a cruft pack\n")
    bare = repo.path.parent / "repo.git"
    git(None, "clone", "-q", "--bare", "--template=", "--no-local", str(repo.path), str(bare))
    (bare / "packed-refs").unlink(missing_ok=True)
    git(bare, "repack", "-q")  # a second pack, and the clone's loose objects
    return bare


def mount_tmpfs(where: Path, size: int) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)]).returncode == 0


def test_every_size_from_too_small_to_enough(source: Path, tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    if not mount_tmpfs(probe, 1 << 20):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    subprocess.run(["umount", str(probe)], check=True)
    base = used_bytes(source)
    packs = sum(p.stat().st_size for p in (source / "objects" / "pack").glob("*.pack"))
    before = all_ids(source)
    outcomes = {"refused": 0, "failed while writing": 0, "done": 0}
    for size in range(base, base + 2 * packs + (256 << 10), 16 << 10):
        mnt = tmp_path / f"disk{size}"
        assert mount_tmpfs(mnt, size)
        try:
            repo = mnt / "repo.git"
            try:
                shutil.copytree(source, repo)
            except OSError:
                continue  # the repository itself does not fit
            listing = sorted(str(p.relative_to(repo)) for p in repo.rglob("*"))
            proc = subprocess.run(
                [sys.executable, "-m", "packorder.cli", "repack", "-q", "--no-write-bitmap-index", str(repo)],
                capture_output=True,
                text=True,
                env=git_env(),
            )
            git(repo, "fsck", "--full")
            if proc.returncode == 0:
                outcomes["done"] += 1
                assert all_ids(repo) == before
                continue
            assert proc.returncode == 128, proc.stderr
            assert proc.stderr.count("\n") == 1 and str(mnt) in proc.stderr, proc.stderr
            assert sorted(str(p.relative_to(repo)) for p in repo.rglob("*")) == listing, size
            outcomes["refused" if "not enough space" in proc.stderr else "failed while writing"] += 1
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
    assert outcomes["refused"] and outcomes["done"], outcomes


def test_a_disk_that_fills_while_writing_is_rolled_back(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the check before writing out of the way (its estimate can be wrong), the disk
    fills while a pack or its index is written: what was installed is taken away, and the
    error names the file."""
    import packorder
    from packorder import space
    from packorder.errors import PackError

    probe = tmp_path / "probe"
    if not mount_tmpfs(probe, 1 << 20):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    subprocess.run(["umount", str(probe)], check=True)
    monkeypatch.setattr(space, "check", lambda directory, need: None)
    base = used_bytes(source)
    packs = sum(p.stat().st_size for p in (source / "objects" / "pack").glob("*.pack"))
    failed = 0
    for size in range(base, base + packs + (128 << 10), 16 << 10):
        mnt = tmp_path / f"disk{size}"
        assert mount_tmpfs(mnt, size)
        try:
            repo = mnt / "repo.git"
            try:
                shutil.copytree(source, repo)
            except OSError:
                continue
            listing = sorted(str(p.relative_to(repo)) for p in repo.rglob("*"))
            try:
                packorder.repack(repo, write_bitmap=False)
            except (PackError, OSError) as e:
                failed += 1
                assert str(mnt) in str(e) or str(mnt) in str(getattr(e, "filename", "")), e
                assert sorted(str(p.relative_to(repo)) for p in repo.rglob("*")) == listing, size
            git(repo, "fsck", "--full")
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
    assert failed
