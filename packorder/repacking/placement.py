"""Where each object goes in a pack written in a given order: the arrays an order works on,
the write order itself, and (for the simulator) a planned layout without writing anything."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from packorder.orders import permutations as order_mod
from packorder.orders.families import bases_first
from packorder.orders.functions import ORDERS
from packorder.repacking import deltas as deltas_mod
from packorder.repacking.options import RepackRequest, read_options
from packorder.store.repository import LOOSE, Repository, open_repository
from packorder.walk.history import ObjectHistory, object_history
from packorder.walk.objects import ObjectTable, enumerate_objects


def entry_sizes(repo: Repository, table: ObjectTable) -> np.ndarray:
    """Each object's entry bytes where it is now: its packed entry, or its loose file (about
    what it takes compressed)."""
    sizes = np.zeros(table.count, dtype=np.int64)
    for i, pack in enumerate(repo.packs):
        rows = np.flatnonzero(table.source == i)
        if len(rows):
            sizes[rows] = pack.layout.packed_sizes[table.pos[rows]]
    for row in np.flatnonzero(table.source == LOOSE):
        sizes[row] = repo.loose.paths[int(table.pos[row])].stat().st_size
    return sizes


def write_order(
    repo: Repository,
    table: ObjectTable,
    choice: deltas_mod.DeltaChoice,
    order: str,
    ref_delta: bool = False,
    history: ObjectHistory | None = None,
    sizes: np.ndarray | None = None,
) -> np.ndarray:
    """The table's rows in the order `order` writes them, each delta's base first. `history`
    (object_history of `table`) and `sizes` (entry_sizes of `table`): when the caller has them
    already."""
    spec = ORDERS[order]
    if spec.needs and history is None:
        history = object_history(repo, table, spec.needs)
    if spec.needs and sizes is None:
        sizes = entry_sizes(repo, table)
    assert spec.fn is not None
    objs = order_input(table, choice, ref_delta, history if spec.needs else None, sizes)
    return bases_first(spec.fn(objs), choice.base)


def order_input(
    table: ObjectTable,
    choice: deltas_mod.DeltaChoice,
    ref_delta: bool,
    history: ObjectHistory | None,
    sizes: np.ndarray | None,
) -> order_mod.OrderInput:
    """What every order reads: the objects' types and tags, the deltas chosen, the name
    hashes, and, for the orders that need history, where each object sits in it and its size."""
    # pack-objects records a reused delta's type as OFS_DELTA/REF_DELTA (so in its order such
    # trees and commits skip their phases and join the delta families); new deltas keep
    # their real type.
    delta_kind = order_mod.REF_DELTA if ref_delta else order_mod.OFS_DELTA
    entry_kinds = np.where(choice.reused, delta_kind, table.kinds).astype(np.uint8)
    objs = order_mod.OrderInput(table.kinds, table.tagged, choice.base, entry_kinds, name_hash=table.name_hash)
    if history is not None:
        objs.intro, objs.unreleased, objs.on_head = history.intro, history.unreleased, history.on_head
        objs.sizes = sizes
    return objs


@dataclass
class PlannedLayout:
    """Where each object would be in a pack written in a given order, without writing it:
    entries keep the packed size they have in their source (a copied entry is the same bytes,
    give or take a delta header's distance field), a loose object its file's size."""

    order: str
    oids: np.ndarray  # (n, 20) uint8, in write order
    offsets: np.ndarray  # uint64, simulated pack offsets (the first entry at 12)
    packed_sizes: np.ndarray  # int64
    base: np.ndarray  # int64: write position of the delta base, -1
    rows: np.ndarray  # int64: the object table's row of each entry


def plan_layout(
    repo_path: str | os.PathLike[str] | None = None,
    *,
    order: str = "recency",
    depth: int | None = None,
    repo: Repository | None = None,
    table: ObjectTable | None = None,
    history: ObjectHistory | None = None,
) -> PlannedLayout:
    """The layout `repack --order ORDER` would write, reusing stored deltas (no new search),
    for simulating workloads under that order. Pass `repo` and `table` to plan several orders
    from one enumeration, and `history` (object_history of `table`) to walk history once for
    all of them."""
    if repo is None:
        repo = open_repository(repo_path)
    opts = read_options(repo, RepackRequest(order=order, window=0, depth=depth, verify="crc"))
    if table is None:
        table = enumerate_objects(repo, unreachable=False)  # the ordered pack holds only those
    choice = deltas_mod.reuse(repo, table, opts.depth)
    sizes = entry_sizes(repo, table)
    rows = write_order(repo, table, choice, opts.order, opts.ref_delta, history, sizes)
    packed = sizes[rows]
    offsets = np.empty(len(packed), dtype=np.uint64)
    if len(packed):
        offsets[0] = 12
        offsets[1:] = 12 + np.cumsum(packed[:-1])
    position = np.empty(table.count, dtype=np.int64)
    position[rows] = np.arange(table.count)
    base = choice.base[rows]
    base = np.where(base >= 0, position[np.maximum(base, 0)], -1)
    return PlannedLayout(order, table.oids[rows], offsets, packed, base, rows)
