"""Which repositories a fleet holds: paths given, a file of paths, or the git directories
found under a root.

A repository is counted by its common git directory, resolved: a linked worktree (its
`.git` file names a directory whose `commondir` leads to the main one), a symlink to a
repository, or a path given twice all count once. Recognising a git directory by its files
(HEAD, objects/, refs/, as Git's `is_git_directory` does) rather than by asking `git
rev-parse` keeps discovery at microseconds a directory: a root may hold 10^5 of them.

The search of a root follows symlinks to directories but enters each real directory once,
so a symlink loop is skipped and reported; a directory it cannot read is reported and the
search goes on. It does not search inside a repository, nor inside a non-bare repository's
work tree (a fleet keeps its repositories side by side, not inside each other).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Discovery:
    repositories: list[Path] = field(default_factory=list)  # common git directories, resolved, in order found
    problems: list[str] = field(default_factory=list)  # unreadable directories, loops, paths that are no repository


def is_git_dir(path: Path) -> bool:
    """Git's is_git_directory(): HEAD, and objects/ and refs/ (here or in the commondir)."""
    if not (path / "HEAD").is_file():
        return False
    common = common_dir(path)
    return (common / "objects").is_dir() and (common / "refs").is_dir()


def common_dir(git_dir: Path) -> Path:
    """The directory a linked worktree's git directory shares its objects with (itself for
    a main one)."""
    try:
        shared = (git_dir / "commondir").read_text().strip()
    except OSError:
        return git_dir
    p = Path(shared)
    return p if p.is_absolute() else git_dir / p


def git_dir_of(path: Path) -> Path | None:
    """The git directory at `path`: `path` itself when bare (or a git directory), its `.git`
    directory, or the directory a `.git` file (worktree, submodule) names."""
    if is_git_dir(path):
        return path
    dot_git = path / ".git"
    if dot_git.is_dir():
        return dot_git if is_git_dir(dot_git) else None
    if dot_git.is_file():
        try:
            line = dot_git.read_text().strip()
        except OSError:
            return None
        if line.startswith("gitdir:"):
            target = Path(line.removeprefix("gitdir:").strip())
            target = target if target.is_absolute() else path / target
            return target if is_git_dir(target) else None
    return None


class _Found:
    def __init__(self) -> None:
        self.result = Discovery()
        self.seen: set[Path] = set()

    def add(self, git_dir: Path) -> None:
        key = common_dir(git_dir).resolve()
        if key not in self.seen:
            self.seen.add(key)
            self.result.repositories.append(key)


def discover(
    paths: Iterable[str | os.PathLike[str]] = (),
    list_file: str | os.PathLike[str] | None = None,
    roots: Iterable[str | os.PathLike[str]] = (),
) -> Discovery:
    """The repositories named by `paths`, by the lines of `list_file` (blank lines and `#`
    comments skipped), and found under `roots`; each once."""
    found = _Found()
    named = [Path(p) for p in paths]
    if list_file is not None:
        with open(list_file, encoding="utf-8") as f:
            named += [Path(line.strip()) for line in f if line.strip() and not line.lstrip().startswith("#")]
    for path in named:
        try:
            git_dir = git_dir_of(path)
        except OSError as e:
            found.result.problems.append(f"{path}: {e.strerror}")
            continue
        if git_dir is None:
            found.result.problems.append(f"{path}: not a git repository")
        else:
            found.add(git_dir)
    for root in roots:
        _search(Path(root), found)
    return found.result


def _search(root: Path, found: _Found) -> None:
    if not root.is_dir():
        found.result.problems.append(f"{root}: not a directory")
        return
    entered: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        here = stack.pop()
        try:
            st = here.stat()
        except OSError as e:
            found.result.problems.append(f"{here}: {e.strerror}")
            continue
        if (st.st_dev, st.st_ino) in entered:
            if here.is_symlink():
                found.result.problems.append(f"{here}: symlink to a directory already searched (skipped)")
            continue
        entered.add((st.st_dev, st.st_ino))
        try:
            git_dir = git_dir_of(here)
            if git_dir is not None:
                found.add(git_dir)
                continue
            with os.scandir(here) as entries:
                children = [Path(e.path) for e in entries if _is_dir(e)]
        except OSError as e:
            found.result.problems.append(f"{here}: {e.strerror}")
            continue
        stack += sorted(children, reverse=True)  # popped in name order


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()  # follows a symlink; a broken one is no directory
    except OSError:
        return False
