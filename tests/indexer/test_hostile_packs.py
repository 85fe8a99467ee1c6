"""Packs a hostile push could send: a delta chain 100,000 deep (OFS and REF deltas) is indexed
byte for byte as Git indexes it, within the memory budget, and a repository holding one
repacks; nothing walks such a chain by recursion."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import git, git_env
from helpers.packbuilder import BLOB, PackBuilder, make_delta, object_id

import packorder

DEPTH = 100_000


def chain_pack(depth: int, ref: bool) -> tuple[bytes, bytes]:
    """A pack of one blob and `depth` deltas, each against the one before; the pack and the
    id of the last object."""
    builder = PackBuilder()
    rest = b"".join(b"line %03d of a file edited at every version\n" % i for i in range(8))
    prev = b"version 000000\n" + rest
    at = builder.whole(BLOB, prev)
    for k in range(1, depth + 1):
        target = b"version %06d\n" % k + rest  # every version its own object
        delta = make_delta(prev, target)
        at = builder.ref_delta(object_id(BLOB, prev), delta) if ref else builder.ofs_delta(at, delta)
        prev = target
    return builder.build(), object_id(BLOB, prev)


@pytest.fixture(scope="module", params=["ofs", "ref"])
def deep(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    data, last = chain_pack(DEPTH, ref=request.param == "ref")
    pack = tmp_path_factory.mktemp(f"deep-{request.param}") / "deep.pack"
    pack.write_bytes(data)
    return pack, last


def test_a_100000_deep_chain_indexes_as_git_indexes_it(deep: tuple[Path, bytes], tmp_path: Path) -> None:
    pack, _ = deep
    theirs = tmp_path / "theirs.pack"
    shutil.copy(pack, theirs)
    git(None, "index-pack", "--rev-index", str(theirs))
    ours = tmp_path / "ours.pack"
    shutil.copy(pack, ours)
    budget = 8 << 20
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "index-pack", "--json", f"--max-memory={budget}", str(ours)],
        capture_output=True,
        env=git_env(),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    for ext in (".idx", ".rev"):
        assert ours.with_suffix(ext).read_bytes() == theirs.with_suffix(ext).read_bytes()
    import json

    result = json.loads(proc.stdout)
    assert result["objects"] == DEPTH + 1 and result["deltas"] == DEPTH
    assert result["stats"]["peak_kept_bytes"] <= budget and result["memory_budget"] == budget


def test_a_repository_holding_it_repacks(deep: tuple[Path, bytes], tmp_path: Path) -> None:
    """The repack cuts the chain at --depth (every 51st object made whole from it) and checks
    the objects it produced by reading them back: chains followed without recursion."""
    pack, last = deep
    repo = tmp_path / "repo.git"
    git(None, "init", "-q", "--bare", str(repo))
    git(repo, "index-pack", "--stdin", input=pack.read_bytes())
    git(repo, "update-ref", "refs/tags/last", last.hex())  # a blob tag: every version but the last is unreachable
    result = packorder.repack(repo)
    assert result.objects == DEPTH + 1 and result.cut_deltas > DEPTH // 60
    git(repo, "fsck", "--full")
    assert git(repo, "cat-file", "-t", last.hex()).strip() == b"blob"


def test_a_loose_object_declaring_2_gib_is_one_error_not_an_allocation(tmp_path: Path) -> None:
    """A loose object's header says 2 GiB (within the memory of any machine); its file holds
    a few bytes. The repack reading it fails with one line naming the file; nothing is
    allocated for it, nothing changed."""
    import zlib

    repo = tmp_path / "repo.git"
    git(None, "init", "-q", "--bare", str(repo))
    git(repo, "hash-object", "-w", "--stdin", input=b"a good object\n")
    liar = repo / "objects" / "ab" / ("cd" * 19)
    liar.parent.mkdir(parents=True, exist_ok=True)
    liar.write_bytes(zlib.compress(b"blob 2147483648\0only a few bytes"))
    listing = sorted(str(p) for p in (repo / "objects").rglob("*"))
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "repack", str(repo)], capture_output=True, text=True, env=git_env()
    )
    assert proc.returncode == 128, proc.stderr
    assert proc.stderr.count("\n") == 1 and str(liar) in proc.stderr and "more than its file can hold" in proc.stderr
    assert sorted(str(p) for p in (repo / "objects").rglob("*")) == listing
