"""A sorted table of keys that grows as a stream brings new ones, with a state row per key.

The streamed reductions (``traces.context.ContextStream``'s pcs, ``placement.queuing.QueueStream``'s
DRAM banks) keep their keys sorted so that results come out in key order, and look each piece's
values up in them. After the first pieces every value is a known key, so a lookup first tries one
binary search per value and checks it; only a piece with a new key pays for ``np.unique`` and
re-laying the state.
"""

from __future__ import annotations

import numpy as np


def lookup(keys: np.ndarray, values: np.ndarray) -> np.ndarray | None:
    """Positions of ``values`` in the sorted ``keys`` when every value is one of them, else None."""
    if keys.shape[0] == 0:
        return None if values.shape[0] else np.zeros(0, np.int64)
    pos = np.minimum(np.searchsorted(keys, values), keys.shape[0] - 1)
    return pos if bool(np.array_equal(keys[pos], values)) else None


def positions(keys: np.ndarray, values: np.ndarray, states: tuple[np.ndarray, ...]):
    """(keys, states, positions of ``values``): the table with the new values' keys inserted in order and
    each state array's rows moved with their keys (new rows zero), when ``values`` bring new keys."""
    pos = lookup(keys, values)
    if pos is not None:
        return keys, states, pos
    new = np.setdiff1d(np.unique(values), keys, assume_unique=True)
    grown = np.union1d(keys, new)
    at = np.searchsorted(grown, keys)
    moved = []
    for s in states:
        t = np.zeros((grown.shape[0],) + s.shape[1:], s.dtype)
        t[at] = s
        moved.append(t)
    return grown, tuple(moved), np.searchsorted(grown, values)


__all__ = ["lookup", "positions"]
