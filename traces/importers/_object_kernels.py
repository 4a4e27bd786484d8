"""Numba kernels of object inference (see ``objects.py``)."""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def row_bounds(mask, addr, width, lo, hi):
    """Per row: lowest active address and one past the highest active byte (0, 0 if no lane is active)."""
    for i in range(mask.shape[0]):
        m = mask[i]
        w = np.uint64(width[i])
        a_lo = np.uint64(0xFFFFFFFFFFFFFFFF)
        a_hi = np.uint64(0)
        for lane in range(32):
            if (m >> lane) & 1:
                a = addr[i, lane]
                if a < a_lo:
                    a_lo = a
                if a + w > a_hi:
                    a_hi = a + w
        if a_hi == 0:
            a_lo = np.uint64(0)
        lo[i] = a_lo
        hi[i] = a_hi


@nb.njit(cache=True, nogil=True)
def pc_ranges(key, lo, hi, weight, min_gap, factor, out_lo, out_hi):
    """Split each key's sorted row intervals into ranges at unusually large gaps.

    Rows are sorted by (key, lo); ``weight``: how many identical rows each stands for (1 for each
    row of a trace; more where identical rows were counted once, ``objects.infer_objects``).
    Within a key, the gap before a row is its lo minus the highest end seen so far in the key
    (0 where they overlap: a row's copies after the first all have gap 0). A gap larger than
    both ``min_gap`` and ``factor`` times the median gap of that key (``np.median``'s: the middle
    one, or the mean of the middle two) starts a new range. Returns the number of ranges written
    to ``out_lo``/``out_hi``.
    """
    n = key.shape[0]
    k = 0
    s = 0
    gaps = np.empty(n, dtype=np.uint64)
    while s < n:
        e = s + 1
        while e < n and key[e] == key[s]:
            e += 1
        # gaps of this key (overlaps and touching intervals count as 0): `zeros` for the copies, the rest in gaps
        g = 0
        zeros = np.int64(weight[s]) - 1
        run = hi[s]
        for j in range(s + 1, e):
            gaps[g] = lo[j] - run if lo[j] > run else np.uint64(0)
            g += 1
            zeros += np.int64(weight[j]) - 1
            if hi[j] > run:
                run = hi[j]
        thr = np.uint64(min_gap)
        m = g + zeros
        if m > 0:
            srt = np.sort(gaps[:g])
            a = (m - 1) // 2
            b = m // 2
            ga = 0.0 if a < zeros else np.float64(srt[a - zeros])
            gb = 0.0 if b < zeros else np.float64(srt[b - zeros])
            med = ga if a == b else (ga + gb) / 2.0
            t = med * factor
            if t > thr:
                thr = np.uint64(t)
        cur_lo = lo[s]
        cur_hi = hi[s]
        for j in range(s + 1, e):
            if lo[j] > cur_hi and lo[j] - cur_hi > thr:
                out_lo[k] = cur_lo
                out_hi[k] = cur_hi
                k += 1
                cur_lo = lo[j]
                cur_hi = hi[j]
            elif hi[j] > cur_hi:
                cur_hi = hi[j]
        out_lo[k] = cur_lo
        out_hi[k] = cur_hi
        k += 1
        s = e
    return k


@nb.njit(cache=True, nogil=True)
def merge_overlapping(lo, hi, out_lo, out_hi):
    """Union of intervals sorted by lo that overlap (touching intervals stay apart)."""
    n = lo.shape[0]
    if n == 0:
        return 0
    k = 0
    cur_lo = lo[0]
    cur_hi = hi[0]
    for j in range(1, n):
        if lo[j] < cur_hi:
            if hi[j] > cur_hi:
                cur_hi = hi[j]
        else:
            out_lo[k] = cur_lo
            out_hi[k] = cur_hi
            k += 1
            cur_lo = lo[j]
            cur_hi = hi[j]
    out_lo[k] = cur_lo
    out_hi[k] = cur_hi
    return k + 1
