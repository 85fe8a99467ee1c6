"""Choosing a path for `log-path` and `blame` when none is given: the repository's most often
changed directory or file in recent history (a bounded scan, fast on any repository), among
those that exist at HEAD."""

from __future__ import annotations

import os
import posixpath
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from packorder.errors import RepositoryError
from packorder.gitcmd import run

SCAN_COMMITS = 1000


@dataclass(frozen=True)
class Choice:
    path: str
    commits: int  # commits among the scanned ones that changed it
    scanned: int  # commits scanned


def changes(git_dir: Path, commits: int = SCAN_COMMITS) -> list[list[str]]:
    """The files each of the last `commits` commits of HEAD changed (merges show none)."""
    proc = run(
        ["log", "--no-renames", "--name-only", "-z", "--format=%x01", f"-n{commits}", "HEAD", "--"],
        git_dir=git_dir,
    )
    out = []
    for chunk in proc.stdout.split(b"\x01\x00")[1:]:
        out.append([os.fsdecode(name) for name in chunk.lstrip(b"\n").split(b"\x00") if name])
    return out


def kinds_at_head(git_dir: Path, paths: list[str]) -> dict[str, str]:
    """'blob', 'tree', ... for each of `paths` that exists at HEAD (from the trees alone, so a
    partial clone's missing blobs still count)."""
    if not paths:
        return {}
    proc = run(["--literal-pathspecs", "ls-tree", "-t", "-z", "--full-tree", "HEAD", "--", *paths], git_dir=git_dir)
    found = {}
    for item in proc.stdout.split(b"\x00"):
        meta, tab, name = item.partition(b"\t")
        if tab:
            found[os.fsdecode(name)] = meta.split()[1].decode()
    return {p: found[p] for p in paths if p in found}


def most_changed(git_dir: Path, directory: bool, commits: int = SCAN_COMMITS) -> Choice:
    """The most often changed file (or directory: the one holding the changed files) that
    exists at HEAD; ties go to the first in byte order. A directory falls back to a file when
    no changed file sits in a directory."""
    history = changes(git_dir, commits)
    counts: Counter[str] = Counter()
    for files in history:
        if directory:
            counts.update({posixpath.dirname(f) for f in files} - {""})
        else:
            counts.update(set(files))
    if directory and not counts:
        return most_changed(git_dir, directory=False, commits=commits)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    want = "tree" if directory else "blob"
    # Check the front-runners in batches: the winner is almost always among the first.
    for start in range(0, len(ranked), 200):
        batch = ranked[start : start + 200]
        kinds = kinds_at_head(git_dir, [p for p, _ in batch])
        for path, count in batch:
            if kinds.get(path) == want:
                return Choice(path, count, len(history))
    what = "directory" if directory else "file"
    raise RepositoryError(f"no {what} changed in the last {len(history)} commits exists at HEAD; give a PATH")
