"""The delta search by path (`repack -f --path-walk`, Git's `--path-walk`): each path's
versions searched among themselves first, then the usual search by name hash for what found
no delta there; `--name-hash-version=2` for that second search."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, git, git_env

import packorder
from packorder.experiments.monorepo_sample import monorepo


def stored(git_dir: Path) -> dict[str, tuple[str, int, str | None]]:
    """Each object of the repository's one pack: its type, size, and delta base (or None)."""
    (idx,) = (git_dir / "objects" / "pack").glob("*.idx")
    out = {}
    for line in git(None, "verify-pack", "-v", str(idx)).decode().splitlines():
        parts = line.split()
        if len(parts) >= 5 and len(parts[0]) == 40 and parts[1] in ("commit", "tree", "blob", "tag"):
            out[parts[0]] = (parts[1], int(parts[2]), parts[6] if len(parts) == 7 else None)
    return out


def changelog(rng: random.Random, size: int) -> str:
    words = [rng.choice(["alpha", "beta", "gamma", "fix", "feat", "chore", "docs"]) for _ in range(size)]
    text = " ".join(words)
    return text[:size] + "\n"


def test_the_path_pass_finds_a_files_own_previous_version(tmp_path: Path) -> None:
    """Thirty CHANGELOG.json files whose paths end alike (one version-1 name hash), of sizes
    between the two versions of one of them: sorted by that hash and size, the two versions
    are thirty places apart, out of a window of 4. By path, they are next to each other."""
    rng = random.Random(5)
    repo = Repo(tmp_path / "repo")
    for i in range(30):
        repo.write(f"packages/p{i:02}x/CHANGELOG.json", changelog(rng, 2001 + i))
    target = "packages/p30x/CHANGELOG.json"  # the same version-1 hash as the others
    old = changelog(rng, 2000)
    repo.write(target, old)
    repo.commit("first")
    repo.write(target, "entry: a new release, and its notes\n" + old)
    repo.commit("second")
    old_id = git(repo.path, "rev-parse", f"HEAD~1:{target}").decode().strip()
    new_id = git(repo.path, "rev-parse", f"HEAD:{target}").decode().strip()
    # The other changelogs' sizes (2002 to 2031 bytes) lie between the two versions'.
    assert len(git(repo.path, "cat-file", "blob", new_id)) > 2031 and len(old) < 2002

    common = {"no_reuse_delta": True, "window": 4, "threads": 1, "write_bitmap": False, "verify": "full"}
    packorder.repack(repo.path, path_walk=False, **common)
    by_hash = stored(repo.git_dir)
    assert by_hash[old_id][2] != new_id and by_hash[new_id][2] != old_id
    packorder.repack(repo.path, path_walk=True, **common)
    by_path = stored(repo.git_dir)
    # The larger (newer) version comes first, and the older is a delta of it.
    assert by_path[old_id][2] == new_id
    git(repo.path, "fsck", "--full", "--strict")


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(monorepo(tmp_path_factory.mktemp("mono") / "repo.git", packages=120, releases=25).path)


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def pack_bytes(git_dir: Path) -> bytes:
    (pack,) = (git_dir / "objects" / "pack").glob("*.pack")
    return pack.read_bytes()


def test_on_a_monorepo_the_pack_is_smaller_than_with_version_1(sample: Path, tmp_path: Path) -> None:
    sizes = {}
    for name, options in {
        "v1": {"path_walk": False},
        "path": {"path_walk": True},
        "v2": {"path_walk": False, "name_hash_version": 2},
    }.items():
        work = copy(sample, tmp_path / name)
        packorder.repack(work, no_reuse_delta=True, threads=2, verify="full", **options)
        git(work, "fsck", "--full", "--strict")
        sizes[name] = len(pack_bytes(work))
    assert sizes["path"] < sizes["v1"], sizes
    assert sizes["v2"] < sizes["v1"], sizes


def test_one_thread_writes_the_same_pack_every_run(sample: Path, tmp_path: Path) -> None:
    packs = []
    for run in range(2):
        work = copy(sample, tmp_path / f"run{run}")
        packorder.repack(work, no_reuse_delta=True, path_walk=True, threads=1, write_bitmap=False)
        packs.append(pack_bytes(work))
    assert packs[0] == packs[1]


def test_a_bitmap_is_complete_with_the_search_by_path(sample: Path, tmp_path: Path) -> None:
    work = copy(sample, tmp_path / "bitmap")
    result = packorder.repack(work, no_reuse_delta=True, path_walk=True, write_bitmap=True, order="paths")
    assert result.bitmap and result.bitmaps > 0
    proc = subprocess.run(["git", "-C", str(work), "rev-list", "--test-bitmap", "HEAD"], capture_output=True)
    assert proc.returncode == 0 and b"OK!" in proc.stdout + proc.stderr, proc.stderr

    def ids(*args: str) -> set[bytes]:
        return {line.split()[0] for line in git(work, "rev-list", "--objects", "--all", *args).splitlines()}

    assert ids("--use-bitmap-index") == ids()
    git(work, "fsck", "--full", "--strict")


def test_pack_use_path_walk_turns_it_on_and_the_command_line_wins(sample: Path, tmp_path: Path) -> None:
    work = copy(sample, tmp_path / "config")
    git(work, "config", "pack.usePathWalk", "true")

    def settings(*args: str) -> dict:
        proc = subprocess.run(
            [sys.executable, "-m", "packorder", "repack", "--dry-run", "--json", *args, str(work)],
            capture_output=True,
            env=git_env(),
            check=True,
        )
        return json.loads(proc.stdout)["settings"]

    assert settings()["path_walk"] is True
    assert settings("--no-path-walk")["path_walk"] is False
    assert settings("--name-hash-version", "2")["name_hash_version"] == 2


@pytest.mark.parametrize("args", [["--name-hash-version", "3"], ["-g", "2", "--path-walk"]])
def test_what_the_search_by_path_refuses(sample: Path, args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "repack", *args, str(sample)], capture_output=True, env=git_env()
    )
    assert proc.returncode == 129, proc.stderr
    assert proc.stderr.decode().startswith("error: ")
