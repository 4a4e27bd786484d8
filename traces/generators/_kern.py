"""numba kernels shared by several generators. They take typed arrays, never raise,
and write rows into preallocated columns (the ``out`` tuple of ``_common.out_tuple``)."""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, inline="always")
def put(out, r, cta, warp, seq, pc, op, space, width, mask, obj):
    out[0][r] = cta
    out[1][r] = warp
    out[2][r] = seq
    out[3][r] = pc
    out[4][r] = op
    out[5][r] = space
    out[6][r] = width
    out[7][r] = mask
    out[9][r] = obj


@nb.njit(cache=True)
def warp_lanes(bx, by, threads, warp, tx, ty):
    """Fill tx, ty (32,) for the lanes of ``warp`` in a (bx, by) block; returns the mask of existing threads."""
    m = np.uint32(0)
    for lane in range(32):
        t = warp * 32 + lane
        if t < threads:
            tx[lane] = t % bx
            ty[lane] = t // bx
            m |= np.uint32(1) << np.uint32(lane)
        else:
            tx[lane] = 0
            ty[lane] = 0
    return m


@nb.njit(cache=True)
def affine2d(fill, out, off, gx, gy, bx, by, sx, sy, limx, limy, m_obj, m_base, m_elem, m_width, m_op, m_space, m_seq,
             m_pc, m_cx, m_cy, m_c0, counts):  # fmt: skip
    """One row per memory instruction k of every warp with an active lane.

    Lane (X, Y) = (blockIdx.x*sx + tx, blockIdx.y*sy + ty) (sx, sy: the tile a block
    covers, usually bx, by) is active when X < limx and
    Y < limy; its address for instruction k is base_k + elem_k * (cx_k*X + cy_k*Y + c0_k).
    With ``fill`` False, writes the rows per warp into ``counts`` only.

    Serial on purpose: the loop is bound by writing 256 bytes per row, and rows are written
    once, whole (inactive lanes 0), in their final order, so ``out`` needs no zeroing.
    """
    wpb = (bx * by + 31) // 32
    n_warps = gx * gy * wpb
    K = m_obj.shape[0]
    threads = bx * by
    addr = out[8]
    lx = np.empty(32, np.int64)  # lane offsets, tx and ty of the warp's lanes
    ly = np.empty(32, np.int64)
    lin = np.empty(32, np.int64)
    for w in range(n_warps):
        cta = w // wpb
        warp = w % wpb
        x0 = (cta % gx) * sx
        y0 = (cta // gx) * sy
        t = warp * 32
        inside = t + 32 <= threads and x0 + bx <= limx and y0 + by <= limy
        if not fill and inside:  # the common case: a full warp of a block inside the limits
            counts[w] = K
            continue
        mask = np.uint32(0)
        tx = t % bx
        ty = t // bx
        for lane in range(32):
            lx[lane] = tx
            ly[lane] = ty
            if inside or (t + lane < threads and x0 + tx < limx and y0 + ty < limy):
                mask |= np.uint32(1) << np.uint32(lane)
            tx += 1
            if tx == bx:
                tx = 0
                ty += 1
        if not fill:
            counts[w] = K if mask else 0
            continue
        if mask == 0:
            continue
        r = off[w]
        for k in range(K):
            put(out, r, cta, warp, m_seq[k], m_pc[k], m_op[k], m_space[k], m_width[k], mask, m_obj[k])
            cx = m_cx[k]
            cy = m_cy[k]
            e = m_elem[k]
            b = m_base[k] + e * (cx * x0 + cy * y0 + m_c0[k])
            if mask == np.uint32(0xFFFFFFFF):
                for lane in range(32):
                    addr[r, lane] = np.uint64(b + e * (cx * lx[lane] + cy * ly[lane]))
            else:
                for lane in range(32):
                    if (mask >> np.uint32(lane)) & np.uint32(1):
                        addr[r, lane] = np.uint64(b + e * (cx * lx[lane] + cy * ly[lane]))
                    else:
                        addr[r, lane] = np.uint64(0)
            r += 1


@nb.njit(cache=True)
def affine_loop(fill, out, off, counts, gx, gy, bx, by, limx, limy, xperm, n_iter, loop_start, it_len, post_start,
                m_obj, m_base, m_elem, m_op, m_space, m_phase, m_seq, m_pc, m_cx, m_cy, m_ck, m_c0, m_perm):  # fmt: skip
    """Rows of a kernel whose lanes run: pre instructions, a loop of ``n_iter`` iterations, post instructions.

    Lane (X, Y) = (blockIdx.x*bx + tx, blockIdx.y*by + ty) is active when X < limx and
    Y < limy. With ``xperm`` > 0, instructions with ``m_perm`` set see X replaced by
    (X % 32) * xperm + X // 32 (lane-major order: lanes of a warp ``xperm`` elements apart). Instruction k (phase 0 pre, 1 loop,
    2 post) of iteration it reads base_k + elem_k * (cx_k*X + cy_k*Y + ck_k*it + c0_k).
    seq: pre m_seq; loop loop_start + it*it_len + m_seq; post post_start + n_iter*it_len + m_seq.
    """
    wpb = (bx * by + 31) // 32
    n_warps = gx * gy * wpb
    K = m_obj.shape[0]
    threads = bx * by
    per_warp = 0
    for k in range(K):
        per_warp += n_iter if m_phase[k] == 1 else 1
    for w in range(n_warps):
        cta = w // wpb
        warp = w % wpb
        cx = cta % gx
        cy = cta // gx
        tx = np.empty(32, np.int64)
        ty = np.empty(32, np.int64)
        exist = warp_lanes(bx, by, threads, warp, tx, ty)
        mask = np.uint32(0)
        xs = np.zeros(32, np.int64)
        xp = np.zeros(32, np.int64)
        ys = np.zeros(32, np.int64)
        for lane in range(32):
            if (exist >> np.uint32(lane)) & np.uint32(1):
                X = cx * bx + tx[lane]
                Y = cy * by + ty[lane]
                if X < limx and Y < limy:
                    mask |= np.uint32(1) << np.uint32(lane)
                    xs[lane] = X
                    xp[lane] = (X % 32) * xperm + X // 32 if xperm > 0 else X
                    ys[lane] = Y
        if not fill:
            counts[w] = per_warp if mask else 0
            continue
        if mask == 0:
            continue
        r = off[w]
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
                    xx = xp if m_perm[k] else xs
                    for lane in range(32):
                        if (mask >> np.uint32(lane)) & np.uint32(1):
                            out[8][r, lane] = np.uint64(b + m_elem[k] * (m_cx[k] * xx[lane] + m_cy[k] * ys[lane]))
                        else:
                            out[8][r, lane] = np.uint64(0)
                    r += 1
