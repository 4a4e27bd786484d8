"""numba kernels shared by several generators. They take typed arrays, never raise,
and write rows into preallocated columns (the ``out`` tuple of ``_common.out_tuple``)."""

from __future__ import annotations

import numba as nb
import numpy as np

from .._kernels import put_row as put  # the shared row writer

NUMBA_DEPS = "65baa0fce93f9314"  # its imports' sources, for numba's cache (traces.numba_cache)


@nb.njit(cache=True)
def affine2d(fill, out, gx, gy, bx, by, sx, sy, limx, limy, m_obj, m_base, m_elem, m_width, m_op, m_space, m_seq,
             m_pc, m_cx, m_cy, m_c0, m_gx, m_gy):  # fmt: skip
    """One row per memory instruction k of every warp with an active lane; returns (rows, warps
    with an active lane) (with ``fill`` False, only counts them).

    Lane (X, Y) = (blockIdx.x*sx + tx, blockIdx.y*sy + ty) (sx, sy: the tile a block
    covers, usually bx, by) is active when X < limx and
    Y < limy; its address for instruction k is base_k + elem_k * (cx_k*X + cy_k*Y + c0_k).
    An instruction with a guard (gx_k, gy_k) other than (0, 0) is predicated: an active lane
    takes part when also X + gx_k < limx and Y + gy_k < limy (a tile's later outputs), and a
    row with no lane left is not written.
    Serial on purpose: rows are written once, whole (inactive lanes 0), in their final order,
    so ``out`` needs no zeroing. A lane's offset elem_k * (cx_k*tx + cy_k*ty) depends only on
    the warp's place in its block, so it is tabulated once (``tab``); a row of a full warp is
    then its block's base plus one table row (a plain 32-wide add and store).
    """
    wpb = (bx * by + 31) // 32
    n_warps = gx * gy * wpb
    K = m_obj.shape[0]
    threads = bx * by
    addr = out[8]
    # tab[j, k]: lane offsets of instruction k in the j-th warp of a block; ltx, lty: lane (tx, ty).
    tab = np.empty((wpb, K, 32), np.int64)
    ltx = np.empty((wpb, 32), np.int64)
    lty = np.empty((wpb, 32), np.int64)
    for j in range(wpb):
        for lane in range(32):
            t = j * 32 + lane
            ltx[j, lane] = t % bx
            lty[j, lane] = t // bx
        for k in range(K):
            for lane in range(32):
                tab[j, k, lane] = m_elem[k] * (m_cx[k] * ltx[j, lane] + m_cy[k] * lty[j, lane])
    full = np.uint32(0xFFFFFFFF)
    active = 0
    r = 0
    for w in range(n_warps):
        cta = w // wpb
        warp = w % wpb
        x0 = (cta % gx) * sx
        y0 = (cta // gx) * sy
        t = warp * 32
        inside = t + 32 <= threads and x0 + bx <= limx and y0 + by <= limy
        if inside:
            mask = full
        else:
            mask = np.uint32(0)
            for lane in range(32):
                if t + lane < threads and x0 + ltx[warp, lane] < limx and y0 + lty[warp, lane] < limy:
                    mask |= np.uint32(1) << np.uint32(lane)
        if mask == 0:
            continue
        active += 1
        for k in range(K):
            mk = mask
            if m_gx[k] != 0 or m_gy[k] != 0:
                mk = np.uint32(0)
                for lane in range(32):
                    if (mask >> np.uint32(lane)) & np.uint32(1):
                        if x0 + ltx[warp, lane] + m_gx[k] < limx and y0 + lty[warp, lane] + m_gy[k] < limy:
                            mk |= np.uint32(1) << np.uint32(lane)
                if mk == 0:
                    continue
            if fill:
                put(out, r, cta, warp, m_seq[k], m_pc[k], m_op[k], m_space[k], m_width[k], mk, m_obj[k])
                b = m_base[k] + m_elem[k] * (m_cx[k] * x0 + m_cy[k] * y0 + m_c0[k])
                if mk == full:
                    for lane in range(32):
                        addr[r, lane] = np.uint64(b + tab[warp, k, lane])
                else:
                    for lane in range(32):
                        if (mk >> np.uint32(lane)) & np.uint32(1):
                            addr[r, lane] = np.uint64(b + tab[warp, k, lane])
                        else:
                            addr[r, lane] = np.uint64(0)
            r += 1
    return r, active


@nb.njit(cache=True)
def affine_loop(fill, out, gx, gy, bx, by, limx, limy, xperm, n_iter, loop_start, it_len, post_start,
                m_obj, m_base, m_elem, m_op, m_space, m_phase, m_seq, m_pc, m_cx, m_cy, m_ck, m_c0, m_perm):  # fmt: skip
    """Rows of a kernel whose lanes run: pre instructions, a loop of ``n_iter`` iterations, post instructions.
    Returns the number of warps with an active lane (with ``fill`` False it only counts them; each
    has the same number of rows).

    Lane (X, Y) = (blockIdx.x*bx + tx, blockIdx.y*by + ty) is active when X < limx and
    Y < limy. With ``xperm`` > 0, instructions with ``m_perm`` set see X replaced by
    (X % 32) * xperm + X // 32 (lane-major order: lanes of a warp ``xperm`` elements apart). Instruction k (phase 0 pre, 1 loop,
    2 post) of iteration it reads base_k + elem_k * (cx_k*X + cy_k*Y + ck_k*it + c0_k).
    seq: pre m_seq; loop loop_start + it*it_len + m_seq; post post_start + n_iter*it_len + m_seq.

    One serial pass writes every row once in final order; a warp's lane offsets
    elem_k * (cx_k*X + cy_k*Y) are computed once per warp (``lo``), a row adds its iteration's base.
    """
    wpb = (bx * by + 31) // 32
    n_warps = gx * gy * wpb
    K = m_obj.shape[0]
    threads = bx * by
    addr = out[8]
    full = np.uint32(0xFFFFFFFF)
    lo = np.zeros((K, 32), np.int64)
    active = 0
    r = 0
    for w in range(n_warps):
        cta = w // wpb
        warp = w % wpb
        ox = (cta % gx) * bx
        oy = (cta // gx) * by
        mask = np.uint32(0)
        for lane in range(32):
            t = warp * 32 + lane
            if t < threads:
                X = ox + t % bx
                Y = oy + t // bx
                if X < limx and Y < limy:
                    mask |= np.uint32(1) << np.uint32(lane)
                    if fill:
                        xp = (X % 32) * xperm + X // 32 if xperm > 0 else X
                        for k in range(K):
                            xx = xp if m_perm[k] else X
                            lo[k, lane] = m_elem[k] * (m_cx[k] * xx + m_cy[k] * Y)
        if mask == 0:
            continue
        active += 1
        if not fill:
            continue
        for phase in range(3):
            n_rep = n_iter if phase == 1 else 1
            for it in range(n_rep):
                for k in range(K):
                    if m_phase[k] != phase:
                        continue
                    if phase == 0:
                        s = m_seq[k]
                    elif phase == 1:
                        s = loop_start + it * it_len + m_seq[k]
                    else:
                        s = post_start + n_iter * it_len + m_seq[k]
                    put(out, r, cta, warp, s, m_pc[k], m_op[k], m_space[k], m_elem[k], mask, m_obj[k])
                    b = m_base[k] + m_elem[k] * (m_ck[k] * it + m_c0[k])
                    if mask == full:
                        for lane in range(32):
                            addr[r, lane] = np.uint64(b + lo[k, lane])
                    else:
                        for lane in range(32):
                            if (mask >> np.uint32(lane)) & np.uint32(1):
                                addr[r, lane] = np.uint64(b + lo[k, lane])
                            else:
                                addr[r, lane] = np.uint64(0)
                    r += 1
    return active


@nb.njit(cache=True)
def scatter_part(out, cursor, key, cta, warp, seq, pc, op, space, width, mask, addr, obj):
    """Append one Emitter part's rows to their warps' next free places (a stable counting sort
    by warp: rows of a warp keep the order in which they were added)."""
    for i in range(key.shape[0]):
        r = cursor[key[i]]
        cursor[key[i]] = r + 1
        put(out, r, cta[i], warp[i], seq[i], pc, op, space, width, mask[i], obj)
        for lane in range(32):
            out[8][r, lane] = addr[i, lane]


@nb.njit(cache=True)
def seq_sorted(cta, warp, seq):
    """True when seq increases within each run of rows of one (cta, warp)."""
    for i in range(1, seq.shape[0]):
        if cta[i] == cta[i - 1] and warp[i] == warp[i - 1] and seq[i] <= seq[i - 1]:
            return False
    return True


@nb.njit(cache=True)
def matrixmul_rows(out, W, BS, head_len, body_len, s_kind, s_arg, s_seq, s_pc, a_base, b_base, as_base, bs_base,
                   c_base, objs, spaces, store_seq, store_pc):  # fmt: skip
    """Tiled matrix multiply rows (CUDA SDK matrixMul, the textbook Mds/Nds kernel; BS x BS threads,
    BS = 8, 16 or 32) in final order: per warp, per tile, the body's memory slots (kind 0 LDG A,
    1 LDG B, 2 STS As, 3 STS Bs, 4 LDS.128 As[ty][4 arg..], 5 LDS Bs[arg][tx]), then the STG of C.
    Lane l of warp w is thread (tx, ty) = (l % BS, 32 w / BS + l // BS).
    ``objs``/``spaces``: ids and space codes of A, B, As, Bs, C."""
    g = W // BS
    tiles = W // BS
    full = np.uint32(0xFFFFFFFF)
    addr = out[8]
    r = 0
    for cta in range(g * g):
        bx = cta % g
        by = cta // g
        for warp in range(BS * BS // 32):
            ty0 = warp * 32 // BS  # lane l: ty = ty0 + l // BS, tx = l % BS
            for t in range(tiles):
                a = W * BS * by + t * BS
                b = BS * bx + t * BS * W
                s0 = head_len + t * body_len
                for q in range(s_kind.shape[0]):
                    kd = s_kind[q]
                    width = 4
                    if kd == 0:
                        o, op, base0, e = 0, 0, a_base + 4 * (a + W * ty0), 4
                        ld = W
                    elif kd == 1:
                        o, op, base0, e = 1, 0, b_base + 4 * (b + W * ty0), 4
                        ld = W
                    elif kd == 2:
                        o, op, base0, e = 2, 1, as_base + 4 * (ty0 * BS), 4
                        ld = BS
                    elif kd == 3:
                        o, op, base0, e = 3, 1, bs_base + 4 * (ty0 * BS), 4
                        ld = BS
                    elif kd == 4:
                        o, op, base0, e = 2, 0, as_base + 4 * (ty0 * BS + 4 * s_arg[q]), 0
                        ld = BS
                        width = 16
                    else:
                        o, op, base0, e = 3, 0, bs_base + 4 * (s_arg[q] * BS), 4
                        ld = 0
                    put(out, r, cta, warp, s0 + s_seq[q], s_pc[q], op, spaces[o], width, full, objs[o])
                    for lane in range(32):
                        addr[r, lane] = np.uint64(base0 + 4 * ld * (lane // BS) + e * (lane % BS))
                    r += 1
            c = c_base + 4 * (W * BS * by + BS * bx + W * ty0)
            put(out, r, cta, warp, head_len + tiles * body_len + store_seq, store_pc, 1, spaces[4], 4, full, objs[4])
            for lane in range(32):
                addr[r, lane] = np.uint64(c + 4 * W * (lane // BS) + 4 * (lane % BS))
            r += 1


@nb.njit(cache=True)
def convolution_rows_rows(fill, out, gx, gy, width, t_kind, t_pred, t_e, t_base, t_seq, t_pc, t_op, t_space, t_obj):
    """CUDA SDK convolutionRowsKernel rows (16 x 4 threads, 8 result steps, halo 1, s_Data rows of 160)
    in final order: per warp, the template rows t_* (already in seq order) whose predicate leaves
    an active lane. Returns the number of rows (with ``fill`` False it only counts them).

    Lane tid = 32*warp + lane: tx = tid % 16, ty = tid // 16, baseX = (bx*8 - 1)*16 + tx,
    baseY = by*4 + ty. Address of a template row: kind 0 t_base (the c_Kernel operand, broadcast);
    1 t_base + 4*(baseY*width + baseX) (d_Src / d_Dst, t_base holding the row's element offset);
    2 t_base + 4*(ty*160 + tx) (s_Data). Predicate: 0 every lane; 1 baseX >= 0 (left halo);
    2 width - baseX > t_e (right halo).
    """
    BX, BY, STEPS, HALO, SW, WPB = 16, 4, 8, 1, 160, 2
    K = t_kind.shape[0]
    addr = out[8]
    full = np.uint32(0xFFFFFFFF)
    bxs = np.empty(32, np.int64)
    vec = np.empty((3, 32), np.int64)  # per kind: the lane term added to t_base
    r = 0
    for w in range(gx * gy * WPB):
        cta = w // WPB
        warp = w % WPB
        bxi = cta % gx
        byi = cta // gx
        for lane in range(32):
            t = warp * 32 + lane
            tx = t % BX
            ty = t // BX
            bX = (bxi * STEPS - HALO) * BX + tx
            bxs[lane] = bX
            vec[0, lane] = 0
            vec[1, lane] = 4 * ((byi * BY + ty) * width + bX)
            vec[2, lane] = 4 * (ty * SW + tx)
        for k in range(K):
            p = t_pred[k]
            if p == 0:
                mask = full
            else:
                mask = np.uint32(0)
                for lane in range(32):
                    if (bxs[lane] >= 0) if p == 1 else (width - bxs[lane] > t_e[k]):
                        mask |= np.uint32(1) << np.uint32(lane)
                if mask == 0:
                    continue
            if fill:
                put(out, r, cta, warp, t_seq[k], t_pc[k], t_op[k], t_space[k], 4, mask, t_obj[k])
                kd = t_kind[k]
                b = t_base[k]
                for lane in range(32):
                    if (mask >> np.uint32(lane)) & np.uint32(1):
                        addr[r, lane] = np.uint64(b + vec[kd, lane])
                    else:
                        addr[r, lane] = np.uint64(0)
            r += 1
    return r


@nb.njit(cache=True)
def reduction_rows(fill, out, blocks, n_it, head_seq, head_pc, loop_start, loop_len, l_seq, l_pc, after_seq, after_pc,
                   tr_thr, tr_add, tr_op, tr_seq, tr_pc, fin_base0, fin_base, fin_off, fin_pc, ids, spaces, g_in, g_out,
                   sdata):  # fmt: skip
    """SHOC reduce<float, 256> rows in final order; returns the number of rows (with ``fill``
    False it only counts them). Per warp (lanes tid = 32*warp + lane of block b):
    STS sdata[tid]; per iteration it: LDG g_idata[i + 256], LDG g_idata[i] (i = 512*b + tid +
    it*512*blocks; l_seq/l_pc the two slots); STS sdata[tid]; the tree rows q (lanes tid <
    tr_thr[q], sdata[tid + tr_add[q]]) with an active lane; lane tid 0 only: LDS sdata[0], STG
    g_odata[b] at seq fin_base0 (warp 0; fin_base for the others) + fin_off. ``ids``/``spaces``: objects
    g_idata, g_odata, sdata; g_in, g_out, sdata: their bases."""
    B = 256
    WPB = B // 32
    per_pass = 2 * B * blocks
    addr = out[8]
    full = np.uint32(0xFFFFFFFF)
    r = 0
    for w in range(blocks * WPB):
        cta = w // WPB
        warp = w % WPB
        t0 = warp * 32
        if fill:
            put(out, r, cta, warp, head_seq, head_pc, 1, spaces[2], 4, full, ids[2])
            for lane in range(32):
                addr[r, lane] = np.uint64(sdata + 4 * (t0 + lane))
        r += 1
        for it in range(n_it):
            if fill:
                s = loop_start + it * loop_len
                i0 = g_in + 4 * (cta * 2 * B + t0 + it * per_pass)
                put(out, r, cta, warp, s + l_seq[0], l_pc[0], 0, spaces[0], 4, full, ids[0])
                for lane in range(32):
                    addr[r, lane] = np.uint64(i0 + 4 * (B + lane))
                put(out, r + 1, cta, warp, s + l_seq[1], l_pc[1], 0, spaces[0], 4, full, ids[0])
                for lane in range(32):
                    addr[r + 1, lane] = np.uint64(i0 + 4 * lane)
            r += 2
        if fill:
            put(out, r, cta, warp, after_seq, after_pc, 1, spaces[2], 4, full, ids[2])
            for lane in range(32):
                addr[r, lane] = np.uint64(sdata + 4 * (t0 + lane))
        r += 1
        for q in range(tr_thr.shape[0]):
            thr = tr_thr[q]
            if t0 >= thr:
                continue
            if fill:
                mask = full if t0 + 32 <= thr else (np.uint32(1) << np.uint32(thr - t0)) - np.uint32(1)
                put(out, r, cta, warp, tr_seq[q], tr_pc[q], tr_op[q], spaces[2], 4, mask, ids[2])
                for lane in range(32):
                    if t0 + lane < thr:
                        addr[r, lane] = np.uint64(sdata + 4 * (t0 + lane + tr_add[q]))
                    else:
                        addr[r, lane] = np.uint64(0)
            r += 1
        if t0 == 0:  # lane tid 0: the block's result
            if fill:
                s = fin_base0 if warp == 0 else fin_base
                one = np.uint32(1)
                put(out, r, cta, warp, s + fin_off[0], fin_pc[0], 0, spaces[2], 4, one, ids[2])
                put(out, r + 1, cta, warp, s + fin_off[1], fin_pc[1], 1, spaces[1], 4, one, ids[1])
                addr[r, 0] = np.uint64(sdata)
                addr[r + 1, 0] = np.uint64(g_out + 4 * cta)
                for lane in range(1, 32):
                    addr[r, lane] = np.uint64(0)
                    addr[r + 1, lane] = np.uint64(0)
            r += 2
    return r
