"""`packorder index-pack`: parsed with argparse, not click. A server runs index-pack for every
push it receives, and the target is to need no more memory than `git index-pack`: click and
the other commands' modules cost about 2.3 MiB of the process's peak (redis' pack: 44.2 MiB
through click, 41.9 MiB without, docs/benchmarks.md), and some 30 ms of start-up."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from packorder import progress as progress_mod
from packorder.cli.base import guarded, print_json, quiet_or_verbose, size_argument, stop_on_termination
from packorder.cli.plain_parser import PlainParser
from packorder.errors import UsageError

DESCRIPTION = "Build the .idx and .rev of PACK, byte-identical to `git index-pack`."


def _size(value: str) -> int:
    try:
        return size_argument(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _bytes(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"not a number of bytes: {value!r}")
    return int(value)


def _message(value: str | None) -> str | bool | None:
    """--keep / --promisor: absent, bare (True) or with its message."""
    return True if value == "" else value


def _index_version(value: str) -> tuple[int, int | None]:
    version, _, limit = value.partition(",")
    try:
        return int(version), (int(limit, 0) if limit else None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad index version '{value}'") from None


def _threads(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"not a number of threads: {value!r}")
    return n


class _MsgTypes(argparse.Action):
    """--strict[=TYPES] and --fsck-objects[=TYPES]: each turns its check on, and the message
    types of both go to one list, in the order given, as Git applies them."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, True)
        if values:
            namespace.fsck_msg_types = [*getattr(namespace, "fsck_msg_types", []), values]


# Git's spelling: a bare --keep takes no message (`--keep PACK` must not eat the pack).
OPTIONAL_VALUE = ("--keep", "--promisor", "--strict", "--fsck-objects")


def parser(prog: str) -> PlainParser:
    p = PlainParser(prog=prog, description=DESCRIPTION, allow_abbrev=False, optional_value=OPTIONAL_VALUE)
    p.add_argument("pack", nargs="?", type=Path, metavar="PACK")
    p.add_argument("-o", dest="output", type=Path, metavar="FILE", help="Write the index to FILE.")
    p.add_argument(
        "--stdin", dest="from_stdin", action="store_true", help="Read the pack from standard input into the repository."
    )
    p.add_argument(
        "--fix-thin", action="store_true", help="Complete a thin pack with bases from the repository (--stdin)."
    )
    p.add_argument(
        "--keep", metavar="MSG", help="Write the pack's .keep file, with MSG in it if given (--keep or --keep=MSG)."
    )
    p.add_argument(
        "--promisor", metavar="MSG", help="Write the stored pack's .promisor, with MSG in it if given (--stdin)."
    )
    p.add_argument(
        "--pack_header",
        metavar="VERSION,OBJECTS",
        help="The pack's header, read from standard input already by the caller (--stdin).",
    )
    p.add_argument(
        "--max-input-size", type=_bytes, metavar="BYTES", help="Fail a pack larger than BYTES (0: no limit)."
    )
    p.add_argument(
        "--object-format",
        metavar="HASH",
        help="The hash of the pack's object names (sha1 or sha256; default: the repository's).",
    )
    p.add_argument(
        "--report-end-of-input",
        action="store_true",
        help="Write a NUL byte to standard error once the whole pack is read.",
    )
    p.add_argument("--progress-title", metavar="TITLE", help="The title of the first phase's progress.")
    _add_check_options(p)
    p.add_argument(
        "--index-version", type=_index_version, metavar="V[,OFFSET]", help="Index version 1 or 2 (default 2)."
    )
    p.add_argument(
        "--rev-index",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Write a .rev too (default: pack.writeReverseIndex).",
    )
    p.add_argument("--threads", type=_threads, metavar="N", help="Threads (default: all cores).")
    p.add_argument(
        "--max-memory", type=_size, metavar="SIZE", help="Budget for kept delta bases (default: 96m per thread)."
    )
    p.add_argument(
        "--no-collision-detection", action="store_true", help="Plain SHA-1 (faster, unsafe against attacks)."
    )
    p.add_argument(
        "--repo",
        type=Path,
        metavar="DIR",
        help="The repository (--stdin stores the pack there; objects it has are checked against the pack's).",
    )
    p.add_argument(
        "-v", "--verbose", dest="verbose", action="store_true", help="Show progress even when stderr is not a terminal."
    )
    p.add_argument("-q", "--quiet", dest="quiet", action="store_true", help="No progress.")
    p.add_argument(
        "--json", dest="as_json", action="store_true", help="Print counts, sizes, times and peak memory as JSON."
    )
    return p


def _add_check_options(p: PlainParser) -> None:
    """The options that check the objects, or an index already written, as Git's do."""
    p.add_argument(
        "--strict",
        action=_MsgTypes,
        nargs="?",
        default=False,
        metavar="MSG-ID=SEVERITY,...",
        help="Check every object as Git's fsck does, and that all it links to is there (--strict or --strict=TYPES).",
    )
    p.add_argument(
        "--fsck-objects",
        action=_MsgTypes,
        nargs="?",
        default=False,
        metavar="MSG-ID=SEVERITY,...",
        help="Check every object as Git's fsck does (--fsck-objects or --fsck-objects=TYPES).",
    )
    p.add_argument(
        "--check-self-contained-and-connected",
        action="store_true",
        help="Check that all objects linked to are there; exit 1 if some are outside the pack.",
    )
    p.add_argument(
        "--verify", action="store_true", help="Check that the existing index matches the pack; write nothing."
    )
    p.add_argument(
        "--verify-stat",
        dest="stat",
        action="store_const",
        const="all",
        help="--verify, and list every object and the delta chain lengths (as `git verify-pack -v`).",
    )
    p.add_argument(
        "--verify-stat-only",
        dest="stat",
        action="store_const",
        const="only",
        help="--verify, and list the delta chain lengths (as `git verify-pack -s`).",
    )


def main(argv: list[str], prog: str = "packorder index-pack") -> None:
    argv = [f"{a}=" if a in OPTIONAL_VALUE else a for a in argv]
    stop_on_termination()
    parse = parser(prog)
    args = parse.parse_args(argv)
    guarded(_run, usage=parse.usage_text)(args)


def _run(args: argparse.Namespace) -> None:
    from packorder import _native
    from packorder.indexer.fsck import FsckError
    from packorder.indexer.index_pack import index_pack

    _native.tune_allocator()
    quiet_or_verbose(args.quiet, args.verbose)
    version, off32 = args.index_version or (None, None)
    if args.from_stdin and args.pack is not None:
        raise UsageError("--stdin takes no pack argument")
    show = progress_mod.auto(quiet=args.quiet, force=args.verbose)
    with progress_mod.closing_line(show), _printing_checks(FsckError):
        result = index_pack(
            args.pack,
            stdin=_standard_input() if args.from_stdin else None,
            repo=args.repo,
            output=args.output,
            index_version=version,
            off32_limit=off32,
            rev_index=args.rev_index,
            fix_thin=args.fix_thin,
            verify=args.verify or args.stat is not None,
            stat=args.stat,
            keep=_message(args.keep),
            promisor=_message(args.promisor),
            pack_header=args.pack_header,
            max_input_size=args.max_input_size or None,
            object_format=args.object_format,
            on_end_of_input=(lambda: os.write(2, b"\0")) if args.report_end_of_input else None,
            progress_title=args.progress_title,
            strict=bool(args.strict),
            fsck_objects=bool(args.fsck_objects),
            fsck_msg_types=getattr(args, "fsck_msg_types", ()),
            check_self_contained_and_connected=args.check_self_contained_and_connected,
            threads=args.threads,
            max_memory=args.max_memory,
            detect_collisions=not args.no_collision_detection,
            progress=show,
        )
    checked = result.checked
    for line in checked.warnings if checked else ():
        print(line, file=sys.stderr)
    for line in result.pack_info or ():
        print(line)
    if args.as_json:
        print_json(result, "index-pack")
    elif args.from_stdin:
        print(f"{'keep' if result.keep else 'pack'}\t{result.checksum}")
        # As Git (mimicking unpack-objects): what it read past the pack goes on to stdout.
        sys.stdout.flush()
        sys.stdout.buffer.write(result.past_end)
        sys.stdout.buffer.flush()
    elif not result.verified:
        print(result.checksum)
    if checked and not args.as_json:
        # For fetch-pack, after the pack's line: the .gitmodules it must check once fetched.
        for oid in checked.missing_gitmodules:
            print(oid)
    if args.check_self_contained_and_connected and checked and checked.foreign:
        sys.stdout.flush()
        sys.exit(1)  # Git's answer: objects outside the pack were needed


def _standard_input() -> BinaryIO:
    """Unbuffered, to read as Git reads (never past its last read after the pack); none at all
    (closed) reads as empty, as Git's does (it opens /dev/null there)."""
    return sys.stdin.buffer.raw if sys.stdin is not None else io.BytesIO()


@contextlib.contextmanager
def _printing_checks(error: type) -> Iterator[None]:
    """Print what the object checks found before their failure becomes the fatal line."""
    try:
        yield
    except error as e:
        for line in e.lines:
            print(line, file=sys.stderr)
        raise
