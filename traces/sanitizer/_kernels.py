"""numba kernels of the record file's reader (``records.py``) and decoder (``decode.py``).

They take typed arrays, never raise, and report the first problem as a code or a row; the
callers turn those into messages naming the record file and the record.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..codes import ATOMIC, GLOBAL, LOAD, REDUCTION, SHARED, STORE

# The record file's chunk kinds and item sizes (records.py says what they are: numba reads these module
# globals as compile-time constants; records.py asserts they agree with its dtypes).
LAUNCH, ALLOC, ACCESS, END = 1, 2, 3, 4
ALLOC_BYTES = 16  # records.ALLOC_DTYPE.itemsize
ACCESS_BYTES = 280  # records.ACCESS_DTYPE.itemsize (a multiple of 8: gather_accesses)
END_BYTES = 16  # records.END_DTYPE.itemsize
CHUNK_BYTES = 8  # records.CHUNK.itemsize: kind u32, count u32
# Access flags (records.F_*) and the valid combinations (decode.VALID_FLAGS).
F_READ, F_WRITE, F_ATOMIC = 1, 2, 4
FULL_MASK = 0xFFFFFFFF  # all 32 lanes active

# What stopped the chunk scan (`scan_chunks`); 0: it reached the end of the file.
AFTER_END = 1  # data after the end record
SHORT_HEADER = 2  # truncated chunk header
UNKNOWN_KIND = 3
LAUNCH_ORDER = 4  # the launch record must come first, once
END_SIZE = 5  # end record of the wrong size
SHORT_PAYLOAD = 6  # the chunk's payload runs past the end of the file


@nb.njit(cache=True, nogil=True, inline="always")
def _u32(buf, off):
    """The little-endian uint32 at byte ``off`` of ``buf`` (uint8; any alignment)."""
    return (
        np.int64(buf[off])
        | (np.int64(buf[off + 1]) << 8)
        | (np.int64(buf[off + 2]) << 16)
        | (np.int64(buf[off + 3]) << 24)
    )


@nb.njit(cache=True, nogil=True)
def scan_chunks(buf, off):
    """Walk the chunks of a record file (``buf``: its bytes, uint8) from byte ``off`` (after the header).

    Returns (table, problem, at, kind, count, record): ``table`` (k, 4) int64 holds each chunk before the
    first problem as (kind, count, payload's byte offset, records before it); ``problem`` is 0 or the code
    of what stopped the walk, ``at`` the byte it names, ``kind`` and ``count`` the header of the chunk it
    stopped at (0 when it has none) and ``record`` the records before that chunk (all the records when
    ``problem`` is 0). The payloads are not looked into."""
    size = buf.shape[0]
    table = np.empty((64, 4), np.int64)
    k = 0
    record = 0
    have_launch = False
    have_end = False
    problem = 0
    at = 0
    kind = 0
    count = 0
    while off < size:
        if have_end:
            problem, at, kind, count = AFTER_END, off, 0, 0
            break
        if size - off < CHUNK_BYTES:
            problem, at, kind, count = SHORT_HEADER, off, 0, 0
            break
        kind = _u32(buf, off)
        count = _u32(buf, off + 4)
        off += CHUNK_BYTES
        if kind < LAUNCH or kind > END:
            problem, at = UNKNOWN_KIND, off - CHUNK_BYTES
            break
        if (kind == LAUNCH) == have_launch:
            problem = LAUNCH_ORDER
            break
        if kind == END and count != END_BYTES:
            problem = END_SIZE
            break
        item = ALLOC_BYTES if kind == ALLOC else ACCESS_BYTES if kind == ACCESS else 1
        if count * item > size - off:
            problem, at = SHORT_PAYLOAD, off
            break
        if k == table.shape[0]:
            grown = np.empty((2 * k, 4), np.int64)
            grown[:k] = table
            table = grown
        table[k, 0] = kind
        table[k, 1] = count
        table[k, 2] = off
        table[k, 3] = record
        k += 1
        if kind == LAUNCH:
            have_launch = True
            record += 1
        elif kind == END:
            have_end = True
            record += 1
        else:
            record += count
        off += count * item
    return table[:k], problem, at, kind, count, record


@nb.njit(cache=True, nogil=True)
def gather_accesses(buf, words, shift, table, out, out_words, numbers):
    """Copy the payloads of the table's access chunks (``scan_chunks``) from ``buf`` into ``out`` (the bytes
    of the accesses, uint8, back to back; ``out_words`` the same as uint64) and number each access
    (``numbers``: its record, from 1). ``words`` is ``buf`` from byte ``shift`` as uint64: a payload that
    starts ``shift`` bytes past a multiple of 8 (every payload after the launch record does, their sizes
    are multiples of 8) is copied 8 bytes at a time (numba copies a uint8 slice a byte at a time: 3 times
    as long)."""
    pos = 0
    row = 0
    for j in range(table.shape[0]):
        if table[j, 0] != ACCESS:
            continue
        count = table[j, 1]
        nbytes = count * ACCESS_BYTES
        off = table[j, 2]
        if (off - shift) % 8 == 0:
            w = (off - shift) // 8
            out_words[pos // 8 : (pos + nbytes) // 8] = words[w : w + nbytes // 8]
        else:
            out[pos : pos + nbytes] = buf[off : off + nbytes]
        first = table[j, 3] + 1
        for r in range(count):
            numbers[row + r] = first + r
        pos += nbytes
        row += count


# The checks of `check_accesses`, in the order their errors are reported (decode._check).
CHECK_SPACE, CHECK_WIDTH, CHECK_FLAGS, CHECK_CTA, CHECK_WARP = range(5)
N_CHECKS = 5


@nb.njit(cache=True, nogil=True)
def check_accesses(cta, warp, flags, space, width, mask, n_ctas, warps_per_block, first):
    """The first row failing each check (``first[CHECK_*]``, -1 for none: space 0, 1 or 2; width 1, 2, 4,
    8 or 16; flags a load, store, atomic or reduction; block and warp inside the launch); returns the rows
    with an active lane."""
    for c in range(N_CHECKS):
        first[c] = -1
    live = 0
    for i in range(cta.shape[0]):
        s = space[i]
        if first[CHECK_SPACE] < 0 and s > 2:
            first[CHECK_SPACE] = i
        w = width[i]
        if first[CHECK_WIDTH] < 0 and not (w == 1 or w == 2 or w == 4 or w == 8 or w == 16):
            first[CHECK_WIDTH] = i
        f = flags[i]
        if first[CHECK_FLAGS] < 0 and not (
            f == F_READ or f == F_WRITE or f == F_ATOMIC | F_READ | F_WRITE or f == F_ATOMIC | F_WRITE
        ):
            first[CHECK_FLAGS] = i
        if first[CHECK_CTA] < 0 and np.int64(cta[i]) >= n_ctas:
            first[CHECK_CTA] = i
        if first[CHECK_WARP] < 0 and np.int64(warp[i]) >= warps_per_block:
            first[CHECK_WARP] = i
        if mask[i] != 0:
            live += 1
    return live


@nb.njit(cache=True, nogil=True)
def convert_accesses(
    cta, warp, pc, flags, space, width, mask, addr, shared_base, shared_window, warps_per_block, out, lo, hi, seq,
    counters,
):  # fmt: skip
    """The contract's columns of the first ``len(lo)`` rows with an active lane, in one pass over the records.

    ``out`` is the columns tuple (cta, warp, pc, op, space, width, mask, addr); inactive lanes get address
    0 and shared addresses become offsets in the block's window (``shared_base`` subtracted when not 0).
    ``lo``/``hi``: each row's lowest active address and one past its highest active byte (as
    ``importers._object_kernels.row_bounds``). ``seq``: each row's position among its warp's rows, counted in
    ``counters`` (zeros, indexed by cta * ``warps_per_block`` + warp; when it is empty, ``seq`` is not written
    and no warp is counted).
    Returns (the warps seen, the record index of the first shared row with an active lane below
    ``shared_base``, of the first whose lane's bytes end beyond ``shared_window``; -1 for none)."""
    o_cta, o_warp, o_pc, o_op, o_space, o_width, o_mask, o_addr = out
    n = lo.shape[0]
    count = counters.shape[0] > 0
    warps = 0
    low = -1
    over = -1
    base = np.uint64(shared_base)
    window = np.uint64(shared_window)
    r = 0
    i = 0
    while r < n:
        m = mask[i]
        if m == 0:
            i += 1
            continue
        f = flags[i]
        if f & F_ATOMIC != 0:
            op = ATOMIC if f & F_READ != 0 else REDUCTION
        else:
            op = STORE if f & F_WRITE != 0 else LOAD
        s = space[i]
        w = np.uint64(width[i])
        sh = s == SHARED
        if m == FULL_MASK and not sh:  # the common row: a straight copy, which LLVM vectorizes
            a_lo = addr[i, 0]
            a_hi = a_lo + w
            for lane in range(32):
                a = addr[i, lane]
                o_addr[r, lane] = a
                a_lo = min(a_lo, a)
                a_hi = max(a_hi, a + w)
        else:
            a_lo = np.uint64(0xFFFFFFFFFFFFFFFF)
            a_hi = np.uint64(0)
            for lane in range(32):
                if (m >> lane) & 1:
                    a = addr[i, lane]
                    if sh:
                        if base != 0:
                            if a < base and low < 0:
                                low = i
                            a = a - base
                        if a + w > window and over < 0:
                            over = i
                    o_addr[r, lane] = a
                    a_lo = min(a_lo, a)
                    a_hi = max(a_hi, a + w)
                else:
                    o_addr[r, lane] = 0
        if a_hi == 0:
            a_lo = np.uint64(0)
        lo[r] = a_lo
        hi[r] = a_hi
        c = np.int32(cta[i])
        wp = np.int32(warp[i])
        o_cta[r] = c
        o_warp[r] = wp
        o_pc[r] = np.int32(pc[i])
        o_op[r] = op
        o_space[r] = np.int8(s)
        o_width[r] = np.int8(width[i])
        o_mask[r] = m
        if count:
            k = np.int64(c) * warps_per_block + wp
            if counters[k] == 0:
                warps += 1
            seq[r] = counters[k]
            counters[k] += 1
        r += 1
        i += 1
    return warps, low, over


@nb.njit(cache=True, nogil=True)
def global_candidates(space, lo, hi, op, width, base, end, cand, widths, written):
    """The object candidate of each global row (``cand``: the last of those sorted by ``base`` that starts at or
    below the row's ``lo``, if the row's bytes [``lo``, ``hi``) lie inside it, else -1; -1 for rows of other
    spaces); per candidate, its rows' widths (``widths[c, width]``, counted) and whether one writes
    (``written[c]``). Returns the global rows on no candidate."""
    unknown = 0
    for i in range(space.shape[0]):
        cand[i] = -1
        if space[i] != GLOBAL:
            continue
        x = lo[i]
        a = 0
        b = base.shape[0]
        while a < b:  # a: the candidates starting at or below x
            mid = (a + b) >> 1
            if base[mid] <= x:
                a = mid + 1
            else:
                b = mid
        j = a - 1
        if j >= 0 and hi[i] <= end[j]:
            cand[i] = j
            widths[j, width[i]] += 1
            if op[i] != LOAD:
                written[j] = True
        else:
            unknown += 1
    return unknown
