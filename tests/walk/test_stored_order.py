"""The object table fleet triage plans a repack from without walking history
(repacking/stored_order.py): the objects, types and tag tips the walk finds, each counted
once where Git reads it, and a triage that runs no walk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.gitrepo import Repo, build_history

from packorder.fleet.triage import triage
from packorder.store.object_ids import keys
from packorder.store.repository import LOOSE, open_repository
from packorder.walk import rev_list
from packorder.walk.objects import enumerate_objects
from packorder.walk.stored_order import stored_table, walk_order


@pytest.fixture(scope="module")
def layered(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """A repository as a host keeps one: a packed history, a pack pushed on top holding
    some of the same objects again, and loose objects."""
    repo = build_history(tmp_path_factory.mktemp("stored") / "repo", commits=30, seed=3)
    repo.run("repack", "-adq")
    for i in range(4):
        repo.write(f"src/file{i}.c", f"pushed {i}\n" * 50)
        repo.commit(f"pushed {i}")
    repo.tag("v9.0")
    # A second pack of the new history and the last commit of the first pack again.
    tips = repo.run("rev-parse", "HEAD~2", "HEAD~6").decode().split()
    repo.run(
        "pack-objects",
        "-q",
        "--revs",
        str(repo.git_dir / "objects/pack/pack"),
        input=f"{tips[0]}\n^{tips[1]}\n".encode(),
    )
    repo.run("prune-packed")
    repo.write("README", "loose again\n")
    repo.commit("loose")
    return repo


def by_id(table, values: np.ndarray) -> dict[bytes, int]:
    return dict(zip(keys(table.oids).tolist(), values.tolist(), strict=True))


def test_it_holds_what_the_walk_finds(layered: Repo) -> None:
    repo = open_repository(layered.git_dir)
    assert len(repo.packs) == 2 and len(repo.loose.oids) > 0
    stored = stored_table(repo)
    assert sum(p.index.count for p in repo.packs) + len(repo.loose.oids) > stored.count
    walked = enumerate_objects(repo, unreachable=False)
    assert sorted(keys(stored.oids).tolist()) == sorted(keys(walked.oids).tolist())  # each once
    assert by_id(stored, stored.kinds) == by_id(walked, walked.kinds)
    assert by_id(stored, stored.tagged) == by_id(walked, walked.tagged)
    assert stored.tagged.sum() > 3
    # Loose objects first (the newest), then the newest pack's.
    assert (stored.source[: (stored.source == LOOSE).sum()] == LOOSE).all()
    assert stored.source[(stored.source != LOOSE).argmax()] == 0


def test_a_tree_stored_as_a_delta_follows_its_chains_root(layered: Repo) -> None:
    layout = open_repository(layered.git_dir).packs[-1].layout  # the oldest, Git's repack
    at = walk_order(layout)
    assert sorted(at.tolist()) == list(range(layout.count))
    where = np.empty(layout.count, dtype=np.int64)
    where[at] = np.arange(layout.count)
    moved = np.flatnonzero(layout.is_delta & (layout.real_kinds() != 3))
    assert len(moved)
    roots = layout.roots()[moved]
    assert (where[moved] > where[roots]).all()
    # Between a root and its moved family there is nothing but that family.
    for root in np.unique(roots)[:20]:
        family = moved[roots == root]
        span = at[where[root] + 1 : where[root] + 1 + len(family)]
        assert sorted(span.tolist()) == sorted(family.tolist())
    # Everything else keeps its pack order.
    rest = at[~np.isin(at, moved)]
    assert (np.diff(rest) > 0).all()


def test_triage_runs_no_walk(layered: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object, **kw: object) -> None:
        raise AssertionError("triage walked history")

    monkeypatch.setattr(rev_list, "object_walk", refused)  # ours or Git's, whichever is configured
    monkeypatch.setattr(rev_list.GitObjectWalk, "__init__", refused)
    t = triage(layered.git_dir)
    assert t.error is None
    assert t.share_now is not None and t.share_after is not None
    with pytest.raises(AssertionError, match="walked"):
        enumerate_objects(open_repository(layered.git_dir), unreachable=False)


def test_a_repository_without_objects(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "empty")
    table = stored_table(open_repository(repo.git_dir))
    assert table.count == 0
