"""A pack read from standard input (`index-pack --stdin`), as receive-pack and fetch-pack
hand it over: after the header they read already, within the size the server allows."""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
from pathlib import Path
from typing import BinaryIO

from packorder.errors import PackError
from packorder.units import git_humanise_bytes


def too_large(limit: int) -> PackError:
    return PackError(f"pack exceeds maximum allowed size ({git_humanise_bytes(limit)})")


def pack_header(value: str) -> bytes:
    """The 12 bytes of `--pack_header=VERSION,OBJECTS` (a caller that read them already, as
    receive-pack and fetch-pack do), parsed as Git parses it."""
    version, comma, count = value.partition(",")
    # Git's words and status (128: it dies, it shows no usage).
    if not comma or not version.isdigit() or not count.isdigit():
        raise PackError(f"bad --pack_header={value}")
    try:
        return b"PACK" + struct.pack(">II", int(version), int(count))
    except struct.error:
        raise PackError(f"bad --pack_header={value}") from None


def receive(stream: BinaryIO, pack_dir: Path, header: bytes = b"", limit: int | None = None) -> Path:
    """Copy a pack from `stream` (after `header`, read by the caller) to a temporary file in
    `pack_dir`; past `limit` bytes, stop and fail as Git does."""
    pack_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="tmp_pack_", dir=pack_dir)
    path = Path(tmp)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(header)
            received = len(header)
            while chunk := stream.read(1 << 20):
                received += len(chunk)
                if limit and received > limit:
                    raise too_large(limit)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            path.unlink()
        raise
    return path
