"""The broken-pack corpus: every pack here is rejected by `git index-pack` too, and packorder
must end with exit status 1, one line naming the problem and the offset, and no output file.

The corpus is generated (deterministically) rather than stored: each case is a recipe.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.gitrepo import git_env
from helpers.packbuilder import (
    BLOB,
    COMMIT,
    OFS_DELTA,
    REF_DELTA,
    PackBuilder,
    copy_op,
    insert_ops,
    make_delta,
    object_id,
    ofs_varint,
    size_varint,
    type_size,
    with_trailer,
)

import packorder
from packorder import _native
from packorder.errors import CorruptPackError
from packorder.settings import Limits

BASE = b"".join(b"line %d of a text that deltas will copy from\n" % i for i in range(60))
TARGET = BASE[:1000] + b"an inserted line\n" + BASE[1000:]


def good_pack() -> tuple[bytes, dict[str, int]]:
    b = PackBuilder()
    at = {}
    at["base"] = b.whole(BLOB, BASE)
    at["delta"] = b.ofs_delta(at["base"], make_delta(BASE, TARGET))
    at["commitless"] = b.whole(BLOB, b"small\n")
    return b.build(), at


def corrupt_zlib() -> bytes:
    data, at = good_pack()
    start = at["base"] + 3  # inside the first entry's deflate data
    buf = bytearray(data)
    for i in range(start + 4, start + 40):
        buf[i] ^= 0x5A
    return with_trailer(bytes(buf))


def with_delta(ops: bytes, base_size: int = len(BASE), result: int | None = None) -> bytes:
    b = PackBuilder()
    base = b.whole(BLOB, BASE)
    produced = result
    if produced is None:
        produced = 0
        i = 0
        while i < len(ops):
            c = ops[i]
            i += 1
            if c & 0x80:
                size = 0
                for k in range(4):
                    if c & (1 << k):
                        i += 1
                for k in range(3):
                    if c & (0x10 << k):
                        size |= ops[i] << (8 * k)
                        i += 1
                produced += size or 0x10000
            elif c:
                produced += c
                i += c
    b.ofs_delta(base, size_varint(base_size) + size_varint(produced) + ops)
    return b.build()


def ofs_entry(rel: int) -> bytes:
    b = PackBuilder()
    b.whole(BLOB, BASE)
    delta = make_delta(BASE, TARGET)
    b.raw(type_size(OFS_DELTA, len(delta)) + ofs_varint(rel) + zlib.compress(delta))
    return b.build()


def ofs_into_middle() -> bytes:
    b = PackBuilder()
    base = b.whole(BLOB, BASE)
    b.ofs_delta(base + 5, make_delta(BASE, TARGET))
    return b.build()


def missing_ref_base() -> bytes:
    b = PackBuilder()
    b.whole(BLOB, b"unrelated\n")
    b.ref_delta(object_id(BLOB, BASE), make_delta(BASE, TARGET))
    return b.build()


def ref_cycle() -> bytes:
    one, two = BASE, TARGET
    b = PackBuilder()
    b.ref_delta(object_id(BLOB, two), make_delta(two, one))
    b.ref_delta(object_id(BLOB, one), make_delta(one, two))
    return b.build()


def declared_size(delta: int) -> bytes:
    b = PackBuilder()
    b.raw(type_size(BLOB, len(BASE) + delta) + zlib.compress(BASE))
    return b.build()


def terabyte_whole() -> bytes:
    b = PackBuilder()
    b.raw(type_size(BLOB, 1 << 41) + zlib.compress(BASE))
    return b.build()


def terabyte_delta() -> bytes:
    """A consistent delta that expands 64 KiB to 1 TiB with 16 Mi one-byte copy ops."""
    base = bytes(range(256)) * 256
    b = PackBuilder()
    at = b.whole(BLOB, base)
    n = 1 << 24
    delta = size_varint(len(base)) + size_varint(n * 0x10000) + b"\x80" * n
    b.raw(type_size(OFS_DELTA, len(delta)) + ofs_varint(b.offset - at) + zlib.compress(delta, 9))
    return b.build()


def size_varint_overflow() -> bytes:
    b = PackBuilder()
    b.raw(bytes([0xBF] + [0xFF] * 10 + [0x01]) + zlib.compress(b"x"))
    return b.build()


def bad_type(kind: int) -> bytes:
    b = PackBuilder()
    b.raw(bytes([(kind << 4) | 5]) + zlib.compress(b"hello"))
    return b.build()


def count_off(by: int) -> bytes:
    data, _ = good_pack()
    buf = bytearray(data)
    count = struct.unpack(">I", buf[8:12])[0] + by
    buf[8:12] = struct.pack(">I", count)
    return with_trailer(bytes(buf))


def truncated(cut: int) -> bytes:
    data, _ = good_pack()
    return data[: len(data) - cut]


def trailer_mismatch() -> bytes:
    data, _ = good_pack()
    return data[:-1] + bytes([data[-1] ^ 1])


def junk_after_entries() -> bytes:
    data, _ = good_pack()
    return with_trailer(data[:-20] + zlib.compress(b"not counted") + b"\0" * 20)


CASES: dict[str, tuple[Callable[[], bytes], str]] = {
    "bad-magic": (lambda: b"PACX" + good_pack()[0][4:], "signature"),
    "bad-version": (lambda: with_trailer(b"PACK\0\0\0\x04" + good_pack()[0][8:]), "version 4"),
    "too-short": (lambda: b"PACK\0\0\0\x02", "too short"),
    "count-too-high": (lambda: count_off(+1), "truncated"),
    "count-too-low": (lambda: count_off(-1), "junk"),
    "junk-after-entries": (junk_after_entries, "junk"),
    "truncated-in-entry": (lambda: truncated(30), ""),
    "truncated-trailer": (lambda: truncated(7), ""),
    "trailer-mismatch": (trailer_mismatch, "checksum"),
    "corrupt-zlib": (corrupt_zlib, "zlib"),
    "size-larger-than-stream": (lambda: declared_size(+5), "fewer bytes"),
    "size-smaller-than-stream": (lambda: declared_size(-5), "more bytes"),
    "terabyte-whole-object": (terabyte_whole, "fewer bytes"),
    "terabyte-delta": (terabyte_delta, "does not fit in memory"),
    "size-varint-overflow": (size_varint_overflow, "overflows"),
    "type-0": (lambda: bad_type(0), "bad object type"),
    "type-5": (lambda: bad_type(5), "bad object type"),
    "delta-copy-out-of-range": (lambda: with_delta(copy_op(len(BASE) - 10, 20)), "copies bytes"),
    "delta-opcode-0": (lambda: with_delta(insert_ops(b"ab") + b"\x00", result=2), "opcode 0"),
    "delta-wrong-base-size": (lambda: with_delta(insert_ops(b"ab"), base_size=len(BASE) + 1), "expects a base"),
    "delta-short-result": (lambda: with_delta(insert_ops(b"ab"), result=3), "declared"),
    "delta-truncated-insert": (lambda: with_delta(b"\x10abc", result=16), "past the end"),
    "ofs-to-itself": (lambda: ofs_entry(0), "outside the pack"),
    "ofs-before-pack": (lambda: ofs_entry(10_000), "outside the pack"),
    "ofs-into-entry-middle": (ofs_into_middle, "not the start of an entry"),
    "missing-ref-base": (missing_ref_base, "unresolved delta"),
    "ref-delta-cycle": (ref_cycle, "2 unresolved deltas"),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("corpus")
    out = {}
    for name, (recipe, _) in CASES.items():
        path = root / f"{name}.pack"
        path.write_bytes(recipe())
        out[name] = path
    return out


def test_good_pack_is_good(tmp_path: Path) -> None:
    """The corpus's base pack really is valid (to Git and to us), so each case is one fault."""
    data, _ = good_pack()
    pack = tmp_path / "good.pack"
    pack.write_bytes(data)
    subprocess.run(["git", "index-pack", "-o", str(tmp_path / "g.idx"), str(pack)], check=True, capture_output=True)
    result = packorder.index_pack(pack)
    assert result.objects == 3 and result.deltas == 1
    assert pack.with_suffix(".idx").read_bytes() == (tmp_path / "g.idx").read_bytes()


@pytest.mark.parametrize("name", sorted(CASES))
def test_git_rejects_it_too(corpus: dict[str, Path], tmp_path: Path, name: str) -> None:
    proc = subprocess.run(
        ["git", "index-pack", "-o", str(tmp_path / "g.idx"), str(corpus[name])], capture_output=True, env=git_env()
    )
    assert proc.returncode != 0, f"git accepted the {name} pack"


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_fails_with_one_line_and_no_output(corpus: dict[str, Path], tmp_path: Path, name: str) -> None:
    pack = tmp_path / corpus[name].name
    pack.write_bytes(corpus[name].read_bytes())
    proc = subprocess.run(
        [sys.executable, "-m", "packorder", "index-pack", "--threads=2", str(pack)],
        capture_output=True,
        env=git_env(),
        timeout=120,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 128, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fatal: "), err
    assert "Traceback" not in err and "panicked" not in err
    assert "offset" in err, err
    assert CASES[name][1] in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [pack.name]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("threads", [1, 3])
def test_library_raises_with_offset(corpus: dict[str, Path], name: str, threads: int) -> None:
    ix = _native.PackIndexer(str(corpus[name]), Limits(threads, 1 << 20, 1 << 34), split_min_bytes=0)
    with pytest.raises(_native.PackFormatError) as info:
        ix.scan()
        ix.resolve()
        left = ix.unresolved_offsets()
        if left:
            raise _native.PackFormatError(f"pack has {len(left)} unresolved deltas", left[0])
    message, offset = info.value.args
    assert offset is not None and CASES[name][1] in message


def test_api_error_type(corpus: dict[str, Path]) -> None:
    with pytest.raises(CorruptPackError) as info:
        packorder.index_pack(corpus["corrupt-zlib"], output=corpus["corrupt-zlib"].with_suffix(".x.idx"))
    assert info.value.offset == 12 and info.value.path and "zlib" in info.value.message


def test_commit_object_type_name_in_ids() -> None:
    # Object ids hash the type name: a commit and a blob with the same bytes differ.
    assert _native.object_id(COMMIT, b"x") != _native.object_id(BLOB, b"x")
    assert _native.object_id(BLOB, b"x") == object_id(BLOB, b"x")
    assert REF_DELTA == 7
