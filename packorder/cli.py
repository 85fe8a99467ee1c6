"""The `packorder` (and `git packorder`) command line. Thin: parse options, call the library,
render the result. Every PackError becomes one `fatal:` line and exit status 1 (2 for bad usage).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from packorder import progress as progress_mod
from packorder.errors import Interrupted, PackError, UsageError
from packorder.seek.command import seekstats_cmd
from packorder.study_command import experiment_cmd

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def parse_size(value: str | None) -> int | None:
    """'512m', '2g', '1048576' -> bytes (Git's k/m/g suffixes)."""
    if value is None:
        return None
    from packorder.gitcmd import parse_int

    try:
        return parse_int(value, "size")
    except PackError:
        raise click.BadParameter(f"not a size: {value!r} (use a number with an optional k, m or g)") from None


def to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def print_json(value: Any) -> None:
    json.dump(to_jsonable(value), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


def fail(message: str, status: int = 1) -> None:
    click.echo(f"fatal: {message}", err=True)
    sys.exit(status)


def guarded(fn: Callable[..., None]) -> Callable[..., None]:
    """Turn library errors into one line on stderr and an exit status; never a traceback."""

    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except UsageError as e:
            fail(str(e), 2)
        except Interrupted:
            fail("interrupted", 130)
        except PackError as e:
            fail(str(e))
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except MemoryError:
            fail("out of memory")
        except BrokenPipeError:
            sys.exit(1)
        except OSError as e:  # a file we were told to read or write
            fail(f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e))
        except BaseException as e:
            # A panic in the native core arrives as pyo3's PanicException (a BaseException).
            if type(e).__name__ == "PanicException":
                fail(f"internal error in the native core: {e}")
            raise

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


@click.group(context_settings=CONTEXT)
@click.version_option(package_name="packorder")
def main() -> None:
    """Write Git packs in an order chosen for locality, index packs fast, measure seeks."""


def parse_index_version(value: str | None) -> tuple[int | None, int | None]:
    if value is None:
        return None, None
    version, _, limit = value.partition(",")
    try:
        return int(version), (int(limit, 0) if limit else None)
    except ValueError:
        raise click.BadParameter(f"bad index version '{value}'") from None


@main.command("index-pack", context_settings=CONTEXT)
@click.argument("pack", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "output", type=click.Path(dir_okay=False, path_type=Path), help="Write the index to FILE.")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the pack from standard input into the repository.")
@click.option("--fix-thin", is_flag=True, help="Complete a thin pack with bases from the repository (--stdin).")
@click.option(
    "--keep", is_flag=False, flag_value="", default=None, metavar="[MSG]", help="Write a .keep file (--stdin)."
)
@click.option("--verify", is_flag=True, help="Check that the existing index matches the pack; write nothing.")
@click.option("--index-version", "index_version", metavar="V[,OFFSET]", help="Index version 1 or 2 (default 2).")
@click.option("--rev-index/--no-rev-index", default=None, help="Write a .rev too (default: pack.writeReverseIndex).")
@click.option("--threads", type=click.IntRange(min=0), default=None, help="Threads (default: all cores).")
@click.option("--max-memory", metavar="SIZE", help="Budget for kept delta bases (default: 96m per thread).")
@click.option("--no-collision-detection", is_flag=True, help="Plain SHA-1 (faster, unsafe against attacks).")
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), help="Repository for --stdin.")
@click.option("-v", "verbose", is_flag=True, help="Show progress even when stderr is not a terminal.")
@click.option("-q", "quiet", is_flag=True, help="No progress.")
@click.option("--json", "as_json", is_flag=True, help="Print counts, sizes, times and peak memory as JSON.")
@guarded
def index_pack_cmd(
    pack: Path | None,
    output: Path | None,
    from_stdin: bool,
    fix_thin: bool,
    keep: str | None,
    verify: bool,
    index_version: str | None,
    rev_index: bool | None,
    threads: int | None,
    max_memory: str | None,
    no_collision_detection: bool,
    repo: Path | None,
    verbose: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Build the .idx and .rev of PACK, byte-identical to `git index-pack`."""
    from packorder import _native
    from packorder.indexer import index_pack

    _native.tune_allocator()
    version, off32 = parse_index_version(index_version)
    if from_stdin and pack is not None:
        raise UsageError("--stdin takes no pack argument")
    show = progress_mod.auto(quiet=quiet, force=verbose)
    try:
        result = index_pack(
            pack,
            stdin=sys.stdin.buffer if from_stdin else None,
            repo=repo,
            output=output,
            index_version=version,
            off32_limit=off32,
            rev_index=rev_index,
            fix_thin=fix_thin,
            verify=verify,
            keep=(True if keep == "" else keep) if keep is not None else None,
            threads=threads,
            max_memory=parse_size(max_memory),
            detect_collisions=not no_collision_detection,
            progress=show,
        )
    finally:
        if isinstance(show, progress_mod.ProgressLine):
            show.close()
    if as_json:
        print_json(result)
    elif from_stdin:
        click.echo(f"{'keep' if result.keep else 'pack'}\t{result.checksum}")
    elif not verify:
        click.echo(result.checksum)


main.add_command(seekstats_cmd)
main.add_command(experiment_cmd)


def _human(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


# The names of packorder.order.ORDERS, listed here so that the command line starts without
# numpy; tests/test_repack.py checks that the two agree.
ORDER_NAMES = (
    "recency",
    "history",
    "git",
    "rev-list",
    "type",
    "interleaved",
    "windowed",
    "windowed-256",
    "interleaved-recent",
    "history-tags-midway",
    "trees-first",
    "recency-dfs",
)


@main.command("repack", context_settings=CONTEXT)
@click.argument("repo", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--order",
    type=click.Choice(ORDER_NAMES),
    default="recency",
    show_default=True,
    help="Write order.",
)
@click.option("-f", "--no-reuse-delta", is_flag=True, help="Search new deltas instead of reusing stored ones.")
@click.option("--window", type=click.IntRange(min=0), help="Delta search window (default: pack.window, 10).")
@click.option("--depth", type=click.IntRange(min=0), help="Longest delta chain (default: pack.depth, 50).")
@click.option("--threads", type=click.IntRange(min=0), help="Threads (default: pack.threads, or all cores).")
@click.option("--ref-delta", is_flag=True, help="Write REF_DELTA entries instead of OFS_DELTA.")
@click.option(
    "--repick-backward-deltas",
    is_flag=True,
    help="Search new bases for stored tree deltas whose base is an older tree (instead of writing that base early).",
)
@click.option("--prune-unreachable", is_flag=True, help="Drop unreachable objects older than gc.pruneExpire.")
@click.option(
    "-b/-B",
    "--write-bitmap-index/--no-write-bitmap-index",
    "write_bitmap",
    default=None,
    help="Write a reachability bitmap (default: repack.writeBitmaps, on in bare repositories).",
)
@click.option("-n", "--dry-run", is_flag=True, help="Enumerate and order, but write nothing.")
@click.option("-o", "output_dir", type=click.Path(file_okay=False, path_type=Path), help="Write the pack to DIR only.")
@click.option(
    "--verify",
    type=click.Choice(["full", "crc"]),
    default="full",
    show_default=True,
    help="full: re-index the new pack, hashing every object; crc: check headers and CRCs only.",
)
@click.option("-q", "quiet", is_flag=True, help="No progress.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@guarded
def repack_cmd(
    repo: Path | None,
    order: str,
    no_reuse_delta: bool,
    window: int | None,
    depth: int | None,
    threads: int | None,
    ref_delta: bool,
    repick_backward_deltas: bool,
    prune_unreachable: bool,
    write_bitmap: bool | None,
    dry_run: bool,
    output_dir: Path | None,
    verify: str,
    quiet: bool,
    as_json: bool,
) -> None:
    """Rewrite REPO's objects into one pack ordered for locality (default: recency)."""
    from packorder.repacker import repack

    show = progress_mod.auto(quiet=quiet)
    try:
        result = repack(
            repo,
            order=order,
            no_reuse_delta=no_reuse_delta,
            window=window,
            depth=depth,
            threads=threads,
            ref_delta=ref_delta,
            repick_backward_deltas=repick_backward_deltas,
            prune_unreachable=prune_unreachable,
            write_bitmap=write_bitmap,
            dry_run=dry_run,
            output_dir=output_dir,
            verify=verify,
            progress=show,
        )
    finally:
        if isinstance(show, progress_mod.ProgressLine):
            show.close()
    if as_json:
        print_json(result)
        return
    if result.objects == 0:
        click.echo(
            "nothing to pack" + (f", {len(result.removed_packs)} old packs removed" if result.removed_packs else "")
        )
        return
    what = "would write" if result.dry_run else "wrote"
    click.echo(
        f"{what} {result.objects} objects in {result.order} order: {result.reused_deltas} reused deltas, "
        f"{result.new_deltas} new deltas, {result.whole_objects} whole objects "
        f"({result.cut_deltas} deltas cut at --depth)"
    )
    for pack in result.packs:
        click.echo(f"  {pack}")
    if not result.dry_run:
        click.echo(
            f"pack size {_human(result.pack_bytes)} (was {_human(result.old_pack_bytes)}), "
            f"{len(result.removed_packs)} old packs and {result.removed_loose} loose objects removed"
            + (", bitmap written" if result.bitmap else "")
        )


if __name__ == "__main__":
    main()
