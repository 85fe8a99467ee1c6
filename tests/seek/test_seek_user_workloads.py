"""The workloads users run beside the study's five: log-patch, diff-tags, fetch-bitmap,
clone, archive, grep. Their traces from real git runs on a generated repository with tags,
what they say they run, how their PATH and tags are chosen or refused, and the simulator
against real repacks, with and without the bitmap those serving with one need."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.gitrepo import Repo, git, git_env

import packorder
from packorder.errors import RepositoryError, UsageError
from packorder.format import layout as layout_mod
from packorder.gitcmd import read_config
from packorder.seek import seekstats, workloads
from packorder.seek.api import measure
from packorder.seek.choose import newest_tags
from packorder.seek.expand import expand
from packorder.seek.simulator import simulate
from packorder.seek.workload_catalog import NAMES, USES_BITMAP

NEW = ["log-patch", "diff-tags", "fetch-bitmap", "clone", "archive", "grep"]
THRESHOLD = 4 << 10  # the generated pack is small: at 4 KiB its shares are neither 0 nor 1


@pytest.fixture(scope="module")
def served(history: Repo, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Bare copies of the history repository repacked by packorder in recency and in history
    order, each with its reachability bitmap; one thread for pack-objects and grep, so that
    a run's requests come in one order."""
    out = {}
    for order in ("recency", "history"):
        copy = tmp_path_factory.mktemp(f"served-{order}") / "repo.git"
        git(None, "clone", "-q", "--bare", "--no-local", str(history.path), str(copy))
        git(copy, "config", "pack.threads", "1")
        git(copy, "config", "grep.threads", "1")
        packorder.repack(copy, order=order, window=0, verify="crc", write_bitmap=True)
        assert list((copy / "objects" / "pack").glob("*.bitmap"))
        out[order] = copy
    return out


def read_entries(repo: Path, name: str) -> tuple[set[str], np.ndarray]:
    """The ids of the entries a workload read (expanded: an object served from the delta base
    cache, unlogged, was read as a base before) and the real types of those it asked for."""
    measured = measure(repo, name, views=("raw",))
    (layout,) = measured.layouts
    entries = expand(measured.trace, measured.layouts, 96 << 20).positions
    assert entries is not None and measured.trace.positions is not None
    return {bytes(layout.oids[p]).hex() for p in entries}, layout.real_kinds()[measured.trace.positions]


def ids(repo: Path, *args: str) -> set[str]:
    return set(git(repo, *args).decode().split())


def test_log_patch_reads_the_blobs_of_the_path(served: dict[str, Path]) -> None:
    repo = served["recency"]
    read, kinds = read_entries(repo, "log-patch")
    # Every version of a file under the chosen directory is read to show its patch.
    chosen = workloads.resolve(workloads.spec("log-patch"), repo)[0].path
    versions = ids(repo, "log", "--format=", "--raw", "--no-abbrev", "--", f"{chosen}/file1.c")
    blobs = {word for word in versions if len(word) == 40 and set(word) != {"0"}}
    assert blobs and blobs <= read
    assert 3 in set(kinds.tolist())


def test_diff_tags_reads_both_tags_trees(served: dict[str, Path]) -> None:
    repo = served["recency"]
    spec, choice = workloads.resolve(workloads.spec("diff-tags"), repo)
    assert choice is not None and spec.revisions == choice.tags and spec.chosen
    read, _ = read_entries(repo, "diff-tags")
    roots = {git(repo, "rev-parse", f"{tag}^{{tree}}").decode().strip() for tag in spec.revisions}
    assert len(roots) == 2 and roots <= read
    # --stat counts the lines of each changed file: both versions are read.
    raw = git(repo, "diff", "--raw", "--no-abbrev", *spec.revisions).decode().split()
    changed = {word for word in raw if len(word) == 40 and set(word) != {"0"}}
    assert changed and changed <= read


@pytest.mark.parametrize("name", ["archive", "grep"])
def test_archive_and_grep_read_every_blob_at_head(served: dict[str, Path], name: str) -> None:
    repo = served["recency"]
    at_head = set(git(repo, "ls-tree", "-r", "--format=%(objectname)", "HEAD").decode().split())
    read, _ = read_entries(repo, name)
    assert at_head <= read


def test_grep_that_matches_nothing_still_counts(served: dict[str, Path]) -> None:
    # git grep exits 1 when no line matches: the blobs were read all the same.
    proc = subprocess.run(["git", "--git-dir", str(served["recency"]), "grep", "-e", "TODO", "HEAD"], env=git_env())
    assert proc.returncode == 1
    raw = seekstats(served["recency"], "grep", views=("raw",)).view("raw")
    assert raw is not None and raw.accesses > 0


def test_fetch_bitmap_spares_the_walk_pack_recent_makes(served: dict[str, Path]) -> None:
    repo = served["recency"]
    counts = {}
    for name in ("pack-recent", "fetch-bitmap"):
        counts[name] = seekstats(repo, name, views=("raw",)).view("raw").accesses
    assert 0 < counts["fetch-bitmap"] < counts["pack-recent"]


def test_clone_copies_most_of_the_pack_unread(served: dict[str, Path], history: Repo) -> None:
    """With a bitmap, pack-objects copies whole entries without asking for them; without one
    it asks for every commit and tree as it walks."""
    (pack,) = (served["recency"] / "objects" / "pack").glob("*.pack")
    objects = layout_mod.load(pack).count
    with_bitmap = seekstats(served["recency"], "clone", views=("raw",))
    without = seekstats(history.path, "clone", views=("raw",))
    assert 0 < with_bitmap.view("raw").accesses < objects / 4
    assert without.view("raw").accesses > with_bitmap.view("raw").accesses
    assert not [w for w in with_bitmap.warnings if "bitmap" in w]
    assert any(w.startswith("clone: the repository has no reachability bitmap") for w in without.warnings)


def test_clone_wants_what_a_clone_asks_for(served: dict[str, Path], tmp_path: Path) -> None:
    """Every branch and tag, as upload-pack feeds pack-objects; other refs are not served."""
    repo = tmp_path / "refs.git"
    git(None, "clone", "-q", "--bare", "--no-local", str(served["recency"]), str(repo))
    tip = git(repo, "rev-parse", "HEAD").decode().strip()
    other = git(repo, "commit-tree", "-p", tip, "-m", "not served", f"{tip}^{{tree}}").decode().strip()
    git(repo, "update-ref", "refs/pull/1/head", other)
    work = workloads.build(workloads.spec("clone"), repo, "git", read_config(repo), 96 << 20)
    assert work.command is not None
    lines = work.command.stdin.decode().splitlines()
    assert lines[-2:] == ["--not", ""]
    assert set(lines[:-2]) == ids(repo, "for-each-ref", "--format=%(objectname)", "refs/heads", "refs/tags")
    assert other not in lines


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        (workloads.WorkloadSpec("log-patch", "src"), "git log -p -- src"),
        (workloads.WorkloadSpec("diff-tags", revisions=("refs/tags/v1", "refs/tags/v2")), "git diff v1 v2 --stat"),
        (
            workloads.WorkloadSpec("fetch-bitmap"),
            "git -c pack.useBitmaps=true pack-objects --revs --stdout (HEAD ^refs/tags/*)",
        ),
        (
            workloads.WorkloadSpec("clone"),
            "git pack-objects --revs --thin --stdout --include-tag (a clone: HEAD, branches, tags; bitmap)",
        ),
        (workloads.WorkloadSpec("archive"), "git archive HEAD"),
        (workloads.WorkloadSpec("grep"), "git grep -e TODO HEAD"),
    ],
)
def test_describe(spec: workloads.WorkloadSpec, text: str) -> None:
    assert spec.describe() == text


def test_log_patch_chooses_as_log_path(history: Repo) -> None:
    log_path = workloads.resolve(workloads.spec("log-path"), history.git_dir)[0]
    log_patch = workloads.resolve(workloads.spec("log-patch"), history.git_dir)[0]
    assert log_patch.path == log_path.path and log_patch.chosen
    assert workloads.resolve(workloads.spec("log-patch", "README"), history.git_dir)[0].path == "README"


def test_newest_tags_by_creator_date(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "tags")
    first = repo.commit("one")
    repo.commit("two")
    repo.commit("three")
    repo.tag("z-light", annotated=False)  # the committer date of "three"
    repo.run("tag", "same-commit")  # the same commit and date: z-light's tie
    repo.clock += 3600
    repo.run("tag", "-a", "a-late", "-m", "tagged later", first)  # the newest: its tagger date
    repo.clock += 3600
    repo.run("tag", "-a", "tree-tag", "-m", "a tree", "HEAD^{tree}")  # newer, but names no commit
    # Newest first: a-late; then same-commit and z-light tie, and the first by name wins.
    assert newest_tags(repo.git_dir).tags == ("refs/tags/same-commit", "refs/tags/a-late")
    repo.run("tag", "-d", "a-late")
    with pytest.raises(RepositoryError, match=r"found 2 tag\(s\) \(all on one commit\)"):
        newest_tags(repo.git_dir)


def test_bad_paths_and_tags_are_refused(history: Repo, tmp_path: Path) -> None:
    with pytest.raises(RepositoryError, match="no such path"):
        seekstats(history.path, "log-patch", path="no/such")
    with pytest.raises(UsageError, match="takes no PATH"):
        seekstats(history.path, "diff-tags", path="v1.0")
    with pytest.raises(UsageError, match="takes no PATH"):
        packorder.experiment(history.path, workloads=["grep:TODO"], runs=0, output_dir=tmp_path / "out")
    repo = Repo(tmp_path / "sub")
    repo.commit("one")
    tip = repo.run("rev-parse", "HEAD").decode().strip()
    repo.run("update-index", "--add", "--cacheinfo", f"160000,{tip},module")
    repo.run("commit", "-q", "-m", "a submodule")  # not Repo.commit: its `add -A` would drop it
    with pytest.raises(RepositoryError, match="module: not a file or directory"):
        seekstats(repo.path, "log-patch", path="module")
    with pytest.raises(RepositoryError, match=r"diff-tags needs two tags on different commits; found 0 tag\(s\)$"):
        seekstats(repo.path, "diff-tags")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "packorder", "seekstats", *args], capture_output=True, text=True, env=git_env()
    )


def test_cli_takes_the_new_workloads(history: Repo, tmp_path: Path) -> None:
    proc = run_cli(str(history.path), "-w", "log-patch", "src", "--csv", "--view", "raw")
    assert proc.returncode == 0, proc.stderr
    assert "git log -p -- src" in proc.stdout
    proc = run_cli(str(history.path), "-w", "diff-tags", "--view", "raw")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("seekstats: diff-tags: chose ")
    assert "(the two newest tags by creator date)" in proc.stderr
    untagged = Repo(tmp_path / "untagged")
    untagged.commit("one")
    proc = run_cli(str(untagged.path), "-w", "diff-tags")
    assert proc.returncode == 128
    assert proc.stderr.strip() == "fatal: diff-tags needs two tags on different commits; found 0 tag(s)"
    # Both commands' help lists every workload (click wraps the text at its hyphens).
    from packorder.cli.experiment import experiment_cmd
    from packorder.cli.seekstats import seekstats_cmd

    for command, option in ((seekstats_cmd, "workload"), (experiment_cmd, "workloads")):
        help_text = next(p for p in command.params if p.name == option).help or ""
        listed = {word.strip(".,").split("[")[0] for word in help_text.split()}
        assert set(NAMES) - {"custom"} <= listed, command.name


@pytest.mark.parametrize("name", NEW)
def test_simulated_history_agrees_with_a_real_history_repack(served: dict[str, Path], name: str) -> None:
    simulation = simulate(served["recency"], name, orders=["history"], threshold=THRESHOLD)
    measured = seekstats(served["history"], name, threshold=THRESHOLD)
    (simulated,) = simulation.simulated
    for want in measured.views:
        got = simulated.view(want.view)
        assert got is not None and want.below_threshold is not None and got.below_threshold is not None
        assert 0 < want.below_threshold < 1, (want.view, want.below_threshold)
        assert abs(got.below_threshold - want.below_threshold) <= 0.01, want.view
        assert got.accesses == want.accesses
    relaid_caveat = [w for w in simulation.measured.warnings if "keep the measured pack's order" in w]
    assert len(relaid_caveat) == (name in USES_BITMAP)


def test_experiment_gives_its_copies_a_bitmap_when_a_workload_serves_with_one(history: Repo, tmp_path: Path) -> None:
    result = packorder.experiment(
        history.path,
        orders=["recency", "history"],
        workloads=["fetch-bitmap", "archive"],
        runs=0,
        threshold=THRESHOLD,
        output_dir=tmp_path / "out",
        work_dir=tmp_path / "work",
        keep=True,
    )
    assert result.kept is not None
    for run in result.orders:
        assert list((run.git_dir / "objects" / "pack").glob("*.bitmap")), run.order
    assert not [w for w in result.warnings if "no reachability bitmap" in w]
    assert not [w for run in result.orders for r in run.results for w in r.warnings if "no reachability bitmap" in w]
    assert {a.workload for a in result.agreement} == {"fetch-bitmap", "archive"}
    result = packorder.experiment(
        history.path, orders=["recency"], workloads=["archive"], runs=0, output_dir=tmp_path / "out2", keep=True,
        work_dir=tmp_path / "work2",
    )  # fmt: skip
    assert not list((result.orders[0].git_dir / "objects" / "pack").glob("*.bitmap"))
    # A copy left as it is keeps no bitmap it did not have: the report says what that means.
    result = packorder.experiment(
        history.path, orders=["as-is"], workloads=["clone"], runs=0, output_dir=tmp_path / "out3",
        work_dir=tmp_path / "work3",
    )  # fmt: skip
    assert any(w.startswith("as-is: clone: the repository has no reachability bitmap") for w in result.warnings)
