"""The Git command each Git-traced workload runs (every workload but index-pack): its argv,
standard input and environment, for a resolved `WorkloadSpec` (PATH and tags chosen)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from packorder.gitcmd import run
from packorder.seek import runner
from packorder.seek.catalog import GREP_PATTERN

if TYPE_CHECKING:
    from packorder.seek.workloads import WorkloadSpec


def partial_clone_hint(git_dir: Path) -> str:
    if any((git_dir / "objects" / "pack").glob("*.promisor")):
        return (
            "this is a partial clone: an object the command needs may be missing, and packorder never "
            "fetches (GIT_NO_LAZY_FETCH=1); try another path or workload"
        )
    return ""


def _since_last_release(git_dir: Path) -> bytes:
    """pack-objects' input for a fetch of HEAD by a client that has every tag."""
    tags = run(["for-each-ref", "--format=^%(refname)", "refs/tags"], git_dir=git_dir).stdout
    return tags + b"HEAD\n"


def _clone_wants(git_dir: Path) -> bytes:
    """pack-objects' input as upload-pack writes it for a clone: the object of each ref a
    clone asks for (HEAD, every branch and tag, in the advertisement's order), then `--not`
    and no have."""
    refs = run(["for-each-ref", "--format=%(objectname)", "refs/heads", "refs/tags"], git_dir=git_dir).stdout.split()
    head = run(["rev-parse", "-q", "--verify", "HEAD"], git_dir=git_dir, check=False).stdout.split()
    wants = dict.fromkeys(head + refs)
    return b"".join(w + b"\n" for w in wants) + b"--not\n\n"


def git_command(workload: WorkloadSpec, git_dir: Path, git: str, cwd: Path | None = None) -> runner.Command:
    """The command of a resolved Git-traced workload, run on the repository at `git_dir`
    (custom: in `cwd`, as if typed there)."""
    name = workload.name
    base = [git, "--git-dir", str(git_dir)]
    stdin = b""
    work_dir = git_dir
    ok = (0,)
    env: dict[str, str | None] = {}
    if name == "log":
        argv = [*base, "log"]
    elif name == "log-path":
        argv = [*base, "log", "--", str(workload.path)]
    elif name == "log-patch":
        argv = [*base, "log", "-p", "--", str(workload.path)]
    elif name == "blame":
        argv = [*base, "blame", "HEAD", "--", str(workload.path)]
    elif name == "diff-tags":
        argv = [*base, "diff", *workload.revisions, "--stat"]
    elif name in ("pack-recent", "fetch-bitmap"):
        stdin = _since_last_release(git_dir)
        # pack-recent: without a bitmap, so that packs with and without one compare (a bitmap
        # skips most of the walk: libgit2, 1,570 requests instead of 9,174); fetch-bitmap:
        # with it, as a server fetches.
        bitmaps = "true" if name == "fetch-bitmap" else "false"
        argv = [git, "-c", f"pack.useBitmaps={bitmaps}", *base[1:], "pack-objects", "--revs", "--stdout"]
    elif name == "clone":
        stdin = _clone_wants(git_dir)
        argv = [git, "-c", "pack.useBitmaps=true", *base[1:], "pack-objects", "--revs", "--thin", "--stdout"]
        argv += ["--delta-base-offset", "--include-tag"]
    elif name == "archive":
        argv = [*base, "archive", "HEAD"]
    elif name == "grep":
        argv = [*base, "grep", "-e", GREP_PATTERN, "HEAD"]
        ok = (0, 1)  # 1: no line matched, every blob read all the same
    else:  # custom: `git ARGS` as if run in the directory the user named
        argv = [git, *workload.git_args]
        work_dir = cwd if cwd is not None and cwd.is_dir() else git_dir
        # Named explicitly, the repository's packs are logged with absolute paths; the work
        # tree keeps pathspecs relative to the directory, as when git finds them itself.
        env["GIT_DIR"] = str(git_dir)
        top = run(["rev-parse", "--show-toplevel"], check=False, cwd=work_dir)
        if top.returncode == 0 and work_dir.resolve() != git_dir.resolve():
            env["GIT_WORK_TREE"] = top.stdout.decode().strip()
    return runner.Command(argv, stdin, env, work_dir, partial_clone_hint(git_dir), workload.describe(), ok)
