"""repack, gc, seekstats and experiment on the repositories Git 3.0 makes: SHA-256 object names
with files or reftable refs, and SHA-1 with reftable (SHA-1 with files is every other test's):
the objects kept, `git fsck --full` clean, the bitmap passing `git rev-list --test-bitmap`,
the cruft pack read by Git's own gc."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, all_ids, build_history, git, git_env

import packorder
from packorder.orders.catalog import CATALOG


@pytest.fixture(
    scope="module", params=[("sha256", "files"), ("sha256", "reftable"), ("sha1", "reftable")], ids="-".join
)
def source(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bare repository of the given object and ref formats, in several packs and loose
    objects, with an unreachable blob."""
    object_format, ref_format = request.param
    work = build_history(tmp_path_factory.mktemp("formats-work") / "repo", commits=30, object_format=object_format)
    bare = tmp_path_factory.mktemp(f"{object_format}-{ref_format}") / "repo.git"
    Repo(bare, bare=True, object_format=object_format, ref_format=ref_format)
    # Fetched, not pushed: the receive-pack of Git's development after 2.55 leaves its
    # --keep lock on the pushed pack, and a repack keeps that pack as it is.
    git(bare, "fetch", "-q", str(work.path), "+refs/*:refs/*")
    git(bare, "repack", "-d", "-q")
    git(bare, "hash-object", "-w", "--stdin", input=b"unreachable object\n")
    return bare


def copy_of(source: Path, where: Path) -> Path:
    dest = where / "repo.git"
    shutil.copytree(source, dest)
    return dest


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "packorder", *args], capture_output=True, env=git_env())


def reachable(repo: Path) -> set[str]:
    out = git(repo, "rev-list", "--objects", "--all", "--reflog").decode()
    return {line.split()[0] for line in out.splitlines()}


def test_the_fixture_has_its_formats(source: Path) -> None:
    object_format = git(source, "rev-parse", "--show-object-format").decode().strip()
    assert len(git(source, "rev-parse", "HEAD").decode().strip()) == {"sha1": 40, "sha256": 64}[object_format]
    ref_format = git(source, "rev-parse", "--show-ref-format").decode().strip()
    assert (object_format, ref_format) != ("sha1", "files")
    assert (ref_format == "reftable") == (source / "reftable").is_dir()
    assert len(list((source / "objects" / "pack").glob("*.pack"))) >= 1


@pytest.mark.parametrize("order", sorted(CATALOG))
def test_repack_in_every_order_keeps_every_object(source: Path, tmp_path: Path, order: str) -> None:
    repo = copy_of(source, tmp_path)
    before = all_ids(repo)
    proc = run_cli("repack", "-q", f"--order={order}", str(repo))
    assert proc.returncode == 0, proc.stderr.decode()
    assert all_ids(repo) == before
    git(repo, "fsck", "--full", "--strict")
    # One ordered pack and the cruft pack, in Git's SHA-256 formats.
    assert len(list((repo / "objects" / "pack").glob("*.mtimes"))) == 1
    git(repo, "verify-pack", *map(str, (repo / "objects" / "pack").glob("*.idx")))


def test_new_deltas_ref_deltas_full_verification_and_the_bitmap(source: Path, tmp_path: Path) -> None:
    repo = copy_of(source, tmp_path)
    before = all_ids(repo)
    proc = run_cli("repack", "-f", "--ref-delta", "--verify=full", "-b", "--json", str(repo))
    assert proc.returncode == 0, proc.stderr.decode()
    result = json.loads(proc.stdout)
    assert result["new_deltas"] > 0 and result["bitmap"]
    assert all_ids(repo) == before
    git(repo, "fsck", "--full")
    out = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--test-bitmap", "HEAD"], capture_output=True, env=git_env()
    )
    assert out.returncode == 0 and b"OK!" in out.stdout + out.stderr, out.stderr.decode()


def test_the_cruft_pack_expires_as_git_reads_it(source: Path, tmp_path: Path) -> None:
    repo = copy_of(source, tmp_path)
    kept = reachable(repo)
    assert run_cli("repack", "-q", str(repo)).returncode == 0
    assert len(all_ids(repo)) == len(kept) + 1  # the unreachable blob, in the cruft pack
    # Git's gc reads our .mtimes and drops the expired object.
    git(repo, "gc", "-q", "--prune=now")
    assert all_ids(repo) == kept
    git(repo, "fsck", "--full")
    result = packorder.repack(repo, cruft_expiration="now")
    assert result.unreachable_pruned == 0 and all_ids(repo) == kept


def test_gc_and_a_repack_after_git_s(source: Path, tmp_path: Path) -> None:
    repo = copy_of(source, tmp_path)
    before = all_ids(repo)
    assert run_cli("gc", "-q", str(repo)).returncode == 0
    assert all_ids(repo) == before
    git(repo, "gc", "-q")
    assert run_cli("repack", "-q", "--order=history", str(repo)).returncode == 0
    assert all_ids(repo) == before
    git(repo, "fsck", "--full")


def test_seekstats_reads_the_pack(source: Path, tmp_path: Path) -> None:
    repo = copy_of(source, tmp_path)
    assert run_cli("repack", "-q", str(repo)).returncode == 0
    result = packorder.seekstats(repo, workload="log")
    raw = result.view("raw")
    assert raw is not None and raw.accesses > 30  # a commit, at least, read for each


def test_experiment_and_its_simulator(source: Path, tmp_path: Path) -> None:
    result = packorder.experiment(
        copy_of(source, tmp_path),
        orders=["history", "as-is"],
        workloads=["log"],
        simulate=["recency"],
        output_dir=tmp_path / "out",
        runs=0,
        keep=True,
        work_dir=tmp_path / "work",
    )
    history = result.run("history")
    git(history.git_dir, "fsck", "--full", "--no-dangling")
    assert all_ids(history.git_dir) == all_ids(source)
    assert result.simulated and result.report.is_file()


def test_repack_with_packorder_s_own_walk(source: Path, tmp_path: Path) -> None:
    """packorder.walk = native: the same objects kept (it walks SHA-256 repositories itself,
    and leaves reftable ones to Git)."""
    repo = copy_of(source, tmp_path)
    before = all_ids(repo)
    git(repo, "config", "packorder.walk", "native")
    assert run_cli("repack", "-q", "--order=history", str(repo)).returncode == 0
    assert all_ids(repo) == before
    git(repo, "fsck", "--full", "--strict")
