"""`packorder repack --geometric`: the packs Git's rule picks roll up, into one pack in
packorder's order; the ordered pack stays; the multi-pack-index names only what stays and
prefers the ordered pack; nothing is lost, killed at any step or with pushes landing."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from helpers.gitrepo import GIT, all_ids, git, git_env, git_version
from helpers.pushes import Server, server_with_pushes

import packorder
from packorder.format import layout as layout_mod
from packorder.format import midx as midx_format
from packorder.format.pack import OBJ_BLOB, OBJ_COMMIT, OBJ_TAG, OBJ_TREE
from packorder.repacking import geometry as geometry_mod
from packorder.repacking.geometric import candidates
from packorder.store.repository import open_repository


def copy(src: Path, dest: Path) -> Path:
    return Path(shutil.copytree(src, dest, symlinks=True))


def pack_names(git_dir: Path) -> set[str]:
    return {p.name for p in (git_dir / "objects" / "pack").glob("pack-*.pack")}


def shaped(tmp_path: Path, shape: str) -> Server:
    """Servers whose packs make each case of Git's rule."""
    server = Server(tmp_path / shape, commits=60 if shape == "progression" else 12)
    git(server.git_dir, "repack", "-adq")
    if shape == "equal-pushes":  # the progression breaks at once: all pushes roll up
        for _ in range(6):
            server.push()
    elif shape == "progression":  # each push a third of the last: nothing rolls up
        for commits in (27, 9, 3, 1):
            server.push(commits=commits, files=1)
    elif shape == "heavy-tail":  # small pushes, then one that joins them
        for commits in (1, 1, 1, 6, 1, 1):
            server.push(commits=commits, files=3)
    elif shape == "collapse":  # the pushes outweigh the base: every pack rolls up
        for commits in (30, 20, 1):
            server.push(commits=commits, files=4)
    elif shape == "keep-and-cruft":
        for _ in range(3):
            server.push()
        unreachable = git(server.git_dir, "hash-object", "-w", "--stdin", input=b"nobody reaches me\n").decode()
        assert unreachable
        git(server.git_dir, "repack", "--cruft", "-d", "-q")  # everything into one pack, plus a cruft pack
        for _ in range(3):
            server.push()
        (keep,) = [p for p in server.packs() if not p.with_suffix(".mtimes").exists()][-1:]
        keep.with_suffix(".keep").write_text("")
        for _ in range(2):
            server.push()
    return server


SHAPES = ["equal-pushes", "progression", "heavy-tail", "collapse", "keep-and-cruft"]


@pytest.mark.parametrize("shape", SHAPES)
def test_the_packs_git_rolls_up(tmp_path: Path, shape: str) -> None:
    """Git's `repack -d --geometric=2` and ours remove the same packs and keep every object."""
    server = shaped(tmp_path, shape)
    before = all_ids(server.git_dir)
    theirs, ours = copy(server.git_dir, tmp_path / "theirs.git"), copy(server.git_dir, tmp_path / "ours.git")
    old = pack_names(server.git_dir)
    git(theirs, "repack", "-d", "-q", "--geometric=2")
    plan = geometry_mod.plan(candidates(open_repository(ours)), 2)
    result = packorder.repack(ours, geometric=2, delete=True)
    assert {p.path.name for p in plan.rolled_up} == {p.name for p in result.rolled_up}
    assert old - pack_names(theirs) == {p.name for p in result.removed_packs}
    assert old & pack_names(theirs) == old & pack_names(ours)
    assert all_ids(ours) == before == all_ids(theirs)
    git(ours, "fsck", "--full")
    if shape == "collapse":
        assert plan.collapsed
    if shape == "progression":
        assert not plan.rolled_up and not result.packs


def test_the_rule_on_counts() -> None:
    """compute_pack_geometry_split's cases: a progression, a break, packs joining the roll-up."""
    split = geometry_mod.split_at
    assert split([], 2) == 0
    assert split([5], 2) == 0
    assert split([1, 2, 4, 8], 2) == 0
    assert split([1, 1, 4, 8], 2) == 2
    assert split([3, 3, 4, 100], 2) == 3  # 3+3 rolled, 4 < 2*6 joins
    assert split([10, 10, 30], 2) == 3  # everything: no progression left
    assert split([1, 1, 1, 1, 100], 3) == 4


def object_regions(pack: Path, tips: set[str]) -> list[int]:
    """The real types of a pack's objects in pack order, tag tips left out."""
    layout = layout_mod.load(pack)
    kinds = layout.real_kinds()
    return [int(k) for k, i in zip(kinds, range(layout.count), strict=True) if layout.oid_hex(i) not in tips]


@pytest.mark.parametrize("order", ["recency", "paths"])
def test_the_roll_up_is_in_order(tmp_path: Path, order: str) -> None:
    """Commits, then trees, then blobs, whatever order the pushes stored them in (Git's own
    roll-up, reusing deltas, writes a tree stored as a delta among the blobs)."""
    server = server_with_pushes(tmp_path, pushes=0, commits=12)
    for i in range(8):
        server.push(commits=1, files=3)
        if i == 4:
            server.work.tag("v-pushed")
            server.work.run("push", "-q", "origin", "v-pushed")
    result = packorder.repack(server.git_dir, geometric=2, order=order)
    (pack,) = result.packs
    tips = set(git(server.git_dir, "show-ref", "--tags", "-d").decode().split()[0::2])
    kinds = object_regions(pack, tips)
    assert kinds and set(kinds) <= {OBJ_COMMIT, OBJ_TREE, OBJ_BLOB, OBJ_TAG}
    first_tree, first_blob = kinds.index(OBJ_TREE), kinds.index(OBJ_BLOB)
    assert OBJ_COMMIT not in kinds[first_tree:]
    assert OBJ_TREE not in kinds[first_blob:] and OBJ_COMMIT not in kinds[first_blob:]
    git(server.git_dir, "fsck", "--full")


def test_a_multi_pack_index_of_what_stays(tmp_path: Path) -> None:
    server = server_with_pushes(tmp_path, pushes=6, commits=60)
    base = max(server.packs(), key=lambda p: p.stat().st_size)
    result = packorder.repack(server.git_dir, geometric=2, write_midx="plain")
    assert result.ordered_pack == base and result.midx == "plain"
    named = midx_format.pack_names_of(str(server.git_dir / "objects" / "pack" / "multi-pack-index"))
    assert sorted(named) == sorted(p.with_suffix(".idx").name for p in server.packs())
    git(server.git_dir, "multi-pack-index", "verify")
    git(server.git_dir, "fsck", "--full")
    # Once more: nothing new; the index is written again over the same packs.
    again = packorder.repack(server.git_dir, geometric=2, write_midx="plain")
    assert not again.rolled_up and not again.packs
    git(server.git_dir, "multi-pack-index", "verify")


def test_a_bitmap_in_the_multi_pack_index(tmp_path: Path) -> None:
    server = server_with_pushes(tmp_path, pushes=6, commits=60)
    packorder.repack(server.git_dir)  # the ordered pack, with its own bitmap (bare)
    (ordered,) = server.packs()
    assert ordered.with_suffix(".bitmap").exists()
    for _ in range(4):
        server.push()
    result = packorder.repack(server.git_dir, geometric=2, write_midx="plain", write_bitmap=True)
    assert result.bitmap and result.bitmap_kind == "multi-pack-index"
    pack_dir = server.git_dir / "objects" / "pack"
    parsed = midx_format.read(str(pack_dir / "multi-pack-index"))
    assert parsed.pack_names[parsed.preferred_pack()] == ordered.with_suffix(".idx").name
    assert list(pack_dir.glob("multi-pack-index-*.bitmap"))
    assert not ordered.with_suffix(".bitmap").exists()  # the index's bitmap covers it
    git(server.git_dir, "rev-list", "--test-bitmap", "HEAD")
    git(server.git_dir, "multi-pack-index", "verify")


def test_a_bitmap_needs_a_multi_pack_index(tmp_path: Path) -> None:
    server = server_with_pushes(tmp_path, pushes=2)
    with pytest.raises(packorder.UsageError, match="incompatible with bitmap indexes"):
        packorder.repack(server.git_dir, geometric=2, write_bitmap=True)
    assert len(server.packs()) == 3


@pytest.mark.skipif(git_version() < (2, 47), reason="incremental multi-pack-index: Git 2.47")
def test_an_incremental_chain_grows(tmp_path: Path) -> None:
    """A new layer for the roll-up on top of the chain there was; never a plain index."""
    server = server_with_pushes(tmp_path, pushes=3, commits=60)
    git(server.git_dir, "multi-pack-index", "write", "--incremental")
    chain_dir = server.git_dir / "objects" / "pack" / "multi-pack-index.d"
    first = (chain_dir / "multi-pack-index-chain").read_text().split()
    for _ in range(5):
        server.push()
    result = packorder.repack(server.git_dir, geometric=2, write_midx="incremental")
    assert result.midx == "incremental"
    layers = (chain_dir / "multi-pack-index-chain").read_text().split()
    assert not (server.git_dir / "objects" / "pack" / "multi-pack-index").exists()
    assert len(layers) >= 1 and set(first) - set(layers) <= set(first)
    named = set()
    for layer in layers:
        named |= set(midx_format.pack_names_of(str(chain_dir / f"multi-pack-index-{layer}.midx")))
    assert named == {p.with_suffix(".idx").name for p in server.packs()}
    git(server.git_dir, "multi-pack-index", "verify")
    git(server.git_dir, "fsck", "--full")


def _git_compacts_chains() -> bool:
    proc = subprocess.run([GIT, "multi-pack-index", "compact", "-h"], capture_output=True)
    return b"write-chain-file" in proc.stdout + proc.stderr


def _chain_names_every_pack(server: Server) -> None:
    chain = server.git_dir / "objects" / "pack" / "multi-pack-index.d" / "multi-pack-index-chain"
    named = set()
    for layer in chain.read_text().split():
        named |= set(midx_format.pack_names_of(str(chain.parent / f"multi-pack-index-{layer}.midx")))
    assert named == {p.with_suffix(".idx").name for p in server.packs()}
    assert not (server.git_dir / "objects" / "pack" / "multi-pack-index").exists()
    git(server.git_dir, "multi-pack-index", "verify")


@pytest.mark.skipif(git_version() < (2, 47), reason="incremental multi-pack-index: Git 2.47")
def test_a_chain_git_cannot_bitmap_still_grows(tmp_path: Path) -> None:
    """A bitmap asked of a chain whose layers have none (so no Git can write one on top):
    the chain still grows, without a bitmap, and a warning says why (Git's own repack
    fails)."""
    server = server_with_pushes(tmp_path, pushes=3, commits=60)
    git(server.git_dir, "multi-pack-index", "write", "--incremental")
    for _ in range(5):
        server.push()
    result = packorder.repack(server.git_dir, geometric=2, write_midx="incremental", write_bitmap=True)
    assert result.midx == "incremental" and not result.bitmap
    assert any("bitmap" in w for w in result.warnings)
    _chain_names_every_pack(server)
    git(server.git_dir, "fsck", "--full")


@pytest.mark.skipif(not _git_compacts_chains(), reason="bitmaps in a chain's layers: Git 2.55")
def test_every_layer_of_a_chain_gets_its_bitmap(tmp_path: Path) -> None:
    server = server_with_pushes(tmp_path, pushes=3, commits=60)
    git(server.git_dir, "multi-pack-index", "write", "--incremental", "--bitmap")
    for _ in range(5):
        server.push()
    result = packorder.repack(server.git_dir, geometric=2, write_midx="incremental", write_bitmap=True)
    assert result.midx == "incremental" and result.bitmap and result.bitmap_kind == "multi-pack-index"
    assert not result.warnings
    _chain_names_every_pack(server)
    git(server.git_dir, "rev-list", "--test-bitmap", "HEAD")
    git(server.git_dir, "fsck", "--full")


def geometric_argv(repo: Path) -> list[str]:
    return [sys.executable, "-m", "packorder", "repack", "-q", "-d", "-l", "--geometric=2", "--write-midx", str(repo)]


def midx_names_only_packs_there(git_dir: Path) -> None:
    pack_dir = git_dir / "objects" / "pack"
    files = [pack_dir / "multi-pack-index"]
    chain = pack_dir / "multi-pack-index.d" / "multi-pack-index-chain"
    if chain.exists():
        files += [chain.parent / f"multi-pack-index-{h}.midx" for h in chain.read_text().split()]
    for f in files:
        if f.exists():
            for name in midx_format.pack_names_of(str(f)):
                assert (pack_dir / name).exists() and (pack_dir / name).with_suffix(".pack").exists(), name


def test_killed_at_every_step(tmp_path: Path) -> None:
    server = server_with_pushes(tmp_path / "src", pushes=6, commits=60)
    git(server.git_dir, "multi-pack-index", "write")  # an index there was, naming packs that go
    loose = git(server.git_dir, "hash-object", "-w", "--stdin", input=b"a loose object\n").decode().strip()
    before = all_ids(server.git_dir)
    probe = copy(server.git_dir, tmp_path / "probe.git")
    log = tmp_path / "points.log"
    subprocess.run(geometric_argv(probe), env={**git_env(), "PACKORDER_CRASH_LOG": str(log)}, check=True)
    points = log.read_text().split()
    assert {"geometry-chosen", "idx-installed", "midx-written", "pack-removed", "loose-removed"} <= set(points)
    for n in range(1, len(points) + 1):
        work = copy(server.git_dir, tmp_path / f"work{n}.git")
        proc = subprocess.run(
            geometric_argv(work), env={**git_env(), "PACKORDER_CRASH_AT": f"#{n}"}, capture_output=True
        )
        assert proc.returncode == 137, (n, points[n - 1], proc.stderr.decode())
        git(work, "fsck", "--full")
        assert all_ids(work) == before, (n, points[n - 1])
        midx_names_only_packs_there(work)
        # The next run finishes the job: what is left is a progression (a pack the dead run
        # had yet to remove may stay in it: a duplicate, as Git would leave it).
        result = packorder.repack(work, geometric=2, write_midx="plain")
        assert all_ids(work) == before, (n, points[n - 1])
        assert not geometry_mod.plan(candidates(open_repository(work)), 2).rolled_up, (n, result.warnings)
        assert len(pack_names(work)) <= 3, (n, points[n - 1])
        assert not (work / "objects" / loose[:2] / loose[2:]).exists()
        git(work, "multi-pack-index", "verify")
        git(work, "fsck", "--full")
        shutil.rmtree(work)


def test_pushes_during_geometric_repacks_all_land(tmp_path: Path) -> None:
    server = server_with_pushes(tmp_path, pushes=2)
    pushed: list[str] = []
    errors: list[BaseException] = []

    def pusher() -> None:
        try:
            for _ in range(25):
                server.push(commits=1, files=1 + len(pushed) % 4)
                pushed.append(server.work.run("rev-parse", "HEAD").decode().strip())
        except BaseException as e:
            errors.append(e)

    thread = threading.Thread(target=pusher)
    thread.start()
    runs = 0
    try:
        while thread.is_alive():
            packorder.repack(server.git_dir, geometric=2, write_midx="plain")
            runs += 1
    finally:
        thread.join()
    assert not errors, errors
    assert runs >= 2 and len(pushed) == 25
    packorder.repack(server.git_dir, geometric=2, write_midx="plain")
    git(server.git_dir, "fsck", "--full")
    git(server.git_dir, "multi-pack-index", "verify")
    for commit in pushed:
        git(server.git_dir, "cat-file", "-e", commit)


def test_the_command_line_takes_gits_spellings(tmp_path: Path) -> None:
    """`git repack -d -l --geometric=2 --write-midx` and `git repack -adb`, unchanged."""
    server = server_with_pushes(tmp_path, pushes=4)
    run = [sys.executable, "-m", "packorder", "repack"]
    proc = subprocess.run([*run, "-d", "-l", "--geometric=2", "--write-midx", str(server.git_dir)], capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "rolled up" in proc.stdout.decode() and proc.stderr == b""
    git(server.git_dir, "multi-pack-index", "verify")
    proc = subprocess.run([*run, "-adb", "-q"], cwd=server.git_dir, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(server.packs()) == 1 and server.packs()[0].with_suffix(".bitmap").exists()
    git(server.git_dir, "rev-list", "--test-bitmap", "HEAD")
    git(server.git_dir, "fsck", "--full")


def test_a_dry_run_changes_nothing(tmp_path: Path) -> None:
    server = server_with_pushes(tmp_path, pushes=4)
    before = sorted(server.packs())
    result = packorder.repack(server.git_dir, geometric=2, dry_run=True)
    assert result.dry_run and len(result.rolled_up) == 4 and not result.packs
    assert sorted(server.packs()) == before


def test_without_d_the_rolled_up_packs_stay(tmp_path: Path) -> None:
    server = server_with_pushes(tmp_path, pushes=4)
    before = set(server.packs())
    result = packorder.repack(server.git_dir, geometric=2, delete=False)
    assert len(result.packs) == 1 and not result.removed_packs
    assert set(server.packs()) == before | set(result.packs)
    assert np.all([p.exists() for p in before])


def test_an_incremental_chain_is_compacted_as_git_compacts_it(tmp_path: Path) -> None:
    """Git 2.55's rule: the roll-up's new layer takes in the layers above it while it holds at
    least half as many objects as each; the larger layers below stay as they are."""
    from packorder.format.object_format import SHA1
    from packorder.store import midx as midx_mod

    server = server_with_pushes(tmp_path, pushes=0, commits=60)
    pack_dir = server.git_dir / "objects" / "pack"
    (base,) = server.packs()
    bottom = midx_mod.write_layer(pack_dir, [midx_mod.indexed(base)], None, [], SHA1)
    for _ in range(2):
        server.push()
    pushed = [p for p in server.packs() if p != base]
    below = [midx_mod.read_chain_layer(pack_dir, bottom, SHA1)]
    middle = midx_mod.write_layer(pack_dir, [midx_mod.indexed(p) for p in pushed], None, below, SHA1)
    midx_mod.write_chain(pack_dir, [bottom, middle])
    git(server.git_dir, "multi-pack-index", "verify")
    for _ in range(4):
        server.push()  # four packs no layer names: they roll up
    result = packorder.repack(server.git_dir, geometric=2, write_midx="incremental")
    assert len(result.rolled_up) == 4
    chain = midx_mod.read_chain(pack_dir, SHA1)
    assert chain[0].checksum == bottom and len(chain) == 2  # the middle one compacted in
    top = set(midx_mod.layer_packs(chain[1]))
    assert top == {p.name for p in pushed} | {p.name for p in result.packs}
    assert not (pack_dir / "multi-pack-index").exists()
    git(server.git_dir, "multi-pack-index", "verify")
    git(server.git_dir, "fsck", "--full")
