"""Partial clones: an object the walk reaches but the repository lacks is an error, unless a
promisor pack promises it (a promisor pack's object refers to it, Git's is_promisor_object);
then it is left to the promisor remote, as Git's repack leaves it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from packorder import gitcmd
from packorder.errors import RepositoryError
from packorder.format.object_format import ObjectFormat
from packorder.format.pack import OBJ_BLOB

if TYPE_CHECKING:
    from packorder.store.repository import Repository


def check_promised(repo: Repository, missing: list[bytes]) -> None:
    """Missing objects are acceptable only in a partial clone, where promisor packs promise
    them. When every pack is a promisor pack, every missing object is promised."""
    if not repo.has_promisor_packs:
        raise RepositoryError(f"object {missing[0].hex()} is missing from the repository; nothing was changed")
    if all(p.promisor for p in repo.packs if not p.foreign) and not len(repo.loose.oids):
        return
    promised = promised_by_promisor_packs(repo, missing)
    for oid in missing:
        if oid not in promised:
            raise RepositoryError(f"object {oid.hex()} is missing and not promised; nothing was changed")


def promised_by_promisor_packs(repo: Repository, missing: list[bytes]) -> set[bytes]:
    """Which of `missing` objects in promisor packs refer to (Git's is_promisor_object: a
    commit's tree and parents, a tag's object, a tree's entries). Their blobs refer to
    nothing and are not read; the others stream through one `cat-file --batch`."""
    want = set(missing)
    found: set[bytes] = set()
    ids = [
        p.layout.oid_hex(int(i))
        for p in repo.packs
        if p.promisor
        for i in np.flatnonzero(p.layout.real_kinds() != OBJ_BLOB)
    ]
    with gitcmd.ObjectReader(repo.git_dir) as reader:
        for _, got in reader.read_many(ids):
            if got is not None:
                found.update(oid for oid in references(*got, repo.fmt) if oid in want)
    return found


def references(kind: str, body: bytes, fmt: ObjectFormat) -> Iterator[bytes]:
    """The ids (of `fmt`) an object names, as Git's is_promisor_object reads them."""
    rawsz = fmt.rawsz
    if kind == "tree":
        at = 0
        while (nul := body.find(b"\0", at)) != -1 and nul + 1 + rawsz <= len(body):
            yield body[nul + 1 : nul + 1 + rawsz]
            at = nul + 1 + rawsz
        return
    names = (b"tree", b"parent") if kind == "commit" else (b"object",) if kind == "tag" else ()
    for line in body.split(b"\n"):
        if not line:
            break  # the header ends at the first empty line
        field, _, value = line.partition(b" ")
        if field in names and len(value) == fmt.hexsz:
            with contextlib.suppress(ValueError):
                yield bytes.fromhex(value.decode())
