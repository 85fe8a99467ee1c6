"""A full disk: on a small tmpfs of every size from too small to write the new packs to just
enough, a repack either succeeds or stops with one line that names the place, leaving the
repository as it was; it is never left with a half-installed pack."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.gitrepo import all_ids, build_history, git, git_env


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


def listing(repo: Path) -> list[str]:
    return sorted(str(p.relative_to(repo)) for p in repo.rglob("*"))


def pack_bytes(repo: Path) -> int:
    return sum(p.stat().st_size for p in (repo / "objects" / "pack").glob("*.pack"))


def copies_on_small_disks(source: Path, tmp_path: Path, room: int) -> Iterator[tuple[int, Path, Path]]:
    """(size, mount point, copy of `source`) on a tmpfs of each size from what `source` uses
    to that plus `room`, 16 KiB apart, skipping sizes it does not fit in; each unmounted when
    the next is asked for (or the loop ends). Skips the test without root."""
    probe = tmp_path / "probe"
    if not mount_tmpfs(probe, 1 << 20):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    subprocess.run(["umount", str(probe)], check=True)
    base = used_bytes(source)
    for size in range(base, base + room, 16 << 10):
        mnt = tmp_path / f"disk{size}"
        assert mount_tmpfs(mnt, size)
        try:
            repo = mnt / "repo.git"
            try:
                shutil.copytree(source, repo)
            except OSError:
                continue  # the repository itself does not fit
            yield size, mnt, repo
        finally:
            subprocess.run(["umount", str(mnt)], check=True)


def test_every_size_from_too_small_to_enough(source: Path, tmp_path: Path) -> None:
    before = all_ids(source)
    outcomes = {"refused": 0, "failed while writing": 0, "done": 0}
    disks = copies_on_small_disks(source, tmp_path, 2 * pack_bytes(source) + (256 << 10))
    with contextlib.closing(disks):
        for size, mnt, repo in disks:
            files = listing(repo)
            proc = subprocess.run(
                [sys.executable, "-m", "packorder", "repack", "-q", "--no-write-bitmap-index", str(repo)],
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
            assert listing(repo) == files, size
            outcomes["refused" if "not enough space" in proc.stderr else "failed while writing"] += 1
    assert outcomes["refused"] and outcomes["done"], outcomes


def test_a_disk_that_fills_while_writing_is_rolled_back(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the check before writing out of the way (its estimate can be wrong), the disk
    fills while a pack or its index is written: what was installed is taken away, and the
    error names the file."""
    import packorder
    from packorder.errors import PackError
    from packorder.repacking import space

    monkeypatch.setattr(space, "check", lambda directory, need: None)
    failed = 0
    disks = copies_on_small_disks(source, tmp_path, pack_bytes(source) + (128 << 10))
    with contextlib.closing(disks):
        for size, mnt, repo in disks:
            files = listing(repo)
            try:
                packorder.repack(repo, write_bitmap=False)
            except (PackError, OSError) as e:
                failed += 1
                assert str(mnt) in str(e) or str(mnt) in str(getattr(e, "filename", "")), e
                assert listing(repo) == files, size
            git(repo, "fsck", "--full")
    assert failed
