"""What a Dask worker runs: one task repacks a batch of repositories, one after the other,
each in its own process (isolation.py), and returns their records.

Each repository's start is logged as an event on the scheduler (topic `packorder-fleet`),
so the client sees a repository started twice when its worker died and Dask ran the task
again on another one.
"""

from __future__ import annotations

from typing import Any

from packorder.fleet.isolation import repack_one

TOPIC = "packorder-fleet"


def run_batch(items: list[dict[str, Any]], extra_args: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    from distributed import get_worker

    worker = get_worker()
    out = []
    for item in items:
        worker.log_event(TOPIC, {"path": item["path"], "worker": worker.address})
        record = repack_one(item["path"], item["order"], item["timeout"], item["address_space"], extra_args)
        record["worker"] = worker.address
        out.append(record)
    return out
