"""The workloads of `seekstats` and `experiment` by name, one entry each: how the name is
written, which take a PATH, which read a reachability bitmap, which the simulator re-lays,
the command as the study writes it, and the Git command that runs it. Apart from
workloads.py (which imports the analyzer) so that the command line can list them at
startup. A new Git-traced workload is one entry here (and a test)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packorder.gitcmd import run


@dataclass(frozen=True)
class WorkloadSpec:
    """What to run: a workload name, its PATH (log-path, log-patch, blame), its tags
    (diff-tags: full ref names, the older first) or git arguments (custom)."""

    name: str
    path: str | None = None
    git_args: tuple[str, ...] = ()
    chosen: bool = False  # the path or tags were chosen by packorder, not given
    revisions: tuple[str, ...] = ()

    def describe(self) -> str:
        """The command as the study wrote it."""
        return CATALOG[self.name].describe(self)


@dataclass(frozen=True)
class GitRun:
    """A Git command of a workload, after `git -c SETTING... --git-dir DIR`."""

    args: tuple[str, ...]
    settings: tuple[str, ...] = ()  # `-c` settings
    stdin: Callable[[Path], bytes] | None = None  # its standard input, from the repository at hand
    ok: tuple[int, ...] = (0,)  # the exit statuses that are not a failure


@dataclass(frozen=True)
class WorkloadInfo:
    usage: str  # how the name is written on seekstats' command line
    describe: Callable[[WorkloadSpec], str]
    # The Git command of a resolved spec; None for the two that are not one command on the
    # repository (index-pack indexes each pack apart; custom runs the user's arguments in their directory).
    git: Callable[[WorkloadSpec], GitRun] | None
    takes_path: bool = False
    uses_bitmap: bool = False  # pack-objects with pack.useBitmaps on
    traced_by_git: bool = True  # GIT_TRACE_PACK_ACCESS: requests the simulator re-lays


GREP_PATTERN = "TODO"  # grep's pattern: which blobs it reads does not depend on it


def since_last_release(git_dir: Path) -> bytes:
    """pack-objects' input for a fetch of HEAD by a client that has every tag."""
    tags = run(["for-each-ref", "--format=^%(refname)", "refs/tags"], git_dir=git_dir).stdout
    return tags + b"HEAD\n"


def clone_wants(git_dir: Path) -> bytes:
    """pack-objects' input as upload-pack writes it for a clone: the object of each ref a
    clone asks for (HEAD, every branch and tag, in the advertisement's order), then `--not`
    and no have."""
    refs = run(["for-each-ref", "--format=%(objectname)", "refs/heads", "refs/tags"], git_dir=git_dir).stdout.split()
    head = run(["rev-parse", "-q", "--verify", "HEAD"], git_dir=git_dir, check=False).stdout.split()
    wants = dict.fromkeys(head + refs)
    return b"".join(w + b"\n" for w in wants) + b"--not\n\n"


def _tags(spec: WorkloadSpec) -> str:
    return " ".join([t.removeprefix("refs/tags/") for t in spec.revisions] or ["TAG1", "TAG2"])


# pack-recent runs without a bitmap, so that packs with and without one compare (a bitmap
# skips most of the walk: libgit2, 1,570 requests instead of 9,174); fetch-bitmap with it,
# as a server fetches.
_FETCH = ("pack-objects", "--revs", "--stdout")
_CLONE = ("pack-objects", "--revs", "--thin", "--stdout", "--delta-base-offset", "--include-tag")

CATALOG: dict[str, WorkloadInfo] = {
    "log": WorkloadInfo("log", lambda s: "git log", lambda s: GitRun(("log",))),
    "log-path": WorkloadInfo(
        "log-path [PATH]", lambda s: f"git log -- {s.path}", lambda s: GitRun(("log", "--", str(s.path))), True
    ),
    "log-patch": WorkloadInfo(
        "log-patch [PATH]",
        lambda s: f"git log -p -- {s.path}",
        lambda s: GitRun(("log", "-p", "--", str(s.path))),
        True,
    ),
    "blame": WorkloadInfo(
        "blame [PATH]",
        lambda s: f"git blame HEAD -- {s.path}",
        lambda s: GitRun(("blame", "HEAD", "--", str(s.path))),
        True,
    ),
    "diff-tags": WorkloadInfo(
        "diff-tags", lambda s: f"git diff {_tags(s)} --stat", lambda s: GitRun(("diff", *s.revisions, "--stat"))
    ),
    "pack-recent": WorkloadInfo(
        "pack-recent",
        lambda s: "git pack-objects --revs --stdout (HEAD ^refs/tags/*)",
        lambda s: GitRun(_FETCH, ("pack.useBitmaps=false",), since_last_release),
    ),
    "fetch-bitmap": WorkloadInfo(
        "fetch-bitmap",
        lambda s: "git -c pack.useBitmaps=true pack-objects --revs --stdout (HEAD ^refs/tags/*)",
        lambda s: GitRun(_FETCH, ("pack.useBitmaps=true",), since_last_release),
        uses_bitmap=True,
    ),
    "clone": WorkloadInfo(
        "clone",
        lambda s: "git pack-objects --revs --thin --stdout --include-tag (a clone: HEAD, branches, tags; bitmap)",
        lambda s: GitRun(_CLONE, ("pack.useBitmaps=true",), clone_wants),
        uses_bitmap=True,
    ),
    "archive": WorkloadInfo("archive", lambda s: "git archive HEAD", lambda s: GitRun(("archive", "HEAD"))),
    # grep exits 1 when no line matched, every blob read all the same.
    "grep": WorkloadInfo(
        "grep",
        lambda s: f"git grep -e {GREP_PATTERN} HEAD",
        lambda s: GitRun(("grep", "-e", GREP_PATTERN, "HEAD"), ok=(0, 1)),
    ),
    "index-pack": WorkloadInfo("index-pack", lambda s: "git index-pack", None, traced_by_git=False),
    "custom": WorkloadInfo("custom -- GIT ARGS", lambda s: "git " + " ".join(s.git_args), None),
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
