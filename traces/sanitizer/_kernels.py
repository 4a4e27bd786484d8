"""numba kernels of the record file's reader (``records.py``) and decoder (``decode.py``).

They take typed arrays, never raise, and report the first problem as a code or a row; the
callers turn those into messages naming the record file and the record.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..codes import ATOMIC, GLOBAL, LOAD, REDUCTION, SHARED, STORE
from ..launch import ADDRESS_LIMIT  # a lane's bytes end at or below it

NUMBA_DEPS = "c01d5bee2d8aecf1"  # its imports' sources, for numba's cache (traces.numba_cache)

# The record file's chunk kinds and item sizes (records.py says what they are: numba reads these module
# globals as compile-time constants; records.py asserts they agree with its dtypes).
LAUNCH, ALLOC, ACCESS, END = 1, 2, 3, 4
ALLOC_BYTES = 16  # records.ALLOC_DTYPE.itemsize
ACCESS_BYTES = 280  # records.ACCESS_DTYPE.itemsize (a multiple of 8: RECORD_WORDS)
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


# An access record as words (``records.ACCESS_DTYPE``, little-endian): cta | warp << 32, pc | flags << 32,
# space | width << 8 | pad << 16 | mask << 32, then the 32 lanes' addresses. The kernels read the records where
# the file's bytes hold them (``records.RecordFile.words``): every access chunk's payload starts at the same
# offset modulo 8 (the payloads after the launch record are multiples of 8 bytes), so one uint64 view of the
# file's bytes reaches them all.
RECORD_WORDS = ACCESS_BYTES // 8
ADDR_WORD = 3  # the first lane's address
LOW32 = 0xFFFFFFFF

# The checks of `check_records`, in the order their errors are reported (decode._check).
CHECK_SPACE, CHECK_WIDTH, CHECK_FLAGS, CHECK_CTA, CHECK_WARP, CHECK_ADDR = range(6)
N_CHECKS = 6


@nb.njit(cache=True, nogil=True, inline="always")
def _header(recs, t):
    """The scalar fields of record ``t`` of ``recs`` (its words, (k, RECORD_WORDS)): (cta, warp, pc, flags, space,
    width, mask), each an int64 of its field's bits."""
    h0 = np.int64(recs[t, 0])
    h1 = np.int64(recs[t, 1])
    h2 = np.int64(recs[t, 2])
    return (h0 & LOW32, (h0 >> 32) & LOW32, h1 & LOW32, (h1 >> 32) & LOW32, h2 & 0xFF, (h2 >> 8) & 0xFF,
            (h2 >> 32) & LOW32)  # fmt: skip


@nb.njit(cache=True, nogil=True, inline="always")
def _records(words, spans, j, start, stop):
    """The records of span ``j`` among rows ``start`` to ``stop``: (their words, (k, RECORD_WORDS), the row
    of the first)."""
    row0 = spans[j, 2]
    a = max(start, row0)
    z = max(a, min(stop, row0 + spans[j, 1]))
    b = spans[j, 0] + (a - row0) * RECORD_WORDS
    return words[b : b + (z - a) * RECORD_WORDS].reshape(z - a, RECORD_WORDS), a


@nb.njit(cache=True, nogil=True)
def check_records(words, spans, start, stop, n_ctas, warps_per_block, first):
    """The first of the rows ``start`` to ``stop`` (in file order; ``spans`` as ``records.RecordFile.spans``
    places them in ``words``) failing each check (``first[CHECK_*]``, -1 for none: space 0, 1 or 2; width 1, 2,
    4, 8 or 16; flags a load, store, atomic or reduction; block and warp inside the launch; no active lane's
    bytes past the end of the 64-bit address space); returns how many
    of those rows have an active lane."""
    for c in range(N_CHECKS):
        first[c] = -1
    live = 0
    for j in range(spans.shape[0]):
        recs, a = _records(words, spans, j, start, stop)
        for t in range(recs.shape[0]):
            i = a + t
            cta, warp, _pc, f, s, w, m = _header(recs, t)
            if first[CHECK_SPACE] < 0 and s > 2:
                first[CHECK_SPACE] = i
            if first[CHECK_WIDTH] < 0 and not (w == 1 or w == 2 or w == 4 or w == 8 or w == 16):
                first[CHECK_WIDTH] = i
            if first[CHECK_FLAGS] < 0 and not (
                f == F_READ or f == F_WRITE or f == F_ATOMIC | F_READ | F_WRITE or f == F_ATOMIC | F_WRITE
            ):
                first[CHECK_FLAGS] = i
            if first[CHECK_CTA] < 0 and cta >= n_ctas:
                first[CHECK_CTA] = i
            if first[CHECK_WARP] < 0 and warp >= warps_per_block:
                first[CHECK_WARP] = i
            if first[CHECK_ADDR] < 0 and w > 0:
                for lane in range(32):
                    if (m >> lane) & 1 and recs[t, ADDR_WORD + lane] > np.uint64(ADDRESS_LIMIT) - np.uint64(w):
                        first[CHECK_ADDR] = i
                        break
            if m != 0:
                live += 1
    return live


@nb.njit(cache=True, nogil=True)
def convert_records(words, spans, start, stop, r, n, shared_base, shared_window, out, lo, hi, keep_addr):
    """The contract's columns of the rows ``start`` to ``stop`` (``check_records``; checked) that have an active
    lane, written from output row ``r`` up to ``n`` (then it stops), in one pass over the records.

    ``out`` is the columns tuple (cta, warp, pc, op, space, width, mask, addr); inactive lanes get address
    0 and shared addresses become offsets in the block's window (``shared_base`` subtracted when not 0).
    ``lo``/``hi``: each row's lowest active address and one past its highest active byte (as
    ``importers._object_kernels.row_bounds``). Without ``keep_addr`` the addresses are not written (``out``'s
    addr may be empty): the decoder's first pass needs the bounds alone. (``seq`` and ``obj``: ``decode.Decoder``.)
    Returns (the output row after the last written, the first row (in file order) of a shared access with an
    active lane below ``shared_base``, the first whose lane's bytes end beyond ``shared_window``; -1 for none)."""
    o_cta, o_warp, o_pc, o_op, o_space, o_width, o_mask, o_addr = out
    low = -1
    over = -1
    base = np.uint64(shared_base)
    window = np.uint64(shared_window)
    for j in range(spans.shape[0]):
        if r >= n:
            break
        recs, a = _records(words, spans, j, start, stop)
        for t in range(recs.shape[0]):
            if r >= n:
                break
            cta, wp, pc, f, s, width, m = _header(recs, t)
            if m == 0:
                continue
            if f & F_ATOMIC != 0:
                op = ATOMIC if f & F_READ != 0 else REDUCTION
            else:
                op = STORE if f & F_WRITE != 0 else LOAD
            w = np.uint64(width)
            sh = s == SHARED
            if m == FULL_MASK and not sh:  # the common row: a straight copy, which LLVM vectorizes
                a_lo = recs[t, ADDR_WORD]
                a_hi = a_lo + w
                for lane in range(32):
                    x = recs[t, ADDR_WORD + lane]
                    if keep_addr:
                        o_addr[r, lane] = x
                    a_lo = min(a_lo, x)
                    a_hi = max(a_hi, x + w)
            else:
                a_lo = np.uint64(0xFFFFFFFFFFFFFFFF)
                a_hi = np.uint64(0)
                for lane in range(32):
                    if (m >> lane) & 1:
                        x = recs[t, ADDR_WORD + lane]
                        if sh:
                            if base != 0:
                                if x < base and low < 0:
                                    low = a + t
                                x = x - base
                            if x + w > window and over < 0:
                                over = a + t
                        if keep_addr:
                            o_addr[r, lane] = x
                        a_lo = min(a_lo, x)
                        a_hi = max(a_hi, x + w)
                    elif keep_addr:
                        o_addr[r, lane] = 0
            if a_hi == 0:
                a_lo = np.uint64(0)
            lo[r] = a_lo
            hi[r] = a_hi
            o_cta[r] = np.int32(cta)
            o_warp[r] = np.int32(wp)
            o_pc[r] = np.int32(pc)
            o_op[r] = op
            o_space[r] = np.int8(s)
            o_width[r] = np.int8(width)
            o_mask[r] = np.uint32(m)
            r += 1
    return r, low, over


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


@nb.njit(cache=True, nogil=True)
def sass_seq(idx, key, block, first, last, prev, pos, out):  # pragma: no cover - numba
    """Each row's position in its warp's instruction stream (``traces.sanitizer.sass``' rule for ``seq``) in one pass over
    the rows in order, with each warp's last instruction and position in ``prev`` and ``pos`` (indexed by ``key``;
    -1 and 0 for a warp not yet seen, and left as they end so that the next rows of the stream go on from them): a
    warp's first row sits at its instruction's index, each later one after the instructions between it and the
    warp's previous row, in one block or across the end of the previous row's block and the start of its own."""
    for r in range(idx.shape[0]):
        k = key[r]
        i = idx[r]
        p = prev[k]
        if p < 0:
            v = i
        elif block[i] == block[p] and i > p:
            v = pos[k] + (i - p)
        else:
            v = pos[k] + (last[block[p]] - p) + (i - first[block[i]]) + 1
        pos[k] = v
        prev[k] = i
        out[r] = v


@nb.njit(cache=True, nogil=True)
def count_seq(key, counters, out):
    """Each row's position among its warp's rows (``key``), the counts so far in ``counters`` (updated: the next
    rows of the stream go on from them); returns the warps first seen here."""
    new = 0
    for r in range(key.shape[0]):
        k = key[r]
        c = counters[k]
        if c == 0:
            new += 1
        out[r] = c
        counters[k] = c + 1
    return new


@nb.njit(cache=True, nogil=True)
def mark_seen(key, seen):
    """Mark each row's warp (``key``) in ``seen``; returns the warps first marked here."""
    new = 0
    for r in range(key.shape[0]):
        k = key[r]
        if seen[k] == 0:
            seen[k] = 1
            new += 1
    return new


@nb.njit(cache=True, nogil=True)
def warp_keys(cta, warp, warps_per_block, out):
    """cta * ``warps_per_block`` + warp of each row."""
    for r in range(cta.shape[0]):
        out[r] = np.int64(cta[r]) * warps_per_block + warp[r]
