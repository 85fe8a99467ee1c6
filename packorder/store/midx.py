"""The multi-pack-index, in both of Git's forms: `objects/pack/multi-pack-index` (with its
`multi-pack-index-*.bitmap` and `.rev`), and the incremental chain of Git 2.47
(`multi-pack-index.d/`: a chain file naming layers `multi-pack-index-*.midx`). A repack
removes it before the packs it names go (a reader would find objects in packs that are
gone, and `git fsck` fails), then writes it again through Git in the form it had, so a
repository configured with one keeps one."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packorder import gitcmd
from packorder.faults import crash_point

CHAIN_DIR = "multi-pack-index.d"


@dataclass
class Midx:
    plain: bool = False  # objects/pack/multi-pack-index
    incremental: bool = False  # objects/pack/multi-pack-index.d/
    bitmap: bool = False  # a bitmap of either form

    @property
    def present(self) -> bool:
        return self.plain or self.incremental


def find(pack_dir: Path) -> Midx:
    chain = pack_dir / CHAIN_DIR
    return Midx(
        plain=(pack_dir / "multi-pack-index").exists(),
        incremental=(chain / "multi-pack-index-chain").exists(),
        bitmap=any(pack_dir.glob("multi-pack-index-*.bitmap")) or any(chain.glob("*.bitmap")),
    )


def remove(pack_dir: Path) -> Midx:
    """Remove every multi-pack-index file (each form's entry point first, so no reader finds
    one naming layers or packs that are gone); what there was."""
    found = find(pack_dir)
    chain = pack_dir / CHAIN_DIR
    for entry in (pack_dir / "multi-pack-index", chain / "multi-pack-index-chain"):
        with contextlib.suppress(FileNotFoundError):
            entry.unlink()
    for extra in [*pack_dir.glob("multi-pack-index-*"), *chain.glob("*")]:
        with contextlib.suppress(FileNotFoundError):
            extra.unlink()
    with contextlib.suppress(OSError):
        chain.rmdir()
    if found.present:
        crash_point("midx-removed")
    return found


def write(git_dir: Path, form: Midx, bitmap: bool, warn: Callable[[str], None] | None) -> bool:
    """Write a multi-pack-index of the packs now there through Git (incremental if `form`
    was, and Git can; with a bitmap if asked). A failure is a warning: the repository is
    valid without one. True if one was written."""
    args = ["multi-pack-index", "write"]
    if bitmap:
        args.append("--bitmap")  # Git writes no bitmap for an incremental one
    elif form.incremental:
        args.append("--incremental")
    proc = gitcmd.run(args, git_dir=git_dir, check=False)
    if proc.returncode != 0 and "--incremental" in args:
        proc = gitcmd.run(args[:2], git_dir=git_dir, check=False)  # a Git before 2.47
    if proc.returncode != 0:
        if warn is not None:
            err = proc.stderr.decode(errors="replace").strip().splitlines()
            warn(f"the new packs are installed, but no multi-pack-index could be written: {err[-1] if err else ''}")
        return False
    return True
