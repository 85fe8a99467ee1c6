"""packorder index-pack against git index-pack, byte for byte."""

from __future__ import annotations

import itertools
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.commands import bare_repo, run_cli
from helpers.gitrepo import Repo, build_history, git, git_env
from helpers.packbuilder import BLOB, PackBuilder, make_delta

import packorder
from packorder import _native
from packorder.format import idx as idx_format
from packorder.settings import Limits

GiB = 1 << 30


def git_index(pack: Path, out_dir: Path, *extra: str) -> tuple[bytes, bytes]:
    out_dir.mkdir(parents=True, exist_ok=True)
    idx = out_dir / "git.idx"
    git(None, "index-pack", "--rev-index", *extra, "-o", str(idx), str(pack))
    return idx.read_bytes(), idx.with_suffix(".rev").read_bytes()


def our_index(pack: Path, out_dir: Path, **kw) -> tuple[packorder.indexer.index_pack.IndexResult, bytes, bytes]:
    out_dir.mkdir(parents=True, exist_ok=True)
    idx = out_dir / "ours.idx"
    result = packorder.index_pack(pack, output=idx, **kw)
    return result, idx.read_bytes(), idx.with_suffix(".rev").read_bytes()


@pytest.mark.parametrize("shape", ["ofs", "ref", "deep", "nodelta"])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_idx_and_rev_match_git(packs: dict[str, Path], tmp_path: Path, shape: str, threads: int) -> None:
    pack = packs[shape]
    want_idx, want_rev = git_index(pack, tmp_path / "git")
    result, idx, rev = our_index(pack, tmp_path / "ours", threads=threads)
    assert idx == want_idx
    assert rev == want_rev
    assert result.checksum == pack.name[len("pack-") : -len(".pack")]
    assert result.objects == len(idx_format.parse(idx).offsets)


def max_chain(pack: Path, tmp: Path) -> int:
    copy = tmp / pack.name
    shutil.copy(pack, copy)
    git(None, "index-pack", str(copy))
    out = git(None, "verify-pack", "-v", str(copy.with_suffix(".idx"))).decode()
    return max(int(line.split("=")[1].split(":")[0]) for line in out.splitlines() if line.startswith("chain length"))


def test_shapes_really_differ(packs: dict[str, Path], tmp_path: Path) -> None:
    """The fixtures exercise what they claim: REF deltas, long chains, no deltas."""

    def kinds(pack: Path) -> dict[int, int]:
        ix = _native.PackIndexer(str(pack), Limits(1, 1 << 30, 1 << 34))
        ix.scan()
        counts: dict[int, int] = {}
        for k in ix.entries().kinds:
            counts[k] = counts.get(k, 0) + 1
        return counts

    assert kinds(packs["ref"]).get(7, 0) > 100 and kinds(packs["ref"]).get(6, 0) == 0
    assert kinds(packs["ofs"]).get(6, 0) > 100 and kinds(packs["ofs"]).get(7, 0) == 0
    assert set(kinds(packs["nodelta"])) <= {1, 2, 3, 4}
    assert max_chain(packs["deep"], tmp_path) > max_chain(packs["ofs"], tmp_path)


@pytest.mark.parametrize("threads", [2, 3, 5])
def test_parallel_first_pass_splits_anywhere(packs: dict[str, Path], tmp_path: Path, threads: int) -> None:
    """Force the speculative split of pass 1 on a small pack: the table must not change."""
    pack = packs["ofs"]
    whole = _native.PackIndexer(str(pack), Limits(1, 1 << 30, 1 << 34))
    whole.scan()
    whole.resolve()
    split = _native.PackIndexer(str(pack), Limits(threads, 1 << 30, 1 << 34), split_min_bytes=0)
    split.scan()
    split.resolve()
    for record, fields in (
        ("entries", ("offsets", "kinds", "real_kinds", "sizes", "ids")),
        ("index_table", ("names", "crcs", "offsets", "rev_positions")),
    ):
        got, want = getattr(split, record)(), getattr(whole, record)()
        assert [getattr(got, f) for f in fields] == [getattr(want, f) for f in fields], record


def test_tiny_budget_rebuilds_bases_and_still_matches(packs: dict[str, Path], tmp_path: Path) -> None:
    pack = packs["deep"]
    want_idx, want_rev = git_index(pack, tmp_path / "git")
    result, idx, rev = our_index(pack, tmp_path / "ours", max_memory=4096, threads=2)
    assert (idx, rev) == (want_idx, want_rev)
    assert result.stats["evictions"] > 0 and result.stats["rebuilds"] > 0


def test_large_families_keep_within_budget_plus_largest_with_threads(tmp_path: Path) -> None:
    """Two threads under a budget smaller than two large bases: kept bases stay within the
    budget plus the largest object (a large family's subtree is resolved on one thread), and
    nothing is rebuilt."""
    pack = tmp_path / "chain.pack"
    maker = Path(__file__).resolve().parents[2] / "scripts" / "make_chain_pack.py"
    subprocess.run(
        [sys.executable, str(maker), str(pack), "--files", "2", "--size-mib", "2", "--depth", "8", "--siblings", "2"],
        check=True,
        capture_output=True,
    )
    want_idx, want_rev = git_index(pack, tmp_path / "git")
    budget, largest = 1 << 20, 2 << 20
    for _ in range(3):  # two threads meeting in one family is a matter of timing
        result, idx, rev = our_index(pack, tmp_path / "ours", max_memory=budget, threads=2)
        assert (idx, rev) == (want_idx, want_rev)
        assert result.stats["peak_kept_bytes"] <= budget + largest
        assert result.stats["rebuilds"] == 0


def test_a_base_is_released_before_its_deepest_child_s_chain(tmp_path: Path) -> None:
    """A base whose first child (in pack order) heads a chain and whose second is a leaf: the
    leaf is applied first, so the base is released as the chain's head is made and no two
    objects are ever kept at once; in pack order the base stayed through the whole chain."""
    size = 100_000
    rng = random.Random(7)
    versions = [rng.randbytes(size)]
    for _ in range(6):
        v = bytearray(versions[-1])
        v[rng.randrange(size)] ^= 0xFF
        versions.append(bytes(v))
    leaf = bytes([versions[0][0] ^ 1]) + versions[0][1:]
    pb = PackBuilder()
    at = [pb.whole(BLOB, versions[0])]
    for older, newer in itertools.pairwise(versions):
        at.append(pb.ofs_delta(at[-1], make_delta(older, newer)))
    pb.ofs_delta(at[0], make_delta(versions[0], leaf))
    pack = tmp_path / "fork.pack"
    pack.write_bytes(pb.build())
    want_idx, want_rev = git_index(pack, tmp_path / "git")
    result, idx, rev = our_index(pack, tmp_path / "ours", threads=1)
    assert (idx, rev) == (want_idx, want_rev)
    assert size <= result.stats["peak_kept_bytes"] < 2 * size


def test_large_objects_are_streamed(big_pack: Path, tmp_path: Path) -> None:
    want_idx, want_rev = git_index(big_pack, tmp_path / "git")
    result, idx, rev = our_index(big_pack, tmp_path / "ours", threads=2)
    assert (idx, rev) == (want_idx, want_rev)
    # Peak memory stays within budget plus the largest object (40 MiB) and the interpreter.
    assert result.peak_rss_bytes < result.memory_budget + (40 << 20) + (200 << 20)


def test_index_version_1(packs: dict[str, Path], tmp_path: Path) -> None:
    pack = packs["ofs"]
    want_idx, _ = git_index(pack, tmp_path / "git", "--index-version=1")
    result, idx, _ = our_index(pack, tmp_path / "ours", index_version=1)
    assert idx == want_idx and result.index_version == 1


@pytest.mark.parametrize("spec", ["2,0x400", "1,0x400", "2,0"])
def test_forced_64bit_offsets(packs: dict[str, Path], tmp_path: Path, spec: str) -> None:
    """Git's --index-version=V,LIMIT puts offsets above LIMIT in the 64-bit table (and makes a
    v1 request a v2 index, as a real pack over 2 GiB does)."""
    pack = packs["ofs"]
    want_idx, want_rev = git_index(pack, tmp_path / "git", f"--index-version={spec}")
    version, limit = spec.split(",")
    _, idx, rev = our_index(pack, tmp_path / "ours", index_version=int(version), off32_limit=int(limit, 0))
    assert (idx, rev) == (want_idx, want_rev)
    parsed = idx_format.parse(idx)
    assert parsed.version == 2


def write_huge_pack(path: Path) -> None:
    """A pack over 2 GiB: one stored (uncompressed) blob of 2 GiB + 1 MiB, then small objects
    and a delta whose offsets need the 64-bit table."""
    import hashlib
    import zlib

    from helpers.packbuilder import BLOB, OFS_DELTA, make_delta, ofs_varint, type_size

    size = 2 * GiB + (1 << 20)
    sha = hashlib.sha1()
    with open(path, "wb") as f:

        def put(data: bytes) -> None:
            sha.update(data)
            f.write(data)

        put(b"PACK\x00\x00\x00\x02\x00\x00\x00\x04")
        put(type_size(BLOB, size))
        z = zlib.compressobj(0)
        chunk = bytes(range(256)) * 4096
        left = size
        while left:
            n = min(left, len(chunk))
            put(z.compress(chunk[:n]))
            left -= n
        put(z.flush())
        small = b"small object past two gigabytes\n" * 10
        at_small = f.tell()
        put(type_size(BLOB, len(small)) + zlib.compress(small))
        other = b"another blob\n"
        put(type_size(BLOB, len(other)) + zlib.compress(other))
        delta = make_delta(small, small + b"one more line\n")
        at_delta = f.tell()
        put(type_size(OFS_DELTA, len(delta)) + ofs_varint(at_delta - at_small) + zlib.compress(delta))
        f.write(sha.digest())


def test_offsets_past_2gib(tmp_path: Path) -> None:
    pack = tmp_path / "huge.pack"
    write_huge_pack(pack)
    try:
        want_idx, want_rev = git_index(pack, tmp_path / "git")
        result, idx, rev = our_index(pack, tmp_path / "ours", threads=2)
        assert (idx, rev) == (want_idx, want_rev)
        parsed = idx_format.parse(idx)
        assert sum(1 for o in parsed.offsets if o >= 2 * GiB) == 3
        assert result.deltas == 1
    finally:
        pack.unlink()


def test_stdin_stores_pack_in_repository(packs: dict[str, Path], tmp_path: Path) -> None:
    pack = packs["ofs"]
    ours = bare_repo(tmp_path / "ours.git")
    theirs = bare_repo(tmp_path / "theirs.git")
    data = pack.read_bytes()
    proc = run_cli("index-pack", "--stdin", "--repo", str(ours), input=data)
    assert proc.returncode == 0, proc.stderr
    # Git writes a .rev by default since 2.41: asked for, so that 2.39 writes one too.
    out = git(theirs, "-c", "pack.writeReverseIndex=true", "index-pack", "--stdin", input=data).decode()
    assert proc.stdout.decode() == out
    name = out.split()[1]
    for ext in ("pack", "idx", "rev"):
        mine = ours / "objects" / "pack" / f"pack-{name}.{ext}"
        assert mine.read_bytes() == (theirs / "objects" / "pack" / f"pack-{name}.{ext}").read_bytes()
    assert [p.name for p in (ours / "objects" / "pack").iterdir() if p.name.startswith("tmp")] == []
    git(ours, "verify-pack", str(ours / "objects" / "pack" / f"pack-{name}.idx"))


def _plant_loose(repo: Path, oid: str, kind: bytes, content: bytes) -> None:
    """A loose object file named `oid` holding other content (what a SHA-1 collision, or a
    corrupt repository, would look like to index-pack)."""
    import zlib

    path = repo / "objects" / oid[:2] / oid[2:]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(zlib.compress(kind + b" %d\0" % len(content) + content))


def _a_blob_of(pack: Path, tmp: Path) -> str:
    copy = tmp / pack.name
    shutil.copy(pack, copy)
    git(None, "index-pack", str(copy))
    lines = git(None, "verify-pack", "-v", str(copy.with_suffix(".idx"))).decode().splitlines()
    return next(line.split()[0] for line in lines if len(line.split()) >= 5 and line.split()[1] == "blob")


def test_stdin_refuses_a_pack_whose_object_differs_from_the_repositorys(packs: dict[str, Path], tmp_path: Path) -> None:
    pack = packs["ofs"]
    oid = _a_blob_of(pack, tmp_path)
    ours = bare_repo(tmp_path / "ours.git")
    theirs = bare_repo(tmp_path / "theirs.git")
    for repo in (ours, theirs):
        _plant_loose(repo, oid, b"blob", b"not the pack's content\n")
    data = pack.read_bytes()
    proc = run_cli("index-pack", "--stdin", "--repo", str(ours), input=data)
    assert proc.returncode != 0
    err = proc.stderr.decode()
    assert err.startswith(f"fatal: SHA1 COLLISION FOUND WITH {oid} !") and err.count("\n") == 1, err
    assert list((ours / "objects" / "pack").iterdir()) == []
    # Git, the reference, refuses it the same way.
    git_proc = subprocess.run(
        ["git", "-C", str(theirs), "index-pack", "--stdin"], input=data, capture_output=True, env=git_env()
    )
    assert git_proc.returncode != 0 and f"SHA1 COLLISION FOUND WITH {oid}" in git_proc.stderr.decode()


def test_an_alternates_differing_copy_is_a_collision_too(packs: dict[str, Path], tmp_path: Path) -> None:
    """Git looks objects up in alternates as well: a different copy there is refused alike."""
    pack = packs["ofs"]
    oid = _a_blob_of(pack, tmp_path)
    shared = bare_repo(tmp_path / "shared.git")
    _plant_loose(shared, oid, b"blob", b"the alternate's own content\n")
    ours = bare_repo(tmp_path / "ours.git")
    (ours / "objects" / "info").mkdir(exist_ok=True)
    (ours / "objects" / "info" / "alternates").write_text(str(shared / "objects") + "\n")
    proc = run_cli("index-pack", "--stdin", "--repo", str(ours), input=pack.read_bytes())
    assert proc.returncode == 128
    assert proc.stderr.decode().startswith(f"fatal: SHA1 COLLISION FOUND WITH {oid} !")
    assert list((ours / "objects" / "pack").iterdir()) == []


def test_objects_the_repository_already_has_are_accepted(packs: dict[str, Path], tmp_path: Path) -> None:
    """The same objects, loose and packed, in the repository: no collision, same result as Git."""
    pack = packs["ofs"]
    oid = _a_blob_of(pack, tmp_path)
    repo = bare_repo(tmp_path / "ours.git")
    shutil.copy(pack, repo / "objects" / "pack" / pack.name)
    git(repo, "index-pack", str(repo / "objects" / "pack" / pack.name))
    content = git(repo, "cat-file", "blob", oid)
    _plant_loose(repo, oid, b"blob", content)
    proc = run_cli("index-pack", "--stdin", "--repo", str(repo), input=pack.read_bytes())
    assert proc.returncode == 0, proc.stderr
    # Indexing a pack the repository holds, from inside it, skips that pack itself.
    idx = tmp_path / "again.idx"
    proc = run_cli("index-pack", "-o", str(idx), str(repo / "objects" / "pack" / pack.name), cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert idx.read_bytes() == (repo / "objects" / "pack" / pack.name).with_suffix(".idx").read_bytes()


@pytest.mark.parametrize("keep", ["--keep=fetched by test", "--keep"])
def test_stdin_keep(packs: dict[str, Path], tmp_path: Path, keep: str) -> None:
    data = packs["ofs"].read_bytes()
    ours = bare_repo(tmp_path / "ours.git")
    theirs = bare_repo(tmp_path / "theirs.git")
    proc = run_cli("index-pack", "--stdin", keep, "--repo", str(ours), input=data)
    assert proc.returncode == 0, proc.stderr
    out = git(theirs, "index-pack", "--stdin", keep, input=data).decode()
    assert proc.stdout.decode() == out
    name = out.split()[1]
    keep = f"objects/pack/pack-{name}.keep"
    assert (ours / keep).read_bytes() == (theirs / keep).read_bytes()


@pytest.fixture(scope="module")
def thin_setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Repo, Path, bytes, str]:
    """A repository, a clone of it at an older commit, and a thin pack of what is newer."""
    root = tmp_path_factory.mktemp("thin")
    repo = build_history(root / "upstream", commits=40)
    old = repo.run("rev-parse", "HEAD~15").decode().strip()
    clone = root / "clone.git"
    git(None, "clone", "-q", "--bare", "--no-local", str(repo.path), str(clone))
    git(clone, "update-ref", "refs/heads/main", old)
    git(clone, "tag", "-l")
    for tag in git(clone, "tag", "-l").decode().split():
        git(clone, "tag", "-d", tag)
    for br in git(clone, "for-each-ref", "--format=%(refname)", "refs/heads/").decode().split():
        if br != "refs/heads/main":
            git(clone, "update-ref", "-d", br)
    git(clone, "reflog", "expire", "--expire=now", "--all")
    git(clone, "gc", "-q", "--prune=now")
    thin = git(repo.path, "pack-objects", "--thin", "--stdout", "--revs", "-q", input=f"main\n^{old}\n".encode())
    return repo, clone, thin, old


def test_fix_thin_completes_pack_like_git(thin_setup: tuple[Repo, Path, bytes, str], tmp_path: Path) -> None:
    repo, clone, thin, _ = thin_setup
    ours = tmp_path / "ours.git"
    theirs = tmp_path / "theirs.git"
    shutil.copytree(clone, ours)
    shutil.copytree(clone, theirs)
    proc = run_cli("index-pack", "--stdin", "--fix-thin", "--repo", str(ours), input=thin)
    assert proc.returncode == 0, proc.stderr
    name = proc.stdout.decode().split()[1]
    git_out = git(theirs, "index-pack", "--stdin", "--fix-thin", input=thin).decode().split()[1]
    ours_pack = ours / "objects" / "pack" / f"pack-{name}.pack"
    theirs_pack = theirs / "objects" / "pack" / f"pack-{git_out}.pack"

    def objects(idx: Path) -> list[str]:
        lines = git(None, "verify-pack", "-v", str(idx)).decode().splitlines()
        return sorted(line.split()[0] for line in lines if len(line.split()) >= 5 and len(line.split()[0]) == 40)

    assert objects(ours_pack.with_suffix(".idx")) == objects(theirs_pack.with_suffix(".idx"))
    # The bases appended are Git's, in Git's order: every object at the same place in the pack.
    assert pack_order(ours_pack) == pack_order(theirs_pack)
    # Git indexes our completed pack to exactly our idx and rev.
    want_idx, want_rev = git_index(ours_pack, tmp_path / "check")
    assert ours_pack.with_suffix(".idx").read_bytes() == want_idx
    assert ours_pack.with_suffix(".rev").read_bytes() == want_rev
    git(ours, "update-ref", "refs/heads/main", repo.run("rev-parse", "HEAD").decode().strip())
    git(ours, "fsck", "--full", "--strict")


def pack_order(pack: Path) -> list[str]:
    """The ids of `pack`'s objects in pack order."""
    lines = git(pack.parent, "show-index", input=pack.with_suffix(".idx").read_bytes()).decode().splitlines()
    return [oid for _, oid in sorted((int(line.split()[0]), line.split()[1]) for line in lines)]


def test_fix_thin_refuses_a_base_that_is_not_its_id(thin_setup: tuple[Repo, Path, bytes, str], tmp_path: Path) -> None:
    """A repository object whose content does not hash to its id (a loose file overwritten)
    is not appended: one line names it, and nothing of the pack is left."""
    import zlib

    from packorder import _native

    _, clone, thin, _ = thin_setup
    pack = tmp_path / "thin.pack"
    pack.write_bytes(thin)
    probe = _native.PackIndexer(str(pack), Limits(1, 1 << 26, 1 << 40), True, False)
    probe.scan()
    probe.resolve()
    first = probe.missing_bases()[0].hex()
    ours = tmp_path / "ours.git"
    shutil.copytree(clone, ours)
    # Every object loose, so that the overwritten file is the one Git reads.
    (packed,) = (ours / "objects" / "pack").glob("*.pack")
    data = packed.read_bytes()
    for p in (ours / "objects" / "pack").iterdir():
        p.unlink()
    git(ours, "unpack-objects", "-q", input=data)
    loose = ours / "objects" / first[:2] / first[2:]
    kind = git(ours, "cat-file", "-t", first).decode().strip()
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(f"{kind} 6\0wrong\n".encode()))
    proc = run_cli("index-pack", "--stdin", "--fix-thin", "--repo", str(ours), input=thin)
    assert proc.returncode == 128
    assert proc.stderr.decode() == f"fatal: object {first} in the repository is corrupt\n"
    assert list((ours / "objects" / "pack").iterdir()) == []


def test_thin_pack_without_fix_thin_fails(thin_setup: tuple[Repo, Path, bytes, str], tmp_path: Path) -> None:
    thin = thin_setup[2]
    pack = tmp_path / "thin.pack"
    pack.write_bytes(thin)
    proc = run_cli("index-pack", str(pack))
    assert proc.returncode == 128
    err = proc.stderr.decode()
    assert err.startswith("fatal: pack has ") and "unresolved delta" in err and "offset" in err
    assert len(err.strip().splitlines()) == 1
    assert not pack.with_suffix(".idx").exists() and not pack.with_suffix(".rev").exists()


def test_verify(packs: dict[str, Path], tmp_path: Path) -> None:
    pack = tmp_path / "p.pack"
    shutil.copy(packs["ofs"], pack)
    git(None, "index-pack", "--rev-index", str(pack))
    assert run_cli("index-pack", "--verify", str(pack)).returncode == 0
    idx = pack.with_suffix(".idx")
    data = bytearray(idx.read_bytes())
    data[2000] ^= 1
    idx.chmod(0o644)
    idx.write_bytes(bytes(data))
    proc = run_cli("index-pack", "--verify", str(pack))
    assert proc.returncode == 128
    assert "index" in proc.stderr.decode() and len(proc.stderr.decode().strip().splitlines()) == 1


def test_cli_prints_checksum_and_json(packs: dict[str, Path], tmp_path: Path) -> None:
    pack = tmp_path / "p.pack"
    shutil.copy(packs["ref"], pack)
    proc = run_cli("index-pack", str(pack))
    assert proc.returncode == 0
    assert proc.stdout.decode().strip() == packs["ref"].stem[len("pack-") :]
    import json

    proc = run_cli("index-pack", "--json", "-o", str(tmp_path / "x.idx"), str(pack))
    doc = json.loads(proc.stdout)
    assert doc["objects"] > 0 and doc["deltas"] > 0 and doc["peak_rss_bytes"] > 0 and "resolve" in doc["seconds"]


def test_output_name_must_end_in_idx_when_writing_rev(packs: dict[str, Path], tmp_path: Path) -> None:
    proc = run_cli("index-pack", "-o", str(tmp_path / "noext"), str(packs["ofs"]))
    assert proc.returncode == 129
    assert "does not end with '.idx'" in proc.stderr.decode().splitlines()[0]


def test_packorder_script_indexes_without_click(packs: dict[str, Path], tmp_path: Path) -> None:
    """The `packorder` entry point parses index-pack without loading click, numpy or
    `inspect` (which `dataclasses` loads): their memory is part of the target against git
    index-pack. And it gives the same result."""
    idx = tmp_path / "x.idx"
    code = (
        "import sys; from packorder.cli.launch import main; "
        f"sys.argv = ['packorder', 'index-pack', '-o', {str(idx)!r}, {str(packs['ofs'])!r}]; "
        "main(); print([m for m in ('click', 'numpy', 'inspect') if m in sys.modules], file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=git_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.decode().strip() == "[]"
    want_idx, want_rev = git_index(packs["ofs"], tmp_path / "git")
    assert (idx.read_bytes(), idx.with_suffix(".rev").read_bytes()) == (want_idx, want_rev)
    assert proc.stdout.decode().strip() == idx_format.read(str(idx)).pack_checksum.hex()
    # As a push runs it: the pack on standard input, into a repository (its collision check lists the packs).
    repo = tmp_path / "pushed.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    code = code.replace(f"'-o', {str(idx)!r}, {str(packs['ofs'])!r}", "'--stdin'")
    with open(packs["ofs"], "rb") as stdin:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=git_env(), cwd=repo, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.decode().strip() == "[]"


def test_usage_errors_exit_129(packs: dict[str, Path]) -> None:
    assert run_cli("index-pack", "--fix-thin", str(packs["ofs"])).returncode == 129
    assert run_cli("index-pack", "--bogus").returncode == 129
    proc = subprocess.run([sys.executable, "-m", "packorder", "index-pack", "--threads=x"], capture_output=True)
    assert proc.returncode == 129 and b"--threads" in proc.stderr.splitlines()[0]


def test_output_in_a_missing_directory_is_one_line(packs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "no" / "such" / "x.idx"
    proc = run_cli("index-pack", "-o", str(out), str(packs["ofs"]))
    assert proc.returncode == 128
    assert (
        proc.stderr.decode()
        == f"fatal: {out.with_suffix('.rev')}: cannot create a file there: No such file or directory\n"
    )
    assert not out.parent.exists()


def test_reading_many_objects_and_leaving_early_does_not_hang(packs: dict[str, Path], tmp_path: Path) -> None:
    """cat-file blocked on its full output and our feeder blocked on its full input: leaving
    the read early must stop both (the collision check leaves at the first collision)."""
    repo = bare_repo(tmp_path / "many.git")
    pack = packs["ofs"]
    shutil.copy(pack, repo / "objects" / "pack" / pack.name)
    git(repo, "index-pack", str(repo / "objects" / "pack" / pack.name))
    oid = _a_blob_of(pack, tmp_path)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from packorder import gitcmd\n"
        "with gitcmd.ObjectReader(Path(sys.argv[1])) as reader:\n"
        "    for n, _ in enumerate(reader.read_many([sys.argv[2]] * 50000)):\n"
        "        if n == 3:\n"
        "            break\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(repo), oid], timeout=60, capture_output=True)
    assert proc.returncode == 0, proc.stderr
