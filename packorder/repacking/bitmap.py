"""The reachability bitmap of a pack a repack writes (Git's `pack-*.bitmap`), computed
natively (native/src/bitmap/file.rs) from the commit and tree graph packorder's walk recorded
as it read them (native/src/walk/edges.rs), or, after Git's walk, from the new pack's own
commits and trees: which commits get a bitmap is decided here.

Git gives a bitmap to every commit near the tips and to commits spaced further apart deeper
in history, so that serving any want walks few commits before reaching one. We choose:
every branch head and tag tip (what fetches ask for), the 100 most recently discovered
commits, then one commit in 100 up to the 20,000th, then one in 1,000 (a history of 15,000
commits gets about 250).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from packorder import _native
from packorder.format.pack import OBJ_COMMIT
from packorder.native_call import pack_errors
from packorder.repacking.writer import WrittenPack
from packorder.settings import Limits
from packorder.store.object_ids import keys, lookup, sort_keys
from packorder.store.repository import Repository, id_rows
from packorder.walk.objects import ObjectTable

RECENT = 100
DENSE_UNTIL, DENSE_STEP = 20_000, 100
SPARSE_STEP = 1_000
MAX_TIPS = 1_000


@dataclass
class PackBitmap:
    data: bytes | None  # None: the pack cannot have a bitmap of its own (see `why`)
    bitmaps: int
    xored: int
    why: str | None  # None when it has one
    edges_stored: int  # tree and commit edges kept in memory (chunks shared within a delta family)
    edges_named: int  # edges the trees and commits name
    graph: str  # where the graph came from: "walk" (recorded by the walk) or "pack" (read from the new pack)


def head_ids(repo: Repository) -> np.ndarray:
    """Ids of the branch heads and HEAD, (n, rawsz) uint8."""
    out = repo.git("for-each-ref", "--format=%(objectname)", "refs/heads", check=False).stdout.split()
    head = repo.git("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).stdout.split()
    ids = sorted({bytes.fromhex(h.decode()) for h in out + head if len(h) == repo.fmt.hexsz})
    return id_rows(b"".join(ids), repo.fmt)


def select_commits(table: ObjectTable, rows: np.ndarray, heads: np.ndarray) -> np.ndarray:
    """Pack positions of the commits to give a bitmap. `rows` maps each pack position to its
    table row (the table lists reachable objects first, in Git's discovery order)."""
    candidates = np.flatnonzero((table.kinds[rows] == OBJ_COMMIT) & table.reachable[rows])
    candidates = candidates[np.argsort(rows[candidates], kind="stable")]  # discovery order
    rank = np.arange(len(candidates))
    spaced = (rank < RECENT) | ((rank < DENSE_UNTIL) & (rank % DENSE_STEP == 0)) | (rank % SPARSE_STEP == 0)
    tip = table.tagged[rows[candidates]]
    if len(heads):
        tip |= lookup(sort_keys(keys(heads)), keys(table.oids[rows[candidates]])) >= 0
    tips = candidates[tip][:MAX_TIPS]
    return np.union1d(candidates[spaced], tips).astype(np.uint32)


def compute(
    written: WrittenPack,
    table: ObjectTable,
    heads: np.ndarray,
    limits: Limits,
    hash_cache: bool = True,
) -> PackBitmap:
    """The bitmap of the pack just written; `hash_cache` (Git's pack.writeBitmapHashCache,
    default on) adds each object's path-name hash."""
    plan = written.plan
    rows = plan.rows
    selected = select_commits(table, rows, heads)
    with pack_errors(written.path, "cannot build the new pack's bitmap: "):
        outcome = _native.pack_bitmap(
            str(written.path),
            written.offsets.astype(np.uint64).tobytes(),
            written.size - written.fmt.rawsz,
            plan.base.astype(np.int64).tobytes(),
            plan.kinds.astype(np.uint8).tobytes(),
            np.ascontiguousarray(plan.oids).tobytes(),
            table.name_hash[rows].astype(np.uint32).tobytes(),
            selected.tobytes(),
            written.checksum,
            hash_cache,
            limits,
            table.graph,
        )
    return PackBitmap(
        outcome.data,
        outcome.bitmaps,
        outcome.xored,
        outcome.why,
        outcome.edges_stored,
        outcome.edges_named,
        "walk" if outcome.graph_from_walk else "pack",
    )
