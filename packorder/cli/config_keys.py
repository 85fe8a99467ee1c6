"""Every configuration key packorder reads, in one table: its own `packorder.*` keys (what each
does, its values and default, the Git key it falls back to) and the Git keys it follows. The
manual page's CONFIGURATION section and docs/configuration.md are both written from it
(`python -m packorder.cli.manpage`), and tests/cli/test_manpage.py checks that every
`packorder.*` key the code reads is here. Standard library only."""

from __future__ import annotations

import textwrap
from typing import NamedTuple


class OwnKey(NamedTuple):
    name: str
    values: str
    default: str
    falls_back: str  # the Git key read when this one is unset ("" if none), `quoted`
    does: str


class GitKey(NamedTuple):
    name: str
    use: str  # what packorder does with it


OWN_KEYS = (
    OwnKey(
        "packorder.order",
        "an order's name (`packorder repack --help` lists them)",
        "recency",
        "",
        "The write order of `repack`, `gc` and a fleet's repacks, where `--order` is not given.",
    ),
    OwnKey(
        "packorder.verify",
        "produced, full, crc",
        "produced",
        "",
        "What a repack proves before anything is removed, where `--verify` is not given: produced "
        "checks copies by their CRC and the plan and every entry packorder produced by its hash; "
        "full re-indexes the whole pack; crc checks headers, CRCs and the trailer only.",
    ),
    OwnKey(
        "packorder.window",
        "a number, 0 or more",
        "10",
        "`pack.window`",
        "The delta search window of a repack, where `--window` is not given.",
    ),
    OwnKey(
        "packorder.depth",
        "a number, 0 or more (at most 4095 is used)",
        "50",
        "`pack.depth`",
        "The longest delta chain a repack writes, where `--depth` is not given.",
    ),
    OwnKey(
        "packorder.threads",
        "a number; 0 is as unset",
        "every core",
        "`pack.threads`",
        "The threads of a repack and of packorder's object walk, where `--threads` is not given.",
    ),
    OwnKey(
        "packorder.walk",
        "native, git",
        "native",
        "",
        "Which walk finds the reachable objects of a repack: packorder's own, on every core (native), "
        "or `git rev-list` (git). Both give the same objects in the same order.",
    ),
    OwnKey(
        "packorder.strategy",
        "geometric, full",
        "geometric",
        "",
        "What `packorder gc` repacks: geometric rolls the small packs up in order beside the ordered "
        "pack (as Git's geometric maintenance task); full repacks everything into one ordered pack on "
        "every run (as `git gc`).",
    ),
    OwnKey(
        "packorder.auto",
        "a number of loose objects; 0 turns `gc --auto` off",
        "100 (geometric), 6700 (full)",
        "`maintenance.geometric-repack.auto` (geometric), `gc.auto` (full)",
        "The loose objects past which `packorder gc --auto` runs. Negative: with the geometric "
        "strategy, every run goes ahead; with full, `--auto` is off (as a negative gc.auto).",
    ),
    OwnKey(
        "packorder.autoPackLimit",
        "a number of packs; 0 leaves the count out",
        "50",
        "`gc.autoPackLimit`",
        "With `packorder.strategy = full`, the packs without a .keep past which `packorder gc --auto` runs.",
    ),
    OwnKey(
        "packorder.autoDrift",
        "a share of the objects, as 0.25 or 25%; 0 leaves drift out",
        "0.25 (geometric), 0.05 (full)",
        "",
        "The drift of the layout from the order (objects out of their place) past which "
        "`packorder gc --auto` runs, repacking everything into one ordered pack.",
    ),
)

GIT_KEYS = (
    GitKey("pack.window", "A repack's delta search window where packorder.window is unset."),
    GitKey("pack.depth", "A repack's longest delta chain where packorder.depth is unset."),
    GitKey(
        "pack.threads",
        "Threads of a repack and the walk where packorder.threads is unset; of index-pack (0 or unset: "
        "every core); of the index-pack workload of seekstats and of fleet triage's prediction.",
    ),
    GitKey(
        "pack.compression", "The zlib level of what a repack and index-pack (--fix-thin) write; else core.compression."
    ),
    GitKey("core.compression", "The zlib level where pack.compression is unset (Git's default: 6)."),
    GitKey(
        "core.deltaBaseCacheLimit",
        "The delta bases kept in memory (index-pack's budget per thread, the object reader of a "
        "repack, the cache seekstats models); 96 MiB by default.",
    ),
    GitKey("core.bigFileThreshold", "Larger objects are stored whole, not searched for deltas (512 MiB)."),
    GitKey("pack.usePathWalk", "A repack's new delta search by path, as Git's --path-walk (default false)."),
    GitKey("pack.indexVersion", "The .idx version index-pack writes (1 or 2; default 2)."),
    GitKey("pack.writeReverseIndex", "Whether index-pack and a repack write a .rev beside the .idx (default true)."),
    GitKey("pack.writeBitmaps", "As repack.writeBitmaps, for a geometric repack (Git's older name)."),
    GitKey("pack.writeBitmapHashCache", "Whether a bitmap holds the name-hash cache (default true)."),
    GitKey(
        "pack.preferBitmapTips",
        "The refs whose commits a multi-pack-index bitmap selects first (then every ref's commit).",
    ),
    GitKey(
        "repack.writeBitmaps",
        "Whether a repack writes a reachability bitmap where -b/-B is not given (default: in a bare "
        "repository without promisor or .keep packs; not for -g).",
    ),
    GitKey("repack.useDeltaBaseOffset", "false writes REF_DELTA entries, as --ref-delta (default true)."),
    GitKey("repack.updateServerInfo", "Whether a repack updates objects/info/packs and info/refs (default true)."),
    GitKey("repack.midxSplitFactor", "The factor by which an incremental multi-pack-index's layers merge (2)."),
    GitKey(
        "repack.midxNewLayerThreshold",
        "The packs an incremental multi-pack-index's newest layer holds before a geometric repack leaves it alone (8).",
    ),
    GitKey("midx.version", "The version of the multi-pack-index written (default 1)."),
    GitKey("core.multiPackIndex", "Whether `packorder gc` writes a multi-pack-index of its packs (default true)."),
    GitKey("core.commitGraph", "With gc.writeCommitGraph, whether `packorder gc` writes the commit-graph."),
    GitKey("core.bare", "Whether the repository is bare (a bitmap's default, gc.packRefs = notbare)."),
    GitKey("gc.auto", "`gc --auto`'s loose objects with packorder.strategy = full, where packorder.auto is unset."),
    GitKey(
        "gc.autoPackLimit",
        "`gc --auto`'s packs with packorder.strategy = full, where packorder.autoPackLimit is unset.",
    ),
    GitKey(
        "maintenance.geometric-repack.auto",
        "`gc --auto`'s loose objects with the geometric strategy, where packorder.auto is unset (100).",
    ),
    GitKey("maintenance.geometric-repack.splitFactor", "The geometric progression's factor of `packorder gc` (2)."),
    GitKey(
        "maintenance.<task>.enabled",
        "For geometric-repack, incremental-repack and loose-objects: with all three false, Git's "
        "maintenance does not rewrite packs, so a running one (objects/maintenance.lock) does not "
        "stop `packorder gc`.",
    ),
    GitKey("gc.aggressiveWindow", "The delta window of `packorder gc --aggressive` (250)."),
    GitKey("gc.aggressiveDepth", "The longest delta chain of `packorder gc --aggressive` (50)."),
    GitKey("gc.pruneExpire", "Unreachable objects older than this are dropped by `packorder gc` (2.weeks.ago)."),
    GitKey(
        "gc.cruftPacks",
        "Not followed: with false, `packorder gc` notes that unreachable objects still go to a cruft pack.",
    ),
    GitKey(
        "gc.maxCruftSize",
        "New cruft packs of `packorder gc` are split at this size, where --max-cruft-size is not given.",
    ),
    GitKey("gc.recentObjectsHook", "Programs naming objects kept as recent, whatever their age."),
    GitKey(
        "gc.reflogExpire",
        "Read by Git's reflog expire, which `packorder gc` runs, and skips when this and "
        "gc.reflogExpireUnreachable are both never (as `git gc`).",
    ),
    GitKey("gc.reflogExpireUnreachable", "As gc.reflogExpire, for entries no longer reachable."),
    GitKey("gc.worktreePruneExpire", "The expiry `packorder gc` passes to Git's worktree prune (3.months.ago)."),
    GitKey("gc.packRefs", "Whether `packorder gc` packs refs (true, false or notbare; default true)."),
    GitKey("gc.writeCommitGraph", "Whether `packorder gc` writes the commit-graph (default true)."),
    GitKey("extensions.objectFormat", "The repository's hash, SHA-1 or SHA-256: every file is written in it."),
    GitKey("extensions.compatObjectFormat", "Set: the repository is refused in one line, untouched."),
    GitKey(
        "extensions.partialclone",
        "A partial clone: index-pack takes objects outside the pack as promised; `packorder gc` "
        "prunes with `--exclude-promisor-objects`.",
    ),
    GitKey("remote.<name>.promisor", "true: `packorder gc` prunes with `--exclude-promisor-objects`."),
)


def _wrapped(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, 92, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def markdown() -> str:
    """docs/configuration.md."""
    lines = [
        "# Configuration",
        "",
        "<!-- Written by `python -m packorder.cli.manpage` from packorder/cli/config_keys.py: edit that. -->",
        "",
        "packorder reads Git's configuration of the repository (`git config`: the repository's, the",
        "user's, the system's, and `-c` through `GIT_CONFIG_PARAMETERS`). A command line option",
        "wins over a key; a `packorder.*` key wins over the Git key it falls back to; without",
        "either, the default below applies. `man packorder` has the same list.",
        "",
        "## packorder's keys",
        "",
    ]
    for key in OWN_KEYS:
        lines += [f"### `{key.name}`", "", *_wrapped(key.does), ""]
        lines += _wrapped(f"- Values: {key.values}.", "  ")
        lines += _wrapped(f"- Default: {key.default}.", "  ")
        lines += [*_wrapped(f"- Falls back to: {key.falls_back or 'none'}.", "  "), ""]
    lines += ["## Git's keys packorder follows", "", "| Key | What packorder does with it |", "| --- | --- |"]
    lines += [f"| `{key.name}` | {key.use} |" for key in GIT_KEYS]
    return "\n".join(lines) + "\n"
