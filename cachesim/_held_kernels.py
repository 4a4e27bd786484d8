"""numba kernels of :class:`cachesim.held.PackedLanes`: a row's lane addresses (32 in a trace) as offsets from the
row's lowest non-zero address in 2 or 4 bytes each where they fit, exactly (every value comes back as it went in).

A row's tier: 0, offsets of 16 bits; 1, of 32 bits; 2, the addresses as they came. The highest offset of a
tier (``0xFFFF``, ``0xFFFFFFFF``) stands for the address 0, a lane a trace leaves at 0 (one that does not run).
The 16-bit rows' offsets are kept once per distinct pattern: a kernel's warps repeat a few patterns (a
coalesced row, a broadcast, a 16 x 16 block's two half-rows) at every base, so a row of them costs its base,
tier and pattern number (13 bytes) where its addresses took 256."""

from __future__ import annotations

import numba as nb
import numpy as np

from traces._numba import FIB_HASH_MUL

NUMBA_DEPS = "3e5555b321990317"  # its imports' sources, for numba's cache (traces.numba_cache)

TIER16, TIER32, TIER_FULL = 0, 1, 2
ZERO16 = 0xFFFF
"""The 16-bit offset that stands for address 0 (offsets 0 to ``ZERO16 - 1`` are offsets)."""
ZERO32 = 0xFFFFFFFF
"""The 32-bit offset that stands for address 0."""


@nb.njit(cache=True, nogil=True)
def _row_base_span(addr, i):
    """Row ``i``'s lowest non-zero address (0 when every lane is 0) and the highest offset from it."""
    lo = np.uint64(0xFFFFFFFFFFFFFFFF)
    hi = np.uint64(0)
    seen = False
    for k in range(addr.shape[1]):
        a = addr[i, k]
        if a != 0:
            seen = True
            if a < lo:
                lo = a
            if a > hi:
                hi = a
    if not seen:
        return np.uint64(0), np.uint64(0)
    return lo, hi - lo


@nb.njit(cache=True, nogil=True)
def _same(table, s, row):
    """Whether pattern ``s`` of ``table`` is ``row``."""
    for k in range(row.shape[0]):
        if table[s, k] != row[k]:
            return False
    return True


@nb.njit(cache=True, nogil=True)
def pack(addr):
    """``addr`` ((n, lanes) uint64) packed: per row its tier (uint8), its row in that tier's array (int32: for a
    16-bit row, its pattern's) and its base (uint64), and the three arrays: the distinct 16-bit patterns
    (p, lanes) uint16, (n32, lanes) uint32, (n_full, lanes) uint64."""
    n, lanes = addr.shape
    tier = np.empty(n, np.uint8)
    slot = np.empty(n, np.int32)
    base = np.empty(n, np.uint64)
    counts = np.zeros(3, np.int64)
    for i in range(n):
        lo, span = _row_base_span(addr, i)
        t = TIER16 if span < np.uint64(ZERO16) else (TIER32 if span < np.uint64(ZERO32) else TIER_FULL)
        tier[i] = t
        slot[i] = counts[t]
        base[i] = lo
        counts[t] += 1
    off16 = np.empty((counts[TIER16], lanes), np.uint16)
    off32 = np.empty((counts[TIER32], lanes), np.uint32)
    full = np.empty((counts[TIER_FULL], lanes), np.uint64)
    size = 1
    while size < 2 * counts[TIER16]:
        size *= 2
    table = np.full(size, -1, np.int32)  # open addressing: a pattern's number, -1 empty
    row = np.empty(lanes, np.uint16)
    patterns = 0
    for i in range(n):
        t = tier[i]
        b = base[i]
        if t == TIER16:
            h = np.uint64(0)
            for k in range(lanes):
                a = addr[i, k]
                o = np.uint16(ZERO16) if a == 0 else np.uint16(a - b)
                row[k] = o
                h = (h ^ np.uint64(o)) * FIB_HASH_MUL
            j = np.int64((h >> np.uint64(32)) & np.uint64(size - 1))
            while table[j] >= 0 and not _same(off16, table[j], row):
                j = (j + 1) & (size - 1)
            if table[j] < 0:
                table[j] = patterns
                off16[patterns, :] = row
                patterns += 1
            slot[i] = table[j]
        elif t == TIER32:
            s = slot[i]
            for k in range(lanes):
                a = addr[i, k]
                off32[s, k] = np.uint32(ZERO32) if a == 0 else np.uint32(a - b)
        else:
            s = slot[i]
            for k in range(lanes):
                full[s, k] = addr[i, k]
    return tier, slot, base, off16[:patterns].copy(), off32, full


@nb.njit(cache=True, nogil=True)
def unpack(rows, tier, slot, base, off16, off32, full, out):
    """The addresses of rows ``rows`` (int64, any order) into ``out`` ((len(rows), lanes) uint64)."""
    lanes = out.shape[1]
    for j in range(rows.shape[0]):
        i = rows[j]
        t = tier[i]
        s = slot[i]
        b = base[i]
        if t == TIER16:
            for k in range(lanes):
                o = off16[s, k]
                out[j, k] = np.uint64(0) if o == ZERO16 else b + np.uint64(o)
        elif t == TIER32:
            for k in range(lanes):
                o = off32[s, k]
                out[j, k] = np.uint64(0) if o == ZERO32 else b + np.uint64(o)
        else:
            for k in range(lanes):
                out[j, k] = full[s, k]
