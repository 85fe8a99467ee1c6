"""One repository's repack in a process of its own (`python -m packorder repack --json`),
so that a corrupt, locked or vanished repository, a runaway allocation or a hang costs that
repository alone, never the worker that runs the fleet's tasks.

The child gets an address-space limit (RLIMIT_AS, from the estimated peak), a timeout (then
SIGTERM, which packorder handles as an interrupt and cleans up after, then SIGKILL), and dies
with its parent (PR_SET_PDEATHSIG): a worker killed mid-task does not leave a repack running
that holds the repository's lock while the task is retried elsewhere. Killed at any moment,
the repack leaves the repository valid (its own guarantee).
"""

from __future__ import annotations

import ctypes
import json
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from packorder.fleet import run_record
from packorder.fleet.discovery import is_git_dir
from packorder.fleet.triage import footprint
from packorder.repacking import lock as lock_mod

TERM_GRACE = 10.0  # seconds between SIGTERM and SIGKILL
ZOMBIE_WAIT = 10.0  # seconds to wait for a killed holder of gc.pid to be reaped
PR_SET_PDEATHSIG = 1


def _limit_child(address_space: int) -> Any:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        if sys.platform.startswith("linux"):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    return limit


def repack_one(
    git_dir: str, order: str, timeout: float, address_space: int, extra_args: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Repack `git_dir` in a child process; the record of what happened (never raises for
    the repository's sake)."""
    path = Path(git_dir)
    record: dict[str, Any] = {"path": git_dir, "order": order, "status": run_record.FAILED, "error": None}
    if not is_git_dir(path):
        record["error"] = "no repository there any more" if not path.exists() else "not a git repository"
        return record
    record["packs_before"], record["bytes_before"] = footprint(path)
    _await_reaping(path)
    # -P: the package installed, never a `packorder/` folder of the working directory. Not -I,
    # which would also drop PYTHONPATH and the user's site-packages, where packorder may be.
    argv = [sys.executable, "-P", "-m", "packorder", "repack", "--json", "--order", order, *extra_args, git_dir]
    started = time.perf_counter()
    child = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_limit_child(address_space)
    )
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.terminate()
        try:
            out, err = child.communicate(timeout=TERM_GRACE)
        except subprocess.TimeoutExpired:
            child.kill()
            out, err = child.communicate()
        record["error"] = f"timed out after {timeout:.0f} s"
    except BaseException:
        child.kill()
        child.wait()
        raise
    record["seconds"] = time.perf_counter() - started
    if child.returncode == 0 and record["error"] is None:
        repacked = _json(out)
        record.update(
            status=run_record.DONE,
            rss_bytes=repacked.get("peak_rss_bytes"),
            verify=repacked.get("verify"),
            verified=True,  # a repack installs nothing it did not prove (its `verify` mode)
            objects=repacked.get("objects"),
        )
    elif record["error"] is None:
        record["error"] = _failure(child.returncode, err, address_space)
    if path.exists():
        record["packs_after"], record["bytes_after"] = footprint(path)
    return record


def _await_reaping(git_dir: Path) -> None:
    """A repack killed with its worker is a zombie until init reaps it, and a zombie counts
    as alive to the lock's rule (it answers kill(pid, 0)): the task's retry, started at once
    on another worker, would find the repository locked by the very run it replaces. Wait
    for the reaping (milliseconds), not for a live holder."""
    holder = lock_mod.read_holder(git_dir / lock_mod.GC_PID)
    if holder is None or holder.host != socket.gethostname():
        return
    deadline = time.monotonic() + ZOMBIE_WAIT
    while _zombie(holder.pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].startswith("Z")


def _json(out: bytes) -> dict[str, Any]:
    try:
        value = json.loads(out)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# What running out of address space looks like: Python's MemoryError, the loader unable to map
# a shared library (numpy's OpenBLAS at import), an allocation refused (ENOMEM).
OUT_OF_MEMORY = ("MemoryError", "failed to map segment", "Cannot allocate memory", "out of memory")


def _failure(status: int, err: bytes, address_space: int) -> str:
    """The child's own `fatal:` line, else how it ended."""
    text = err.decode(errors="replace")
    if any(sign in text for sign in OUT_OF_MEMORY):
        return f"out of memory under its address-space limit ({address_space >> 20} MiB)"
    lines = [line for line in text.splitlines() if line.strip()]
    fatal = [line.removeprefix("fatal: ") for line in lines if line.startswith("fatal: ")]
    if fatal:
        return fatal[-1]
    if status < 0:
        return f"killed by {signal.Signals(-status).name}"
    return f"exit {status}" + (f": {lines[-1]}" if lines else "")
