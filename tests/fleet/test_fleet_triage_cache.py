"""The fleet's triage cache (`--triage-cache FILE`): an unchanged repository is taken from
it, with the same answer a triage gives; a push, a ref, a configuration change or a repack
makes it triaged again; a broken repository is never kept. And the JSON lines that the
cache and the fleet's results share: a line torn by a kill loses nothing appended after it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import Repo, build_history, git_env

import packorder
from packorder.fleet import run_record, triage_cache
from packorder.fleet.triage import status
from packorder.jsonable import to_jsonable

VARYING = ("seconds", "cached", "fingerprint")


def answer(t: object) -> dict:
    return {k: v for k, v in to_jsonable(t).items() if k not in VARYING}


def by_name(result: object, root: Path) -> dict:
    return {t.path.relative_to(root).parts[0]: t for t in result.repositories}


@pytest.fixture()
def fleet(tmp_path: Path) -> Path:
    root = tmp_path / "fleet"
    for name in ("a", "b", "c"):
        build_history(root / name, commits=6, seed=ord(name))
    return root


def test_an_unchanged_repository_is_taken_from_the_cache_with_the_same_answer(fleet: Path, tmp_path: Path) -> None:
    cache = tmp_path / "triage.jsonl"
    first = by_name(status([fleet], triage_cache_file=cache), fleet)
    assert not any(t.cached for t in first.values())
    assert len(cache.read_text().splitlines()) == 3
    second = by_name(status([fleet], triage_cache_file=cache), fleet)
    assert all(t.cached for t in second.values())
    assert {n: answer(t) for n, t in second.items()} == {n: answer(t) for n, t in first.items()}
    assert len(cache.read_text().splitlines()) == 3  # nothing new to keep
    # Without the cache, the same answer again.
    fresh = by_name(status([fleet]), fleet)
    assert {n: answer(t) for n, t in fresh.items()} == {n: answer(t) for n, t in first.items()}


def test_what_a_triage_depends_on_makes_it_triaged_again(fleet: Path, tmp_path: Path) -> None:
    cache = tmp_path / "triage.jsonl"
    status([fleet], triage_cache_file=cache)
    a, b, c = (Repo(fleet / n) for n in "abc")

    def again() -> set[str]:
        return {n for n, t in by_name(status([fleet], triage_cache_file=cache), fleet).items() if not t.cached}

    a.write("pushed.txt", "a push\n")
    a.commit("pushed")  # loose objects and a moved branch
    assert again() == {"a"}
    head = b.run("rev-parse", "HEAD").strip()
    b.run("tag", "new-tag", head)  # a ref alone
    c.run("config", "packorder.order", "history")  # the configuration alone
    assert again() == {"b", "c"}
    assert again() == set()
    packorder.repack(a.path)
    triaged = by_name(status([fleet], triage_cache_file=cache), fleet)
    assert not triaged["a"].cached and triaged["a"].packs == 1 and triaged["a"].loose == 0


def test_a_broken_repository_is_not_kept(fleet: Path, tmp_path: Path) -> None:
    cache = tmp_path / "triage.jsonl"
    Repo(fleet / "a").run("repack", "-adq")
    (pack,) = (fleet / "a" / ".git" / "objects" / "pack").glob("*.pack")
    pack.chmod(0o644)
    with open(pack, "r+b") as f:
        f.seek(12)
        f.write(b"\xff" * 64)  # the first entries' headers
    result = by_name(status([fleet], triage_cache_file=cache), fleet)
    assert result["a"].error
    kept = triage_cache.load(cache)
    assert sorted(Path(p).relative_to(fleet).parts[0] for p in kept) == ["b", "c"]
    assert by_name(status([fleet], triage_cache_file=cache), fleet)["a"].error  # read again, still broken


def test_a_torn_last_line_and_an_old_version_are_not_taken(fleet: Path, tmp_path: Path) -> None:
    cache = tmp_path / "triage.jsonl"
    status([fleet / "a"], triage_cache_file=cache)
    line = json.loads(cache.read_text())
    cache.write_text(json.dumps({**line, "version": triage_cache.VERSION - 1}) + "\n" + '{"path": "torn')
    (t,) = status([fleet / "a"], triage_cache_file=cache).repositories
    assert not t.cached
    (t,) = status([fleet / "a"], triage_cache_file=cache).repositories
    assert t.cached


def test_the_command_line(fleet: Path, tmp_path: Path) -> None:
    cache = tmp_path / "triage.jsonl"
    argv = [sys.executable, "-m", "packorder", "fleet", "status", "--json", "--triage-cache", str(cache), str(fleet)]
    runs = [subprocess.run(argv, capture_output=True, env=git_env()) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    cached = [[row["cached"] for row in json.loads(r.stdout)["repositories"]] for r in runs]
    assert cached == [[False] * 3, [True] * 3]


def test_a_record_appended_after_a_torn_line_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "fleet.jsonl"
    run_record.append(path, [{"path": "a", "status": "done"}])
    with open(path, "a") as f:
        f.write('{"path": "b", "sta')  # a kill in the middle of the write
    run_record.append(path, [{"path": "c", "status": "done"}])
    assert run_record.read(path) == [{"path": "a", "status": "done"}, {"path": "c", "status": "done"}]
