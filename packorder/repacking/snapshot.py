"""What a repack starts from: the repack lock, the packs and loose objects that exist when it
starts (only these may be removed at the end), and Git's walk of every reachable object.

Taken before numpy and the rest of the repack are imported, so that `git rev-list` walks the
history on one core while Python loads and reads pack indexes on the other (the walk is most
of a reuse repack's time). The walk starts only after the listing: a pack pushed in between
would otherwise be listed, and so removable, while its objects were invisible to the walk.
"""

from __future__ import annotations

import os
from pathlib import Path

from packorder import gitcmd, settings
from packorder.format import object_format as object_formats
from packorder.orders.catalog import CATALOG, DEFAULT_ORDER, configured_order
from packorder.repacking import lock as lock_mod
from packorder.repacking import recovery
from packorder.store.listing import Listing, repository_dir
from packorder.walk import native as native_walk
from packorder.walk.rev_list import UNRELEASED, GitObjectWalk, HeadWalk, TagTips, object_walk


class Snapshot(Listing):
    """The lock (when repacking in place), the listing, and the walk started after it. Use as
    a context manager: leaving it stops whatever still runs and releases the lock."""

    def __init__(self, git_dir: Path, locked: bool, config: gitcmd.Config) -> None:
        super().__init__(git_dir, config, object_formats.named(config.object_format))
        self.locked = locked
        self.lock: lock_mod.RepositoryLock | None = None
        self.walk: GitObjectWalk | native_walk.NativeWalk | None = None
        self.tags: TagTips | None = None
        # For the orders that place objects by where they sit in history: the walk in commit
        # order (the main walk itself, made --in-commit-order) and the walk of unreleased
        # history, run beside it on the other core.
        self.intro_walk: GitObjectWalk | native_walk.NativeWalk | None = None
        self.unreleased_walk: GitObjectWalk | None = None
        self.head_walk: HeadWalk | None = None  # HEAD's commits, for the `paths` order
        self.order = DEFAULT_ORDER  # the order whose walks were started
        self.warnings: list[str] = []  # what taking it warned about (a lock taken over, leftovers)

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for run in (self.walk, self.tags, self.intro_walk, self.unreleased_walk, self.head_walk):
            if run is not None:
                run.stop()
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def take_history_walks(self) -> tuple[GitObjectWalk | None, GitObjectWalk | None, HeadWalk | None]:
        """The `--in-commit-order` walk, the walk of unreleased history and the walk of HEAD's
        commits, if they were started, handed over once."""
        walks = (self.intro_walk, self.unreleased_walk, self.head_walk)
        self.intro_walk = self.unreleased_walk = self.head_walk = None
        return walks

    def take_walk(self) -> tuple[GitObjectWalk, TagTips]:
        """The walk and tag listing started with the snapshot, handed over once."""
        if self.walk is None or self.tags is None:
            raise RuntimeError("the snapshot's walk was already used")
        walk, tags = self.walk, self.tags
        self.walk = self.tags = None
        return walk, tags


def _open(path: str | os.PathLike[str] | None, lock: bool) -> Snapshot:
    git_dir, config = repository_dir(path)
    return Snapshot(git_dir, lock, config)


def _may_write_bitmap(snap: Snapshot, bitmap: bool | None, promisor: bool) -> bool:
    """Whether the repack will write a bitmap, as options.py decides it from the same facts
    (it may still give it up: an alternate holds objects, or the repack's pack is written
    elsewhere)."""
    if not snap.locked:
        return False  # a pack written elsewhere, or none
    packs = snap.local_packs + snap.foreign_packs
    kept = any(p.with_suffix(".keep").exists() for p in packs)
    return settings.write_bitmap(snap.config, bitmap, snap.config.bare(snap.git_dir), promisor, kept)


def _main_walk(
    snap: Snapshot, promisor: bool, in_commit_order: bool, record_graph: bool
) -> GitObjectWalk | native_walk.NativeWalk:
    """The walk of every reachable object, over the snapshot's listing; ours records the
    commit and tree graph with `record_graph`, for the bitmap."""
    return object_walk(
        snap.git_dir,
        snap.fmt,
        snap.config,
        snap.local_packs + snap.foreign_packs,
        snap.loose + snap.foreign_loose,
        promisor,
        in_commit_order,
        record_graph,
    )


def take(
    path: str | os.PathLike[str] | None,
    lock: bool | lock_mod.RepositoryLock,
    order: str | None = None,
    warn: lock_mod.Warn | None = None,
    bitmap: bool | None = None,
    walks: bool = True,
) -> Snapshot:
    """Lock (if `lock`: lock.py; a lock the caller holds already is used as it is, and
    stays the caller's), list, then start the walks `order` needs (the repository's
    `packorder.order` when None): the main walk (in commit order when the order needs each
    object's introducing commit) and, beside it, the walk of unreleased history. `bitmap` is
    the repack's -b/-B, if given: with a bitmap to write, the walk records the graph. Without
    `walks` (a geometric repack, which walks only what it rolls up), nothing is started."""
    snap = _open(path, bool(lock))
    try:
        snap.order = configured_order(snap.config, order)
        needs = CATALOG[snap.order]
        if lock:
            # A killed run's lock taken over and its leftovers cleaned: one line for both.
            notes: list[str] = []
            if lock is True:
                snap.lock = lock_mod.acquire(snap.git_dir, notes.append)
            recovery.recover(snap.git_dir, notes.append)  # before the listing, which sees the result
            if notes:
                snap.warnings.append("; ".join(notes))
                if warn is not None:
                    warn(snap.warnings[-1])
        snap.list()
        if not walks:
            return snap
        promisor = any(p.with_suffix(".promisor").exists() for p in snap.local_packs + snap.foreign_packs)
        snap.walk = _main_walk(snap, promisor, needs.needs_intro, _may_write_bitmap(snap, bitmap, promisor))
        snap.tags = TagTips(snap.git_dir)
        if needs.needs_intro:
            snap.intro_walk = snap.walk
        if needs.needs_unreleased:
            snap.unreleased_walk = GitObjectWalk(snap.git_dir, snap.fmt, missing_ok=promisor, revs=UNRELEASED)
        if needs.needs_head:
            snap.head_walk = HeadWalk(snap.git_dir, snap.fmt)
    except BaseException:
        snap.close()
        raise
    return snap
