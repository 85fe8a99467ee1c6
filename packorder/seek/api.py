"""`packorder.seekstats`: run a workload on a repository, record its pack accesses, report how
far they seek."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packorder.errors import UsageError
from packorder.format import object_format as object_formats
from packorder.format.layout import PackLayout
from packorder.gitcmd import find_git_dir, git_env, read_config
from packorder.native_call import core_errors
from packorder.progress import ProgressCallback
from packorder.seek import analyze, caveats, runner, workloads
from packorder.seek.expand import expand
from packorder.seek.ipmodel import git_threads
from packorder.seek.seek_result import EXPANDED, RAW, VIEWS, SeekResult
from packorder.seek.trace import READS, Trace
from packorder.seek.workload_catalog import USES_BITMAP
from packorder.seek.workloads import WorkloadSpec
from packorder.settings import delta_base_cache_limit

DEFAULT_THRESHOLD = 2 << 20
DEFAULT_NEAR = 4 << 10  # a page: an access near data read before needs no new page


def label_of(git_dir: Path) -> str:
    """A short name for a repository: its directory, or the work tree's for a `.git`."""
    return git_dir.parent.name if git_dir.name == ".git" else git_dir.name


def git_version(git: str) -> str:
    proc = subprocess.run([git, "--version"], capture_output=True, text=True, env=git_env())
    return proc.stdout.strip().removeprefix("git version ")


def describe_view(view: str, source: str, cache_limit: int) -> str:
    if source != READS and view == RAW:
        return "raw: the objects Git asked the pack for (GIT_TRACE_PACK_ACCESS); delta bases not counted"
    if view == EXPANDED:
        return (
            "expanded: each object asked for, with the delta chain entries Git reads to produce it, "
            f"less what a {analyze.size_label(cache_limit)} delta base cache holds"
        )
    return "raw: every entry git index-pack read (strace pread64); nothing to expand"


@dataclass
class Measurement:
    """A measured workload, with what the simulator needs to re-lay it: the trace (each access
    located in its pack) and the layouts of the packs it read."""

    result: SeekResult
    trace: Trace
    layouts: list[PackLayout]
    threads: int  # the index-pack threads Git runs with on this repository


@core_errors
def seekstats(
    repo: str | os.PathLike[str] | None = None,
    workload: str | WorkloadSpec = "log",
    *,
    path: str | None = None,
    git_args: Sequence[str] = (),
    git: str = "git",
    views: Sequence[str] = VIEWS,
    threshold: int = DEFAULT_THRESHOLD,
    near: int = DEFAULT_NEAR,
    cache_limit: int | None = None,
    cold: bool = False,
    label: str | None = None,
    progress: ProgressCallback | None = None,
) -> SeekResult:
    """Run `workload` on the repository at `repo` (default: the current one) and measure the
    seek distances of its pack accesses.

    `workload` is a name of `catalog.NAMES` (custom with `git_args`), 'NAME:PATH' for those
    that take a PATH (as `experiment` takes them), or a `WorkloadSpec`; log-path, log-patch and
    blame take `path` and choose the most often changed one when it is None, diff-tags the two
    newest tags. `views`
    selects raw and/or expanded statistics (index-pack's trace has every read already: raw
    only). `cache_limit` is the delta base cache the expanded view models
    (default: the repository's core.deltaBaseCacheLimit). With `cold`, the workload also runs
    untraced after its packs are dropped from the page cache, then again warm.
    """
    return measure(
        repo,
        workload,
        path=path,
        git_args=git_args,
        git=git,
        views=views,
        threshold=threshold,
        near=near,
        cache_limit=cache_limit,
        cold=cold,
        label=label,
        progress=progress,
    ).result


def _warnings(
    spec: WorkloadSpec, git_dir: Path, packs: Sequence[Path], threshold: int, cold: float | None, warm: float | None
) -> list[str]:
    found = [caveats.small_pack(max(p.stat().st_size for p in packs), threshold)] if packs else []
    if spec.name in USES_BITMAP:
        found.append(caveats.no_bitmap(spec.name, any((git_dir / "objects" / "pack").glob("*.bitmap"))))
    for run, seconds in (("cold", cold), ("warm", warm)):
        if seconds is not None:
            found.append(caveats.single_short_run(f"the {run} run", [seconds]))
    return [w for w in found if w is not None]


def measure(
    repo: str | os.PathLike[str] | None = None,
    workload: str | WorkloadSpec = "log",
    *,
    path: str | None = None,
    git_args: Sequence[str] = (),
    git: str = "git",
    views: Sequence[str] = VIEWS,
    threshold: int = DEFAULT_THRESHOLD,
    near: int = DEFAULT_NEAR,
    cache_limit: int | None = None,
    cold: bool = False,
    label: str | None = None,
    progress: ProgressCallback | None = None,
) -> Measurement:
    """`seekstats`, keeping the located trace and the pack layouts (for the simulator)."""
    unknown = [v for v in views if v not in VIEWS]
    if unknown or not views:
        raise UsageError(f"unknown view {unknown[0] if unknown else '(none)'} (choose raw and/or expanded)")
    if threshold <= 0 or near < 0:
        raise UsageError("the threshold must be positive and the near distance not negative")
    git_dir = find_git_dir(repo)
    git_path = runner.check_program(git, "the git binary to run workloads with")
    spec = workloads.parse(workload, path, tuple(git_args))
    spec, _ = workloads.resolve(spec, git_dir)
    config = read_config(git_dir)
    if cache_limit is None:
        cache_limit = delta_base_cache_limit(config)
    cwd = Path(repo).resolve() if repo is not None else Path.cwd()
    work = workloads.build(spec, git_dir, git_path, config, cache_limit, cwd)

    recording = work.record(progress)
    trace = recording.trace
    layouts = analyze.layouts_of(trace, work.layouts, object_formats.named(config.object_format))
    trace = analyze.locate(trace, layouts)
    results = []
    for view in VIEWS:
        if trace.kind == READS and view == EXPANDED:
            continue  # every read is in the trace already
        if view not in views and not (trace.kind == READS and view == RAW):
            continue
        shown = expand(trace, layouts, cache_limit, progress) if view == EXPANDED else trace
        description = describe_view(view, trace.kind, cache_limit)
        results.append(analyze.view_stats(shown, layouts, view, description, threshold, near))

    cold_seconds = warm_seconds = None
    if cold:
        runner.drop_from_page_cache(work.files)
        cold_seconds = work.timed()
        warm_seconds = work.timed()
    result = SeekResult(
        repository=git_dir,
        label=label or label_of(git_dir),
        workload=spec,
        source=trace.source,
        git=git_path,
        git_version=git_version(git_path),
        packs=list(trace.packs),
        pack_bytes=sum(p.stat().st_size for p in trace.packs),
        cache_limit=cache_limit,
        views=results,
        seconds=recording.seconds,
        cold_seconds=cold_seconds,
        warm_seconds=warm_seconds,
    )
    result.warnings = _warnings(spec, git_dir, trace.packs, threshold, cold_seconds, warm_seconds)
    threads = config.get_int("pack.threads", 0) or git_threads()
    return Measurement(result, trace, layouts, threads)


def cold_reads(
    repo: str | os.PathLike[str],
    workload: str,
    *,
    path: str | None = None,
    git: str = "git",
    readahead: int = 128 << 10,
) -> int:
    """The reads a cold run of `workload` on `repo`, as its packs are, would send to the
    disk (coldreads.py's model, every read expanded by the delta chains it goes through)."""
    from packorder.seek.coldreads import disk_reads

    measured = measure(repo, workload, path=path, git=git)
    read = expand(measured.trace, measured.layouts, measured.result.cache_limit)
    starts, ends = analyze.entry_ranges(read, measured.layouts)
    return disk_reads(read.pack_index, starts, ends, readahead)
