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

    Each batch gives at most one group: the rows held back from the batches before, joined (copied) to its
    rows up to its last cut; the rows after that cut are held for the next. A batch that starts at a cut with
    nothing held is passed on as a view. (Until 4 Dec 2026 the held rows went out as a group of their own,
    a one-block group before each batch's: twice the groups, each staged and fed to every hierarchy.)
    """
    held: Trace | None = None
    top = -1  # highest block emitted
    for b in batches:
        n = len(b)
        if n == 0:
            continue
        cta = b.cta
        h_max = int(held.cta.max()) if held is not None and len(held) else -1
        if top >= 0:
            low = cta <= top
            if low.any():
                i = int(np.flatnonzero(low)[0])
                before = max(top, h_max, int(cta[:i].max()) if i else -1)  # the highest block of the rows before
                raise ValueError(f"row {b.start + i}: block {int(cta[i])} after block {before}; "
                                 "streamed staging needs the rows in block order")  # fmt: skip
        prefix_max = np.maximum(np.maximum.accumulate(cta), h_max)
        suffix_min = np.minimum.accumulate(cta[::-1])[::-1]
        # a cut before row i (0 < i < n) when every row before it (held ones too) has a lower block
        cuts = np.flatnonzero(prefix_max[:-1] < suffix_min[1:]) + 1
        if held is not None and h_max < suffix_min[0]:
            cuts = np.concatenate(([0], cuts))
        if cuts.size == 0:
            held = _join(held, b)
            continue
        i2 = int(cuts[-1])
        out = _join(held, _part(b, 0, i2))
        if len(out):
            top = max(top, int(out.cta.max()))
            yield out
        held = _part(b, i2, n)
    if held is not None and len(held):
        yield held


__all__ = ["block_groups"]
