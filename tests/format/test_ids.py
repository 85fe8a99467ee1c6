"""Sorting and looking up object ids natively, checked against numpy's 20-byte strings."""

from __future__ import annotations

import numpy as np
import pytest

from packorder.store.object_ids import id_order, keys, lookup, sort_keys


def _ids(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 256, size=(n, 20), dtype=np.uint8)
    ids[: n // 3, :12] = ids[0, :12]  # a third share their first 12 bytes
    ids[n // 3 : n // 2] = ids[n // 2 : n // 2 + (n // 2 - n // 3)]  # and some are repeated
    return ids


def test_id_order_is_numpys_stable_argsort() -> None:
    k = keys(_ids(1, 5000))
    assert np.array_equal(id_order(k), np.argsort(k, kind="stable"))
    assert np.array_equal(sort_keys(k), np.sort(k))
    assert len(id_order(k[:0])) == 0


def test_lookup_finds_the_first_copy_or_minus_one() -> None:
    have = np.sort(keys(_ids(2, 4000)))
    want = np.concatenate([have[::7], keys(_ids(3, 500))])
    at = lookup(have, want)
    first = np.searchsorted(have, want)
    expect = np.where((first < len(have)) & (have[np.minimum(first, len(have) - 1)] == want), first, -1)
    assert np.array_equal(at, expect)
    assert (at[: len(have[::7])] >= 0).all()
    at[0] = 5  # a writable array, as numpy's would be
    assert (lookup(have[:0], want) == -1).all()


def test_lookup_refuses_unsorted_ids() -> None:
    k = keys(_ids(4, 100))
    with pytest.raises(ValueError, match="not sorted"):
        lookup(k, k)
