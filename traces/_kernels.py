"""numba kernels of the traces package. They take typed arrays, never raise, and
report the first problem as a code; the wrappers in ``io.py`` turn codes into
messages."""

from __future__ import annotations

import numba as nb
import numpy as np

# Problem codes returned by `check_rows` (0 = fine).
OK = 0
BAD_WIDTH = 1
BAD_OP = 2
BAD_SPACE = 3
BAD_OBJ = 4
BAD_CTA = 5
BAD_WARP = 6
BAD_SEQ = 7
INACTIVE_ADDR = 8
OUTSIDE_OBJ = 9


@nb.njit(cache=True, nogil=True)
def check_rows(cta, warp, seq, op, space, width, mask, addr, obj, n_ctas, warps_per_block, obj_lo, obj_hi, last_seq):
    """Check rows against the trace contract; return (code, row, lane or previous seq).

    ``obj_lo``/``obj_hi`` are indexed by object id (hi == 0 marks an id with no
    object). ``last_seq`` (n_ctas * warps_per_block, initialised to -1) carries the
    last seq of each warp across batches and is updated in place.
    """
    n = cta.shape[0]
    n_ids = obj_lo.shape[0]
    for i in range(n):
        w = width[i]
        if w != 1 and w != 2 and w != 4 and w != 8 and w != 16:
            return BAD_WIDTH, i, 0
        if op[i] < 0 or op[i] > 3:
            return BAD_OP, i, 0
        if space[i] < 0 or space[i] > 6:
            return BAD_SPACE, i, 0
        o = obj[i]
        if o < -1 or o >= n_ids or (o >= 0 and obj_hi[o] == 0):
            return BAD_OBJ, i, 0
        c = cta[i]
        if c < 0 or c >= n_ctas:
            return BAD_CTA, i, 0
        wp = warp[i]
        if wp < 0 or wp >= warps_per_block:
            return BAD_WARP, i, 0
        k = np.int64(c) * warps_per_block + wp
        if seq[i] <= last_seq[k]:
            return BAD_SEQ, i, last_seq[k]
        last_seq[k] = seq[i]
        m = mask[i]
        for lane in range(32):
            a = addr[i, lane]
            if (m >> lane) & 1:
                if o >= 0 and (a < obj_lo[o] or a + w > obj_hi[o]):
                    return OUTSIDE_OBJ, i, lane
            elif a != 0:
                return INACTIVE_ADDR, i, lane
    return OK, -1, 0


@nb.njit(cache=True, nogil=True)
def mark_touched(obj, mask, addr, width, obj_base, obj_offset, bits):
    """Set one bit per byte touched by an active lane, objects laid end to end.

    ``obj_offset[o]`` is the bit index of object o's first byte in ``bits``
    (a uint8 array, eight bytes of the objects per element).
    """
    n = obj.shape[0]
    for i in range(n):
        o = obj[i]
        if o < 0:
            continue
        m = mask[i]
        w = width[i]
        off = obj_offset[o] - obj_base[o]
        for lane in range(32):
            if (m >> lane) & 1:
                a = np.int64(addr[i, lane]) + off
                for b in range(w):
                    k = a + b
                    bits[k >> 3] |= np.uint8(1 << (k & 7))


@nb.njit(cache=True, nogil=True)
def count_bits(bits, lo, hi):
    """Number of set bits with index in [lo, hi)."""
    c = 0
    for k in range(lo, hi):
        c += (bits[k >> 3] >> (k & 7)) & 1
    return c


@nb.njit(cache=True, nogil=True, inline="always")
def put_row(out, r, cta, warp, seq, pc, op, space, width, mask, obj):
    """Write row ``r``'s scalar columns into ``out`` (the columns tuple cta, warp, seq, pc, op, space,
    width, mask, addr, obj); the caller writes ``out[8][r]``, the lane addresses."""
    out[0][r] = cta
    out[1][r] = warp
    out[2][r] = seq
    out[3][r] = pc
    out[4][r] = op
    out[5][r] = space
    out[6][r] = width
    out[7][r] = mask
    out[9][r] = obj
