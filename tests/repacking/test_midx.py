"""A multi-pack-index in each of its forms (plain, with a bitmap, incremental) stays
consistent with the packs a repack leaves: removed before the packs it names go, written
again through Git in its form; and once the new packs are in place, a file that cannot be
removed is a warning, not a failure."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import build_history, git, git_env, git_version

import packorder


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare repository of three packs and some loose objects."""
    repo = build_history(tmp_path_factory.mktemp("midx") / "work", commits=15)
    repo.run("repack", "-adq")
    for i in range(2):
        repo.commit_on_branch(f"b{i}", {f"b{i}.txt": f"branch {i}\n"}, f"branch {i}")
        repo.run("repack", "-q")
    repo.write("loose.txt", "a loose blob\n")
    repo.commit("loose commit")
    bare = repo.path.parent / "repo.git"
    shutil.copytree(repo.git_dir, bare)
    git(bare, "config", "core.bare", "true")
    return bare


FORMS = {
    "plain": ["multi-pack-index", "write"],
    "bitmap": ["multi-pack-index", "write", "--bitmap"],
    "incremental": ["multi-pack-index", "write", "--incremental"],
}


def with_midx(base: Path, tmp_path: Path, form: str) -> Path:
    if form == "incremental" and git_version() < (2, 47):
        pytest.skip("incremental multi-pack-index: Git 2.47")
    repo = tmp_path / "repo.git"
    shutil.copytree(base, repo)
    git(repo, *FORMS[form])
    return repo


def midx_files(repo: Path) -> list[str]:
    pack_dir = repo / "objects" / "pack"
    return sorted(p.name for p in [*pack_dir.glob("multi-pack-index*"), *pack_dir.glob("multi-pack-index.d/*")])


def midx_bytes(repo: Path) -> bytes:
    pack_dir = repo / "objects" / "pack"
    return b"".join(p.read_bytes() for p in sorted(pack_dir.glob("**/multi-pack-index*")) if p.is_file())


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_multi_pack_index_is_written_again_in_its_form(base: Path, tmp_path: Path, form: str) -> None:
    repo = with_midx(base, tmp_path, form)
    before = midx_bytes(repo)
    result = packorder.repack(repo, write_bitmap=False)
    after = midx_files(repo)
    assert after and midx_bytes(repo) != before  # a new one, over the packs that are there now
    assert all(p.stem.encode() in midx_bytes(repo) for p in result.packs)
    assert any(name.endswith(".bitmap") for name in after) == (form == "bitmap")
    assert (form == "incremental") == ("multi-pack-index-chain" in after)
    git(repo, "multi-pack-index", "verify")
    git(repo, "fsck", "--full")
    if form == "bitmap":
        git(repo, "rev-list", "--test-bitmap", "HEAD")


@pytest.mark.parametrize("form", sorted(FORMS))
def test_killed_once_the_multi_pack_index_is_gone(base: Path, tmp_path: Path, form: str) -> None:
    repo = with_midx(base, tmp_path, form)
    env = {**git_env(), "PACKORDER_CRASH_AT": "midx-removed"}
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "repack", "-q", "-B", str(repo)], env=env, capture_output=True
    )
    assert proc.returncode == 137, proc.stderr
    assert midx_files(repo) == []
    git(repo, "fsck", "--full")
    packorder.repack(repo, write_bitmap=False)
    git(repo, "fsck", "--full")


def test_a_file_that_cannot_be_removed_is_a_warning(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loose objects in a directory the repack may not write (Permission denied), and an old
    pack it may not remove: the new packs are installed and hold every object, so the run
    succeeds and says what it left."""
    repo = tmp_path / "repo.git"
    shutil.copytree(base, repo)
    real_unlink = Path.unlink
    old_packs = sorted((repo / "objects" / "pack").glob("*.pack"))

    def unlink(self: Path, missing_ok: bool = False) -> None:
        loose = len(self.parent.name) == 2 and self.parent.parent.name == "objects"
        stays = loose or self.with_suffix(".pack") == old_packs[0]
        if stays and self.exists():
            raise PermissionError(13, "Permission denied", str(self))
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    result = packorder.repack(repo, write_bitmap=False)
    monkeypatch.undo()
    assert len(result.removed_packs) == len(old_packs) - 1 and result.removed_loose == 0
    assert any("could not remove" in w and "loose objects" in w for w in result.warnings)
    assert any("could not remove" in w and old_packs[0].stem in w for w in result.warnings)
    git(repo, "fsck", "--full")
