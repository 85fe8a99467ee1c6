"""What an interrupted repack left, found and dealt with by the next one, before it lists
the packs.

A repack writes a journal (`$GIT_DIR/packorder-journal`) as it installs: each new pack's
name before it is installed, then every old pack's name before the old packs are removed.
A journal still there when a repack holds the lock was left by a run that died; so:
- before any removal (no "remove" line), a listed pack without its .idx never became
  visible: its files go (every object is still in the old packs);
- during the removals, an old pack left without its .idx goes the same way once it is
  checked to be the only copy of nothing (its objects are all in the new packs).

Other leftovers are recognised by name and age: packorder's temporary files
(`.tmp-packorder-PID-...`, removed when PID is dead or after an hour), files beside a pack
that is gone (a `.rev`, `.bitmap`, `.mtimes` or `.promisor` without `.pack` or `.idx`), and
packs without an .idx older than an hour (a push renames its pack a moment before writing
its .idx). Such a pack is indexed: if it is the only copy of some object its index is put in
place (the objects stay), otherwise it goes.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packorder import gitcmd
from packorder.durable import TEMP_PREFIX, fsync_dir, write_atomically
from packorder.repacking.lock import process_alive

JOURNAL = "packorder-journal"
STALE_AFTER = 3600  # seconds: no repack's temporary, and no push's pack, waits this long
COMPANIONS = (".rev", ".bitmap", ".mtimes", ".promisor")
_TEMP_OWNER = re.compile(re.escape(TEMP_PREFIX) + r"(\d+)-")
# Temporaries of earlier versions: `.tmp-packorder-XXXX.pack`, `.tmp-pack-....idx-XXXX`.
_OLD_TEMPS = (".tmp-packorder-*", ".tmp-pack-*")


class Journal:
    """The install journal of one repack (see the module's description)."""

    def __init__(self, git_dir: Path) -> None:
        self.path = git_dir / JOURNAL
        self.lines: list[str] = [f"packorder journal 1 pid {os.getpid()}"]

    def _write(self) -> None:
        text = "\n".join(self.lines) + "\n"
        write_atomically(self.path, lambda f: f.write(text.encode()), 0o644)

    def installing(self, pack: Path) -> None:
        self.lines.append(f"install {pack.name}")
        self._write()

    def removing(self, packs: list[Path]) -> None:
        """Name the old packs about to go; until it is written (a full disk), none goes."""
        added = [f"remove {p.name}" for p in packs]
        self.lines += added
        try:
            self._write()
        except BaseException:
            del self.lines[len(self.lines) - len(added) :]
            raise

    @property
    def removal_started(self) -> bool:
        return any(line.startswith("remove ") for line in self.lines)

    def finish(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


@dataclass
class Recovered:
    """What a recovery cleaned (all counts 0: nothing was left)."""

    temporaries: int = 0
    half_installed: int = 0  # packs of a dead run that never got their .idx
    half_removed: int = 0  # old packs a dead run had begun to remove
    companions: int = 0  # .rev, .bitmap, ... of packs that are gone
    indexed: list[Path] = field(default_factory=list)  # orphans kept: the only copy of something

    def summary(self) -> str:
        parts = [
            (self.temporaries, "temporary files"),
            (self.half_installed, "half-installed packs"),
            (self.half_removed, "half-removed packs"),
            (self.companions, "files of packs that are gone"),
            (len(self.indexed), "packs without an index re-indexed (they held the only copy of objects)"),
        ]
        done = [f"{n} {what}" for n, what in parts if n]
        return "cleaned what an interrupted run left: " + ", ".join(done) if done else ""


def recover(git_dir: Path, warn: Callable[[str], None] | None = None) -> Recovered:
    """Deal with the leftovers of interrupted runs (the caller holds the lock)."""
    pack_dir = git_dir / "objects" / "pack"
    found = Recovered()
    if not pack_dir.is_dir():
        return found
    now = time.time()
    journal = git_dir / JOURNAL
    listed: dict[str, str] = {}
    with contextlib.suppress(FileNotFoundError):
        for line in journal.read_text(errors="replace").splitlines()[1:]:
            what, _, name = line.partition(" ")
            if name.endswith(".pack"):
                listed[name] = what
    found.temporaries = _remove_temporaries(pack_dir, now)
    _packs_without_index(git_dir, pack_dir, listed, now, found, warn)
    found.companions = _remove_orphan_companions(pack_dir, listed, now)
    if journal.exists():
        journal.unlink()
    if any((found.temporaries, found.half_installed, found.half_removed, found.companions, found.indexed)):
        with contextlib.suppress(OSError):
            fsync_dir(pack_dir)
        if warn is not None:
            warn(found.summary())
    return found


def _packs_without_index(
    git_dir: Path,
    pack_dir: Path,
    listed: dict[str, str],
    now: float,
    found: Recovered,
    warn: Callable[[str], None] | None,
) -> None:
    """A pack without its index: one a killed install never made visible is removed; one
    the journal names, or an old one, is kept (indexed) if it holds the only copy of an
    object, else removed."""
    removing = "remove" in listed.values()
    for pack in sorted(pack_dir.glob("pack-*.pack")):
        if pack.with_suffix(".idx").exists():
            continue
        what = listed.get(pack.name)
        if what == "install" and not removing:
            _remove_files(pack)  # never visible; the old packs hold its objects
            found.half_installed += 1
        elif what is not None or _age(pack, now) > STALE_AFTER:
            kept = _keep_if_only_copy(git_dir, pack)
            if kept is None:
                if warn is not None:
                    warn(f"{pack} has no index and cannot be indexed; left as it is")
            elif kept:
                found.indexed.append(pack)
            elif what == "remove":
                found.half_removed += 1
            else:
                found.half_installed += 1


def _remove_orphan_companions(pack_dir: Path, listed: dict[str, str], now: float) -> int:
    """Remove the files of packs that are gone (a .rev, .bitmap, .mtimes, .promisor with neither a
    .pack nor an .idx) that the journal names or that are old; how many."""
    removed = 0
    for path in sorted(p for ext in COMPANIONS for p in pack_dir.glob(f"pack-*{ext}")):
        stem = path.with_suffix("")
        if stem.with_suffix(".pack").exists() or stem.with_suffix(".idx").exists():
            continue
        if stem.with_suffix(".pack").name in listed or _age(path, now) > STALE_AFTER:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
    return removed


def _age(path: Path, now: float) -> float:
    try:
        return now - path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _remove_temporaries(pack_dir: Path, now: float) -> int:
    removed = 0
    seen: set[Path] = set()
    for pattern in _OLD_TEMPS:
        for path in pack_dir.glob(pattern):
            if path in seen:
                continue
            seen.add(path)
            owner = _TEMP_OWNER.match(path.name)
            dead = owner is not None and int(owner.group(1)) != os.getpid() and not process_alive(int(owner.group(1)))
            if dead or _age(path, now) > STALE_AFTER:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed += 1
    return removed


def _remove_files(pack: Path) -> None:
    for ext in (".idx", ".pack", *COMPANIONS):
        with contextlib.suppress(FileNotFoundError):
            pack.with_suffix(ext).unlink()


def _keep_if_only_copy(git_dir: Path, pack: Path) -> bool | None:
    """Index a pack found without its .idx; if some object of it is nowhere else, install
    the index (True); otherwise remove the pack (False). One that cannot be indexed is left
    (None): Git cannot read it either."""
    from packorder.errors import PackError
    from packorder.format import idx as idx_format
    from packorder.format.object_format import of_size
    from packorder.indexer.index_pack import index_pack

    tmp_idx = pack.with_name(f"{TEMP_PREFIX}{os.getpid()}-{pack.stem}.idx")
    try:
        indexed = index_pack(pack, output=tmp_idx, rev_index=False, repo=git_dir)
        index = idx_format.read(str(tmp_idx), of_size(len(indexed.checksum) // 2))
    except PackError:
        with contextlib.suppress(FileNotFoundError):
            tmp_idx.unlink()
        return None
    ids = "".join(index.names[i].tobytes().hex() + "\n" for i in range(index.count))
    answers = gitcmd.run(["cat-file", "--batch-check=%(objectname)"], git_dir=git_dir, input=ids.encode())
    only_copy = any(line.endswith(" missing") for line in answers.stdout.decode().splitlines())
    if only_copy:
        os.replace(tmp_idx, pack.with_suffix(".idx"))
        return True
    tmp_idx.unlink()
    _remove_files(pack)
    return False
