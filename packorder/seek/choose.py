"""Choosing what a workload reads when it is not given: for `log-path`, `log-patch` and
`blame`, the repository's most often changed directory or file in recent history (a bounded
scan, fast on any repository), among those that exist at HEAD; for `diff-tags`, the two
newest tags."""

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

    @property
    def note(self) -> str:
        return f"chose {self.path} (changed by {self.commits} of the last {self.scanned} commits)"


@dataclass(frozen=True)
class TagChoice:
    tags: tuple[str, str]  # full ref names, the older first

    @property
    def note(self) -> str:
        older, newer = (t.removeprefix("refs/tags/") for t in self.tags)
        return f"chose {older} and {newer} (the two newest tags by creator date)"


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


def newest_tags(git_dir: Path) -> TagChoice:
    """The two tags with the newest creator dates (a tag's tagger date, or its commit's
    committer date for a lightweight tag; ties in ref name order) among those naming a commit
    directly or through one tag object, the second naming another commit than the first."""
    fields = "%(creatordate:unix)%00%(objecttype)%00%(objectname)%00%(*objecttype)%00%(*objectname)%00%(refname)"
    proc = run(["for-each-ref", f"--format={fields}", "refs/tags"], git_dir=git_dir)
    found = []
    for line in proc.stdout.decode(errors="surrogateescape").splitlines():
        date, kind, name, peeled_kind, peeled, ref = line.split("\0")
        commit = name if kind == "commit" else peeled if peeled_kind == "commit" else None
        if commit is not None:
            found.append((-int(date or 0), ref, commit))
    found.sort()
    newest = found[:1]
    newest += [tag for tag in found[1:] if tag[2] != newest[0][2]][:1]
    if len(newest) < 2:
        where = " (all on one commit)" if len(found) > 1 else ""
        raise RepositoryError(f"diff-tags needs two tags on different commits; found {len(found)} tag(s){where}")
    return TagChoice((newest[1][1], newest[0][1]))
