"""The workloads of `seekstats` and `experiment` by name: which take a PATH, which read a
reachability bitmap, which the simulator re-lays, and one line of help each. Apart from
workloads.py (which imports the analyzer) so that the command line can list them at startup."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkloadInfo:
    usage: str  # how the name is written on seekstats' command line
    takes_path: bool = False
    uses_bitmap: bool = False  # pack-objects with pack.useBitmaps on
    traced_by_git: bool = True  # GIT_TRACE_PACK_ACCESS: requests the simulator re-lays


GREP_PATTERN = "TODO"  # grep's pattern: which blobs it reads does not depend on it

CATALOG: dict[str, WorkloadInfo] = {
    "log": WorkloadInfo("log"),
    "log-path": WorkloadInfo("log-path [PATH]", takes_path=True),
    "log-patch": WorkloadInfo("log-patch [PATH]", takes_path=True),
    "blame": WorkloadInfo("blame [PATH]", takes_path=True),
    "diff-tags": WorkloadInfo("diff-tags"),
    "pack-recent": WorkloadInfo("pack-recent"),
    "fetch-bitmap": WorkloadInfo("fetch-bitmap", uses_bitmap=True),
    "clone": WorkloadInfo("clone", uses_bitmap=True),
    "archive": WorkloadInfo("archive"),
    "grep": WorkloadInfo("grep"),
    "index-pack": WorkloadInfo("index-pack", traced_by_git=False),
    "custom": WorkloadInfo("custom -- GIT ARGS"),
}

NAMES = tuple(CATALOG)
TAKES_PATH = tuple(name for name, info in CATALOG.items() if info.takes_path)
USES_BITMAP = tuple(name for name, info in CATALOG.items() if info.uses_bitmap)
# The experiment's default: the study's workloads; the others are chosen with -w.
DEFAULT_EXPERIMENT = ("log", "log-path", "blame", "pack-recent", "index-pack")


def usage(names: tuple[str, ...] = NAMES, experiment: bool = False) -> str:
    """'log, log-path [PATH], ...' (experiment: 'log-path[:PATH]'), for the commands' help."""
    if experiment:
        return ", ".join(f"{n}[:PATH]" if CATALOG[n].takes_path else n for n in names if n != "custom")
    return ", ".join(CATALOG[n].usage for n in names)
