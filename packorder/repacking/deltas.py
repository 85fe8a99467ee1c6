"""Delta selection: which stored deltas the new pack reuses, where chains are cut, and the
search for new deltas.

A stored delta is reused when its base is also written to the new pack. Chains longer than
`--depth` are cut as Git's break_delta_chains() cuts them: counting links from the chain's
root, every entry at a multiple of depth + 1 becomes a whole object, so no chain is deeper
than `depth` and as few deltas as possible are lost.

New deltas are searched as `git pack-objects` searches them (`search`): the policy (which
objects are candidates, their order, each one's depth allowance, how threads split the list)
is decided here; the sliding window itself runs natively (native/src/write/delta_search.rs, whose
header states the rules of one try).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from packorder import _native
from packorder.format.layout import NO_BASE, EntryColumns
from packorder.format.pack import OBJ_TREE
from packorder.native_call import loose_header, pack_errors, run_job
from packorder.orders.families import chain_depths, roots_and_depths
from packorder.progress import ProgressCallback
from packorder.settings import DEFAULT_DELTA_BASE_CACHE_LIMIT, Limits
from packorder.store.object_ids import id_order, keys, lookup
from packorder.store.repository import LOOSE, Repository
from packorder.walk.objects import ObjectTable


@dataclass
class DeltaChoice:
    base: np.ndarray  # int64: table index of the delta base each object is written against, or -1
    stored_delta: np.ndarray  # bool: the object is stored as a delta in its source
    cut: np.ndarray  # bool: a reusable delta dropped to respect --depth
    new: np.ndarray | None = field(default=None)  # bool: the delta against `base` is a new one

    def __post_init__(self) -> None:
        if self.new is None:
            self.new = np.zeros(len(self.base), dtype=bool)

    @property
    def reused(self) -> np.ndarray:
        """Objects written as the delta they are stored as."""
        assert self.new is not None
        return (self.base >= 0) & self.stored_delta & ~self.new


def stored_bases(repo: Repository, table: ObjectTable) -> tuple[np.ndarray, np.ndarray]:
    """For each object: whether its source entry is a delta, and the table index of that
    delta's base (-1 when the base is not among the objects written)."""
    n = table.count
    is_delta = np.zeros(n, dtype=bool)
    base = np.full(n, -1, dtype=np.int64)
    by_id: tuple[np.ndarray, np.ndarray] | None = None  # sorted once, if a base is read elsewhere
    for i, pack in enumerate(repo.packs):
        rows = np.flatnonzero(table.source == i)
        if not len(rows):
            continue
        lay = pack.layout
        pos = table.pos[rows]
        bpos = lay.base[pos]
        is_delta[rows] = lay.is_delta[pos]
        # A base the table reads from this same pack is found by its position; one it reads
        # from elsewhere (a newer pack, a loose copy), or not at all, by its id.
        row_at = np.full(lay.count, -1, dtype=np.int64)
        row_at[pos] = rows
        have = np.flatnonzero(bpos != NO_BASE)
        found = np.full(len(rows), -1, dtype=np.int64)
        found[have] = row_at[bpos[have]]
        elsewhere = have[found[have] < 0]
        if len(elsewhere):
            if by_id is None:
                order = id_order(keys(table.oids))
                by_id = order, keys(table.oids)[order]
            at = lookup(by_id[1], keys(lay.oids[bpos[elsewhere]]))
            found[elsewhere[at >= 0]] = by_id[0][at[at >= 0]]
        base[rows] = found
    return is_delta, base


def reuse(repo: Repository, table: ObjectTable, depth: int) -> DeltaChoice:
    """Reuse every stored delta whose base is written too, cutting chains at `depth`."""
    stored, base = stored_bases(repo, table)
    base[table.source == LOOSE] = -1
    if depth <= 0:
        cut = base >= 0
        return DeltaChoice(np.full(table.count, -1, dtype=np.int64), stored, cut)
    position = chain_depths(base)
    cut = (base >= 0) & (position % (depth + 1) == 0)
    base = np.where(cut, -1, base)
    return DeltaChoice(base, stored, cut)


def none(table: ObjectTable) -> DeltaChoice:
    """No deltas at all (every object whole)."""
    n = table.count
    return DeltaChoice(np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))


# --- The search for new deltas -------------------------------------------------------------

MIN_DELTA_SIZE = 50  # Git tries no delta for objects smaller than this
BIG_FILE_THRESHOLD = 512 << 20  # core.bigFileThreshold: larger objects are stored whole
CHUNKS_PER_THREAD = 16  # more chunks than threads, so that a slow chunk does not hold the rest
OBJECT_WORK = 4096.0  # the work of trying deltas for one object, besides its size, in bytes


@dataclass
class SearchResult:
    choice: DeltaChoice  # reused deltas (without -f) plus the new ones, flagged in choice.new
    deltas: dict[int, bytes]  # table index -> the new delta against choice.base of that object
    candidates: int  # objects the search considered
    chunks: int
    stats: dict[str, int]


def object_sizes(repo: Repository, table: ObjectTable, rows: np.ndarray) -> np.ndarray:
    """uint64: the size of each object of `rows` (not of its stored delta). A delta's object
    size is in the first bytes of its data, so only those deltas are inflated, that far."""
    sizes = np.zeros(len(rows), dtype=np.uint64)
    source = table.source[rows]
    for i, pack in enumerate(repo.packs):
        at = np.flatnonzero(source == i)
        if not len(at):
            continue
        lay = pack.layout
        pos = table.pos[rows[at]]
        sizes[at] = lay.sizes[pos]
        delta = lay.is_delta[pos]
        if not delta.any():
            continue
        if lay._object_sizes is not None:
            sizes[at[delta]] = lay._object_sizes[pos[delta]]
            continue
        order = np.argsort(pos[delta], kind="stable")
        offsets = lay.offsets[pos[delta][order]].astype(np.uint64)
        with pack_errors(pack.path):
            got = _native.read_entry_headers(str(pack.path), offsets.tobytes(), True, lay.fmt.name).object_sizes
        picked = np.empty(len(order), dtype=np.uint64)
        picked[order] = np.frombuffer(got, dtype=np.uint64)
        sizes[at[delta]] = picked
    for k in np.flatnonzero(source == LOOSE):
        sizes[k] = loose_header(repo.loose.paths[int(table.pos[rows[k]])])[1]
    return sizes


def search_order(
    table: ObjectTable, sizes: np.ndarray, rows: np.ndarray, name_hashes: np.ndarray | None = None
) -> np.ndarray:
    """`rows` in the order Git's pack-objects searches them: type, path-name hash
    (`name_hashes`, else the table's version-1 hashes) and size, each descending, then
    discovery order. Versions of one file come together, largest first, so each can be a
    delta against a larger one (removing data is cheaper than adding)."""
    hashes = table.name_hash if name_hashes is None else name_hashes
    return rows[
        np.lexsort(
            (
                rows,
                -sizes[rows].astype(np.int64),
                -hashes[rows].astype(np.int64),
                -table.kinds[rows].astype(np.int64),
            )
        )
    ]


def reused_heights(base: np.ndarray) -> np.ndarray:
    """For each object, the longest chain of deltas hanging below it (0 for none)."""
    height = np.zeros(len(base), dtype=np.int64)
    has = base >= 0
    if has.any():
        roots, depths = roots_and_depths(base)
        np.maximum.at(height, roots[has], depths[has])
    return height


def chunk_bounds(
    kinds: np.ndarray,
    hashes: np.ndarray,
    sizes: np.ndarray,
    threads: int,
    window: int,
    per_thread: int = CHUNKS_PER_THREAD,
) -> np.ndarray:
    """Boundaries splitting the sorted list into contiguous chunks for `threads` threads
    (`per_thread` chunks each, so that a slow chunk does not hold the rest), of about equal
    work (bytes to encode plus a cost an object). A chunk starts only where a new path
    starts (or among objects without a path), so that the versions of one file stay in one
    window; and among the places within a quarter of a chunk's work of the ideal one, at
    the smallest object: the first objects of a chunk have no window to find a base in, and
    a large one then costs the most (large files of similar paths are deltas of each other)."""
    n = len(kinds)
    parts = threads * per_thread if threads > 1 else 1
    if parts == 1 or n < 2 * window * parts:
        return np.array([0, n], dtype=np.int64)
    allowed = np.flatnonzero((kinds[1:] != kinds[:-1]) | (hashes[1:] != hashes[:-1]) | (hashes[1:] == 0)) + 1
    if not len(allowed):
        return np.array([0, n], dtype=np.int64)
    work = np.cumsum(sizes.astype(np.float64) + OBJECT_WORK)
    at_cut = work[allowed - 1]  # work before each allowed cut
    share = work[-1] / parts
    cuts = []
    for k in range(1, parts):
        lo, hi = np.searchsorted(at_cut, [share * (k - 0.25), share * (k + 0.25)])
        if hi > lo:
            cuts.append(int(allowed[lo + int(np.argmin(sizes[allowed[lo:hi]]))]))
    return np.unique(np.concatenate([[0], cuts, [n]])).astype(np.int64)


def _pack_args(repo: Repository, used: list[int]) -> list[EntryColumns]:
    # No CRCs: the search only reads objects; the writer checks what it copies.
    return [repo.packs[s].layout.native_source() for s in used]


def search(
    repo: Repository,
    table: ObjectTable,
    *,
    window: int,
    depth: int,
    threads: int,
    reuse_deltas: bool,
    big_file_threshold: int = BIG_FILE_THRESHOLD,
    cache_budget: int = DEFAULT_DELTA_BASE_CACHE_LIMIT,
    object_limit: int = 1 << 62,
    repick_backward: bool = False,
    by_path: bool = False,
    name_hash_version: int = 1,
    progress: ProgressCallback | None = None,
) -> SearchResult:
    """New deltas as `git pack-objects` finds them.

    With `reuse_deltas` (`git repack -ad`), stored deltas are reused first (see `reuse`), and
    the search only considers the other objects; an object stored whole is not tried against
    objects of its own pack (whose writer tried that already), and its depth allowance is
    lowered by the deltas reused below it. Without (`-f`), every object is a candidate.
    Candidates are objects of at least 50 bytes and at most `big_file_threshold`, sorted by
    `search_order`; each is tried against the `window - 1` candidates before it (see
    native/src/write/delta_search.rs), never making a chain longer than `depth`.

    With `repick_backward` (and reuse), a stored tree delta whose base Git discovers after it
    (an older tree: packs made by hosting services hold many) is not reused but searched
    anew, against trees discovered no later than itself. Orders write trees in discovery
    order, so such a delta would otherwise pull its base forward, among newer trees.

    With `by_path` (Git's `--path-walk`), each path's versions are searched first among
    themselves, a window a path (`path_order`), and the search above takes only what found
    no delta there; `name_hash_version` 2 sorts that search by Git's version-2 name hash.
    Both need the paths a walk recorded (the table of a whole repack has them).
    """
    dropped: tuple[np.ndarray, np.ndarray] | None = None
    if reuse_deltas:
        choice = reuse(repo, table, depth)
        if repick_backward and window > 1 and depth > 0:
            backward = np.flatnonzero(
                choice.reused & (table.kinds == OBJ_TREE) & (choice.base > np.arange(table.count))
            )
            dropped = (backward, choice.base[backward].copy())
            choice.base[backward] = -1
    else:
        choice = none(table)
        choice.stored_delta[:] = stored_bases(repo, table)[0]
    result = _search_from(
        repo,
        table,
        choice,
        window,
        depth,
        # Each thread keeps its own cache of bases.
        Limits(threads, max(cache_budget // max(threads, 1), 1 << 20), object_limit),
        reuse_deltas,
        big_file_threshold,
        dropped is not None,
        progress,
        by_path,
        table.name_hash_v2 if name_hash_version == 2 else None,
    )
    if dropped is not None:
        _restore_unmatched(result.choice, *dropped, depth)
    return result


def _restore_unmatched(choice: DeltaChoice, rows: np.ndarray, old_bases: np.ndarray, depth: int) -> None:
    """Re-picked deltas for which the search found no base keep their stored delta (rather
    than being written whole), unless a new delta was made against them as whole objects or
    their stored base got a new delta itself. Restoring re-links chains the search saw cut,
    so a restoration is undone again wherever a chain would now be longer than `depth` (or,
    through new deltas, loop)."""
    assert choice.new is not None
    keep = (choice.base[rows] < 0) & ~np.isin(rows, choice.base[choice.new]) & ~choice.new[old_bases]
    restored = rows[keep]
    choice.base[restored] = old_bases[keep]
    while len(restored):
        over = _over_depth(choice.base, depth)
        if not len(over):
            return
        # Undo the restorations on the chains of the objects that are too deep.
        on_chain = np.zeros(len(choice.base), dtype=bool)
        cur = over.copy()
        for _ in range(depth + 2):
            on_chain[cur] = True
            cur = choice.base[cur]
            cur = cur[cur >= 0]
            if not len(cur):
                break
        undo = restored[on_chain[restored]]
        if not len(undo):  # not from a restoration (reuse and the search respect depth)
            return
        choice.base[undo] = -1
        restored = restored[~on_chain[restored]]


def _over_depth(base: np.ndarray, depth: int) -> np.ndarray:
    """Objects more than `depth` delta links from their chain's root (or in a loop), found in
    at most `depth` steps."""
    cur = base.copy()
    active = cur >= 0
    for _ in range(depth):
        if not active.any():
            break
        cur[active] = base[cur[active]]
        active = cur >= 0
    return np.flatnonzero(active)


def _search_from(
    repo: Repository,
    table: ObjectTable,
    choice: DeltaChoice,
    window: int,
    depth: int,
    limits: Limits,
    reuse_deltas: bool,
    big_file_threshold: int,
    repick_backward: bool,
    progress: ProgressCallback | None,
    by_path: bool = False,
    name_hashes: np.ndarray | None = None,
) -> SearchResult:
    """The window search of `search`, from a choice of reused deltas: with `by_path`, first
    among each path's own versions, then, for what found no delta there, the usual search
    sorted by `name_hashes` (the table's version-1 hashes by default)."""
    empty = SearchResult(choice, {}, 0, 0, {})
    if window <= 1 or depth <= 0 or table.count == 0:
        return empty
    unreused = np.flatnonzero(choice.base < 0)
    if reuse_deltas and len(unreused):
        # Git does not try an object stored whole against one of its own pack (that pack's
        # writer tried it). When every candidate is such an object of one and the same pack,
        # no pair is left to try: skip reading their sizes and the search.
        src = table.source[unreused]
        if src[0] != LOOSE and np.all(src == src[0]) and not choice.stored_delta[unreused].any():
            return empty
    sizes = np.zeros(table.count, dtype=np.uint64)
    sizes[unreused] = object_sizes(repo, table, unreused)
    wanted = (choice.base < 0) & (sizes >= MIN_DELTA_SIZE) & (sizes <= big_file_threshold)
    hashes = table.name_hash if name_hashes is None else name_hashes
    run = _SearchRun(repo, table, choice, sizes, window, depth, limits, reuse_deltas)
    searches: list[SearchResult] = []
    path_pass = by_path and table.path_hash is not None
    if path_pass:
        rows, bounds = path_order(table, sizes, np.flatnonzero(wanted))
        if len(rows) >= 2:
            searches.append(run.search(rows, bounds, None, "Compressing objects by path", progress))
            wanted &= choice.base < 0
    rows = search_order(table, sizes, np.flatnonzero(wanted), hashes)
    if len(rows) >= 2:
        # After the search by path, what is left is each path's largest version, the base
        # of its chains, searched against other paths': a chunk's first objects, with no
        # window behind them, are whole files (libgit2: 32 chunks wrote 1.5 MB more deltas
        # than 2). It is a small part of the work: one chunk a thread.
        per_thread = 1 if path_pass else CHUNKS_PER_THREAD
        bounds = chunk_bounds(table.kinds[rows], hashes[rows], sizes[rows], limits.threads, window, per_thread)
        # A tree's base must be discovered no later than it (table order is discovery order).
        ranks = np.where(table.kinds[rows] == OBJ_TREE, rows, 0).astype(np.uint32) if repick_backward else None
        searches.append(run.search(rows, bounds, ranks, "Compressing objects", progress))
    stats: dict[str, int] = {}
    for got in searches:
        for key, value in got.stats.items():
            stats[key] = stats.get(key, 0) + value
    deltas = {target: delta for got in searches for target, delta in got.deltas.items()}
    return SearchResult(choice, deltas, sum(g.candidates for g in searches), sum(g.chunks for g in searches), stats)


def path_order(table: ObjectTable, sizes: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The candidates of the search by path, and the bounds of each one's window: the trees
    and blobs found at a path that has another version of their type, each path's versions
    together, as the search sorts them (largest first, then in discovery order, newest
    first): one window a path and type, as Git's `--path-walk` searches each path apart."""
    assert table.path_hash is not None
    rows = rows[table.path_hash[rows] != 0]
    rows = rows[np.lexsort((rows, -sizes[rows].astype(np.int64), table.kinds[rows], table.path_hash[rows]))]
    path, kind = table.path_hash[rows], table.kinds[rows]
    group = np.cumsum(np.concatenate([[True], (path[1:] != path[:-1]) | (kind[1:] != kind[:-1])])) - 1
    counts = np.bincount(group) if len(rows) else np.zeros(0, dtype=np.int64)
    rows = rows[counts[group] > 1] if len(rows) else rows
    bounds = np.concatenate([[0], np.cumsum(counts[counts > 1])]).astype(np.int64)
    return rows, bounds


class _SearchRun:
    """One native window search over rows in a given order, split at given bounds (each
    part a window of its own, searched by the threads in turn)."""

    def __init__(
        self,
        repo: Repository,
        table: ObjectTable,
        choice: DeltaChoice,
        sizes: np.ndarray,
        window: int,
        depth: int,
        limits: Limits,
        reuse_deltas: bool,
    ) -> None:
        self.repo, self.table, self.choice, self.sizes = repo, table, choice, sizes
        self.window, self.depth, self.limits, self.reuse_deltas = window, depth, limits, reuse_deltas

    def search(
        self,
        rows: np.ndarray,
        bounds: np.ndarray,
        ranks: np.ndarray | None,
        title: str,
        progress: ProgressCallback | None,
    ) -> SearchResult:
        """Search `rows`; the deltas found are set in the choice (flagged new)."""
        repo, table, choice = self.repo, self.table, self.choice
        # The chains already below an object (reused, or found by an earlier search) count
        # against its depth.
        allowance = self.depth - reused_heights(choice.base)[rows]
        source = table.source[rows]
        used = sorted({int(s) for s in np.unique(source) if s != LOOSE})
        remap = np.full(max(used, default=0) + 2, -1, dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        sources = np.where(source == LOOSE, -1, remap[np.maximum(source, 0)]).astype(np.int32)
        loose_rows = np.flatnonzero(source == LOOSE)
        positions = table.pos[rows].astype(np.uint64)
        positions[loose_rows] = np.arange(len(loose_rows), dtype=np.uint64)
        loose = [str(repo.loose.paths[int(table.pos[rows[r]])]) for r in loose_rows]
        same_pack = self.reuse_deltas & (source != LOOSE) & ~choice.stored_delta[rows]
        native = _native.DeltaSearch(
            _pack_args(repo, used),
            loose,
            table.kinds[rows].astype(np.uint8).tobytes(),
            self.sizes[rows].astype(np.uint64).tobytes(),
            sources.tobytes(),
            positions.tobytes(),
            np.clip(allowance, 0, None).astype(np.uint32).tobytes(),
            same_pack.astype(np.uint8).tobytes(),
            bounds.tobytes(),
            self.window,
            self.limits,
            None if ranks is None else ranks.tobytes(),
        )
        searched = run_job(native, title=title, count=len(rows), progress=progress)
        found = np.frombuffer(searched.bases, dtype=np.int64)
        got = np.flatnonzero(found >= 0)
        targets = rows[got]
        choice.base[targets] = rows[found[got]]
        assert choice.new is not None
        choice.new[targets] = True
        deltas = {int(t): d for t, d in zip(targets, searched.deltas, strict=True)}
        return SearchResult(choice, deltas, len(rows), len(bounds) - 1, searched.stats)
