"""traces.keytable: a sorted key table grown piece by piece, its state rows moving with their keys."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from traces import keytable


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), max_size=30), max_size=8))
def test_positions_keep_keys_sorted_and_state_with_its_key(pieces):
    """Counting each piece's values into the state rows gives, per key, the count a dict gives; the keys
    are the sorted distinct values seen; a piece of known keys only is looked up without growing."""
    keys = np.zeros(0, np.uint64)
    counts = np.zeros(0, np.int64)
    pairs = np.zeros((0, 2), np.float64)  # a 2D state, as QueueStream keeps
    seen: dict[int, int] = {}
    for piece in pieces:
        values = np.array(piece, np.uint64)
        before = keys
        known = keytable.lookup(keys, values)
        keys, (counts, pairs), pos = keytable.positions(keys, values, (counts, pairs))
        if known is not None:
            assert keys is before and np.array_equal(pos, known)
        np.add.at(counts, pos, 1)
        np.add.at(pairs, (pos, 1), values.astype(np.float64))
        for v in piece:
            seen[v] = seen.get(v, 0) + 1
        assert [int(k) for k in keys] == sorted(seen)
        assert np.array_equal(keys[pos], values)
        assert [int(c) for c in counts] == [seen[k] for k in sorted(seen)]
        assert np.array_equal(pairs[:, 1], np.array([k * seen[k] for k in sorted(seen)], np.float64))
        assert counts.dtype == np.int64 and pairs.shape == (len(seen), 2)


def test_lookup_of_an_unknown_or_empty_table():
    keys = np.array([3, 7, 9], np.int64)
    assert keytable.lookup(keys, np.array([9, 3, 3], np.int64)).tolist() == [2, 0, 0]
    assert keytable.lookup(keys, np.array([7, 10], np.int64)) is None  # above the last key
    assert keytable.lookup(keys, np.array([1], np.int64)) is None  # below the first
    assert keytable.lookup(keys, np.array([8], np.int64)) is None  # between two
    assert keytable.lookup(np.zeros(0, np.int64), np.array([1], np.int64)) is None
    assert keytable.lookup(np.zeros(0, np.int64), np.zeros(0, np.int64)).shape == (0,)
