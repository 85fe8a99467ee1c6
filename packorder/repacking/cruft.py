"""Unreachable objects, kept the way Git (2.38+) keeps them: in a cruft pack, each with its age.

The ordered pack holds only reachable objects. The others go to a cruft pack whose .mtimes
records when each was last written (format/mtimes.py), so that they expire one by one instead
of being refreshed together whenever the pack is rewritten. The rules are those of
`git pack-objects --cruft` (Documentation/gitformat-pack, "cruft packs"):

- An object's age is the latest of its copies' dates: its loose file's mtime, its entry in a
  cruft pack's .mtimes, otherwise the mtime of the pack holding it. A repack never makes an
  object younger.
- Without an expiration every unreachable object is kept.
- With one, an object is recent if it is younger than the expiration (or a
  `gc.recentObjectsHook` names it). Recent objects are kept, and so is every unreachable object
  they reach: a kept commit keeps its parents and trees, a tree its entries, a tag its target.
  Such an object, old itself, is dated at the expiration, as Git dates it. The rest expire.

The walk from recent objects runs only through unreachable objects: whatever a reachable
object reaches is reachable, so it never leads back to an unreachable one. Objects of promisor
packs stay in the promisor pack, and objects of .keep packs in their pack; both end the walk.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass

import numpy as np

from packorder import gitcmd
from packorder.errors import RepositoryError
from packorder.format.object_format import ObjectFormat
from packorder.format.pack import OBJ_BLOB
from packorder.store.object_ids import keys, lookup
from packorder.store.repository import Repository
from packorder.walk.objects import ObjectTable

GITLINK_MODE = b"160000"


@dataclass
class CruftSelection:
    """What happens to each unreachable object of a table."""

    kept: np.ndarray  # bool per table row: unreachable, written to the cruft pack
    expired: np.ndarray  # bool per table row: unreachable and dropped
    mtimes: np.ndarray  # int64 per table row: the age the cruft pack records (0 elsewhere)
    rescued: int  # old objects kept because a recent one reaches them


def object_ages(repo: Repository, oids: np.ndarray) -> np.ndarray:
    """The age of each object (epoch seconds): the latest date among its local copies, or 0."""
    ages = np.zeros(len(oids), dtype=np.int64)
    want = keys(oids)
    for pack in repo.packs:
        if pack.foreign or pack.keep:
            continue
        at = lookup(keys(pack.index.names), want)
        hit = at >= 0
        if hit.any():
            ages[hit] = np.maximum(ages[hit], pack.object_mtimes()[at[hit]])
    if len(repo.loose.oids):
        at = lookup(keys(repo.loose.oids), want)
        for row in np.flatnonzero(at >= 0):
            try:
                mtime = int(os.stat(repo.loose.paths[int(at[row])]).st_mtime)
            except FileNotFoundError:
                continue  # removed since the listing (by a prune): its other copies date it
            ages[row] = max(ages[row], mtime)
    return ages


def select(repo: Repository, table: ObjectTable, expiration: int | None) -> CruftSelection:
    """Which unreachable objects of `table` (not promisor objects: those stay in the promisor
    pack) go to the cruft pack with which age, and which expire (`expiration`: epoch seconds,
    or None for never)."""
    n = table.count
    domain = np.flatnonzero(~table.reachable & ~table.promisor)
    kept = np.zeros(n, dtype=bool)
    mtimes = np.zeros(n, dtype=np.int64)
    if not len(domain):
        return CruftSelection(kept, np.zeros(n, dtype=bool), mtimes, 0)
    ages = object_ages(repo, table.oids[domain])
    mtimes[domain] = ages
    if expiration is None:
        kept[domain] = True
        return CruftSelection(kept, np.zeros(n, dtype=bool), mtimes, 0)
    recent = ages > expiration
    hooked = recent_hook_ids(repo)
    if hooked:
        recent |= np.isin(keys(table.oids[domain]), np.array(sorted(hooked), dtype=f"S{repo.fmt.rawsz}"))
    kept[domain[recent]] = True
    reached = _reached_from(repo, table, domain, recent)
    rescued = reached & ~kept
    kept |= rescued
    # Git dates an old object kept only because a recent one needs it at the expiration
    # itself: it stays too old, and goes once nothing recent needs it.
    mtimes[rescued] = expiration
    expired = np.zeros(n, dtype=bool)
    expired[domain] = ~kept[domain]
    mtimes[expired] = 0
    return CruftSelection(kept, expired, mtimes, int(rescued.sum()))


def recent_hook_ids(repo: Repository) -> set[bytes]:
    """Objects the `gc.recentObjectsHook` programs name (one id a line): Git treats them as
    recent whatever their age."""
    programs = repo.config.get_all("gc.recentObjectsHook")
    found: set[bytes] = set()
    for program in programs:
        # Run as Git runs it: by the shell, in the repository.
        proc = subprocess.run(
            program,
            shell=True,
            capture_output=True,
            cwd=repo.git_dir,
            env=gitcmd.git_env({"GIT_DIR": str(repo.git_dir)}),
        )
        if proc.returncode != 0:
            raise RepositoryError(f"gc.recentObjectsHook '{program}' failed: exit status {proc.returncode}")
        for line in proc.stdout.decode(errors="replace").split():
            try:
                oid = bytes.fromhex(line)
            except ValueError:
                raise RepositoryError(f"gc.recentObjectsHook '{program}' printed a bad object id: {line!r}") from None
            if len(oid) != repo.fmt.rawsz:
                raise RepositoryError(f"gc.recentObjectsHook '{program}' printed a bad object id: {line!r}")
            found.add(oid)
    return found


def _reached_from(repo: Repository, table: ObjectTable, domain: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Table rows of `domain` reachable from its rows `start` (a mask over domain) through
    objects of `domain` only (links that leave it, or lead to missing objects, end there)."""
    n = table.count
    reached = np.zeros(n, dtype=bool)
    row_of = {table.oids[r].tobytes(): int(r) for r in domain}
    frontier = [int(r) for r in domain[start] if table.kinds[r] != OBJ_BLOB]
    reached[domain[start]] = True
    with gitcmd.ObjectReader(repo.git_dir) as reader:
        while frontier:
            next_frontier: list[int] = []
            hexes = [table.oids[r].tobytes().hex() for r in frontier]
            for _, found in reader.read_many(hexes):
                if found is None:
                    continue
                kind, data = found
                for oid in _links(kind, data, repo.fmt):
                    row = row_of.get(oid)
                    if row is None or reached[row]:
                        continue
                    reached[row] = True
                    if table.kinds[row] != OBJ_BLOB:
                        next_frontier.append(row)
            frontier = next_frontier
    return reached


def _links(kind: str, data: bytes, fmt: ObjectFormat) -> list[bytes]:
    """The ids an object refers to: a commit's tree and parents, a tag's target, a tree's
    entries (gitlinks excepted: Git does not follow them)."""
    if kind == "tree":
        out = []
        at = 0
        while at < len(data):
            space = data.index(b" ", at)
            nul = data.index(b"\0", space)
            if data[at:space] != GITLINK_MODE:
                out.append(data[nul + 1 : nul + 1 + fmt.rawsz])
            at = nul + 1 + fmt.rawsz
        return out
    wanted = {"commit": (b"tree ", b"parent "), "tag": (b"object ",)}.get(kind, ())
    out = []
    for line in data.split(b"\n"):
        if not line:
            break  # the headers end at the first empty line
        for head in wanted:
            if line.startswith(head):
                with contextlib.suppress(ValueError):  # a malformed header names nothing to keep
                    out.append(bytes.fromhex(line[len(head) :].decode()))
    return out
