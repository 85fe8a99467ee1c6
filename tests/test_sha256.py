"""SHA-256 repositories (Git 3.0's default) through index-pack, against `git index-pack
--object-format=sha256`: the same .idx and .rev byte for byte, pack files and --stdin,
thin packs, --verify, the object checks, and broken SHA-256 packs refused in one line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.commands import run_cli
from helpers.gitrepo import Repo, build_history, git, git_env
from helpers.packbuilder import (
    BLOB,
    COMMIT,
    REF_DELTA,
    TREE,
    PackBuilder,
    make_delta,
    object_id,
    type_size,
    with_trailer,
)

import packorder
from packorder import _native
from packorder.format import idx as idx_format
from packorder.format.object_format import SHA256
from packorder.settings import Limits

IDENT = "A U Thor <author@example.com> 1234567890 +0000"


@pytest.fixture(scope="module")
def sha256_repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    repo = build_history(tmp_path_factory.mktemp("sha256") / "repo", commits=30, object_format="sha256")
    repo.run("repack", "-adf", "-q")
    return repo


@pytest.fixture(scope="module")
def sha256_packs(sha256_repo: Repo, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The repository's objects as packs of two shapes, each alone in a directory."""
    out = {}
    for name, args in {"ofs": [], "ref": ["-c", "repack.useDeltaBaseOffset=false"]}.items():
        clone = tmp_path_factory.mktemp(f"sha256-{name}") / "repo"
        git(None, "clone", "-q", "--no-local", str(sha256_repo.path), str(clone))
        git(clone, *args, "repack", "-adf", "-q")
        (pack,) = sorted((clone / ".git" / "objects" / "pack").glob("*.pack"))
        dest = tmp_path_factory.mktemp(f"sha256-packfile-{name}") / pack.name
        shutil.copy(pack, dest)
        out[name] = dest
    return out


def git_index(pack: Path, out_dir: Path, *extra: str) -> tuple[bytes, bytes]:
    out_dir.mkdir(parents=True, exist_ok=True)
    idx = out_dir / "git.idx"
    git(None, "index-pack", "--object-format=sha256", "--rev-index", *extra, "-o", str(idx), str(pack))
    return idx.read_bytes(), idx.with_suffix(".rev").read_bytes()


def one_fatal_line(proc: subprocess.CompletedProcess) -> str:
    err = proc.stderr.decode()
    assert proc.returncode == 128, err
    assert err.startswith("fatal: ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("shape", ["ofs", "ref"])
@pytest.mark.parametrize("threads", [1, 2])
def test_idx_and_rev_match_git(sha256_packs: dict[str, Path], tmp_path: Path, shape: str, threads: int) -> None:
    pack = sha256_packs[shape]
    want_idx, want_rev = git_index(pack, tmp_path / "git")
    idx = tmp_path / "ours" / "ours.idx"
    idx.parent.mkdir()
    result = packorder.index_pack(pack, output=idx, object_format="sha256", threads=threads)
    assert idx.read_bytes() == want_idx
    assert idx.with_suffix(".rev").read_bytes() == want_rev
    assert len(result.checksum) == 64 and result.deltas > 0


def test_parallel_first_pass_splits_a_sha256_pack_anywhere(sha256_packs: dict[str, Path]) -> None:
    tables = []
    for threads, split in ((1, None), (3, 0)):
        indexer = _native.PackIndexer(
            str(sha256_packs["ref"]), Limits(threads, 1 << 30, 1 << 34), split_min_bytes=split, object_format="sha256"
        )
        indexer.scan()
        indexer.resolve()
        entries, table = indexer.entries(), indexer.index_table()
        columns = [entries.offsets, entries.kinds, entries.real_kinds, entries.sizes, entries.ids]
        tables.append([*columns, table.names, table.crcs, table.offsets, table.rev_positions])
    assert tables[0] == tables[1]


def test_index_version_1_as_git_writes_it(sha256_packs: dict[str, Path], tmp_path: Path) -> None:
    """Git writes v1 for SHA-256 too (ids of 32 bytes in its pairs)."""
    want, _ = git_index(sha256_packs["ofs"], tmp_path / "git", "--index-version=1")
    ours = tmp_path / "ours.idx"
    assert (
        run_cli(
            "index-pack", "--object-format=sha256", "--index-version=1", "-o", str(ours), str(sha256_packs["ofs"])
        ).returncode
        == 0
    )
    assert ours.read_bytes() == want
    assert idx_format.read(str(ours), SHA256).version == 1


def test_the_repositorys_hash_is_the_packs(sha256_repo: Repo, sha256_packs: dict[str, Path], tmp_path: Path) -> None:
    """Inside a SHA-256 repository no option is needed."""
    pack = tmp_path / "p.pack"
    shutil.copy(sha256_packs["ref"], pack)
    want_idx, want_rev = git_index(pack, tmp_path / "git")
    proc = run_cli("index-pack", str(pack), cwd=sha256_repo.path)
    assert proc.returncode == 0, proc.stderr
    assert pack.with_suffix(".idx").read_bytes() == want_idx
    assert pack.with_suffix(".rev").read_bytes() == want_rev


@pytest.mark.parametrize("ref_format", ["files", "reftable"])
def test_stdin_into_a_sha256_repository(sha256_packs: dict[str, Path], tmp_path: Path, ref_format: str) -> None:
    data = sha256_packs["ofs"].read_bytes()
    outs = {}
    for who in ("git", "ours"):
        repo = Repo(tmp_path / who, bare=True, object_format="sha256", ref_format=ref_format)
        if who == "git":
            out = git(repo.path, "index-pack", "--stdin", input=data)
        else:
            proc = run_cli("index-pack", "--stdin", "--repo", str(repo.path), input=data)
            assert proc.returncode == 0, proc.stderr
            out = proc.stdout
        outs[who] = out
    assert outs["ours"] == outs["git"]
    name = outs["git"].decode().split()[1]
    for ext in ("pack", "idx", "rev"):
        f = f"objects/pack/pack-{name}.{ext}"
        assert (tmp_path / "ours" / f).read_bytes() == (tmp_path / "git" / f).read_bytes(), ext
    git(tmp_path / "ours", "fsck", "--full")


def test_fix_thin_completes_a_sha256_pack_like_git(sha256_repo: Repo, tmp_path: Path) -> None:
    old = sha256_repo.run("rev-parse", "HEAD~12").decode().strip()
    thin = sha256_repo.run("pack-objects", "--thin", "--stdout", "--revs", "-q", input=f"main\n^{old}\n".encode())
    results = {}
    for who in ("git", "ours"):
        repo = Repo(tmp_path / who, bare=True, object_format="sha256")
        sha256_repo.run("push", "-q", str(repo.path), f"{old}:refs/heads/main")
        if who == "git":
            results[who] = git(repo.path, "index-pack", "--stdin", "--fix-thin", input=thin).decode().split()[1]
        else:
            proc = run_cli("index-pack", "--stdin", "--fix-thin", "--repo", str(repo.path), input=thin)
            assert proc.returncode == 0, proc.stderr
            results[who] = proc.stdout.decode().split()[1]
    ours = tmp_path / "ours" / "objects" / "pack" / f"pack-{results['ours']}.pack"
    theirs = tmp_path / "git" / "objects" / "pack" / f"pack-{results['git']}.pack"

    def in_pack_order(pack: Path) -> list[str]:
        lines = git(pack.parent, "show-index", "--object-format=sha256", input=pack.with_suffix(".idx").read_bytes())
        return [
            oid for _, oid in sorted((int(line.split()[0]), line.split()[1]) for line in lines.decode().splitlines())
        ]

    # The same bases appended in Git's order (their compression may differ: see docs).
    assert in_pack_order(ours) == in_pack_order(theirs)
    want_idx, want_rev = git_index(ours, tmp_path / "check")
    assert ours.with_suffix(".idx").read_bytes() == want_idx
    assert ours.with_suffix(".rev").read_bytes() == want_rev
    git(tmp_path / "ours", "update-ref", "refs/heads/main", sha256_repo.run("rev-parse", "HEAD").decode().strip())
    git(tmp_path / "ours", "fsck", "--full", "--strict")


def test_verify_and_verify_stat(sha256_repo: Repo, sha256_packs: dict[str, Path], tmp_path: Path) -> None:
    pack = tmp_path / "p.pack"
    shutil.copy(sha256_packs["ref"], pack)
    git(None, "index-pack", "--object-format=sha256", "--rev-index", str(pack))
    proc = run_cli("index-pack", "--verify-stat", str(pack), cwd=sha256_repo.path)
    assert proc.returncode == 0, proc.stderr
    listing = git(sha256_repo.path, "verify-pack", "-v", str(pack.with_suffix(".idx"))).decode()
    assert proc.stdout.decode() == listing.rsplit("\n", 2)[0] + "\n"  # less Git's "PACK: ok" line
    idx = pack.with_suffix(".idx")
    data = bytearray(idx.read_bytes())
    data[1100] ^= 1
    idx.chmod(0o644)
    idx.write_bytes(bytes(data))
    one_fatal_line(run_cli("index-pack", "--verify", str(pack), cwd=sha256_repo.path))


def sha256_pack(objects: list[tuple[int, bytes]]) -> bytes:
    b = PackBuilder(hash="sha256")
    for kind, data in objects:
        b.whole(kind, data)
    return b.build()


def run_both(tmp_path: Path, pack: bytes, *args: str) -> tuple[subprocess.CompletedProcess, ...]:
    results = []
    for who in ("git", "ours"):
        repo = tmp_path / who
        git(None, "init", "-q", "--bare", "--object-format=sha256", str(repo))
        path = tmp_path / f"{who}.pack"
        path.write_bytes(pack)
        cmd = ["git"] if who == "git" else []
        if who == "git":
            proc = subprocess.run([*cmd, "index-pack", *args, str(path)], capture_output=True, cwd=repo, env=git_env())
        else:
            proc = run_cli("index-pack", *args, str(path), cwd=repo)
        results.append(proc)
    return tuple(results)


@pytest.mark.parametrize(
    "case",
    ["good", "missing email", "bad tree id", "a tree missing from the pack", "a short tree entry"],
)
def test_strict_checks_of_sha256_objects_as_git(tmp_path: Path, case: str) -> None:
    blob = b"hello\n"
    good_tree = b"100644 hello\0" + object_id(BLOB, blob, "sha256")
    tree_id = object_id(TREE, good_tree, "sha256")
    objects = {
        "good": [
            (BLOB, blob),
            (TREE, good_tree),
            (COMMIT, f"tree {tree_id.hex()}\nauthor {IDENT}\ncommitter {IDENT}\n\nm\n".encode()),
        ],
        "missing email": [
            (BLOB, blob),
            (TREE, good_tree),
            (COMMIT, f"tree {tree_id.hex()}\nauthor A U Thor 1 +0000\ncommitter {IDENT}\n\nm\n".encode()),
        ],
        # A SHA-1-sized id where a SHA-256 one belongs.
        "bad tree id": [(COMMIT, f"tree {tree_id.hex()[:40]}\nauthor {IDENT}\ncommitter {IDENT}\n\nm\n".encode())],
        "a tree missing from the pack": [
            (COMMIT, f"tree {tree_id.hex()}\nauthor {IDENT}\ncommitter {IDENT}\n\nm\n".encode())
        ],
        # An entry whose id has 20 bytes: the tree cannot be parsed as SHA-256.
        "a short tree entry": [(TREE, b"100644 hello\0" + object_id(BLOB, blob))],
    }[case]
    theirs, ours = run_both(tmp_path, sha256_pack(objects), "--strict")
    assert (ours.returncode, ours.stderr.decode(), ours.stdout) == (
        theirs.returncode,
        theirs.stderr.decode(),
        theirs.stdout,
    )


def test_a_sha256_pack_read_as_sha1_and_back_is_one_line(
    sha256_packs: dict[str, Path], packs: dict[str, Path], tmp_path: Path
) -> None:
    for pack, option, named in (
        (sha256_packs["ofs"], "--object-format=sha1", "sha256"),
        (packs["ofs"], "--object-format=sha256", "sha1"),
    ):
        copy = tmp_path / named / "p.pack"
        copy.parent.mkdir()
        shutil.copy(pack, copy)
        err = one_fatal_line(run_cli("index-pack", option, str(copy), cwd=tmp_path))
        assert f"this is a {named} pack" in err and f"--object-format={named}" in err and str(copy) in err
        assert sorted(p.name for p in copy.parent.iterdir()) == ["p.pack"]


def test_broken_sha256_packs_are_one_line(tmp_path: Path) -> None:
    blob = b"base object\n" * 20
    b = PackBuilder(hash="sha256")
    b.whole(BLOB, blob)
    b.ref_delta(object_id(BLOB, blob, "sha256"), make_delta(blob, blob + b"more\n"))
    good = b.build()
    # A trailer that is not the pack's checksum.
    bad_trailer = good[:-1] + bytes([good[-1] ^ 1])
    # A REF_DELTA whose base id is cut at 20 of its 32 bytes by the end of the pack.
    cut = PackBuilder(hash="sha256")
    cut.whole(BLOB, blob)
    cut.raw(type_size(REF_DELTA, 9) + object_id(BLOB, blob, "sha256")[:20])
    truncated_base = cut.build()
    # A byte of an entry changed, the trailer made to match: a corrupt entry, not a trailer.
    body = bytearray(good)
    body[14] ^= 0x40
    bad_entry = with_trailer(bytes(body), "sha256")
    for name, data in {"trailer": bad_trailer, "cut base": truncated_base, "entry": bad_entry}.items():
        pack = tmp_path / name / "p.pack"
        pack.parent.mkdir()
        pack.write_bytes(data)
        err = one_fatal_line(run_cli("index-pack", "--object-format=sha256", str(pack), cwd=tmp_path))
        assert str(pack) in err, err
        if name != "trailer":
            assert "offset" in err, err
        assert sorted(p.name for p in pack.parent.iterdir()) == ["p.pack"], name
        # Git refuses it too.
        assert (
            subprocess.run(
                ["git", "index-pack", "--object-format=sha256", str(pack)], capture_output=True, cwd=tmp_path
            ).returncode
            != 0
        )


def test_a_sha1_index_is_not_read_as_sha256(packs: dict[str, Path], tmp_path: Path) -> None:
    pack = tmp_path / "p.pack"
    shutil.copy(packs["ofs"], pack)
    git(None, "index-pack", str(pack))
    with pytest.raises(packorder.CorruptPackError, match="not a sha256 index"):
        idx_format.read(str(pack.with_suffix(".idx")), SHA256)


def test_a_compatibility_hash_is_refused_by_name(sha256_packs: dict[str, Path], tmp_path: Path) -> None:
    repo = Repo(tmp_path / "compat", bare=True, object_format="sha256")
    git(repo.path, "config", "extensions.compatObjectFormat", "sha1")
    proc = run_cli("index-pack", "--stdin", "--repo", str(repo.path), input=sha256_packs["ofs"].read_bytes())
    assert "extensions.compatObjectFormat" in one_fatal_line(proc)
    assert list((repo.path / "objects" / "pack").iterdir()) == []
    for command in ("repack", "gc"):
        assert "extensions.compatObjectFormat" in one_fatal_line(run_cli(command, str(repo.path)))
