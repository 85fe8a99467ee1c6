"""Partial clones: an object the walk reaches but the repository lacks is an error, unless a
promisor pack promises it (a promisor pack's object refers to it, Git's is_promisor_object);
then it is left to the promisor remote, as Git's repack leaves it."""

from __future__ import annotations

import re
import subprocess
from typing import TYPE_CHECKING

from packorder import gitcmd
from packorder.errors import RepositoryError

if TYPE_CHECKING:
    from packorder.repo import Repository


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
    """Which of `missing` objects in promisor packs refer to (Git's is_promisor_object)."""
    want = set(missing)
    found: set[bytes] = set()
    ids = [p.layout.oid_hex(i) for p in repo.packs if p.promisor for i in range(p.layout.count)]
    proc = subprocess.run(
        [gitcmd.GIT, "--git-dir", str(repo.git_dir), "cat-file", "--batch"],
        input="\n".join(ids).encode() + b"\n",
        capture_output=True,
        env=gitcmd.git_env(),
    )
    data = proc.stdout
    at = 0
    while at < len(data):
        nl = data.index(b"\n", at)
        head = data[at:nl].split()
        at = nl + 1
        if len(head) < 3:
            continue
        size = int(head[2])
        body = data[at : at + size]
        at += size + 1
        for hexid in re.findall(rb"[0-9a-f]{40}", body) if head[1] != b"tree" else []:
            oid = bytes.fromhex(hexid.decode())
            if oid in want:
                found.add(oid)
        if head[1] == b"tree":
            i = 0
            while i < len(body):
                nul = body.index(b"\0", i)
                oid = body[nul + 1 : nul + 21]
                if oid in want:
                    found.add(oid)
                i = nul + 21
    return found
