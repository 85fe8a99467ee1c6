"""Deterministic repositories built with the `git` command, for tests.

Every commit has a fixed author, committer and date, so object ids are the same on every run.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

GIT = os.environ.get("PACKORDER_GIT", "git")


def git_env(when: int = 1_700_000_000) -> dict[str, str]:
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("GIT_") and k not in ("GIT_EXEC_PATH",):
            del env[k]
    env.update(
        GIT_AUTHOR_NAME="Ada Author",
        GIT_AUTHOR_EMAIL="ada@example.com",
        GIT_COMMITTER_NAME="Cy Committer",
        GIT_COMMITTER_EMAIL="cy@example.com",
        GIT_AUTHOR_DATE=f"{when} +0000",
        GIT_COMMITTER_DATE=f"{when} +0000",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        LC_ALL="C",
    )
    return env


def git(
    repo: Path | None,
    *args: str,
    input: bytes | None = None,
    when: int = 1_700_000_000,
    check: bool = True,
    env_extra: dict[str, str] | None = None,
) -> bytes:
    cmd = [GIT] + (["-C", str(repo)] if repo is not None else []) + list(args)
    proc = subprocess.run(cmd, input=input, capture_output=True, env={**git_env(when), **(env_extra or {})})
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout


def all_ids(git_dir: Path) -> set[str]:
    """Every object id the repository has (packed, loose, in alternates), as Git lists them."""
    out = git(None, "--git-dir", str(git_dir), "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return set(out.decode().split())


def git_version() -> tuple[int, ...]:
    """The version of the git the tests run, as numbers: (2, 47, 3)."""
    out = git(None, "--version").decode().split()[2]
    return tuple(int(part) for part in out.split(".")[:3] if part.isdigit())


class Repo:
    """A work tree repository grown commit by commit, with a fixed clock."""

    def __init__(self, path: Path, bare: bool = False, object_format: str = "sha1", ref_format: str = "files") -> None:
        self.path = path
        self.clock = 1_700_000_000
        path.mkdir(parents=True, exist_ok=True)
        # Named only when not the default: Git 2.39 has no --ref-format.
        formats = [f"--object-format={object_format}"] * (object_format != "sha1")
        formats += [f"--ref-format={ref_format}"] * (ref_format != "files")
        git(path, "init", "-q", "-b", "main", *formats, *(["--bare"] if bare else []))
        git(path, "config", "gc.auto", "0")
        git(path, "config", "core.autocrlf", "false")

    @property
    def git_dir(self) -> Path:
        return self.path / ".git" if (self.path / ".git").is_dir() else self.path

    def run(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        return git(self.path, *args, input=input, when=self.clock, check=check)

    def write(self, name: str, data: bytes | str) -> None:
        p = self.path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode() if isinstance(data, str) else data)

    def commit(self, message: str) -> str:
        self.clock += 3600
        self.run("add", "-A")
        self.run("commit", "-q", "--allow-empty", "-m", message)
        return self.run("rev-parse", "HEAD").decode().strip()

    def commit_on_branch(self, branch: str, files: dict[str, str], message: str) -> str:
        """A commit of `files` on a new branch from HEAD, then back to main."""
        self.run("checkout", "-q", "-b", branch)
        for name, text in files.items():
            self.write(name, text)
        made = self.commit(message)
        self.run("checkout", "-q", "main")
        return made

    def tag(self, name: str, annotated: bool = True) -> None:
        self.clock += 60
        if annotated:
            self.run("tag", "-a", name, "-m", f"release {name}")
        else:
            self.run("tag", name)

    def pack_files(self) -> list[Path]:
        return sorted((self.git_dir / "objects" / "pack").glob("*.pack"))


def text_lines(rng: random.Random, n: int, width: int = 60) -> list[str]:
    words = ["alpha", "beta", "gamma", "delta", "pack", "tree", "blob", "commit", "seek", "order", "index"]
    return [" ".join(rng.choice(words) for _ in range(width // 6)) for _ in range(n)]


def build_history(path: Path, commits: int = 40, seed: int = 7, big_blob: int = 0, object_format: str = "sha1") -> Repo:
    """A repository with branches, merges, annotated and lightweight tags, renames, binary
    files, and files edited a little at each commit (so repacks make deep delta chains), its
    objects named by `object_format`."""
    rng = random.Random(seed)
    repo = Repo(path, object_format=object_format)
    lines = {f"src/file{i}.c": text_lines(rng, 80) for i in range(6)}
    for name, body in lines.items():
        repo.write(name, "\n".join(body) + "\n")
    repo.write("README", "hello\n")
    repo.write("data/blob.bin", bytes(rng.getrandbits(8) for _ in range(3000)))
    repo.commit("initial")
    for c in range(1, commits):
        name = rng.choice(sorted(lines))
        body = lines[name]
        for _ in range(rng.randint(1, 4)):
            body[rng.randrange(len(body))] = " ".join(text_lines(rng, 1)[0].split()[::-1])
        if rng.random() < 0.3:
            body.append(text_lines(rng, 1)[0])
        repo.write(name, "\n".join(body) + "\n")
        if c % 7 == 0:
            blob = bytearray((repo.path / "data/blob.bin").read_bytes())
            blob[rng.randrange(len(blob))] ^= 0xFF
            repo.write("data/blob.bin", bytes(blob))
        if c == commits // 2:
            old = sorted(lines)[0]
            new = old.replace("file", "renamed")
            repo.run("mv", old, new)
            lines[new] = lines.pop(old)
        repo.commit(f"change {c}")
        if c % 10 == 0:
            repo.tag(f"v{c // 10}.0")
        if c % 13 == 0:
            repo.tag(f"light{c}", annotated=False)
        if c % 11 == 0:
            repo.run("checkout", "-q", "-b", f"topic{c}")
            repo.write(f"topic/{c}.txt", "\n".join(text_lines(rng, 20)) + "\n")
            repo.commit(f"topic {c}")
            repo.run("checkout", "-q", "main")
            repo.clock += 60
            repo.run("merge", "-q", "--no-ff", "-m", f"merge topic{c}", f"topic{c}")
    if big_blob:
        repo.write("big/large.bin", rng.randbytes(big_blob))
        repo.commit("large blob")
        data = bytearray((repo.path / "big/large.bin").read_bytes())
        for _ in range(3):
            data[rng.randrange(len(data))] ^= 1
            repo.write("big/large.bin", bytes(data))
            repo.commit("large blob edit")
    return repo


def wide_directory(path: Path, files: int, changes: int, add: bool = False) -> Repo:
    """A directory of `files` files (many/), then `changes` commits each changing one of them
    (and, with `add`, adding a file): each new version of the directory's tree repeats most
    of the last one's entries."""
    repo = Repo(path)
    for i in range(files):
        repo.write(f"many/f{i:03}.txt", f"file {i}\n")
    repo.commit("many files")
    for c in range(changes):
        repo.write(f"many/f{(c * 37) % files:03}.txt", f"file changed at {c}\n")
        if add:
            repo.write(f"many/new{c}.txt", f"new {c}\n")
        repo.commit(f"change {c}")
    return repo
