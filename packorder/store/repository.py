"""A repository as packorder reads it: its packs (with .keep, .promisor and cruft flags,
each pack's index and, on demand, its layout), its loose objects (its own and its
alternates'), its configuration and hash."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from packorder import gitcmd
from packorder.errors import CorruptPackError
from packorder.format import idx as idx_format
from packorder.format import layout as layout_mod
from packorder.format import mtimes as mtimes_format
from packorder.format.object_format import ObjectFormat
from packorder.native_call import loose_header
from packorder.store.listing import Listing, list_repository

LOOSE = -1


@dataclass
class PackSource:
    path: Path
    keep: bool
    promisor: bool
    foreign: bool  # from an alternate object store: read, never removed
    mtime: float
    index: idx_format.PackIndex
    cruft: bool = False  # a cruft pack: unreachable objects, each with its age in a .mtimes
    _layout: layout_mod.PackLayout | None = None
    _mtimes: np.ndarray | None = None

    @property
    def idx_path(self) -> Path:
        return layout_mod.idx_path_of(self.path)

    @property
    def layout(self) -> layout_mod.PackLayout:
        if self._layout is None:
            self._layout = layout_mod.load(self.path, self.index)
        return self._layout

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    def sibling(self, ext: str) -> Path:
        return self.path.with_name(self.path.name[: -len(".pack")] + ext)

    def object_mtimes(self) -> np.ndarray:
        """Each object's age (epoch seconds) in .idx order: from the .mtimes of a cruft pack,
        the pack's own mtime for any other (as Git dates them)."""
        if self._mtimes is None:
            count = len(self.index.offsets)
            if self.cruft:
                self._mtimes = mtimes_format.read(str(self.sibling(".mtimes")), count, self.index.fmt).astype(np.int64)
            else:
                self._mtimes = np.full(count, int(self.mtime), dtype=np.int64)
        return self._mtimes


@dataclass
class LooseObjects:
    oids: np.ndarray  # (n, rawsz) uint8, sorted
    paths: list[Path]
    foreign: np.ndarray  # bool: in an alternate's object directory (read, never removed)


@dataclass
class Repository:
    git_dir: Path
    config: gitcmd.Config
    packs: list[PackSource]
    loose: LooseObjects
    bare: bool
    fmt: ObjectFormat  # the hash of its object names

    @property
    def objects_dir(self) -> Path:
        return self.git_dir / "objects"

    @property
    def pack_dir(self) -> Path:
        return self.objects_dir / "pack"

    @property
    def has_promisor_packs(self) -> bool:
        return any(p.promisor for p in self.packs)

    def git(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return gitcmd.run(list(args), git_dir=self.git_dir, **kw)


def _pack_sources(packs: list[Path], foreign: bool, fmt: ObjectFormat) -> list[PackSource]:
    out = []
    for pack in packs:
        stem = pack.name[: -len(".pack")]
        out.append(
            PackSource(
                path=pack,
                keep=pack.with_name(f"{stem}.keep").exists(),
                promisor=pack.with_name(f"{stem}.promisor").exists(),
                foreign=foreign,
                mtime=pack.stat().st_mtime,
                index=idx_format.read(str(layout_mod.idx_path_of(pack)), fmt),
                cruft=pack.with_name(f"{stem}.mtimes").exists(),
            )
        )
    # Git looks objects up in local packs first, newest first.
    out.sort(key=lambda p: -p.mtime)
    return out


def _loose(local: list[tuple[bytes, Path]], foreign: list[tuple[bytes, Path]], fmt: ObjectFormat) -> LooseObjects:
    """Both listings as one, by id (a local copy before an alternate's)."""
    listed = sorted([(oid, False, path) for oid, path in local] + [(oid, True, path) for oid, path in foreign])
    oids = id_rows(b"".join(oid for oid, _, _ in listed), fmt)
    return LooseObjects(oids, [path for _, _, path in listed], np.array([f for _, f, _ in listed], dtype=bool))


def open_repository(path: str | os.PathLike[str] | None = None, listing: Listing | None = None) -> Repository:
    """The repository at `path`, with the packs and loose objects `listing` holds (a repack's
    snapshot, listed under its lock), or listed now."""
    if listing is None:
        listing = list_repository(path)
    git_dir, config, fmt = listing.git_dir, listing.config, listing.fmt
    packs = _pack_sources(listing.local_packs, False, fmt) + _pack_sources(listing.foreign_packs, True, fmt)
    bare = config.bare(git_dir)
    return Repository(git_dir, config, packs, _loose(listing.loose, listing.foreign_loose, fmt), bare, fmt)


def id_rows(ids: bytes, fmt: ObjectFormat) -> np.ndarray:
    """Concatenated ids of `fmt` as an (n, rawsz) array."""
    return np.frombuffer(ids, dtype=np.uint8).reshape(-1, fmt.rawsz)


def object_kinds(repo: Repository, source: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The real type of each object at (source, pos); a delta whose base is in no listed
    pack is a corrupt pack."""
    kinds = np.zeros(len(source), dtype=np.uint8)
    for i, pack in enumerate(repo.packs):
        rows = np.flatnonzero(source == i)
        if len(rows):
            real = pack.layout.real_kinds()
            kinds[rows] = real[pos[rows]]
    for row in np.flatnonzero(source == LOOSE):
        kind, _ = loose_header(repo.loose.paths[int(pos[row])])
        kinds[row] = kind
    if (kinds == 0).any():
        row = int(np.flatnonzero(kinds == 0)[0])
        pack = repo.packs[int(source[row])]
        off = int(pack.layout.offsets[pos[row]])
        raise CorruptPackError("delta whose base is missing from its pack", off, str(pack.path))
    return kinds
