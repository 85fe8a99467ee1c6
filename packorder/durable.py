"""Durable file writes: a temporary name beside the target, fsync, rename. A reader (Git)
sees either no file or the whole file, and after a crash never a file whose name is there
but whose bytes are not."""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from packorder.faults import crash_point

# Every temporary file packorder makes is named `.tmp-packorder-PID-...`: the next run knows
# it for a leftover once PID is dead (recovery.py). Not Git's `tmp_` on purpose: `git prune
# --expire=now`, run while a repack writes, would delete the pack being written.
TEMP_PREFIX = ".tmp-packorder-"


def temp_prefix() -> str:
    return f"{TEMP_PREFIX}{os.getpid()}-"


def write_atomically(path: Path, write: Callable[[BinaryIO], object], mode: int = 0o444) -> None:
    """Write through `write` to a temporary file beside `path`, fsync it, then rename it into
    place; on any error the temporary file is removed and `path` is untouched."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix() + path.name + "-", dir=path.parent)
    except OSError as e:
        raise OSError(e.errno, f"cannot create a file there: {e.strerror}", str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        crash_point("temporary-written")
        os.chmod(tmp, mode)
        os.replace(tmp, path)
        crash_point("temporary-renamed")
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        # Name the file being written (a full disk says only "No space left on device").
        raise OSError(e.errno, f"cannot write it: {e.strerror}", str(path)) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def fsync_dir(path: Path) -> None:
    """Make the renames in directory `path` durable. Some filesystems cannot fsync a
    directory (EINVAL, ENOTSUP): there is nothing more to do on those."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
    finally:
        os.close(fd)
