"""Triage kept between fleet runs (`--triage-cache FILE`). A repository whose packs, loose
objects, refs and configuration have not changed since its last triage is not read again:
a fleet triaged every day pays for reading packs only where something changed.

A repository's fingerprint is what its triage depends on, taken from `stat` alone (and
its configuration as Git reads it): the packs of it and of its alternates by name, size
and mtime; each loose-object directory's mtime (adding or removing an object changes it);
the refs, reflogs, worktrees, HEAD, index, shallow and graft files. The file is JSON lines,
appended as run_record.py appends (a run killed while writing leaves at most a torn last
line; the last line of a repository counts).
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from packorder.fleet import run_record
from packorder.gitcmd import read_config
from packorder.jsonable import to_jsonable

VERSION = 1  # of the fingerprint and the record: a new one makes every record stale
FILES = ("HEAD", "index", "packed-refs", "shallow", "commondir", "info/grafts", "objects/info/alternates")
TREES = ("refs", "reftable", "logs", "worktrees", "objects/pack")


@functools.cache
def _packorder_version() -> str:
    import packorder

    return packorder.__version__


def fingerprint(git_dir: Path, order: str | None) -> str:
    h = hashlib.sha256()

    def add(*parts: object) -> None:
        h.update(repr(parts).encode())
        h.update(b"\0")

    add(VERSION, _packorder_version(), order)
    add(sorted(read_config(git_dir).values.items()))
    for name in FILES:
        add(name, _stat(git_dir / name))
    for name in TREES:
        _add_tree(add, git_dir / name)
    objects = git_dir / "objects"
    with os.scandir(objects) as entries:
        for e in sorted(entries, key=lambda e: e.name):
            if len(e.name) == 2 and e.is_dir(follow_symlinks=False):
                add(e.name, e.stat(follow_symlinks=False).st_mtime_ns)
    for alternate in _alternates(objects):
        _add_tree(add, alternate / "pack")
    return h.hexdigest()


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


def _add_tree(add: Any, root: Path) -> None:
    add(str(root), _stat(root))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath, name)
            add(str(path.relative_to(root)), _stat(path))


def _alternates(objects: Path) -> list[Path]:
    try:
        lines = (objects / "info" / "alternates").read_text(errors="replace").splitlines()
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [objects / line.strip() for line in lines if line.strip() and not line.startswith("#")]


def load(path: Path) -> dict[str, dict[str, Any]]:
    """The latest record of each repository in the cache file (none when there is no file)."""
    return {k: r for k, r in run_record.latest(run_record.read(path)).items() if r.get("version") == VERSION}


def save(path: Path, triages: Iterable[Any]) -> None:
    """Append the triages made anew and complete (not taken from the cache, no error)."""
    fresh = [t for t in triages if t.fingerprint is not None and not t.cached and t.error is None]
    if fresh:
        run_record.append(path, ({"version": VERSION, **to_jsonable(t)} for t in fresh))


def known_of(cache: Mapping[str, dict[str, Any]] | None, git_dirs: Iterable[Path]) -> dict[str, dict[str, Any]] | None:
    """The part of `cache` about `git_dirs` (what one task of a cluster needs)."""
    if cache is None:
        return None
    return {str(p): cache[str(p)] for p in git_dirs if str(p) in cache}
