"""Unreachable objects go to a cruft pack as `git repack --cruft -d` puts them there: the same
objects with the same ages, expired ones dropped, whatever a recent one needs kept. Git reads
the cruft pack packorder writes (its gc, its repack --cruft and its prune)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, build_history, git, git_version

import packorder
from packorder.errors import RepositoryError, UsageError
from packorder.format import idx as idx_format
from packorder.format import mtimes as mtimes_format

DAY = 86400


def age(path: Path, days: float) -> None:
    when = time.time() - days * DAY
    os.utime(path, (when, when))


def loose_path(git_dir: Path, oid: str) -> Path:
    return git_dir / "objects" / oid[:2] / oid[2:]


def dangling_commit(repo: Repo, name: str, parent: str | None = None) -> dict[str, str]:
    """A commit with a tree and a blob of its own that no ref reaches; its ids by role."""
    blob = repo.run("hash-object", "-w", "--stdin", input=f"only in {name}\n".encode()).decode().strip()
    tree = repo.run("mktree", input=f"100644 blob {blob}\t{name}.txt\n".encode()).decode().strip()
    args = ["commit-tree", tree, "-m", name] + (["-p", parent] if parent else [])
    commit = repo.run(*args).decode().strip()
    return {"blob": blob, "tree": tree, "commit": commit}


@pytest.fixture(scope="module")
def aged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Repo, dict[str, str]]:
    """A history, and unreachable objects of every kind of source and age:
    - loose blobs 1, 10, 20 and 40 days old;
    - an old dangling commit (30 days) reached only from a recent one (1 day): the recent one
      keeps it from expiring;
    - a dangling commit 20 days old alone;
    - unreachable objects in a pack 25 days old;
    - a cruft pack written by Git, whose objects keep their own ages."""
    repo = build_history(tmp_path_factory.mktemp("cruft") / "repo", commits=20)
    repo.run("repack", "-adq")
    ids: dict[str, str] = {}
    git_dir = repo.git_dir
    # First Git's own cruft pack, from objects that were loose 50 and 5 days ago.
    for name, days in (("git-cruft-old", 50), ("git-cruft-young", 5)):
        oid = repo.run("hash-object", "-w", "--stdin", input=f"{name}\n".encode()).decode().strip()
        age(loose_path(git_dir, oid), days)
        ids[name] = oid
    repo.run("repack", "--cruft", "-d", "-q")
    assert list((git_dir / "objects" / "pack").glob("*.mtimes"))
    for name, days in (("loose-1", 1), ("loose-10", 10), ("loose-20", 20), ("loose-40", 40)):
        oid = repo.run("hash-object", "-w", "--stdin", input=f"{name}\n".encode()).decode().strip()
        age(loose_path(git_dir, oid), days)
        ids[name] = oid
    old = dangling_commit(repo, "old-parent")
    recent = dangling_commit(repo, "recent-child", parent=old["commit"])
    lonely = dangling_commit(repo, "lonely")
    for role, oid in old.items():
        age(loose_path(git_dir, oid), 30)
        ids[f"old-{role}"] = oid
    for role, oid in recent.items():
        age(loose_path(git_dir, oid), 1)
        ids[f"recent-{role}"] = oid
    for role, oid in lonely.items():
        age(loose_path(git_dir, oid), 20)
        ids[f"lonely-{role}"] = oid
    # Unreachable objects in an ordinary pack, 25 days old.
    packed = [
        repo.run("hash-object", "-w", "--stdin", input=f"packed {i}\n".encode()).decode().strip() for i in range(3)
    ]
    name = repo.run("pack-objects", "-q", str(git_dir / "objects" / "pack" / "pack"), input="\n".join(packed).encode())
    pack = git_dir / "objects" / "pack" / f"pack-{name.decode().strip()}.pack"
    for ext in (".pack", ".idx", ".rev"):
        if pack.with_suffix(ext).exists():
            age(pack.with_suffix(ext), 25)
    for i, oid in enumerate(packed):
        loose_path(git_dir, oid).unlink()
        ids[f"packed-{i}"] = oid
    return repo, ids


def cruft_contents(git_dir: Path) -> dict[str, int]:
    """Object id -> age of every object of the repository's cruft packs."""
    out: dict[str, int] = {}
    for mt in (git_dir / "objects" / "pack").glob("*.mtimes"):
        index = idx_format.read(str(mt.with_suffix(".idx")))
        ages = mtimes_format.read(str(mt), index.count)
        for i in range(index.count):
            out[index.names[i].tobytes().hex()] = max(out.get(index.names[i].tobytes().hex(), 0), int(ages[i]))
    return out


def loose_ids(git_dir: Path) -> set[str]:
    return {p.parent.name + p.name for p in (git_dir / "objects").glob("[0-9a-f][0-9a-f]/*")}


def copy_of(repo: Repo, where: Path) -> Path:
    shutil.copytree(repo.path, where, symlinks=True)  # copy2: mtimes kept
    return where


@pytest.mark.parametrize("expiration", [None, "2.weeks.ago", "1.week.ago", "3.months.ago", "now"])
def test_the_cruft_pack_holds_what_gits_holds_with_the_same_ages(
    aged: tuple[Repo, dict[str, str]], tmp_path: Path, expiration: str | None
) -> None:
    repo, _ = aged
    ours, theirs = copy_of(repo, tmp_path / "ours"), copy_of(repo, tmp_path / "theirs")
    args = ["repack", "--cruft", "-d", "-q"] + ([f"--cruft-expiration={expiration}"] if expiration else [])
    git(theirs, *args)
    result = packorder.repack(ours, cruft_expiration=expiration)
    mine, gits = cruft_contents(ours / ".git"), cruft_contents(theirs / ".git")
    assert set(mine) == set(gits)
    for oid, when in gits.items():
        # Objects kept only because a recent one needs them are dated at the expiration,
        # which each run reads from its own clock: a second or two apart.
        assert abs(mine[oid] - when) <= 5, oid
    # Git leaves expired loose objects for `git prune`; packorder removes them itself.
    assert loose_ids(ours / ".git") == set()
    assert loose_ids(theirs / ".git").isdisjoint(gits)
    assert result.unreachable_kept == len(gits)
    git(ours, "fsck", "--full")


def test_ages_are_never_refreshed_by_repacking(aged: tuple[Repo, dict[str, str]], tmp_path: Path) -> None:
    """Repacked again and again (a busy repository repacked daily), an unreachable object keeps
    its age and so expires on time."""
    repo, ids = aged
    ours = copy_of(repo, tmp_path / "ours")
    packorder.repack(ours)
    first = cruft_contents(ours / ".git")
    git(ours, "commit", "-q", "--allow-empty", "-m", "more history")
    packorder.repack(ours)
    assert cruft_contents(ours / ".git") == first
    assert first[ids["loose-40"]] < time.time() - 39 * DAY
    result = packorder.repack(ours, cruft_expiration="35.days.ago")
    assert ids["loose-40"] not in cruft_contents(ours / ".git") and result.unreachable_pruned > 0


def test_a_recent_object_keeps_the_old_ones_it_reaches(aged: tuple[Repo, dict[str, str]], tmp_path: Path) -> None:
    repo, ids = aged
    ours = copy_of(repo, tmp_path / "ours")
    result = packorder.repack(ours, cruft_expiration="2.weeks.ago")
    kept = cruft_contents(ours / ".git")
    for role in ("commit", "tree", "blob"):
        assert ids[f"recent-{role}"] in kept and ids[f"old-{role}"] in kept
        assert ids[f"lonely-{role}"] not in kept
    assert result.rescued == 3
    expiry = int(time.time()) - 14 * DAY
    assert abs(kept[ids["old-commit"]] - expiry) <= 5  # dated at the expiration, as Git dates it


def test_git_reads_the_cruft_pack(aged: tuple[Repo, dict[str, str]], tmp_path: Path) -> None:
    """Git's repack --cruft and gc take packorder's cruft pack as their own: the same ages come
    out of Git's next repack, and `git gc --prune=now` drops every unreachable object."""
    repo, _ = aged
    ours = copy_of(repo, tmp_path / "ours")
    packorder.repack(ours)
    mine = cruft_contents(ours / ".git")
    git(ours, "repack", "--cruft", "-d", "-q")
    assert cruft_contents(ours / ".git") == mine
    git(ours, "gc", "-q", "--prune=now")
    assert cruft_contents(ours / ".git") == {}
    git(ours, "fsck", "--full")


def test_gc_recent_objects_hook_keeps_what_it_names(aged: tuple[Repo, dict[str, str]], tmp_path: Path) -> None:
    repo, ids = aged
    ours = copy_of(repo, tmp_path / "ours")
    git(ours, "config", "gc.recentObjectsHook", f"echo {ids['loose-40']}")
    packorder.repack(ours, cruft_expiration="2.weeks.ago")
    assert ids["loose-40"] in cruft_contents(ours / ".git")
    assert ids["loose-20"] not in cruft_contents(ours / ".git")


def test_no_unreachable_objects_no_cruft_pack(tmp_path: Path) -> None:
    repo = build_history(tmp_path / "repo", commits=8)
    repo.run("repack", "-adq")
    result = packorder.repack(repo.path)
    assert result.cruft_packs == [] and len(result.packs) == 1
    assert not list((repo.git_dir / "objects" / "pack").glob("*.mtimes"))


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("1.week.ago", {"loose-1"}),  # read by Git, not taken as two weeks
        ("3.months.ago", {"loose-1", "loose-10", "loose-20", "loose-40"}),
        ("2020-01-01", {"loose-1", "loose-10", "loose-20", "loose-40"}),
        ("never", {"loose-1", "loose-10", "loose-20", "loose-40"}),
    ],
)
def test_expiry_dates_are_read_as_git_reads_them(
    aged: tuple[Repo, dict[str, str]], tmp_path: Path, value: str, kept: set[str]
) -> None:
    repo, ids = aged
    ours = copy_of(repo, tmp_path / "ours")
    packorder.repack(ours, cruft_expiration=value)
    cruft = cruft_contents(ours / ".git")
    assert {name for name in ("loose-1", "loose-10", "loose-20", "loose-40") if ids[name] in cruft} == kept


@pytest.mark.parametrize("value", ["false", "432000", "next.tuesday", "not a date"])
def test_dates_git_would_refuse_are_refused(aged: tuple[Repo, dict[str, str]], tmp_path: Path, value: str) -> None:
    repo, _ = aged
    ours = copy_of(repo, tmp_path / "ours")
    listing = sorted(str(p) for p in (ours / ".git" / "objects").rglob("*"))
    with pytest.raises(UsageError, match="invalid cruft_expiration"):
        packorder.repack(ours, cruft_expiration=value)
    assert sorted(str(p) for p in (ours / ".git" / "objects").rglob("*")) == listing


def test_expiry_of_gc_prune_expire_is_refused_by_name(tmp_path: Path) -> None:
    from packorder.repacking import expiry

    with pytest.raises(RepositoryError, match=r"invalid gc\.pruneExpire: 'false'"):
        expiry.expiration("false", "gc.pruneExpire")
    assert expiry.expiration("never", "gc.pruneExpire") is None
    assert abs(expiry.expiration("1.week.ago", "gc.pruneExpire") - (time.time() - 7 * DAY)) < 5


def test_an_object_wanted_again_during_the_repack_is_not_deleted(
    aged: tuple[Repo, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Git refreshes an object's mtime instead of writing it again. An expired loose object
    refreshed after the repack read its age survives, and so does a pack holding one."""
    from packorder.repacking import cruft

    repo, ids = aged
    ours = copy_of(repo, tmp_path / "ours")
    old_packs = [
        p
        for p in (ours / ".git" / "objects" / "pack").glob("*.pack")
        if not p.with_suffix(".mtimes").exists() and p.stat().st_mtime < time.time() - 20 * DAY
    ]
    real_select = cruft.select

    def select_then_freshen(*args, **kwargs):  # type: ignore[no-untyped-def]
        chosen = real_select(*args, **kwargs)
        git(ours, "hash-object", "-w", "--stdin", input=b"loose-40\n")  # Git freshens the loose file
        for pack in old_packs:
            os.utime(pack)  # as Git freshens a pack holding an object it was asked to write
        return chosen

    monkeypatch.setattr(cruft, "select", select_then_freshen)
    result = packorder.repack(ours, cruft_expiration="2.weeks.ago")
    assert result.unreachable_pruned >= 4  # loose-20, loose-40, the lonely commit's objects, the packed ones
    git(ours, "cat-file", "-e", ids["loose-40"])
    git(ours, "cat-file", "-e", ids["packed-0"])
    assert old_packs and all(p.exists() and p not in result.removed_packs for p in old_packs)
    assert any("used again" in w for w in result.warnings)
    assert not loose_path(ours / ".git", ids["loose-20"]).exists()  # not refreshed: gone
    git(ours, "fsck", "--full")


def random_blobs(repo: Repo, count: int, size: int, seed: int) -> list[str]:
    import random

    rng = random.Random(seed)
    return [repo.run("hash-object", "-w", "--stdin", input=rng.randbytes(size)).decode().strip() for _ in range(count)]


def cruft_packs(git_dir: Path) -> dict[str, set[str]]:
    out = {}
    for mt in (git_dir / "objects" / "pack").glob("*.mtimes"):
        index = idx_format.read(str(mt.with_suffix(".idx")))
        out[mt.stem] = {index.names[i].tobytes().hex() for i in range(index.count)}
    return out


needs_max_cruft_size = pytest.mark.skipif(git_version() < (2, 43), reason="git repack --max-cruft-size: Git 2.43")
# Git 2.50 moved "leave large cruft packs alone" from --max-cruft-size to
# --combine-cruft-below-size; packorder follows 2.50, and compares with a Git that has it.
git_has_combine = git_version() >= (2, 50)


def with_old_cruft_pack(tmp_path: Path) -> Repo:
    """A repository with a cruft pack of about 120 KB and 10 new unreachable loose blobs."""
    repo = build_history(tmp_path / "repo", commits=5)
    repo.run("repack", "-adq")
    random_blobs(repo, 40, 3000, seed=1)
    repo.run("repack", "--cruft", "-d", "-q")
    random_blobs(repo, 10, 3000, seed=2)
    return repo


@pytest.mark.parametrize("limit", [50_000, 200_000])
def test_combine_cruft_below_size_keeps_the_larger_cruft_packs(tmp_path: Path, limit: int) -> None:
    """Cruft packs of at least --combine-cruft-below-size are kept as they are; the smaller
    ones are rewritten with the new unreachable objects (Git 2.50)."""
    repo = with_old_cruft_pack(tmp_path)
    old = cruft_packs(repo.git_dir)
    ours, theirs = copy_of(repo, tmp_path / "ours"), copy_of(repo, tmp_path / "theirs")
    result = packorder.repack(ours, combine_cruft_below_size=limit)
    now = cruft_packs(ours / ".git")
    if limit < 120_000:
        assert len(result.retained_cruft_packs) == 1 and len(now) == 2
        assert all(name in now and now[name] == ids for name, ids in old.items())
    else:
        assert not result.retained_cruft_packs and len(now) == 1
        assert set.union(*old.values()) < next(iter(now.values()))
    if git_has_combine:
        git(theirs, "repack", "--cruft", "-d", "-q", f"--combine-cruft-below-size={limit}")
        assert sorted(map(sorted, now.values())) == sorted(map(sorted, cruft_packs(theirs / ".git").values()))
        assert cruft_contents(ours / ".git") == cruft_contents(theirs / ".git")
    git(ours, "fsck", "--full")


def test_max_cruft_size_caps_new_cruft_packs_only(tmp_path: Path) -> None:
    """--max-cruft-size no longer keeps a cruft pack as it is (Git 2.50): the old one is
    rewritten with the new objects, into packs of at most the size (1 MiB at the least)."""
    repo = with_old_cruft_pack(tmp_path)
    ours, theirs = copy_of(repo, tmp_path / "ours"), copy_of(repo, tmp_path / "theirs")
    result = packorder.repack(ours, max_cruft_size=50_000)
    assert not result.retained_cruft_packs and len(result.cruft_packs) == 1
    assert any("minimum pack size limit is 1 MiB" in w for w in result.warnings)
    if git_has_combine:
        git(theirs, "repack", "--cruft", "-d", "-q", "--max-cruft-size=50000")
        assert sorted(map(sorted, cruft_packs(ours / ".git").values())) == sorted(
            map(sorted, cruft_packs(theirs / ".git").values())
        )
    git(ours, "fsck", "--full")


@needs_max_cruft_size
def test_max_cruft_size_splits_a_large_cruft_pack(tmp_path: Path) -> None:
    repo = build_history(tmp_path / "repo", commits=5)
    repo.run("repack", "-adq")
    blobs = random_blobs(repo, 900, 3000, seed=3)  # about 2.7 MB that neither compress nor delta
    ours, theirs = copy_of(repo, tmp_path / "ours"), copy_of(repo, tmp_path / "theirs")
    git(theirs, "repack", "--cruft", "-d", "-q", "--max-cruft-size=1m")
    result = packorder.repack(ours, max_cruft_size=1 << 20)
    assert len(result.cruft_packs) >= 3
    assert all(p.stat().st_size <= 1 << 20 for p in result.cruft_packs)
    assert cruft_contents(ours / ".git") == cruft_contents(theirs / ".git")
    assert set(blobs) <= set(cruft_contents(ours / ".git"))
    git(ours, "fsck", "--full")
