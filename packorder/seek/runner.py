"""Running a workload's command: wall time, progress while it runs, one clear error if it fails,
and dropping pack files from the page cache for cold runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from packorder.errors import PackError, RepositoryError, UsageError
from packorder.gitcmd import git_env
from packorder.progress import ProgressCallback


@dataclass(frozen=True)
class Command:
    """One program run: argv, its standard input, extra environment, working directory."""

    argv: list[str]
    stdin: bytes = b""
    env: dict[str, str | None] = field(default_factory=dict)  # None: remove from the environment
    cwd: Path | None = None
    hint: str = ""  # added to the error message when the command fails
    label: str = ""  # how to name the command in messages (default: its argv)
    ok: tuple[int, ...] = (0,)  # the exit statuses of a run that did its work

    def display(self) -> str:
        return self.label or " ".join(self.argv)


def check_program(name: str, what: str) -> str:
    """The path of an executable, or one clear error naming what needs it."""
    found = shutil.which(name)
    if found is None:
        raise PackError(f"{name}: not found ({what})")
    return found


def run(
    command: Command,
    progress: ProgressCallback | None = None,
    title: str = "",
    count: Callable[[], int] | None = None,
) -> float:
    """Run `command` with output discarded; its wall time in seconds. While it runs, `count`
    (e.g. accesses logged so far) feeds the progress line."""
    env = git_env({k: v for k, v in command.env.items() if v is not None}, as_stored=False)
    for name in [k for k, v in command.env.items() if v is None]:
        env.pop(name, None)
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as stdin:
        stdin.write(command.stdin)
        stdin.seek(0)
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                command.argv, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=command.cwd
            )
        except OSError as e:
            raise RepositoryError(f"cannot run {command.argv[0]}: {e.strerror}") from None
        try:
            while True:
                try:
                    proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    if progress is not None and count is not None:
                        progress(title, count(), 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        seconds = time.perf_counter() - start
        if proc.returncode not in command.ok:
            err.seek(0)
            raise RepositoryError(failure_message(command, proc.returncode, err.read().decode(errors="replace")))
    return seconds


def failure_message(command: Command, status: int, stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    # Git's own diagnosis is its last fatal/error line; strace's is its last line.
    reason = next((line for line in reversed(lines) if line.startswith(("fatal:", "error:"))), None)
    reason = reason or (lines[-1] if lines else f"exit status {status}")
    message = f"{command.display()} failed: {reason}"
    return f"{message} ({command.hint})" if command.hint else message


def drop_from_page_cache(paths: Iterable[Path]) -> int:
    """Ask the kernel to forget the cached pages of `paths` (POSIX_FADV_DONTNEED); bytes asked.

    Pages still mapped by a running process, or dirty, stay: the next run of a workload is as
    cold as the kernel allows, which is what Git itself would meet after memory pressure.
    """
    if not hasattr(os, "posix_fadvise"):
        raise UsageError("{cold} needs posix_fadvise, which this system does not have", params=("cold",))
    total = 0
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return total
