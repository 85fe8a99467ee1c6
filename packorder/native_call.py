"""The one way Python calls the native core: a long job runs in a thread with the GIL
released while this thread shows its progress, an interrupt cancels it and waits for it to
stop, and the core's PackFormatError(message, offset) becomes CorruptPackError with the
pack's path and the offset kept. Every caller goes through here, so that a broken pack
reads the same from index-pack, repack, the bitmap and the delta search."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from packorder import _native
from packorder.errors import CorruptPackError, Interrupted, interruption
from packorder.progress import ProgressCallback

T = TypeVar("T")

# The phases a job reports, numbered as the core numbers them (progress.rs).
INDEXING, RESOLVING, CHECKSUM = _native.PHASE_INDEXING, _native.PHASE_RESOLVING, _native.PHASE_CHECKSUM


def pack_error(e: _native.PackFormatError, path: str | os.PathLike[str] | None = None, what: str = "") -> Exception:
    """The error to raise for the core's PackFormatError `e` about the pack at `path`;
    `what` goes before the message ("new pack fails verification: ")."""
    message, offset = e.args
    if e.kind == "interrupted":  # the job saw its cancel flag
        return Interrupted()
    return CorruptPackError(what + message, offset, None if path is None else str(path), e.kind)


@contextlib.contextmanager
def pack_errors(path: str | os.PathLike[str] | None = None, what: str = "") -> Iterator[None]:
    """Raise the core's errors inside as pack_error does."""
    try:
        yield
    except _native.PackFormatError as e:
        raise pack_error(e, path, what) from None


def loose_header(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(type, size) of the loose object at `path`, read from the start of its zlib stream;
    a corrupt one is CorruptPackError (the core's message names the file)."""
    with pack_errors():
        return _native.loose_header(str(path))


def core_errors(fn: Callable[..., T]) -> Callable[..., T]:
    """A library function whose callers see the core's errors as CorruptPackError, never
    its own PackFormatError, wherever inside they come from (every call site converts what
    it expects; this is for the ones nobody expected)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except _native.PackFormatError as e:
            raise pack_error(e) from None

    return wrapper


def run_job(
    job: Any,
    work: Callable[[], T] | None = None,
    *,
    title: str | Mapping[int, str],
    count: int | None = None,
    path: str | os.PathLike[str] | None = None,
    what: str = "",
    progress: ProgressCallback | None = None,
) -> T:
    """Run `work` (default `job.run`), a call of the native `job` (which has `progress()` ->
    (phase, done, total) and `cancel()`), showing its counts under `title` (or, a mapping, the
    title of the phase it is in) out of `count` (default: the total it reports), and the
    phase done once it returns. Ctrl-C or a signal cancels the job and, once it has stopped,
    raises Interrupted; a pack found broken raises CorruptPackError (pack_error)."""

    def shown() -> tuple[str, int, int] | None:
        phase, done, total = job.progress()
        name = title if isinstance(title, str) else title.get(phase)
        if name is None:
            return None
        if count is not None:
            total = count
        return name, min(done, total) if total else done, total

    def poll() -> None:
        if progress is not None and (line := shown()) is not None:
            progress(*line)

    try:
        result = _run_polled(work or job.run, poll, job.cancel)
    except _native.PackFormatError as e:
        raise pack_error(e, path, what) from None
    except KeyboardInterrupt as e:
        raise interruption(e) from None
    if progress is not None and (line := shown()) is not None and line[2]:
        progress(line[0], line[2], line[2])
    return result


def _run_polled(work: Callable[[], T], poll: Callable[[], None], cancel: Callable[[], None]) -> T:
    """Run `work` in a thread and `poll` here every 0.1 s. On KeyboardInterrupt, `cancel`
    asks the work to stop, and it is waited for before the interrupt goes on, so that the
    caller's cleanup runs with no thread still writing."""
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(work())
        except BaseException as e:
            error.append(e)

    thread = threading.Thread(target=target, name="packorder-native", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.1)
            poll()
    except KeyboardInterrupt:
        cancel()
        thread.join()
        raise
    if error:
        raise error[0]
    return result[0]
