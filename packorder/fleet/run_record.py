"""A fleet run's record: one JSON line a repository, appended as each finishes, so that a
run killed half way has kept what it did and `--resume` can skip it.

A line is written whole with one write() and flushed to disk before the next; a run killed
during a write leaves at most a torn last line, which reading skips.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from packorder.jsonable import to_jsonable

DONE, FAILED, SKIPPED = "done", "failed", "skipped"


def append(path: Path, records: Iterable[dict[str, Any]]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        if _torn(path):
            f.write("\n")  # else the first record would finish the torn line and be lost with it
        for record in records:
            f.write(json.dumps(to_jsonable(record), sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())


def _torn(path: Path) -> bool:
    with open(path, "rb") as f:
        if f.seek(0, os.SEEK_END) == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


def read(path: Path) -> list[dict[str, Any]]:
    """Every whole line of `path`, in order (none if it does not exist)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # torn by a kill: that repository was not recorded
    return out


def latest(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last record of each repository (a rerun appends a newer one)."""
    return {r["path"]: r for r in records}


def finished(path: Path) -> set[str]:
    """The repositories a previous run repacked: what `--resume` skips. Failed and skipped
    ones are tried again."""
    return {p for p, r in latest(read(path)).items() if r["status"] == DONE}
