"""The Git command a Git-traced workload runs (every workload but index-pack), for a
resolved `WorkloadSpec` (PATH and tags chosen): its catalog entry's command on the
repository, or the user's own arguments (custom) in the directory they named."""

from __future__ import annotations

from pathlib import Path

from packorder.gitcmd import run
from packorder.seek import runner
from packorder.seek.workload_catalog import CATALOG, WorkloadSpec


def partial_clone_hint(git_dir: Path) -> str:
    if any((git_dir / "objects" / "pack").glob("*.promisor")):
        return (
            "this is a partial clone: an object the command needs may be missing, and packorder never "
            "fetches (GIT_NO_LAZY_FETCH=1); try another path or workload"
        )
    return ""


def git_command(workload: WorkloadSpec, git_dir: Path, git: str, cwd: Path | None = None) -> runner.Command:
    """The command of a resolved Git-traced workload, run on the repository at `git_dir`
    (custom: in `cwd`, as if typed there)."""
    run_of = CATALOG[workload.name].git
    if run_of is not None:
        it = run_of(workload)
        settings = [arg for setting in it.settings for arg in ("-c", setting)]
        stdin = it.stdin(git_dir) if it.stdin is not None else b""
        argv = [git, *settings, "--git-dir", str(git_dir), *it.args]
        return runner.Command(argv, stdin, {}, git_dir, partial_clone_hint(git_dir), workload.describe(), it.ok)
    # custom: `git ARGS` as if run in the directory the user named
    argv = [git, *workload.git_args]
    work_dir = cwd if cwd is not None and cwd.is_dir() else git_dir
    # Named explicitly, the repository's packs are logged with absolute paths; the work
    # tree keeps pathspecs relative to the directory, as when git finds them itself.
    env: dict[str, str | None] = {"GIT_DIR": str(git_dir)}
    top = run(["rev-parse", "--show-toplevel"], check=False, cwd=work_dir)
    if top.returncode == 0 and work_dir.resolve() != git_dir.resolve():
        env["GIT_WORK_TREE"] = top.stdout.decode().strip()
    return runner.Command(argv, b"", env, work_dir, partial_clone_hint(git_dir), workload.describe())
