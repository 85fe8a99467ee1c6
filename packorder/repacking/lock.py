"""The lock a repack holds: Git's own `gc.pid`, taken the way `git gc` takes it.

`$GIT_DIR/gc.pid` names the process that maintains the repository ("PID HOST"). Using Git's
file and rule means a `git gc` started beside a packorder repack refuses to run, and a
packorder repack refuses to start beside a `git gc`; and `git gc` and `git count-objects`
do not report it as garbage, as they did the old `objects/pack/packorder-repack.lock`.

Git's maintenance (`git maintenance run`, whose repacking tasks do not take gc.pid) holds
`objects/maintenance.lock` while it runs, and skips its run when that file exists: packorder
holds it too, beside gc.pid, so that Git's geometric repack never runs beside packorder's.
It names its holder as gc.pid does; one left by a killed packorder is taken over, one of Git's
(empty) only once it is 12 hours old, or with --force. Where Git's repacking tasks are off
(docs/maintenance.md's recipe), a running `git maintenance` touches no pack, and packorder
runs beside it without the file: that is how it runs when Git's maintenance starts it (the
pre-auto-gc hook).

The rule, Git's: the file is read and rewritten under `gc.pid.lock` (created exclusively), and
a `gc.pid` is honoured only if it is younger than 12 hours and names either another host or
a process that is alive on this one. So a lock left by a killed repack costs the next run one
warning. packorder adds the holder's start time on a second line (Git reads only the first
two words), so that a dead holder whose pid was reused is recognised as dead too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packorder.errors import RepositoryError
from packorder.faults import crash_point

GC_PID = "gc.pid"
MAINTENANCE_LOCK = Path("objects") / "maintenance.lock"
STALE_AFTER = 12 * 3600  # seconds: Git's limit on how long a gc.pid is honoured
# gc.pid.lock is held only while gc.pid is read and rewritten (microseconds); an empty one
# this old was left by a process killed between creating and writing it.
STALE_EMPTY_LOCKFILE_AFTER = 5
LOCKFILE_WAIT = 2.0  # seconds to wait for a gc.pid.lock held by a live process
# Seconds to wait for Git's maintenance to finish (it runs after every push, briefly) before
# a repack gives up; `gc --auto` does not wait, as Git's own maintenance does not.
MAINTENANCE_WAIT = 30.0
# Earlier versions of packorder locked with this file, which Git reports as garbage.
LEGACY_LOCK = Path("objects") / "pack" / "packorder-repack.lock"

Warn = Callable[[str], None]


class LockHeld(RepositoryError):
    """Another repack or gc holds the repository."""

    def __init__(self, holder: Holder) -> None:
        self.holder = holder
        super().__init__(
            f"gc is already running on machine '{holder.host}' pid {holder.pid} ({holder.path}); "
            "if it is not, remove that file or wait 12 hours"
        )


@dataclass
class Holder:
    pid: int
    host: str
    started: str | None  # the holder's start time, when packorder wrote the file
    age: float  # seconds since the file was written
    path: Path


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), to tell a reused pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces: fields are counted after its ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def process_alive(pid: int) -> bool:
    """Whether a process of this number runs on this host (one we may not signal runs)."""
    try:
        os.kill(pid, 0)
    except OSError as e:
        return e.errno == errno.EPERM
    return True


def read_holder(path: Path) -> Holder | None:
    """Who `path` (a gc.pid) names, or None if it is absent or unreadable as Git reads it."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            age = time.time() - os.fstat(f.fileno()).st_mtime
            lines = f.read().splitlines()
    except OSError:
        return None
    words = lines[0].split() if lines else []
    if len(words) < 2 or not words[0].isdigit():
        return None
    started = None
    if len(lines) > 1 and lines[1].startswith("packorder-start "):
        started = lines[1].split()[1]
    return Holder(int(words[0]), words[1], started, age, path)


def holds(holder: Holder, my_host: str) -> bool:
    """Git's rule (builtin/gc.c, lock_repo_for_gc), plus the start time where there is one."""
    if holder.age > STALE_AFTER:
        return False
    if holder.host != my_host:
        return True  # a gc on another machine sharing the repository: Git trusts it for 12 hours
    if not process_alive(holder.pid):
        return False
    now = _start_time(holder.pid) if holder.started is not None else None
    return now is None or now == holder.started


class RepositoryLock:
    """gc.pid and maintenance.lock, held until release(); release removes each only if it
    still names this process."""

    def __init__(self, path: Path, content: str, maintenance: Path | None = None) -> None:
        self.path = path
        self.content = content
        self.maintenance = maintenance

    def release(self) -> None:
        for path in (self.maintenance, self.path):
            with contextlib.suppress(OSError):
                if path is not None and path.read_text(errors="replace") == self.content:
                    path.unlink()


class MaintenanceRunning(LockHeld):
    """Git's maintenance holds the repository (objects/maintenance.lock)."""

    def __init__(self, path: Path) -> None:
        RepositoryError.__init__(
            self, f"git maintenance is running ({path} exists); if it is not, remove that file or wait 12 hours"
        )
        self.holder = None


# The tasks of `git maintenance` that rewrite packs (the gc task takes gc.pid, as we do).
REPACKING_TASKS = ("geometric-repack", "incremental-repack", "loose-objects")


def _git_leaves_packs_alone(git_dir: Path) -> bool:
    """Whether Git's maintenance is configured to run none of its repacking tasks."""
    from packorder.gitcmd import read_config

    config = read_config(git_dir)
    return all(not config.get_bool(f"maintenance.{task}.enabled", True) for task in REPACKING_TASKS)


def _take_maintenance_lock(git_dir: Path, content: str, warn: Warn | None, force: bool, wait: float) -> Path | None:
    """Hold objects/maintenance.lock as Git's maintenance holds it (see the module's doc),
    waiting up to `wait` seconds for a running one to finish. None where there is no
    objects directory to hold it in."""
    path = git_dir / MAINTENANCE_LOCK
    if not path.parent.is_dir():
        return None
    deadline = time.monotonic() + wait
    attempts = 0
    leaves_packs_alone: bool | None = None
    while attempts < 2:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = read_holder(path)
            try:
                age = time.time() - path.stat().st_mtime
            except FileNotFoundError:
                continue
            live = holds(holder, socket.gethostname()) if holder is not None else age <= STALE_AFTER
            if live and holder is None and not force:
                if leaves_packs_alone is None:
                    leaves_packs_alone = _git_leaves_packs_alone(git_dir)
                if leaves_packs_alone:
                    return None  # Git's maintenance holds it, and will not repack beside us
            if live and not force:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise MaintenanceRunning(path) from None
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            if warn is not None:
                why = "taken over by --force" if live else "left by a process that is gone"
                warn(f"took over {path}: {why}")
            attempts += 1
            continue
        except OSError as e:
            raise RepositoryError(f"cannot lock the repository: {path}: {e.strerror}") from None
        try:
            os.write(fd, content.encode())
        finally:
            os.close(fd)
        return path
    raise RepositoryError(f"cannot lock the repository: {path} keeps coming back")


def acquire(
    git_dir: Path, warn: Warn | None = None, force: bool = False, maintenance_wait: float | None = None
) -> RepositoryLock:
    """Take gc.pid and objects/maintenance.lock for this process, or raise LockHeld. A stale
    one (dead holder, or older than 12 hours) is taken over with a warning; `force` takes
    over a live one, as `git gc --force`. A running `git maintenance` is waited for up to
    `maintenance_wait` seconds."""
    path = git_dir / GC_PID
    _remove_legacy_lock(git_dir, warn)
    lockfile = _create_lockfile(path.with_name(GC_PID + ".lock"), warn)
    try:
        my_host = socket.gethostname()
        holder = read_holder(path)
        if holder is not None and holds(holder, my_host) and not force:
            raise LockHeld(holder)
        if holder is not None and warn is not None:
            why = "older than 12 hours" if holder.age > STALE_AFTER else "no longer running"
            if force and holds(holder, my_host):
                why = "taken over by --force"
            warn(f"took over {path}: its holder (pid {holder.pid} on {holder.host}) is {why}")
        pid = os.getpid()
        started = _start_time(pid)
        content = f"{pid} {my_host}\n" + (f"packorder-start {started}\n" if started else "")
        os.write(lockfile, content.encode())
        os.close(lockfile)
        lockfile = -1
        crash_point("lockfile-written")
        os.replace(path.with_name(GC_PID + ".lock"), path)
        crash_point("locked")
    except BaseException:
        if lockfile >= 0:
            os.close(lockfile)
        with contextlib.suppress(OSError):
            path.with_name(GC_PID + ".lock").unlink()
        raise
    held = RepositoryLock(path, content)
    try:
        wait = MAINTENANCE_WAIT if maintenance_wait is None else maintenance_wait
        held.maintenance = _take_maintenance_lock(git_dir, content, warn, force, wait)
    except BaseException:
        held.release()
        raise
    return held


def _create_lockfile(lock: Path, warn: Warn | None) -> int:
    """Create `lock` exclusively (Git's lockfile protocol). Its writer puts the final
    gc.pid content ("PID HOST") in it before renaming it, so one naming a dead process was
    left by a kill and is removed; an empty one, by a kill between creating and writing it,
    once it is a few seconds old. A live holder is waited for briefly."""
    deadline = time.monotonic() + LOCKFILE_WAIT
    my_host = socket.gethostname()
    while True:
        try:
            return os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = read_holder(lock)
            try:
                age = time.time() - lock.stat().st_mtime
            except FileNotFoundError:
                continue
            dead = holder is not None and not holds(holder, my_host)
            if dead or (holder is None and age > STALE_EMPTY_LOCKFILE_AFTER):
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()
                if warn is not None:
                    warn(f"removed {lock}, left by a killed process")
                continue
            if time.monotonic() > deadline:
                raise RepositoryError(
                    f"cannot lock the repository: {lock} exists; another gc or repack is starting "
                    "(if none is, remove that file)"
                ) from None
            time.sleep(0.02)
        except OSError as e:
            raise RepositoryError(f"cannot lock the repository: {lock}: {e.strerror}") from None


def _remove_legacy_lock(git_dir: Path, warn: Warn | None) -> None:
    """The lock of earlier packorder versions ("pid N on HOST"): refuse while its holder
    lives, remove it otherwise."""
    path = git_dir / LEGACY_LOCK
    try:
        words = path.read_text(errors="replace").split()
    except OSError:
        return
    if len(words) >= 4 and words[1].isdigit() and words[3] == socket.gethostname() and process_alive(int(words[1])):
        raise RepositoryError(f"an older packorder repack holds {path} (pid {words[1]}); wait for it to finish")
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    if warn is not None:
        warn(f"removed {path}, the lock of a killed repack")
