"""New deltas: the native encoder (Git's delta format, bounded size) and `packorder repack -f`
(and `--window` without -f) searching deltas as `git pack-objects` does."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers.gitrepo import Repo, build_history, git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import packorder
from packorder import _native
from packorder.errors import CorruptPackError
from packorder.format import layout
from packorder.repacking import deltas as deltas_mod
from packorder.walk.objects import ObjectTable

COMMIT, TREE, BLOB = 1, 2, 3


# --- The encoder ------------------------------------------------------------------------


def ops(delta: bytes) -> list[tuple[str, int, int]]:
    """The opcodes of a delta: ("copy", offset, size) and ("insert", 0, size)."""
    pos = 0

    def varint() -> int:
        nonlocal pos
        value = shift = 0
        while True:
            b = delta[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    varint(), varint()
    out = []
    while pos < len(delta):
        cmd = delta[pos]
        pos += 1
        if cmd & 0x80:
            offset = size = 0
            for i in range(4):
                if cmd & (1 << i):
                    offset |= delta[pos] << (8 * i)
                    pos += 1
            for i in range(3):
                if cmd & (0x10 << i):
                    size |= delta[pos] << (8 * i)
                    pos += 1
            out.append(("copy", offset, size or 0x10000))
        else:
            assert cmd != 0, "opcode 0 is invalid"
            out.append(("insert", 0, cmd))
            pos += cmd
    return out


def check_delta(base: bytes, target: bytes, delta: bytes) -> None:
    assert _native.apply_delta(base, delta) == target
    for kind, _, size in ops(delta):
        assert size <= (0x10000 if kind == "copy" else 127)


@st.composite
def base_and_target(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A base, and a target made of pieces of it and new bytes (as file versions are)."""
    alphabet = draw(st.sampled_from([b"ab", b"abc\n", b"the quick brown fox\n", bytes(range(256))]))
    base = bytes(draw(st.lists(st.sampled_from(alphabet), max_size=3000)))
    pieces = draw(
        st.lists(
            st.one_of(
                st.tuples(st.integers(0, max(len(base), 1)), st.integers(0, 400)),
                st.binary(max_size=150),
                st.lists(st.sampled_from(alphabet), max_size=150).map(bytes),
            ),
            max_size=12,
        )
    )
    target = b"".join(base[p[0] : p[0] + p[1]] if isinstance(p, tuple) else p for p in pieces)
    return base, target


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base_and_target())
def test_deltas_apply_to_exactly_the_target(pair: tuple[bytes, bytes]) -> None:
    base, target = pair
    check_delta(base, target, _native.DeltaIndex(base).encode(target))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base_and_target(), st.integers(0, 4000))
def test_max_size_is_honoured(pair: tuple[bytes, bytes], max_size: int) -> None:
    base, target = pair
    index = _native.DeltaIndex(base)
    full = index.encode(target)
    bounded = index.encode(target, max_size)
    if bounded is not None:
        assert len(bounded) <= max_size and bounded == full
    if len(full) <= max_size:
        assert bounded == full
    assert index.encode(target, len(full)) == full
    assert len(full) == 0 or index.encode(target, len(full) - 1) is None


def test_one_index_serves_many_targets_and_long_copies_are_split() -> None:
    rng = random.Random(3)
    base = rng.randbytes(300_000)
    index = _native.DeltaIndex(base)
    targets = [
        base,
        base[1000:] + b"tail",
        b"head" + base[:150_000] + rng.randbytes(3000) + base[150_000:],
        base[::-1][:50_000],
        b"",
        bytes(70_000),
    ]
    for target in targets:
        check_delta(base, target, index.encode(target))
    copies = [size for kind, _, size in ops(index.encode(base)) if kind == "copy"]
    assert sum(copies) == len(base) and max(copies) == 0x10000
    # Inserts longer than 127 bytes become several opcodes.
    literal = rng.randbytes(1000)
    assert [size for kind, _, size in ops(index.encode(literal))] == [127] * 7 + [111]


def test_repetitive_bases_stay_fast_and_correct() -> None:
    base = b"abcdefghijklmnopqrstuvwxyz0123456789" * 30_000  # one block hash over and over
    target = base[7:500_000] + b"-" + base[:300_000]
    d = _native.DeltaIndex(base).encode(target)
    check_delta(base, target, d)
    assert len(d) < 100


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """A history with branches, merges, tags, renames, and files edited at each commit."""
    repo = build_history(tmp_path_factory.mktemp("deltas") / "repo", commits=90)
    repo.run("repack", "-adq")
    return repo


def versions(repo: Repo, path: str) -> list[bytes]:
    commits = repo.run("log", "--format=%H", "--", path).decode().split()
    return [repo.run("show", f"{c}:{path}") for c in commits]


def test_real_file_versions(history: Repo) -> None:
    """Consecutive versions of a file make small deltas, in both directions."""
    for path in ("src/file1.c", "src/file2.c", "data/blob.bin"):
        vs = versions(history, path)
        assert len(vs) > 3
        for older, newer in zip(vs[1:], vs, strict=False):
            for base, target in ((newer, older), (older, newer)):
                d = _native.DeltaIndex(base).encode(target)
                check_delta(base, target, d)
                assert len(d) < len(target) // 4


# --- The search policy --------------------------------------------------------------------


def table_of(kinds: list[int], hashes: list[int]) -> ObjectTable:
    n = len(kinds)
    z = np.zeros(n, dtype=bool)
    return ObjectTable(
        np.zeros((n, 20), np.uint8),
        np.array(kinds, np.uint8),
        np.array(hashes, np.uint32),
        ~z,
        z,
        np.zeros(n, np.int32),
        np.arange(n, dtype=np.int64),
        z,
    )


def test_search_order_is_type_name_hash_size_then_discovery() -> None:
    table = table_of([BLOB, TREE, BLOB, BLOB, COMMIT, BLOB], [5, 9, 7, 5, 0, 5])
    sizes = np.array([100, 500, 100, 300, 200, 100], np.uint64)
    order = deltas_mod.search_order(table, sizes, np.arange(6))
    assert order.tolist() == [2, 3, 0, 5, 1, 4]


def test_chunks_keep_the_versions_of_one_path_together() -> None:
    rng = np.random.default_rng(1)
    hashes = np.sort(rng.integers(1, 40, 4000))[::-1].astype(np.uint32)
    kinds = np.full(4000, BLOB, np.uint8)
    sizes = rng.integers(50, 5000, 4000).astype(np.uint64)
    bounds = deltas_mod.chunk_bounds(kinds, hashes, sizes, threads=2, window=10)
    assert bounds[0] == 0 and bounds[-1] == 4000 and len(bounds) > 2
    inner = bounds[1:-1]
    assert (hashes[inner] != hashes[inner - 1]).all()
    # Objects without a path (commits) may be cut anywhere.
    commits = deltas_mod.chunk_bounds(np.full(4000, COMMIT, np.uint8), np.zeros(4000, np.uint32), sizes, 2, 10)
    assert len(commits) == 2 * deltas_mod.CHUNKS_PER_THREAD + 1
    assert deltas_mod.chunk_bounds(kinds, hashes, sizes, threads=1, window=10).tolist() == [0, 4000]


def test_reused_heights() -> None:
    base = np.array([-1, 0, 1, 1, -1, 4, -1])
    assert deltas_mod.reused_heights(base).tolist() == [2, 0, 0, 0, 1, 0, 0]


# --- packorder repack -f --------------------------------------------------------------------


def copy_repo(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def the_pack(repo: Path) -> Path:
    (pack,) = (repo / ".git" / "objects" / "pack").glob("*.pack")
    return pack


def contents(repo: Path) -> dict[str, bytes]:
    ids = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    out = git(repo, "cat-file", "--batch", input=ids)
    result, at = {}, 0
    while at < len(out):
        nl = out.index(b"\n", at)
        oid, _kind, size = out[at:nl].split()
        result[oid.decode()] = out[nl + 1 : nl + 1 + int(size)]
        at = nl + 1 + int(size) + 1
    return result


@pytest.fixture()
def work(history: Repo, tmp_path: Path) -> Path:
    return copy_repo(history.path, tmp_path / "work")


def test_fresh_search_against_git(work: Path, tmp_path: Path) -> None:
    before = contents(work)
    theirs = copy_repo(work, tmp_path / "theirs")
    whole = copy_repo(work, tmp_path / "whole")
    git(theirs, "-c", "pack.threads=2", "repack", "-adfq", "--window=10", "--depth=50")
    packorder.repack(whole, no_reuse_delta=True, window=0)
    seen: list[tuple[int, int]] = []

    def progress(title: str, done: int, total: int) -> None:
        if title == "Compressing objects":
            seen.append((done, total))

    result = packorder.repack(work, no_reuse_delta=True, window=10, depth=50, threads=2, progress=progress)
    git(work, "fsck", "--full", "--strict")
    assert contents(work) == before
    assert result.reused_deltas == 0 and result.new_deltas > 0
    assert seen and seen[-1][0] == seen[-1][1] > 0
    ours, git_size = the_pack(work).stat().st_size, the_pack(theirs).stat().st_size
    assert ours < the_pack(whole).stat().st_size
    assert ours <= git_size * 1.02, (ours, git_size)
    lay = layout.load(the_pack(work))
    assert 0 < lay.depths().max() <= 50
    assert layout.load(the_pack(whole)).is_delta.sum() == 0


def test_depth_limit(work: Path) -> None:
    result = packorder.repack(work, no_reuse_delta=True, depth=3, threads=1, verify="crc")
    git(work, "fsck", "--full")
    depths = layout.load(the_pack(work)).depths()
    assert depths.max() == 3 and result.new_deltas > 0


@pytest.mark.parametrize("threads", [1, 3])
def test_threads_and_ref_deltas(work: Path, threads: int) -> None:
    before = contents(work)
    packorder.repack(work, no_reuse_delta=True, threads=threads, ref_delta=True, verify="full")
    git(work, "fsck", "--full")
    assert contents(work) == before
    lay = layout.load(the_pack(work))
    assert (lay.kinds == 7).sum() > 100


def test_order_git_keeps_the_real_type_of_new_deltas(work: Path) -> None:
    """pack-objects writes new deltas by their real type: all trees before all blobs, even
    though many trees are deltas (only reused deltas fall into the blob families)."""
    packorder.repack(work, order="git", no_reuse_delta=True)
    lay = layout.load(the_pack(work))
    kinds = lay.real_kinds()
    assert lay.is_delta[kinds == TREE].sum() > 10
    assert np.flatnonzero(kinds == TREE)[-1] < np.flatnonzero(kinds == BLOB)[0]
    git(work, "fsck", "--full")


def test_without_f_only_objects_not_reused_are_searched(work: Path, tmp_path: Path) -> None:
    """As `git repack -ad`: stored deltas are reused, loose objects become deltas, and objects
    stored whole in one pack are not tried against each other again."""
    repo = Repo.__new__(Repo)
    repo.path, repo.clock = work, 1_900_000_000
    for i in range(3):
        text = (work / "src" / "file1.c").read_text()
        repo.write("src/file1.c", text.replace("alpha", f"ALPHA{i}", 3))
        repo.commit(f"loose {i}")
    before = contents(work)
    theirs = copy_repo(work, tmp_path / "theirs")
    git(theirs, "repack", "-adq")
    result = packorder.repack(work)
    git(work, "fsck", "--full")
    assert contents(work) == before
    assert result.reused_deltas > 100 and result.new_deltas > 0
    ours, git_size = the_pack(work).stat().st_size, the_pack(theirs).stat().st_size
    assert ours <= git_size * 1.02, (ours, git_size)
    # Everything is now in one pack, whole or a delta: nothing new to find.
    again = packorder.repack(work)
    assert again.new_deltas == 0 and again.reused_deltas == result.reused_deltas + result.new_deltas


def test_window_zero_or_one_makes_no_new_deltas(work: Path) -> None:
    for window in (0, 1):
        result = packorder.repack(work, no_reuse_delta=True, window=window)
        assert result.new_deltas == 0 and result.reused_deltas == 0
        assert layout.load(the_pack(work)).is_delta.sum() == 0


def test_corrupt_object_stops_the_search(work: Path) -> None:
    pack = the_pack(work)
    lay = layout.load(pack)
    sizes = lay.object_sizes
    # A blob: listing the objects reads commits and trees, never blobs.
    blob_delta = lay.is_delta & (lay.real_kinds() == BLOB) & (sizes > 200) & (lay.ends - lay.offsets > 40)
    target = int(np.flatnonzero(blob_delta)[0])
    data = bytearray(pack.read_bytes())
    # In the stream's checksum: reading the object's size (its first bytes) still works, the
    # search's reading of the whole object must not.
    at = int(lay.ends[target]) - 2
    data[at] ^= 0xFF
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    listing = sorted(str(p) for p in (work / ".git" / "objects").rglob("*"))
    with pytest.raises(CorruptPackError, match=f"{pack.name} is corrupt: corrupt or truncated zlib stream"):
        packorder.repack(work, no_reuse_delta=True)
    assert sorted(str(p) for p in (work / ".git" / "objects").rglob("*")) == listing


def test_repick_backward_tree_deltas(tmp_path: Path) -> None:
    """History received push by push, each as a thin pack (as a hosting service stores it):
    every new tree is a delta against its parent's, an older tree that Git discovers after
    it. --repick-backward-deltas searches those anew against newer trees: no tree base is then
    written ahead of its turn, the pack is no larger, and content is unchanged."""
    repo = Repo(tmp_path / "pushed")
    repo.run("config", "pack.threads", "1")  # Git's threaded delta search varies run to run

    made: list[Path] = []  # the packs in the order they were made

    def note_new_packs() -> None:
        made.extend(sorted(set((repo.git_dir / "objects" / "pack").glob("pack-*")) - set(made)))

    for i in range(40):
        repo.write(f"dir/file-{i:03d}.txt", f"file {i}\n" * 3)
    repo.commit("many files")
    repo.run("repack", "-adq")
    note_new_packs()
    for c in range(25):
        repo.write(f"dir/file-{(7 * c) % 40:03d}.txt", f"edit {c}\n" * 3)
        repo.commit(f"edit {c}")
        thin = repo.run("pack-objects", "--revs", "--thin", "--stdout", "-q", input=b"HEAD\n^HEAD~1\n")
        repo.run("index-pack", "--stdin", "--fix-thin", input=thin)
        note_new_packs()
    # Packs are looked up newest first, and each completed thin pack repeats the trees its
    # deltas are based on, whole. Git sets an older pack's time to now whenever it writes an
    # object that pack holds, so older packs often look newer; left to the clock, several tie
    # and the copy used varies from run to run. Date them oldest-made newest, so each tree is
    # taken from the pack it arrived in: a delta against its parent's tree, as a hosting
    # service's single pack stores it.
    for k, p in enumerate(made):
        os.utime(p, (1_700_000_000 - k, 1_700_000_000 - k))
    for loose in (repo.git_dir / "objects").glob("[0-9a-f][0-9a-f]"):
        shutil.rmtree(loose)
    git_dir = repo.git_dir

    def trees_in_discovery_order() -> list[str]:
        listed = repo.run("rev-list", "--objects", "--all").decode().split("\n")
        ids = [line.split()[0] for line in listed if line.strip()]
        types = repo.run("cat-file", "--batch-check=%(objecttype)", input="\n".join(ids).encode() + b"\n").decode()
        return [i for i, t in zip(ids, types.split(), strict=True) if t == "tree"]

    def contents() -> bytes:
        return git(None, "--git-dir", str(git_dir), "cat-file", "--batch-all-objects", "--batch")

    want = contents()
    plain = shutil.copytree(repo.path, tmp_path / "plain")
    moved = packorder.repack(plain, verify="crc")
    result = packorder.repack(repo.path, repick_backward_deltas=True, verify="full")
    trees = trees_in_discovery_order()
    rank = {t: k for k, t in enumerate(trees)}

    def backward_trees(pack: Path) -> list[str]:
        lay = layout.load(pack)
        ids = [lay.oid_hex(i) for i in range(lay.count)]
        return [
            ids[i]
            for i in range(lay.count)
            if ids[i] in rank and lay.base[i] >= 0 and rank[ids[lay.base[i]]] > rank[ids[i]]
        ]

    (plain_pack,) = sorted((plain / ".git" / "objects" / "pack").glob("*.pack"))
    (pack,) = repo.pack_files()
    before, after = backward_trees(plain_pack), backward_trees(pack)
    assert len(before) >= 10
    # Left as stored: the newest version of a tree has no newer one to be a delta of (here the
    # newest `dir` tree), and trees too small to search keep their stored delta.
    assert len(after) <= 2, after
    # Every backward tree that went was searched anew and found a newer base.
    assert result.new_deltas - moved.new_deltas >= len(before) - len(after)
    assert pack.stat().st_size <= plain_pack.stat().st_size
    assert contents() == want
    git(repo.path, "fsck", "--full")


def test_restored_deltas_respect_depth() -> None:
    """A re-picked delta the search found no base for gets its stored delta back, unless that
    makes a chain longer than --depth (the search allowed for it being whole)."""

    def choice(bases: list[int], new: list[bool]) -> deltas_mod.DeltaChoice:
        n = len(bases)
        return deltas_mod.DeltaChoice(
            np.array(bases, dtype=np.int64), np.ones(n, dtype=bool), np.zeros(n, dtype=bool), np.array(new)
        )

    # 1 -> 0, 2 -> 1 (reused); 3 was dropped (stored base 2) and found nothing.
    rows, old = np.array([3]), np.array([2])
    c = choice([-1, 0, 1, -1], [False] * 4)
    deltas_mod._restore_unmatched(c, rows, old, depth=3)
    assert c.base.tolist() == [-1, 0, 1, 2]
    c = choice([-1, 0, 1, -1], [False] * 4)
    deltas_mod._restore_unmatched(c, rows, old, depth=2)
    assert c.base.tolist() == [-1, 0, 1, -1]
    # A new delta was made against 3 while it was whole: 3 stays whole.
    c = choice([-1, 0, 1, -1, 3], [False, False, False, False, True])
    deltas_mod._restore_unmatched(c, rows, old, depth=10)
    assert c.base.tolist() == [-1, 0, 1, -1, 3]
