"""Alternates: by default (`-l`, as `git gc` runs repack) objects an alternate has stay there;
`--no-local` copies them, as `git repack -a` does. A fork network (repositories sharing one
alternate) does not grow."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.gitrepo import all_ids, build_history, git

import packorder
from packorder.format import idx as idx_format


def pack_ids(git_dir: Path) -> set[str]:
    out: set[str] = set()
    for idx in (git_dir / "objects" / "pack").glob("*.idx"):
        index = idx_format.read(str(idx))
        out |= {index.names[i].tobytes().hex() for i in range(index.count)}
    return out


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = build_history(tmp_path_factory.mktemp("alt") / "upstream", commits=25)
    repo.run("repack", "-adq")
    bare = repo.path.parent / "upstream.git"
    git(None, "clone", "-q", "--bare", "--no-local", str(repo.path), str(bare))
    return bare


def shared_clone(upstream: Path, where: Path, bare: bool = False) -> Path:
    git(None, "clone", "-q", "--shared", *(["--bare"] if bare else []), str(upstream), str(where))
    return where


def commit_in(work: Path, name: str) -> None:
    (work / f"{name}.txt").write_text(f"{name} exists only in this fork\n")
    git(work, "add", f"{name}.txt")
    git(work, "commit", "-q", "-m", name)


def test_objects_of_the_alternate_are_not_copied(upstream: Path, tmp_path: Path) -> None:
    clone = shared_clone(upstream, tmp_path / "clone")
    commit_in(clone, "local")
    theirs = tmp_path / "theirs"
    shutil.copytree(clone, theirs, symlinks=True)
    git(theirs, "gc", "-q")
    result = packorder.repack(clone)
    upstream_ids = pack_ids(upstream)
    assert result.in_alternates > 100
    assert pack_ids(clone / ".git").isdisjoint(upstream_ids)
    assert pack_ids(clone / ".git") == pack_ids(theirs / ".git")  # what git gc keeps locally
    git(clone, "fsck", "--full")


def test_no_local_copies_them(upstream: Path, tmp_path: Path) -> None:
    clone = shared_clone(upstream, tmp_path / "clone")
    commit_in(clone, "local")
    reachable = set(git(clone, "rev-list", "--objects", "--all").decode().split()[::1])
    result = packorder.repack(clone, local=False)
    assert result.in_alternates == 0
    # Standing alone: drop the alternate and the repository is still whole.
    (clone / ".git" / "objects" / "info" / "alternates").unlink()
    git(clone, "fsck", "--full")
    assert {w for w in reachable if len(w) == 40} <= pack_ids(clone / ".git")


def test_a_fork_network_does_not_grow(upstream: Path, tmp_path: Path) -> None:
    before = all_ids(upstream)
    forks = [shared_clone(upstream, tmp_path / f"fork{i}") for i in range(2)]
    for i, fork in enumerate(forks):
        commit_in(fork, f"fork{i}")
    for fork in forks:
        packorder.repack(fork)
    for i, fork in enumerate(forks):
        own = pack_ids(fork / ".git")
        assert own and own.isdisjoint(before) and len(own) == 3  # its commit, tree and blob
        git(fork, "fsck", "--full")
        git(fork, "cat-file", "-e", f"HEAD:fork{i}.txt")
    assert all_ids(upstream) == before


def test_a_bare_shared_clone_gets_no_bitmap_and_says_why(upstream: Path, tmp_path: Path) -> None:
    clone = shared_clone(upstream, tmp_path / "clone.git", bare=True)
    result = packorder.repack(clone, write_bitmap=True)
    assert not result.bitmap and any("disabling bitmap writing" in w for w in result.warnings)
    assert not list((clone / "objects" / "pack").glob("*.bitmap"))
    git(clone, "fsck", "--full")


def test_no_local_writes_a_bitmap_in_a_bare_shared_clone(upstream: Path, tmp_path: Path) -> None:
    clone = shared_clone(upstream, tmp_path / "clone.git", bare=True)
    result = packorder.repack(clone, local=False)
    assert result.bitmap and result.bitmap_kind == "pack"
    git(clone, "rev-list", "--test-bitmap", "HEAD")
