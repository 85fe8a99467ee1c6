"""The bitmap of a repack computed from the commit and tree graph packorder's walk records as
it reads each commit and tree, against the same bitmap computed from the new pack after Git's
walk (which records nothing): the same bytes, on repositories with every kind of root and
edge case, on one thread and on two, and in both hashes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.gitrepo import GIT, git, git_env, wide_directory
from test_native_walk import churned_directories, every_root_kind

import packorder
from packorder.repacking import bitmap as bitmap_mod
from packorder.walk import native as native_walk


def repack_both_ways(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **options: object
) -> dict[str, tuple[bytes, str]]:
    """{walk: (the .bitmap's bytes, where its graph came from)} for a copy repacked with each
    walk (bitmap on); both packs are the same bytes."""
    graphs: list[str] = []
    real = bitmap_mod.compute

    def compute(*args: object, **kwargs: object) -> bitmap_mod.PackBitmap:
        out = real(*args, **kwargs)
        graphs.append(out.graph)
        return out

    monkeypatch.setattr(bitmap_mod, "compute", compute)
    out: dict[str, tuple[bytes, str]] = {}
    packs = {}
    for walk in native_walk.WALKS:
        copy = tmp_path / walk
        shutil.copytree(repo, copy, symlinks=True)
        git(copy, "config", "packorder.walk", walk)
        result = packorder.repack(copy, write_bitmap=True, **options)
        assert result.bitmap_kind == "pack", result.bitmap_note
        objects = copy / ".git" / "objects" if (copy / ".git").is_dir() else copy / "objects"
        (bitmap,) = (objects / "pack").glob("*.bitmap")
        packs[walk] = bitmap.with_suffix(".pack").read_bytes()
        out[walk] = bitmap.read_bytes(), graphs[-1]
        check = subprocess.run(
            [GIT, "-C", str(copy), "rev-list", "--test-bitmap", "HEAD"], capture_output=True, env=git_env()
        )
        assert check.returncode == 0 and b"OK!" in check.stdout + check.stderr, check.stderr
    assert packs["native"] == packs["git"]
    return out


def assert_same_bitmap(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **options: object) -> None:
    out = repack_both_ways(repo, tmp_path, monkeypatch, **options)
    assert out["native"][1] == "walk" and out["git"][1] == "pack"
    assert out["native"][0] == out["git"][0]


def on_two_threads(monkeypatch: pytest.MonkeyPatch, run_items: int) -> None:
    """The native walk on two threads, however small the repository, `run_items` trees a run."""
    real = native_walk.start

    def start(*args: object, **kwargs: object) -> native_walk.NativeWalk | None:
        kwargs.update(threads=2, parallel_from=0, run_items=run_items)
        return real(*args, **kwargs)

    monkeypatch.setattr(native_walk, "start", start)


@pytest.fixture(scope="module", params=["sha1", "sha256"])
def rooted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tags on trees and blobs, refs to trees and blobs, a gitlink, 300 parents, reflogs,
    stashes, indexes of two worktrees; some objects packed, the rest loose."""
    root = tmp_path_factory.mktemp("rooted")
    repo = every_root_kind(root / "repo", request.param)
    repo.run("repack", "-dq")
    repo.write("loose.txt", "loose\n")
    repo.commit("loose")
    return root


@pytest.mark.parametrize("run_items", [None, 1, 5])
def test_every_kind_of_root(rooted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_items: int) -> None:
    # The linked worktree beside the repository is copied with it.
    shutil.copytree(rooted, tmp_path / "copy", symlinks=True)
    if run_items:
        on_two_threads(monkeypatch, run_items)
    assert_same_bitmap(tmp_path / "copy" / "repo", tmp_path, monkeypatch)


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
@pytest.mark.parametrize("window", ["--window=10", "--window=0"])
def test_trees_passed_as_copies_record_their_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, object_format: str, window: str
) -> None:
    """Entries the walk passes over unread (copies of a walked base's, or of the last tree at
    their path) are recorded with the numbers of the entries they copy."""
    repo = churned_directories(tmp_path / "repo", object_format)
    repo.run("repack", "-adfq", window)
    on_two_threads(monkeypatch, 3)
    assert_same_bitmap(repo.path, tmp_path, monkeypatch)


def test_wide_trees_and_fresh_deltas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trees of several hundred entries (many chunks each), repacked with new deltas."""
    repo = wide_directory(tmp_path / "wide", files=300, changes=20, add=True)
    assert_same_bitmap(repo.path, tmp_path, monkeypatch, no_reuse_delta=True)


def test_a_repack_that_writes_no_bitmap_records_no_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = every_root_kind(tmp_path / "repo")
    asked: list[bool] = []
    real = native_walk.start

    def start(*args: object, **kwargs: object) -> native_walk.NativeWalk | None:
        asked.append(bool(kwargs.get("record_graph")))
        return real(*args, **kwargs)

    monkeypatch.setattr(native_walk, "start", start)
    packorder.repack(repo.path, write_bitmap=False)
    packorder.repack(repo.path, write_bitmap=True)
    packorder.repack(repo.path)  # not bare, no repack.writeBitmaps: no bitmap
    git(repo.path, "config", "repack.writeBitmaps", "true")
    packorder.repack(repo.path)
    assert asked == [False, True, False, True]
