"""`packorder.fleet.repack`: triage a fleet and run the repacks as Dask tasks (triage too,
a task a batch of repositories), on a `LocalCluster` (one single-threaded worker process
per core by default) or on the cluster whose scheduler `scheduler` names, appending each
repository's record to the results file as its task finishes.

A worker that dies mid-task costs that task one retry: the local cluster is made with
`distributed.scheduler.allowed-failures` = 1, so Dask runs the task once more on another
worker and gives up (KilledWorker, recorded as failed) the second time. An existing cluster
keeps its own setting (Dask's default is 3). The repositories of the batch that an attempt
finished are not repacked again, nor recorded as failed (task.py keeps their records).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packorder.errors import RepositoryError
from packorder.fleet import cost as cost_mod
from packorder.fleet import run_record as results_mod
from packorder.fleet import selection, triage_cache
from packorder.fleet.discovery import discover
from packorder.fleet.task import TOPIC, kept_records, run_batch
from packorder.fleet.triage import Triage, by_benefit, triage_all
from packorder.native_call import core_errors

MIN_TIMEOUT = 300.0  # seconds: a repack is never stopped sooner than this
TIMEOUT_FACTOR = 20  # times the estimated time


@dataclass
class Counts:
    """Where a fleet run stands: what the progress line shows."""

    total: int
    done: int = 0
    failed: int = 0
    running: int = 0
    seconds_left: float = 0.0  # estimated, at the pace measured so far


@dataclass
class FleetRun:
    results: Path
    repositories: int  # found
    resumed: int  # finished by an earlier run, not run again
    problems: list[str]
    done: int = 0
    failed: int = 0
    skipped: int = 0
    tasks: int = 0
    workers: int = 0
    dashboard: str | None = None
    seconds: float = 0.0  # in all
    triage_seconds: float = 0.0  # on the cluster
    task_seconds: float = 0.0  # from the first submission to the last result


def _timeout(t: Triage, timeout: float | None) -> float:
    return timeout if timeout is not None else max(MIN_TIMEOUT, TIMEOUT_FACTOR * t.estimated_seconds)


def _prediction(t: Triage) -> dict[str, Any]:
    return {
        "share_before": t.share_now,
        "share_after": t.share_after,
        "estimated_seconds": t.estimated_seconds,
        "estimated_peak_bytes": t.estimated_peak_bytes,
    }


@contextlib.contextmanager
def connect(scheduler: str | None, workers: int | None) -> Iterator[Any]:
    """A Dask client: to `scheduler`, else to a new LocalCluster, closed on the way out."""
    import dask
    from distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler)
        except Exception as e:
            raise RepositoryError(f"cannot reach the Dask scheduler at {scheduler}: {_first_line(e)}") from None
        with client:
            yield client
        return
    # The workers' scratch space (Dask leaves its lock files there) is this run's, and goes.
    scratch = tempfile.mkdtemp(prefix="packorder-fleet-")
    try:
        with dask.config.set({"distributed.scheduler.allowed-failures": 1, "temporary-directory": scratch}):
            try:
                cluster = LocalCluster(
                    n_workers=workers or os.cpu_count() or 1,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",
                    silence_logs=logging.ERROR,
                    local_directory=scratch,
                )
            except Exception as e:
                raise RepositoryError(f"cannot start the local Dask cluster: {_first_line(e)}") from None
            with cluster, Client(cluster) as client:
                yield client
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def dashboard_of(client: Any) -> str | None:
    """The dashboard's address, when the scheduler serves one (it needs bokeh)."""
    services = client.scheduler_info().get("services", {})
    return client.dashboard_link if "dashboard" in services else None


@core_errors
def repack(
    roots: Iterable[str | os.PathLike[str]] = (),
    *,
    results: str | os.PathLike[str],
    paths: Iterable[str | os.PathLike[str]] = (),
    list_file: str | os.PathLike[str] | None = None,
    resume: bool = False,
    scheduler: str | None = None,
    workers: int | None = None,
    order: str | None = None,
    min_gain: float | None = None,
    max_hours: float | None = None,
    budget_hours: float | None = None,
    batch_seconds: float = selection.DEFAULT_BATCH_SECONDS,
    timeout: float | None = None,
    triage_cache_file: str | os.PathLike[str] | None = None,
    repack_args: Iterable[str] = (),
    progress: Callable[[Counts], None] | None = None,
    announce: Callable[[str], None] | None = None,
) -> FleetRun:
    """Triage the fleet on the cluster, choose (`min_gain` points, `max_hours` a repack,
    `budget_hours` in all), and repack what was chosen on the cluster. Every repository
    chosen, skipped or broken gets a record in `results` (JSON lines); with `resume`, those
    a previous run of that file finished are neither triaged nor run. `announce` is told the
    dashboard's address. With `triage_cache_file`, unchanged repositories' triage is taken
    from it (triage_cache.py) and the others added to it."""
    started = time.perf_counter()
    results_path = Path(results)
    found = discover(paths, list_file, roots)
    finished = results_mod.finished(results_path) if resume else set()
    todo = [p for p in found.repositories if str(p) not in finished]
    counts = Counts(total=0)
    run = FleetRun(results_path, len(found.repositories), len(found.repositories) - len(todo), found.problems)
    if todo:
        with connect(scheduler, workers) as client:
            run.dashboard = dashboard_of(client)
            if run.dashboard is not None and announce is not None:
                announce(run.dashboard)
            run.workers = len(client.scheduler_info()["workers"])
            triaged = time.perf_counter()
            cache = triage_cache.load(Path(triage_cache_file)) if triage_cache_file is not None else None
            fleet = triage_on(client, todo, order, run.workers, cache)
            if triage_cache_file is not None:
                triage_cache.save(Path(triage_cache_file), fleet)
            run.triage_seconds = time.perf_counter() - triaged
            chosen = selection.choose(fleet, min_gain, max_hours, budget_hours)
            _record_unrun(results_path, chosen)
            counts.total = len(chosen.chosen)
            groups = selection.batches(chosen.chosen, batch_seconds, run.workers)
            submitted = time.perf_counter()
            _run(client, groups, results_path, timeout, tuple(repack_args), counts, run.workers, progress)
            run.task_seconds = time.perf_counter() - submitted
            run.tasks, run.skipped = len(groups), len(chosen.skipped)
            run.failed = len(chosen.broken)
    run.done, run.failed = counts.done, run.failed + counts.failed
    run.seconds = time.perf_counter() - started
    return run


def triage_on(
    client: Any,
    git_dirs: list[Path],
    order: str | None,
    workers: int,
    cache: dict[str, dict[str, Any]] | None = None,
) -> list[Triage]:
    """Every repository's triage, as tasks of the cluster (TASKS_PER_WORKER a worker), by
    expected benefit; with a `cache` (triage_cache.load), unchanged repositories are taken
    from it."""
    size = max(1, math.ceil(len(git_dirs) / (selection.TASKS_PER_WORKER * max(1, workers))))
    chunks = [git_dirs[i : i + size] for i in range(0, len(git_dirs), size)]
    futures = [
        client.submit(triage_all, chunk, order, triage_cache.known_of(cache, chunk), pure=False) for chunk in chunks
    ]
    return by_benefit(t for part in client.gather(futures) for t in part)


def _record_unrun(results_path: Path, chosen: selection.Selection) -> None:
    """The records of the repositories not run: broken at triage (failed), or left out."""
    results_mod.append(
        results_path,
        [{"path": str(t.path), "order": t.order, "status": results_mod.FAILED, "error": t.error} for t in chosen.broken]
        + [
            {"path": str(t.path), "order": t.order, "status": results_mod.SKIPPED, "error": None, "reason": why}
            | _prediction(t)
            for t, why in chosen.skipped
        ],
    )


def batch_records(client: Any, future: Any, batch: list[Triage]) -> list[dict[str, Any]]:
    """The records of a finished task, one a repository of `batch`. When the task failed
    for good (KilledWorker after the retry, or its own failure), the records its attempts
    kept on the scheduler (task.py), and a failed record for each other repository."""
    try:
        return future.result()
    except Exception as e:
        kept = kept_records(client, future.key)
        failed = {"status": results_mod.FAILED, "error": f"task failed: {e!r}"}
        return [kept.get(str(t.path)) or {"path": str(t.path), "order": t.order, **failed} for t in batch]


def _run(
    client: Any,
    groups: list[list[Triage]],
    results_path: Path,
    timeout: float | None,
    repack_args: tuple[str, ...],
    counts: Counts,
    n_workers: int,
    progress: Callable[[Counts], None] | None,
) -> None:
    from distributed import as_completed

    starts: Counter[str] = Counter()
    lock = threading.Lock()

    def started(event: tuple[float, dict[str, Any]]) -> None:
        with lock:
            starts[event[1]["path"]] += 1

    client.subscribe_topic(TOPIC, started)
    by_key = {}
    for batch in groups:
        items = [
            {
                "path": str(t.path),
                "order": t.order,
                "timeout": _timeout(t, timeout),
                "address_space": cost_mod.address_space_limit(
                    cost_mod.Cost(t.estimated_seconds, t.estimated_peak_bytes)
                ),
            }
            for t in batch
        ]
        future = client.submit(run_batch, items, repack_args, pure=False)
        by_key[future.key] = (future, batch)
    estimated_left = sum(t.estimated_seconds for batch in groups for t in batch)
    estimated_done = measured_done = 0.0
    try:
        for future in as_completed([f for f, _ in by_key.values()]):
            batch = by_key[future.key][1]
            records = batch_records(client, future, batch)
            with lock:
                attempts = {str(t.path): max(1, starts[str(t.path)]) for t in batch}
            for t, record in zip(batch, records, strict=True):
                record.update(_prediction(t), attempts=attempts[record["path"]], finished=time.time())
            results_mod.append(results_path, records)
            counts.done += sum(r["status"] == results_mod.DONE for r in records)
            counts.failed += sum(r["status"] == results_mod.FAILED for r in records)
            estimated = sum(t.estimated_seconds for t in batch)
            estimated_left -= estimated
            estimated_done += estimated
            measured_done += sum(r.get("seconds") or 0.0 for r in records)
            if progress is not None:
                pace = measured_done / estimated_done if estimated_done else 1.0
                counts.running = min(n_workers, counts.total - counts.done - counts.failed)
                # What is left sums floats taken away one batch at a time: at the end it is
                # a rounding error, possibly below zero ("about -0 min left").
                counts.seconds_left = max(0.0, estimated_left * pace / max(1, n_workers))
                progress(counts)
    finally:
        client.unsubscribe_topic(TOPIC)
