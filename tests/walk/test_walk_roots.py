"""The walk keeps what `git gc --prune=now` keeps: every object reachable from the roots Git's
own repack walks from (all refs, every worktree's HEAD, index and reflogs), seen as stored
(no replace refs, no grafts). Each case expires every unreachable object, so anything the
walk misses is deleted, and is compared with Git on a copy of the same repository."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, all_ids, build_history, git

import packorder


def kept_by_git(repo: Path, tmp_path: Path) -> set[str]:
    """What `git gc --prune=now` keeps of a copy, its reflogs left alone (expiring them is gc's
    step before the repack: packorder gc runs it too, packorder repack does not)."""
    theirs = tmp_path / "theirs"
    shutil.copytree(repo, theirs, symlinks=True)
    git(theirs, "-c", "gc.reflogExpire=never", "-c", "gc.reflogExpireUnreachable=never", "gc", "-q", "--prune=now")
    return all_ids(theirs / ".git")


def assert_kept_as_git_keeps(repo: Path, tmp_path: Path) -> None:
    want = kept_by_git(repo, tmp_path)
    result = packorder.repack(repo, cruft_expiration="now")
    assert all_ids(repo / ".git") == want
    assert result.unreachable_pruned > 0  # something was expired: the comparison means something
    git(repo, "fsck", "--full", env_extra={"GIT_NO_REPLACE_OBJECTS": "1"})


@pytest.fixture()
def repo(tmp_path: Path) -> Repo:
    r = build_history(tmp_path / "repo", commits=15)
    r.run("repack", "-adq")
    r.run("hash-object", "-w", "--stdin", input=b"dangling, so that something expires\n")
    return r


def test_a_replaced_commit_keeps_its_own_tree(repo: Repo, tmp_path: Path) -> None:
    """Seen through `git replace`, the replaced commit's tree is unreachable; Git's repack
    does not look through replacements, and neither may ours."""
    old = repo.run("rev-parse", "HEAD~5").decode().strip()
    old_tree = repo.run("rev-parse", "HEAD~5^{tree}").decode().strip()
    empty = repo.run("mktree", input=b"").decode().strip()
    replacement = repo.run("commit-tree", empty, "-m", "replacement").decode().strip()
    repo.run("replace", old, replacement)
    assert_kept_as_git_keeps(repo.path, tmp_path)
    git(repo.path, "cat-file", "-e", old_tree)
    git(repo.path, "cat-file", "-e", replacement)  # reachable from refs/replace


def test_a_graft_keeps_true_and_grafted_parents(repo: Repo, tmp_path: Path) -> None:
    """Git's repack keeps a grafted commit's true parents and its graft parents
    (pack-objects --keep-true-parents)."""
    repo.run("checkout", "-q", "--orphan", "elsewhere")
    repo.write("only-on-the-graft.txt", "reachable through the graft alone\n")
    graft_parent = repo.commit("grafted parent")
    repo.run("checkout", "-q", "main")
    repo.run("branch", "-D", "elsewhere")
    repo.run("reflog", "expire", "--expire=now", "--all")
    grafted = repo.run("rev-parse", "HEAD~3").decode().strip()
    true_parent = repo.run("rev-parse", "HEAD~4").decode().strip()
    (repo.git_dir / "info" / "grafts").write_text(f"{grafted} {graft_parent}\n")
    repo.run("config", "advice.graftFileDeprecated", "false")
    assert_kept_as_git_keeps(repo.path, tmp_path)
    git(repo.path, "cat-file", "-e", graft_parent)
    git(repo.path, "cat-file", "-e", true_parent)


def test_every_worktree_keeps_its_head_index_and_reflog(repo: Repo, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    repo.run("worktree", "add", "-q", "--detach", str(linked), "HEAD~2")
    # Detached HEAD on a commit no branch has.
    (linked / "detached.txt").write_text("on the linked worktree's HEAD alone\n")
    git(linked, "add", "detached.txt")
    git(linked, "commit", "-q", "-m", "detached commit")
    head = git(linked, "rev-parse", "HEAD").decode().strip()
    # A commit only the linked worktree's HEAD reflog remembers.
    (linked / "reflog.txt").write_text("in the linked worktree's reflog alone\n")
    git(linked, "add", "reflog.txt")
    git(linked, "commit", "-q", "-m", "then reset away")
    in_reflog = git(linked, "rev-parse", "HEAD").decode().strip()
    git(linked, "reset", "-q", "--hard", "HEAD~1")
    # Blobs only the indexes have.
    (linked / "staged.txt").write_text("staged in the linked worktree\n")
    git(linked, "add", "staged.txt")
    linked_blob = git(linked, "rev-parse", ":staged.txt").decode().strip()
    repo.write("staged-main.txt", "staged in the main worktree\n")
    repo.run("add", "staged-main.txt")
    main_blob = repo.run("rev-parse", ":staged-main.txt").decode().strip()
    assert_kept_as_git_keeps(repo.path, tmp_path)
    for oid in (head, in_reflog, linked_blob, main_blob):
        git(repo.path, "cat-file", "-e", oid)


def test_stash_notes_and_tags_on_trees_and_blobs_are_kept(repo: Repo, tmp_path: Path) -> None:
    repo.write("README", "changed, then stashed\n")
    repo.run("stash", "-q")
    stashed = repo.run("rev-parse", "stash^{tree}").decode().strip()
    repo.run("notes", "add", "-m", "a note", "HEAD~1")
    note = repo.run("notes", "list", "HEAD~1").decode().strip()
    blob = repo.run("hash-object", "-w", "--stdin", input=b"tagged blob\n").decode().strip()
    repo.run("tag", "-a", "blob-tag", "-m", "a blob", blob)
    assert_kept_as_git_keeps(repo.path, tmp_path)
    for oid in (stashed, note, blob):
        git(repo.path, "cat-file", "-e", oid)
