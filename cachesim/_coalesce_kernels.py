"""numba kernels of coalescing: one warp-instruction's addresses -> transactions and replays.

Each helper works on one trace row (``mask``, a row of ``addr`` of 32 lanes, ``width``)
and writes into caller-provided scratch arrays, so the hierarchy kernel can call them
per row without allocating. They never raise.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros
from traces._numba import LEAF
from traces.codes import CONSTANT, GLOBAL, LOCAL, READONLY, SHARED, TEXTURE2D

NUMBA_DEPS = "515f4eb8c47e05e5"  # its imports' sources, for numba's cache (traces.numba_cache)

# obj_info columns (one row per object id)
O_BASE, O_ELEM, O_ROWS, O_COLS = range(4)
# the coalescing parameters (int64; the first entries of the hierarchy walk's ``hp``)
P_LINE_LOG2, P_SECT_LOG2, P_TXN, P_BANKS, P_BANK_BYTES, P_TEX_LOG2 = range(6)
N_PARAMS = 6
# Huang & Li's replay causes (Sec. III-B, Eq. 3) by number: each one's index in the replay counts (index 0 unused)
REPLAY_WORDS, REPLAY_CONST_MISS, REPLAY_CONST_DIVERGENCE, REPLAY_BANK_CONFLICT = 1, 2, 3, 4
N_REPLAYS = 5
# how a space's accesses coalesce (:func:`path_of`)
PATH_LINES, PATH_BANKS, PATH_DISTINCT, PATH_TEXTURE = range(4)


@nb.njit(cache=True, nogil=True)
def active_lanes(mask):
    c = 0
    m = np.uint32(mask)
    while m:
        m &= m - np.uint32(1)
        c += 1
    return c


@nb.njit(cache=True, nogil=True, inline="always")
def _unit_stride(mask, row, width):
    """Whether all 32 lanes are active and lane k reads ``width`` bytes at row[0] + k x width (a coalesced
    access, the common case), without wrapping past 2^64."""
    if np.uint32(mask) != np.uint32(0xFFFFFFFF) or width < 1:
        return False
    a = row[0]
    w = np.uint64(width)
    if a + np.uint64(32) * w - np.uint64(1) < a:
        return False
    for lane in range(1, 32):
        if row[lane] != a + np.uint64(lane) * w:
            return False
    return True


@nb.njit(cache=True, nogil=True, inline="always")
def _only_lane(mask, row, width):
    """The lane when exactly one is active and its ``width`` bytes do not wrap past 2^64, else -1 (a staged
    tile's copy row of one column, a scalar access): its bytes are one span, as a coalesced row's are."""
    m = np.uint32(mask)
    if m == np.uint32(0) or (m & (m - np.uint32(1))) != np.uint32(0) or width < 1:
        return -1
    lane = np.int64(trailing_zeros(m))
    if row[lane] + np.uint64(width - 1) < row[lane]:
        return -1
    return lane


@nb.njit(cache=True, nogil=True, inline="always")
def _ascending(mask, row, width):
    """Whether the active lanes' addresses never decrease from lane to lane (a strided access: a column
    of an image, a structure's field), without wrapping past 2^64. Then each lane's first line is at or
    above every line touched before it, so the lines come in ascending order and a line already touched
    is among the last few (:func:`lines_touched` looks back from the last instead of scanning all)."""
    prev = np.uint64(0)
    w1 = np.uint64(max(width, 1) - 1)
    for lane in range(32):
        if (mask >> lane) & 1:
            a = row[lane]
            if a < prev or a + w1 < a:
                return False
            prev = a
    return True


@nb.njit(cache=True, nogil=True, inline="always")
def _span_lines(first, last, ls, ss, per, lines, smasks):
    """:func:`lines_touched` of the bytes [first, last] (every sector between them wanted): the lines in
    ascending order, which is the lanes' order of first touch when the lanes read one after another."""
    n = 0
    s = first >> ss
    s_end = last >> ss
    top = (np.uint64(1) << per) - np.uint64(1)  # the last sector of a line
    while s <= s_end:
        line_s0 = (s >> per) << per
        stop = min(s_end, line_s0 + top)
        count = stop - s + np.uint64(1)
        bits = ((np.uint64(1) << count) - np.uint64(1)) if count < np.uint64(64) else ~np.uint64(0)
        lines[n] = (s >> per) << ls
        smasks[n] = bits << (s - line_s0)
        n += 1
        s = stop + np.uint64(1)
    return n


@nb.njit(**LEAF)
def lines_touched(mask, row, width, line_log2, sect_log2, lines, smasks):
    """Distinct lines (2^line_log2 B) touched by the active lanes and the sectors wanted in each.

    Writes line addresses to ``lines`` and sector masks (bit s = sector s of the line)
    to ``smasks``; returns their number (at most 64: 32 lanes x 2 lines for a lane
    crossing a line). Lines are in order of first touch by lane. A coalesced row (every lane, one
    after another) takes a short way through the span it covers (:func:`_span_lines`), with the
    same result.
    """
    ls = np.uint64(line_log2)
    ss = np.uint64(sect_log2)
    per = np.uint64(line_log2 - sect_log2)
    smask = (np.uint64(1) << per) - np.uint64(1)
    if _unit_stride(mask, row, width):
        return _span_lines(row[0], row[0] + np.uint64(32 * width - 1), ls, ss, per, lines, smasks)
    lane = _only_lane(mask, row, width)
    if lane >= 0:
        return _span_lines(row[lane], row[lane] + np.uint64(width - 1), ls, ss, per, lines, smasks)
    ascending = _ascending(mask, row, width)
    n = 0
    for lane in range(32):
        if not (mask >> lane) & 1:
            continue
        a = row[lane]
        s0 = a >> ss
        ns = np.int64(((a + np.uint64(width - 1)) >> ss) - s0)
        for d in range(ns + 1):
            s = s0 + np.uint64(d)
            line = (s >> per) << ls
            bit = np.uint64(1) << (s & smask)
            if ascending:  # lines[:n] ascending: look back from the last while they are above ``line``
                k = n - 1
                while k >= 0 and lines[k] > line:
                    k -= 1
                if k < 0 or lines[k] != line:
                    k = n
            else:
                k = 0
                while k < n and lines[k] != line:
                    k += 1
            if k == n:
                lines[n] = line
                smasks[n] = bit
                n += 1
            else:
                smasks[k] |= bit
    return n


@nb.njit(**LEAF)
def distinct_addresses(mask, row, out):
    """Distinct addresses of the active lanes (constant serialization, Huang & Li replay cause 3)."""
    n = 0
    for lane in range(32):
        if not (mask >> lane) & 1:
            continue
        a = row[lane]
        k = 0
        while k < n and out[k] != a:
            k += 1
        if k == n:
            out[n] = a
            n += 1
    return n


@nb.njit(**LEAF)
def same_address_lanes(mask, row):
    """The most active lanes on one address (an atomic's serialized read-modify-writes; 0 for no active lane), by
    counting each active lane's address among the active lanes (32 x 32 compares: shared atomics are few)."""
    most = 0
    for a in range(32):
        if (mask >> a) & 1:
            same = 0
            for b in range(32):
                if (mask >> b) & 1 and row[b] == row[a]:
                    same += 1
            most = max(most, same)
    return most


@nb.njit(cache=True, nogil=True, inline="always")
def _exact_log2(x):
    """k when x == 2^k (x >= 1), else -1."""
    if x < 1 or (x & (x - 1)) != 0:
        return -1
    k = 0
    while (1 << k) < x:
        k += 1
    return k


@nb.njit(**LEAF)
def bank_conflict_degree(mask, row, width, nbanks, bank_bytes, words, counts):
    """Largest number of distinct words any shared-memory bank must serve for this instruction.

    Word = address // bank_bytes, bank = word % nbanks; a lane of ``width`` bytes wider
    than a bank touches several words. Identical words are broadcast (counted once).
    ``words`` needs 32 * 16 entries and ``counts`` nbanks. 1 means conflict-free; the
    replays (Huang & Li cause 4) are degree - 1. 0 for no active lane. A coalesced row (every
    lane, one after another) covers consecutive words, spread over the banks in turn: its
    degree is their count over the banks, rounded up, without the sort.
    """
    bb = np.uint64(bank_bytes)
    if _unit_stride(mask, row, width):
        span = (row[0] + np.uint64(32 * width - 1)) // bb - row[0] // bb + np.uint64(1)
        return np.int64((span + np.uint64(nbanks) - np.uint64(1)) // np.uint64(nbanks))
    lane = _only_lane(mask, row, width)
    if lane >= 0:  # one lane's consecutive words, over the banks in turn, as a coalesced row's
        span = (row[lane] + np.uint64(width - 1)) // bb - row[lane] // bb + np.uint64(1)
        return np.int64((span + np.uint64(nbanks) - np.uint64(1)) // np.uint64(nbanks))
    # bank widths and bank counts are powers of two on every GPU: a shift and a mask then, not divisions
    sh = _exact_log2(bank_bytes)
    bmask = np.uint64(nbanks - 1)
    pow2_banks = nbanks > 0 and (nbanks & (nbanks - 1)) == 0
    n = 0
    for lane in range(32):
        if not (mask >> lane) & 1:
            continue
        a = row[lane]
        last = a + np.uint64(width - 1)
        if sh >= 0:
            w0 = a >> np.uint64(sh)
            w1 = last >> np.uint64(sh)
        else:
            w0 = a // bb
            w1 = last // bb
        for d in range(np.int64(w1 - w0) + 1):
            words[n] = w0 + np.uint64(d)
            n += 1
    # insertion sort, then count each distinct word once in its bank
    for i in range(1, n):
        x = words[i]
        j = i - 1
        while j >= 0 and words[j] > x:
            words[j + 1] = words[j]
            j -= 1
        words[j + 1] = x
    for b in range(nbanks):
        counts[b] = 0
    degree = 0
    for i in range(n):
        if i > 0 and words[i] == words[i - 1]:
            continue
        b = np.int64(words[i] & bmask) if pow2_banks else np.int64(words[i] % np.uint64(nbanks))
        counts[b] += 1
        if counts[b] > degree:
            degree = counts[b]
    return degree


@nb.njit(cache=True, nogil=True)
def global_replays(active, width, transaction_bytes):
    """Huang & Li replay cause 1: words of the warp / transaction size, minus one (Sec. III-B)."""
    if active == 0:
        return 0
    total = active * width
    return max(0, (total + transaction_bytes - 1) // transaction_bytes - 1)


@nb.njit(cache=True, nogil=True)
def tile_shape(tile_bytes, elem):
    """(tile rows, tile cols) in elements: tile_bytes/elem elements, cols the power of two >= sqrt."""
    n = max(1, tile_bytes // elem)
    k = 0
    while (1 << k) < n:
        k += 1
    tw = 1 << ((k + 1) // 2)
    th = max(1, n // tw)
    return th, tw


@nb.njit(**LEAF)
def tiled_address(a, o, obj_info, tile_bytes):
    """Address of ``a`` in the 2D texture layout of object ``o`` (unchanged without a 2D shape).

    The object's (rows, cols) array of elem-byte elements is stored in tiles of
    tile_rows x tile_cols elements, one tile per ``tile_bytes`` (a texture cache line),
    tiles in row-major order, elements row-major inside a tile. So a 2D neighbourhood
    shares a line, which is what makes a 2D texture pay (Huang & Li Sec. II-A).
    """
    if o < 0 or obj_info[o, O_COLS] <= 0:
        return a
    base = np.uint64(obj_info[o, O_BASE])
    elem = obj_info[o, O_ELEM]
    cols = obj_info[o, O_COLS]
    if a < base:
        return a
    off = np.int64(a - base)
    e = off // elem
    byte = off - e * elem
    r = e // cols
    c = e - r * cols
    th, tw = tile_shape(tile_bytes, elem)
    ntx = (cols + tw - 1) // tw
    tile = (r // th) * ntx + c // tw
    inner = (r % th) * tw + c % tw
    return base + np.uint64(tile * th * tw * elem + inner * elem + byte)


@nb.njit(cache=True, nogil=True, inline="always")
def path_of(space):
    """The coalescing rule of a space, one for :func:`coalesce_rows` and the hierarchy walk: global, local
    and read-only accesses (``PATH_LINES``) the lines and sectors their lanes touch, shared ones
    (``PATH_BANKS``) their bank-conflict degree, constant ones (``PATH_DISTINCT``) their distinct
    addresses, texture ones (``PATH_TEXTURE``, 1D and 2D) the texture-cache lines they touch."""
    if space == GLOBAL or space == LOCAL or space == READONLY:
        return PATH_LINES
    if space == SHARED:
        return PATH_BANKS
    if space == CONSTANT:
        return PATH_DISTINCT
    return PATH_TEXTURE


@nb.njit(**LEAF)
def coalesce_row(path, space, mask, arow, width, o, obj_info, prm, lines, smasks, words, counts, row):
    """One warp-instruction (``mask``, its 32 addresses ``arow``, ``width``; object ``o``) coalesced by
    the rule ``path`` = :func:`path_of` of its ``space``: (k, replay cause, replays).

    k: ``PATH_LINES`` and ``PATH_TEXTURE`` the lines touched (``lines`` and ``smasks`` hold them,
    :func:`lines_touched`; a texture line is one sector, and a 2D texture's lanes are first mapped
    through its tiled layout into ``row``), ``PATH_BANKS`` the bank-conflict degree, ``PATH_DISTINCT``
    the distinct addresses (in ``words``). The replays: cause 1 (words over transactions) for lines,
    4 (bank conflicts) for shared, 3 (address divergence) for constant, none for texture. ``prm`` holds
    the coalescing parameters (``P_*``); ``words`` needs 32 x 16 entries and ``counts`` one per bank.
    """
    if path == PATH_LINES:  # the hierarchy walk makes these two calls itself (see walk)
        k = lines_touched(mask, arow, width, prm[P_LINE_LOG2], prm[P_SECT_LOG2], lines, smasks)
        return k, REPLAY_WORDS, global_replays(active_lanes(np.uint32(mask)), width, prm[P_TXN])
    if path == PATH_BANKS:
        d = bank_conflict_degree(mask, arow, width, prm[P_BANKS], prm[P_BANK_BYTES], words, counts)
        return d, REPLAY_BANK_CONFLICT, max(0, d - 1)
    if path == PATH_DISTINCT:
        d = distinct_addresses(mask, arow, words)
        return d, REPLAY_CONST_DIVERGENCE, max(0, d - 1)
    tex_log2 = prm[P_TEX_LOG2]
    if space == TEXTURE2D:
        tile = np.int64(1) << tex_log2
        for lane in range(32):
            row[lane] = tiled_address(arow[lane], o, obj_info, tile) if (mask >> lane) & 1 else np.uint64(0)
        return lines_touched(mask, row, width, tex_log2, tex_log2, lines, smasks), 0, 0
    return lines_touched(mask, arow, width, tex_log2, tex_log2, lines, smasks), 0, 0


@nb.njit(cache=True, nogil=True)
def coalesce_rows(space, width, mask, addr, obj, obj_info, params, lines_out, sectors_out, replays_out):
    """Per row: lines and sectors touched (global, local, read-only, texture), distinct addresses
    (constant) or the bank-conflict degree (shared), and the replays of causes 1, 3 and 4, by the rule
    the hierarchy walk follows (:func:`path_of`, :func:`coalesce_row`).

    ``params`` holds the coalescing parameters (``P_*``: line_log2, sect_log2, transaction_bytes,
    banks, bank_bytes, tex_line_log2).
    """
    n = space.shape[0]
    lines = np.empty(64, np.uint64)
    smasks = np.empty(64, np.uint64)
    words = np.empty(32 * 16, np.uint64)
    counts = np.empty(max(params[P_BANKS], 1), np.int64)
    row = np.empty(32, np.uint64)
    for i in range(n):
        sp = space[i]
        path = path_of(sp)
        k, cause, replays = coalesce_row(path, sp, mask[i], addr[i], np.int64(width[i]), np.int64(obj[i]), obj_info,
                                         params, lines, smasks, words, counts, row)  # fmt: skip
        lines_out[i] = k
        replays_out[i, cause] = replays
        if path == PATH_LINES:
            s = 0
            for j in range(k):
                s += active_lanes(np.uint32(smasks[j] & np.uint64(0xFFFFFFFF))) + active_lanes(
                    np.uint32(smasks[j] >> np.uint64(32))
                )
            sectors_out[i] = s
        elif path == PATH_TEXTURE:
            sectors_out[i] = k
