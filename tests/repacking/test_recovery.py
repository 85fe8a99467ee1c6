"""The next run cleans what an interrupted one left: killed at every step of installing and
removing (every rename and unlink), then a commit pushed, then run again, the repository has
no garbage and every object; leftovers of other origins are kept if they hold the only copy
of an object, removed otherwise, and the run says in one line what it cleaned."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.gitrepo import all_ids, build_history, git, git_env

import packorder
from packorder.format import idx as idx_format


def garbage(git_dir: Path) -> list[str]:
    """What Git or a person would call left over: temporaries, a pack without its index, a
    file of a pack that is gone, a journal, a lock."""
    pack_dir = git_dir / "objects" / "pack"
    found = [p.name for p in pack_dir.glob(".tmp*")]
    for p in pack_dir.glob("pack-*"):
        stem = p.with_suffix("")
        if p.suffix != ".idx" and not stem.with_suffix(".idx").exists():
            found.append(p.name)
        if p.suffix == ".idx" and not stem.with_suffix(".pack").exists():
            found.append(p.name)
    found += [p.name for p in (git_dir / "packorder-journal", git_dir / "gc.pid") if p.exists()]
    counted = git(None, "--git-dir", str(git_dir), "count-objects", "-v").decode()
    if "garbage: 0" not in counted:
        found.append(counted)
    return found


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three packs (so that removals are several steps), no loose object, an unreachable one
    in a pack (so that a cruft pack is written), a bitmap (bare)."""
    repo = build_history(tmp_path_factory.mktemp("recovery") / "work", commits=15)
    repo.run("hash-object", "-w", "--stdin", input=b"unreachable, for the cruft pack\n")
    repo.run("repack", "-adq")
    for i in range(2):
        repo.commit_on_branch(f"b{i}", {f"b{i}.txt": f"branch {i}\n"}, f"branch {i}")
        repo.run("repack", "-q")
    bare = repo.path.parent / "repo.git"
    shutil.copytree(repo.git_dir, bare)
    git(bare, "config", "core.bare", "true")
    return bare


def points_of_a_run(repo: Path, log: Path) -> list[str]:
    env = {**git_env(), "PACKORDER_CRASH_LOG": str(log)}
    subprocess.run([sys.executable, "-m", "packorder", "repack", "-q", str(repo)], env=env, check=True)
    return log.read_text().split()


def test_killed_at_every_step_then_pushed_to_then_run_again(source: Path, tmp_path: Path) -> None:
    probe = tmp_path / "probe.git"
    shutil.copytree(source, probe)
    points = points_of_a_run(probe, tmp_path / "points.log")
    steps = [
        n for n, name in enumerate(points, 1) if name not in ("enumerated", "deltas-chosen", "written", "verified")
    ]
    assert {"temporary-written", "temporary-renamed", "pack-renamed", "idx-installed", "pack-file-removed"} <= {
        points[n - 1] for n in steps
    }
    before = all_ids(source)
    client = tmp_path / "client"
    git(None, "clone", "-q", str(source), str(client))
    for n in steps:
        work = tmp_path / f"work{n}"
        shutil.copytree(source, work)
        env = {**git_env(), "PACKORDER_CRASH_AT": f"#{n}"}
        proc = subprocess.run(
            [sys.executable, "-m", "packorder", "repack", "-q", str(work)], env=env, capture_output=True
        )
        assert proc.returncode == 137, (n, points[n - 1], proc.stderr.decode())
        git(work, "fsck", "--full")
        # A push lands before the next run.
        (client / f"pushed{n}.txt").write_text(f"pushed after kill {n}\n")
        git(client, "add", "-A")
        git(client, "commit", "-q", "-m", f"pushed after kill {n}")
        git(client, "push", "-q", str(work), "HEAD:main")
        pushed = git(client, "rev-parse", "HEAD").decode().strip()
        result = packorder.repack(work)
        assert garbage(work) == [], (n, points[n - 1])
        assert before <= all_ids(work) and pushed in all_ids(work), (n, points[n - 1])
        assert len(result.warnings) <= 1, result.warnings
        git(work, "fsck", "--full")
        git(client, "reset", "-q", "--hard", "HEAD~1")
        shutil.rmtree(work)


def test_leftovers_of_other_origins(source: Path, tmp_path: Path) -> None:
    work = tmp_path / "work.git"
    shutil.copytree(source, work)
    pack_dir = work / "objects" / "pack"
    hour_ago = time.time() - 7200
    # A pack without its index that holds the only copy of an object (its index lost).
    unique = git(work, "hash-object", "-w", "--stdin", input=b"only in the orphan pack\n").decode().strip()
    git(work, "tag", "keep-it", unique)
    name = git(work, "pack-objects", "-q", str(pack_dir / "pack"), input=unique.encode()).decode().strip()
    (work / "objects" / unique[:2] / unique[2:]).unlink()
    orphan = pack_dir / f"pack-{name}.pack"
    orphan.with_suffix(".idx").unlink()
    os.utime(orphan, (hour_ago, hour_ago))
    # A pack without its index whose objects are all elsewhere (an old pack half removed).
    (first,) = sorted(pack_dir.glob("*.idx"), key=lambda p: idx_format.read(str(p)).count)[-1:]
    copy = pack_dir / "pack-0123456789012345678901234567890123456789.pack"
    shutil.copy(first.with_suffix(".pack"), copy)
    os.utime(copy, (hour_ago, hour_ago))
    # A .rev of a pack that is gone; a temporary of a process that is dead; a young
    # pack without its index (a push between renaming its pack and writing its index).
    stale_rev = pack_dir / "pack-fedcba9876543210fedcba9876543210fedcba98.rev"
    stale_rev.write_bytes(b"RIDX")
    os.utime(stale_rev, (hour_ago, hour_ago))
    dead = subprocess.Popen(["true"])
    dead.wait()
    temp = pack_dir / f".tmp-packorder-{dead.pid}-abcdef.pack"
    temp.write_bytes(b"PACK")
    young = pack_dir / "pack-1111111111111111111111111111111111111111.pack"
    young.write_bytes(b"PACK")
    assert git(work, "cat-file", "-t", unique, check=False) == b""  # the object cannot be read now
    result = packorder.repack(work)
    (line,) = result.warnings
    assert line.startswith("cleaned what an interrupted run left: ")
    assert (
        "1 temporary files" in line and "1 files of packs that are gone" in line and "1 packs without an index" in line
    )
    assert git(work, "cat-file", "-t", unique).strip() == b"blob"
    assert not copy.exists() and not stale_rev.exists() and not temp.exists() and young.exists()
    git(work, "fsck", "--full")
    young.unlink()
