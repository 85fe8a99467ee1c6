"""packorder repack: conformance with git repack, content preserved, and the safety protocol."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers.gitrepo import Repo, build_history, git, git_env

import packorder
from packorder.errors import CorruptPackError, PackError, RepositoryError
from packorder.format import layout
from packorder.walk import rev_list

CRASH_POINTS = [
    "written",
    "verified",
    "rev-installed",
    "pack-renamed",
    "mtimes-installed",
    "bitmap-installed",
    "idx-installed",
    "midx-removed",
    "pack-removed",
    "loose-removed",
]


def pack_order(repo_dir: Path) -> list[str]:
    """Object ids of the repository's single pack, in pack order."""
    (pack,) = (
        sorted((repo_dir / "objects" / "pack").glob("*.pack"))
        if (repo_dir / "objects").is_dir()
        else sorted((repo_dir / ".git" / "objects" / "pack").glob("*.pack"))
    )
    lay = layout.load(pack)
    return [lay.oid_hex(i) for i in range(lay.count)]


def contents(git_dir: Path) -> dict[str, str]:
    """Every object id -> type and content hash, as Git reads them."""
    ids = git(None, "--git-dir", str(git_dir), "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    out = git(None, "--git-dir", str(git_dir), "cat-file", "--batch", input=ids)
    result: dict[str, str] = {}
    at = 0
    import hashlib

    while at < len(out):
        nl = out.index(b"\n", at)
        oid, kind, size = out[at:nl].split()
        body = out[nl + 1 : nl + 1 + int(size)]
        result[oid.decode()] = kind.decode() + ":" + hashlib.sha1(body).hexdigest()
        at = nl + 1 + int(size) + 1
    return result


def clone_repo(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """History with branches, merges, tags, packed with deltas, plus loose objects and an
    unreachable one, so every kind of source appears."""
    repo = build_history(tmp_path_factory.mktemp("repack") / "base", commits=60)
    repo.run("repack", "-adf", "-q")
    repo.write("late.txt", "written after the last repack\n")
    repo.commit("late commit")
    repo.run("hash-object", "-w", "--stdin", input=b"an unreachable blob\n")
    return repo


@pytest.fixture()
def work(base_repo: Repo, tmp_path: Path) -> Path:
    return clone_repo(base_repo.path, tmp_path / "work")


@pytest.fixture()
def packed(tmp_path: Path, base_repo: Repo) -> Path:
    """A copy of the history with everything in one pack (no loose objects)."""
    dst = clone_repo(base_repo.path, tmp_path / "packed")
    git(dst, "repack", "-adq")
    git(dst, "prune", "--expire=now")
    return dst


def test_git_order_equals_git_repack(packed: Path, tmp_path: Path) -> None:
    theirs = clone_repo(packed, tmp_path / "theirs")
    git(theirs, "-c", "pack.window=0", "repack", "-adq")
    packorder.repack(packed, order="git", window=0)
    assert pack_order(packed / ".git") == pack_order(theirs / ".git")


def test_recency_without_deltas_equals_git_repack_f(packed: Path, tmp_path: Path) -> None:
    theirs = clone_repo(packed, tmp_path / "theirs")
    git(theirs, "-c", "pack.window=0", "repack", "-adfq")
    packorder.repack(packed, order="recency", no_reuse_delta=True, window=0)
    assert pack_order(packed / ".git") == pack_order(theirs / ".git")


@pytest.mark.parametrize("order", ["recency", "git", "rev-list", "type"])
@pytest.mark.parametrize("verify", ["produced", "full", "crc"])
def test_every_object_survives(work: Path, order: str, verify: str) -> None:
    before = contents(work / ".git")
    result = packorder.repack(work, order=order, verify=verify)
    after = contents(work / ".git")
    assert after == before
    git(work, "fsck", "--full", "--strict")
    for idx in (work / ".git" / "objects" / "pack").glob("*.idx"):
        git(work, "verify-pack", str(idx))
    assert result.objects == len(before) and result.unreachable_kept == 1
    assert result.reused_deltas > 100
    assert not list((work / ".git" / "objects").glob("[0-9a-f][0-9a-f]/*"))
    # The ordered pack holds the reachable objects, the cruft pack the unreachable blob.
    (cruft,) = result.cruft_packs
    assert cruft.with_suffix(".mtimes").exists() and len(result.packs) == 2


def test_recency_puts_trees_after_commits_even_when_deltas_are_reused(packed: Path) -> None:
    """The point of the project: Git's order on reused deltas scatters delta trees among
    blobs; recency on real types keeps all trees before all blobs."""
    packorder.repack(packed, order="recency")
    lay = layout.load(next((packed / ".git" / "objects" / "pack").glob("*.pack")))
    kinds = lay.real_kinds()
    first_blob = int(np.flatnonzero(kinds == 3)[0])
    last_tree = int(np.flatnonzero(kinds == 2)[-1])
    assert last_tree < first_blob
    assert (lay.base >= 0).sum() > 100  # deltas were reused, not dropped


def test_bases_precede_their_deltas(work: Path) -> None:
    result = packorder.repack(work, order="type")
    lay = layout.load(result.packs[0])  # the ordered pack
    has = lay.base >= 0
    assert has.sum() > 100
    assert (lay.base[has] < np.flatnonzero(has)).all()


def test_depth_limit_cuts_chains(packed: Path) -> None:
    result = packorder.repack(packed, depth=2)
    lay = layout.load(next((packed / ".git" / "objects" / "pack").glob("*.pack")))
    assert lay.depths().max() <= 2 and result.cut_deltas > 0
    git(packed, "fsck", "--full")


def test_ref_delta(work: Path) -> None:
    result = packorder.repack(work, ref_delta=True)
    lay = layout.load(result.packs[0])  # the ordered pack (the cruft pack holds one blob)
    assert (lay.kinds == 7).sum() > 100 and (lay.kinds == 6).sum() == 0
    git(work, "fsck", "--full")


def test_expired_unreachable_objects_are_dropped(work: Path) -> None:
    result = packorder.repack(work, cruft_expiration="now")
    assert result.unreachable_pruned == 1 and result.unreachable_kept == 0 and result.cruft_packs == []
    git(work, "fsck", "--full")


def test_young_unreachable_objects_survive_expiry(work: Path) -> None:
    result = packorder.repack(work, cruft_expiration="2.weeks.ago")
    assert result.unreachable_pruned == 0 and result.unreachable_kept == 1


def test_keep_packs_are_left_alone(work: Path) -> None:
    (pack,) = (work / ".git" / "objects" / "pack").glob("*.pack")
    keep = pack.with_suffix(".keep")
    keep.write_text("")
    before = contents(work / ".git")
    result = packorder.repack(work)
    assert pack.exists() and keep.exists() and result.kept_packs == [pack]
    assert contents(work / ".git") == before
    git(work, "fsck", "--full")


def test_dry_run_and_output_dir_leave_the_repository_alone(work: Path, tmp_path: Path) -> None:
    listing = sorted(str(p) for p in (work / ".git" / "objects").rglob("*"))
    result = packorder.repack(work, dry_run=True)
    assert result.dry_run and result.packs == [] and result.objects > 0
    out = tmp_path / "out"
    result = packorder.repack(work, output_dir=out)
    assert sorted(str(p) for p in (work / ".git" / "objects").rglob("*")) == listing
    packs = sorted(out.glob("*.pack"))
    for pack in packs:
        git(None, "verify-pack", str(pack.with_suffix(".idx")))
    assert sorted(result.packs) == packs and len(packs) == 2 and result.removed_packs == []


def test_lock_keeps_two_repacks_apart(work: Path) -> None:
    """The lock is Git's gc.pid: one naming a live process (here on another host, which Git
    trusts for 12 hours) stops the repack; the lock is gone after a run."""
    lock = work / ".git" / "gc.pid"
    lock.write_text("1 elsewhere")
    with pytest.raises(RepositoryError, match="gc is already running on machine 'elsewhere' pid 1"):
        packorder.repack(work)
    lock.unlink()
    packorder.repack(work)
    assert not lock.exists()


@pytest.mark.parametrize(("walk", "says"), [("native", "missing tree"), ("git", "bad tree object")])
def test_missing_object_stops_before_anything_is_removed(work: Path, walk: str, says: str) -> None:
    git(work, "config", "packorder.walk", walk)
    head_tree = git(work, "rev-parse", "HEAD^{tree}").decode().strip()
    loose = work / ".git" / "objects" / head_tree[:2] / head_tree[2:]
    assert loose.exists()
    loose.unlink()
    listing = sorted(str(p) for p in (work / ".git" / "objects").rglob("*"))
    with pytest.raises(RepositoryError, match=f"{says} {head_tree}; nothing was changed"):
        packorder.repack(work)
    assert sorted(str(p) for p in (work / ".git" / "objects").rglob("*")) == listing


def test_corrupt_pack_stops_before_anything_is_removed(work: Path) -> None:
    (pack,) = (work / ".git" / "objects" / "pack").glob("*.pack")
    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0xFF
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    listing = sorted(str(p) for p in (work / ".git" / "objects").rglob("*"))
    with pytest.raises(PackError):
        packorder.repack(work)
    assert sorted(str(p) for p in (work / ".git" / "objects").rglob("*")) == listing


def test_objects_pushed_during_the_repack_survive(work: Path) -> None:
    """A commit made while the repack runs (between enumeration and removal) stays readable."""
    made: list[str] = []

    def progress(title: str, done: int, total: int) -> None:
        if title == "Writing objects" and not made:
            (work / "pushed.txt").write_text("arrived during the repack\n")
            git(work, "add", "pushed.txt")
            git(work, "commit", "-q", "-m", "pushed during repack", when=1_800_000_000)
            made.append(git(work, "rev-parse", "HEAD").decode().strip())

    packorder.repack(work, progress=progress)
    assert made
    git(work, "cat-file", "-e", made[0])
    git(work, "cat-file", "-p", "HEAD:pushed.txt")
    git(work, "fsck", "--full")


def test_the_walk_starts_after_the_listing(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pack listed after Git's walk began could be removed by an expiring repack while its
    objects were invisible to the walk: the snapshot lists first, then walks."""
    from packorder.repacking import snapshot
    from packorder.store import listing

    steps: list[str] = []
    for name in ("list_packs", "list_loose"):
        real = getattr(listing, name)
        monkeypatch.setattr(listing, name, lambda *a, _r=real, _n=name: steps.append(_n) or _r(*a))
    real_walk = snapshot._main_walk
    monkeypatch.setattr(snapshot, "_main_walk", lambda *a, **k: steps.append("walk") or real_walk(*a, **k))
    packorder.repack(work, cruft_expiration="now")
    assert steps[-1] == "walk" and "list_packs" in steps and "list_loose" in steps
    git(work, "fsck", "--full")


def test_a_pack_arriving_after_the_snapshot_survives_pruning(work: Path) -> None:
    """A push that lands after repack started (its pack written, then its ref) keeps its
    objects, even though the walk may not have seen them and unreachable objects are pruned."""
    from packorder.repacking import snapshot

    start = snapshot.take(work, lock=True)
    (work / "pushed.txt").write_text("arrived after the snapshot\n")
    git(work, "add", "pushed.txt")
    git(work, "commit", "-q", "-m", "pushed after the snapshot", when=1_800_000_000)
    pushed = git(work, "rev-parse", "HEAD").decode().strip()
    objects = git(work, "rev-list", "--objects", "HEAD^!").decode()
    pack_dir = work / ".git" / "objects" / "pack"
    git(work, "pack-objects", "-q", str(pack_dir / "pack"), input=objects.encode())
    git(work, "prune-packed")
    (new_pack,) = set(pack_dir.glob("*.pack")) - set(start.local_packs)
    packorder.repack(work, cruft_expiration="now", start=start)  # no grace period to hide a mistake
    assert new_pack.exists()
    git(work, "cat-file", "-p", f"{pushed}:pushed.txt")
    git(work, "fsck", "--full")
    assert not (work / ".git" / "gc.pid").exists()


def test_a_push_the_walk_sees_but_the_listing_does_not_stays_where_it_is(work: Path) -> None:
    """The push lands between the listing and the walk's reading of the refs (forced here by
    starting the walk again after it): its objects are reachable, yet in no listed pack. The
    repack leaves them in their pack rather than failing or losing them."""
    from packorder.repacking import snapshot

    start = snapshot.take(work, lock=True)
    (work / "pushed.txt").write_text("seen by the walk, not by the listing\n")
    git(work, "add", "pushed.txt")
    git(work, "commit", "-q", "-m", "pushed before the walk read the refs", when=1_800_000_000)
    pushed = git(work, "rev-parse", "HEAD").decode().strip()
    pack_dir = work / ".git" / "objects" / "pack"
    objects = git(work, "rev-list", "--objects", "HEAD^!").decode()
    git(work, "pack-objects", "-q", str(pack_dir / "pack"), input=objects.encode())
    git(work, "prune-packed")
    (new_pack,) = set(pack_dir.glob("*.pack")) - set(start.local_packs)
    walk, tags = start.take_walk()
    walk.stop()
    tags.stop()
    start.walk = rev_list.GitObjectWalk(start.git_dir, start.fmt, missing_ok=False)
    start.tags = rev_list.TagTips(start.git_dir)
    result = packorder.repack(work, cruft_expiration="now", start=start)
    assert new_pack.exists() and new_pack not in result.removed_packs
    git(work, "cat-file", "-p", f"{pushed}:pushed.txt")
    git(work, "fsck", "--full")


def test_a_write_that_fails_midway_leaves_nothing(work: Path) -> None:
    """The pack is hashed and written by a second thread; its error (here: past a file size
    limit, as a full disk would) is the one reported, and nothing is left or removed."""
    import resource
    import signal

    git(work, "repack", "-adq")
    (pack,) = (work / ".git" / "objects" / "pack").glob("*.pack")
    limit = pack.stat().st_size // 2

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    before = sorted(str(p) for p in (work / ".git" / "objects").rglob("*"))
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "repack", "-q", "--no-write-bitmap-index", str(work)],
        capture_output=True,
        env=git_env(),
        preexec_fn=small_files,
    )
    assert proc.returncode == 128
    err = proc.stderr.decode()
    assert err.startswith(f"fatal: cannot write the new pack {work / '.git' / 'objects' / 'pack'}/.tmp-packorder-")
    assert err.endswith(": File too large (os error 27)\n") and err.count("\n") == 1
    assert sorted(str(p) for p in (work / ".git" / "objects").rglob("*")) == before
    git(work, "fsck", "--full")


def test_a_killed_repacks_partial_pack_is_removed_by_the_next(work: Path) -> None:
    import os

    pack_dir = work / ".git" / "objects" / "pack"
    stale = pack_dir / ".tmp-packorder-killed.pack"
    stale.write_bytes(b"PACK" + b"\0" * 1000)
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    recent = pack_dir / ".tmp-packorder-running.pack"  # maybe another writer's: kept
    recent.write_bytes(b"PACK")
    packorder.repack(work, dry_run=True)
    assert stale.exists()  # a dry run changes nothing
    packorder.repack(work)
    assert not stale.exists() and recent.exists()
    git(work, "fsck", "--full")


def test_run_from_a_linked_worktree_repacks_the_repository_and_keeps_its_head(work: Path, tmp_path: Path) -> None:
    """A linked worktree's git directory has no objects of its own; Git's walk from the main
    repository covers every worktree's HEAD and index."""
    linked = tmp_path / "linked"
    git(work, "worktree", "add", "-q", "--detach", str(linked))
    (linked / "only-here.txt").write_text("reachable from the linked worktree's HEAD alone\n")
    git(linked, "add", "only-here.txt")
    git(linked, "commit", "-q", "-m", "detached, in the linked worktree", when=1_800_000_000)
    detached = git(linked, "rev-parse", "HEAD").decode().strip()
    result = packorder.repack(linked, cruft_expiration="now")
    assert result.git_dir == (work / ".git").resolve()
    assert result.packs and all(p.parent == work / ".git" / "objects" / "pack" for p in result.packs)
    git(work, "cat-file", "-e", detached)
    git(linked, "cat-file", "-p", "HEAD:only-here.txt")
    git(work, "fsck", "--full")


def test_a_snapshot_must_be_locked_exactly_when_repacking_in_place(work: Path) -> None:
    from packorder.errors import UsageError
    from packorder.repacking import snapshot

    listing = sorted(str(p) for p in (work / ".git" / "objects").rglob("*"))
    with pytest.raises(UsageError, match="locked exactly"):
        packorder.repack(work, start=snapshot.take(work, lock=False))
    with pytest.raises(UsageError, match="locked exactly"):
        packorder.repack(work, dry_run=True, start=snapshot.take(work, lock=True))
    assert sorted(str(p) for p in (work / ".git" / "objects").rglob("*")) == listing


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_killed_at_any_point_the_repository_stays_valid(work: Path, point: str) -> None:
    git(work, "multi-pack-index", "write")  # so that removing it is one of the steps
    before = contents(work / ".git")
    env = git_env()
    env["PACKORDER_CRASH_AT"] = point
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "repack", "-q", "-b", str(work)], env=env, capture_output=True
    )
    assert proc.returncode == 137, proc.stderr.decode()
    git(work, "fsck", "--full")
    assert contents(work / ".git") == before
    # The next repack recovers: the killed one's lock names a dead process.
    packorder.repack(work)
    git(work, "fsck", "--full")
    assert contents(work / ".git") == before


def test_killed_at_random_times(work: Path) -> None:
    before = contents(work / ".git")
    for delay in (0.3, 0.45, 0.6, 0.75, 0.9, 1.1):
        proc = subprocess.Popen([sys.executable, "-m", "packorder", "repack", "-q", str(work)], env=git_env())
        time.sleep(delay)
        proc.kill()
        proc.wait()
        git(work, "fsck", "--full")
        assert contents(work / ".git") == before


def test_bare_repository_gets_a_bitmap(base_repo: Repo, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(None, "clone", "-q", "--bare", "--no-local", str(base_repo.path), str(bare))
    result = packorder.repack(bare)
    assert result.bitmap and result.bitmaps > 0
    assert list((bare / "objects" / "pack").glob("pack-*.bitmap"))
    out = git(bare, "rev-list", "--count", "--use-bitmap-index", "--all").decode().strip()
    assert int(out) == int(git(bare, "rev-list", "--count", "--all").decode().strip())
    result = packorder.repack(bare, write_bitmap=False)
    assert not result.bitmap


def test_partial_clone_keeps_a_promisor_pack(base_repo: Repo, tmp_path: Path) -> None:
    upstream = tmp_path / "upstream.git"
    git(None, "clone", "-q", "--bare", "--no-local", str(base_repo.path), str(upstream))
    git(upstream, "config", "uploadpack.allowFilter", "true")
    partial = tmp_path / "partial.git"
    git(None, "clone", "-q", "--bare", "--filter=blob:none", f"file://{upstream}", str(partial))
    missing = git(partial, "rev-list", "--objects", "--all", "--missing=print").decode().count("\n?")
    assert missing > 0
    result = packorder.repack(partial)
    assert result.promisor
    (pack,) = (partial / "objects" / "pack").glob("*.pack")
    assert pack.with_suffix(".promisor").exists()
    env = git_env()
    env["GIT_NO_LAZY_FETCH"] = "1"
    subprocess.run(["git", "-C", str(partial), "fsck", "--connectivity-only"], check=True, env=env, capture_output=True)


def test_partial_clone_with_local_objects_takes_only_promised_ones_as_missing(base_repo: Repo, tmp_path: Path) -> None:
    """Beside a promisor pack, a local commit (loose objects): the blobs the promisor pack's
    trees name may be missing (promised); a blob nothing promises may not, and the repack
    refuses before changing anything."""
    upstream = tmp_path / "upstream.git"
    git(None, "clone", "-q", "--bare", "--no-local", str(base_repo.path), str(upstream))
    git(upstream, "config", "uploadpack.allowFilter", "true")
    partial = tmp_path / "partial.git"
    git(None, "clone", "-q", "--bare", "--filter=blob:none", f"file://{upstream}", str(partial))
    env = {"GIT_NO_LAZY_FETCH": "1"}

    def commit_with(entry: str, message: str) -> None:
        listing = git(partial, "ls-tree", "HEAD", env_extra=env).decode()
        tree = git(partial, "mktree", "--missing", input=(listing + entry).encode(), env_extra=env).decode().strip()
        head = git(partial, "rev-parse", "HEAD").decode().strip()
        new = git(partial, "commit-tree", tree, "-p", head, "-m", message, env_extra=env).decode().strip()
        git(partial, "update-ref", "HEAD", new)

    blob = git(partial, "hash-object", "-w", "--stdin", input=b"a local blob\n").decode().strip()
    commit_with(f"100644 blob {blob}\tlocal.txt\n", "local")
    assert list((partial / "objects").glob("[0-9a-f][0-9a-f]/*"))
    result = packorder.repack(partial)
    assert result.promisor
    subprocess.run(["git", "-C", str(partial), "fsck", "--connectivity-only"], check=True, env={**git_env(), **env})

    unknown = "1234567890abcdef1234567890abcdef12345678"
    commit_with(f"100644 blob {unknown}\tnowhere.txt\n", "names a blob nothing promises")
    before = sorted(p.name for p in (partial / "objects" / "pack").iterdir())
    with pytest.raises(RepositoryError, match=f"object {unknown} is missing and not promised"):
        packorder.repack(partial)
    assert sorted(p.name for p in (partial / "objects" / "pack").iterdir()) == before


def test_cli_reports_and_json(work: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "repack", "--json", "-q", str(work)], capture_output=True, env=git_env()
    )
    assert proc.returncode == 0, proc.stderr
    import json

    doc = json.loads(proc.stdout)
    assert doc["objects"] > 0 and doc["packs"] and "verify" in doc["seconds"]
    bad = subprocess.run([sys.executable, "-m", "packorder", "repack", str(work / "nope")], capture_output=True)
    assert bad.returncode == 128 and b"Traceback" not in bad.stderr


def test_not_a_repository(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "repack", str(tmp_path)], capture_output=True, env=git_env()
    )
    assert proc.returncode == 128
    assert proc.stderr.decode().startswith("fatal: not a git repository")


def test_an_interrupt_while_arguments_are_parsed_is_fatal_interrupted() -> None:
    """click's own answer would be "Aborted!" and status 1."""
    script = (
        "import click\n"
        "from packorder.cli import main as cli\n"
        "def interrupted(self, value, param, ctx):\n"
        "    raise KeyboardInterrupt\n"
        "click.Path.convert = interrupted\n"
        "cli.main(['repack', '.'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, env=git_env())
    assert (proc.returncode, proc.stderr.decode()) == (130, "fatal: interrupted\n")


def test_every_order_of_the_catalog_has_its_function() -> None:
    from packorder.orders.catalog import CATALOG
    from packorder.orders.functions import ORDERS

    assert sorted(ORDERS) == sorted(CATALOG) and all(callable(spec.fn) for spec in ORDERS.values())


def test_one_walk_in_commit_order_gives_the_discovery_order_and_the_introducing_commits(tmp_path: Path) -> None:
    """The command line walks once, --in-commit-order, for the orders placing objects by
    history: commits first, then the rest as printed, must be Git's discovery order, and the
    introducing commits those of a walk of their own. Checked where Git adds objects beyond
    the commits' trees: an index with a staged blob, a reflog-only commit, tags on a tree and a
    blob, a merge."""
    from packorder.repacking import snapshot
    from packorder.store.repository import open_repository
    from packorder.walk.history import introducing_commits
    from packorder.walk.objects import enumerate_objects

    repo = Repo(tmp_path / "repo")
    repo.write("a.txt", "a\n")
    repo.write("dir/b.txt", "b\n")
    repo.commit("one")
    repo.commit_on_branch("side", {"dir/c.txt": "c\n"}, "side")
    repo.write("a.txt", "a2\n")
    repo.commit("two")
    repo.run("merge", "-q", "--no-edit", "side")
    repo.run("tag", "-a", "tree-tag", "-m", "a tree", "HEAD^{tree}")
    repo.run("tag", "blob-tag", "HEAD:a.txt")
    repo.write("gone.txt", "only in the reflog\n")
    repo.commit("dropped")
    repo.run("reset", "-q", "--hard", "HEAD^")
    repo.write("staged.txt", "only in the index\n")
    repo.run("add", "staged.txt")
    opened = open_repository(repo.path)
    plain = enumerate_objects(opened)
    with snapshot.take(repo.path, lock=False, order="history") as start:
        assert start.walk is not None and start.walk.in_commit_order and start.intro_walk is start.walk
        one = enumerate_objects(opened, started=start)
        intro_walk = start.take_history_walks()[0]
        assert intro_walk is not None
        once = introducing_commits(opened, one, intro_walk)
    assert plain.count == one.count > 10
    assert np.array_equal(plain.oids, one.oids) and np.array_equal(plain.name_hash, one.name_hash)
    assert np.array_equal(once, introducing_commits(opened, plain))


@pytest.mark.parametrize("order", ["history", "recency-unreleased", "interleaved"])
def test_history_orders_walk_once_and_write_the_pack_of_separate_walks(
    work: Path, tmp_path: Path, order: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library, like the command line, walks once (in commit order when the order needs
    introducing commits) plus, when the order needs it, the walk of unreleased history; a
    snapshot without those walks makes repack walk history separately: same pack."""
    from packorder.orders.functions import ORDERS
    from packorder.repacking import snapshot

    # The walks counted are Git's (tests/walk/test_native_walk.py holds packorder's to them).
    git(work, "config", "packorder.walk", "git")
    walks: list[tuple[str, ...]] = []

    class Counted(rev_list.GitObjectWalk):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            walks.append(tuple(self.proc.args[5:]))  # type: ignore[index]

    monkeypatch.setattr(snapshot, "GitObjectWalk", Counted)
    monkeypatch.setattr(rev_list, "GitObjectWalk", Counted)
    one, separate = tmp_path / "one", tmp_path / "separate"
    a = packorder.repack(work, order=order, output_dir=one, verify="crc")
    spec = ORDERS[order]
    assert len(walks) == 1 + spec.needs_unreleased
    assert ("--in-commit-order" in walks[0]) == spec.needs_intro
    walks.clear()
    b = packorder.repack(work, order=order, output_dir=separate, start=snapshot.take(work, lock=False), verify="crc")
    assert len(walks) == 1 + spec.needs_intro + spec.needs_unreleased
    assert "--in-commit-order" not in walks[0]
    assert [p.name for p in a.packs] == [p.name for p in b.packs]
    for pa, pb in zip(a.packs, b.packs, strict=True):
        assert pa.read_bytes() == pb.read_bytes()


def test_empty_repository_and_everything_pruned(tmp_path: Path) -> None:
    empty = tmp_path / "empty.git"
    git(None, "init", "-q", "--bare", str(empty))
    result = packorder.repack(empty)
    assert result.objects == 0 and result.packs == [] and not result.bitmap
    assert list((empty / "objects" / "pack").iterdir()) == []
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "repack", str(empty)], capture_output=True, text=True, env=git_env()
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "nothing to pack" and proc.stderr == ""

    # Only unreachable objects, in a pack: pruned, the pack removed, no new pack.
    blob = git(empty, "hash-object", "-w", "--stdin", input=b"lonely\n").strip()
    git(empty, "pack-objects", "-q", str(empty / "objects" / "pack" / "pack"), input=blob + b"\n")
    git(empty, "prune-packed")
    result = packorder.repack(empty, cruft_expiration="now")
    assert result.unreachable_pruned == 1 and result.packs == [] and len(result.removed_packs) == 1
    assert list((empty / "objects" / "pack").glob("*.pack")) == []
    assert subprocess.run(["git", "--git-dir", str(empty), "cat-file", "-e", blob]).returncode != 0


@pytest.mark.parametrize("verify", ["crc", "full"])
def test_a_pack_damaged_after_writing_fails_verification(
    work: Path, verify: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte changed in the new pack between writing and installing (a disk, a filesystem)
    is caught by either verification; nothing is installed or removed."""
    from packorder.repacking import writer

    real_write = writer.write

    def write_then_damage(*args, **kw):  # type: ignore[no-untyped-def]
        written = real_write(*args, **kw)
        at = int(written.offsets[len(written.offsets) // 2]) + 2  # inside an entry's data
        with open(written.path, "r+b") as f:
            f.seek(at)
            byte = f.read(1)
            f.seek(at)
            f.write(bytes([byte[0] ^ 0x55]))
        return written

    monkeypatch.setattr(writer, "write", write_then_damage)
    before = sorted(p.name for p in (work / ".git" / "objects" / "pack").iterdir())
    with pytest.raises(PackError, match=r"fails verification|does not match its trailer"):
        packorder.repack(work, verify=verify)
    assert sorted(p.name for p in (work / ".git" / "objects" / "pack").iterdir()) == before
    git(work, "fsck", "--full")


@pytest.mark.parametrize("verify", ["produced", "full", "crc"])
def test_a_wrong_new_delta_is_caught_by_produced_and_full_not_by_crc(
    work: Path, verify: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the levels prove: two new deltas swapped between their entries (each entry's
    header, CRC and trailer consistent with what was written) pass `crc`'s checks; `produced`
    and `full` hash the objects and refuse the pack, changing nothing."""
    from packorder.repacking import writer

    real_plan = writer.make_plan

    def swapped(*args, **kw):  # type: ignore[no-untyped-def]
        plan = real_plan(*args, **kw)
        new = np.flatnonzero(plan.how == writer.NEW_DELTA)
        if len(new) >= 2:  # the ordered pack's (the cruft pack has one blob)
            a, b = new[:2]
            plan.src[[a, b]] = plan.src[[b, a]]
            plan.sizes[[a, b]] = plan.sizes[[b, a]]
        return plan

    monkeypatch.setattr(writer, "make_plan", swapped)
    before = sorted(p.name for p in (work / ".git" / "objects" / "pack").iterdir())
    if verify == "crc":
        packorder.repack(work, no_reuse_delta=True, verify=verify)
        assert subprocess.run(["git", "-C", str(work), "fsck", "--full"], capture_output=True).returncode != 0
        return
    with pytest.raises(CorruptPackError, match="new pack fails verification") as failed:
        packorder.repack(work, no_reuse_delta=True, verify=verify)
    # The error names the new pack (by its temporary name) and, read entry by entry, the offset.
    assert Path(failed.value.path).parent == work / ".git" / "objects" / "pack"
    assert Path(failed.value.path).suffix == ".pack"
    if verify == "produced":
        assert isinstance(failed.value.offset, int) and failed.value.offset >= 12
    assert sorted(p.name for p in (work / ".git" / "objects" / "pack").iterdir()) == before
    git(work, "fsck", "--full")


@pytest.mark.parametrize("where", ["ordered", "cruft"])
def test_produced_verification_hashes_loose_objects(work: Path, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A loose blob read from another blob's file: its entry is produced, so it is hashed,
    and the mix-up found before anything is removed. In the ordered pack few entries are
    produced (each is read back and hashed); in the cruft pack all are (the pack is
    re-indexed, and each object must be at its planned offset)."""
    from packorder.repacking import writer

    if where == "ordered":
        (work / "one.txt").write_text("a first blob, loose\n")
        (work / "two.txt").write_text("a second blob, loose, of another size\n")
        git(work, "add", "one.txt", "two.txt")
        git(work, "commit", "-q", "-m", "two loose blobs")
    else:
        git(work, "hash-object", "-w", "--stdin", input=b"a second unreachable blob\n")
    real_plan = writer.make_plan
    swapped: list[bool] = []

    def wrong_file(*args, **kw):  # type: ignore[no-untyped-def]
        plan = real_plan(*args, **kw)
        rows = np.flatnonzero((plan.how == writer.FROM_LOOSE) & (plan.kinds == 3))
        if len(rows) >= 2 and not swapped:
            a, b = plan.src[rows[0]], plan.src[rows[1]]
            plan.loose[a], plan.loose[b] = plan.loose[b], plan.loose[a]
            swapped.append(len(rows) < 0.25 * len(plan.how))
        return plan

    monkeypatch.setattr(writer, "make_plan", wrong_file)
    before = sorted(p.name for p in (work / ".git" / "objects" / "pack").iterdir())
    with pytest.raises(PackError, match="fails verification"):
        packorder.repack(work)
    assert swapped == [where == "ordered"]  # read back one by one / the pack re-indexed
    git(work, "fsck", "--full")
    assert set(before) <= {p.name for p in (work / ".git" / "objects" / "pack").iterdir()}
