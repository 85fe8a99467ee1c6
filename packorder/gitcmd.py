"""Running Git: repository discovery, configuration, and a streaming object reader.

Git is the reference for everything packorder touches; where we only need to ask it something
(where is the repository, what is this config value, what are this object's bytes) we ask the
`git` binary rather than re-implement its discovery and config rules.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

from packorder.errors import RepositoryError

GIT = os.environ.get("PACKORDER_GIT", "git")


# A path that does not exist (ENOENT is silent; /dev/null would make Git print its
# grafts-deprecated advice).
NO_GRAFT_FILE = "/nonexistent/packorder-no-grafts"


def git_env(extra: dict[str, str] | None = None, as_stored: bool = True) -> dict[str, str]:
    """The environment packorder runs Git in. `as_stored`: Git sees objects as they are
    stored, as `git pack-objects` and `git prune` do: no replace refs, no grafts. A walk
    through a replacement never reaches the replaced commit's tree, and a repack that drops
    what it did not walk would delete it. Off only for the workloads seekstats measures,
    which read the repository as its users do."""
    env = dict(os.environ)
    # Never let a read trigger a fetch from a partial clone's promisor remote.
    env["GIT_NO_LAZY_FETCH"] = "1"
    env.setdefault("LC_ALL", "C")
    if as_stored:
        env["GIT_NO_REPLACE_OBJECTS"] = "1"
        env["GIT_GRAFT_FILE"] = NO_GRAFT_FILE
    if extra:
        env.update(extra)
    return env


@functools.cache
@functools.cache
def git_version() -> tuple[int, ...]:
    """The version of the `git` packorder runs, as numbers: (2, 47, 3), or (2, 55) for a
    build's "2.55.GIT". Where Git's behaviour changed, packorder follows the Git in use;
    () when that Git does not answer. Asked once a process: index-pack asks it on every
    push, in more than one place."""
    try:
        proc = subprocess.run([GIT, "--version"], capture_output=True, text=True, env=git_env())
    except OSError:
        return ()
    return version_numbers(proc.stdout.strip().removeprefix("git version "))


def version_numbers(version: str) -> tuple[int, ...]:
    """ "2.47.3" -> (2, 47, 3); "2.55.GIT" -> (2, 55); "2.45.2.windows.1" -> (2, 45, 2)."""
    return tuple(int(p) for p in itertools.takewhile(str.isdigit, version.split(".")))


def stderr_line(stderr: bytes | str) -> str:
    """Git's complaint on standard error, folded into one line: its `fatal:` line (the last,
    which says what stopped it) else its first `error:` line, else its last line, without
    the prefix (Git repeats a damaged file's error once for every object it tries)."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    fatal = [line for line in lines if line.startswith("fatal: ")]
    errors = [line for line in lines if line.startswith("error: ")]
    chosen = fatal[-1] if fatal else errors[0] if errors else lines[-1]
    return chosen.removeprefix("fatal: ").removeprefix("error: ")


def run(args: list[str], git_dir: Path | None = None, check: bool = True, **kw) -> subprocess.CompletedProcess:
    cmd = [GIT]
    if git_dir is not None:
        cmd += ["--git-dir", str(git_dir)]
    kw.setdefault("capture_output", True)
    kw.setdefault("env", git_env())
    proc = subprocess.run(cmd + args, **kw)
    if check and proc.returncode != 0:
        err = stderr_line(proc.stderr or b"")
        raise RepositoryError(f"git {' '.join(args[:2])} failed: {err or 'exit ' + str(proc.returncode)}")
    return proc


def find_git_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """The git directory of the repository at or above `path` (default: the current one)."""
    where = Path(path) if path is not None else Path.cwd()
    if not where.exists():
        raise RepositoryError(f"{where}: no such file or directory")
    # Git finds the repository, and refuses one another user owns unless safe.directory
    # names it (a bare snapshot without a config file is a repository to it too).
    proc = subprocess.run(
        [GIT, "-C", str(where), "rev-parse", "--absolute-git-dir"],
        capture_output=True,
        text=True,
        env=git_env(),
    )
    if proc.returncode != 0:
        if "detected dubious ownership" in proc.stderr:
            # Git's own words, its hint on safe.directory included.
            raise RepositoryError(proc.stderr.strip().removeprefix("fatal: "))
        raise RepositoryError(f"not a git repository: {where}")
    git_dir = Path(proc.stdout.strip())
    common = git_dir / "commondir"
    if not (git_dir / "objects").is_dir() and common.is_file():
        # A linked worktree: its objects, refs and packs are the main repository's, and Git
        # run there with `--all`, `--reflog` and `--indexed-objects` covers every worktree.
        shared = Path(common.read_text().strip())
        git_dir = (shared if shared.is_absolute() else git_dir / shared).resolve()
    return git_dir


_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_int(value: str, name: str) -> int:
    m = re.fullmatch(r"\s*(-?\d+)\s*([kKmMgG]?)\s*", value)
    if not m:
        raise RepositoryError(f"bad numeric config value '{value}' for '{name}'")
    return int(m.group(1)) * _SUFFIX[m.group(2).lower()]


def parse_bool(value: str | None) -> bool:
    """Git's boolean: a key with no value is true, an empty value (`-c key=`) false."""
    if value is None:
        return True
    v = value.strip().lower()
    if v in ("true", "yes", "on", "1"):
        return True
    if v in ("false", "no", "off", "0", ""):
        return False
    try:
        return int(v) != 0
    except ValueError:
        raise RepositoryError(f"bad boolean config value '{value}'") from None


class Config:
    """Git configuration as `git config --list` reports it (last value wins)."""

    def __init__(self, values: dict[str, str | None], every: dict[str, list[str | None]] | None = None) -> None:
        self.values = values
        self.every = every if every is not None else {k: [v] for k, v in values.items()}

    def __repr__(self) -> str:
        return f"Config({self.values!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and other.values == self.values

    def get(self, name: str) -> str | None:
        return self.values.get(name.lower())

    def get_all(self, name: str) -> list[str]:
        """Every value of a multi-valued key, in the order Git lists them."""
        return [v for v in self.every.get(name.lower(), []) if v is not None]

    def get_int(self, name: str, default: int) -> int:
        v = self.get(name)
        return default if v is None else parse_int(v, name)

    @property
    def object_format(self) -> str:
        """The hash the repository names objects by (`extensions.objectFormat`)."""
        return (self.get("extensions.objectFormat") or "sha1").lower()

    def get_bool(self, name: str, default: bool) -> bool:
        if name.lower() not in self.values:
            return default
        return parse_bool(self.values[name.lower()])

    def bare(self, git_dir: Path) -> bool:
        """Whether the repository at `git_dir` is bare (`core.bare`, else as Git guesses it)."""
        return self.get_bool("core.bare", git_dir.name != ".git")


def read_config(git_dir: Path | None) -> Config:
    """Configuration visible from `git_dir` (system, global, repository), or outside a repo.
    A repository with a compatibility hash (its objects named by a second hash too) is
    refused: nothing here keeps that second name."""
    args = ["config", "--list", "-z"]
    proc = run(args, git_dir=git_dir, check=False)
    values: dict[str, str | None] = {}
    every: dict[str, list[str | None]] = {}
    if proc.returncode == 0:
        for item in proc.stdout.split(b"\0"):
            if not item:
                continue
            key, sep, val = item.decode(errors="replace").partition("\n")
            values[key.lower()] = val if sep else None
            every.setdefault(key.lower(), []).append(val if sep else None)
    config = Config(values, every)
    if git_dir is None:
        return config
    compat = config.get("extensions.compatObjectFormat")
    if compat is not None:
        raise RepositoryError(
            f"{git_dir} sets extensions.compatObjectFormat={compat}; "
            "packorder does not support repositories with a compatibility hash"
        )
    return config


def object_types(git_dir: Path, oids_hex: list[str]) -> list[str | None]:
    """The type of each object the repository has (alternates included), None for one it
    lacks, through one `git cat-file --batch-check`."""
    out = run(
        ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
        git_dir,
        check=False,
        input="".join(h + "\n" for h in oids_hex).encode(),
    )
    types: dict[str, str | None] = dict.fromkeys(oids_hex)
    for line in out.stdout.decode(errors="replace").splitlines():
        name, _, kind = line.partition(" ")
        if kind and kind != "missing" and name in types:
            types[name] = kind
    return [types[h] for h in oids_hex]


class ObjectReader:
    """Reads objects through one `git cat-file --batch` process (alternates and all)."""

    def __init__(self, git_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [GIT, "--git-dir", str(git_dir), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=git_env(),
        )

    def read(self, oid_hex: str) -> tuple[str, bytes] | None:
        """(type name, content), or None when the repository does not have the object."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(oid_hex.encode() + b"\n")
        self.proc.stdin.flush()
        return self._answer()

    def read_many(self, oids_hex: list[str]) -> Iterator[tuple[str, tuple[str, bytes] | None]]:
        """(id, what read() would give) for each id, in order: the ids are written by a
        thread while the answers are read, so there is no round trip per object."""
        assert self.proc.stdin is not None
        stdin = self.proc.stdin

        def feed() -> None:
            with contextlib.suppress(OSError):  # cat-file stopped: reading reports it
                for start in range(0, len(oids_hex), 4096):
                    stdin.write("".join(h + "\n" for h in oids_hex[start : start + 4096]).encode())
                stdin.flush()

        feeder = threading.Thread(target=feed, name="packorder-cat-file", daemon=True)
        feeder.start()
        finished = False
        try:
            for oid_hex in oids_hex:
                yield oid_hex, self._answer()
            finished = True
        finally:
            if not finished and feeder.is_alive():
                # Left early: cat-file waits for us to read, the feeder for cat-file to read.
                self.proc.kill()
            feeder.join()

    def _answer(self) -> tuple[str, bytes] | None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RepositoryError("git cat-file stopped unexpectedly")
        parts = line.split()
        if len(parts) < 3 or parts[1] == b"missing":
            return None
        size = int(parts[2])
        data = self.proc.stdout.read(size)
        self.proc.stdout.read(1)
        return parts[1].decode(), data

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait()

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
