"""`packorder sample DIR`: a deterministic repository to try packorder on. packorder's own
repository has a pack below the 2 MiB a seek is measured against, so every share is 100% in
any order and a first run shows nothing. This one has the shape the orders are about: a few
thousand commits over a source tree some paths of which change far more often than others,
topic branches merged back, annotated release tags, renames, and a pack of about 34 MB.

The history is a `git fast-import` stream made from a seeded generator: the same arguments
give the same commits, byte for byte, on every machine (fixed names, dates and contents).
Git then packs it as `git repack -a -d` would leave a real repository."""

from __future__ import annotations

import itertools
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from packorder import gitcmd
from packorder.errors import RepositoryError, UsageError
from packorder.progress import ProgressCallback

DEFAULT_COMMITS = 6000
AUTHOR = "Sample Author <author@example.com>"
COMMITTER = "Sample Committer <committer@example.com>"
START = 1577836800  # 2020-01-01T00:00:00Z
TAG_EVERY = 250  # commits on main between releases
TOPIC_EVERY = 40  # commits on main between topic branches
RENAME_EVERY = 150
MODULES = 8
PARTS = 3
SUBDIRS = 3
FILES_PER_DIR = 5
LINE_WIDTH = 72
MAX_LINES = 300  # a file that grows past this loses a block as it gains one
BLOB_MARKS = 1 << 30  # blob marks start here, above every commit mark
ZERO_ID = "0" * 40  # `reset REF from ZERO_ID` deletes REF

# Tokens are runs of lowercase letters: text that zlib shrinks only to about 60%, like the
# source and test data of the repositories the orders were measured on.
_LETTERS = bytes(range(ord("a"), ord("z") + 1)) + b"    _"
_TO_TEXT = bytes(_LETTERS[i % len(_LETTERS)] for i in range(256))
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


@dataclass
class SampleResult:
    """The repository `packorder.sample` made: where, and how many commits, tags and
    branches and pack bytes it holds."""

    path: str
    commits: int
    tags: int
    branches: int
    pack_bytes: int


class _History:
    """The generated tree as it changes, and the fast-import commands for it. Blobs are kept
    apart, by file: fast-import deltifies each blob against the blob written just before it,
    so written file by file they delta against their own previous version, as Git's repack
    would find. Until then they wait in `spool`, a temporary file (every version of every file
    is 263 MB: held in memory they took the command to 320 MiB of RSS, spooled 71 MiB)."""

    def __init__(self, seed: int, spool: BinaryIO) -> None:
        self.rng = random.Random(seed)
        self.files: dict[str, list[bytes]] = {}
        self.clock = START
        self.mark = 0
        self.blob_mark = BLOB_MARKS
        self.spool = spool
        # file id -> where its versions' blob commands are in the spool: (offset, length)
        self.blobs: dict[int, list[tuple[int, int]]] = {}
        self.file_ids: dict[str, int] = {}
        self.touched: set[str] = set()  # the paths the last commit changed
        self.names: set[str] = set()
        for m in range(MODULES):
            for p in range(PARTS):
                for s in range(SUBDIRS):
                    for _ in range(FILES_PER_DIR):
                        self._add(f"src/mod{m:02d}/part{p}/sub{s}/{self._name()}.c", self.rng.randint(40, 160))
            self._add(f"tests/mod{m:02d}/test_main.c", self.rng.randint(40, 120))
            self._add(f"docs/mod{m:02d}.md", self.rng.randint(20, 60))
        self._add("README.md", 30)
        self.paths = sorted(self.files)
        # Some paths are hot: a commit picks a path with a weight of 1/rank (Zipf's law), as
        # changes cluster in real trees; the hottest file changes in about a third of them.
        self.rng.shuffle(self.paths)
        self.ranks = list(itertools.accumulate(1 / rank for rank in range(1, len(self.paths) + 1)))

    def _name(self) -> str:
        """A file name no other file has: Git's delta search looks for bases among files of
        the same name first, and a tree of many `unit2.c` would defeat it (`git repack -f`
        would double the pack)."""
        while True:
            name = "".join(self.rng.choice(_SYLLABLES) for _ in range(3))
            if name not in self.names:
                self.names.add(name)
                return name

    def _add(self, path: str, lines: int) -> None:
        self.files[path] = self._lines(lines)
        self.file_ids[path] = len(self.file_ids)

    def _lines(self, count: int) -> list[bytes]:
        raw = self.rng.randbytes(count * LINE_WIDTH).translate(_TO_TEXT)
        return [raw[i : i + LINE_WIDTH].strip() + b"\n" for i in range(0, len(raw), LINE_WIDTH)]

    def _pick_path(self) -> str:
        return self.rng.choices(self.paths, cum_weights=self.ranks)[0]

    def _edit(self, path: str) -> None:
        lines = self.files[path]
        at = self.rng.randrange(len(lines) + 1)
        drop = self.rng.randint(0, 12)
        lines[at : at + drop] = self._lines(self.rng.randint(8, 80))
        if len(lines) > MAX_LINES:
            cut = self.rng.randrange(len(lines) - 80)
            del lines[cut : cut + 80]

    def _rename(self) -> tuple[str, str]:
        old = self.rng.choice(sorted(self.files))
        stem, dot, ext = old.rpartition(".")
        new = f"{stem}_r{self.mark}{dot}{ext}"
        self.files[new] = self.files.pop(old)
        self.file_ids[new] = self.file_ids.pop(old)
        self.paths[self.paths.index(old)] = new
        return old, new

    def _blob(self, path: str) -> int:
        """The mark of a new blob holding `path`'s content now."""
        self.blob_mark += 1
        data = b"".join(self.files[path])
        command = b"blob\nmark :%d\ndata %d\n%s\n" % (self.blob_mark, len(data), data)
        self.blobs.setdefault(self.file_ids[path], []).append((self.spool.tell(), len(command)))
        self.spool.write(command)
        return self.blob_mark

    def _message(self, kind: str) -> bytes:
        words = self.rng.randbytes(self.rng.randint(200, 900)).translate(_TO_TEXT)
        body = b"\n".join(words[i : i + LINE_WIDTH].strip() for i in range(0, len(words), LINE_WIDTH))
        return f"{kind} {self.mark}\n\n".encode() + body + b"\n"

    def commit(self, ref: str, parents: list[int], carry: Collection[str] = (), rename: bool = False) -> bytes:
        """One commit on `ref` with `parents` (marks; the first is the previous tip): a merge
        stores `carry` (the paths its topic changed) as they are, any other commit changes a
        few paths."""
        self.mark += 1
        self.clock += self.rng.randint(600, 4 * 3600)
        out = [f"commit {ref}\nmark :{self.mark}\n".encode()]
        out.append(f"author {AUTHOR} {self.clock} +0000\ncommitter {COMMITTER} {self.clock} +0000\n".encode())
        message = self._message("merge" if len(parents) > 1 else "change")
        out.append(b"data %d\n%s" % (len(message), message))
        if parents:
            out.append(f"from :{parents[0]}\n".encode())
        for parent in parents[1:]:
            out.append(f"merge :{parent}\n".encode())
        changed = {path for path in carry if path in self.files}
        if rename:
            old, new = self._rename()
            out.append(f'R "{old}" "{new}"\n'.encode())
        for _ in range(0 if len(parents) > 1 else self.rng.randint(1, 4)):
            path = self._pick_path()
            self._edit(path)
            changed.add(path)
        for path in sorted(changed):
            out.append(b'M 100644 :%d "%s"\n' % (self._blob(path), path.encode()))
        self.touched = changed
        return b"".join(out)

    def tag(self, name: str, mark: int) -> bytes:
        header = f"tag {name}\nfrom :{mark}\ntagger {COMMITTER} {self.clock} +0000\n".encode()
        message = f"Release {name}\n".encode()
        return header + b"data %d\n%s" % (len(message), message)


def _stream(commits: int, seed: int, spool_dir: Path, progress: ProgressCallback | None) -> Iterator[bytes]:
    """The whole history as fast-import commands: `commits` commits on main, topic branches
    of a few commits merged back (the last few left open), a tag every TAG_EVERY; the blobs
    first, file by file, then the commits that name them."""
    with tempfile.TemporaryFile(dir=spool_dir) as spool:
        yield from _commands(_History(seed, spool), commits, progress)


def _commands(history: _History, commits: int, progress: ProgressCallback | None) -> Iterator[bytes]:
    history.mark += 1
    first = [f"commit refs/heads/main\nmark :{history.mark}\n".encode()]
    first.append(f"author {AUTHOR} {START} +0000\ncommitter {COMMITTER} {START} +0000\n".encode())
    first.append(b"data 15\nInitial import\n")
    for path in sorted(history.files):
        first.append(b'M 100644 :%d "%s"\n' % (history._blob(path), path.encode()))
    out = [b"".join(first)]
    tip, made, tags, topics = history.mark, 1, 0, 0
    while made < commits:
        if made % TOPIC_EVERY == 0 and commits - made > 10:
            topics += 1
            ref = f"refs/heads/topic-{topics}"
            merged = commits - made > 3 * TOPIC_EVERY  # the last topics stay open, as in review
            before = {path: list(lines) for path, lines in history.files.items()}
            topic, changed = tip, set()
            for _ in range(history.rng.randint(2, 6)):
                out.append(history.commit(ref, [topic]))
                topic = history.mark
                changed |= history.touched
                made += 1
            if merged:
                out.append(history.commit("refs/heads/main", [tip, topic], carry=changed))
                tip = history.mark
                made += 1
                out.append(f"reset {ref}\nfrom {ZERO_ID}\n".encode())
            else:
                history.files = before
            continue
        out.append(history.commit("refs/heads/main", [tip], rename=made % RENAME_EVERY == 0))
        tip = history.mark
        made += 1
        if made % TAG_EVERY == 0:
            tags += 1
            out.append(history.tag(f"v1.{tags}", tip))
        if progress is not None:
            progress("Generating commits", made, commits)
    if progress is not None:
        progress("Generating commits", commits, commits)
    for file_id in sorted(history.blobs):
        for offset, length in history.blobs[file_id]:
            history.spool.seek(offset)
            yield history.spool.read(length)
    yield from out


def _import(git_dir: Path, stream: Iterator[bytes]) -> None:
    with tempfile.TemporaryFile() as err:
        importer = subprocess.Popen(
            [gitcmd.GIT, "--git-dir", str(git_dir), "fast-import", "--quiet", "--done", "--depth=50"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=gitcmd.git_env(),
        )
        assert importer.stdin is not None
        try:
            with importer.stdin:
                for chunk in stream:
                    importer.stdin.write(chunk)
                importer.stdin.write(b"done\n")
        except BrokenPipeError:
            pass  # fast-import stopped: its message says why
        finally:
            importer.wait()
        if importer.returncode != 0:
            err.seek(0)
            raise RepositoryError(f"git fast-import failed: {err.read().decode(errors='replace').strip()}")


def sample(
    path: str | os.PathLike[str],
    *,
    commits: int = DEFAULT_COMMITS,
    seed: int = 1,
    progress: ProgressCallback | None = None,
) -> SampleResult:
    """Create a bare repository at `path` (which must not exist, or be an empty directory)
    with `commits` generated commits, branches and tags, packed into one pack. It is built
    beside `path` and renamed into place, so a failure leaves nothing."""
    if commits < 2:
        raise UsageError("{commits} must be at least 2", params=("commits",))
    return import_stream(path, lambda work: _stream(commits, seed, work, progress), commits, progress)


def import_stream(
    path: str | os.PathLike[str],
    make_stream: Callable[[Path], Iterator[bytes]],
    commits: int,
    progress: ProgressCallback | None = None,
) -> SampleResult:
    """A bare repository at `path` (which must not exist, or be an empty directory) holding
    what the fast-import stream `make_stream(work)` makes (`work`: the repository being
    built, for the stream's own spool files), packed into one pack by Git. Built beside
    `path` and renamed into place, so a failure leaves nothing."""
    target = Path(path)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        # As `git clone` refuses its destination.
        raise RepositoryError(f"destination path '{target}' already exists and is not an empty directory")
    parent = target.resolve().parent
    if not parent.is_dir():
        raise RepositoryError(f"{parent} is not a directory")
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.sample-", dir=parent))
    try:
        gitcmd.run(["init", "-q", "--bare", "--initial-branch=main", str(work)])
        _import(work, make_stream(work))
        tags = len(gitcmd.run(["tag"], work).stdout.split())
        branches = len(gitcmd.run(["branch"], work).stdout.splitlines())
        # fast-import writes objects as they come; Git's repack puts them in its order.
        if progress is not None:
            progress("Packing with git repack", 0, 1)
        gitcmd.run(["repack", "-a", "-d", "-q"], work)
        if progress is not None:
            progress("Packing with git repack", 1, 1)
        gitcmd.run(["symbolic-ref", "HEAD", "refs/heads/main"], work)
        pack_bytes = sum(p.stat().st_size for p in (work / "objects" / "pack").glob("*.pack"))
        if target.exists():
            target.rmdir()
        os.rename(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return SampleResult(path=str(target), commits=commits, tags=tags, branches=branches, pack_bytes=pack_bytes)
