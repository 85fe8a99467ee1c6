"""The multi-pack-index of a repository, in both of Git's forms: `objects/pack/multi-pack-index`
(with its `multi-pack-index-HASH.bitmap`), and the incremental chain
(`multi-pack-index.d/`: `multi-pack-index-chain` naming layers `multi-pack-index-HASH.midx`,
base first, each maybe with its `.bitmap`).

Written natively (format/midx.py) where no bitmap is asked for: the copy of each object Git
would name, the same bytes as `git multi-pack-index write`. A bitmap is Git's to write
(`git multi-pack-index write --bitmap`), from the refs as the repack listed them.

A repack that removes packs a multi-pack-index names removes the index first (a reader would
find objects in packs that are gone, and `git fsck` fails); an index written before the
removal names only the packs that stay, so removing the others after it is safe.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from packorder import gitcmd
from packorder.durable import fsync_dir, temp_prefix, write_atomically
from packorder.errors import CorruptPackError
from packorder.faults import crash_point
from packorder.format import idx as idx_format
from packorder.format import midx as midx_format
from packorder.format.object_format import SHA1, ObjectFormat
from packorder.store.object_ids import id_order, keys, lookup, sort_keys

PLAIN = "multi-pack-index"
CHAIN_DIR = "multi-pack-index.d"
CHAIN_FILE = "multi-pack-index-chain"


@dataclass
class Midx:
    plain: bool = False  # objects/pack/multi-pack-index
    incremental: bool = False  # objects/pack/multi-pack-index.d/
    bitmap: bool = False  # a bitmap of either form

    @property
    def present(self) -> bool:
        return self.plain or self.incremental


def find(pack_dir: Path) -> Midx:
    chain = pack_dir / CHAIN_DIR
    return Midx(
        plain=(pack_dir / PLAIN).exists(),
        incremental=(chain / CHAIN_FILE).exists(),
        bitmap=any(pack_dir.glob("multi-pack-index-*.bitmap")) or any(chain.glob("*.bitmap")),
    )


def remove(pack_dir: Path) -> Midx:
    """Remove every multi-pack-index file (each form's entry point first, so no reader finds
    one naming layers or packs that are gone); what there was."""
    found = find(pack_dir)
    chain = pack_dir / CHAIN_DIR
    for entry in (pack_dir / PLAIN, chain / CHAIN_FILE):
        with contextlib.suppress(FileNotFoundError):
            entry.unlink()
    for extra in [*pack_dir.glob("multi-pack-index-*"), *chain.glob("*")]:
        with contextlib.suppress(FileNotFoundError):
            extra.unlink()
    with contextlib.suppress(OSError):
        chain.rmdir()
    if found.present:
        crash_point("midx-removed")
    return found


def named_packs(pack_dir: Path, fmt: ObjectFormat) -> set[str]:
    """The `.pack` names every multi-pack-index there names (plain, and each layer)."""
    out: set[str] = set()
    plain = pack_dir / PLAIN
    if plain.exists():
        out |= {n.removesuffix(".idx") + ".pack" for n in midx_format.pack_names_of(str(plain), fmt)}
    chain = pack_dir / CHAIN_DIR
    try:
        layers = (chain / CHAIN_FILE).read_text().split()
    except FileNotFoundError:
        layers = []
    for word in layers:
        names = midx_format.pack_names_of(str(chain / f"multi-pack-index-{word}.midx"), fmt)
        out |= {n.removesuffix(".idx") + ".pack" for n in names}
    return out


def names_any(pack_dir: Path, fmt: ObjectFormat, packs: Sequence[Path]) -> bool:
    """Whether a multi-pack-index there names one of `packs`; an index that cannot be read
    counts as naming them (it must go before they do)."""
    try:
        named = named_packs(pack_dir, fmt)
    except (OSError, CorruptPackError):
        return True
    return any(p.name in named for p in packs)


class IndexedPack(NamedTuple):
    """A pack a multi-pack-index may name: its `.idx` file name, its index, its mtime."""

    name: str  # pack-HASH.idx
    index: idx_format.PackIndex
    mtime: int  # seconds, as Git compares them


def indexed(pack: Path, fmt: ObjectFormat = SHA1, index: idx_format.PackIndex | None = None) -> IndexedPack:
    idx_path = pack.with_suffix(".idx")
    return IndexedPack(idx_path.name, index or idx_format.read(str(idx_path), fmt), int(pack.stat().st_mtime))


def in_directory_order(pack_dir: Path, packs: Sequence[IndexedPack]) -> list[IndexedPack]:
    """`packs` in the order Git meets them reading the pack directory (readdir), which is
    the last word between two copies of an object in packs of the same mtime."""
    rank = {name: i for i, name in enumerate(os.listdir(pack_dir))}
    return sorted(packs, key=lambda p: rank.get(p.name, len(rank)))


@dataclass
class Selection:
    """The objects of a multi-pack-index: one copy of each, sorted by id."""

    pack_names: list[str]  # in pack id order
    names: np.ndarray  # (n, rawsz) uint8
    pack_ids: np.ndarray  # uint32
    offsets: np.ndarray  # uint64
    preferred: int | None  # pack id of the preferred pack


def select(packs: Sequence[IndexedPack], preferred: str | None = None, base: np.ndarray | None = None) -> Selection:
    """Git's choice (midx-write.c, compute_sorted_entries): packs by name; of an object
    several packs hold, the copy in the preferred pack, else in the newest pack (mtime),
    else in the pack listed first (in_directory_order lists them as Git does); with `base`
    (sorted keys of the layers below a new layer of a chain), objects those layers hold are
    left to them."""
    if not packs:
        return Selection([], np.zeros((0, 20), np.uint8), np.zeros(0, np.uint32), np.zeros(0, np.uint64), None)
    order = sorted(range(len(packs)), key=lambda i: packs[i].name)
    new_id = np.empty(len(packs), dtype=np.uint32)
    new_id[order] = np.arange(len(packs), dtype=np.uint32)
    preferred_at = next((i for i, p in enumerate(packs) if _same_pack(p.name, preferred)), None)
    # The copy kept is the first in this order, which a stable sort by id keeps first.
    priority = sorted(range(len(packs)), key=lambda i: (i != preferred_at, -packs[i].mtime, i))
    # The preferred pack's objects are all named, in its (sorted) order: only the others are
    # sorted, then merged in (a repository's preferred pack is most of its objects).
    rest = priority[1:] if preferred_at is not None else priority
    names, pack_ids, offsets = _first_copies(packs, rest, new_id)
    if preferred_at is not None:
        pref = packs[preferred_at].index
        pref_keys = keys(pref.names)
        outside = lookup(pref_keys, keys(names)) < 0 if len(names) else np.zeros(0, dtype=bool)
        names, pack_ids, offsets = names[outside], pack_ids[outside], offsets[outside]
        at = np.searchsorted(pref_keys, keys(names))
        names = np.insert(pref.names, at, names, axis=0)
        pack_ids = np.insert(np.full(pref.count, new_id[preferred_at], np.uint32), at, pack_ids)
        offsets = np.insert(pref.offsets.astype(np.uint64), at, offsets)
    if base is not None and len(base) and len(names):
        mine = lookup(base, keys(names)) < 0
        names, pack_ids, offsets = names[mine], pack_ids[mine], offsets[mine]
    return Selection(
        [packs[i].name for i in order],
        names,
        pack_ids,
        offsets,
        None if preferred_at is None else int(new_id[preferred_at]),
    )


def _first_copies(
    packs: Sequence[IndexedPack], priority: list[int], new_id: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The objects of the packs `priority` lists, sorted by id, each from the first of those
    packs that holds it."""
    rawsz = packs[0].index.names.shape[1]
    if not priority:
        return np.zeros((0, rawsz), np.uint8), np.zeros(0, np.uint32), np.zeros(0, np.uint64)
    names = np.concatenate([packs[i].index.names for i in priority])
    offsets = np.concatenate([packs[i].index.offsets for i in priority]).astype(np.uint64)
    pack_ids = np.concatenate([np.full(packs[i].index.count, new_id[i], np.uint32) for i in priority])
    k = keys(names)
    by_id = id_order(k)
    k = k[by_id]
    first = np.ones(len(k), dtype=bool)
    first[1:] = k[1:] != k[:-1]
    rows = by_id[first]
    return names[rows], pack_ids[rows], offsets[rows]


def _same_pack(name: str, wanted: str | None) -> bool:
    """Git names a pack by its .pack or its .idx (cmp_idx_or_pack_name)."""
    if wanted is None:
        return False
    stem = wanted.rsplit("/", 1)[-1].removesuffix(".pack").removesuffix(".idx")
    return name.removesuffix(".idx") == stem


def pseudo_pack_order(sel: Selection, base_objects: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The pseudo-pack order of a bitmap (gitformat-pack, "multi-pack-index reverse
    indexes"): the preferred pack's objects first, then each pack's by pack id, each in pack
    order; and each pack's run of it (BTMP: first bit, count), bits counted after the
    `base_objects` of a chain's lower layers."""
    n = len(sel.names)
    pack_key = sel.pack_ids.astype(np.uint64)
    if sel.preferred is not None:
        pack_key = np.where(sel.pack_ids == sel.preferred, pack_key, pack_key | (1 << 31))
    else:
        pack_key = pack_key | (1 << 31)
    order = np.lexsort((sel.offsets, pack_key)).astype(np.uint32)
    bitmapped = np.zeros((len(sel.pack_names), 2), dtype=np.uint32)
    ids_in_order = sel.pack_ids[order]
    for pack in range(len(sel.pack_names)):
        at = np.flatnonzero(ids_in_order == pack)
        if len(at):
            bitmapped[pack] = (int(at[0]) + base_objects, len(at))
    assert len(order) == n
    return order, bitmapped


def write_plain(
    pack_dir: Path, packs: Sequence[IndexedPack], preferred: str | None, fmt: ObjectFormat, version: int = 1
) -> bytes:
    """Write `objects/pack/multi-pack-index` over `packs` (the file Git writes for
    `multi-pack-index write --stdin-packs --preferred-pack=PREFERRED`), in place of any
    index of either form; returns its checksum."""
    sel = select(in_directory_order(pack_dir, packs), preferred)
    checksum = b""

    def fill(out) -> None:
        nonlocal checksum
        checksum = midx_format.write(out, sel.pack_names, sel.names, sel.pack_ids, sel.offsets, fmt, version)

    write_atomically(pack_dir / PLAIN, fill)
    crash_point("midx-written")
    _clear_other_files(pack_dir, keep_plain=checksum.hex(), keep_layers=())
    return checksum


def _clear_other_files(pack_dir: Path, keep_plain: str | None, keep_layers: Sequence[str]) -> None:
    """What Git's clear_midx_files() removes once an index is written: the other form, and
    the bitmaps and reverse indexes of indexes that are gone."""
    chain = pack_dir / CHAIN_DIR
    if keep_plain is not None:
        with contextlib.suppress(FileNotFoundError):
            (chain / CHAIN_FILE).unlink()
    for path in pack_dir.glob("multi-pack-index-*"):
        if keep_plain is None or not path.name.startswith(f"multi-pack-index-{keep_plain}."):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    for path in chain.glob("multi-pack-index-*"):
        stem = path.name.split(".")[0].removeprefix("multi-pack-index-")
        if path.name != CHAIN_FILE and stem not in keep_layers:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    if keep_plain is not None:
        with contextlib.suppress(OSError):
            chain.rmdir()


class Layer(NamedTuple):
    checksum: str  # hex: the layer's file is multi-pack-index-CHECKSUM.midx
    midx: midx_format.MultiPackIndex


def read_plain(pack_dir: Path, fmt: ObjectFormat) -> midx_format.MultiPackIndex | None:
    path = pack_dir / PLAIN
    return midx_format.read(str(path), fmt) if path.exists() else None


def read_chain(pack_dir: Path, fmt: ObjectFormat) -> list[Layer]:
    """The layers of the incremental chain, base first (none without a chain file)."""
    chain = pack_dir / CHAIN_DIR
    try:
        text = (chain / CHAIN_FILE).read_text()
    except FileNotFoundError:
        return []
    return [read_chain_layer(pack_dir, word, fmt) for word in text.split()]


def read_chain_layer(pack_dir: Path, checksum: str, fmt: ObjectFormat) -> Layer:
    return Layer(checksum, midx_format.read(str(pack_dir / CHAIN_DIR / f"multi-pack-index-{checksum}.midx"), fmt))


def write_layer(
    pack_dir: Path,
    packs: Sequence[IndexedPack],
    preferred: str | None,
    below: Sequence[Layer],
    fmt: ObjectFormat,
    version: int = 1,
) -> str:
    """Write a layer over `packs` on top of `below` (the layers it builds on, base first:
    their objects are left to them) into the chain directory; its checksum (hex). The chain
    file is not touched (write_chain names the layers)."""
    base = sort_keys(np.concatenate([keys(layer.midx.names) for layer in below])) if below else None
    sel = select(in_directory_order(pack_dir, packs), preferred, base)
    chain = pack_dir / CHAIN_DIR
    chain.mkdir(exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix() + "midx-", dir=chain)
    try:
        with os.fdopen(fd, "wb") as out:
            checksum = midx_format.write(out, sel.pack_names, sel.names, sel.pack_ids, sel.offsets, fmt, version)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o444)
        os.replace(tmp, chain / f"multi-pack-index-{checksum.hex()}.midx")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    crash_point("midx-layer-written")
    return checksum.hex()


def write_chain(pack_dir: Path, layers: Sequence[str]) -> None:
    """Name `layers` (base first) as the chain, then remove the plain index and the layers
    no longer named."""
    chain = pack_dir / CHAIN_DIR
    text = "".join(f"{h}\n" for h in layers)
    write_atomically(chain / CHAIN_FILE, lambda f: f.write(text.encode()))
    fsync_dir(chain)
    crash_point("midx-chain-written")
    with contextlib.suppress(FileNotFoundError):
        (pack_dir / PLAIN).unlink()
    _clear_other_files(pack_dir, keep_plain=None, keep_layers=layers)


def layer_packs(layer: Layer) -> list[str]:
    """The `.pack` names of a layer's packs, in its pack order."""
    return [name.removesuffix(".idx") + ".pack" for name in layer.midx.pack_names]


def refs_snapshot(git_dir: Path, path: Path) -> None:
    """The commits a bitmap should select, as `git repack` snapshots them for
    `multi-pack-index write --refs-snapshot` (midx_snapshot_refs): pack.preferBitmapTips
    first, marked `+`, then every ref's commit (tags peeled), each once."""
    proc = gitcmd.run(
        ["for-each-ref", "--format=%(objectname) %(objecttype) %(*objectname) %(*objecttype) %(refname)"],
        git_dir=git_dir,
    )
    preferred = gitcmd.read_config(git_dir).get_all("pack.preferBitmapTips")
    seen: set[str] = set()
    lines: list[tuple[bool, str]] = []
    for line in proc.stdout.decode(errors="replace").splitlines():
        words = line.split(" ")
        if len(words) < 5:
            continue
        oid, kind, peeled, peeled_kind, ref = words[0], words[1], words[2], words[3], " ".join(words[4:])
        commit = peeled if peeled else oid
        if (peeled_kind or kind) != "commit" or commit in seen:
            continue
        seen.add(commit)
        lines.append((any(ref.startswith(p) for p in preferred), commit))
    text = "".join(f"+{c}\n" for tip, c in lines if tip) + "".join(f"{c}\n" for tip, c in lines if not tip)
    path.write_text(text)


def not_written(stderr: bytes) -> str:
    """The warning of a multi-pack-index Git could not write (the repository is valid
    without one)."""
    return f"the new packs are installed, but no multi-pack-index could be written: {gitcmd.stderr_line(stderr)}"


def write_with_git(
    git_dir: Path,
    packs: Sequence[str],
    preferred: str | None,
    bitmap: bool,
    incremental: bool = False,
) -> str | None:
    """Write a multi-pack-index of `packs` (`.pack` names) through Git, with its bitmap if
    asked (selecting the commits of the refs as they are now). None if it was written, else
    Git's line saying why not."""
    args = ["multi-pack-index", "write", "--stdin-packs", "--no-progress"]
    if bitmap:
        args.append("--bitmap")
    if incremental:
        args.append("--incremental")
    if preferred is not None:
        args.append(f"--preferred-pack={preferred}")
    with tempfile.TemporaryDirectory(prefix=temp_prefix(), dir=git_dir / "objects") as tmp:
        if bitmap:
            snapshot = Path(tmp) / "refs"
            refs_snapshot(git_dir, snapshot)
            args.append(f"--refs-snapshot={snapshot}")
        listing = "".join(name.removesuffix(".pack") + ".idx\n" for name in packs).encode()
        proc = gitcmd.run(args, git_dir=git_dir, check=False, input=listing)
    if proc.returncode != 0:
        return gitcmd.stderr_line(proc.stderr)
    crash_point("midx-written")
    return None


def write(git_dir: Path, form: Midx, bitmap: bool, warn: Callable[[str], None] | None) -> bool:
    """Write a multi-pack-index of the packs now there through Git (incremental if `form`
    was; with a bitmap if asked, also for an incremental one where Git writes those, 2.50
    and later). A failure is a warning: the repository is valid without one. True if one
    was written."""
    args = ["multi-pack-index", "write"]
    if bitmap:
        args.append("--bitmap")
    if form.incremental:
        args.append("--incremental")
    proc = gitcmd.run(args, git_dir=git_dir, check=False)
    if proc.returncode != 0 and form.incremental and bitmap:
        # A Git that writes no bitmap for an incremental index: the chain stays a chain.
        proc = gitcmd.run(["multi-pack-index", "write", "--incremental"], git_dir=git_dir, check=False)
        if proc.returncode == 0 and warn is not None:
            warn("this Git writes no bitmap for an incremental multi-pack-index (Git 2.50 does)")
    if proc.returncode != 0 and form.incremental:
        proc = gitcmd.run(args[:2], git_dir=git_dir, check=False)  # a Git before 2.47
    if proc.returncode != 0:
        if warn is not None:
            warn(not_written(proc.stderr))
        return False
    return True
