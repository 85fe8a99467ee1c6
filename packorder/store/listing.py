"""Where a repository keeps its objects, as listings: its packs (those with an index), the
object directories of its alternates, its loose objects. Nothing here imports more than the
standard library's basics and Git's configuration: index-pack's collision check lists through it."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from packorder import gitcmd
from packorder.errors import RepositoryError
from packorder.format import object_format as object_formats
from packorder.format.object_format import SHA1, ObjectFormat

_HEX2 = re.compile(r"^[0-9a-f]{2}$")


def _loose_name(fmt: ObjectFormat) -> re.Pattern[str]:
    """A loose object's file name: its id's hex digits after the two of its directory."""
    return re.compile(rf"^[0-9a-f]{{{fmt.hexsz - 2}}}$")


MAX_ALTERNATE_DEPTH = 5  # Git's limit on alternates of alternates


def alternates(objects_dir: Path, _depth: int = 0) -> list[Path]:
    """The object directories `objects/info/alternates` names, and theirs in turn (as Git
    follows them, up to five deep), each once."""
    info = objects_dir / "info" / "alternates"
    if _depth >= MAX_ALTERNATE_DEPTH or not info.exists():
        return []
    out: list[Path] = []
    for line in info.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            p = Path(line)
            alt = p if p.is_absolute() else (objects_dir / p).resolve()
            for found in [alt, *alternates(alt, _depth + 1)]:
                if found not in out and found != objects_dir:
                    out.append(found)
    return out


def list_packs(pack_dir: Path) -> list[Path]:
    """The packs of `pack_dir` that have an index; a pack without one is being written by
    someone else, or an orphan: not ours to read or touch."""
    if not pack_dir.is_dir():
        return []
    return [p for p in sorted(pack_dir.glob("pack-*.pack")) if p.with_suffix(".idx").exists()]


def loose_ids(objects_dir: Path, fmt: ObjectFormat = SHA1) -> bytes:
    """The ids (of `fmt`) of every loose object, sorted and concatenated (no path kept for each)."""
    ids = []
    rest = _loose_name(fmt)
    for sub in os.listdir(objects_dir) if objects_dir.is_dir() else []:
        if _HEX2.match(sub):
            with contextlib.suppress(NotADirectoryError, FileNotFoundError):
                ids += [bytes.fromhex(sub + name) for name in os.listdir(objects_dir / sub) if rest.match(name)]
    return b"".join(sorted(ids))


def list_loose(objects_dir: Path, fmt: ObjectFormat = SHA1) -> list[tuple[bytes, Path]]:
    """(id, path) of every loose object (ids of `fmt`), sorted by id."""
    out: list[tuple[bytes, Path]] = []
    rest = _loose_name(fmt)
    for sub in sorted(objects_dir.iterdir()) if objects_dir.is_dir() else []:
        if not _HEX2.match(sub.name) or not sub.is_dir():
            continue
        for entry in sorted(os.scandir(sub), key=lambda e: e.name):
            if rest.match(entry.name):
                out.append((bytes.fromhex(sub.name + entry.name), Path(entry.path)))
    return out


class Listing:
    """A repository's packs and loose objects as listed at one moment, its own and its
    alternates' apart (only its own may ever be removed). A plain class: `dataclasses` loads
    `inspect`, 1.3 MiB of index-pack's peak, and index-pack lists through this module."""

    def __init__(self, git_dir: Path, config: gitcmd.Config, fmt: ObjectFormat) -> None:
        self.git_dir = git_dir
        self.config = config
        self.fmt = fmt
        self.local_packs: list[Path] = []
        self.foreign_packs: list[Path] = []
        self.loose: list[tuple[bytes, Path]] = []
        self.foreign_loose: list[tuple[bytes, Path]] = []  # the alternates' loose objects

    @property
    def objects_dir(self) -> Path:
        return self.git_dir / "objects"

    def list(self) -> None:
        """List (again) what the object directories hold now."""
        objects = self.objects_dir
        self.local_packs = list_packs(objects / "pack")
        self.foreign_packs, self.foreign_loose = [], []
        for alt in alternates(objects):
            self.foreign_packs += list_packs(alt / "pack")
            self.foreign_loose += list_loose(alt, self.fmt)
        self.loose = list_loose(objects, self.fmt)


def repository_dir(path: str | os.PathLike[str] | None) -> tuple[Path, gitcmd.Config]:
    """The git directory at or above `path` (the current directory when None) and its
    configuration; one that has no objects directory is refused."""
    git_dir = gitcmd.find_git_dir(path)
    if not (git_dir / "objects").is_dir():
        raise RepositoryError(f"{git_dir} has no objects directory")
    return git_dir, gitcmd.read_config(git_dir)


def list_repository(path: str | os.PathLike[str] | None) -> Listing:
    """The repository's listing now: no lock, no walk (for reading a repository, not repacking it)."""
    git_dir, config = repository_dir(path)
    listing = Listing(git_dir, config, object_formats.named(config.object_format))
    listing.list()
    return listing
