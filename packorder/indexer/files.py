"""The files index-pack writes beside a pack: the .idx and .rev written whole under a
temporary name (or, with --verify, compared with those there), a .keep or .promisor with
its message, and every one of them removed again if a later step fails."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from packorder.durable import fsync_dir, write_atomically
from packorder.errors import PackError, UsageError

Writer = Callable[[BinaryIO], object]


def derive(name: Path, old: str, new: str) -> Path:
    if not name.name.endswith("." + old):
        raise UsageError(f"packfile name '{name}' does not end with '.{old}'")
    return name.with_name(name.name[: -len(old)] + new)


@contextlib.contextmanager
def cleanup_on_error(paths: list[Path]) -> Iterator[None]:
    try:
        yield
    except BaseException:
        for p in paths:
            with contextlib.suppress(OSError):
                p.unlink()
        raise


def write_or_verify(verify: bool, idx_path: Path, rev_path: Path | None, write_idx: Writer, write_rev: Writer) -> None:
    """Write the .rev, then the .idx that makes the pack visible; or, with --verify, compare
    them with those there."""
    if verify:
        verify_same(idx_path, write_idx, "index")
        if rev_path is not None and rev_path.exists():
            verify_same(rev_path, write_rev, "reverse index")
        return
    if rev_path is not None:
        write_atomically(rev_path, write_rev)
    write_atomically(idx_path, write_idx)
    fsync_dir(idx_path.parent)


def write_special(path: Path, message: str | bool) -> bool:
    """A .keep or .promisor file holding `message` (none for a bare --keep or --promisor);
    whether it was written: one already there is left as it is, as Git leaves it."""
    if path.exists():
        return False
    text = f"{message}\n" if message and message is not True else ""
    write_atomically(path, lambda f: f.write(text.encode()), 0o644)
    return True


def verify_same(path: Path, write: Writer, what: str) -> None:
    buf = io.BytesIO()
    write(buf)
    expected = buf.getvalue()
    actual = path.read_bytes()
    if actual == expected:
        return
    pairs = enumerate(zip(actual, expected, strict=False))
    at = next((i for i, (a, b) in pairs if a != b), min(len(actual), len(expected)))
    # Git's words (its checked file writer's), then where the two part.
    raise PackError(f"sha1 file '{path}' validation error: the {what} differs from the pack's from byte {at}")
