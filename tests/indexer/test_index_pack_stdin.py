"""`index-pack --stdin` against `git index-pack --stdin` on the same input: where the reading
stops, the bytes past the pack echoed to stdout, junk after a pack in a regular file, and the
"Receiving objects" line with its byte count. The inputs are sized by the buffer the Git in
use reads through (4096 bytes before Git 2.55, 128 KiB since), so that they cross its reads.

Inputs come through a pipe filled before the indexer starts, so that every read gets what it
asks for, for Git and for us alike (a pipe filled while it is read answers each read with
what has arrived by then, and how far a reader gets depends on timing); or from a regular
file."""

from __future__ import annotations

import fcntl
import io
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers.commands import bare_repo
from helpers.gitrepo import git_env
from helpers.packbuilder import BLOB, REF_DELTA, PackBuilder, make_delta, object_id, type_size

import packorder
from packorder.indexer.receive import git_input_buffer

BUFFER = git_input_buffer()


def run(cmd: list[str], data: bytes, as_file: bool = False) -> tuple[subprocess.CompletedProcess, bytes]:
    """Run `cmd` with `data` on its stdin; returns the process and what it left unread."""
    env = {**git_env(), "GIT_PROGRESS_DELAY": "0"}
    if as_file:
        with tempfile.TemporaryFile() as f:
            f.write(data)
            f.seek(0)
            return subprocess.run(cmd, stdin=f, capture_output=True, env=env), b""
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 1 << 20)
        assert len(data) <= fcntl.fcntl(w, fcntl.F_GETPIPE_SZ)
        os.write(w, data)
        os.close(w)
        proc = subprocess.run(cmd, stdin=r, capture_output=True, env=env)
        left = b""
        while chunk := os.read(r, 1 << 16):
            left += chunk
    finally:
        os.close(r)
    return proc, left


Outcome = tuple[int, bytes, bytes, bytes, list[tuple[str, bytes]]]


def both(tmp_path: Path, data: bytes, *args: str, as_file: bool = False) -> dict[str, Outcome]:
    """Git's index-pack and ours on `data`, each in a bare repository of its own: exit status,
    stdout, what was left unread, stderr, and the files of objects/pack (but a tmp_pack_ file,
    which Git leaves behind when it dies and we do not)."""
    commands = {
        "git": lambda repo: ["git", "-C", str(repo), "-c", "pack.writeReverseIndex=true", "index-pack"],
        "ours": lambda repo: [sys.executable, "-m", "packorder", "index-pack", "--repo", str(repo)],
    }
    out = {}
    for who, command in commands.items():
        repo = bare_repo(tmp_path / f"{who}.git")
        proc, left = run([*command(repo), "--stdin", *args], data, as_file)
        pack_dir = repo / "objects" / "pack"
        files = sorted((p.name, p.read_bytes()) for p in pack_dir.iterdir() if not p.name.startswith("tmp_pack_"))
        out[who] = (proc.returncode, proc.stdout, left, proc.stderr, files)
    return out


def trailing(n: int) -> bytes:
    return bytes(range(256)) * (n // 256) + b"t" * (n % 256)


def ref_id_across_the_first_read() -> bytes:
    """A pack whose REF_DELTA's base id starts 5 bytes before the end of Git's first read (a
    buffer's length): Git keeps those 5 and asks for the buffer's length less 5, which moves
    where every later read ends."""
    base = bytes((i * 7919) % 251 for i in range(3000))
    target = base[:1000] + b"inserted\n" + base[1000:]
    delta = make_delta(base, target)
    noise = random.Random(21).randbytes(BUFFER)  # stored (level 0): one more byte, one further

    def base_id_at(n: int) -> tuple[int, bytes]:
        b = PackBuilder()
        b.whole(BLOB, noise[:n], level=0)
        b.whole(BLOB, base)
        at = b.ref_delta(object_id(BLOB, base), delta)
        return at + len(type_size(REF_DELTA, len(delta))), b.build()

    n = BUFFER - 3000
    for _ in range(8):  # the filler's length that puts the id there, less its blocks' headers
        n += BUFFER - 5 - base_id_at(n)[0]
    for filler in range(n - 16, n + 16):
        at, pack = base_id_at(filler)
        if at == BUFFER - 5:
            return pack
    raise AssertionError("no filler puts the base id there")


@pytest.fixture(scope="module")
def inputs(packs: dict[str, Path]) -> dict[str, bytes]:
    return {
        "ofs": packs["ofs"].read_bytes(),
        "ref": packs["ref"].read_bytes(),
        "nodelta": packs["nodelta"].read_bytes(),
        "ref-id-across-a-read": ref_id_across_the_first_read(),
    }


@pytest.mark.parametrize("shape", ["ofs", "ref", "nodelta", "ref-id-across-a-read"])
@pytest.mark.parametrize("after", [b"trailing data", trailing(BUFFER + 5_904)], ids=["short", "long"])
@pytest.mark.parametrize("header", [False, True])
def test_bytes_past_the_pack_are_echoed_and_the_rest_left_unread_as_by_git(
    inputs: dict[str, bytes], tmp_path: Path, shape: str, after: bytes, header: bool
) -> None:
    """Git reads through its buffer, stops at the trailer, echoes what it had read past it
    after the pack's line, and leaves the rest in the pipe. With --pack_header (the caller
    read the header) the reads start 12 bytes later."""
    pack = inputs[shape]
    (count,) = struct.unpack(">I", pack[8:12])
    args = [f"--pack_header=2,{count}"] if header else []
    got = both(tmp_path, (pack[12:] if header else pack) + after, *args)
    assert got["ours"] == got["git"]
    status, stdout, left, stderr, files = got["git"]
    assert status == 0 and stderr == b"" and [n.rsplit(".")[-1] for n, _ in files] == ["idx", "pack", "rev"]
    echoed = stdout.split(b"\n", 1)[1]
    assert echoed + left == after and echoed
    if len(after) > BUFFER:
        assert left, "Git stops reading at the end of the buffer holding the trailer"


def test_the_library_gives_what_was_read_past_the_pack(inputs: dict[str, bytes], tmp_path: Path) -> None:
    pack = inputs["ref-id-across-a-read"]
    after = trailing(BUFFER + 4904)
    stream = io.BytesIO(pack + after)
    result = packorder.index_pack(stdin=stream, repo=bare_repo(tmp_path / "r.git"))
    git = both(tmp_path / "git", pack + after)["git"]
    assert result.past_end == git[1].split(b"\n", 1)[1]
    assert stream.tell() == len(pack) + len(result.past_end) < len(pack + after)


@pytest.mark.parametrize("shape", ["ofs", "ref-id-across-a-read"])
def test_junk_after_a_pack_in_a_regular_file_dies_as_in_git(
    inputs: dict[str, bytes], tmp_path: Path, shape: str
) -> None:
    pack = inputs[shape]
    got = both(tmp_path / "junk", pack + b"junk", as_file=True)
    assert got["ours"] == got["git"]
    assert got["git"][0] == 128 and got["git"][3] == b"fatal: pack has junk at the end\n"
    assert got["git"][4] == []  # no pack installed (Git's tmp_pack_ aside; ours leaves none)
    assert [p.name for p in (tmp_path / "junk" / "ours.git" / "objects" / "pack").iterdir()] == []
    got = both(tmp_path / "fine", pack, as_file=True)
    assert got["ours"] == got["git"] and got["git"][0] == 0


def test_a_pack_cut_short_is_an_early_eof_as_in_git(inputs: dict[str, bytes], tmp_path: Path) -> None:
    pack = inputs["ofs"]
    got = both(tmp_path, pack[: len(pack) // 2])
    assert got["ours"][:4] == got["git"][:4] == (128, b"", b"", b"fatal: early EOF\n")
    assert got["ours"][4] == []


def test_a_header_claiming_four_billion_objects_is_an_early_eof(tmp_path: Path) -> None:
    """The entry table is sized from the header of a pack on a pipe, as far as a header can be
    believed before its entries arrive: one claiming 2^32 - 1 objects with one behind it ends
    as a pack cut short, not in an allocation of hundreds of gigabytes."""
    pb = PackBuilder()
    pb.whole(BLOB, b"one blob\n")
    data = pb.build(count=0xFFFFFFFF, trailer=False)
    repo = bare_repo(tmp_path / "ours.git")
    proc, left = run([sys.executable, "-m", "packorder", "index-pack", "--repo", str(repo), "--stdin"], data)
    assert (proc.returncode, proc.stdout, left, proc.stderr) == (128, b"", b"", b"fatal: early EOF\n")
    assert list((repo / "objects" / "pack").iterdir()) == []


# The rate: its figure, and the spaces Git writes over a longer line before when it shrinks.
RATE = re.compile(r"\| \d+(\.\d\d)? (bytes?|KiB|MiB|GiB)/s *")


def final_line(stderr: bytes, title: str = "Receiving objects") -> str:
    lines = stderr.decode().replace("\r", "\n").splitlines()
    (done,) = [line for line in lines if line.startswith(title) and line.endswith(", done.")]
    return done


@pytest.mark.parametrize("shape", ["ofs", "nodelta", "ref-id-across-a-read"])
@pytest.mark.parametrize("how", ["pipe", "pipe, header given", "file"])
def test_receiving_objects_shows_the_bytes_read_as_git_does(
    inputs: dict[str, bytes], tmp_path: Path, shape: str, how: str
) -> None:
    """`Receiving objects: 100% (N/N), 1.20 MiB | 2.40 MiB/s, done.`: the bytes Git had read
    when its last entry was parsed, in Git's units; the same line but for the rate (timing).
    Git shows them once it has read among the entries: always when given the header, else
    when its first read did not hold the whole input."""
    pack = inputs[shape] + b"past the pack"
    (count,) = struct.unpack(">I", pack[8:12])
    header = how.endswith("given")
    args = ["-v", *([f"--pack_header=2,{count}"] if header else [])]
    as_file = how == "file"
    if as_file:
        pack = inputs[shape]
    got = both(tmp_path, pack[12:] if header else pack, *args, as_file=as_file)
    lines = {who: final_line(outcome[3]) for who, outcome in got.items()}
    assert RATE.sub("| RATE", lines["ours"]) == RATE.sub("| RATE", lines["git"])
    fed = pack[12:] if header else pack
    assert bool(RATE.search(lines["git"])) == (header or len(fed) > BUFFER), lines["git"]
    assert got["ours"][:3] == got["git"][:3]
    resolving = {who: "Resolving deltas" in outcome[3].decode() for who, outcome in got.items()}
    assert resolving["ours"] == resolving["git"] == (shape != "nodelta")


def test_a_pack_read_in_one_go_shows_no_bytes_as_in_git(tmp_path: Path) -> None:
    """Git counts the bytes read once it has the header: a pack its first read holds whole
    shows none."""
    b = PackBuilder()
    b.whole(BLOB, b"small\n")
    got = both(tmp_path, b.build(), "-v")
    lines = {who: final_line(outcome[3]) for who, outcome in got.items()}
    assert lines["ours"] == lines["git"] == "Receiving objects: 100% (1/1), done."


def test_a_closed_standard_input_is_an_early_eof_as_in_git(tmp_path: Path) -> None:
    repo = bare_repo(tmp_path / "r.git")
    got = {}
    for who, cmd in (("git", ["git", "-C", str(repo)]), ("ours", [sys.executable, "-m", "packorder"])):
        extra = [] if who == "git" else ["--repo", str(repo)]
        proc = subprocess.run(
            [*cmd, "index-pack", "--stdin", *extra],
            capture_output=True,
            env=git_env(),
            preexec_fn=lambda: os.close(0),
        )
        got[who] = (proc.returncode, proc.stdout, proc.stderr)
    assert got["ours"] == got["git"] == (128, b"", b"fatal: early EOF\n")
