"""A generated repository whose layout questions are visible at a small scale: commits with long
messages (so the commit region is large next to the trees), files in nested directories edited
a few at a time (tree delta chains, blob families), a merged topic branch, and lightweight and
annotated tags. Built with fast-import in well under a second.

Seeks are judged against a threshold scaled to the repository (`THRESHOLD`) instead of 2 MiB.
"""

from __future__ import annotations

import random
from pathlib import Path

from helpers.gitrepo import Repo

THRESHOLD = 16 << 10  # the "far" seek of these tests: the commit region alone spans far more
WORDS = ["alpha", "beta", "gamma", "delta", "pack", "tree", "blob", "commit", "seek", "order", "index", "cache"]
DIRS = ["src/core", "src/util", "lib/net", "docs"]


def build(path: Path, commits: int = 160, seed: int = 5, side: int = 0) -> Repo:
    """`side`: commits on a branch `side`, never merged, one every third commit of the second
    half (a release or contributor's branch, which HEAD's walk never visits)."""
    rng = random.Random(seed)
    repo = Repo(path)

    def line() -> str:
        return " ".join(rng.choice(WORDS) + str(rng.randrange(1000)) for _ in range(8))

    def data(body: bytes) -> bytes:
        return b"data %d\n%s\n" % (len(body), body)

    files = {f"{d}/f{i}.c": [line() for _ in range(rng.randint(20, 60))] for d in DIRS for i in range(8)}
    stream: list[bytes] = []
    when = 1_700_000_000
    tips: dict[str, int] = {}
    for c in range(commits):
        when += 3600
        mark = c + 1
        branch = "topic" if commits // 2 <= c < commits // 2 + 12 else "main"
        on_side = branch == "main" and c > commits // 2 + 12 and c % 3 == 1 and side > 0
        if on_side:
            side -= 1
            branch = "side"
        stream += [f"commit refs/heads/{branch}\nmark :{mark}\n".encode()]
        stream.append(b"committer Cy Committer <cy@example.com> %d +0000\n" % when)
        # Long, varied messages: the commit region outweighs the trees several times over.
        message = f"change {c}\n\n" + "\n".join(line() for _ in range(rng.randint(8, 16)))
        stream.append(data(message.encode()))
        if c == commits // 2 or (on_side and "side" not in tips):
            stream.append(f"from :{tips['main']}\n".encode())
        if c == commits // 2 + 12:
            stream.append(f"merge :{tips['topic']}\n".encode())
        tips[branch] = mark
        names = sorted(files) if c == 0 else rng.sample(sorted(files), rng.randint(1, 3))
        for name in names:
            body = files[name]
            if c:
                for _ in range(rng.randint(1, 3)):
                    body[rng.randrange(len(body))] = line()
                if rng.random() < 0.3:
                    body.append(line())
            stream += [f"M 100644 inline {name}\n".encode(), data(("\n".join(body) + "\n").encode())]
        stream.append(b"\n")
        if c % 20 == 19 and branch == "main":
            if c % 40 == 39:
                stream += [f"tag v{c // 20}\nfrom refs/heads/main\n".encode()]
                stream += [b"tagger Cy Committer <cy@example.com> %d +0000\n" % when, data(b"release %d" % c)]
            else:
                stream.append(f"reset refs/tags/light{c // 20}\nfrom refs/heads/main\n\n".encode())
    repo.run("fast-import", "--quiet", input=b"".join(stream))
    repo.run("config", "pack.threads", "1")  # one order of index-pack reads, the one the model replays
    repo.run("repack", "-adf", "-q")
    return repo
