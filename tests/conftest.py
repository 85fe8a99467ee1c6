from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from helpers.gitrepo import Repo, build_history, git


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """A repository with 60 commits, branches, merges, tags and renames, fully packed."""
    repo = build_history(tmp_path_factory.mktemp("history") / "repo", commits=60)
    repo.run("repack", "-adf", "-q")
    return repo


@pytest.fixture(scope="session")
def packs(history: Repo, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Packs of the history repository in several shapes, each alone in its directory, the
    same bytes in every run: one thread searches the deltas (Git's threads share the search
    by timing, and the tests that compare where reads end against a pack's size would see
    another pack each run)."""
    out: dict[str, Path] = {}
    shapes = {
        "ofs": ["repack", "-adf", "-q"],
        "ref": ["-c", "repack.useDeltaBaseOffset=false", "repack", "-adf", "-q"],
        "deep": ["repack", "-adf", "-q", "--depth=4095", "--window=250"],
        "nodelta": ["-c", "pack.window=0", "repack", "-adf", "-q"],
    }
    for name, args in shapes.items():
        clone = tmp_path_factory.mktemp(f"pack-{name}") / "repo"
        git(None, "clone", "-q", "--no-local", str(history.path), str(clone))
        git(clone, "-c", "pack.threads=1", *args)
        (pack,) = sorted((clone / ".git" / "objects" / "pack").glob("*.pack"))
        dest = tmp_path_factory.mktemp(f"packfile-{name}") / pack.name
        shutil.copy(pack, dest)
        out[name] = dest
    return out


@pytest.fixture(scope="session")
def big_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pack holding a 40 MiB incompressible blob and deltas of it: objects above the size
    the indexer inflates whole, so the streaming paths run."""
    repo = build_history(tmp_path_factory.mktemp("big") / "repo", commits=5, big_blob=40 << 20)
    repo.run("repack", "-adf", "-q")
    (pack,) = repo.pack_files()
    dest = tmp_path_factory.mktemp("packfile-big") / pack.name
    shutil.copy(pack, dest)
    return dest
