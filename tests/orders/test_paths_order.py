"""The `paths` order (orders/tree_paths.py) and what it needs (repacking/head_side.py): HEAD's
commits before the other branches', the recent trees, the other trees grouped by path, the
recent blobs with their delta chains, and the modelled cold reads it saves, measured on a
generated repository with an unmerged branch."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from helpers.gitrepo import git
from helpers.layered import build

import packorder
from packorder.orders import families
from packorder.orders.permutations import BLOB, COMMIT, TAG, TREE, OrderInput, history
from packorder.orders.tree_paths import paths, paths_unreleased_trees, with_delta_ancestors
from packorder.repacking import deltas
from packorder.seek.analyze import entry_ranges
from packorder.seek.api import measure
from packorder.seek.coldreads import disk_reads
from packorder.seek.expand import expand
from packorder.seek.simulator import plan, relay
from packorder.store.repository import open_repository
from packorder.walk.history import object_history
from packorder.walk.objects import enumerate_objects


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("paths") / "repo", commits=170, side=20).path


@pytest.fixture(scope="module")
def objs(source: Path) -> OrderInput:
    opened = open_repository(source)
    table = enumerate_objects(opened)
    choice = deltas.reuse(opened, table, 50)
    got = object_history(opened, table, ("unreleased", "head"))
    return OrderInput(
        table.kinds,
        table.tagged,
        choice.base,
        unreleased=got.unreleased,
        name_hash=table.name_hash,
        on_head=got.on_head,
    )


def oids_of(source: Path) -> list[str]:
    table = enumerate_objects(open_repository(source))
    return [bytes(o).hex() for o in table.oids]


def listed(source: Path, *revs: str) -> set[str]:
    out = git(source, "rev-list", "--objects", *revs)
    return {line.split()[0] for line in out.decode().splitlines()}


def test_head_side_is_heads_commits_and_the_trees_they_introduce(source: Path, objs: OrderInput) -> None:
    oids = oids_of(source)
    assert objs.on_head is not None
    marked = {oids[i] for i in np.flatnonzero(objs.on_head)}
    commits = {oids[i] for i in np.flatnonzero(objs.kinds == COMMIT)}
    trees = {oids[i] for i in np.flatnonzero(objs.kinds == TREE)}
    heads = set(git(source, "rev-list", "HEAD").decode().split())
    assert marked & commits == heads and len(commits - heads) >= 20
    on_head, side_only = listed(source, "HEAD") & trees, listed(source, "side", "--not", "HEAD") & trees
    assert side_only and not marked & side_only
    assert marked & trees <= on_head and len(marked & trees) >= 0.9 * len(on_head)


def positions(out: np.ndarray) -> np.ndarray:
    pos = np.empty(len(out), dtype=np.int64)
    pos[out] = np.arange(len(out))
    return pos


def test_paths_writes_each_region_as_described(objs: OrderInput) -> None:
    plain = replace(objs, base=np.full(objs.count, -1))
    out = families.bases_first(paths(plain), plain.base)
    assert sorted(out.tolist()) == list(range(objs.count))
    kinds, on_head = plain.kinds[out], plain.on_head
    assert on_head is not None and plain.unreleased is not None and plain.name_hash is not None
    tips = np.flatnonzero(plain.tagged[out])
    assert tips[-1] - tips[0] == len(tips) - 1
    # After the tag tips: HEAD's commits in walk order, then the others, then trees, then blobs.
    later = out[tips[-1] + 1 :]
    commits = later[np.isin(plain.kinds[later], (COMMIT, TAG))]
    is_head = on_head[commits]
    assert is_head.any() and (~is_head).any() and not (np.diff(is_head.astype(int)) > 0).any()
    assert (np.diff(commits[is_head]) > 0).all() and (np.diff(commits[~is_head]) > 0).all()
    trees = later[plain.kinds[later] == TREE]
    assert (np.flatnonzero(kinds == TREE)[[0, -1]] < np.flatnonzero(kinds == BLOB)[0]).all()
    # The recent trees in discovery order up to the last unreleased one, then groups by path.
    recent = np.flatnonzero(plain.unreleased[trees])
    cut = int(recent[-1]) + 1
    assert (np.diff(trees[:cut]) > 0).all()
    grouped = trees[cut:]
    hashes = plain.name_hash[grouped]
    starts = np.flatnonzero(np.r_[True, hashes[1:] != hashes[:-1]])
    assert len(starts) == len(np.unique(hashes)), "each path's trees together"
    first_seen = [int(grouped[a:b].min()) for a, b in zip(starts, [*starts[1:], len(grouped)], strict=True)]
    assert first_seen == sorted(first_seen), "paths in the order first seen"
    for a, b in zip(starts, [*starts[1:], len(grouped)], strict=True):
        group = grouped[a:b]
        assert not (np.diff(on_head[group].astype(int)) > 0).any(), "HEAD's trees first in each path"
    # The blob region: the unreleased blobs first, then the others, each in history's order.
    blobs = out[kinds == BLOB]
    theirs = families.bases_first(history(replace(plain, intro=np.full(plain.count, -1))), plain.base)
    theirs = theirs[plain.kinds[theirs] == BLOB]
    recent = plain.unreleased[theirs]
    assert 0 < recent.sum() < len(theirs)
    assert blobs.tolist() == [*theirs[recent], *theirs[~recent]]


def test_paths_unreleased_trees_puts_only_the_unreleased_trees_and_their_chains_in_front(objs: OrderInput) -> None:
    assert objs.unreleased is not None and objs.name_hash is not None
    out = families.bases_first(paths_unreleased_trees(objs), objs.base)
    assert sorted(out.tolist()) == list(range(objs.count))
    theirs = families.bases_first(paths(objs), objs.base)
    # Tag tips, commits and blobs where paths writes them; only the trees move.
    assert (objs.kinds[out] == objs.kinds[theirs]).all()
    assert out[objs.kinds[out] != TREE].tolist() == theirs[objs.kinds[theirs] != TREE].tolist()
    trees = out[objs.kinds[out] == TREE]
    needed = with_delta_ancestors(objs.base, objs.unreleased & (objs.kinds == TREE))
    front = int(needed[trees].sum())
    assert 0 < front < len(trees) and needed[trees[:front]].all() and not needed[trees[front:]].any()
    assert (np.diff(trees[:front]) > 0).all(), "the front in discovery order"
    hashes = objs.name_hash[trees[front:]]
    starts = np.flatnonzero(np.r_[True, hashes[1:] != hashes[:-1]])
    assert len(starts) == len(np.unique(hashes)), "each path's trees together"
    pos = positions(out)
    deltas_at = np.flatnonzero(objs.base >= 0)
    assert np.all(pos[objs.base[deltas_at]] < pos[deltas_at])


def test_a_recent_blob_comes_with_the_delta_chain_it_needs(objs: OrderInput) -> None:
    out = families.bases_first(paths(objs), objs.base)
    assert objs.unreleased is not None
    blobs = out[objs.kinds[out] == BLOB]
    needed = with_delta_ancestors(objs.base, objs.unreleased & (objs.kinds == BLOB))
    front = int(needed.sum())
    assert needed[blobs[:front]].all() and not needed[blobs[front:]].any()
    chains = np.flatnonzero(needed & ~objs.unreleased)
    assert len(chains), "some of the chains' bases are older than the last release"
    assert needed[objs.base[np.flatnonzero(needed & (objs.base >= 0))]].all()


def test_paths_keeps_every_base_before_its_deltas(objs: OrderInput) -> None:
    out = families.bases_first(paths(objs), objs.base)
    pos = positions(out)
    deltas_at = np.flatnonzero(objs.base >= 0)
    assert len(deltas_at) > 300 and np.all(pos[objs.base[deltas_at]] < pos[deltas_at])


def modelled_reads(repo: Path, orders: list[str], workload: str) -> dict[str, int]:
    """Reads the kernel would send cold for `workload` recorded on `repo`, re-laid on each
    order's planned pack; a read-around of 8 KiB, as the generated repository is small."""
    measured = measure(repo, workload)
    out = {}
    for pack in plan(repo, orders):
        trace, layouts = relay(measured.trace, measured.layouts, pack.layout)
        read = expand(trace, layouts, measured.result.cache_limit)
        starts, ends = entry_ranges(read, layouts)
        out[pack.order] = disk_reads(read.pack_index, starts, ends, 8 << 10)
    return out


@pytest.mark.parametrize("workload", ["log", "log-path", "blame", "pack-recent"])
def test_paths_reads_less_cold_than_recency(source: Path, tmp_path: Path, workload: str) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(source, repo)
    packorder.repack(repo, order="recency", window=0, verify="crc", write_bitmap=False)
    reads = modelled_reads(repo, ["recency", "paths", "paths-unreleased-trees"], workload)
    assert reads["paths"] < reads["recency"], reads
    if workload == "log-path":  # what it is for
        assert reads["paths-unreleased-trees"] < reads["paths"], reads


@pytest.mark.parametrize("order", ["paths", "paths-unreleased-trees"])
def test_repack_in_paths_order_keeps_every_object(source: Path, tmp_path: Path, order: str) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(source, repo)
    before = listed(repo, "--all")
    result = packorder.repack(repo, order=order)
    assert result.order == order
    git(repo, "fsck", "--full", "--strict")
    assert listed(repo, "--all") == before


def test_an_unborn_head_puts_no_commit_first(source: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(source, repo)
    git(repo, "symbolic-ref", "HEAD", "refs/heads/unborn")
    opened = open_repository(repo)
    table = enumerate_objects(opened)
    assert not object_history(opened, table, ("head",)).on_head.any()
    packorder.repack(repo, order="paths")
    git(repo, "fsck", "--full")
