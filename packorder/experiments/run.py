"""`packorder experiment`: copy a repository once per order, repack each copy in its order with
the same deltas, run every workload on each copy, and report (docs/design.md, section 1).

Only the order differs between copies: each copy is repacked with its stored deltas reused and
no delta search (`window=0`), verified by CRC, without a bitmap unless a workload serves
with one (fetch-bitmap, clone): then every copy gets packorder's, whose commits are chosen
from history alone, the same in every order. Every workload runs with the same PATH (and
tags) on every copy, chosen once, on the original. Wall times are medians of `runs`
untraced runs, cold (the copy's packs dropped from the page cache) then warm, with the orders
taken in turn within each run. The traces of the first order are also re-laid by the
simulator on the pack every order would write, and the simulated shares are set beside the
measured ones: a check of the simulator on real repacks at every experiment.

The original repository is only read: copies go to a work directory (removed at the end
unless `keep`), the report to the output directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from packorder.errors import CorruptPackError, PackError, RepositoryError, UsageError
from packorder.experiments.experiment_result import Agreement, ExperimentResult, OrderRun
from packorder.names import names
from packorder.native_call import core_errors
from packorder.orders.catalog import check_orders
from packorder.progress import ProgressCallback
from packorder.seek import throttle
from packorder.seek.workload_catalog import DEFAULT_EXPERIMENT, USES_BITMAP, WorkloadSpec
from packorder.store.listing import list_packs

AS_IS = "as-is"  # a copy left as it is: the repository's own packs
DEFAULT_ORDERS = ("recency", "history")
DEFAULT_WORKLOADS = DEFAULT_EXPERIMENT

Note = Callable[[str], None]


def parse_workloads(items: str | Sequence[str | WorkloadSpec]) -> list[WorkloadSpec]:
    """'log,log-path:src/lib' or ['log', 'log-path:src/lib', WorkloadSpec(...)] -> the specs;
    each workload at most once."""
    from packorder.seek import workloads

    out: list[WorkloadSpec] = []
    for item in names(items, "workload"):
        name = item.partition(":")[0].strip() if isinstance(item, str) else getattr(item, "name", None)
        if name == "custom":
            raise UsageError("the experiment runs the standard workloads; custom is for seekstats")
        spec = workloads.parse(item)
        if any(spec.name == s.name for s in out):
            raise UsageError(f"workload {spec.name} given twice")
        out.append(spec)
    if not out:
        raise UsageError("no workload to run")
    return out


def copy_git_dir(source: Path, target: Path) -> None:
    """A copy of the git directory (objects, refs, config; no lock files), with relative
    alternates made absolute so that the copy still finds them, and its directories writable
    by this user whatever the source's bits (a read-only repository another user owns: the
    repack must lock its copy and replace its packs)."""
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns("*.lock", "gc.pid"))
    for where, _dirs, _files in os.walk(target):
        os.chmod(where, os.stat(where).st_mode | stat.S_IRWXU)
    info = target / "objects" / "info" / "alternates"
    if info.is_file():
        lines = []
        for line in info.read_text().splitlines():
            stripped = line.strip()
            if stripped and not stripped.startswith("#") and not os.path.isabs(stripped):
                line = str((source / "objects" / stripped).resolve())
            lines.append(line)
        info.write_text("\n".join(lines) + "\n")


def _about(e: CorruptPackError | RepositoryError, copy: Path, source: Path) -> PackError:
    """The error a repack of `copy` raised, about the repository it is a copy of (the copy's
    name means nothing to the user)."""
    if isinstance(e, CorruptPackError):
        path = e.path.replace(str(copy), str(source)) if e.path else e.path
        return CorruptPackError(e.message.replace(str(copy), str(source)), e.offset, path)
    return RepositoryError(str(e).replace(str(copy), str(source)))


def _prepare(order: str, source: Path, work: Path, progress: ProgressCallback | None, bitmap: bool) -> OrderRun:
    from packorder.repacking.pipeline import repack

    target = work / f"{order}.git"
    if progress is not None:
        progress(f"Copying the repository for {order}", 0, 1)
    copy_git_dir(source, target)
    if progress is not None:
        progress(f"Copying the repository for {order}", 1, 1)
    if order == AS_IS:
        from packorder.format.layout import load
        from packorder.format.object_format import named
        from packorder.gitcmd import read_config

        fmt = named(read_config(target).object_format)
        layouts = [load(p, fmt=fmt) for p in list_packs(target / "objects" / "pack")]
        size = sum(layout.pack_path.stat().st_size for layout in layouts)
        deltas = sum(int(layout.is_delta.sum()) for layout in layouts)
        return OrderRun(order, target, size, len(layouts), sum(x.count for x in layouts), deltas, 0.0)
    # Proven as a repack proves it (packorder.verify, else produced): a report never rests on
    # a copy that holds wrong objects, and a repository repack refuses, experiment refuses.
    try:
        result = repack(target, order=order, window=0, write_bitmap=bitmap, progress=progress)
    except (CorruptPackError, RepositoryError) as e:
        raise _about(e, target, source) from None
    return OrderRun(
        order,
        target,
        result.pack_bytes,
        len(result.packs),
        result.objects,
        result.reused_deltas,
        result.seconds.get("total", 0.0),
    )


def _time(
    runs: list[OrderRun],
    specs: list,
    rounds: int,
    git: str,
    cache_limit: int | None,
    note: Note,
    read_limit: throttle.ReadLimit | None = None,
) -> None:
    """Cold and warm wall times, untraced: each round runs every workload on every copy, the
    copies in turn (a different one first each round). With `read_limit`, cold runs read from
    the disk at its pace."""
    from packorder.gitcmd import read_config
    from packorder.seek import runner, workloads
    from packorder.settings import delta_base_cache_limit

    built = {}
    for run in runs:
        config = read_config(run.git_dir)
        limit = cache_limit or delta_base_cache_limit(config)
        for spec in specs:
            built[run.order, spec.name] = workloads.build(spec, run.git_dir, git, config, limit, run.git_dir)
    for round_ in range(rounds):
        note(f"timing round {round_ + 1} of {rounds}")
        for spec in specs:
            for k in range(len(runs)):
                run = runs[(k + round_) % len(runs)]
                work = built[run.order, spec.name]
                runner.drop_from_page_cache(work.files)
                with read_limit.applied() if read_limit is not None else contextlib.nullcontext():
                    run.cold.setdefault(spec.name, []).append(work.timed())
                run.warm.setdefault(spec.name, []).append(work.timed())
    for run in runs:
        for result in run.results:
            name = result.workload.name
            result.cold_seconds = statistics.median(run.cold[name])
            result.warm_seconds = statistics.median(run.warm[name])


def _simulate(
    runs: list[OrderRun],
    measurements: dict[str, dict],
    specs: list,
    extra: Sequence[str],
    threshold: int,
    near: int,
    progress: ProgressCallback | None,
) -> tuple[str | None, list, list[Agreement]]:
    """Re-lay the first repacked copy's traces on every order's planned pack."""
    from packorder.seek.simulator import plan, simulate_views

    real = [r for r in runs if r.order != AS_IS]
    if not real:
        return None, [], []
    reference = real[0]
    to_plan = list(dict.fromkeys([r.order for r in real] + list(extra)))
    planned = plan(reference.git_dir, to_plan, progress)
    simulated = []
    agreement = []
    for spec in specs:
        measured = measurements[reference.order][spec.name]
        for pack in planned:
            sim = simulate_views(measured, pack, threshold=threshold, near=near)
            simulated.append(sim)
            run = next((r for r in real if r.order == pack.order), None)
            if run is None:
                continue
            result = next(x for x in run.results if x.workload.name == spec.name)
            for view in sim.views:
                got = result.view(view.view)
                if got is not None and got.below_threshold is not None and view.below_threshold is not None:
                    agreement.append(
                        Agreement(spec.name, view.view, pack.order, got.below_threshold, view.below_threshold)
                    )
    return reference.order, simulated, agreement


def _warnings(order_runs: list[OrderRun], specs: list, runs: int, threshold: int) -> list[str]:
    """What the report's figures cannot show: a pack too small for the threshold, a copy
    without the bitmap a workload serves with (as-is), a ratio that rests on a single short
    run."""
    from packorder.seek import caveats

    largest = [p.stat().st_size for run in order_runs for result in run.results for p in result.packs]
    found = [caveats.small_pack(max(largest), threshold)] if largest else []
    for run in order_runs:
        has_bitmap = any((run.git_dir / "objects" / "pack").glob("*.bitmap"))
        found += [caveats.no_bitmap(f"{run.order}: {s.name}", has_bitmap) for s in specs if s.name in USES_BITMAP]
    if runs == 1:
        for spec in specs:
            fastest = min(t for run in order_runs for t in run.cold[spec.name] + run.warm[spec.name])
            found.append(caveats.single_short_run(spec.name, [fastest]))
    return [w for w in found if w is not None]


@core_errors
def experiment(
    repo: str | os.PathLike[str] | None = None,
    *,
    orders: str | Sequence[str] = DEFAULT_ORDERS,
    workloads: str | Sequence[str | WorkloadSpec] = DEFAULT_WORKLOADS,
    output_dir: str | os.PathLike[str] = "packorder-experiment",
    runs: int = 3,
    cold_iops: int | None = None,
    simulate: str | Sequence[str] = (),
    git: str = "git",
    threshold: int = 2 << 20,
    near: int = 4 << 10,
    cache_limit: int | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    keep: bool = False,
    command: str | None = None,
    progress: ProgressCallback | None = None,
    note: Note | None = None,
) -> ExperimentResult:
    """Copy the repository once per order, repack each copy in its order reusing its deltas,
    run each workload ('name', 'name:PATH' or a WorkloadSpec) on every copy, and write `output_dir`/report.md
    with tables, pack sizes, cold and warm times, plots, and the simulator's check; `simulate`
    names more orders to simulate only (from the first order's traces). `orders`, `workloads`
    and `simulate` are sequences of names or comma-separated strings. Returns what was
    measured; raises PackError subclasses. `cold_iops`: cold runs may send that many read
    requests a second to the disk (a slow disk, on a machine whose disk is cached by its
    host; Linux, root, cgroup v2 io or v1 blkio). `note` receives one-line messages (chosen paths,
    steps); `command` is quoted in the report."""
    from packorder.format.object_format import named
    from packorder.gitcmd import find_git_dir, read_config
    from packorder.seek.runner import check_program

    started = time.perf_counter()
    say = note or (lambda _message: None)
    request = ExperimentRequest(
        check_orders(orders, "compare", also=(AS_IS,)),
        parse_workloads(workloads),
        [o for o in check_orders(simulate, "simulate", also=(AS_IS,)) if o != AS_IS] if names(simulate) else [],
        Path(output_dir),
        runs,
        cold_iops,
        threshold,
        near,
        cache_limit,
        None if work_dir is None else Path(work_dir),
        keep,
    )
    request.check()
    source = find_git_dir(repo)
    named(read_config(source).object_format)  # refuses a repository packorder cannot read before copying it
    git_path = check_program(git, "the git binary to run workloads with")
    specs = _resolved(request.workloads, source, say)
    if cold_iops is not None:
        throttle.check(request.work_dir or Path(tempfile.gettempdir()), cold_iops)
    out = request.output_dir
    made_out = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{out}: cannot write the report there ({e.strerror})") from None
    load_before = os.getloadavg()
    work = _work_dir(request.work_dir)
    limit = None
    try:
        if cold_iops is not None:
            limit = throttle.ReadLimit(work, cold_iops)
            say(f"cold runs read at most {cold_iops} times a second from disk {limit.device}")
        measured = _Measured(source, work, specs, git_path, started, load_before)
        result = _measure_and_report(request, measured, limit, progress, say, command)
    except BaseException:
        if made_out:  # a failed experiment leaves nothing behind
            shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        if limit is not None:
            limit.close()
        if not keep:
            with contextlib.suppress(OSError):
                shutil.rmtree(work)
    return result


@dataclass
class _Measured:
    """What the experiment measures: the repository, the copies' directory, the workloads,
    the Git that runs them, and when and under which load it started."""

    source: Path
    work: Path
    specs: list[WorkloadSpec]
    git_path: str
    started: float
    load_before: tuple[float, float, float]


def _measure_and_report(
    request: ExperimentRequest,
    on: _Measured,
    limit: throttle.ReadLimit | None,
    progress: ProgressCallback | None,
    say: Note,
    command: str | None,
) -> ExperimentResult:
    """Repack a copy in each order, trace, time and simulate every workload on it, and write
    the report."""
    from packorder.experiments.report import write_report
    from packorder.seek import api

    runs, threshold, near, out = request.runs, request.threshold, request.near, request.output_dir
    source, work, specs, git_path = on.source, on.work, on.specs, on.git_path
    order_runs, measurements = _measure(request, source, work, specs, git_path, progress, say)
    if runs:
        _time(order_runs, specs, runs, git_path, request.cache_limit, say, limit)
    say("simulating")
    reference, simulated, agreement = _simulate(
        order_runs, measurements, specs, request.simulate, threshold, near, progress
    )
    result = ExperimentResult(
        repository=source,
        output_dir=out,
        report=out / "report.md",
        plots=[],
        workloads=specs,
        orders=order_runs,
        reference=reference,
        simulated=simulated,
        agreement=agreement,
        runs=runs,
        cold_iops=request.cold_iops,
        threshold=threshold,
        git_version=api.git_version(git_path),
        load_before=on.load_before,
        load_after=os.getloadavg(),
        seconds=0.0,
        kept=work if request.keep else None,
        warnings=_warnings(order_runs, specs, runs, threshold),
    )
    result.seconds = time.perf_counter() - on.started
    try:
        write_report(result, command)
    except OSError as e:
        raise RepositoryError(f"cannot write the report in {out}: {e.strerror}") from None
    return result


@dataclass
class ExperimentRequest:
    """What an experiment was asked to do, names parsed; `check` refuses what cannot run
    before anything is copied."""

    orders: list[str]
    workloads: list[WorkloadSpec]
    simulate: list[str]  # orders simulated only
    output_dir: Path
    runs: int
    cold_iops: int | None
    threshold: int
    near: int
    cache_limit: int | None
    work_dir: Path | None
    keep: bool

    def check(self) -> None:
        if self.runs < 0:
            raise UsageError("{runs} takes a number of runs, 0 for none", params=("runs",))
        if self.cold_iops is not None and not self.runs:
            raise UsageError("{cold_iops} limits the cold runs: give {runs} too", params=("cold_iops", "runs"))
        if self.threshold <= 0 or self.near < 0:
            raise UsageError("the threshold must be positive and the near distance not negative")
        if self.output_dir.exists() and not self.output_dir.is_dir():
            raise UsageError(f"{self.output_dir}: not a directory")
        if self.work_dir is not None and self.work_dir.exists() and not self.work_dir.is_dir():
            raise UsageError(f"{self.work_dir}: not a directory")


def _resolved(wanted: list[WorkloadSpec], source: Path, say: Note) -> list[WorkloadSpec]:
    """Each workload with its PATH or tags checked, or chosen (and said)."""
    from packorder.seek import workloads as workloads_mod

    specs = []
    for wanted_spec in wanted:
        spec, choice = workloads_mod.resolve(wanted_spec, source)
        if choice is not None:
            say(f"{spec.name}: {choice.note}")
        specs.append(spec)
    return specs


def _work_dir(work_dir: Path | None) -> Path:
    """A new directory for the copies, in `work_dir` (else the temporary directory)."""
    try:
        if work_dir is not None:
            work_dir.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix="packorder-experiment-", dir=work_dir))
    except OSError as e:
        raise UsageError(f"{work_dir}: cannot make a work directory there ({e.strerror})") from None


def _measure(
    request: ExperimentRequest,
    source: Path,
    work: Path,
    specs: list[WorkloadSpec],
    git_path: str,
    progress: ProgressCallback | None,
    say: Note,
) -> tuple[list[OrderRun], dict[str, dict]]:
    """A copy repacked in each order, every workload traced on it."""
    from packorder.seek import api

    order_runs = []
    measurements: dict[str, dict] = {}
    for order in request.orders:
        run = _prepare(order, source, work, progress, bitmap=any(s.name in USES_BITMAP for s in specs))
        say(f"{order}: {run.pack_bytes:,} bytes in {run.packs} pack(s)")
        measurements[order] = {}
        for spec in specs:
            measured = api.measure(
                run.git_dir,
                spec,
                git=git_path,
                threshold=request.threshold,
                near=request.near,
                cache_limit=request.cache_limit,
                label=order,
                progress=progress,
            )
            measurements[order][spec.name] = measured
            run.results.append(measured.result)
        order_runs.append(run)
    return order_runs, measurements
