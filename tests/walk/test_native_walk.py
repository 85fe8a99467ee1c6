"""The native walk (packorder.walk = native) against `git rev-list --objects --all --reflog
--indexed-objects`, the reference: the same objects in the same order with the same name
hashes (and the same missing objects in a partial clone), on repositories that have every
kind of root and edge case the walk must follow as Git does."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, git, git_env

import packorder
from packorder import gitcmd
from packorder.errors import RepositoryError
from packorder.store.listing import list_repository
from packorder.walk import native as native_walk
from packorder.walk import rev_list


def no_fallback() -> native_walk.Walk:
    raise AssertionError("the native walk fell back to Git's")


def walks(
    git_dir: Path, in_commit_order: bool, run_items: int | None = None
) -> tuple[tuple[bytes, bytes, set[bytes]], tuple[bytes, bytes, set[bytes]]]:
    """(native, git): ids, name hashes, missing ids. `run_items`: the native walk runs on two
    threads whatever the repository's size, each walking that many trees at a time (runs
    that small make every object meet the joining of runs)."""
    snap = list_repository(git_dir)
    packs = snap.local_packs + snap.foreign_packs
    promisor = any(p.with_suffix(".promisor").exists() for p in packs)
    config = gitcmd.read_config(snap.git_dir)
    ahead = {"threads": 2, "parallel_from": 0, "run_items": run_items} if run_items else {"threads": 1}
    loose = snap.loose + snap.foreign_loose
    ours = native_walk.start(snap.git_dir, packs, loose, promisor, in_commit_order, config, no_fallback, **ahead)
    assert ours is not None
    theirs = rev_list.GitObjectWalk(snap.git_dir, snap.fmt, promisor, ("--in-commit-order",) if in_commit_order else ())

    def split(r: native_walk.Walked) -> tuple[bytes, bytes, bytes, bytes, set[bytes]]:
        return r.ids, r.name_hashes, r.name_hashes_v2, r.path_hashes, set(snap.fmt.split(r.missing))

    return split(ours.result()), split(theirs.result())


def assert_same_walk(git_dir: Path) -> int:
    rawsz = list_repository(git_dir).fmt.rawsz
    for in_commit_order, run_items in ((False, None), (True, None), (False, 1), (True, 1), (False, 3), (True, 7)):
        ours, theirs = walks(git_dir, in_commit_order, run_items)
        ids, git_ids = ours[0], theirs[0]
        n = len(git_ids) // rawsz
        at = [slice(rawsz * i, rawsz * (i + 1)) for i in range(n)]
        first = next((i for i in range(n) if ids[at[i]] != git_ids[at[i]]), None)
        assert first is None and len(ids) == len(git_ids), (
            f"in_commit_order={in_commit_order}, run_items={run_items}: object {first} differs "
            f"({len(ids) // rawsz} vs {n} objects)"
        )
        assert ours[1:4] == theirs[1:4], "the hashes of the paths differ"
        assert ours[4] == theirs[4], "missing objects differ"
    return len(git_ids) // rawsz


def fast_import(repo: Repo, script: str) -> None:
    repo.run("fast-import", "--quiet", input=script.encode())


def every_root_kind(path: Path, object_format: str = "sha1") -> Repo:
    repo = Repo(path, object_format=object_format)
    repo.write("a.txt", "a\n")
    repo.write("dir/b.txt", "b\n")
    repo.write("dir/sub/deeper/than sixteen characters.txt", "long path\n")
    repo.write("we\nird", "a name with a newline\n")
    repo.commit("one")
    repo.commit_on_branch("side", {"dir/c.txt": "c\n"}, "side")
    repo.write("a.txt", "a2\n")
    repo.commit("two")
    repo.run("merge", "-q", "--no-edit", "side")
    # Tags on a tree and a blob, a chain of tags, a ref straight to a tree and one to a blob.
    repo.run("tag", "-a", "tree-tag", "-m", "a tree", "HEAD^{tree}")
    repo.run("tag", "blob-tag", "HEAD:a.txt")
    repo.run("tag", "-a", "v1", "-m", "release")
    repo.run("tag", "-a", "v1-signed-off", "-m", "a tag of a tag", "v1")
    repo.run("tag", "-a", "blob-annotated", "-m", "a blob", "HEAD:dir/b.txt")
    tree = repo.run("rev-parse", "HEAD:dir").decode().strip()
    repo.run("update-ref", "refs/trees/dir", tree)
    blob = repo.run("hash-object", "-w", "--stdin", input=b"only a ref names me\n").decode().strip()
    repo.run("update-ref", "refs/blobs/lonely", blob)
    # A gitlink (not followed).
    hexsz = {"sha1": 40, "sha256": 64}[object_format]
    repo.run("update-index", "--add", "--cacheinfo", f"160000,{'1' * hexsz},vendor/lib")
    repo.commit("a submodule")
    # Commits of one second (ties in the date order) and a clock going backwards.
    fast_import(
        repo,
        "".join(
            f"commit refs/heads/ties\nmark :{i + 1}\ncommitter C <c@x> {1_700_100_000 - (i % 3) * 7} +0000\n"
            f"data 2\nt{i % 10}\n"
            + (f"from :{i}\n" if i else "from refs/heads/main\n")
            + f"M 100644 inline t{i}.txt\ndata 3\n{i:02d}\n\n"
            for i in range(12)
        ),
    )
    # A commit with many parents.
    heads = "".join(
        f"commit refs/heads/leaf{i}\nmark :{i + 1}\ncommitter C <c@x> 1700200000 +0000\ndata 2\nl\n"
        f"from refs/heads/main\nM 100644 inline leaf{i}.txt\ndata 2\n{i % 10}\n\n"
        for i in range(300)
    )
    merge = "commit refs/heads/octopus\ncommitter C <c@x> 1700200001 +0000\ndata 2\no\nfrom :1\n" + "".join(
        f"merge :{i + 1}\n" for i in range(1, 300)
    )
    fast_import(repo, heads + merge + "\n")
    for i in range(300):
        repo.run("update-ref", "-d", f"refs/heads/leaf{i}")
    # Only a reflog names this one.
    repo.write("gone.txt", "only in the reflog\n")
    repo.commit("dropped")
    repo.run("reset", "-q", "--hard", "HEAD^")
    # A stash (a commit of the index and one of the worktree).
    repo.write("a.txt", "stashed\n")
    repo.run("stash", "-q")
    # The index: a staged file, and what a resolved conflict leaves (resolve-undo).
    repo.run("checkout", "-q", "-b", "left")
    repo.write("conflict.txt", "left\n")
    repo.commit("left")
    repo.run("checkout", "-q", "main")
    repo.write("conflict.txt", "right\n")
    repo.commit("right")
    repo.run("merge", "-q", "left", check=False)
    repo.write("conflict.txt", "resolved\n")
    repo.run("add", "conflict.txt")
    repo.write("staged.txt", "only in the index\n")
    repo.run("add", "staged.txt")
    # A linked worktree: its own detached HEAD, commit and index.
    repo.run("worktree", "add", "-q", "--detach", str(path.parent / "wt"), "side")
    wt = path.parent / "wt"
    (wt / "wt.txt").write_text("made in the worktree\n")
    git(wt, "add", "wt.txt")
    git(wt, "commit", "-q", "-m", "in the worktree", when=1_700_300_000)
    (wt / "wt-staged.txt").write_text("staged in the worktree\n")
    git(wt, "add", "wt-staged.txt")
    return repo


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_every_kind_of_root_walks_as_git_walks(tmp_path: Path, object_format: str) -> None:
    repo = every_root_kind(tmp_path / "repo", object_format)
    assert assert_same_walk(repo.git_dir) > 300
    repo.run("gc", "-q")  # the same from packs (deltas, REF and OFS), not loose objects
    assert assert_same_walk(repo.git_dir) > 300


def churned_directories(path: Path, object_format: str = "sha1") -> Repo:
    """A history whose directories change as they do in real ones, one commit at a time:
    entries changed, added and removed (several at once), a file replaced by a directory of
    its name and back, names sorting about a directory's '/' ("a", "a.c", "a/", "a0"), old
    versions brought back (objects seen long before, at the same path or another), and a
    directory moved whole."""
    repo = Repo(path, object_format=object_format)
    lines = []
    files = {f"src/f{i:02}.c": f"{i}\n" for i in range(40)}
    files.update({"src/a.c": "a.c\n", "src/a0": "a0\n", "src/a": "a file\n", "doc/x": "x\n"})
    for step in range(36):
        if step % 5 == 1:
            for i in range(step % 7, 40, 9):
                files.pop(f"src/f{i:02}.c", None)
        if step % 5 == 3:
            for i in range(0, 40, 4):
                files[f"src/f{i:02}.c"] = f"{i} back\n"
        if step % 6 == 2:
            files.pop("src/a", None)
            files["src/a/inner.c"] = f"inner {step}\n"
        if step % 6 == 5:
            files = {k: v for k, v in files.items() if not k.startswith("src/a/")}
            files["src/a"] = "a file\n"
        if step == 20:
            files.update({"moved/" + k[4:]: v for k, v in files.items() if k.startswith("src/")})
        files[f"src/f{step % 40:02}.c"] = f"{step % 40} at {step % 11}\n"
        files["doc/x"] = f"x {step % 4}\n"
        lines.append(f"commit refs/heads/main\ncommitter C <c@example.com> {1_600_000_000 + step} +0000\n")
        lines.append(f"data <<END\nstep {step}\nEND\ndeleteall\n")
        for name, data in sorted(files.items()):
            lines.append(f"M 100644 inline {name}\ndata <<END\n{data}END\n")
    fast_import(repo, "".join(lines))
    return repo


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_trees_passed_beside_the_last_tree_at_their_path_walk_as_git_walks(tmp_path: Path, object_format: str) -> None:
    repo = churned_directories(tmp_path / "repo", object_format)
    assert assert_same_walk(repo.git_dir) > 200
    for window in ("--window=10", "--window=0"):  # bases walked before or after the tree
        repo.run("repack", "-adfq", window)
        assert assert_same_walk(repo.git_dir) > 200


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_an_index_of_version_4_and_an_unwritten_cache_tree(tmp_path: Path, object_format: str) -> None:
    repo = every_root_kind(tmp_path / "repo", object_format)
    repo.run("update-index", "--index-version", "4")
    repo.write("dir/new.txt", "invalidates dir in the cache tree\n")
    repo.run("add", "dir/new.txt")
    assert assert_same_walk(repo.git_dir) > 300


def test_a_shallow_clone(tmp_path: Path) -> None:
    repo = every_root_kind(tmp_path / "repo")
    clone = tmp_path / "shallow.git"
    git(None, "clone", "-q", "--bare", "--depth", "2", f"file://{repo.path}", str(clone))
    assert (clone / "shallow").exists()
    assert assert_same_walk(clone) > 3


def test_a_partial_clone_reports_what_it_lacks_as_git_does(tmp_path: Path) -> None:
    repo = every_root_kind(tmp_path / "repo")
    repo.run("config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "partial.git"
    git(None, "clone", "-q", "--bare", "--filter=blob:none", f"file://{repo.path}", str(clone))
    for run_items in (None, 1, 2):
        ours, theirs = walks(clone, False, run_items)
        assert ours == theirs and len(ours[4]) > 10
    # And repacked so, without fetching anything.
    (clone / "config").write_text((clone / "config").read_text() + "[packorder]\n\twalk = native\n")
    result = packorder.repack(clone, verify="crc")
    assert result.objects == len(ours[0]) // 20


def test_a_missing_object_nothing_promises_fails_before_anything_is_written(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("a.txt", "kept\n")
    repo.write("b.txt", "lost\n")
    repo.commit("one")
    lost = repo.run("rev-parse", "HEAD:b.txt").decode().strip()
    (repo.git_dir / "objects" / lost[:2] / lost[2:]).unlink()
    repo.run("config", "packorder.walk", "native")
    before = sorted(p.name for p in (repo.git_dir / "objects").rglob("*"))
    with pytest.raises(RepositoryError, match=f"missing blob {lost}; nothing was changed"):
        packorder.repack(repo.path)
    assert sorted(p.name for p in (repo.git_dir / "objects").rglob("*")) == before


def test_a_missing_object_stops_the_walk_on_every_core(tmp_path: Path) -> None:
    """The walk on two threads, a tree at a time, with a blob missing from a later tree: the
    failure of one run stops the others and is the walk's error."""
    repo = Repo(tmp_path / "repo")
    for i in range(6):
        repo.write(f"f{i}.txt", f"version {i}\n")
        repo.commit(f"commit {i}")
    lost = repo.run("rev-parse", "HEAD~2:f3.txt").decode().strip()
    (repo.git_dir / "objects" / lost[:2] / lost[2:]).unlink()
    snap = list_repository(repo.git_dir)
    config = gitcmd.read_config(repo.git_dir)
    walk = native_walk.start(
        repo.git_dir,
        snap.local_packs,
        snap.loose,
        False,
        False,
        config,
        no_fallback,
        threads=2,
        parallel_from=0,
        run_items=1,
    )
    assert walk is not None
    with pytest.raises(RepositoryError, match=f"missing blob {lost}"):
        walk.result()


def test_an_index_the_walk_leaves_to_git(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("a.txt", "a\n")
    repo.commit("one")
    repo.run("update-index", "--split-index")
    snap = list_repository(repo.git_dir)
    config = gitcmd.read_config(repo.git_dir)
    assert native_walk.start(repo.git_dir, snap.local_packs, snap.loose, False, False, config, no_fallback) is None


def test_a_repack_with_the_native_walk_writes_the_same_pack(tmp_path: Path) -> None:
    repo = every_root_kind(tmp_path / "repo")
    repo.run("gc", "-q")
    copies = {}
    for walk in native_walk.WALKS:
        copy = tmp_path / walk
        shutil.copytree(repo.path, copy, symlinks=True)
        git(copy, "config", "packorder.walk", walk)
        packorder.repack(copy, order="history")
        copies[walk] = sorted(p.name for p in (copy / ".git" / "objects" / "pack").glob("*.pack"))
        subprocess.run(["git", "-C", str(copy), "fsck", "--full", "--no-dangling"], check=True, capture_output=True)
    assert copies["native"] == copies["git"]


def test_an_unknown_walk_is_a_usage_error(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("one")
    repo.run("config", "packorder.walk", "fastest")
    with pytest.raises(packorder.UsageError, match=r"packorder\.walk is"):
        packorder.repack(repo.path)


def test_a_reflog_naming_a_blob_leaves_the_walk_to_git(tmp_path: Path) -> None:
    """Only Git's walk reads what reflogs name beyond commits: a blob only a reflog names is
    kept, by Git's walk."""
    repo = Repo(tmp_path / "repo")
    repo.write("a.txt", "a\n")
    head = repo.commit("one")
    blob = repo.run("hash-object", "-w", "--stdin", input=b"only a reflog names me\n").decode().strip()
    repo.run("update-ref", "--create-reflog", "refs/misc/x", blob)
    repo.run("update-ref", "refs/misc/x", head)
    snap = list_repository(repo.git_dir)
    config = gitcmd.read_config(repo.git_dir)
    assert native_walk.start(repo.git_dir, snap.local_packs, snap.loose, False, False, config, no_fallback) is None
    repo.run("config", "packorder.walk", "native")
    packorder.repack(repo.path, cruft_expiration="now")
    assert repo.run("cat-file", "-t", blob).decode().strip() == "blob"


def test_a_cancelled_walk_stops_as_interrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk polls its cancel flag (an interrupt of the repack sets it): cancelled before
    it reads anything, it ends at once and says so."""
    repo = every_root_kind(tmp_path / "repo")
    started: list = []

    class Cancelled(native_walk.NativeWalk):
        def __init__(self, walker, *args) -> None:  # type: ignore[no-untyped-def]
            walker.cancel()
            started.append(walker)
            super().__init__(walker, *args)

    monkeypatch.setattr(native_walk, "NativeWalk", Cancelled)
    snap = list_repository(repo.git_dir)
    walk = native_walk.start(
        snap.git_dir, snap.local_packs, snap.loose, False, False, gitcmd.read_config(snap.git_dir), no_fallback
    )
    assert walk is not None and started
    with pytest.raises(packorder.Interrupted):
        walk.result()


@pytest.mark.parametrize("missing_ok", [False, True])
def test_objects_pushed_after_the_listing_make_it_gits_walk(tmp_path: Path, missing_ok: bool) -> None:
    """A push between the listing and Git's reading of the refs names objects the listing
    lacks: the walk cannot follow them, and since the repository has them when it ends, the
    walk is Git's, which reads whatever is there (what an error or a missing object would
    otherwise make of a push)."""
    repo = every_root_kind(tmp_path / "repo")
    snap = list_repository(repo.git_dir)
    repo.write("pushed.txt", "pushed after the listing\n")
    repo.commit("pushed")
    gits: list[rev_list.GitObjectWalk] = []

    def fallback() -> rev_list.GitObjectWalk:
        gits.append(rev_list.GitObjectWalk(snap.git_dir, snap.fmt, missing_ok=missing_ok))
        return gits[-1]

    config = gitcmd.read_config(snap.git_dir)
    walk = native_walk.start(snap.git_dir, snap.local_packs, snap.loose, missing_ok, False, config, fallback)
    assert walk is not None
    ours = walk.result()
    assert len(gits) == 1
    assert ours == rev_list.GitObjectWalk(snap.git_dir, snap.fmt, missing_ok=missing_ok).result()
    pushed = bytes.fromhex(repo.run("rev-parse", "HEAD").decode().strip())
    assert pushed in snap.fmt.split(ours.ids)


def test_an_object_loose_here_and_in_an_alternate(tmp_path: Path) -> None:
    """The same id loose in the repository and in its alternate is one object to the walk."""
    origin = Repo(tmp_path / "origin")
    origin.write("a.txt", "shared\n")
    origin.commit("one")
    git(None, "clone", "-q", "--shared", str(origin.path), str(tmp_path / "borrower"))
    borrower = tmp_path / "borrower"
    blob = origin.run("rev-parse", "HEAD:a.txt").decode().strip()
    loose = Path(blob[:2]) / blob[2:]
    (borrower / ".git" / "objects" / loose.parent).mkdir(exist_ok=True)
    shutil.copy(origin.git_dir / "objects" / loose, borrower / ".git" / "objects" / loose)
    (borrower / "b.txt").write_text("its own\n")
    git(borrower, "add", "b.txt")
    git(borrower, "commit", "-q", "-m", "two")
    assert assert_same_walk(borrower / ".git") >= 6


def test_a_corrupt_index_is_one_clear_error(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("a.txt", "a\n")
    repo.commit("one")
    index = repo.git_dir / "index"
    index.write_bytes(index.read_bytes()[:40] + b"\0" * 20)
    repo.run("config", "packorder.walk", "native")
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "repack", str(repo.path)], capture_output=True, text=True, env=git_env()
    )
    assert proc.returncode == 128 and "Traceback" not in proc.stderr
    assert (
        proc.stderr.startswith("fatal: cannot list the repository's objects: index file")
        and proc.stderr.count("\n") == 1
    )
