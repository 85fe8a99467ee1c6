"""`packorder repack`: the command line of packorder.repack (everything into one ordered pack)
and of its geometric form (the small packs rolled up), in Git's spellings, so that a script
that runs `git repack -adb` or `git repack -d -l --geometric=2 --write-midx` runs unchanged
with `packorder repack`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from packorder import progress as progress_mod
from packorder.cli.base import guarded, parse_size, print_json, warn
from packorder.cli.options import CONTEXT, ORDERS_EPILOG, progress_of, quiet_option, verbose_option
from packorder.orders.catalog import CATALOG
from packorder.settings import MIDX_MODES, VERIFY_MODES
from packorder.units import human_size


class RepackCommand(click.Command):
    """Git's `--write-midx[=MODE]`: its mode only after `=`, so that `--write-midx REPO`
    reads REPO as the repository (click would take it for the mode)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        args = ["--write-midx=plain" if a == "--write-midx" else a for a in args]
        return super().parse_args(ctx, args)


def _removed_option(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        raise click.UsageError(
            "--prune-unreachable was removed: unreachable objects now go to a cruft pack; "
            "--cruft-expiration=DATE drops those older than DATE (packorder gc passes gc.pruneExpire)",
            ctx,
        )


def _not_applied(option: str, why: str) -> None:
    warn(f"{option} is not applied: {why}")


@click.command("repack", cls=RepackCommand, context_settings=CONTEXT, epilog=ORDERS_EPILOG)
@click.argument("repo", required=False, type=click.Path(path_type=Path))
@click.option(
    "--order",
    type=click.Choice(tuple(CATALOG)),
    metavar="ORDER",
    help="Write order (default: packorder.order, else recency; the orders are listed below).",
)
@click.option("-a", "all_into_one", is_flag=True, help="Pack everything into one pack (what repack does by default).")
@click.option("-A", "loosen", is_flag=True, help="As -a (unreachable objects go to a cruft pack, not loose).")
@click.option(
    "-d", "delete", is_flag=True, help="Remove what the new packs replace (the default unless -a, -A or -g is given)."
)
@click.option(
    "-k", "--keep-unreachable", is_flag=True, help="Keep every unreachable object (in the cruft pack: none expires)."
)
@click.option(
    "-g",
    "--geometric",
    type=click.IntRange(min=0),
    metavar="N",
    help="Roll up only the packs that break a geometric progression of factor N (2 in Git's maintenance).",
)
@click.option("-m", "midx_flag", is_flag=True, help="Write a multi-pack-index of the resulting packs.")
@click.option(
    "--write-midx",
    "write_midx",
    type=click.Choice(MIDX_MODES),
    metavar="[=MODE]",
    help="Write a multi-pack-index of the resulting packs: plain (the default) or incremental (a new layer).",
)
@click.option("-f", "--no-reuse-delta", is_flag=True, help="Search new deltas instead of reusing stored ones.")
@click.option("-F", "no_reuse_object", is_flag=True, help="As -f (every object is written anew in any case).")
@click.option(
    "--window", type=click.IntRange(min=0), help="Delta search window (default: packorder.window, pack.window, 10)."
)
@click.option("--window-memory", metavar="SIZE", help="Git's memory cap of the delta window (not applied).")
@click.option(
    "--depth", type=click.IntRange(min=0), help="Longest delta chain (default: packorder.depth, pack.depth, 50)."
)
@click.option(
    "--threads", type=click.IntRange(min=0), help="Threads (default: packorder.threads, pack.threads, or all cores)."
)
@click.option(
    "--max-pack-size", metavar="SIZE", help="Git's cap on each pack's size (not applied to the ordered pack)."
)
@click.option("--ref-delta", is_flag=True, help="Write REF_DELTA entries instead of OFS_DELTA.")
@click.option(
    "--path-walk/--no-path-walk",
    default=None,
    help="Search new deltas among each path's versions first, as Git's --path-walk (default: pack.usePathWalk).",
)
@click.option(
    "--name-hash-version",
    type=click.IntRange(1, 2),
    help="Git's name hash that sorts the delta search: 1 (the default) or 2 (the directories count too).",
)
@click.option(
    "--repick-backward-deltas",
    is_flag=True,
    help="Search new bases for stored tree deltas whose base is an older tree (instead of writing that base early).",
)
@click.option(
    "--cruft", is_flag=True, help="Unreachable objects go to a cruft pack with their ages (always; Git's spelling)."
)
@click.option(
    "--cruft-expiration",
    metavar="DATE",
    help="Drop unreachable objects older than DATE (Git's dates: 2.weeks.ago, 2024-01-01, now, never); "
    "default: none expires.",
)
@click.option("--max-cruft-size", metavar="SIZE", help="Split new cruft packs at SIZE (0: no limit).")
@click.option(
    "--combine-cruft-below-size",
    metavar="SIZE",
    help="Rewrite only the cruft packs smaller than SIZE; keep the others as they are.",
)
@click.option("--prune-unreachable", is_flag=True, hidden=True, expose_value=False, callback=_removed_option)
@click.option(
    "-l/--no-local",
    "--local",
    "local",
    default=True,
    help="Leave objects an alternate has to it (default, as git gc); --no-local copies them.",
)
@click.option(
    "-b/-B",
    "--write-bitmap-index/--no-write-bitmap-index",
    "write_bitmap",
    default=None,
    help="Write a reachability bitmap (default: repack.writeBitmaps, on in bare repositories but for -g).",
)
@click.option("-i", "--delta-islands", is_flag=True, help="Git's delta islands (not applied).")
@click.option(
    "--unpack-unreachable", metavar="DATE", help="Git's -A date (not applied: unreachable objects stay packed)."
)
@click.option("-n", "no_server_info", is_flag=True, help="Do not update objects/info/packs and info/refs.")
@click.option("--dry-run", is_flag=True, help="Enumerate and order, but write nothing.")
@click.option("-o", "output_dir", type=click.Path(file_okay=False, path_type=Path), help="Write the packs to DIR only.")
@click.option(
    "--verify",
    type=click.Choice(tuple(VERIFY_MODES)),
    help="What to prove before anything is removed (default: packorder.verify, else produced). "
    + "; ".join(f"{k}: {v.proves}" for k, v in VERIFY_MODES.items())
    + ".",
)
@quiet_option
@verbose_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
@guarded
def repack_cmd(ctx: click.Context, repo: Path | None, **opts: Any) -> None:
    """Rewrite REPO's reachable objects into one pack ordered for locality, its unreachable
    ones into a cruft pack; with -g, roll up only the small packs, in the same order, and
    leave the ordered pack alone."""
    show = progress_of(opts["quiet"], opts["verbose"])
    if opts["keep_unreachable"] and opts["cruft_expiration"] is not None:
        raise click.UsageError("options '-k/--keep-unreachable' and '--cruft-expiration' cannot be used together", ctx)
    if opts["keep_unreachable"] and opts["loosen"]:
        raise click.UsageError("options '-A' and '-k/--keep-unreachable' cannot be used together", ctx)
    midx = opts["write_midx"] or ("plain" if opts["midx_flag"] else None)
    if opts["geometric"]:
        if opts["all_into_one"] or opts["loosen"]:
            raise click.UsageError("options '--geometric' and '-A/-a' cannot be used together", ctx)
        if opts["path_walk"] or opts["name_hash_version"] is not None:
            raise click.UsageError(
                "options '--geometric' and '--path-walk/--name-hash-version' cannot be used together", ctx
            )
        if opts["output_dir"] is not None:
            raise click.UsageError("-o DIR writes a whole repository's packs: it does not go with --geometric", ctx)
        _warn_not_applied(opts)
        result = _geometric(repo, opts, midx, show)
    else:
        if opts["output_dir"] is not None and opts["write_bitmap"]:
            raise click.UsageError(
                "-o DIR writes no bitmap (a bitmap belongs beside the repository's packs): drop -b", ctx
            )
        _warn_not_applied(opts)  # after the refusals: a refused command line is its one error
        result = _full(repo, opts, midx, show)
    if opts["as_json"]:
        print_json(result, "repack")
    elif not opts["quiet"]:
        click.echo("\n".join(repack_summary(result)))


def _warn_not_applied(opts: dict[str, Any]) -> None:
    if opts["loosen"]:
        _not_applied("-A", "unreachable objects go to a cruft pack, where they keep their ages")
    if opts["unpack_unreachable"] is not None:
        _not_applied("--unpack-unreachable", "unreachable objects go to a cruft pack (see --cruft-expiration)")
    if opts["window_memory"] is not None:
        _not_applied("--window-memory", "the delta window is bounded by --window")
    if opts["max_pack_size"] is not None:
        _not_applied("--max-pack-size", "the ordered pack is one pack (cruft packs split at --max-cruft-size)")
    if opts["delta_islands"]:
        _not_applied("--delta-islands", "deltas are chosen without islands")


def _shared(opts: dict[str, Any], midx: str | None, show: Any) -> dict[str, Any]:
    """The library's options both forms of the command pass as they were given."""
    return {
        "order": opts["order"],
        "no_reuse_delta": opts["no_reuse_delta"] or opts["no_reuse_object"],
        "window": opts["window"],
        "depth": opts["depth"],
        "threads": opts["threads"],
        "write_bitmap": opts["write_bitmap"],
        "verify": opts["verify"],
        "local": opts["local"],
        "write_midx": midx,
        "update_server_info": False if opts["no_server_info"] else None,
        "dry_run": opts["dry_run"],
        "progress": show,
        "warn": warn,
    }


def _geometric(repo: Path | None, opts: dict[str, Any], midx: str | None, show: Any) -> Any:
    from packorder.repacking.pipeline import repack

    with progress_mod.closing_line(show):
        return repack(repo, geometric=opts["geometric"], delete=opts["delete"], **_shared(opts, midx, show))


def _full(repo: Path | None, opts: dict[str, Any], midx: str | None, show: Any) -> Any:
    from packorder.cli import early_walk
    from packorder.repacking import snapshot

    output_dir, write_bitmap, order = opts["output_dir"], opts["write_bitmap"], opts["order"]
    cruft_size = parse_size(opts["max_cruft_size"]) or None  # 0: no limit, as in Git
    combine_below = parse_size(opts["combine_cruft_below_size"])
    # Git's spelling (-a, -A) removes the packs replaced only with -d; packorder's own
    # (neither) always does.
    delete = opts["delete"] or not (opts["all_into_one"] or opts["loosen"])
    # Git starts walking the history before the repack's heavy imports (snapshot.py says why),
    # or before this command line loaded (early_walk.py).
    start = None
    try:
        lock = output_dir is None and not opts["dry_run"]
        start = early_walk.claim(early_walk.WalkRequest(repo, lock, order, write_bitmap))
        if start is None:
            start = snapshot.take(repo, lock=lock, order=order, warn=warn, bitmap=write_bitmap)
        from packorder.repacking.pipeline import repack
    except BaseException:
        if start is not None:
            start.close()
        raise

    with progress_mod.closing_line(show):
        return repack(
            repo,
            ref_delta=opts["ref_delta"],
            repick_backward_deltas=opts["repick_backward_deltas"],
            path_walk=opts["path_walk"],
            name_hash_version=opts["name_hash_version"],
            cruft_expiration=opts["cruft_expiration"],
            max_cruft_size=cruft_size,
            combine_cruft_below_size=combine_below,
            delete=delete,
            output_dir=output_dir,
            start=start,
            **_shared(opts, midx, show),
        )


def repack_summary(result: Any) -> list[str]:
    """What a repack did, in a few lines (the command's output without --json)."""
    if result.strategy == "geometric":
        return _geometric_summary(result)
    if result.objects == 0:
        return [
            "nothing to pack" + (f", {len(result.removed_packs)} old packs removed" if result.removed_packs else "")
        ]
    what = "would write" if result.dry_run else "wrote"
    lines = [
        f"{what} {result.reachable} reachable objects in {result.order} order"
        + (f" and {result.unreachable_kept} unreachable ones in a cruft pack" if result.unreachable_kept else "")
        + f": {result.reused_deltas} reused deltas, {result.new_deltas} new deltas, {result.whole_objects} whole "
        f"objects ({result.cut_deltas} deltas cut at --depth)"
    ]
    if result.unreachable_pruned:
        lines.append(f"{result.unreachable_pruned} expired unreachable objects dropped")
    lines += [f"  {pack}" for pack in result.packs]
    if not result.dry_run:
        lines.append(
            f"pack size {human_size(result.pack_bytes)} (was {human_size(result.old_pack_bytes)}), "
            f"{len(result.removed_packs)} old packs and {result.removed_loose} loose objects removed"
            + (_bitmap_summary(result) if result.bitmap else "")
            + (f", {result.midx} multi-pack-index written" if result.midx else "")
        )
    return lines


def _geometric_summary(result: Any) -> list[str]:
    kept = f"; {result.ordered_pack.name} stays as it is" if result.ordered_pack is not None else ""
    if result.objects == 0 and not result.rolled_up:
        return ["Nothing new to pack" + kept + (f"; {result.midx} multi-pack-index written" if result.midx else "")]
    what = "would roll up" if result.dry_run else "rolled up"
    lines = [
        f"{what} {len(result.rolled_up)} packs and the loose objects: {result.objects} objects in "
        f"{result.order} order ({result.reused_deltas} reused deltas, {result.new_deltas} new deltas, "
        f"{result.whole_objects} whole objects){kept}"
    ]
    lines += [f"  {pack}" for pack in result.packs]
    if not result.dry_run:
        lines.append(
            f"pack size {human_size(result.pack_bytes)} (was {human_size(result.old_pack_bytes)}), "
            f"{len(result.removed_packs)} packs and {result.removed_loose} loose objects removed"
            + (f", {result.midx} multi-pack-index written" if result.midx else "")
            + (", with its bitmap" if result.bitmap else "")
        )
    return lines


def _bitmap_summary(result: Any) -> str:
    if result.bitmap_kind == "pack":
        return f", bitmap written ({result.bitmaps} commits)"
    why = f" (the pack alone has no closure: {result.bitmap_note})" if result.bitmap_note else ""
    return ", multi-pack-index bitmap written" + why
