"""The multi-pack-index packorder writes is the file Git writes for the same packs: the same
bytes, whichever copy of a duplicated object it names; Git reads and verifies it; its
pseudo-pack order is the one Git writes for a bitmap."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers.gitrepo import git
from helpers.pushes import server_with_pushes

from packorder.errors import CorruptPackError
from packorder.format import midx as midx_format
from packorder.format.object_format import named
from packorder.store import midx


@pytest.fixture(scope="module", params=["sha1", "sha256"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare repository of a base pack and six pushes, each a pack (with fix-thin copies of
    each other's objects)."""
    made = server_with_pushes(tmp_path_factory.mktemp(f"midx-{request.param}"), pushes=6, object_format=request.param)
    return made.git_dir


def copy(server: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(server, tmp_path / "repo.git"))


def git_midx(repo: Path, packs: list[Path], *extra: str) -> bytes:
    listing = "".join(p.with_suffix(".idx").name + "\n" for p in packs).encode()
    git(repo, "multi-pack-index", "write", "--stdin-packs", *extra, input=listing)
    path = repo / "objects" / "pack" / "multi-pack-index"
    data = path.read_bytes()
    for made in (repo / "objects" / "pack").glob("multi-pack-index*"):
        made.unlink()
    return data


def fmt_of(repo: Path):
    return named(git(repo, "rev-parse", "--show-object-format").decode().strip())


@pytest.mark.parametrize("preferred", [None, "largest", "smallest"])
def test_the_same_bytes_as_git(server: Path, tmp_path: Path, preferred: str | None) -> None:
    repo = copy(server, tmp_path)
    pack_dir = repo / "objects" / "pack"
    packs = sorted(pack_dir.glob("pack-*.pack"))
    assert len(packs) == 7
    by_size = sorted(packs, key=lambda p: p.stat().st_size)
    choice = {None: None, "largest": by_size[-1], "smallest": by_size[0]}[preferred]
    theirs = git_midx(repo, packs, *([f"--preferred-pack={choice.name}"] if choice else []))
    fmt = fmt_of(repo)
    midx.write_plain(pack_dir, [midx.indexed(p, fmt) for p in packs], choice.name if choice else None, fmt)
    assert (pack_dir / "multi-pack-index").read_bytes() == theirs
    git(repo, "multi-pack-index", "verify")
    git(repo, "fsck", "--full")


def test_a_subset_of_the_packs(server: Path, tmp_path: Path) -> None:
    repo = copy(server, tmp_path)
    pack_dir = repo / "objects" / "pack"
    packs = sorted(pack_dir.glob("pack-*.pack"))[:4]
    theirs = git_midx(repo, packs)
    fmt = fmt_of(repo)
    midx.write_plain(pack_dir, [midx.indexed(p, fmt) for p in packs], None, fmt)
    assert (pack_dir / "multi-pack-index").read_bytes() == theirs


def test_reads_what_git_writes(server: Path, tmp_path: Path) -> None:
    """Git's index read back: its packs, every object once, each where its pack's .idx says."""
    repo = copy(server, tmp_path)
    pack_dir = repo / "objects" / "pack"
    packs = sorted(pack_dir.glob("pack-*.pack"))
    listing = "".join(p.with_suffix(".idx").name + "\n" for p in packs).encode()
    git(repo, "multi-pack-index", "write", "--stdin-packs", "--bitmap", input=listing)
    fmt = fmt_of(repo)
    parsed = midx_format.read(str(pack_dir / "multi-pack-index"), fmt)
    assert parsed.pack_names == sorted(p.with_suffix(".idx").name for p in packs)
    assert midx_format.pack_names_of(str(pack_dir / "multi-pack-index"), fmt) == parsed.pack_names
    indexed = {ip.name: ip for ip in (midx.indexed(p, fmt) for p in packs)}
    names = np.concatenate([ip.index.names for ip in indexed.values()])
    assert parsed.count == len({bytes(r) for r in names})
    for i in range(0, parsed.count, 7):
        ip = indexed[parsed.pack_names[parsed.pack_ids[i]]]
        at = np.flatnonzero((ip.index.names == parsed.names[i]).all(axis=1))
        assert len(at) == 1 and ip.index.offsets[at[0]] == parsed.offsets[i]
    # Git chose the preferred pack for its bitmap; the pseudo-pack order is the one it wrote.
    preferred = parsed.preferred_pack()
    assert preferred is not None
    sel = midx.select(
        midx.in_directory_order(pack_dir, list(indexed.values())), parsed.pack_names[preferred].replace(".idx", ".pack")
    )
    assert (sel.names == parsed.names).all() and (sel.pack_ids == parsed.pack_ids).all()
    order, bitmapped = midx.pseudo_pack_order(sel)
    assert (order == parsed.pseudo_order).all()
    assert (bitmapped == parsed.bitmapped).all()


def test_a_damaged_index_is_refused(server: Path, tmp_path: Path) -> None:
    repo = copy(server, tmp_path)
    pack_dir = repo / "objects" / "pack"
    packs = sorted(pack_dir.glob("pack-*.pack"))
    fmt = fmt_of(repo)
    midx.write_plain(pack_dir, [midx.indexed(p, fmt) for p in packs], None, fmt)
    path = pack_dir / "multi-pack-index"
    data = bytearray(path.read_bytes())
    data[200] ^= 1
    with pytest.raises(CorruptPackError, match="checksum mismatch"):
        midx_format.parse(bytes(data), str(path), fmt)
    with pytest.raises(CorruptPackError, match="bad signature"):
        midx_format.parse(b"XIDM" + bytes(data[4:]), str(path), fmt)
    with pytest.raises(CorruptPackError, match="too short"):
        midx_format.parse(bytes(data[:10]), str(path), fmt)
