"""Cold runs on a slow disk: a workload's reads from the disk limited to N requests a second,
with the cgroup v2 `io` controller (`io.max`, `riops=N`) or the cgroup v1 `blkio` throttle.

Dropping a pack from the page cache is not enough to make a cold run cost what it would on a
real disk when the disk is itself cached: on a VM whose host caches its image (this project's
machines), a cold `git blame` ran within 0.02-0.3 s of a warm one, so layouts could not differ
in cold time. Limiting the reads per second makes every request the kernel sends to the disk
cost what it costs on a slow device, so a layout that reads fewer, longer stretches (the
kernel reads ahead around each request) shows it in wall time.

Linux only, as root, with a cgroup v2 hierarchy whose top enables `io` for its children, or a
cgroup v1 `blkio` hierarchy (a hybrid machine has `io` bound to v1); anything else is one
clear error before the experiment starts.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from packorder.errors import UsageError

WHAT = "--cold-iops"


@dataclass(frozen=True)
class Hierarchy:
    """The cgroup hierarchy the limit's cgroup is made in (at its top), and its version."""

    root: Path
    version: int  # 2: the io controller, 1: blkio

    def limit_file(self, device: str, iops: int) -> tuple[str, str]:
        """The file of a cgroup that limits its reads from `device`, and what to write there."""
        if self.version == 2:
            return "io.max", f"{device} riops={iops}\n"
        return "blkio.throttle.read_iops_device", f"{device} {iops}\n"

    def reads(self, group: Path, device: str) -> int:
        """Read requests the members of `group` have sent to `device` so far."""
        if self.version == 2:
            # io.stat: `MAJ:MIN rbytes=N wbytes=N rios=N wios=N ...`
            for line in (group / "io.stat").read_text().splitlines():
                fields = line.split()
                if fields and fields[0] == device:
                    counts = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
                    return int(counts.get("rios", 0))
            return 0
        for line in (group / "blkio.throttle.io_serviced").read_text().splitlines():
            fields = line.split()
            if len(fields) == 3 and fields[0] == device and fields[1] == "Read":
                return int(fields[2])
        return 0

    def own_group(self, own: Path = Path("/proc/self/cgroup")) -> Path:
        """This process's cgroup in the hierarchy."""
        for line in own.read_text().splitlines():
            number, controllers, where = line.split(":", 2)
            v2 = number == "0" and controllers == ""
            if (self.version == 2 and v2) or (self.version == 1 and "blkio" in controllers.split(",")):
                return self.root / where.lstrip("/")
        return self.root


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def find_hierarchy(mounts: Path = Path("/proc/mounts")) -> Hierarchy:
    """cgroup v2 where its top offers the io controller (a unified machine; on a hybrid one
    the v1 blkio hierarchy has the disks), else cgroup v1's blkio; else one clear error."""
    try:
        lines = mounts.read_text().splitlines()
    except OSError:
        lines = []
    entries = [fields for fields in (line.split() for line in lines) if len(fields) >= 4]
    for _, mount, kind, _options, *_ in entries:
        if kind == "cgroup2" and "io" in _words(Path(mount) / "cgroup.controllers"):
            if "io" not in _words(Path(mount) / "cgroup.subtree_control"):
                raise UsageError(
                    f"{WHAT}: the io controller is not enabled for the cgroups under {mount} "
                    f"(as root: echo +io > {mount}/cgroup.subtree_control)"
                )
            return Hierarchy(Path(mount), 2)
    for _, mount, kind, options, *_ in entries:
        if kind == "cgroup" and "blkio" in options.split(","):
            return Hierarchy(Path(mount), 1)
    raise UsageError(
        f"{WHAT} needs cgroup v2 with the io controller or a cgroup v1 blkio hierarchy (Linux), and neither is mounted"
    )


def block_device(path: Path) -> str:
    """'MAJOR:MINOR' of the whole disk holding `path` (the throttle takes disks, not
    partitions)."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    if major == 0:
        raise UsageError(f"{WHAT}: {path} has no block device of its own (tmpfs, overlay, btrfs, network)")
    node = Path(f"/sys/dev/block/{major}:{minor}")
    if (node / "partition").exists():
        try:
            return (node.resolve().parent / "dev").read_text().strip()
        except OSError as e:
            raise UsageError(f"{WHAT}: cannot find the disk holding {path} ({e.strerror})") from None
    return f"{major}:{minor}"


def check(path: Path, iops: int) -> tuple[str, Path]:
    """The disk holding `path` (or the nearest existing parent) and the top of the cgroup
    hierarchy the limit is made in, or one clear error, before anything is made."""
    device, hierarchy = _checked(path, iops)
    return device, hierarchy.root


def _checked(path: Path, iops: int) -> tuple[str, Hierarchy]:
    if iops <= 0:
        raise UsageError(f"{WHAT} takes a positive number of reads a second")
    while not path.exists() and path.parent != path:
        path = path.parent
    device = block_device(path)
    hierarchy = find_hierarchy()
    if not os.access(hierarchy.root, os.W_OK):
        raise UsageError(f"{WHAT}: cannot make a cgroup under {hierarchy.root} (it needs root)")
    return device, hierarchy


class ReadLimit:
    """A cgroup whose members may send `iops` read requests a second to the disk holding
    `path`. `applied()` puts this process (and so the workloads it starts) in it for a while;
    `close()` removes it."""

    def __init__(self, path: Path, iops: int) -> None:
        self.iops = iops
        self.device, self.hierarchy = _checked(path, iops)
        self.home = self.hierarchy.own_group()
        self.group = self.hierarchy.root / f"packorder-{os.getpid()}"
        try:
            self.group.mkdir(exist_ok=True)
        except OSError as e:
            raise UsageError(f"{WHAT}: cannot make the cgroup {self.group} ({e.strerror}; it needs root)") from None
        name, line = self.hierarchy.limit_file(self.device, iops)
        try:
            (self.group / name).write_text(line)
        except OSError as e:
            self.close()
            raise UsageError(f"{WHAT}: cannot limit the reads of disk {self.device} ({e.strerror})") from None

    def _join(self, group: Path) -> None:
        (group / "cgroup.procs").write_text(f"{os.getpid()}\n")

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        self._join(self.group)
        try:
            yield
        finally:
            self._join(self.home)

    def reads(self) -> int:
        """Read requests this cgroup's members have sent to the disk so far."""
        return self.hierarchy.reads(self.group, self.device)

    def close(self) -> None:
        try:
            self.group.rmdir()
        except OSError as e:
            # A workload's straggler still in it: the kernel removes nothing that has members.
            if e.errno not in (errno.ENOENT, errno.EBUSY):
                raise

    def __enter__(self) -> ReadLimit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
