"""The workloads: which Git command runs, how its accesses are recorded, and how to run it
again untraced for cold and warm wall times.

A `Workload` pairs a `record` function (a trace source run on the workload's command) with a
`timed` function (the same work, untraced). The names, descriptions and Git commands are in
`workload_catalog.py`, one entry a workload. Adding a workload traced by another source — for example packorder's own
index-pack, recorded by a source that logs its reads — means writing one `_build_*` function.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packorder.errors import RepositoryError, UsageError
from packorder.format import object_format as object_formats
from packorder.format.layout import PackLayout
from packorder.format.layout import load as load_layout
from packorder.gitcmd import Config
from packorder.progress import ProgressCallback
from packorder.seek import choose, commands, pack_access, pread, runner
from packorder.seek import workload_catalog as catalog
from packorder.seek.trace import Recording, concat
from packorder.seek.workload_catalog import WorkloadSpec
from packorder.store.listing import list_packs

NAMES = catalog.NAMES
TAKES_PATH = catalog.TAKES_PATH


def spec(name: str, path: str | None = None, git_args: tuple[str, ...] | list[str] = ()) -> WorkloadSpec:
    """A checked workload spec (the path is chosen later if needed)."""
    if name not in NAMES:
        raise UsageError(f"unknown workload '{name}' (choose from {', '.join(NAMES)})")
    if path is not None and name not in TAKES_PATH:
        raise UsageError(f"the {name} workload takes no PATH")
    if name == "custom" and not git_args:
        raise UsageError("the custom workload needs git arguments, e.g. ('log', '--all')")
    if git_args and name != "custom":
        raise UsageError(f"git arguments are for the custom workload, not {name}")
    if path is not None:
        path = path.strip("/") if path not in ("/", ".") else path
        path = path[2:] if path.startswith("./") else path
        if not path:
            raise UsageError("empty PATH")
    return WorkloadSpec(name, path, tuple(git_args))


def parse(
    workload: str | WorkloadSpec, path: str | None = None, git_args: tuple[str, ...] | list[str] = ()
) -> WorkloadSpec:
    """A workload in any form a call takes it: a WorkloadSpec, 'name', or 'name:PATH' (or
    'name' with `path`)."""
    if isinstance(workload, WorkloadSpec):
        if path is not None or git_args:
            raise UsageError("a WorkloadSpec carries its own path and git arguments")
        return workload
    if not isinstance(workload, str):
        raise UsageError(f"a workload is a name, 'name:PATH' or a WorkloadSpec, not {workload!r}")
    name, sep, given = workload.partition(":")
    if sep and path is not None:
        raise UsageError(f"the path of {workload!r} is given twice")
    return spec(name.strip(), given.strip() if sep else path, git_args)


def resolve(workload: WorkloadSpec, git_dir: Path) -> tuple[WorkloadSpec, choose.Choice | choose.TagChoice | None]:
    """The spec with its path checked at HEAD, or chosen from history when not given; for
    diff-tags, with its two tags chosen."""
    if workload.name == "diff-tags" and not workload.revisions:
        tags = choose.newest_tags(git_dir)
        return WorkloadSpec(workload.name, revisions=tags.tags, chosen=True), tags
    if workload.name not in TAKES_PATH:
        return workload, None
    directory = workload.name in ("log-path", "log-patch")
    if workload.path is None:
        picked = choose.most_changed(git_dir, directory=directory)
        return WorkloadSpec(workload.name, picked.path, chosen=True), picked
    kind = choose.kinds_at_head(git_dir, [workload.path]).get(workload.path)
    if kind is None:
        raise RepositoryError(f"{workload.path}: no such path in HEAD")
    if workload.name == "blame" and kind != "blob":
        raise RepositoryError(f"{workload.path}: not a file (blame needs a file)")
    if workload.name == "log-patch" and kind not in ("blob", "tree"):
        raise RepositoryError(f"{workload.path}: not a file or directory (log-patch shows their changes)")
    return workload, None


@dataclass
class Workload:
    spec: WorkloadSpec
    record: Callable[[ProgressCallback | None], Recording]
    timed: Callable[[], float]  # one untraced run: its wall time
    files: list[Path] = field(default_factory=list)  # the pack files it reads (for --cold)
    layouts: dict[Path, PackLayout] = field(default_factory=dict)  # layouts loaded while recording
    command: runner.Command | None = None  # the git command, when a single one is traced


def pack_family(pack: Path) -> list[Path]:
    """The files of a pack a workload may read (a bitmap: fetch-bitmap and clone)."""
    suffixes = (".pack", ".idx", ".rev", ".bitmap")
    return [p for p in (pack.with_suffix(s) for s in suffixes) if p.is_file()]


def build(
    workload: WorkloadSpec, git_dir: Path, git: str, config: Config, cache_limit: int, cwd: Path | None = None
) -> Workload:
    """The runnable workload for a resolved spec on the repository at `git_dir`."""
    files = [f for pack in list_packs(git_dir / "objects" / "pack") for f in pack_family(pack)]
    if workload.name == "index-pack":
        return _build_index_pack(workload, git_dir, git, config, cache_limit, files)
    command = commands.git_command(workload, git_dir, git, cwd)
    title = f"Tracing {workload.describe()}"
    return Workload(
        workload,
        record=lambda progress: pack_access.record(command, progress, title),
        timed=lambda: runner.run(command),
        files=files,
        command=command,
    )


def _index_pack_command(pack: Path, out_dir: Path, git: str, config: Config, cache_limit: int) -> runner.Command:
    """`git index-pack -o OUT PACK` outside any repository, so no object is read back for a
    collision check, with the repository's delta base cache and thread settings."""
    argv = [git, "-c", f"core.deltaBaseCacheLimit={cache_limit}", "index-pack"]
    threads = config.get("pack.threads")
    if threads is not None:
        argv.append(f"--threads={threads}")
    argv += ["-o", str(out_dir / "index.idx"), str(pack)]
    env: dict[str, str | None] = {"GIT_DIR": None, "GIT_WORK_TREE": None, "GIT_CEILING_DIRECTORIES": str(out_dir)}
    return runner.Command(argv, b"", env, out_dir, label=f"git index-pack {pack}")


def _build_index_pack(
    workload: WorkloadSpec, git_dir: Path, git: str, config: Config, cache_limit: int, files: list[Path]
) -> Workload:
    packs = list_packs(git_dir / "objects" / "pack")
    if not packs:
        raise RepositoryError(f"{git_dir}: no pack to index")
    layouts: dict[Path, PackLayout] = {}

    def record(progress: ProgressCallback | None) -> Recording:
        recordings = []
        for pack in packs:
            layouts[pack.resolve()] = layout = load_layout(pack, fmt=object_formats.named(config.object_format))
            with tempfile.TemporaryDirectory(prefix="packorder-index-pack-") as tmp:
                command = _index_pack_command(pack, Path(tmp).resolve(), git, config, cache_limit)
                title = f"Tracing git index-pack {pack.name}"
                recordings.append(pread.record(command, pack, layout, progress, title))
        return Recording(
            concat([r.trace for r in recordings]),
            sum(r.seconds for r in recordings),
            [c for r in recordings for c in r.commands],
        )

    def timed() -> float:
        seconds = 0.0
        for pack in packs:
            with tempfile.TemporaryDirectory(prefix="packorder-index-pack-") as tmp:
                seconds += runner.run(_index_pack_command(pack, Path(tmp).resolve(), git, config, cache_limit))
        return seconds

    return Workload(workload, record, timed, files, layouts)
