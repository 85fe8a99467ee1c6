"""What a Dask worker runs: one task repacks a batch of repositories, one after the other,
each in its own process (isolation.py), and returns their records.

Each repository's start is logged as an event on the scheduler (topic `packorder-fleet`),
so the client sees a repository started twice when its worker died and Dask ran the task
again on another one.

Each record is also kept on the scheduler as soon as its repack ends, under the task's key
(`Client.set_metadata`; the scheduler drops it when it forgets the task): a task that Dask
runs again after its worker died returns the records its dead attempt kept instead of
repacking those repositories again, and the client recovers them from a task that failed
for good.
"""

from __future__ import annotations

from typing import Any

from packorder.fleet.isolation import repack_one
from packorder.jsonable import to_jsonable

TOPIC = "packorder-fleet"


def run_batch(items: list[dict[str, Any]], extra_args: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    from distributed import get_client, get_worker

    worker = get_worker()
    client = get_client()
    key = worker.get_current_task()  # the same when Dask runs the task again
    kept = kept_records(client, key)
    out = []
    for item in items:
        record = kept.get(item["path"])
        if record is None:
            worker.log_event(TOPIC, {"path": item["path"], "worker": worker.address})
            record = repack_one(item["path"], item["order"], item["timeout"], item["address_space"], extra_args)
            record["worker"] = worker.address
            client.set_metadata([key, item["path"]], to_jsonable(record))
        out.append(record)
    return out


def kept_records(client: Any, key: Any) -> dict[str, dict[str, Any]]:
    """The records the task `key` kept on the scheduler (by path) in its attempts so far."""
    kept = client.get_metadata([key], default=None)
    return kept if isinstance(kept, dict) else {}
