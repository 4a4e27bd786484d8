"""Groups of whole blocks from a stream of row groups.

Per-block work (staging a block's tiles, its footprint per window) gives the whole
trace's result group by group only when no block is split between groups and the
groups come in block order. ``block_groups`` re-cuts a stream of batches (any
sizes) at block boundaries: it holds back the rows from the last point where every
earlier row has a lower block than every later one, and emits the rest. Rows inside
a group may come in any order (the per-block code sorts them by (cta, warp, seq)); a
row whose block is below a block already emitted is a ValueError naming the row.
"""

from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np

from .io import Trace
from .schema import COLUMNS


def _join(a: Trace | None, b: Trace) -> Trace:
    if a is None or len(a) == 0:
        return b
    cols = {c: np.concatenate((getattr(a, c), getattr(b, c))) for c in COLUMNS}
    return Trace(**cols, info=b.info, start=a.start)


def _part(t: Trace, lo: int, hi: int) -> Trace:
    return Trace(**{c: getattr(t, c)[lo:hi] for c in COLUMNS}, info=t.info, start=t.start + lo)


def block_groups(batches: Iterable[Trace]) -> Iterator[Trace]:
    """The rows of ``batches`` again, cut so that each group holds whole blocks, in block order.

    Only the rows of a block split between two batches are copied (joined); the rest of
    a batch is passed on as views of it.
    """
    held: Trace | None = None
    top = -1  # highest block emitted
    for b in batches:
        n = len(b)
        if n == 0:
            continue
        cta = b.cta
        if top >= 0:
            low = cta <= top
            if low.any():
                i = int(np.flatnonzero(low)[0])
                raise ValueError(f"row {b.start + i}: block {int(cta[i])} after block {top}; "
                                 "streamed staging needs the rows in block order")  # fmt: skip
        h_max = int(held.cta.max()) if held is not None else -1
        prefix_max = np.maximum(np.maximum.accumulate(cta), h_max)
        suffix_min = np.minimum.accumulate(cta[::-1])[::-1]
        # a cut before row i (0 < i < n) when every row before it (held ones too) has a lower block
        cuts = np.flatnonzero(prefix_max[:-1] < suffix_min[1:]) + 1
        if held is not None and h_max < suffix_min[0]:
            cuts = np.concatenate(([0], cuts))
        if cuts.size == 0:
            held = _join(held, b)
            continue
        i1, i2 = int(cuts[0]), int(cuts[-1])
        first = _join(held, _part(b, 0, i1)) if held is not None else _part(b, 0, i1)
        for out in (first, _part(b, i1, i2)):
            if len(out):
                top = max(top, int(out.cta.max()))
                yield out
        held = _part(b, i2, n)
    if held is not None and len(held):
        yield held


__all__ = ["block_groups"]
