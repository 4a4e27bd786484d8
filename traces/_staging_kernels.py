"""numba kernels of ``traces.staging``: footprints of an object per block and window, the
write-overlap check, and the rewrite of a trace with staged shared-memory tiles.

Rows are visited in ``order``: row indices sorted by (cta, warp, seq), so each block's
rows are contiguous and, inside it, each warp's rows are in program order. Kernels take
typed arrays, never raise, and report through their return values.

The mechanics side of staging, in ``traces``, with ``traces.staging`` (the model, in its
module docstring, and the calls of these kernels). The decisions and costs are
placement's: ``placement.staging``, ``placement.streamstaging`` (which calls
``write_ranges``, ``write_conflict_ordered`` and ``first_writer`` here directly, group
by group) and ``placement.tiles``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._kernels import one_address, put_row
from ._numba import LEAF
from .codes import LOAD, REDUCTION, SHARED, STORE

NUMBA_DEPS = "65baa0fce93f9314"  # its imports' sources, for numba's cache (traces.numba_cache)

BIG = np.int64(1) << np.int64(62)
# bounding-box fields: rows [R0, R1], columns [C0, C1] in elements
R0, R1, C0, C1 = 0, 1, 2, 3
# per-slot plan fields (int64 table ``plan``; see traces.staging.stage)
(P_OBJ, P_SRC, P_L, P_SBASE, P_PITCH, P_ELEM, P_NCOLS, P_BASE, P_LOAD, P_WB, P_INT, P_WBINT, P_PC, P_BX, P_UNROLL,
 P_TAIL, P_ROWS, P_HEAD, P_FIRST, P_REST, P_ENTRY, P_BODY, P_SPLIT, P_PROLOGUE, P_STRIDE) = range(25)  # fmt: skip
PLAN_LEN = 25
"""``P_ROWS`` = 1: the unrolled copy's instructions a tile row (``P_HEAD`` ... ``P_PROLOGUE``, the copy's loads
and stores included; ``traces.staging.StagedObject.copy_rows``) price a 2D copy of a tile larger than the block,
in place of ``P_INT`` a store (:func:`_row_cost`). ``P_PITCH`` is the tile's width in elements (the columns the
copy loop covers), ``P_STRIDE`` its rows' stride in shared memory, the width and the padding
(``traces.staging.StagedObject.pad``)."""
(SG_START, SG_ROWS, SG_STORES, SG_SLOT, SG_NEW_PASS, SG_FIRST, SG_REST, SG_ENTRY, SG_BODY, SG_SPLIT) = range(10)
SEG_LEN = 10
"""A copied tile row's record (``stage_rows``' ``segs``, one row per tile row a warp copies where ``copy_rows`` would
price it: a 2D unrolled copy of a tile larger than the block), what re-sourcing it takes (``resource_rows``): its
first row's ordinal among the staging code's rows (``SG_START``: the kernel's inserted rows, which ``vectorize``
never drops), its rows and stores, its slot, 1 where it is the first of its tile pass (the prologue goes before
the first row priced), and the shape of its lanes' iterations (:func:`_row_shape`)."""
UNROLL_GROUP_MAX = 1024
"""Most iterations of one copy loop (a tile row's in the 2D loop, the whole flattened loop) that an unrolled copy
(``plan[s, P_UNROLL]`` > 1 or ``plan[s, P_TAIL]`` > 1) batches; a longer loop is copied as the rolled loop is (no
staged tile of the suites comes near: the widest, 270 columns by 16 threads, is 17)."""
MAX_THREAD_INDEX = 1023
"""The largest threadIdx.x nvcc assumes of a kernel without __launch_bounds__ (blocks of up to 1,024 threads): the
iterations of an unrolled copy every thread index up to it has need no check (:func:`_tail_copy`)."""
MILLI = 1000  # P_INT and P_WBINT are in thousandths of an instruction (unrolled copies share arithmetic)
WB_NONE, WB_STORE, WB_ATOMIC = 0, 1, 2
# totals returned by stage_rows
T_LOADS, T_STORES, T_INT, T_BARRIERS, T_WB_LOADS, T_WB_STORES = range(6)


@nb.njit(cache=True, nogil=True, inline="always")
def _elem_rc(a, base, elem, ncols):
    """(row, column) of the element holding byte address ``a`` (row 0 for a 1D object)."""
    e = np.int64(a - np.uint64(base)) // elem
    if ncols > 0:
        return e // ncols, e % ncols
    return np.int64(0), e


@nb.njit(**LEAF)
def _affine(i, mask, addr, width, base, elem):
    """(e0, k) when row ``i`` has all 32 lanes active and lane l reads element e0 + l * k (k >= 0) from its
    first byte, within that element; (-1, -1) otherwise (the caller then works lane by lane)."""
    if np.uint32(mask[i]) != np.uint32(0xFFFFFFFF) or width[i] < 1 or np.int64(width[i]) > elem:
        return np.int64(-1), np.int64(-1)
    a0 = addr[i, 0]
    if a0 < np.uint64(base) or addr[i, 1] < a0:
        return np.int64(-1), np.int64(-1)
    off = np.int64(a0 - np.uint64(base))
    e0 = off // elem
    d = np.int64(addr[i, 1] - a0)
    k = d // elem
    if off != e0 * elem or d != k * elem:
        return np.int64(-1), np.int64(-1)
    step = np.uint64(d)
    for lane in range(2, 32):
        if addr[i, lane] - addr[i, lane - 1] != step:
            return np.int64(-1), np.int64(-1)
    return e0, k


@nb.njit(**LEAF)
def _row_box(i, mask, addr, width, base, elem, ncols, box):
    """Bounding box of the elements row ``i``'s active lanes touch, into ``box``; False if no lane is active."""
    m = np.int64(mask[i])
    box[R0] = BIG
    box[R1] = -BIG
    box[C0] = BIG
    box[C1] = -BIG
    if m == 0:
        return False
    # a row of evenly spaced elements (``_affine``): its box from its first and last lane where that
    # determines it (one tile row, one column, or consecutive elements across rows)
    e0, k = _affine(i, mask, addr, width, base, elem)
    if k >= 0:
        e1 = e0 + 31 * k
        if ncols <= 0:
            box[R0], box[R1], box[C0], box[C1] = 0, 0, e0, e1
            return True
        r0, r1 = e0 // ncols, e1 // ncols
        if r0 == r1:
            box[R0], box[R1], box[C0], box[C1] = r0, r0, e0 - r0 * ncols, e1 - r0 * ncols
            return True
        if k % ncols == 0:
            c = e0 - r0 * ncols
            box[R0], box[R1], box[C0], box[C1] = r0, r1, c, c
            return True
        if k == 1:
            box[R0], box[R1], box[C0], box[C1] = r0, r1, 0, ncols - 1
            return True
    w = np.uint64(width[i])
    # a lane at the address of the active lane before it adds nothing; one at the next element steps its column
    # (a broadcast, a coalesced run: a 16 x 16 block's rows are two of either, which _affine does not take)
    pa = np.uint64(0)
    have = False
    off = e = r = c = np.int64(0)
    for lane in range(32):
        if (m >> lane) & 1:
            a = addr[i, lane]
            if have and a == pa:
                continue
            if have and a - pa == np.uint64(elem):
                off += elem
                e += 1
                c += 1
                if ncols > 0 and c == ncols:
                    r, c = r + 1, np.int64(0)
            else:
                off = np.int64(a - np.uint64(base))
                e = off // elem  # _elem_rc's arithmetic, with the element kept for the test below
                if ncols > 0:
                    r, c = e // ncols, e % ncols
                else:
                    r, c = np.int64(0), e
            pa = a
            have = True
            box[R0] = min(box[R0], r)
            box[R1] = max(box[R1], r)
            box[C0] = min(box[C0], c)
            box[C1] = max(box[C1], c)
            last = a + w - np.uint64(1)
            # the lane's last byte is in the same element (so the same row and column) when its
            # offset inside the element plus the width stays below the element size: skip its divisions
            within = off - e * elem
            if w >= np.uint64(1) and last >= a and within + np.int64(w) - 1 < elem:
                continue
            r, c = _elem_rc(last, base, elem, ncols)
            box[R0] = min(box[R0], r)
            box[R1] = max(box[R1], r)
            box[C0] = min(box[C0], c)
            box[C1] = max(box[C1], c)
    return True


@nb.njit(cache=True, nogil=True, inline="always")
def _grow(acc, k, box):
    acc[k, R0] = min(acc[k, R0], box[R0])
    acc[k, R1] = max(acc[k, R1], box[R1])
    acc[k, C0] = min(acc[k, C0], box[C0])
    acc[k, C1] = max(acc[k, C1], box[C1])


@nb.njit(cache=True, nogil=True)
def access_counts(idx, cta, warp, op, wpb):
    """(K, loads, plain stores, atomics and reductions) of one object's rows ``idx`` (in (cta, warp, seq) order).

    K is the most rows one warp has (its accesses in program order are ordinals 0..K-1).
    """
    k_max = 0
    k = 0
    prev = np.int64(-1)
    loads = 0
    stores = 0
    atomics = 0
    for t in range(idx.shape[0]):
        i = idx[t]
        g = np.int64(cta[i]) * wpb + warp[i]
        if g != prev:
            k = 0
            prev = g
        k += 1
        k_max = max(k_max, k)
        o = op[i]
        if o == LOAD:
            loads += 1
        elif o == STORE:
            stores += 1
        else:
            atomics += 1
    return k_max, loads, stores, atomics


@nb.njit(cache=True, nogil=True)
def tile_bank_degrees(idx, mask, addr, width, base, elem, ncols, strides, banks, bank_bytes, out):
    """Per candidate row stride (``strides``, elements): the summed bank-conflict degree of rows ``idx`` were their
    object's 2D tile laid out row-major at that stride in shared memory: for each access, the most distinct
    ``bank_bytes`` words any of the ``banks`` banks holds (the wavefronts a shared load or store takes; 1 without
    a conflict). The tile's corner adds the same offset to every lane, which moves every word to another bank
    alike, so each element is placed at (row x stride + column) from the object's own (0, 0)."""
    words = np.empty(32 * 8, np.int64)
    counts = np.zeros(banks, np.int64)
    rows = np.empty(32, np.int64)
    cols = np.empty(32, np.int64)  # a lane's column in bytes: its element's, and its byte within the element
    for c in range(strides.shape[0]):
        out[c] = 0
    for t in range(idx.shape[0]):
        i = idx[t]
        m = np.int64(mask[i])
        if m == 0:
            continue
        nw = max(np.int64(1), (np.int64(width[i]) + bank_bytes - 1) // bank_bytes)
        nw = min(nw, np.int64(8))
        n = 0  # the active lanes' (row, column), once a row for every stride
        for lane in range(32):
            if (m >> lane) & 1:
                a = addr[i, lane]
                rr, cc = _elem_rc(a, base, elem, ncols)
                rows[n] = rr
                cols[n] = cc * elem + np.int64(a - np.uint64(base)) % elem
                n += 1
        for c in range(strides.shape[0]):
            row_bytes = strides[c] * elem
            k = 0
            for j in range(n):
                b0 = rows[j] * row_bytes + cols[j]
                for q in range(nw):
                    words[k] = b0 // bank_bytes + q
                    k += 1
            ws = np.sort(words[:k])
            for b in range(banks):
                counts[b] = 0
            deg = np.int64(0)
            prev = np.int64(-1)
            for u in range(k):
                if u == 0 or ws[u] != prev:
                    b = ws[u] % banks
                    counts[b] += 1
                    deg = max(deg, counts[b])
                    prev = ws[u]
            out[c] += deg


@nb.njit(cache=True, nogil=True)
def footprint_table(idx, cta, warp, mask, addr, width, base, elem, ncols, k_max, lengths, out_bytes, out_pitch):
    """Per candidate window length L (``lengths``): the bytes of a static tile holding every block's window
    of L consecutive accesses per warp (the most rows of any window x the widest, in elements) and that width.

    Window j of a block holds every access whose ordinal in its warp is in [j L, (j + 1) L).
    """
    nc = lengths.shape[0]
    offs = np.zeros(nc + 1, np.int64)
    for c in range(nc):
        offs[c + 1] = offs[c] + (k_max + lengths[c] - 1) // lengths[c]
    acc = np.empty((max(offs[nc], 1), 4), np.int64)
    box = np.empty(4, np.int64)
    out_rows = np.zeros(nc, np.int64)
    for c in range(nc):
        out_bytes[c] = 0
        out_pitch[c] = 0
    n = idx.shape[0]
    t = 0
    while t < n:
        b = cta[idx[t]]
        for s in range(offs[nc]):
            acc[s, R0] = BIG
            acc[s, R1] = -BIG
            acc[s, C0] = BIG
            acc[s, C1] = -BIG
        prev_w = -1
        k = 0
        while t < n and cta[idx[t]] == b:
            i = idx[t]
            if warp[i] != prev_w:
                prev_w = warp[i]
                k = 0
            if _row_box(i, mask, addr, width, base, elem, ncols, box):
                for c in range(nc):
                    _grow(acc, offs[c] + k // lengths[c], box)
            k += 1
            t += 1
        for c in range(nc):
            for s in range(offs[c], offs[c + 1]):
                if acc[s, R1] >= acc[s, R0]:
                    out_rows[c] = max(out_rows[c], acc[s, R1] - acc[s, R0] + 1)
                    out_pitch[c] = max(out_pitch[c], acc[s, C1] - acc[s, C0] + 1)
    for c in range(nc):
        out_bytes[c] = out_rows[c] * out_pitch[c] * elem


@nb.njit(cache=True, nogil=True, inline="always")
def _lane_elements(a, w, base, elem):
    """First and last element index the bytes [a, a + w) of an object at ``base`` touch."""
    e0 = np.int64(a - np.uint64(base)) // elem
    e1 = np.int64(a + w - np.uint64(1) - np.uint64(base)) // elem
    return e0, e1


@nb.njit(cache=True, nogil=True, inline="always")
def _not_a_write(o, plain_only):
    """Whether a row of op ``o`` writes nothing the write checks count: a load, or with
    ``plain_only`` anything but a plain store (atomics and reductions of a privatized object)."""
    return o == LOAD or (plain_only and o != STORE)


@nb.njit(cache=True, nogil=True)
def write_range(idx, op, mask, addr, width, base, elem, plain_only):
    """(lowest, highest) element index written by one object's rows (plain stores only when ``plain_only``)."""
    lo = BIG
    hi = -BIG
    for t in range(idx.shape[0]):
        i = idx[t]
        if _not_a_write(op[i], plain_only):
            continue
        m = np.int64(mask[i])
        w = np.uint64(width[i])
        for lane in range(32):
            if (m >> lane) & 1:
                e0, e1 = _lane_elements(addr[i, lane], w, base, elem)
                lo = min(lo, e0)
                hi = max(hi, e1)
    return lo, hi


@nb.njit(cache=True, nogil=True)
def write_conflict(idx, cta, op, mask, addr, width, base, elem, lo, owner, plain_only):
    """First element two blocks write: (block a, block b, element), or (-1, -1, -1).

    ``owner`` (int32, one entry per element from ``lo``, filled with -1) records the first
    block that wrote each element.
    """
    for t in range(idx.shape[0]):
        i = idx[t]
        if _not_a_write(op[i], plain_only):
            continue
        b = np.int32(cta[i])
        m = np.int64(mask[i])
        w = np.uint64(width[i])
        for lane in range(32):
            if (m >> lane) & 1:
                e0, e1 = _lane_elements(addr[i, lane], w, base, elem)
                for e in range(e0, e1 + 1):
                    s = e - lo
                    if owner[s] == -1:
                        owner[s] = b
                    elif owner[s] != b:
                        return np.int64(owner[s]), np.int64(b), e
    return np.int64(-1), np.int64(-1), np.int64(-1)


@nb.njit(cache=True, nogil=True, inline="always")
def _put(write, out, r, cta, warp, seq, pc, op, space, width, mask, obj, delta_out):
    if write and r < out[0].shape[0]:
        put_row(out, r, cta, warp, seq, pc, op, space, width, mask, obj)
        delta_out[r] = 0


@nb.njit(cache=True, nogil=True, inline="always")
def _put_addr(write, out, r, lanes):
    """Row ``r``'s 32 addresses, when written and within the buffers (a loop: a slice assignment needs
    numba's runtime, which the ``LEAF`` helpers that call this lack)."""
    if write and r < out[0].shape[0]:
        for lane in range(32):
            out[8][r, lane] = lanes[lane]


@nb.njit(**LEAF)
def _iteration(it, box, plan, s, threads, t0, t0_i, t0_j, nj, bx, by, loop_2d, whole_rows, rows, bw, q_total,
               gaddr, saddr):  # fmt: skip
    """The lanes' global and shared addresses of iteration ``it`` of warp ``t0 // 32``'s share of the copy loop
    (0 for idle lanes) and the active lanes' mask (0: the warp has no lane in it)."""
    elem = plan[s, P_ELEM]
    ncols = plan[s, P_NCOLS]
    base = plan[s, P_BASE]
    sbase = plan[s, P_SBASE]
    stride = plan[s, P_STRIDE]
    # each lane's (i, j), stepped from lane 0's without a division per lane: in 2D (t // bx, t % bx)
    # plus the iteration's offsets, in the flattened loop (q // bw, q % bw) for q = it * threads + t
    j_first = np.int64(0)
    if loop_2d:
        j_first = (it % nj) * bx  # tx = 0
        i, j = t0_i + (it // nj) * by, t0_j + j_first
        if whole_rows and (i >= rows or j >= bw):
            return np.int64(0)
    else:
        q = it * threads + t0
        i, j = q // bw, q % bw
    m = np.int64(0)
    for lane in range(32):
        gaddr[lane] = np.uint64(0)
        saddr[lane] = np.uint64(0)
        t = t0 + lane
        li, lj = i, j  # this lane's
        if loop_2d:  # the next lane's: tx + 1, or the next row of the block
            j += 1
            if j - j_first == bx:
                j = j_first
                i += 1
        else:
            j += 1
            if j == bw:
                j = 0
                i += 1
        if t >= threads or not (li < rows and lj < bw if loop_2d else it * threads + t < q_total):
            continue
        m |= np.int64(1) << lane
        rr = box[R0] + li
        cc = box[C0] + lj
        e = rr * ncols + cc if ncols > 0 else cc
        gaddr[lane] = np.uint64(base + e * elem)
        saddr[lane] = np.uint64(sbase + (li * stride + lj) * elem)
    return m


@nb.njit(cache=True, nogil=True, inline="always")
def _copy_load(write, out, delta_out, r, b, w, seq, plan, s, m, gaddr, totals):
    """A staging copy's load of the lanes ``m`` from the source space at ``gaddr``; returns (r, seq)."""
    _put(write, out, r, b, w, seq, plan[s, P_PC], LOAD, plan[s, P_SRC], plan[s, P_ELEM], m, plan[s, P_OBJ], delta_out)
    _put_addr(write, out, r, gaddr)
    totals[T_LOADS] += 1
    return r + 1, seq + 1


@nb.njit(cache=True, nogil=True, inline="always")
def _copy_store(write, out, delta_out, r, b, w, seq, plan, s, m, saddr, totals):
    """A staging copy's shared store of the lanes ``m`` at ``saddr``, with the copy's non-memory instructions after
    it; returns (r, seq)."""
    _put(write, out, r, b, w, seq, plan[s, P_PC] + 16, STORE, SHARED, plan[s, P_ELEM], m, plan[s, P_OBJ], delta_out)
    _put_addr(write, out, r, saddr)
    totals[T_STORES] += 1
    totals[T_INT] += plan[s, P_INT]
    return r + 1, seq + 1 + (plan[s, P_INT] + MILLI // 2) // MILLI


@nb.njit(**LEAF)
def _copy_batch(write, out, delta_out, r, b, w, seq, plan, s, ga, sa, first, width, step, keep, totals, gaddr,
                saddr):  # fmt: skip
    """One batch of an unrolled copy: ``width`` loads, then their ``width`` shared stores. Slot k of the batch
    takes each lane's own iteration ``first[lane] + k * step`` of the loop, for the lanes ``keep`` admits
    (``keep[lane]`` > k: the lane has that iteration in this batch). Returns (r, seq)."""
    for phase in range(2):
        for k in range(width):
            m = np.int64(0)
            for lane in range(32):
                gaddr[lane] = np.uint64(0)
                saddr[lane] = np.uint64(0)
                if keep[lane] > k:
                    it = first[lane] + k * step
                    m |= np.int64(1) << lane
                    gaddr[lane] = ga[it, lane]
                    saddr[lane] = sa[it, lane]
            if m == 0:
                continue
            if phase == 0:
                r, seq = _copy_load(write, out, delta_out, r, b, w, seq, plan, s, m, gaddr, totals)
            else:
                r, seq = _copy_store(write, out, delta_out, r, b, w, seq, plan, s, m, saddr, totals)
    return r, seq


@nb.njit(**LEAF)
def _tile_pass(write, out, delta_out, r, b, w, threads, plan, s, box, seq0, kind, totals, gaddr, saddr, scratch):
    """Rows of warp ``w``'s share of a cooperative pass over the tile ``box`` of slot ``s``.

    kind 0: staging (a load from the source space, when the plan says so, then a shared
    store, or only a zero store for a privatized object); kind 1: write-back (a shared
    load, then a store or a reduction to the object's global address). With
    ``plan[s, P_BX] == 0`` the tile is copied by the flattened loop
    ``for (q = t; q < rows * cols; q += threads)``, element q = (q / cols, q % cols) of the
    tile's bounding box: a warp moves 32 consecutive elements per iteration (a 1D object,
    or a 2D object in a 1D block). Otherwise by the 2D loop of the textbook kernels,
    ``for (i = ty; i < rows; i += by) for (j = tx; j < cols; j += bx)`` with the block's
    threads arranged as ``bx`` x ``by`` (``bx = plan[s, P_BX]``, the block's x extent,
    ``by = threads // bx``, (tx, ty) = (t % bx, t // bx)): a lane whose
    (i, j) falls outside the tile is idle in that iteration, and a warp with no lane left
    skips it. Each iteration's load is followed by its store (the rolled loop), unless the
    plan unrolls the copy (``plan[s, P_UNROLL]`` = u > 1, :func:`_unrolled_copy`; or ``plan[s, P_TAIL]`` =
    t > 1, :func:`_tail_copy`). Returns (rows written so far, instructions issued by this warp, the seq after
    them).
    """
    rows = box[R1] - box[R0] + 1
    bw = box[C1] - box[C0] + 1
    q_total = rows * bw
    elem = plan[s, P_ELEM]
    ncols = plan[s, P_NCOLS]
    obj = plan[s, P_OBJ]
    pc0 = plan[s, P_PC]
    bx = plan[s, P_BX]  # the 2D loop with bx threads along a tile row, or 0
    loop_2d = ncols > 0 and bx > 0  # else the flattened loop
    by = threads // bx if loop_2d else 1
    n_it = ((rows + by - 1) // by) * ((bw + bx - 1) // bx) if loop_2d else (q_total + threads - 1) // threads
    nj = (bw + bx - 1) // bx if loop_2d else 1
    # when bx is a multiple of 32 a warp's lanes share one tile row i and take consecutive
    # columns j from j_lane0: the warp is idle in an iteration whose i or first j is out of
    # the tile (no row, no instruction), and such iterations are skipped without their lanes
    whole_rows = loop_2d and bx % 32 == 0
    t0 = 32 * w
    t0_i, t0_j = (t0 // bx, t0 % bx) if loop_2d else (0, 0)  # lane 0's (ty, tx) in the 2D loop
    seq = seq0
    unroll = plan[s, P_UNROLL]
    tail = plan[s, P_TAIL]
    group = nj if loop_2d else n_it  # one loop: a tile row's iterations, or the flattened loop's
    ga, sa, cnt, first, keep, segs, nseg = scratch
    if kind == 0 and plan[s, P_LOAD] == 1 and (unroll > 1 or tail > 1) and 0 < group <= ga.shape[0]:
        # with a tail: the iterations every thread index nvcc allows (up to MAX_THREAD_INDEX) has, the loop's
        # bound less that index over its step, rounded up
        span, step = (bw, bx) if loop_2d else (q_total, threads)
        sure = max(np.int64(0), (span - MAX_THREAD_INDEX + step - 1) // step)
        # the loop's own instructions a row (copy_rows): a 2D copy of a tile larger than the block; the prologue
        # before the warp's first row
        # the copy that copy_rows price a tile row at a time, where the source has them (its rows are recorded in
        # ``segs`` whatever the source, so that another source's can be priced without staging again)
        row_geo = tail <= 1 and loop_2d and (rows > by or bw > bx)
        by_rows = plan[s, P_ROWS] == 1 and row_geo
        started = False
        new_pass = np.int64(1)
        for g0 in range(0, n_it, group):
            for lane in range(32):
                cnt[lane] = 0
            for k in range(group):
                m = _iteration(g0 + k, box, plan, s, threads, t0, t0_i, t0_j, nj, bx, by, loop_2d, whole_rows, rows,
                               bw, q_total, gaddr, saddr)  # fmt: skip
                for lane in range(32):
                    if (m >> lane) & 1:
                        ga[cnt[lane], lane] = gaddr[lane]
                        sa[cnt[lane], lane] = saddr[lane]
                        cnt[lane] += 1
            a_, f_, rs_, e_, bo_, sp_ = _row_shape(cnt, unroll)
            row = _shape_cost(plan, s, a_, f_, rs_, e_, bo_, sp_) if by_rows else np.int64(0)
            if row > 0 and not started:
                started = True
                seq += plan[s, P_PROLOGUE]
                totals[T_INT] += plan[s, P_PROLOGUE] * MILLI
            r_row, seq_row, st_row = r, seq, totals[T_STORES]
            ord_row = totals[T_LOADS] + totals[T_STORES] + totals[T_WB_LOADS] + totals[T_WB_STORES]
            if tail > 1:
                r, seq = _tail_copy(write, out, delta_out, r, b, w, seq, plan, s, ga, sa, cnt, first, keep, group,
                                    tail, sure, totals, gaddr, saddr)  # fmt: skip
            else:
                r, seq = _unrolled_copy(write, out, delta_out, r, b, w, seq, plan, s, ga, sa, cnt, first, keep,
                                        unroll, not loop_2d, totals, gaddr, saddr)  # fmt: skip
            # the row's instructions besides its loads and stores, less what the stores' P_INT already counted
            span, extra = _row_span(plan, s, row, r - r_row, totals[T_STORES] - st_row)
            totals[T_INT] += extra
            seq = seq_row + span
            if row_geo and a_ > 0:
                k = nseg[0]
                if write and k < segs.shape[0]:
                    segs[k, SG_START] = ord_row
                    segs[k, SG_ROWS] = r - r_row
                    segs[k, SG_STORES] = totals[T_STORES] - st_row
                    segs[k, SG_SLOT] = s
                    segs[k, SG_NEW_PASS] = new_pass
                    segs[k, SG_FIRST] = f_
                    segs[k, SG_REST] = rs_
                    segs[k, SG_ENTRY] = e_
                    segs[k, SG_BODY] = bo_
                    segs[k, SG_SPLIT] = sp_
                nseg[0] = k + 1
                new_pass = np.int64(0)
        return r, seq - seq0, seq
    for it in range(n_it):
        m = _iteration(it, box, plan, s, threads, t0, t0_i, t0_j, nj, bx, by, loop_2d, whole_rows, rows, bw, q_total,
                       gaddr, saddr)  # fmt: skip
        if m != 0:
            if kind == 0:
                if plan[s, P_LOAD] == 1:
                    r, seq = _copy_load(write, out, delta_out, r, b, w, seq, plan, s, m, gaddr, totals)
                r, seq = _copy_store(write, out, delta_out, r, b, w, seq, plan, s, m, saddr, totals)
            else:
                _put(write, out, r, b, w, seq, pc0 + 32, LOAD, SHARED, elem, m, obj, delta_out)
                _put_addr(write, out, r, saddr)
                r += 1
                seq += 1
                totals[T_WB_LOADS] += 1
                op = STORE if plan[s, P_WB] == WB_STORE else REDUCTION
                _put(write, out, r, b, w, seq, pc0 + 48, op, 0, elem, m, obj, delta_out)
                _put_addr(write, out, r, gaddr)
                r += 1
                seq += 1
                totals[T_WB_STORES] += 1
                seq += (plan[s, P_WBINT] + MILLI // 2) // MILLI
                totals[T_INT] += plan[s, P_WBINT]
    return r, seq - seq0, seq


@nb.njit(**LEAF)
def _row_shape(cnt, unroll):
    """The shape of one tile row of the unrolled copy, its lanes ``cnt[lane]`` iterations each (0: no iteration in
    this row): (active, first, rest, entry, body, split), how many times the row takes each of ``copy_rows``' counts
    (:func:`_row_cost`); all 0 where no lane has an iteration."""
    most_rem = np.int64(0)
    most_main = np.int64(0)
    least_rem = np.int64(unroll)
    rem_one = False
    active = False
    for lane in range(32):
        if cnt[lane] > 0:
            active = True
            rem = cnt[lane] % unroll
            most_rem = max(most_rem, rem)
            least_rem = min(least_rem, rem)
            most_main = max(most_main, cnt[lane] // unroll)
            rem_one = rem_one or rem == 1
    z = np.int64(0)
    if not active:
        return z, z, z, z, z, z
    first = rest = entry = body = split = z
    if most_rem >= 1:
        first = np.int64(1)
        split += 1 if least_rem == 0 else 0
    if most_rem >= 2:
        rest = np.int64(1)
        split += 1 if rem_one else 0
    if most_main >= 1:
        passes = np.int64(0)  # how many distinct pass counts the lanes have (each further one a split)
        for g in range(most_main + 1):
            for lane in range(32):
                if cnt[lane] > 0 and cnt[lane] // unroll == g:
                    passes += 1
                    break
        entry = np.int64(1)
        body = most_main
        split += passes - 1
    return np.int64(1), first, rest, entry, body, split


@nb.njit(**LEAF)
def _shape_cost(plan, s, active, first, rest, entry, body, split):
    """A row of shape (active, first, ..., split) (:func:`_row_shape`) priced with slot ``s``'s ``copy_rows``."""
    if active == 0:
        return np.int64(0)
    return (plan[s, P_HEAD] + first * plan[s, P_FIRST] + rest * plan[s, P_REST] + entry * plan[s, P_ENTRY]
            + body * plan[s, P_BODY] + split * plan[s, P_SPLIT])  # fmt: skip


@nb.njit(**LEAF)
def _row_span(plan, s, row, nrows, stores):
    """(the seq a recorded tile row takes, the thousandths of non-memory instructions it adds to its stores') under
    slot ``s`` of ``plan``, of ``nrows`` rows with ``stores`` stores and ``row`` its copy_rows price (0: none), as
    ``_tile_pass`` advances them: one a load, one plus the rounded ``P_INT`` a store, at least ``row`` where the
    row's price is above what its loads and stores count. ``_tile_pass`` advances a row by it, and
    ``resource_rows`` prices a recorded row again with it."""
    span = nrows + stores * ((plan[s, P_INT] + MILLI // 2) // MILLI)
    extra = (row - nrows) * MILLI - stores * plan[s, P_INT]
    if row > 0 and extra > 0:
        return max(span, row), extra
    return span, np.int64(0)


@nb.njit(**LEAF)
def _row_cost(plan, s, cnt, unroll):
    """A warp's instructions for one tile row of the unrolled copy (configs/addressing.toml ``copy_rows``), its
    lanes ``cnt[lane]`` iterations each (0: no iteration in this row): ``head``, ``first`` where a lane's
    remainder n mod u is at least 1, ``rest`` where one's is at least 2, ``entry`` and ``body`` a pass of the
    unrolled body where a lane has u or more, and ``split`` for each further side of a divergent branch: lanes
    with and without a remainder, with a remainder of 1 and of more, and each further count of passes. 0 where no
    lane has an iteration."""
    a, f, rs, e, bo, sp = _row_shape(cnt, unroll)
    return _shape_cost(plan, s, a, f, rs, e, bo, sp)


@nb.njit(**LEAF)
def _unrolled_copy(write, out, delta_out, r, b, w, seq, plan, s, ga, sa, cnt, first, keep, unroll, rolled_rest,
                   totals, gaddr, saddr):  # fmt: skip
    """One copy loop as nvcc unrolls it by ``unroll`` = u (LLVM's runtime unrolling, the remainder first): a lane
    with n iterations (``cnt[lane]``; its elements in ``ga``, ``sa``) runs its n mod u remainder iterations first,
    the first alone and the others together, then n // u batches of u, each batch's loads before its stores; a
    warp issues a batch where any lane has it (configs/addressing.toml, ``copy_unroll``). So n = 3 takes two
    rounds of loads (1 + 2) where the rolled loop takes three, n = 2 two, n = 6 three (1 + 1 + 4). With
    ``rolled_rest`` (the flattened loop, whose remainder nvcc 13 keeps a rolled loop on sm_75 to sm_90: ``LDG
    STS`` and a branch back, then the body of 4) every remainder iteration is alone: n = 3 three rounds, n = 6
    three (1 + 1 + 4), n = 5 two."""
    most_rem = np.int64(0)
    most_main = np.int64(0)
    for lane in range(32):
        most_rem = max(most_rem, cnt[lane] % unroll)
        most_main = max(most_main, cnt[lane] // unroll)
    if most_rem >= 1:  # the remainder's first iteration, alone
        for lane in range(32):
            first[lane] = 0
            keep[lane] = 1 if cnt[lane] % unroll >= 1 else 0
        r, seq = _copy_batch(write, out, delta_out, r, b, w, seq, plan, s, ga, sa, first, np.int64(1), 1, keep,
                             totals, gaddr, saddr)  # fmt: skip
    if rolled_rest:  # the rest of the remainder, one at a time
        for k in range(1, most_rem):
            for lane in range(32):
                first[lane] = k
                keep[lane] = 1 if cnt[lane] % unroll > k else 0
            r, seq = _copy_batch(write, out, delta_out, r, b, w, seq, plan, s, ga, sa, first, np.int64(1), 1, keep,
                                 totals, gaddr, saddr)  # fmt: skip
    elif most_rem >= 2:  # the rest of the remainder, together
        for lane in range(32):
            first[lane] = 1
            keep[lane] = max(cnt[lane] % unroll - 1, 0)
        r, seq = _copy_batch(write, out, delta_out, r, b, w, seq, plan, s, ga, sa, first, most_rem - 1, 1, keep,
                             totals, gaddr, saddr)  # fmt: skip
    for g in range(most_main):  # the unrolled body: u iterations a batch
        for lane in range(32):
            first[lane] = cnt[lane] % unroll + g * unroll
            keep[lane] = unroll if cnt[lane] // unroll > g else 0
        r, seq = _copy_batch(write, out, delta_out, r, b, w, seq, plan, s, ga, sa, first, unroll, 1, keep,
                             totals, gaddr, saddr)  # fmt: skip
    return r, seq


@nb.njit(**LEAF)
def _tail_copy(write, out, delta_out, r, b, w, seq, plan, s, ga, sa, cnt, first, keep, n, tail, sure, totals,
               gaddr, saddr):  # fmt: skip
    """One copy loop as nvcc 13 compiles it for Blackwell (sm_100, sm_120): a tile row's loop in the 2D copy, or
    the flattened loop, of ``n`` = its compile-time trip count (the row's columns over the block's x extent, or the
    tile's elements over the block's threads, rounded up) unrolled whole, its first n - t iterations one at a time
    (each load, then its store) and its last t = ``tail`` together (t loads, then their t stores); a lane takes
    iteration k where it has one (``cnt[lane]`` > k, its elements in ``ga``, ``sa``), and a warp issues what any
    lane has (configs/addressing.toml, ``copy_tail``). So a row of 3 takes two rounds of loads (1 + 2), of 2 one,
    of 5 four. The first ``sure`` iterations, those every thread index up to 1,023 has (a loop longer than 1,024
    elements), go together before the rest: 1,700 elements by 256 threads, n = 7 and 3 sure, ``LLLSSS`` then
    ``LS LS LLSS``; 1,300 by 32, n = 41 and 9 sure, 9 together, 30 alone, the last 2 together."""
    if sure > 0:
        for lane in range(32):
            first[lane] = 0
            keep[lane] = min(cnt[lane], sure)
        r, seq = _copy_batch(write, out, delta_out, r, b, w, seq, plan, s, ga, sa, first, min(sure, n), 1, keep,
                             totals, gaddr, saddr)  # fmt: skip
    solo = min(max(n - tail, sure), n)
    for k in range(sure, solo):
        for lane in range(32):
            first[lane] = k
            keep[lane] = 1 if cnt[lane] > k else 0
        r, seq = _copy_batch(write, out, delta_out, r, b, w, seq, plan, s, ga, sa, first, np.int64(1), 1, keep,
                             totals, gaddr, saddr)  # fmt: skip
    for lane in range(32):
        first[lane] = solo
        keep[lane] = min(max(cnt[lane] - solo, 0), n - solo)
    if n > solo:
        r, seq = _copy_batch(write, out, delta_out, r, b, w, seq, plan, s, ga, sa, first, n - solo, 1, keep,
                             totals, gaddr, saddr)  # fmt: skip
    return r, seq


@nb.njit(**LEAF)
def _staging_pass(write, out, delta_out, r, b, w, threads, plan, rbox, j, seq, totals, box, gaddr, saddr,
                  scratch):  # fmt: skip
    """Stage window ``j`` of every slot (those with accesses in it) for warp ``w``; returns (r, seq)."""
    for s in range(plan.shape[0]):
        if rbox[s, j, R1] < rbox[s, j, R0]:
            continue
        if plan[s, P_LOAD] == 0 and plan[s, P_WB] != WB_ATOMIC:
            continue  # written only: nothing to load, nothing to zero
        for f in range(4):
            box[f] = rbox[s, j, f]
        r, _, seq = _tile_pass(write, out, delta_out, r, b, w, threads, plan, s, box, seq, np.int64(0), totals, gaddr,
                               saddr, scratch)  # fmt: skip
    return r, seq


@nb.njit(**LEAF)
def _writeback_pass(write, out, delta_out, r, b, w, threads, plan, rbox, wbox, j, seq, totals, box, gaddr, saddr,
                    scratch):  # fmt: skip
    """Write window ``j``'s written tiles back for warp ``w``; returns (r, seq)."""
    for s in range(plan.shape[0]):
        if plan[s, P_WB] == WB_NONE:
            continue
        src = wbox if plan[s, P_WB] == WB_STORE else rbox
        if src[s, j, R1] < src[s, j, R0]:
            continue
        for f in range(4):
            box[f] = src[s, j, f]
        r, _, seq = _tile_pass(write, out, delta_out, r, b, w, threads, plan, s, box, seq, np.int64(1), totals, gaddr,
                               saddr, scratch)  # fmt: skip
    return r, seq


@nb.njit(cache=True, nogil=True)
def stage_rows(write, out, delta_out, order, cols, delta, slot_of, plan, n_windows, wpb, threads, barrier, totals,
               segs):  # fmt: skip
    """Rewrite rows ``order`` (sorted by cta, warp, seq) with the staged slots of ``plan``; return (the row count,
    the count of tile rows recorded in ``segs``).

    Per block and window j: each warp, before its first access of window j to any staged
    object, runs (for j > 0) a barrier, the write-back of window j - 1's written tiles and
    another barrier when something is written back, then its share of staging every
    slot's window-j tile (from the block's bounding box of the window's accesses), then a
    barrier (no staging pass and no barrier when every staged object is only written); the
    staged accesses go to shared memory at the tile's row-major offsets
    (row stride ``plan[s, P_STRIDE]`` elements). A warp with no access in a window still
    takes its part, so every warp of a block meets the same barriers. After a warp's last
    row: the remaining windows, then, when something is written back, a barrier and the
    last window's write-back. Inserted instructions shift the seq of every later row;
    ``barrier`` instructions per barrier, ``plan[s, P_INT]`` / ``P_WBINT`` thousandths of a
    non-memory instruction per staged or written-back element row (rounded for the seq).
    ``totals`` accumulates the inserted warp-instructions (T_*; T_INT in thousandths). With
    ``write`` False only the rows are counted; with ``write`` True the rows that fit the
    ``out`` arrays are written and every row is counted, so a return value above their
    length says the buffers were too short (written again into longer ones, the result is
    the same). Each tile row of a 2D unrolled copy that ``copy_rows`` would price is recorded
    in ``segs`` (``SEG_LEN`` columns, ``SG_START`` ...; the rows that fit, every one counted:
    at most half the rows, a load and a store each), what ``resource_rows`` needs to give the
    staging with other sources.
    """
    cta, warp, seq, pc, op, space, width, mask, addr, obj = cols
    cap = out[0].shape[0]
    ns = plan.shape[0]
    n = order.shape[0]
    rbox = np.empty((max(ns, 1), max(n_windows, 1), 4), np.int64)
    wbox = np.empty((max(ns, 1), max(n_windows, 1), 4), np.int64)
    kwin = np.zeros((max(wpb, 1), max(ns, 1)), np.int64)
    box = np.empty(4, np.int64)
    tbox = np.empty(4, np.int64)
    gaddr = np.zeros(32, np.uint64)
    saddr = np.zeros(32, np.uint64)
    unrolled = False
    for s in range(ns):
        if plan[s, P_UNROLL] > 1 or plan[s, P_TAIL] > 1:
            unrolled = True
    group_max = UNROLL_GROUP_MAX if unrolled else 1
    scratch = (np.zeros((group_max, 32), np.uint64), np.zeros((group_max, 32), np.uint64), np.zeros(32, np.int64),
               np.zeros(32, np.int64), np.zeros(32, np.int64), segs, np.zeros(1, np.int64))  # fmt: skip
    any_wb = False
    any_stage = False  # a slot whose tiles are loaded (or zeroed) before use
    for s in range(ns):
        if plan[s, P_WB] != WB_NONE:
            any_wb = True
        if plan[s, P_LOAD] == 1 or plan[s, P_WB] == WB_ATOMIC:
            any_stage = True
    r = np.int64(0)  # not the literal 0: the helpers it is passed to would compile once more for it
    pos = 0
    while pos < n:
        b = cta[order[pos]]
        end = pos
        while end < n and cta[order[end]] == b:
            end += 1
        # the block's bounding boxes per slot and window
        for s in range(ns):
            for j in range(n_windows):
                for box_ in (rbox, wbox):
                    box_[s, j, R0] = BIG
                    box_[s, j, R1] = -BIG
                    box_[s, j, C0] = BIG
                    box_[s, j, C1] = -BIG
        kwin[:, :] = 0
        used = 0
        for t in range(pos, end):
            i = order[t]
            o = obj[i]
            s = slot_of[o] if o >= 0 else -1
            if s < 0:
                continue
            j = kwin[warp[i], s] // plan[s, P_L]
            kwin[warp[i], s] += 1
            if _row_box(i, mask, addr, width, plan[s, P_BASE], plan[s, P_ELEM], plan[s, P_NCOLS], box):
                _grow(rbox[s], j, box)
                if op[i] != LOAD:
                    _grow(wbox[s], j, box)
                used = max(used, j + 1)
        # a privatized 1D tile starts at the object's first element where the block's elements fit the tile from
        # there, as the hint's code has it (bins_first = 0: zero and add back the whole array, the histogram
        # idiom), not at the block's first touched element: its write-back then covers whole sectors
        for s in range(ns):
            if plan[s, P_WB] == WB_ATOMIC and plan[s, P_NCOLS] <= 0:
                for j in range(n_windows):
                    if rbox[s, j, R1] >= rbox[s, j, R0] and rbox[s, j, C1] < plan[s, P_PITCH]:
                        rbox[s, j, C0] = 0
        # each warp of the block, in program order
        t = pos
        for w in range(wpb):
            t2 = t
            while t2 < end and warp[order[t2]] == w:
                t2 += 1
            shift = 0
            cw = np.int64(-1)  # typed, as r: a literal -1 compiled _writeback_pass once more
            for s in range(ns):
                kwin[w, s] = 0
            last = np.int64(-1)
            for u in range(t, t2 + 1):
                at_end = u == t2
                i = order[u] if not at_end else -1
                s = -1
                if not at_end:
                    o = obj[i]
                    s = slot_of[o] if o >= 0 else -1
                    p = seq[i]
                    last = seq[i]
                else:
                    p = last + 1
                target = used - 1 if at_end else (kwin[w, s] // plan[s, P_L] if s >= 0 else cw)
                while cw < target:
                    cur = p + shift
                    if cw >= 0:
                        cur += barrier
                        totals[T_BARRIERS] += 1
                        if any_wb:
                            r, cur = _writeback_pass(
                                write,
                                out,
                                delta_out,
                                r,
                                b,
                                w,
                                threads,
                                plan,
                                rbox,
                                wbox,
                                cw,
                                cur,
                                totals,
                                tbox,
                                gaddr,
                                saddr,
                                scratch,
                            )
                            cur += barrier
                            totals[T_BARRIERS] += 1
                    if any_stage:
                        r, cur = _staging_pass(
                            write,
                            out,
                            delta_out,
                            r,
                            b,
                            w,
                            threads,
                            plan,
                            rbox,
                            cw + 1,
                            cur,
                            totals,
                            tbox,
                            gaddr,
                            saddr,
                            scratch,
                        )
                        cur += barrier
                        totals[T_BARRIERS] += 1
                    shift = cur - p
                    cw += 1
                if at_end:
                    if any_wb and cw >= 0:
                        cur = p + shift + barrier
                        totals[T_BARRIERS] += 1
                        r, cur = _writeback_pass(
                            write,
                            out,
                            delta_out,
                            r,
                            b,
                            w,
                            threads,
                            plan,
                            rbox,
                            wbox,
                            cw,
                            cur,
                            totals,
                            tbox,
                            gaddr,
                            saddr,
                            scratch,
                        )
                    break
                # the original row, shifted; a staged access goes to its tile in shared memory
                if write and r < cap:
                    out[0][r] = cta[i]
                    out[1][r] = warp[i]
                    out[2][r] = seq[i] + shift
                    out[3][r] = pc[i]
                    out[4][r] = op[i]
                    out[5][r] = space[i] if s < 0 else SHARED
                    out[6][r] = width[i]
                    out[7][r] = mask[i]
                    out[9][r] = obj[i]
                    delta_out[r] = delta[i]
                    if s < 0:
                        for lane in range(32):
                            out[8][r, lane] = addr[i, lane]
                    else:
                        j = kwin[w, s] // plan[s, P_L]
                        elem = plan[s, P_ELEM]
                        base = plan[s, P_BASE]
                        ncols = plan[s, P_NCOLS]
                        stride = plan[s, P_STRIDE]
                        m = np.int64(mask[i])
                        e0, k = _affine(i, mask, addr, width, base, elem)
                        if k >= 0:  # evenly spaced elements: step (row, column) lane by lane
                            rr, cc = (e0 // ncols, e0 % ncols) if ncols > 0 else (np.int64(0), e0)
                            dr, dc = (k // ncols, k % ncols) if ncols > 0 else (np.int64(0), k)
                            for lane in range(32):
                                off = ((rr - rbox[s, j, R0]) * stride + (cc - rbox[s, j, C0])) * elem
                                out[8][r, lane] = np.uint64(plan[s, P_SBASE] + off)
                                rr += dr
                                cc += dc
                                if ncols > 0 and cc >= ncols:
                                    cc -= ncols
                                    rr += 1
                        else:  # lane by lane, a lane at the address (or the element after) the one before's stepping
                            pa = np.uint64(0)
                            have = False
                            rr = cc = within = np.int64(0)
                            pv = np.uint64(0)
                            for lane in range(32):
                                if (m >> lane) & 1:
                                    a = addr[i, lane]
                                    if have and a == pa:
                                        out[8][r, lane] = pv
                                        continue
                                    if have and a - pa == np.uint64(elem):
                                        cc += 1
                                        if ncols > 0 and cc == ncols:
                                            rr, cc = rr + 1, np.int64(0)
                                    else:
                                        rr, cc = _elem_rc(a, base, elem, ncols)
                                        within = np.int64(a - np.uint64(base)) % elem
                                    off = ((rr - rbox[s, j, R0]) * stride + (cc - rbox[s, j, C0])) * elem + within
                                    pv = np.uint64(plan[s, P_SBASE] + off)
                                    out[8][r, lane] = pv
                                    pa = a
                                    have = True
                                else:
                                    out[8][r, lane] = np.uint64(0)
                if s >= 0:
                    kwin[w, s] += 1
                r += 1
            t = t2
        pos = end
    return r, scratch[6][0]


@nb.njit(cache=True, nogil=True)
def resource_rows(cta, warp, seq, pc, space, pc_top, src, plan_a, plan_b, segs, seq_out, space_out, stores, int_out):
    """A staged trace's ``seq`` and ``space`` with other staging sources (``restage``).

    Rows are ``stage_rows``' output: each warp's rows together, in program order; an
    inserted row's pc is ``pc_top + 64 * slot`` plus 0 (the staging load, in the source
    space), 16 (the shared store), 32 or 48 (the write-back's load and store). The
    staging load of slot s takes the space ``src[s]``; after each staging store of slot
    s, every later row of the warp moves by the change in the rounded non-memory
    instructions per element (``P_INT`` of ``plan_a``, the staging's, to ``plan_b``'s).
    ``stores[s]`` counts slot s's staging stores. The tile rows ``segs`` recorded
    (``stage_rows``; the staging code's rows counted from 0 find them) are priced again
    with ``plan_b``'s copy_rows (``P_ROWS`` ... ``P_PROLOGUE``, :func:`_row_span`), the
    prologue before the first row priced in each tile pass: every later row of the warp moves
    by the change, and ``int_out[0]`` adds the change in thousandths of non-memory
    instructions besides the stores' ``P_INT``.
    """
    n = seq.shape[0]
    extra = np.int64(0)
    c0 = np.int64(-1)
    w0 = np.int64(-1)
    k = np.int64(0)
    n_seg = segs.shape[0]
    ordinal = np.int64(0)  # the staging code's rows so far
    seg_end = np.int64(-1)  # the ordinal after the tile row being re-priced, and the shift after it
    seg_extra = np.int64(0)
    started_a = started_b = False
    for r in range(n):
        c = np.int64(cta[r])
        w = np.int64(warp[r])
        if c != c0 or w != w0:
            extra = 0
            c0 = c
            w0 = w
        p = np.int64(pc[r]) - pc_top
        if p >= 0 and k < n_seg and ordinal == segs[k, SG_START]:
            s = segs[k, SG_SLOT]
            if segs[k, SG_NEW_PASS] == 1:
                started_a = started_b = False
            f, rs, e = segs[k, SG_FIRST], segs[k, SG_REST], segs[k, SG_ENTRY]
            bo, sp = segs[k, SG_BODY], segs[k, SG_SPLIT]
            row_a = _shape_cost(plan_a, s, 1, f, rs, e, bo, sp) if plan_a[s, P_ROWS] == 1 else np.int64(0)
            row_b = _shape_cost(plan_b, s, 1, f, rs, e, bo, sp) if plan_b[s, P_ROWS] == 1 else np.int64(0)
            pro = np.int64(0)
            if row_a > 0 and not started_a:
                started_a = True
                pro -= plan_a[s, P_PROLOGUE]
            if row_b > 0 and not started_b:
                started_b = True
                pro += plan_b[s, P_PROLOGUE]
            extra += pro
            span_a, int_a = _row_span(plan_a, s, row_a, segs[k, SG_ROWS], segs[k, SG_STORES])
            span_b, int_b = _row_span(plan_b, s, row_b, segs[k, SG_ROWS], segs[k, SG_STORES])
            int_out[0] += pro * MILLI + int_b - int_a
            seg_end = ordinal + segs[k, SG_ROWS]
            seg_extra = extra + span_b - span_a
            k += 1
        seq_out[r] = seq[r] + extra
        sp_r = space[r]
        if p >= 0:
            s = p // 64
            q = p - 64 * s
            if q == 0:
                sp_r = src[s]
            elif q == 16:
                extra += (plan_b[s, P_INT] + MILLI // 2) // MILLI - (plan_a[s, P_INT] + MILLI // 2) // MILLI
                stores[s] += 1
            ordinal += 1
            if ordinal == seg_end:
                extra = seg_extra
                seg_end = -1
        space_out[r] = sp_r


@nb.njit(cache=True, nogil=True)
def write_ranges(obj, op, mask, addr, width, bases, elems, lo, hi):
    """``write_range`` of every object at once, both ways, over rows in any order: ``lo``/``hi`` (2, objects)
    int64, updated in place; row 0 all writes, row 1 plain stores only. ``bases``/``elems`` are indexed by
    object id (a streamed trace's reduction, group by group). A row's lowest and highest element come from
    its lowest and highest lane offsets (element indices grow with the offset), two divisions a row."""
    for i in range(obj.shape[0]):
        o = obj[i]
        if o < 0 or op[i] == LOAD:
            continue
        m = np.int64(mask[i])
        if m == 0:
            continue
        base = bases[o]
        first = BIG
        last = -BIG
        for lane in range(32):
            if (m >> lane) & 1:
                off = np.int64(addr[i, lane] - base)
                first = min(first, off)
                last = max(last, off)
        elem = elems[o]
        e0 = first // elem
        e1 = (last + np.int64(width[i]) - 1) // elem
        lo[0, o] = min(lo[0, o], e0)
        hi[0, o] = max(hi[0, o], e1)
        if op[i] == STORE:
            lo[1, o] = min(lo[1, o], e0)
            hi[1, o] = max(hi[1, o], e1)


@nb.njit(cache=True, nogil=True)
def divergent_loads(idx, obj, op, mask, addr, out):
    """Per object, the loads among rows ``idx`` (warp-level, any order) whose active lanes read more than one
    address: ``out`` (objects) int64, added to in place (a streamed trace's reduction, group by group). In
    constant memory such a load is an ``LDC`` of a register address, its addresses served one after another."""
    for t in range(idx.shape[0]):
        i = idx[t]
        o = obj[i]
        if o < 0 or op[i] != LOAD:
            continue
        if mask[i] == 0:
            continue
        one, _ = one_address(mask, addr, i)
        if not one:
            out[o] += 1


@nb.njit(cache=True, nogil=True)
def write_conflict_ordered(idx, cta, op, mask, addr, width, base, elem, lo, state, touched, carry, plain_only):
    """``write_conflict`` for rows ``idx`` in (cta, warp, seq) order fed in groups of whole blocks, with one byte
    per element instead of an int32 owner: ``state`` 0 unwritten, 1 written by an earlier block, 2 by the
    current block, whose elements are listed in ``touched``. ``carry`` (int64[3]: the current block, how many
    of ``touched`` are used, the row of ``idx`` to resume from) persists across calls.

    Returns (code, block, element): code 0 done (no conflict in these rows), 1 a conflict (the element, first
    written by an earlier block, which the caller finds with ``first_writer``; ``block`` the later writer),
    2 ``touched`` is full (grow it and call again: ``carry[2]`` says where to resume)."""
    for t in range(carry[2], idx.shape[0]):
        i = idx[t]
        if _not_a_write(op[i], plain_only):
            continue
        b = np.int64(cta[i])
        if b != carry[0]:  # a new block: the last one's elements become an earlier block's
            for k in range(carry[1]):
                state[touched[k]] = 1
            carry[0] = b
            carry[1] = 0
        m = np.int64(mask[i])
        w = np.uint64(width[i])
        need = 0
        for lane in range(32):
            if (m >> lane) & 1:
                e0, e1 = _lane_elements(addr[i, lane], w, base, elem)
                need += e1 - e0 + 1
        if carry[1] + need > touched.shape[0]:
            carry[2] = t
            return np.int64(2), np.int64(-1), np.int64(-1)
        for lane in range(32):
            if (m >> lane) & 1:
                e0, e1 = _lane_elements(addr[i, lane], w, base, elem)
                for e in range(e0, e1 + 1):
                    s = e - lo
                    if state[s] == 0:
                        state[s] = 2
                        touched[carry[1]] = s
                        carry[1] += 1
                    elif state[s] == 1:
                        carry[2] = 0
                        return np.int64(1), b, e
    carry[2] = 0
    return np.int64(0), np.int64(-1), np.int64(-1)


@nb.njit(cache=True, nogil=True)
def first_writer(idx, cta, op, mask, addr, width, base, elem, target, plain_only):
    """The block of the first row of ``idx`` (in program order) that writes element ``target``, or -1."""
    for t in range(idx.shape[0]):
        i = idx[t]
        if _not_a_write(op[i], plain_only):
            continue
        m = np.int64(mask[i])
        w = np.uint64(width[i])
        for lane in range(32):
            if (m >> lane) & 1:
                e0, e1 = _lane_elements(addr[i, lane], w, base, elem)
                if e0 <= target <= e1:
                    return np.int64(cta[i])
    return np.int64(-1)


@nb.njit(cache=True, nogil=True)
def vector_rows(cta, warp, seq, pc, op, space, width, mask, addr, obj, delta, slot_of, vec_of, pc_top, keep):
    """Merge each lane's consecutive reads of a staged tile into vector loads, in place (``traces.staging.vectorize``).

    Rows are ``stage_rows``' output (each warp's rows together, in program order). A head is a shared load of a
    staged object whose slot s merges its reads (``vec_of[slot_of[obj]]`` = V > 0 bytes) by the kernel's own
    code (``pc < pc_top``; the staging code's rows are not), of ``width`` w < V dividing V, every active lane's
    address a multiple of V. Its chain is the warp's next V / w - 1 loads of that object, before any staging
    row (a window's end) or any other access of the object: each with the head's mask and width, lane l
    reading the head's address + m w at the m-th. A full chain becomes the head with width V (its delta the
    chain's deltas less the loads removed); the others get ``keep`` False, and each later row of the warp
    moves up by the rows removed before it. Returns the rows removed.
    """
    n = cta.shape[0]
    longest = np.int64(1)
    for v in vec_of:
        longest = max(longest, np.int64(v))
    chain = np.empty(longest, np.int64)
    for r in range(n):
        keep[r] = True
    r = 0
    removed_total = np.int64(0)
    while r < n:
        e = r + 1
        while e < n and cta[e] == cta[r] and warp[e] == warp[r]:
            e += 1
        # the warp's rows are r .. e-1
        for i in range(r, e):
            o = np.int64(obj[i])
            if not keep[i] or o < 0 or o >= slot_of.shape[0] or slot_of[o] < 0 or op[i] != LOAD or space[i] != SHARED:
                continue
            vb = np.int64(vec_of[slot_of[o]])
            w = np.int64(width[i])
            if np.int64(pc[i]) >= pc_top or vb <= 0 or w < 1 or w >= vb or vb % w != 0:
                continue
            m = np.uint32(mask[i])
            aligned = True
            for lane in range(32):
                if (m >> np.uint32(lane)) & np.uint32(1) and addr[i, lane] % np.uint64(vb) != np.uint64(0):
                    aligned = False
                    break
            if not aligned or m == np.uint32(0):
                continue
            need = vb // w - 1
            got = 0
            j = i + 1
            while j < e and got < need:
                if np.int64(pc[j]) >= pc_top:
                    break
                if np.int64(obj[j]) != o:
                    j += 1
                    continue
                if op[j] != LOAD or space[j] != SHARED or not keep[j]:
                    break
                if np.uint32(mask[j]) != m or np.int64(width[j]) != w:
                    break
                step = np.uint64((got + 1) * w)
                ok = True
                for lane in range(32):
                    if (m >> np.uint32(lane)) & np.uint32(1) and addr[j, lane] != addr[i, lane] + step:
                        ok = False
                        break
                if not ok:
                    break
                chain[got] = j
                got += 1
                j += 1
            if got < need:
                continue
            d = np.int64(delta[i]) - need
            for k in range(need):
                keep[chain[k]] = False
                d += np.int64(delta[chain[k]])
            delta[i] = np.int16(max(min(d, 32767), -32768))
            width[i] = np.int8(vb)
        gone = np.int64(0)
        for i in range(r, e):
            if not keep[i]:
                gone += 1
            else:
                seq[i] -= gone
        removed_total += gone
        r = e
    return removed_total


@nb.njit(cache=True, nogil=True)
def compact_rows(keep, cta, warp, seq, pc, op, space, width, mask, addr, obj, delta):
    """The rows with ``keep`` moved up in place over those without, in order (``traces.staging.vectorize``):
    returns their count, the columns' first rows then holding them. What ``a[keep]`` of each column gives, without
    a second copy of the staged trace (its lane addresses 256 bytes a row)."""
    n = keep.shape[0]
    k = np.int64(0)
    while k < n and keep[k]:  # rows before the first one dropped stay where they are
        k += 1
    for r in range(k + 1, n):
        if keep[r]:
            cta[k] = cta[r]
            warp[k] = warp[r]
            seq[k] = seq[r]
            pc[k] = pc[r]
            op[k] = op[r]
            space[k] = space[r]
            width[k] = width[r]
            mask[k] = mask[r]
            for lane in range(32):
                addr[k, lane] = addr[r, lane]
            obj[k] = obj[r]
            delta[k] = delta[r]
            k += 1
    return k
