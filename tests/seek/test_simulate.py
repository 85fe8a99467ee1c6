"""The simulator (`seekstats --simulate-order`): the index-pack model against Git's own reads,
re-laid traces against real repacks in the simulated order, and the command line.

Seeks are judged at `layered.THRESHOLD` (16 KiB): the generated repository is small, and at
that scale its commit region is as far from its trees as a real repository's is at 2 MiB.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers.gitrepo import git, git_env
from helpers.layered import THRESHOLD, build

import packorder
from packorder.format import layout as layout_mod
from packorder.format.layout import PackLayout
from packorder.orders import permutations as order_mod
from packorder.seek import api
from packorder.seek.ipmodel import git_threads, index_pack_reads
from packorder.seek.simulator import plan, relay, simulate
from packorder.seek.trace import REQUESTS, Trace

WORKLOADS = ["log", "log-path", "blame", "pack-recent", "index-pack"]
needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")


@pytest.fixture(scope="module", autouse=True)
def scaled_history_window() -> Iterator[None]:
    """History's windows scaled as the threshold is: at 2 MiB on a real repository a window
    keeps every commit within reach of its trees, here that reach is THRESHOLD."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(order_mod, "HISTORY_WINDOW_BYTES", THRESHOLD)
        yield


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The generated repository repacked in recency and in history order (deltas reused)."""
    source = build(tmp_path_factory.mktemp("sim") / "source")
    out = {}
    for order in ("recency", "history"):
        copy = tmp_path_factory.mktemp(order) / "repo"
        shutil.copytree(source.path, copy)
        packorder.repack(copy, order=order, window=0, verify="crc", write_bitmap=False)
        out[order] = copy
    return out


def strace_reads(pack: Path, tmp: Path, threads: int) -> np.ndarray:
    """The entries `git index-pack` reads in its second pass, from strace (the trace source)."""
    from packorder.gitcmd import Config
    from packorder.seek import pread, workloads

    layout = layout_mod.load(pack)
    config = Config({"pack.threads": str(threads)})
    command = workloads._index_pack_command(pack, tmp, "git", config, 96 << 20)
    recording = pread.record(command, pack, layout)
    assert recording.trace.positions is not None
    return recording.trace.positions


@needs_strace
def test_the_model_reads_what_git_index_pack_reads(repos: dict[str, Path], tmp_path: Path) -> None:
    for order, repo in repos.items():
        (pack,) = (repo / ".git" / "objects" / "pack").glob("*.pack")
        layout = layout_mod.load(pack)
        got = index_pack_reads(layout, 96 << 20, threads=1)
        want = strace_reads(pack, tmp_path, threads=1)
        assert len(want) > layout.count / 2
        assert got.tolist() == want.tolist(), order


@needs_strace
def test_the_model_handles_ref_deltas_and_a_small_cache(packs: dict[str, Path], tmp_path: Path) -> None:
    # REF_DELTA children come before OFS ones; with a tiny cache, freed bases are read again.
    for shape in ("ref", "deep"):
        pack = tmp_path / shape / packs[shape].name
        pack.parent.mkdir()
        shutil.copy(packs[shape], pack)
        git(None, "index-pack", str(pack))
        layout = layout_mod.load(pack)
        for limit in (96 << 20, 4096):
            command_tmp = tmp_path / f"{shape}-{limit}"
            command_tmp.mkdir()
            from packorder.gitcmd import Config
            from packorder.seek import pread, workloads

            config = Config({"pack.threads": "1"})
            command = workloads._index_pack_command(pack, command_tmp, "git", config, limit)
            want = pread.record(command, pack, layout).trace.positions
            assert want is not None
            got = index_pack_reads(layout, limit, threads=1)
            assert got.tolist() == want.tolist(), (shape, limit)


def test_threads_read_every_delta(repos: dict[str, Path]) -> None:
    (pack,) = (repos["history"] / ".git" / "objects" / "pack").glob("*.pack")
    layout = layout_mod.load(pack)
    one = index_pack_reads(layout, 96 << 20, threads=1)
    for threads in (2, 3):
        many = index_pack_reads(layout, 96 << 20, threads=threads)
        assert set(np.flatnonzero(layout.is_delta)) <= set(many.tolist())
        assert set(many.tolist()) == set(one.tolist())
    assert git_threads(2) == 2 and git_threads(4) == 3 and git_threads(8) == 4 and git_threads(64) == 20
    with pytest.raises(ValueError):
        index_pack_reads(layout, threads=0)


def shares(stats: list, view: str) -> float:
    (found,) = [v for v in stats if v.view == view]
    assert found.below_threshold is not None
    return found.below_threshold


@pytest.mark.parametrize("workload", WORKLOADS)
def test_simulated_history_agrees_with_a_real_history_repack(repos: dict[str, Path], workload: str) -> None:
    simulation = simulate(repos["recency"], workload, orders=["recency", "history"], threshold=THRESHOLD)
    measured = api.seekstats(repos["history"], workload, threshold=THRESHOLD)
    by_order = {s.order: s for s in simulation.simulated}
    for view in [v.view for v in measured.views]:
        assert abs(shares(by_order["history"].views, view) - shares(measured.views, view)) <= 0.01, view
        # Simulating the repository's own order gives back its measurement.
        again = shares(by_order["recency"].views, view)
        assert abs(again - shares(simulation.measured.views, view)) <= 0.01, view
        got = by_order["history"].view(view)
        want = measured.view(view)
        assert got is not None and want is not None and got.accesses == want.accesses


def test_history_seeks_less_than_recency_for_log_path_and_blame(repos: dict[str, Path]) -> None:
    # The direction, measured on real repacks of the same objects.
    for workload in ("log-path", "blame"):
        for view in ("raw", "expanded"):
            recency = shares(api.seekstats(repos["recency"], workload, threshold=THRESHOLD).views, view)
            history = shares(api.seekstats(repos["history"], workload, threshold=THRESHOLD).views, view)
            assert history > recency, (workload, view, history, recency)


def test_planned_pack_is_the_real_one(repos: dict[str, Path]) -> None:
    (planned,) = plan(repos["recency"], ["history"])
    (pack,) = (repos["history"] / ".git" / "objects" / "pack").glob("*.pack")
    real = layout_mod.load(pack)
    assert np.array_equal(planned.layout.oids, real.oids)
    assert np.array_equal(planned.layout.base, real.base)
    # Entry sizes match but for OFS_DELTA distance fields, so sizes agree closely.
    assert abs(planned.pack_bytes - pack.stat().st_size) <= real.count
    assert np.array_equal(planned.layout.object_sizes, real.object_sizes)


def fake_layout(name: str, oids: list[int], sizes: list[int]) -> PackLayout:
    ids = np.zeros((len(oids), 20), dtype=np.uint8)
    ids[:, 19] = oids
    offsets = (12 + np.concatenate([[0], np.cumsum(sizes)[:-1]])).astype(np.uint64)
    n = len(oids)
    return PackLayout(
        Path(name),
        offsets,
        offsets + np.array(sizes, dtype=np.uint64),
        np.full(n, 3, dtype=np.uint8),
        np.array(sizes, dtype=np.uint64),
        np.array(sizes, dtype=np.uint64),
        np.zeros(n, dtype=np.uint8),
        np.full(n, -1, dtype=np.int64),
        ids,
        b"",
    )


def test_relay_moves_requests_and_keeps_what_the_plan_lacks() -> None:
    measured = [fake_layout("a.pack", [1, 2, 3], [10, 20, 30]), fake_layout("keep.pack", [9], [5])]
    planned = fake_layout("planned", [3, 1, 2], [30, 10, 20])
    trace = Trace(
        (Path("a.pack"), Path("keep.pack")),
        np.array([0, 1, 0, 0], dtype=np.int32),
        np.array([12, 12, 42, 22], dtype=np.uint64),
        REQUESTS,
        "test",
    )
    out, layouts = relay(trace, measured, planned)
    assert [layout.pack_path for layout in layouts] == [Path("planned"), Path("keep.pack")]
    assert out.pack_index.tolist() == [0, 1, 0, 0]
    assert out.positions is not None and out.positions.tolist() == [1, 0, 0, 2]
    assert out.offsets.tolist() == [42, 12, 12, 52]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "packorder", "seekstats", *args], capture_output=True, text=True, env=git_env()
    )


def test_cli_shows_simulated_orders_beside_the_measurement(repos: dict[str, Path], tmp_path: Path) -> None:
    repo = str(repos["recency"])
    proc = run_cli(repo, "-w", "log-path", "--threshold", "16k", "--simulate-order", "history,recency", "-q")
    assert proc.returncode == 0, proc.stderr
    header = next(line for line in proc.stdout.splitlines() if "(simulated)" in line)
    assert header.split() == ["repo", "history", "(simulated)", "recency", "(simulated)"]
    assert "Less than 16KiB seek" in proc.stdout and "re-laid" in proc.stdout

    proc = run_cli(repo, "-w", "index-pack", "--simulate-order", "history", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [s["order"] for s in data["simulated"]] == ["history"]
    assert "model of git index-pack" in data["simulated"][0]["source"]
    # One thread (the repository's pack.threads), the same deltas: as many reads in either order.
    assert data["measured"][0]["views"][0]["accesses"] == data["simulated"][0]["views"][0]["accesses"]

    proc = run_cli(repo, "-w", "log", "--simulate-order", "history", "--csv", "-q", "--compare", str(repos["history"]))
    assert proc.returncode == 0, proc.stderr
    kinds = [line.split(",")[1] for line in proc.stdout.splitlines()[1:]]
    assert kinds == ["measured"] * 4 + ["simulated"] * 2

    pytest.importorskip("matplotlib")
    png = tmp_path / "sim.png"
    proc = run_cli(repo, "-w", "log", "--simulate-order", "history", "--plot", str(png), "-q")
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--simulate-order", "nosuch"], "unknown order 'nosuch'"),
        (["--simulate-order", ","], "--simulate-order needs an order name"),
    ],
)
def test_cli_bad_simulation_is_one_line(repos: dict[str, Path], args: list[str], message: str) -> None:
    proc = run_cli(str(repos["recency"]), *args)
    assert proc.returncode == 129
    line = proc.stderr.strip().splitlines()[0]
    assert line.startswith(f"error: {message}")


def test_library_simulation_reuses_plans(repos: dict[str, Path]) -> None:
    planned = plan(repos["recency"], ["history"])
    simulation = simulate(repos["recency"], "log", orders=["history"], planned=planned, views=("raw",))
    assert simulation.plan_seconds < 1 and [v.view for v in simulation.simulated[0].views] == ["raw"]
    with pytest.raises(packorder.UsageError, match="no planned layout"):
        simulate(repos["recency"], "log", orders=["recency"], planned=planned)
