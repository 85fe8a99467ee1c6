"""A pack read from standard input (`index-pack --stdin`), as receive-pack and fetch-pack
hand it over: after the header they read already, within the size the server allows, and
read as Git reads it, so that what follows the pack is left where it was (but for the end of
Git's last read, which index-pack echoes)."""

from __future__ import annotations

import contextlib
import io
import mmap
import os
import select
import stat
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, NamedTuple

from packorder import _native
from packorder.errors import CorruptPackError, PackError
from packorder.format.object_format import ObjectFormat
from packorder.format.pack import OBJ_REF_DELTA
from packorder.gitcmd import git_version
from packorder.native_call import pack_errors, run_job
from packorder.progress import ProgressCallback, show_bytes, start_phase
from packorder.settings import Limits, physical_memory
from packorder.units import git_humanise_bytes

PACK_HEADER_LEN = 12


def git_input_buffer() -> int:
    """The buffer through which the Git in use reads a pack on standard input (index-pack's
    input_buffer): where its reads end, so what it echoes past the pack and the bytes its
    progress shows, follow from its size. 128 KiB since Git 2.55, 4096 bytes before."""
    return 128 << 10 if git_version() >= (2, 55) else 4096


def too_large(limit: int) -> PackError:
    return PackError(f"pack exceeds maximum allowed size ({git_humanise_bytes(limit)})")


def pack_header(value: str) -> bytes:
    """The 12 bytes of `--pack_header=VERSION,OBJECTS` (a caller that read them already, as
    receive-pack and fetch-pack do), parsed as Git parses it."""
    version, comma, count = value.partition(",")
    if not comma or not version.isdigit() or not count.isdigit():
        raise _bad_pack_header(value)
    try:
        return b"PACK" + struct.pack(">II", int(version), int(count))
    except struct.error:
        raise _bad_pack_header(value) from None


def _bad_pack_header(value: str) -> PackError:
    # The words of the Git in use (reworded in 2.49) and its status (128: it dies, it shows
    # no usage); asked only for a bad header, not on every push.
    return PackError(f"bad --pack_header: {value}" if git_version() >= (2, 49) else f"bad --pack_header={value}")


class Received(NamedTuple):
    path: Path
    # What was read past the pack's end (Git echoes it to stdout after the pack's name).
    rest: bytes
    # Read from a pipe: the native PackStream that made the indexer's first pass as the
    # pack arrived (PackIndexer.adopt takes it over).
    parsed: object | None = None
    # Copied from a regular file to its end (see receive): the indexer's scan shows the
    # entries arriving, and file_reads what Git's reads of that file had read.
    copied: bool = False
    header_given: bool = False


def _reader(stream: BinaryIO) -> Callable[[int], bytes]:
    """Reads of at most n bytes from `stream`, each as one read(2) where the stream is a raw
    file (a pipe answers what it holds, as it answers Git), "read error on input" as Git's."""

    def read(n: int) -> bytes:
        while True:
            try:
                data = stream.read(n)
            except OSError as e:
                raise PackError(f"read error on input: {os.strerror(e.errno or 0)}") from None
            if data is not None:
                return data
            select.select([stream], [], [])  # a non-blocking descriptor with nothing yet

    return read


def _is_regular_file(stream: BinaryIO) -> bool:
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError, io.UnsupportedOperation):
        return False


def receive(
    stream: BinaryIO,
    pack_dir: Path,
    header: bytes = b"",
    limit: int | None = None,
    object_format: str = "sha1",
    progress: ProgressCallback | None = None,
    title: str = "Receiving objects",
    first_pass: dict | None = None,
) -> Received:
    """Copy a pack from `stream` (after `header`, read by the caller) to a temporary file in
    `pack_dir`; past `limit` bytes, stop and fail as Git does.

    A pipe or a socket is read as Git reads it (native PackStream): never past what Git would
    have read, which stops within its buffer's length (git_input_buffer) after the pack's
    end; `progress` shows the entries and the bytes read as they arrive. Each entry is inflated to find its end, and
    that is the indexer's first pass, made as the pack arrives (`first_pass`: PackStream's
    options, and `checks`, what its set_checks takes, if any). A regular file Git reads
    to its end, or dies ("pack has junk at the end"): it is copied to its end in large reads,
    the same outcome at a fraction of the work (the indexer's scan finds the entries, and the
    junk)."""
    pack_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="tmp_pack_", dir=pack_dir)
    path = Path(tmp)
    copied = _is_regular_file(stream)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as out:
            out.write(header)
            parser = None
            if copied:
                _copy(stream, out, len(header), limit)
                rest = b""
            else:
                options = dict(first_pass or {})
                checks = options.pop("checks", None)
                with pack_errors():
                    parser = _native.PackStream(
                        header, limit or 0, object_format, git_buffer=git_input_buffer(), **options
                    )
                if checks is not None:
                    parser.set_checks(checks)
                rest = _stream(stream, out, parser, limit, progress, title)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            path.unlink()
        raise
    return Received(path, rest, parser, copied, bool(header))


def _copy(stream: BinaryIO, out: BinaryIO, received: int, limit: int | None) -> None:
    read = _reader(stream)
    while chunk := read(1 << 20):
        received += len(chunk)
        if limit and received > limit:
            raise too_large(limit)
        out.write(chunk)


def _stream(
    stream: BinaryIO,
    out: BinaryIO,
    parser,
    limit: int | None,
    progress: ProgressCallback | None,
    title: str,
) -> bytes:
    """Read the pack into `parser`, as far as Git's reads would go (PackStream says how much
    to ask for); returns what was read past its end."""
    read = _reader(stream)
    started, shown = False, 0
    with pack_errors():
        while True:
            counts = parser.counts()
            objects = counts.entries_read
            if not started and counts.bytes_used >= PACK_HEADER_LEN:
                start_phase(progress, title)  # Git's start, once it has the header
                started = True
            if progress is not None and objects > shown:
                progress(title, objects, counts.entries_declared)
                shown = objects
            want = parser.want()
            if not want:
                break
            counting = parser.in_entries  # Git counts the bytes read for the entries
            data = read(want)
            if not data:
                parser.end_of_input()
                if parser.want():
                    raise PackError("early EOF")
                continue
            out.write(data)
            parser.feed(data)
            if counting:
                show_bytes(progress, parser.counts().bytes_git_read)
    if parser.over_limit:
        raise too_large(limit or 0)
    out.truncate(parser.counts().bytes_used)
    return parser.rest()


def file_reads(
    pack: Path,
    offsets: list[int],
    kinds: bytes,
    header_given: bool,
    rawsz: int,
    available: int | None = None,
    buffer: int = 4096,
) -> list[int]:
    """The bytes Git had read after each of its reads among the entries of `pack` (a copy of
    a regular file, as received), as display_throughput counts them: its reads ask for what
    fills its buffer whenever its parse needs more, a byte at a time but for a
    REF_DELTA's base id and the trailer (the hash's length at once), and a file of
    `available` bytes (default: the pack's) answers them in full. The header was given
    (`--pack_header`), or read before the entries. `buffer`: Git's (git_input_buffer)."""
    with open(pack, "rb") as f:
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        end = len(data) - rawsz  # the last entry's end
        available = len(data) if available is None else available
        have = PACK_HEADER_LEN if header_given else min(buffer, available)
        reads: list[int] = []

        def upto(x: int) -> None:  # every byte before x, one at a time
            nonlocal have
            while have < x and have < available:
                have = min(have + buffer, available)
                reads.append(have)

        def at_once(at: int, n: int) -> None:  # n bytes from `at`, at once
            nonlocal have
            while have - at < n and have < available:
                have = min(at + buffer, available)
                reads.append(have)

        for offset, kind in zip(offsets, kinds, strict=True):
            if kind == OBJ_REF_DELTA:
                at = offset
                while data[at] & 0x80:  # the type and size
                    at += 1
                upto(at + 1)
                at_once(at + 1, rawsz)
        upto(end)
        return reads
    finally:
        data.close()


def scan_copied(run, got: Received, title: str, fmt: ObjectFormat) -> None:
    """The first pass over a pack copied from a regular file (index_pack's _Run `run`), shown
    as Git shows it receiving that file: the entries as the scan finds them, and at the end
    the bytes Git's reads had read (file_reads). Junk after the pack ends it in Git's words,
    once Git's last progress line is out (the pack alone scanned again for it)."""
    show = run.progress
    if show is not None:
        run.progress = lambda t, done, total: None if total and done >= total else show(t, done, total)
    try:
        run.call("scan", run.native.scan)
    except CorruptPackError as e:
        if e.message != "pack has junk at the end":
            raise
        if show is not None and e.offset is not None:
            available = got.path.stat().st_size
            os.truncate(got.path, e.offset + fmt.rawsz)  # the pack without the junk
            alone = _native.PackIndexer(str(got.path), Limits(1, 64 << 20, physical_memory()), object_format=fmt.name)
            run_job(alone, alone.scan, title={}, path=got.path)
            _show_end(show, alone, got, title, fmt.rawsz, available)
        raise PackError(e.message) from None
    finally:
        run.progress = show
    if show is not None:
        _show_end(show, run.native, got, title, fmt.rawsz)


def _show_end(
    show: ProgressCallback, native, got: Received, title: str, rawsz: int, available: int | None = None
) -> None:
    entries = native.entries()
    kinds = entries.kinds
    offsets = memoryview(entries.offsets).cast("Q").tolist()
    reads = file_reads(got.path, offsets, kinds, got.header_given, rawsz, available, git_input_buffer())
    start_phase(show, title)
    for total in reads[:1] + reads[-1:]:
        show_bytes(show, total)  # Git's count starts at its first read among the entries
    if kinds:
        show(title, len(kinds), len(kinds))
