"""Which multi-pack-index a repack writes, and how: the packs it names, its preferred pack
(the ordered pack), its form (plain, or a layer of an incremental chain), and who writes it
(natively without a bitmap, store/midx.py; through Git with one).

An incremental chain grows as Git 2.55 grows it under `git repack --geometric
--write-midx=incremental` (repack-midx.c): the new packs, with the packs that stay from a
tip layer the roll-up rewrote, make a new layer; lower layers join it while it holds at
least 1/`repack.midxSplitFactor` (2) as many objects as they do; below, runs of layers
whose sizes break that progression are compacted into one, and the others kept as they are.
A chain is never flattened into a plain index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packorder import gitcmd
from packorder.repacking.geometry import Geometry
from packorder.store import midx as midx_mod
from packorder.store.repository import Repository

DEFAULT_SPLIT_FACTOR = 2


def _indexed(repo: Repository, packs: Sequence[Path]) -> list[midx_mod.IndexedPack]:
    known = {p.path: p.index for p in repo.packs}
    return [midx_mod.indexed(p, repo.fmt, known.get(p)) for p in packs]


def write(
    repo: Repository,
    packs: Sequence[Path],
    preferred: Path | None,
    mode: str,
    bitmap: bool,
    warn: Callable[[str], None] | None,
    plan: list[Step] | None = None,
) -> tuple[bool, bool]:
    """Write the multi-pack-index of `packs` in `mode`: (written, with its bitmap). When
    Git cannot write the bitmap asked for, the index is still written, without one, and
    `warn` says why. `plan`: an incremental chain's steps (chain_plan), else the chain
    is one new layer of `packs`."""
    pack_dir = repo.pack_dir
    preferred_name = preferred.name if preferred is not None else None
    if mode == "plain":
        if bitmap:
            failure = midx_mod.write_with_git(repo.git_dir, [p.name for p in packs], preferred_name, True)
            if failure is None:
                remove_pack_bitmaps(packs)
                return True, True
            if warn is not None:
                warn(_no_bitmap(failure))
        midx_mod.write_plain(
            pack_dir, _indexed(repo, packs), preferred_name, repo.fmt, repo.config.get_int("midx.version", 1)
        )
        return True, False
    if plan is None:
        plan = [Step(WRITE, packs=list(packs), preferred=preferred)]
    if bitmap:
        if _git_compacts(repo.git_dir):
            if _run_with_git(repo, plan, warn):
                return True, True
        elif warn is not None:
            warn(
                "no bitmap for the incremental multi-pack-index: this Git cannot write one into a chain (Git 2.55 can)"
            )
    _run_natively(repo, plan)
    return True, False


def _no_bitmap(why: str) -> str:
    return f"the multi-pack-index is written without its bitmap: Git could not write one: {why}"


def remove_pack_bitmaps(packs: Sequence[Path]) -> None:
    """A pack's own bitmap goes once a multi-pack-index bitmap covers it (Git's
    remove_redundant_bitmaps)."""
    for pack in packs:
        try:
            pack.with_suffix(".bitmap").unlink()
        except FileNotFoundError:
            continue


# --- An incremental chain ---------------------------------------------------------------

WRITE, COPY, COMPACT = "write", "copy", "compact"


@dataclass
class Step:
    """One layer of the chain to be: a new layer over `packs` (WRITE), an existing layer
    kept (COPY, `layers` of one), or existing layers compacted into one (COMPACT, `layers`
    base first)."""

    kind: str
    packs: list[Path] = field(default_factory=list)
    preferred: Path | None = None
    layers: list[midx_mod.Layer] = field(default_factory=list)
    objects: int = 0


def chain_plan(
    repo: Repository, geometry: Geometry | None, new_packs: Sequence[Path], staying: Sequence[Path]
) -> list[Step]:
    """The chain's layers after a repack, newest first (repack_make_midx_compaction_plan):
    see the module's doc. Without `geometry` (everything repacked into one), the chain is
    one layer of the packs that stay."""
    layers = midx_mod.read_chain(repo.pack_dir, repo.fmt)
    if geometry is None or not layers:
        return [Step(WRITE, packs=[*new_packs, *staying], preferred=next(iter(new_packs), None))]
    factor = max(repo.config.get_int("repack.midxSplitFactor", DEFAULT_SPLIT_FACTOR), 2)
    in_chain = {repo.pack_dir / name for layer in layers for name in midx_mod.layer_packs(layer)}
    rolled = {c.path for c in geometry.rolled_up}
    tip_rewritten = bool(rolled & in_chain)
    top = Step(WRITE, packs=list(new_packs), objects=sum(c.objects for c in geometry.rolled_up))
    largest = geometry.staying[-1].path if geometry.staying else None
    for pack in geometry.staying:
        if pack.path in in_chain and not tip_rewritten:
            continue  # stays in its layer
        top.packs.append(pack.path)
        top.objects += pack.objects
        if pack.path in in_chain or pack.path == largest:
            top.preferred = pack.path
    at = len(layers) - 1 - (1 if tip_rewritten else 0)
    while at >= 0:
        layer = layers[at]
        if top.objects < layer.midx.count // factor:
            break
        top.packs += [repo.pack_dir / name for name in midx_mod.layer_packs(layer)]
        top.objects += layer.midx.count
        at -= 1
    steps = [top] if top.packs else []
    while at >= 0:
        low, objects = at, 0
        while True:
            proposed = objects + layers[low].midx.count
            if low == 0:
                break
            if proposed < layers[low - 1].midx.count // factor:
                break
            objects = proposed
            low -= 1
        group = layers[low : at + 1]
        kind = COPY if len(group) == 1 else COMPACT
        steps.append(Step(kind, layers=group, objects=sum(g.midx.count for g in group)))
        at = low - 1
    return steps


def _run_natively(repo: Repository, plan: list[Step]) -> None:
    """Write the plan's layers, base first, then the chain file naming them."""
    below: list[midx_mod.Layer] = []
    written: list[str] = []
    for step in reversed(plan):
        if step.kind == COPY:
            layer = step.layers[0]
        else:
            packs = step.packs
            if step.kind == COMPACT:
                packs = [repo.pack_dir / name for layer in step.layers for name in midx_mod.layer_packs(layer)]
            preferred = step.preferred.name if step.preferred else None
            checksum = midx_mod.write_layer(repo.pack_dir, _indexed(repo, packs), preferred, below, repo.fmt)
            layer = midx_mod.read_chain_layer(repo.pack_dir, checksum, repo.fmt)
        below.append(layer)
        written.append(layer.checksum)
    midx_mod.write_chain(repo.pack_dir, written)


def _git_compacts(git_dir: Path) -> bool:
    """Whether this Git writes a chain's layers with their bitmaps (`multi-pack-index
    compact`, Git 2.55)."""
    proc = gitcmd.run(["multi-pack-index", "compact", "-h"], git_dir=git_dir, check=False)
    return b"write-chain-file" in proc.stdout + proc.stderr


def _run_with_git(repo: Repository, plan: list[Step], warn: Callable[[str], None] | None) -> bool:
    """The plan through Git, each layer with its bitmap, as `git repack` runs it."""
    written: list[str] = []
    for i, step in enumerate(plan):
        below = plan[i + 1] if i + 1 < len(plan) else None
        base = "none" if below is None else (below.layers[-1].checksum)
        if step.kind == COPY:
            written.append(step.layers[0].checksum)
            continue
        if step.kind == COMPACT:
            args = ["multi-pack-index", "compact", "--incremental", "--no-write-chain-file", "--bitmap"]
            args += ["--no-progress", step.layers[0].checksum, step.layers[-1].checksum]
            listing = None
        else:
            args = ["multi-pack-index", "write", "--incremental", "--no-write-chain-file", "--bitmap"]
            args += ["--no-progress", f"--base={base}", "--stdin-packs"]
            if step.preferred is not None:
                args.append(f"--preferred-pack={step.preferred.name}")
            listing = "".join(p.with_suffix(".idx").name + "\n" for p in step.packs).encode()
        proc = gitcmd.run(args, git_dir=repo.git_dir, check=False, input=listing)
        lines = proc.stdout.decode(errors="replace").split()
        if proc.returncode != 0 or len(lines) != 1:
            if warn is not None:
                warn(_no_bitmap(gitcmd.stderr_line(proc.stderr)))
            return False
        written.append(lines[0])
    midx_mod.write_chain(repo.pack_dir, list(reversed(written)))
    return True
