"""What a script may rely on, for every command: Git's exit statuses (128 for a fatal error,
129 for a usage error, shown as `error: ...` with the usage), silence under -q, -v accepted,
conflicting options refused in one line, and the effective settings of a dry run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gitrepo import build_history, git, git_env

import packorder


def run_cli(*args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from packorder.cli.launch import main; main()", *args],
        capture_output=True,
        input=input,
        env=git_env(),
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = build_history(tmp_path_factory.mktemp("contract") / "repo", commits=12)
    repo.run("repack", "-adq")
    repo.run("hash-object", "-w", "--stdin", input=b"unreachable\n")
    return repo.path


@pytest.fixture()
def work(base: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "work"
    shutil.copytree(base, dst, symlinks=True)
    return dst


@pytest.mark.parametrize(
    "args",
    [
        ["repack", "--bogus"],
        ["repack", "--order", "nosuch"],
        ["repack", "--window", "-3"],
        ["gc", "--bogus"],
        ["seekstats", "--bogus"],
        ["experiment", "--runs", "x"],
        ["index-pack", "--bogus"],
        ["index-pack", "--threads", "x", "a.pack"],
    ],
)
def test_a_bad_command_line_is_a_usage_error(args: list[str]) -> None:
    proc = run_cli(*args)
    err = proc.stderr.decode()
    assert proc.returncode == 129, err
    assert err.startswith("error: ") and "\nusage: packorder " in err and "Traceback" not in err
    assert proc.stdout == b""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["repack", "-o", "OUT", "-b"], "-o DIR writes no bitmap"),
        (["repack", "-q", "-v"], "-q and -v cannot be used together"),
        (["repack", "--prune-unreachable"], "--prune-unreachable was removed"),
        (["repack", "--cruft-expiration", "false"], "invalid --cruft-expiration: 'false'"),
        (["seekstats", "-w", "log-path", "src/file1.c"], "is ambiguous"),
        (["seekstats", "--json", "--csv"], "--json and --csv cannot be used together"),
        (["index-pack", "--stdin", "x.pack"], "--stdin takes no pack argument"),
        (["index-pack", "--fix-thin", "x.pack"], "--fix-thin requires --stdin"),
        (["repack", "-g", "2", "-a"], "options '--geometric' and '-A/-a' cannot be used together"),
        (["repack", "-k", "--cruft-expiration", "now"], "'-k/--keep-unreachable' and '--cruft-expiration'"),
        (["repack", "--write-midx=flat"], "Invalid value for '--write-midx'"),
        (["experiment", "--runs", "0", "--cold-iops", "10"], "--cold-iops limits the cold runs: give --runs too"),
    ],
)
def test_conflicting_options_are_refused_in_one_line(work: Path, args: list[str], message: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "from packorder.cli.launch import main; main()", *args],
        capture_output=True,
        cwd=work,
        env=git_env(),
    )
    err = proc.stderr.decode()
    assert proc.returncode == 129, err
    assert err.splitlines()[0].startswith("error: ") and message in err.splitlines()[0]


@pytest.mark.parametrize(
    "args",
    [
        ["repack", "NOWHERE"],
        ["gc", "NOWHERE"],
        ["seekstats", "NOWHERE"],
        ["experiment", "NOWHERE", "--runs", "0"],
        ["index-pack", "NOWHERE.pack"],
    ],
)
def test_a_fatal_error_is_one_line_and_status_128(tmp_path: Path, args: list[str]) -> None:
    args = [a.replace("NOWHERE", str(tmp_path / "nowhere")) for a in args]
    proc = run_cli(*args)
    err = proc.stderr.decode()
    assert proc.returncode == 128, err
    assert err.startswith("fatal: ") and err.count("\n") == 1


def test_quiet_prints_nothing_on_success(work: Path) -> None:
    proc = run_cli("repack", "-q", str(work))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    proc = run_cli("repack", "--quiet", "--cruft-expiration", "now", str(work))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


def test_verbose_shows_progress_without_a_terminal(work: Path) -> None:
    proc = run_cli("repack", "-v", str(work))
    assert proc.returncode == 0
    err = proc.stderr.decode()
    assert "Writing objects: 100%" in err and "Verifying objects" in err
    proc = run_cli("repack", "--verbose", "--dry-run", str(work))
    assert proc.returncode == 0 and "Counting objects" in proc.stderr.decode()


def test_a_dry_run_reports_the_effective_settings(work: Path) -> None:
    git(work, "config", "pack.window", "7")
    git(work, "config", "packorder.depth", "20")
    git(work, "config", "pack.depth", "30")
    git(work, "config", "repack.writeBitmaps", "true")
    proc = run_cli("repack", "--dry-run", "--json", "--cruft-expiration", "2.weeks.ago", str(work))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    settings = result["settings"]
    assert settings["order"] == "recency" and settings["window"] == 7 and settings["depth"] == 20
    assert settings["write_bitmap"] is True and result["bitmap"] is True  # what the real run does
    assert settings["verify"] == "produced" and settings["local"] is True and settings["threads"] >= 1
    assert settings["compression"] == 6 and settings["cruft_expiration"].startswith("20")
    assert result["dry_run"] is True and result["packs"] == []


def test_configured_order_and_verification_are_the_defaults(work: Path) -> None:
    git(work, "config", "packorder.order", "history")
    git(work, "config", "packorder.verify", "full")
    result = packorder.repack(work)
    assert result.order == "history" and result.verify == "full"
    git(work, "config", "packorder.order", "nosuch")
    proc = run_cli("repack", str(work))
    assert proc.returncode == 129 and b"unknown order 'nosuch'" in proc.stderr


def test_pack_write_reverse_index_false_writes_no_rev(work: Path) -> None:
    git(work, "config", "pack.writeReverseIndex", "false")
    result = packorder.repack(work)
    assert not any(p.with_suffix(".rev").exists() for p in result.packs)
    git(work, "fsck", "--full")
    git(work, "config", "pack.writeReverseIndex", "true")
    result = packorder.repack(work)
    assert all(p.with_suffix(".rev").exists() for p in result.packs)


def test_server_info_is_updated_unless_n(work: Path) -> None:
    info = work / ".git" / "objects" / "info" / "packs"
    result = packorder.repack(work)
    listed = {line.split()[1] for line in info.read_text().splitlines() if line.startswith("P ")}
    assert listed == {p.name for p in result.packs} and result.server_info
    assert (work / ".git" / "info" / "refs").exists()
    stale = info.read_text()
    git(work, "commit", "-q", "--allow-empty", "-m", "another")
    proc = run_cli("repack", "-q", "-n", str(work))
    assert proc.returncode == 0 and info.read_text() == stale  # -n: left alone, as git repack -n


def test_index_pack_keep_on_a_pack_file_writes_its_keep_as_git_does(work: Path, tmp_path: Path) -> None:
    (pack,) = [p for p in (work / ".git" / "objects" / "pack").glob("*.pack")]
    for who in ("ours", "theirs"):
        (tmp_path / who).mkdir()
        shutil.copy(pack, tmp_path / who / pack.name)
    proc = run_cli("index-pack", "--keep=kept by a test", str(tmp_path / "ours" / pack.name))
    assert proc.returncode == 0, proc.stderr
    git(None, "index-pack", "--keep=kept by a test", str(tmp_path / "theirs" / pack.name))
    keep = pack.with_suffix(".keep").name
    assert (tmp_path / "ours" / keep).read_bytes() == (tmp_path / "theirs" / keep).read_bytes() == b"kept by a test\n"
    assert proc.stdout.decode().strip() == pack.stem[len("pack-") :]


def test_the_early_walk_reads_only_plain_repack_command_lines() -> None:
    from packorder.cli.early_walk import WalkRequest, read

    assert read(["REPO"]) == WalkRequest(Path("REPO"), True, None)
    assert read(["--order", "history", "-q", "REPO"]) == WalkRequest(Path("REPO"), True, "history")
    assert read(["--order=git", "--dry-run"]) == WalkRequest(None, False, "git")
    assert read(["-o", "OUT", "--window", "5", "REPO"]) == WalkRequest(Path("REPO"), False, None)
    assert read(["-adbq", "REPO"]) == WalkRequest(Path("REPO"), True, None, True)
    assert read(["-Ad", "-B", "--depth=5"]) == WalkRequest(None, True, None, False)
    for unplain in (["-h"], ["--bogus", "REPO"], ["-fo", "REPO"], ["-ag2"], ["A", "B"], ["--order"], ["--", "REPO"]):
        assert read(unplain) is None, unplain


def test_a_command_line_refused_after_the_early_walk_leaves_no_lock(work: Path) -> None:
    proc = run_cli("repack", "-q", "-v", str(work))  # read early, refused by the command
    assert proc.returncode == 129 and not (work / ".git" / "gc.pid").exists()
    proc = run_cli("repack", "--order", "history", "--json", str(work))
    assert proc.returncode == 0 and json.loads(proc.stdout)["order"] == "history"
    assert not (work / ".git" / "gc.pid").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a repository another user owns: needs root")
def test_a_repository_of_another_user_is_refused_as_git_refuses_it(work: Path) -> None:
    os.chown(work, 65534, 65534)
    for path in (work / ".git").rglob("*"):
        os.lchown(path, 65534, 65534)
    os.chown(work / ".git", 65534, 65534)
    theirs = subprocess.run(["git", "-C", str(work), "rev-parse", "--git-dir"], capture_output=True, text=True)
    for args in (["repack", str(work)], ["gc", str(work)], ["seekstats", str(work)]):
        proc = run_cli(*args)
        assert proc.returncode == 128
        assert proc.stderr.decode() == theirs.stderr and "safe.directory" in theirs.stderr
    env = {**git_env(), "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}
    proc = subprocess.run(
        [sys.executable, "-c", "from packorder.cli.launch import main; main()", "repack", "-q", str(work)],
        capture_output=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
