"""The study's finding, measured: the same objects in Git's recency order seek less than in plain
rev-list order, for packing recent history and for index-pack.

The recency pack is `git repack -adf`'s. The rev-list pack is built here from the same entries
(the same compressed bytes, the same delta bases) written in `git rev-list --objects --all`
order: a delta whose base comes later refers to it by id (REF_DELTA), otherwise by offset.
Only the order differs, so only the order can make the difference. (A rev-list pack of whole
objects would not do: `git index-pack` reads nothing in its second pass when there is no delta.)
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers.gitrepo import Repo, git
from helpers.packbuilder import OFS_DELTA, REF_DELTA, PackBuilder, ofs_varint, type_size

from packorder.format import layout as layout_mod
from packorder.seek import seekstats

WORDS = ["alpha", "beta", "gamma", "delta", "pack", "tree", "blob", "commit", "seek", "order", "index", "cache"]


def fast_import_history(path: Path, commits: int = 420, files: int = 60, tag_every: int = 25, seed: int = 11) -> Repo:
    """A history of source files edited a few lines at a time (long delta families), one new
    incompressible data file per commit (tens of KiB each, so the pack spans ~20 MiB), and an
    annotated tag every `tag_every` commits, the last one 20 commits before HEAD."""
    rng = random.Random(seed)
    repo = Repo(path)

    def line() -> str:
        return " ".join(rng.choice(WORDS) + str(rng.randrange(100)) for _ in range(8))

    def data(body: bytes) -> bytes:
        return b"data %d\n%s\n" % (len(body), body)

    sources = {f"src/mod{i % 6}/file{i}.c": [line() for _ in range(rng.randint(100, 250))] for i in range(files)}
    stream = []
    when = 1_700_000_000
    for c in range(commits):
        when += 3600
        stream += [b"commit refs/heads/main\n", b"committer Cy Committer <cy@example.com> %d +0000\n" % when]
        stream.append(data(b"change %d" % c))
        changed = list(sources) if c == 0 else rng.sample(sorted(sources), rng.randint(1, 4))
        for name in changed[: len(sources) if c == 0 else 4]:
            body = sources[name]
            if c:
                for _ in range(rng.randint(1, 6)):
                    body[rng.randrange(len(body))] = line()
                if rng.random() < 0.3:
                    body.insert(rng.randrange(len(body)), line())
                if rng.random() < 0.3:
                    del body[rng.randrange(len(body))]
            stream += [f"M 100644 inline {name}\n".encode(), data(("\n".join(body) + "\n").encode())]
        stream += [f"M 100644 inline data/bin{c % 50}.bin\n".encode(), data(rng.randbytes(rng.randint(24_000, 56_000)))]
        stream.append(b"\n")
        if c % tag_every == tag_every - 1:
            stream.append(f"tag v{c // tag_every}\nfrom refs/heads/main\n".encode())
            stream += [b"tagger Cy Committer <cy@example.com> %d +0000\n" % when, data(b"release %d" % c)]
    repo.run("fast-import", "--quiet", input=b"".join(stream))
    return repo


def payload(raw: bytes, kind: int) -> bytes:
    """The zlib stream of a raw pack entry: after the type/size header and any delta base."""
    i = 0
    while raw[i] & 0x80:
        i += 1
    i += 1
    if kind == OFS_DELTA:
        while raw[i] & 0x80:
            i += 1
        i += 1
    elif kind == REF_DELTA:
        i += 20
    return raw[i:]


def rev_list_pack(repo: Repo, pack: Path, out: Path) -> None:
    """The entries of `pack`, rewritten in `git rev-list --objects --all` order, into `out`."""
    layout = layout_mod.load(pack)
    data = pack.read_bytes()
    position = {layout.oid_hex(i): i for i in range(layout.count)}
    order = [line.split()[0].decode() for line in repo.run("rev-list", "--objects", "--all").splitlines()]
    assert sorted(order) == sorted(position)
    builder = PackBuilder()
    written: dict[str, int] = {}
    for oid in order:
        i = position[oid]
        raw = data[int(layout.offsets[i]) : int(layout.ends[i])]
        kind = int(layout.kinds[i])
        if kind in (OFS_DELTA, REF_DELTA):
            base = layout.oid_hex(int(layout.base[i]))
            size = int(layout.sizes[i])
            if base in written:
                at = builder.offset
                written[oid] = builder.raw(
                    type_size(OFS_DELTA, size) + ofs_varint(at - written[base]) + payload(raw, kind)
                )
            else:
                written[oid] = builder.raw(type_size(REF_DELTA, size) + bytes.fromhex(base) + payload(raw, kind))
        else:
            written[oid] = builder.raw(raw)
    tmp = out / "tmp.pack"
    tmp.write_bytes(builder.build())
    name = git(None, "index-pack", str(tmp)).decode().strip()
    for suffix in (".pack", ".idx", ".rev"):
        if tmp.with_suffix(suffix).exists():
            tmp.with_suffix(suffix).rename(out / f"pack-{name}{suffix}")


@pytest.fixture(scope="module")
def orders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Repo]:
    recency = fast_import_history(tmp_path_factory.mktemp("recency") / "repo")
    recency.run("config", "pack.threads", "1")  # index-pack and pack-objects: one thread, one order
    recency.run("repack", "-adf", "-q")
    revlist_path = tmp_path_factory.mktemp("revlist") / "repo"
    shutil.copytree(recency.path, revlist_path)
    pack_dir = revlist_path / ".git" / "objects" / "pack"
    for f in pack_dir.iterdir():
        f.unlink()
    (pack,) = recency.pack_files()
    rev_list_pack(recency, pack, pack_dir)
    revlist = Repo.__new__(Repo)
    revlist.path, revlist.clock = revlist_path, recency.clock
    return {"recency": recency, "rev-list": revlist}


def test_the_two_packs_hold_the_same_objects_in_the_two_orders(orders: dict[str, Repo]) -> None:
    recency, revlist = (layout_mod.load(orders[k].pack_files()[0]) for k in ("recency", "rev-list"))
    assert recency.count == revlist.count > 2000
    assert recency.pack_path.stat().st_size > 10 << 20  # 2 MiB is a short seek here, not the whole pack
    oids = [revlist.oid_hex(i) for i in range(revlist.count)]
    assert oids == [
        line.split()[0].decode() for line in orders["recency"].run("rev-list", "--objects", "--all").splitlines()
    ]
    assert sorted(oids) == sorted(recency.oid_hex(i) for i in range(recency.count))
    assert np.count_nonzero(revlist.is_delta) == np.count_nonzero(recency.is_delta) > 1000
    git(orders["rev-list"].path, "fsck", "--no-dangling")


def shares(orders: dict[str, Repo], workload: str, view: str) -> dict[str, float]:
    out = {}
    for name, repo in orders.items():
        stats = seekstats(repo.path, workload).view(view)
        assert stats is not None and stats.below_threshold is not None
        assert stats.accesses > 100
        out[name] = stats.below_threshold
    return out


def test_recency_order_seeks_less_when_packing_recent_history(orders: dict[str, Repo]) -> None:
    # Counting the delta bases Git reads (expanded): the recent objects that are deltas of
    # older ones must be rebuilt from their chains, which rev-list order scatters.
    got = shares(orders, "pack-recent", "expanded")
    assert got["recency"] > got["rev-list"], got


def test_recency_order_seeks_less_in_index_pack(orders: dict[str, Repo]) -> None:
    got = shares(orders, "index-pack", "raw")
    assert got["recency"] > got["rev-list"], got
