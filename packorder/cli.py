"""The `packorder` (and `git packorder`) command line. Thin: parse options, call the library,
render the result. Every PackError becomes one `fatal:` line and exit status 1 (2 for bad usage).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from packorder import progress as progress_mod
from packorder.cli_base import fail, guarded, print_json, size_argument
from packorder.seek.command import seekstats_cmd
from packorder.study_command import experiment_cmd

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def parse_size(value: str | None) -> int | None:
    """'512m', '2g', '1048576' -> bytes (Git's k/m/g suffixes)."""
    if value is None:
        return None
    try:
        return size_argument(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


class _Commands(click.Group):
    """click answers an interrupt while it parses arguments with "Aborted!" and status 1; the
    commands answer one while they run with `fatal: interrupted` and 130. One answer for both."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:
            fail("interrupted", 130)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            fail("interrupted", 130)


@click.group(cls=_Commands, context_settings=CONTEXT)
@click.version_option(package_name="packorder")
def main() -> None:
    """Write Git packs in an order chosen for locality, index packs fast, measure seeks."""


@main.command(
    "index-pack",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
    help="Build the .idx and .rev of PACK, byte-identical to `git index-pack`.",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def index_pack_cmd(args: tuple[str, ...]) -> None:
    # Parsed without click (index_pack_command.py); the `packorder` script goes there directly.
    from packorder.index_pack_command import main as index_pack_main

    index_pack_main(list(args))


main.add_command(seekstats_cmd)
main.add_command(experiment_cmd)


def _human(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


# The orders of packorder.order.ORDERS, listed here so that the command line starts without
# numpy (tests/test_repack.py checks that the two agree), each with what it needs from history
# (OrderSpec.needs_intro, needs_unreleased): for those the walk in commit order and the walk of
# unreleased history start with the first.
ORDER_WALKS = {
    "recency": (False, False),
    "history": (True, True),
    "git": (False, False),
    "rev-list": (False, False),
    "type": (False, False),
    "interleaved": (True, False),
    "windowed": (True, False),
    "windowed-256": (True, False),
    "interleaved-recent": (True, False),
    "history-each-commit": (True, True),
    "history-tags-midway": (True, True),
    "trees-first": (True, True),
    "recency-dfs": (False, False),
    "recency-unreleased": (False, True),
}
ORDER_NAMES = tuple(ORDER_WALKS)


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
    from packorder import snapshot

    # Git starts walking the history before the repack's heavy imports (snapshot.py says why).
    start = None
    try:
        intro, unreleased = ORDER_WALKS[order]
        start = snapshot.take(repo, lock=output_dir is None and not dry_run, intro=intro, unreleased=unreleased)
        from packorder.repacker import repack
    except BaseException:
        if start is not None:
            start.close()
        raise

    show = progress_mod.auto(quiet=quiet)
    with progress_mod.closing_line(show):
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
            start=start,
        )
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
            + (_bitmap_summary(result) if result.bitmap else "")
        )


def _bitmap_summary(result) -> str:
    if result.bitmap_kind == "pack":
        return f", bitmap written ({result.bitmaps} commits)"
    why = f" (the pack alone has no closure: {result.bitmap_note})" if result.bitmap_note else ""
    return ", multi-pack-index bitmap written" + why


if __name__ == "__main__":
    main()
