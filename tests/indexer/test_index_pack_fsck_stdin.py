"""The object checks of test_index_pack_fsck.py again, on packs that arrive through a pipe
(`--stdin`): there the first pass, checks included, is made while the pack is read
(native/src/index/received.rs), not by the scan of the stored pack. Same status, stderr and
stdout as Git's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.commands import run_cli
from helpers.gitrepo import git, git_env, git_version
from helpers.packbuilder import object_id
from test_index_pack_fsck import (
    BLOB,
    BLOB_X,
    COMMIT,
    COMMITS,
    GITMODULES,
    TAG,
    TAGS,
    TREE,
    TREES,
    commit,
    pack_of,
    repo_holding,
    same,
    tree,
)


def run_both_stdin(tmp_path: Path, pack: bytes, *args: str, populate: list[tuple[int, bytes]] = ()) -> tuple:
    results = []
    for who in ("git", "ours"):
        repo = repo_holding(tmp_path / who, populate)
        if who == "git":
            cmd = ["git", "-C", str(repo), "index-pack", "--stdin", *args]
            results.append(subprocess.run(cmd, input=pack, capture_output=True, env=git_env()))
        else:
            results.append(run_cli("index-pack", "--stdin", *args, "--repo", str(repo), input=pack))
    return results[0], results[1]


@pytest.mark.parametrize("case", sorted(COMMITS))
def test_commits_through_a_pipe(tmp_path: Path, case: str) -> None:
    pack = pack_of([(COMMIT, COMMITS[case]), (TREE, b"")])
    same(*run_both_stdin(tmp_path, pack, "--strict", populate=[(COMMIT, commit())]))


@pytest.mark.parametrize("case", sorted(TAGS))
def test_tags_through_a_pipe(tmp_path: Path, case: str) -> None:
    if case == "signed" and git_version() < (2, 52):
        pytest.skip("Git reads a tag's signature as a header of its own since 2.52")
    same(*run_both_stdin(tmp_path, pack_of([(TAG, TAGS[case]), (TREE, b"")]), "--strict"))


@pytest.mark.parametrize("case", sorted(TREES))
def test_trees_through_a_pipe(tmp_path: Path, case: str) -> None:
    pack = pack_of([(TREE, TREES[case]), (TREE, b""), BLOB_X])
    same(*run_both_stdin(tmp_path, pack, "--strict=largePathname=error:100,hasDot=warn"))


@pytest.mark.parametrize("case", sorted(GITMODULES))
@pytest.mark.parametrize("blob_first", [True, False])
def test_gitmodules_blobs_through_a_pipe(tmp_path: Path, case: str, blob_first: bool) -> None:
    blob = GITMODULES[case]
    objects = [(BLOB, blob), (TREE, tree(("100644", ".gitmodules", object_id(BLOB, blob))))]
    same(*run_both_stdin(tmp_path, pack_of(objects if blob_first else objects[::-1]), "--strict"))


@pytest.mark.parametrize("through", ["pipe", "file"])
def test_a_tree_too_large_to_hold_while_reading_is_checked_once_resolved(tmp_path: Path, through: str) -> None:
    """Under a memory budget of 1 MiB, a tree of 1.6 MiB is not held while the pack is read:
    its checks wait for the end (Checker::defer), with the same outcome as Git's."""
    names = sorted(f"file{i:06d}" for i in range(40_000))
    names[20_000] = "dir/file"  # a full path: fsck's error
    big = tree(*[("100644", name, object_id(BLOB, b"x\n")) for name in names])
    assert len(big) > 1 << 20
    pack = pack_of([(TREE, big), BLOB_X])
    repo = {who: tmp_path / who for who in ("git", "ours")}
    for path in repo.values():
        git(None, "init", "-q", "--bare", str(path))
    if through == "pipe":
        theirs = subprocess.run(
            ["git", "-C", str(repo["git"]), "index-pack", "--stdin", "--strict"],
            input=pack,
            capture_output=True,
            env=git_env(),
        )
        ours = run_cli("index-pack", "--stdin", "--strict", "--max-memory=1m", "--repo", str(repo["ours"]), input=pack)
    else:
        (tmp_path / "p.pack").write_bytes(pack)
        (tmp_path / "q.pack").write_bytes(pack)
        theirs = subprocess.run(
            ["git", "index-pack", "--strict", str(tmp_path / "p.pack")],
            cwd=repo["git"],
            capture_output=True,
            env=git_env(),
        )
        ours = run_cli("index-pack", "--strict", "--max-memory=1m", str(tmp_path / "q.pack"), cwd=repo["ours"])
    same(theirs, ours)
    assert theirs.returncode == 128 and b"fullPathname" in theirs.stderr
