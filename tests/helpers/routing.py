"""Git running packorder's index-pack: the environment in which `git` runs Git's programs
from a directory of our choosing, and one whose `index-pack` is packorder's (route.exec_path),
with the log of what it was handed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from helpers.gitrepo import git_env
from packorder.indexer import route


def sets_its_own_exec_path() -> bool:
    """Whether the `git` on PATH sets an exec path of its own over GIT_EXEC_PATH, as a build
    tree's bin-wrappers/git does."""
    given = "/nonexistent/exec-path"
    env = {**git_env(), "GIT_EXEC_PATH": given}
    answer = subprocess.run(["git", "--exec-path"], env=env, capture_output=True, text=True, check=True)
    return answer.stdout.strip() != given


def running_programs_of(exec_dir: Path) -> dict[str, str]:
    """The environment in which `git` runs Git's programs from `exec_dir`: GIT_EXEC_PATH, and
    where the `git` on PATH would set its own, `exec_dir` first on PATH (its `git` then runs
    Git's, which takes GIT_EXEC_PATH; without the wrapper's templates, so Git alone is run
    that way as well, for the same warnings)."""
    env = {**git_env(), "GIT_EXEC_PATH": str(exec_dir)}
    if sets_its_own_exec_path():
        env["PATH"] = f"{exec_dir}{os.pathsep}{env['PATH']}"
    return env


def with_git_s_index_pack() -> dict[str, str]:
    """Git as it is, run the way exec_path_routing_index_pack's environment runs it."""
    return running_programs_of(route.git_exec_path())


def exec_path_routing_index_pack(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An exec path whose `git` sends `index-pack` to packorder (route.exec_path), and the
    log of the command lines it handed over."""
    log = tmp_path / "index-pack.log"
    env = running_programs_of(route.exec_path(tmp_path / "exec-path"))
    env["PACKORDER_ROUTE_LOG"] = str(log)
    return env, log
