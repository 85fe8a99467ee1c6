"""packorder's index-pack in place of Git's, for the index-packs Git runs itself.

receive-pack (a push) and fetch-pack (a fetch or clone) run `git index-pack` through the
`git` of Git's exec path, not of PATH. `exec_path(directory)` makes a directory to use as
GIT_EXEC_PATH instead: a link to every program of Git's exec path, and a `git` that hands
`git [global options] index-pack ...` to `packorder index-pack` and everything else to Git's
`git`. Run as `python -m packorder.indexer.route GIT ARGS...`, this module is what that `git`
calls when `index-pack` is among its arguments: it applies Git's global options (`-C`, `-c`,
`--git-dir`, `--work-tree`) as Git would and starts packorder's index-pack, or Git for any
other command. With PACKORDER_ROUTE_LOG set, each command line handed over is appended there.

`python -m packorder.indexer.route --make DIR` makes such a directory for the `git` on PATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Git's options before the command that take the next argument as their value.
_WITH_VALUE = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--attr-source"}
# Options after which Git runs no command.
_NO_COMMAND = {"--exec-path", "--version", "--help", "--html-path", "--man-path", "--info-path"}

# A shell fast path: most git calls have no `index-pack` in them and go to Git at once.
_WRAPPER = """#!/bin/sh
for a in "$@"; do
\tif test "$a" = index-pack; then exec "{python}" -P -m packorder.indexer.route "{git}" "$@"; fi
done
exec "{git}" "$@"
"""


def git_exec_path(git: str = "git") -> Path:
    return Path(subprocess.run([git, "--exec-path"], capture_output=True, text=True, check=True).stdout.strip())


def exec_path(directory: Path, real: Path | None = None, skip: tuple[str, ...] = ()) -> Path:
    """Fill `directory` (made if missing) to stand for Git's exec path `real` (default: that
    of the `git` on PATH) with index-pack sent to packorder; returns it. `skip`: programs of
    `real` not to link (a dashed `git-index-pack` would run Git's builtin)."""
    real = real or git_exec_path()
    directory.mkdir(parents=True, exist_ok=True)
    for program in real.iterdir():
        if program.name != "git" and program.name not in skip:
            (directory / program.name).symlink_to(program)
    wrapper = directory / "git"
    wrapper.write_text(_WRAPPER.format(python=sys.executable, git=real / "git"))
    wrapper.chmod(0o755)
    return directory


def _quoted(item: str) -> str:
    return "'" + item.replace("'", "'\\''") + "'"


def main(argv: list[str]) -> None:
    git, args = argv[0], argv[1:]
    env = dict(os.environ)
    cwd = os.getcwd()
    config: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-"):
        name, eq, value = args[i].partition("=")
        if name in _NO_COMMAND:
            break
        if name in _WITH_VALUE and not eq:
            if i + 1 >= len(args):
                break
            i += 1
            value = args[i]
        if name == "-C" and value:
            cwd = os.path.join(cwd, value)
        elif name == "-c":
            config.append(value)
        elif name == "--git-dir":
            env["GIT_DIR"] = os.path.join(cwd, value)
        elif name == "--work-tree":
            env["GIT_WORK_TREE"] = os.path.join(cwd, value)
        i += 1
    if i >= len(args) or args[i] != "index-pack":
        os.execv(git, [git, *args])
    os.chdir(cwd)
    if config:
        given = " ".join(_quoted(c) for c in config)
        env["GIT_CONFIG_PARAMETERS"] = f"{env.get('GIT_CONFIG_PARAMETERS', '')} {given}".strip()
    log = env.get("PACKORDER_ROUTE_LOG")
    if log:
        with open(log, "a") as f:
            f.write(" ".join(args[i:]) + "\n")
    # -P: Git runs index-pack in the work tree, which may be a checkout of packorder's source;
    # its `packorder/` folder is not the package installed.
    os.execve(sys.executable, [sys.executable, "-P", "-m", "packorder", *args[i:]], env)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--make"] and len(sys.argv) == 3:
        print(exec_path(Path(sys.argv[2]).resolve()))
    else:
        main(sys.argv[1:])
