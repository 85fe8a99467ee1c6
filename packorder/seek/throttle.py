"""Cold runs on a slow disk: a workload's reads from the disk limited to N requests a second,
with the cgroup v1 `blkio` throttle.

Dropping a pack from the page cache is not enough to make a cold run cost what it would on a
real disk when the disk is itself cached: on a VM whose host caches its image (this project's
machines), a cold `git blame` ran within 0.02-0.3 s of a warm one, so layouts could not differ
in cold time. Limiting the reads per second makes every request the kernel sends to the disk
cost what it costs on a slow device, so a layout that reads fewer, longer stretches (the
kernel reads ahead around each request) shows it in wall time.

Linux only, as root, with a blkio hierarchy mounted (cgroup v1); anything else is one clear
error before the experiment starts.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from packorder.errors import UsageError

WHAT = "--cold-iops"


def _blkio_mount(mounts: Path = Path("/proc/mounts")) -> Path:
    try:
        lines = mounts.read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 4 and fields[2] == "cgroup" and "blkio" in fields[3].split(","):
            return Path(fields[1])
    raise UsageError(f"{WHAT} needs a cgroup v1 blkio hierarchy (Linux), and none is mounted")


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


def _own_group(hierarchy: Path) -> Path:
    """This process's blkio cgroup directory."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, where = line.split(":", 2)
        if "blkio" in controllers.split(","):
            return hierarchy / where.lstrip("/")
    return hierarchy


def check(path: Path, iops: int) -> tuple[str, Path]:
    """The disk holding `path` (or the nearest existing parent) and the blkio hierarchy, or one
    clear error, before anything is made."""
    if iops <= 0:
        raise UsageError(f"{WHAT} takes a positive number of reads a second")
    while not path.exists() and path.parent != path:
        path = path.parent
    device = block_device(path)
    hierarchy = _blkio_mount()
    if not os.access(hierarchy, os.W_OK):
        raise UsageError(f"{WHAT}: cannot make a cgroup under {hierarchy} (it needs root)")
    return device, hierarchy


class ReadLimit:
    """A cgroup whose members may send `iops` read requests a second to the disk holding
    `path`. `applied()` puts this process (and so the workloads it starts) in it for a while;
    `close()` removes it."""

    def __init__(self, path: Path, iops: int) -> None:
        self.iops = iops
        self.device, hierarchy = check(path, iops)
        self.home = _own_group(hierarchy)
        self.group = hierarchy / f"packorder-{os.getpid()}"
        try:
            self.group.mkdir(exist_ok=True)
        except OSError as e:
            raise UsageError(f"{WHAT}: cannot make the cgroup {self.group} ({e.strerror}; it needs root)") from None
        try:
            (self.group / "blkio.throttle.read_iops_device").write_text(f"{self.device} {iops}\n")
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
        text = (self.group / "blkio.throttle.io_serviced").read_text()
        for line in text.splitlines():
            fields = line.split()
            if len(fields) == 3 and fields[0] == self.device and fields[1] == "Read":
                return int(fields[2])
        return 0

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
