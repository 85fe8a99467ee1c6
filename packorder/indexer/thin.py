"""`index-pack --fix-thin`: the REF_DELTA bases a thin pack lacks, appended from the
repository as Git appends them."""

from __future__ import annotations

from pathlib import Path

from packorder import gitcmd
from packorder.errors import RepositoryError
from packorder.format.pack import TYPE_CODES

# Bases handed to the core at once: few calls, and little memory (256 KiB: 26.5-27 MiB peak on
# a libgit2 thin pack, as before; 4 MiB cost 8 MiB more, above git index-pack's 28 MiB).
THIN_BATCH_BYTES = 256 << 10


def fix_thin_from(run, git_dir: Path, level: int) -> int:
    """Append every missing REF_DELTA base the repository has to the pack `run` (index_pack's
    _Run) indexes; returns how many. The bases are read through one `git cat-file --batch`
    (pipelined), and appended and resolved in the core a batch at a time, in Git's order
    (missing_bases)."""
    wanted = run.native.missing_bases()
    if not wanted:
        return 0
    appended = 0
    batch: list[tuple[bytes, int, bytes]] = []
    size = 0

    def flush() -> None:
        nonlocal appended, batch, size
        done, bad = run.call("fix_thin", run.native.append_bases, batch, level)
        appended += done
        if bad is not None:
            raise RepositoryError(f"object {batch[bad][0].hex()} in the repository is corrupt")
        batch, size = [], 0

    with gitcmd.ObjectReader(git_dir) as reader:
        for oid_hex, found in reader.read_many([oid.hex() for oid in wanted]):
            if found is None:
                continue  # not in the repository either: left unresolved, and reported so
            kind_name, data = found
            batch.append((bytes.fromhex(oid_hex), TYPE_CODES[kind_name], data))
            size += len(data)
            if size >= THIN_BATCH_BYTES:
                flush()
    if batch:
        flush()
    return appended
