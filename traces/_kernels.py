"""numba kernels of the traces package. They take typed arrays, never raise, and
report the first problem as a code; the wrappers in ``io.py`` turn codes into
messages."""

from __future__ import annotations

import numba as nb
import numpy as np

from ._numba import FIB_HASH_MUL
from .codes import CONSTANT, LOAD, N_OPS, N_SPACES, READONLY, TEXTURE1D, TEXTURE2D

NUMBA_DEPS = "515f4eb8c47e05e5"  # its imports' sources, for numba's cache (traces.numba_cache)

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
WRITE_READ_ONLY_SPACE = 10  # a store, atomic or reduction in constant, texture or read-only space
WRITE_UNWRITTEN = 11  # one on an object whose metadata says it is not written


@nb.njit(cache=True, nogil=True)
def check_rows(
    cta,
    warp,
    seq,
    op,
    space,
    width,
    mask,
    addr,
    obj,
    n_ctas,
    warps_per_block,
    obj_lo,
    obj_hi,
    obj_written,
    last_seq,
    slots,
):
    """Check rows against the trace contract; return (code, row, lane or previous seq).

    ``obj_lo``/``obj_hi``/``obj_written`` are indexed by object id (hi == 0 marks an id with
    no object). ``last_seq`` carries the last seq of each warp across batches (-1 at
    first) and is updated in place: indexed by cta * warps_per_block + warp when
    ``slots`` is empty, else by ``slots[i]`` (a compact index per warp present).
    """
    n = cta.shape[0]
    n_ids = obj_lo.shape[0]
    for i in range(n):
        w = width[i]
        if w != 1 and w != 2 and w != 4 and w != 8 and w != 16:
            return BAD_WIDTH, i, 0
        if op[i] < 0 or op[i] >= N_OPS:
            return BAD_OP, i, 0
        if space[i] < 0 or space[i] >= N_SPACES:
            return BAD_SPACE, i, 0
        o = obj[i]
        if o < -1 or o >= n_ids or (o >= 0 and obj_hi[o] == 0):
            return BAD_OBJ, i, 0
        if op[i] != LOAD:
            sp = space[i]
            if sp == CONSTANT or sp == TEXTURE1D or sp == TEXTURE2D or sp == READONLY:
                return WRITE_READ_ONLY_SPACE, i, 0
            if o >= 0 and obj_written[o] == 0:
                return WRITE_UNWRITTEN, i, 0
        c = cta[i]
        if c < 0 or c >= n_ctas:
            return BAD_CTA, i, 0
        wp = warp[i]
        if wp < 0 or wp >= warps_per_block:
            return BAD_WARP, i, 0
        k = np.int64(c) * warps_per_block + wp if slots.shape[0] == 0 else slots[i]
        if seq[i] <= last_seq[k]:
            return BAD_SEQ, i, last_seq[k]
        last_seq[k] = seq[i]
        m = mask[i]
        for lane in range(32):
            a = addr[i, lane]
            if (m >> lane) & 1:
                # hi - a, not a + w: an address within 16 bytes of 2^64 wrapped a + w past the check
                if o >= 0 and (a < obj_lo[o] or a >= obj_hi[o] or obj_hi[o] - a < np.uint64(w)):
                    return OUTSIDE_OBJ, i, lane
            elif a != 0:
                return INACTIVE_ADDR, i, lane
    return OK, -1, 0


@nb.njit(cache=True, nogil=True)
def warp_slots(table, cta, warp, n_ctas, warps_per_block, shift, slots):
    """Each row's slot in an open-addressing table of the warps seen (key cta * warps_per_block + warp,
    -1 empty; linear probing from the key's Fibonacci hash, ``shift`` = 64 - log2(len(table))), inserting
    the warps not seen before; writes ``slots`` and returns how many keys were inserted. The caller keeps
    the table at most half full with room for every row (``rehash``). A row outside the grid gets slot 0
    (``check_rows`` reports it before using the slot)."""
    mask = table.shape[0] - 1
    added = 0
    for i in range(cta.shape[0]):
        c = cta[i]
        w = warp[i]
        if c < 0 or c >= n_ctas or w < 0 or w >= warps_per_block:
            slots[i] = 0
            continue
        key = np.int64(c) * warps_per_block + w
        h = np.int64((np.uint64(key) * FIB_HASH_MUL) >> np.uint64(shift))
        while True:
            k = table[h]
            if k == key:
                break
            if k == -1:
                table[h] = key
                added += 1
                break
            h = (h + 1) & mask
        slots[i] = h
    return added


@nb.njit(cache=True, nogil=True)
def rehash(table, values, new_table, new_values, shift):
    """Move every key of ``table`` (and its value) into the empty ``new_table`` (``shift`` its hash shift)."""
    mask = new_table.shape[0] - 1
    for j in range(table.shape[0]):
        key = table[j]
        if key == -1:
            continue
        h = np.int64((np.uint64(key) * FIB_HASH_MUL) >> np.uint64(shift))
        while new_table[h] != -1:
            h = (h + 1) & mask
        new_table[h] = key
        new_values[h] = values[j]


@nb.njit(cache=True, nogil=True)
def row_spans(obj, mask, addr, width, out_obj, out_lo, out_hi):
    """The bytes each row's active lanes touch, as merged ranges [lo, hi) of its object.

    Writes (object id, lo, hi) to the ``out_*`` arrays and returns how many, or -1
    when they are too short (the caller grows them and calls again). Rows on no
    object (obj -1) are left out.
    """
    n = obj.shape[0]
    cap = out_obj.shape[0]
    los = np.empty(32, dtype=np.uint64)
    k = 0
    for i in range(n):
        o = obj[i]
        if o < 0:
            continue
        m = mask[i]
        c = 0
        for lane in range(32):
            if (m >> lane) & 1:
                a = addr[i, lane]
                j = c
                while j > 0 and los[j - 1] > a:  # insertion sort: at most 32 lanes
                    los[j] = los[j - 1]
                    j -= 1
                los[j] = a
                c += 1
        if c == 0:
            continue
        w = np.uint64(width[i])
        lo = los[0]
        hi = lo + w
        for j in range(1, c + 1):
            if j < c and los[j] <= hi:
                if los[j] + w > hi:
                    hi = los[j] + w
                continue
            if k == cap:
                return -1
            out_obj[k] = o
            out_lo[k] = lo
            out_hi[k] = hi
            k += 1
            if j < c:
                lo = los[j]
                hi = lo + w
    return k


@nb.njit(cache=True, nogil=True)
def merge_spans(obj, lo, hi):
    """Merge ranges sorted by (obj, lo) that overlap or touch, in place; returns the new count."""
    n = obj.shape[0]
    if n == 0:
        return 0
    k = 0
    for i in range(1, n):
        if obj[i] == obj[k] and lo[i] <= hi[k]:
            if hi[i] > hi[k]:
                hi[k] = hi[i]
        else:
            k += 1
            obj[k] = obj[i]
            lo[k] = lo[i]
            hi[k] = hi[i]
    return k + 1


@nb.njit(cache=True, nogil=True, inline="always")
def one_address(mask, addr, i):
    """Whether row ``i``'s active lanes (``mask[i]``, at least one) all read one address, and its first active
    lane's address (0 with none active)."""
    m = np.int64(mask[i])
    first = np.uint64(0)
    seen = False
    for lane in range(32):
        if (m >> lane) & 1:
            if not seen:
                first = addr[i, lane]
                seen = True
            elif addr[i, lane] != first:
                return False, first
    return seen, first


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
