"""`packorder sample DIR --shape monorepo`: a repository of the shape where Git's version-1
name hash fails the delta search, as in a JavaScript monorepo (fluentui): thousands of
`package.json`, `CHANGELOG.json` and `CHANGELOG.md` files, one of each in every package's
directory, and releases that bump many packages at once (a version in each bumped
`package.json`, in its dependents' too, an entry at the top of its changelogs).

The version-1 hash is a number of a path's last sixteen characters: every `CHANGELOG.json`
of packages whose names end alike sorts together, and the search's window, full of other
packages' changelogs, misses the package's own previous version. A search by path does not.

Deterministic, as the other sample: a seeded generator's `git fast-import` stream (fixed
names, dates and contents), packed as `git repack -a -d` would leave it."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

from packorder.errors import UsageError
from packorder.experiments.sample_repository import AUTHOR, COMMITTER, START, SampleResult, import_stream
from packorder.progress import ProgressCallback

SCOPES = ("react", "web", "charts", "tokens")
WORDS = ("button", "menu", "card", "field", "label", "table", "theme", "icon", "list", "panel", "tab", "grid")
SUFFIXES = ("-react", "-utils", "-preview")  # names that end alike, as a monorepo's do
DEFAULT_PACKAGES = 2000
DEFAULT_RELEASES = 400
BUMPS = (4, 40)  # packages a release bumps, at least and at most


def _published(name: str) -> str:
    """A package's name as published: `react/button0-react` is `@sample/button0-react`."""
    return f"@sample/{name.split('/')[1]}"


class _Monorepo:
    def __init__(self, packages: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.names = [
            f"{SCOPES[i % len(SCOPES)]}/{WORDS[(i * 7) % len(WORDS)]}{i}{SUFFIXES[i % len(SUFFIXES)]}"
            for i in range(packages)
        ]
        self.versions = {name: [0, 1, 0] for name in self.names}
        self.deps = {
            name: sorted(self.rng.sample(self.names[:i], min(i, self.rng.randint(0, 6))))
            for i, name in enumerate(self.names)
        }
        self.dependents: dict[str, list[str]] = {name: [] for name in self.names}
        for name, deps in self.deps.items():
            for dep in deps:
                self.dependents[dep].append(name)
        self.changes: dict[str, list[dict[str, str]]] = {name: [] for name in self.names}

    def version(self, name: str) -> str:
        return ".".join(map(str, self.versions[name]))

    def package_json(self, name: str) -> bytes:
        doc = {
            "name": _published(name),
            "version": self.version(name),
            "description": f"The {name} package of the sample monorepo.",
            "main": "lib/index.js",
            "scripts": {"build": "tsc", "test": "jest", "lint": "eslint src"},
            "dependencies": {_published(d): f"^{self.version(d)}" for d in self.deps[name]},
            "license": "MIT",
        }
        return (json.dumps(doc, indent=2) + "\n").encode()

    def changelog_json(self, name: str) -> bytes:
        doc = {"name": _published(name), "entries": list(reversed(self.changes[name]))}
        return (json.dumps(doc, indent=2) + "\n").encode()

    def changelog_md(self, name: str) -> bytes:
        lines = [f"# Change Log - {_published(name)}\n"]
        for entry in reversed(self.changes[name]):
            lines.append(f"\n## {entry['version']}\n\n{entry['date']}\n\n- {entry['comment']}\n")
        return "".join(lines).encode()

    def files(self, name: str) -> dict[str, bytes]:
        root = f"packages/{name}"
        return {
            f"{root}/package.json": self.package_json(name),
            f"{root}/CHANGELOG.json": self.changelog_json(name),
            f"{root}/CHANGELOG.md": self.changelog_md(name),
        }

    def release(self, when: int) -> set[str]:
        """Bump some packages, and their dependents' ranges: the packages whose files change."""
        bumped = self.rng.sample(self.names, self.rng.randint(*BUMPS))
        touched = set(bumped)
        for name in bumped:
            v = self.versions[name]
            v[2] += 1
            self.changes[name].append(
                {
                    "version": self.version(name),
                    "date": f"epoch {when}",
                    "comment": " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(4, 12))),
                }
            )
            touched.update(self.dependents[name])
        return touched


def _commands(repo: _Monorepo, releases: int) -> Iterator[bytes]:
    when = START
    for r in range(releases + 1):
        touched = set(repo.names) if r == 0 else repo.release(when)
        message = b"initial import\n" if r == 0 else f"release {r}\n".encode()
        out = [
            b"commit refs/heads/main\n",
            f"author {AUTHOR} {when} +0000\n".encode(),
            f"committer {COMMITTER} {when} +0000\n".encode(),
            b"data %d\n%s" % (len(message), message),
        ]
        for name in sorted(touched):
            for path, data in repo.files(name).items():
                out.append(f"M 100644 inline {path}\n".encode() + b"data %d\n%s\n" % (len(data), data))
        out.append(b"\n")
        yield b"".join(out)
        when += 86400


def monorepo(
    directory: str | Path,
    packages: int = DEFAULT_PACKAGES,
    releases: int = DEFAULT_RELEASES,
    seed: int = 1,
    progress: ProgressCallback | None = None,
) -> SampleResult:
    """A bare repository at `directory` (new or empty): `packages` packages, then `releases`
    releases, packed by Git."""
    if packages < 1 or releases < 1:
        raise UsageError("a monorepo sample has at least one package and one release (2 commits)")
    repo = _Monorepo(packages, seed)
    return import_stream(Path(directory), lambda _work: _commands(repo, releases), releases + 1, progress)
