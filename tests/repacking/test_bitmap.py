"""The reachability bitmap repack writes for its pack, checked by Git's own readers and
against the bitmap Git writes for the same history."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import helpers.bitmapfile as bitmapfile
import pytest
from helpers.gitrepo import GIT, build_history, git, git_env, wide_directory

import packorder
from packorder.format import idx as idx_format

# Both installed Git versions read the bitmap (the older one is Debian's).
READERS = sorted({GIT, *(g for g in ("/usr/bin/git", "/usr/local/bin/git") if Path(g).exists())})


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare repository with 120 commits (more than the 100 that all get a bitmap, so walks
    pass through commits without one), branches, merges, tags and a submodule entry."""
    root = tmp_path_factory.mktemp("bitmap")
    repo = build_history(root / "work", commits=120)
    repo.run("update-index", "--add", "--cacheinfo", "160000," + "12" * 20 + ",vendor/sub")
    repo.commit("add a submodule")
    bare = root / "source.git"
    git(None, "clone", "-q", "--bare", "--no-local", str(repo.path), str(bare))
    return bare


def copy(source: Path, dst: Path) -> Path:
    shutil.copytree(source, dst)
    return dst


def pack_dir(repo: Path) -> Path:
    return repo / "objects" / "pack"


def refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)").decode().split()


def object_set(repo: Path, *args: str, gitbin: str = GIT) -> list[str]:
    out = subprocess.run(
        [gitbin, "-C", str(repo), "rev-list", "--objects", *args], capture_output=True, env=git_env(), check=True
    ).stdout
    return sorted(line[:40] for line in out.decode().splitlines())


def read_bitmap(repo: Path) -> tuple[list[str], list[int], bitmapfile.Bitmap]:
    """(ids in .idx order, .idx position of each pack position, the bitmap)."""
    (idx_path,) = pack_dir(repo).glob("*.idx")
    index = idx_format.read(str(idx_path))
    names = [bytes(index.names[i]).hex() for i in range(len(index.names))]
    by_offset = sorted(range(len(names)), key=lambda i: int(index.offsets[i]))
    (bitmap_path,) = pack_dir(repo).glob("*.bitmap")
    return names, by_offset, bitmapfile.read(bitmap_path, len(names))


def ids_of(bits: int, names: list[str], by_offset: list[int]) -> set[str]:
    out, pos = set(), 0
    while bits:
        if bits & 1:
            out.add(names[by_offset[pos]])
        bits >>= 1
        pos += 1
    return out


def test_git_reads_and_serves_from_the_pack_bitmap(source: Path, tmp_path: Path) -> None:
    bare = copy(source, tmp_path / "bare.git")
    result = packorder.repack(bare)  # a bare repository gets a bitmap by default, as in Git
    assert result.bitmap and result.bitmap_kind == "pack" and result.bitmaps > 0 and result.bitmap_note == ""
    (bitmap,) = pack_dir(bare).glob("pack-*.bitmap")
    assert bitmap.with_suffix(".pack") == result.packs[0]
    assert not list(pack_dir(bare).glob("multi-pack-index*"))
    for gitbin in READERS:
        for ref in refs(bare):
            test = [gitbin, "-C", str(bare), "rev-list", "--test-bitmap", f"{ref}^{{commit}}"]
            proc = subprocess.run(test, capture_output=True, env=git_env())
            assert proc.returncode == 0 and b"OK!" in proc.stdout + proc.stderr, (gitbin, ref, proc.stderr)
        assert object_set(bare, "--all", "--use-bitmap-index", gitbin=gitbin) == object_set(bare, "--all")
    # A clone is served from the bitmap and holds the whole history.
    clone = tmp_path / "clone.git"
    git(None, "clone", "-q", "--bare", "--no-local", str(bare), str(clone))
    git(clone, "fsck", "--full")
    assert object_set(clone, "--all") == object_set(bare, "--all")


def test_the_bitmap_agrees_with_git_and_with_the_history(source: Path, tmp_path: Path) -> None:
    ours = copy(source, tmp_path / "ours.git")
    packorder.repack(ours)
    theirs = copy(source, tmp_path / "theirs.git")
    git(theirs, "repack", "-adbq")
    names, by_offset, mine = read_bitmap(ours)
    their_names, their_offsets, git_bitmap = read_bitmap(theirs)
    assert mine.flags & bitmapfile.HASH_CACHE
    assert mine.pack_checksum == bytes.fromhex(next(pack_dir(ours).glob("*.pack")).stem[len("pack-") :])
    # Objects of each type, and each object's path-name hash, as Git has them.
    for ours_type, git_type in zip(mine.types, git_bitmap.types, strict=True):
        assert ids_of(ours_type, names, by_offset) == ids_of(git_type, their_names, their_offsets)
    hashes = dict(zip(names, mine.name_hashes or [], strict=True))
    assert hashes == dict(zip(their_names, git_bitmap.name_hashes or [], strict=True))
    assert any(hashes.values())
    # Each commit's set is what Git's walk reaches from it (XORed entries included).
    assert mine.xored > 0
    for pos, bits in mine.entries.items():
        assert sorted(ids_of(bits, names, by_offset)) == object_set(ours, names[pos]), names[pos]
    tips = {git(ours, "rev-parse", f"{ref}^{{commit}}").decode().strip() for ref in refs(ours)}
    assert tips <= {names[pos] for pos in mine.entries}


def test_beside_a_kept_pack_the_bitmap_covers_all_packs(source: Path, tmp_path: Path) -> None:
    """A .keep pack stays, so the new pack alone is not closed under reachability: Git can
    only use a multi-pack-index bitmap then."""
    bare = copy(source, tmp_path / "bare.git")
    (pack,) = pack_dir(bare).glob("*.pack")
    pack.with_suffix(".keep").write_text("")
    git(bare, "commit-tree", "-m", "after", "HEAD^{tree}", "-p", "HEAD")
    new = git(bare, "commit-tree", "-m", "after", "HEAD^{tree}", "-p", "HEAD").decode().strip()
    git(bare, "update-ref", "refs/heads/after", new)
    result = packorder.repack(bare, write_bitmap=True)
    assert result.bitmap and result.bitmap_kind == "multi-pack-index" and result.bitmaps == 0
    assert list(pack_dir(bare).glob("multi-pack-index*.bitmap"))
    assert not list(pack_dir(bare).glob("pack-*.bitmap"))
    assert object_set(bare, "--all", "--use-bitmap-index") == object_set(bare, "--all")


def test_a_bitmap_is_added_to_the_same_pack_written_again(source: Path, tmp_path: Path) -> None:
    bare = copy(source, tmp_path / "bare.git")
    first = packorder.repack(bare, write_bitmap=False)
    assert not list(pack_dir(bare).glob("*.bitmap"))
    second = packorder.repack(bare, write_bitmap=True)
    assert second.packs == first.packs  # the very same bytes
    assert second.bitmaps > 0
    assert list(pack_dir(bare).glob("*.bitmap"))
    assert object_set(bare, "--all", "--use-bitmap-index") == object_set(bare, "--all")


def test_a_partial_clone_pack_names_promised_objects_so_gets_no_bitmap_of_its_own(source: Path, tmp_path: Path) -> None:
    """A promisor pack's trees name blobs the repository does not have: a bitmap of the pack
    alone would claim a closure it lacks, so the multi-pack-index route is taken instead."""
    git(source, "config", "uploadpack.allowFilter", "true")
    partial = tmp_path / "partial.git"
    git(None, "clone", "-q", "--bare", "--filter=blob:none", f"file://{source}", str(partial))
    result = packorder.repack(partial, write_bitmap=True)
    assert result.promisor and result.bitmap_kind == "multi-pack-index" and result.bitmaps == 0
    assert "which is not in the pack" in result.bitmap_note
    assert not list(pack_dir(partial).glob("pack-*.bitmap"))


@pytest.mark.parametrize(
    "options",
    [{"order": "history"}, {"order": "git", "ref_delta": True}, {"no_reuse_delta": True, "verify": "crc"}],
    ids=["history", "git-ref-delta", "fresh-deltas"],
)
def test_the_bitmap_holds_in_every_order_and_delta_form(source: Path, tmp_path: Path, options: dict) -> None:
    bare = copy(source, tmp_path / "bare.git")
    result = packorder.repack(bare, **options)
    assert result.bitmaps > 0
    head = git(bare, "rev-parse", "HEAD").decode().strip()
    proc = subprocess.run([GIT, "-C", str(bare), "rev-list", "--test-bitmap", head], capture_output=True, env=git_env())
    assert proc.returncode == 0 and b"OK!" in proc.stdout + proc.stderr, proc.stderr
    assert object_set(bare, "--all", "--use-bitmap-index") == object_set(bare, "--all")


def test_without_the_hash_cache_when_git_is_told_so(source: Path, tmp_path: Path) -> None:
    bare = copy(source, tmp_path / "bare.git")
    git(bare, "config", "pack.writeBitmapHashCache", "false")
    packorder.repack(bare)
    _, _, bitmap = read_bitmap(bare)
    assert not bitmap.flags & bitmapfile.HASH_CACHE and bitmap.name_hashes is None and bitmap.entries
    assert object_set(bare, "--all", "--use-bitmap-index") == object_set(bare, "--all")


def test_wide_trees_share_chunks_and_the_bitmap_stays_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory of 400 files changed one file at a time: each new version of its tree is a
    delta of the last and repeats most of its entries. The graph keeps repeated chunks once
    (checked by id, not searched): what is stored is far less than what the trees name, and
    every bitmap still equals Git's walk."""
    repo = wide_directory(tmp_path / "wide", files=400, changes=30)
    bare = tmp_path / "wide.git"
    git(None, "clone", "-q", "--bare", "--no-local", str(repo.path), str(bare))
    seen = []
    real = packorder.repacking.bitmap.compute

    def capture(*args: object, **kwargs: object) -> packorder.repacking.bitmap.PackBitmap:
        seen.append(real(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(packorder.repacking.bitmap, "compute", capture)
    result = packorder.repack(bare, no_reuse_delta=True)
    assert result.bitmaps > 0
    (computed,) = seen
    assert computed.edges_named > 31 * 400
    assert computed.edges_stored < computed.edges_named / 4
    names, by_offset, bitmap = read_bitmap(bare)
    for pos, bits in bitmap.entries.items():
        assert sorted(ids_of(bits, names, by_offset)) == object_set(bare, names[pos]), names[pos]
