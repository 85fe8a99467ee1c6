"""The share of seeks under a threshold that `packorder seekstats REPO index-pack` would
measure, predicted from the packs' structure alone: each pack's second pass modelled by the
simulator's model of Git's index-pack (seek/ipmodel.py), on the packs as they are, and on the
pack a repack in the configured order would write (seek/simulator.py's plan, from the
objects in the order the packs store them) beside the packs it keeps.

index-pack is the one workload whose reads follow from the pack alone, so it is the one a
triage can predict without running anything; the other workloads need a recorded trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from packorder.format.layout import PackLayout
from packorder.gitcmd import Config
from packorder.seek import stats
from packorder.seek.api import DEFAULT_THRESHOLD
from packorder.seek.ipmodel import git_threads, index_pack_reads
from packorder.seek.simulator import plan
from packorder.settings import delta_base_cache_limit
from packorder.store.repository import Repository


def modelled_share(layouts: Sequence[PackLayout], config: Config, threshold: int = DEFAULT_THRESHOLD) -> float | None:
    """The share of index-pack's seeks under `threshold` over `layouts`, each pack indexed
    on its own as seekstats does (a seek is between two reads of one pack); None when there
    is no seek."""
    cache_limit = delta_base_cache_limit(config)
    threads = config.get_int("pack.threads", 0) or git_threads()
    offsets, packs = [], []
    for i, layout in enumerate(layouts):
        reads = index_pack_reads(layout, cache_limit, threads)
        offsets.append(layout.offsets[reads])
        packs.append(np.full(len(reads), i, dtype=np.int32))
    if not offsets:
        return None
    distances = stats.seek_distances(np.concatenate(packs), np.concatenate(offsets))
    return stats.share_below(distances, threshold)


def planned_layout(repo: Path | Repository, order: str) -> PackLayout:
    """The pack `packorder repack --order ORDER` would write (stored deltas reused), planned
    from the objects in the order the packs store them (walk/stored_order.py), not
    from Git's walk: milliseconds rather than seconds, within the error docs/fleet.md
    gives. An order that places objects by history (`history`, `interleaved`...) still
    walks it."""
    (planned,) = plan(repo, [order], stored=True)
    return planned.layout
