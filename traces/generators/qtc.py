"""SHOC QTC QTC_device, full-storage path (``benchmarks/kernels/qtc_full.cu``, recipe ``qtc_full``).

SHOC runs the full-storage path at sizes 1-4 (size 1 with the matrix in global memory, the sample
placement; sizes 2-4 bind it to a 2D texture, ``distance_matrix_txt``, of points x points: Huang &
Li's G -> 2T). ``benchmarks/kernels/qtc.cu`` (recipe ``qtc``) renders the compact-storage path
(SHOC size 5 / --CompactStorage, a points x max_degree matrix); no generator uses it yet.

Input (SHOC ``generate_synthetic_data``, our own RNG): N points in a 20 x 20 square, drawn in groups
of ``random() % (N/30)`` points around random centres (radius up to 10, rejection outside the
square). Two points are neighbours when their squared distance is below threshold^2 (float32
arithmetic, as in SHOC); row p of ``indr_mtrx`` lists p's neighbours in ascending order, -1 padded
to max_degree D (the largest degree). The full N x N ``distance_matrix`` holds the distance of
neighbours and FLT_MAX elsewhere (it is never built here: entries are computed when read).

Launch: the first QTC_device launch of the clustering (``ungrpd_pnts_indr`` the identity, nothing
clustered yet); SHOC's single-GPU participants: 256 blocks of 64 threads when N >= 256, else N
blocks. Block b owns seeds b, b + blocks, ...; a seed whose degree is at most the block's best
cluster so far is skipped. For a grown seed the block clears its Ai_mask row (N bytes) and
dist_to_clust row (D floats), marks the seed, prefetches the seed's neighbours into 12 register
slots (slot k of thread t: neighbour k*64 + t) and then runs rounds until the reduction finds no
point within the threshold: per slot, the lanes holding a candidate read Ai_mask[c]; those not yet
in the cluster read clustered_pnts_mask[c]; those free read distance_matrix[c][latest] (lane i reads
row c_i, column ``latest``: one 128-byte line per lane, the uncoalesced pattern a 2D texture
helps). Neighbours past 12 x 64 are re-read from indr_mtrx each round with their cluster distance in
dist_to_clust. closest_point_reduction: every thread stores its (min, pick) in shared memory,
thread 0 scans the 63 others (LDS dist[j]; on a tie or a smaller distance LDS index[j] and
index[0]; STS index[0] when it wins), all threads read index[0]; thread 0 stores Ai_mask[g] = 1.

Rows and totals follow the recipe's SASS blocks (labels in :data:`_LABELS`); the Ai_mask and
dist_to_clust clearing loops are costed at their 16-unrolled bodies' average per iteration (plus
their remainder blocks once), the reduction loop at the average of its 4 unrolled bodies.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..codes import LOAD, STORE
from ..errors import InputError
from . import _common as C
from ._kern import put

NUMBA_DEPS = "91f0f14b33c671f9"  # its imports' sources, for numba's cache (traces.numba_cache)

SASS = "qtc_full"
TPB = 64
SLOTS = 12
SEED = 20240611
SQUARE = 20.0

# Segment ids (counted per warp execution in the numba walk, costed in Python).
(S_HEAD, S_SEEDCHK, S_SEEDNEXT, S_AICLR_FIX, S_AICLR_IT, S_DCLR_FIX, S_DCLR_IT, S_POSTSEED, S_ROUND_PRE,
 S_EXTRA_IT, S_RED_STS, S_RED_J, S_RED_FIN, S_RED_JOIN, S_RED_END_OK, S_RED_END_NO, S_ROUND_END, S_END_W0,
 S_END_WX, S_X_FIX) = range(20)  # fmt: skip
N_SEG = 20
# Row kinds: (segment whose start the seq offset is relative to, offset, pc) in K_OFF / K_PC.
(K_UNG, K_DEG, K_AICLR, K_DCLR, K_AISEED, K_STS_IDX, K_STS_DIST, K_J_DIST, K_J_IDXJ, K_J_IDX0, K_J_IDXJ_LT, K_J_STS,
 K_J_FAIL, K_LDS0, K_AIG, K_CARD0, K_CARD1, K_X_IND, K_X_AI, K_X_CL, K_X_DM, K_X_DC, K_X_DCST) = range(23)  # fmt: skip
N_KIND = 23
X_OBJ = (3, 1, 2, 0, 6, 6)  # indr_mtrx, Ai_mask, clustered, distance_matrix, dist_to_clust (load, store)
X_WIDTH = (4, 1, 1, 4, 4, 4)


def _rng(tag: int) -> np.random.Generator:
    return np.random.default_rng([SEED, tag])


def points(n: int, tag: int = 7) -> np.ndarray:
    """(n, 2) float32 points in the 20 x 20 square, in groups as SHOC's generator makes them."""
    rng = _rng(tag)
    out = np.empty((n, 2), np.float32)
    count = 0
    gmax = max(1, n // 30)
    while count < n:
        cx, cy, R = rng.random() * SQUARE, rng.random() * SQUARE, rng.random() * SQUARE / 2
        g = min(int(rng.integers(0, gmax)), n - count)
        while g > 0:
            m = 2 * g + 8  # draw a batch, keep the points inside the square (SHOC rejects one at a time)
            sign = np.where(rng.random(m) < 0.5, -1.0, 1.0)
            r = rng.random(m) * R
            dx = (2.0 * rng.random(m) - 1.0) * r
            dy = np.sqrt(np.maximum(r * r - dx * dx, 0.0)) * sign
            x, y = cx + dx, cy + dy
            ok = (x >= 0) & (x <= SQUARE) & (y >= 0) & (y <= SQUARE)
            k = min(g, int(ok.sum()))
            out[count : count + k, 0] = x[ok][:k]
            out[count : count + k, 1] = y[ok][:k]
            count += k
            g -= k
    return out


@nb.njit(cache=True, inline="always")
def _near(px, py, i, j, thr_sq):
    """Points i and j are distinct neighbours (squared distance under the threshold)."""
    dx = px[i] - px[j]
    dy = py[i] - py[j]
    return j != i and dx * dx + dy * dy < thr_sq


@nb.njit(cache=True)
def _degrees(px, py, thr_sq):
    n = px.shape[0]
    deg = np.zeros(n, np.int64)
    for i in range(n):
        c = 0
        for j in range(n):
            if _near(px, py, i, j, thr_sq):
                c += 1
        deg[i] = c
    return deg


@nb.njit(cache=True)
def _indirection(px, py, thr_sq, D):
    n = px.shape[0]
    ind = np.full((n, D), -1, np.int32)
    for i in range(n):
        c = 0
        for j in range(n):
            if _near(px, py, i, j, thr_sq):
                ind[i, c] = j
                c += 1
    return ind


def neighbourhoods(n: int, threshold: float):
    """(points, indr_mtrx (n, D) int32, degrees (n,) int64) of the synthetic input."""
    p = points(n)
    px, py = np.ascontiguousarray(p[:, 0]), np.ascontiguousarray(p[:, 1])
    thr_sq = np.float32(threshold) * np.float32(threshold)
    deg = _degrees(px, py, thr_sq)
    D = max(1, int(deg.max()))
    return p, _indirection(px, py, thr_sq, D), deg


@nb.njit(cache=True, inline="always")
def _dist(px, py, thr_sq, a, b):
    """distance_matrix[a][b]: the float32 distance of neighbours, FLT_MAX otherwise."""
    dx = px[a] - px[b]
    dy = py[a] - py[b]
    d2 = dx * dx + dy * dy
    if d2 < thr_sq and a != b:
        return np.float32(np.sqrt(np.float64(d2)))
    return np.float32(3.4028234663852886e38)


@nb.njit(cache=True, inline="always")
def _row(fill, out, cur, w, cta, s, kind, K_OFF, K_PC, op, space, width, mask, obj, lane_addr):
    """Write one row of warp w at cur[w] (fill) or count it; returns nothing."""
    if mask == 0:
        return
    if fill:
        r = cur[w]
        put(out, r, cta, w, s + K_OFF[kind], K_PC[kind], op, space, width, mask, obj)
        for lane in range(32):
            if (mask >> np.uint32(lane)) & np.uint32(1):
                out[8][r, lane] = lane_addr[lane]
            else:
                out[8][r, lane] = np.uint64(0)
    cur[w] += 1


@nb.njit(cache=True)
def _walk(fill, out, off, counts, segs, b0, b1, N, D, blocks, px, py, thr, ind, deg, SEG_LEN, K_OFF, K_PC,
          SLOT_LEN, SLOT_SKIP, SLOT_OFF, SLOT_PC, PREF_CUT, PREF_OFF, PREF_PC, RED_J_LEN, base, obj, spc):  # fmt: skip
    """Simulate blocks b0..b1-1 of QTC_device. fill False: rows per (block, warp) into counts[b*2+w]
    and segment executions into segs (per warp: [seg] counts, slots, prefetch cuts); fill True:
    rows written from off[b*2+w]. base/obj/spc: per object (0 distance_matrix, 1 Ai_mask,
    2 clustered_pnts_mask, 3 indr_mtrx, 4 cluster_cardinalities, 5 ungrpd_pnts_indr, 6 dist_to_clust,
    7 degrees, 8 dist_array, 9 index_array)."""
    thr32 = np.float32(thr)
    thr_sq = thr32 * thr32
    two_thr = np.float32(2.0) * thr32
    ai = np.zeros(N, np.uint8)
    cand = np.empty((SLOTS, TPB), np.int64)
    cdist = np.empty((SLOTS, TPB), np.float32)
    dcl = np.empty(max(D, 1), np.float32)
    mind = np.empty(TPB, np.float32)
    pick = np.empty(TPB, np.int64)
    la = np.zeros(32, np.uint64)
    cur = np.zeros(2, np.int64)
    s = np.zeros(2, np.int64)
    n_ai = (N + TPB - 1) // TPB
    n_dc = (D + TPB - 1) // TPB
    for b in range(b0, b1):
        if fill:
            cur[0] = off[2 * b]
            cur[1] = off[2 * b + 1]
        else:
            cur[0] = 0
            cur[1] = 0
        for w in range(2):
            s[w] = 0
            segs[S_HEAD] += 1
            s[w] += SEG_LEN[S_HEAD]
        best = -1
        for sd in range(b, N, blocks):
            seed = sd  # first launch: ungrpd_pnts_indr is the identity
            degree = deg[seed]
            for w in range(2):
                la[:] = np.uint64(base[5] + 4 * sd)
                _row(fill, out, cur, w, b, s[w], K_UNG, K_OFF, K_PC, LOAD, spc[5], 4, np.uint32(0xFFFFFFFF), obj[5], la)
                la[:] = np.uint64(base[7] + 4 * seed)
                _row(fill, out, cur, w, b, s[w], K_DEG, K_OFF, K_PC, LOAD, spc[7], 4, np.uint32(0xFFFFFFFF), obj[7], la)
                segs[S_SEEDCHK] += 1
                s[w] += SEG_LEN[S_SEEDCHK]
            if degree <= best:
                for w in range(2):
                    segs[S_SEEDNEXT] += 1
                    s[w] += SEG_LEN[S_SEEDNEXT]
                continue
            # Clear Ai_mask (bytes) and dist_to_clust, one row per loop iteration.
            for w in range(2):
                segs[S_AICLR_FIX] += 1
                s[w] += SEG_LEN[S_AICLR_FIX]
                for it in range(n_ai):
                    m = np.uint32(0)
                    for lane in range(32):
                        i = it * TPB + w * 32 + lane
                        la[lane] = np.uint64(base[1] + b * N + i)
                        if i < N:
                            m |= np.uint32(1) << np.uint32(lane)
                    _row(fill, out, cur, w, b, s[w], K_AICLR, K_OFF, K_PC, STORE, spc[1], 1, m, obj[1], la)
                    if m != 0:
                        segs[S_AICLR_IT] += 1
                        s[w] += SEG_LEN[S_AICLR_IT]
                segs[S_DCLR_FIX] += 1
                s[w] += SEG_LEN[S_DCLR_FIX]
                for it in range(n_dc):
                    m = np.uint32(0)
                    for lane in range(32):
                        i = it * TPB + w * 32 + lane
                        la[lane] = np.uint64(base[6] + 4 * (b * D + i))
                        if i < D:
                            m |= np.uint32(1) << np.uint32(lane)
                    _row(fill, out, cur, w, b, s[w], K_DCLR, K_OFF, K_PC, STORE, spc[6], 4, m, obj[6], la)
                    if m != 0:
                        segs[S_DCLR_IT] += 1
                        s[w] += SEG_LEN[S_DCLR_IT]
            ai[:] = 0
            ai[seed] = 1
            for i in range(D):
                dcl[i] = 0
            # Ai_mask[seed] = 1 by thread 0, then the prefetch of the 12 slots (PREF_CUT by slots run).
            la[:] = np.uint64(0)
            la[0] = np.uint64(base[1] + b * N + seed)
            _row(fill, out, cur, 0, b, s[0], K_AISEED, K_OFF, K_PC, STORE, spc[1], 1, np.uint32(1), obj[1], la)
            for k in range(SLOTS):
                for t in range(TPB):
                    cand[k, t] = -1
                    cdist[k, t] = 0
            for w in range(2):
                n_pref = 0
                for k in range(SLOTS):
                    m = np.uint32(0)
                    for lane in range(32):
                        t = w * 32 + lane
                        j = k * TPB + t
                        la[lane] = np.uint64(base[3] + 4 * (seed * D + j))
                        if j < degree:
                            m |= np.uint32(1) << np.uint32(lane)
                            cand[k, t] = ind[seed, j]
                    if m == 0:
                        break
                    if fill:
                        r = cur[w]
                        put(out, r, b, w, s[w] + PREF_OFF[k], PREF_PC[k], LOAD, spc[3], 4, m, obj[3])
                        for lane in range(32):
                            out[8][r, lane] = la[lane] if (m >> np.uint32(lane)) & np.uint32(1) else np.uint64(0)
                    cur[w] += 1
                    n_pref += 1
                segs[N_SEG + 2 * SLOTS + n_pref] += 1
                s[w] += PREF_CUT[n_pref]
                segs[S_ROUND_PRE] += 1
                s[w] += SEG_LEN[S_ROUND_PRE]
            cnt = 1
            latest = seed
            while cnt < N:
                for t in range(TPB):
                    mind[t] = two_thr
                    pick[t] = -1
                # The 12 register slots.
                for k in range(SLOTS):
                    for w in range(2):
                        m_ai = np.uint32(0)
                        m_cl = np.uint32(0)
                        m_dm = np.uint32(0)
                        for lane in range(32):
                            c = cand[k, w * 32 + lane]
                            if c >= 0:
                                m_ai |= np.uint32(1) << np.uint32(lane)
                                if ai[c] == 0:  # clustered_pnts_mask is all zero in the first launch
                                    m_cl |= np.uint32(1) << np.uint32(lane)
                                    m_dm |= np.uint32(1) << np.uint32(lane)
                        if m_ai == 0:
                            segs[N_SEG + k] += 1  # skipped slot
                            s[w] += SLOT_SKIP[k]
                            continue
                        segs[N_SEG + SLOTS + k] += 1
                        for lane in range(32):
                            c = cand[k, w * 32 + lane]
                            la[lane] = np.uint64(base[1] + b * N + c) if c >= 0 else np.uint64(0)
                        if fill:
                            r = cur[w]
                            put(out, r, b, w, s[w] + SLOT_OFF[k, 0], SLOT_PC[k, 0], LOAD, spc[1], 1, m_ai, obj[1])
                            for lane in range(32):
                                out[8][r, lane] = la[lane]
                        cur[w] += 1
                        for lane in range(32):
                            c = cand[k, w * 32 + lane]
                            la[lane] = (
                                np.uint64(base[2] + c) if (m_cl >> np.uint32(lane)) & np.uint32(1) else np.uint64(0)
                            )
                        if fill and m_cl != 0:
                            r = cur[w]
                            put(out, r, b, w, s[w] + SLOT_OFF[k, 1], SLOT_PC[k, 1], LOAD, spc[2], 1, m_cl, obj[2])
                            for lane in range(32):
                                out[8][r, lane] = la[lane]
                        if m_cl != 0:
                            cur[w] += 1
                        for lane in range(32):
                            t = w * 32 + lane
                            c = cand[k, t]
                            if (m_dm >> np.uint32(lane)) & np.uint32(1):
                                la[lane] = np.uint64(base[0] + 4 * (c * N + latest))
                                dnew = _dist(px, py, thr_sq, c, latest)
                                diam = cdist[k, t]
                                if dnew > diam:
                                    cdist[k, t] = dnew
                                    diam = dnew
                                if diam < mind[t]:
                                    mind[t] = diam
                                    pick[t] = c
                            else:
                                la[lane] = np.uint64(0)
                                if c >= 0:
                                    cand[k, t] = -1  # in the cluster: never looked at again
                        if fill and m_dm != 0:
                            r = cur[w]
                            put(out, r, b, w, s[w] + SLOT_OFF[k, 2], SLOT_PC[k, 2], LOAD, spc[0], 4, m_dm, obj[0])
                            for lane in range(32):
                                out[8][r, lane] = la[lane]
                        if m_dm != 0:
                            cur[w] += 1
                        s[w] += SLOT_LEN[k]
                # Neighbours past the 12 slots: refetched every round.
                for w in range(2):
                    segs[S_X_FIX] += 1
                    s[w] += SEG_LEN[S_X_FIX]
                    i0 = SLOTS * TPB
                    while i0 + w * 32 < degree:
                        m_x = np.uint32(0)
                        m_fr = np.uint32(0)
                        m_st = np.uint32(0)
                        for lane in range(32):
                            j = i0 + w * 32 + lane
                            if j < degree:
                                m_x |= np.uint32(1) << np.uint32(lane)
                                if ai[ind[seed, j]] == 0:
                                    m_fr |= np.uint32(1) << np.uint32(lane)
                        for q in range(6):
                            mm = m_x if q <= 1 else (m_fr if q <= 4 else m_st)
                            if q == 5:  # the updates of this round, after the loads
                                for lane in range(32):
                                    t = w * 32 + lane
                                    j = i0 + t
                                    if (m_fr >> np.uint32(lane)) & np.uint32(1):
                                        c = ind[seed, j]
                                        dnew = _dist(px, py, thr_sq, c, latest)
                                        diam = dcl[j]
                                        if dnew > diam:
                                            m_st |= np.uint32(1) << np.uint32(lane)
                                            dcl[j] = dnew
                                            diam = dnew
                                        if diam < mind[t]:
                                            mind[t] = diam
                                            pick[t] = c
                                mm = m_st
                            for lane in range(32):
                                j = i0 + w * 32 + lane
                                if not (mm >> np.uint32(lane)) & np.uint32(1):
                                    la[lane] = np.uint64(0)
                                    continue
                                c = ind[seed, j]
                                if q == 0:
                                    la[lane] = np.uint64(base[3] + 4 * (seed * D + j))
                                elif q == 1:
                                    la[lane] = np.uint64(base[1] + b * N + c)
                                elif q == 2:
                                    la[lane] = np.uint64(base[2] + c)
                                elif q == 3:
                                    la[lane] = np.uint64(base[0] + 4 * (c * N + latest))
                                else:
                                    la[lane] = np.uint64(base[6] + 4 * (b * D + j))
                            oi = X_OBJ[q]
                            _row(fill, out, cur, w, b, s[w], K_X_IND + q, K_OFF, K_PC, 1 if q == 5 else 0, spc[oi],
                                 X_WIDTH[q], mm, obj[oi], la)  # fmt: skip
                        segs[S_EXTRA_IT] += 1
                        s[w] += SEG_LEN[S_EXTRA_IT]
                        i0 += TPB
                # closest_point_reduction: STS index[tid], STS dist[tid]; thread 0 scans.
                for w in range(2):
                    for lane in range(32):
                        la[lane] = np.uint64(base[9] + 4 * (w * 32 + lane))
                    _row(
                        fill,
                        out,
                        cur,
                        w,
                        b,
                        s[w],
                        K_STS_IDX,
                        K_OFF,
                        K_PC,
                        STORE,
                        spc[9],
                        4,
                        np.uint32(0xFFFFFFFF),
                        obj[9],
                        la,
                    )
                    for lane in range(32):
                        la[lane] = np.uint64(base[8] + 4 * (w * 32 + lane))
                    _row(
                        fill,
                        out,
                        cur,
                        w,
                        b,
                        s[w],
                        K_STS_DIST,
                        K_OFF,
                        K_PC,
                        STORE,
                        spc[8],
                        4,
                        np.uint32(0xFFFFFFFF),
                        obj[8],
                        la,
                    )
                    segs[S_RED_STS] += 1
                    s[w] += SEG_LEN[S_RED_STS]
                d = mind[0]
                idx0 = pick[0]
                la[:] = np.uint64(0)
                for j in range(1, TPB):
                    x = mind[j]
                    la[0] = np.uint64(base[8] + 4 * j)
                    _row(fill, out, cur, 0, b, s[0], K_J_DIST, K_OFF, K_PC, LOAD, spc[8], 4, np.uint32(1), obj[8], la)
                    if x < d:
                        la[0] = np.uint64(base[9] + 4 * j)
                        _row(
                            fill,
                            out,
                            cur,
                            0,
                            b,
                            s[0],
                            K_J_IDXJ_LT,
                            K_OFF,
                            K_PC,
                            LOAD,
                            spc[9],
                            4,
                            np.uint32(1),
                            obj[9],
                            la,
                        )
                        d = x
                        idx0 = pick[j]
                        la[0] = np.uint64(base[9])
                        _row(
                            fill, out, cur, 0, b, s[0], K_J_STS, K_OFF, K_PC, STORE, spc[9], 4, np.uint32(1), obj[9], la
                        )
                    elif x == d:
                        la[0] = np.uint64(base[9] + 4 * j)
                        _row(
                            fill, out, cur, 0, b, s[0], K_J_IDXJ, K_OFF, K_PC, LOAD, spc[9], 4, np.uint32(1), obj[9], la
                        )
                        la[0] = np.uint64(base[9])
                        _row(
                            fill, out, cur, 0, b, s[0], K_J_IDX0, K_OFF, K_PC, LOAD, spc[9], 4, np.uint32(1), obj[9], la
                        )
                        if pick[j] < idx0:
                            idx0 = pick[j]
                            _row(
                                fill,
                                out,
                                cur,
                                0,
                                b,
                                s[0],
                                K_J_STS,
                                K_OFF,
                                K_PC,
                                STORE,
                                spc[9],
                                4,
                                np.uint32(1),
                                obj[9],
                                la,
                            )
                    s[0] += RED_J_LEN
                segs[S_RED_J] += TPB - 1
                g = idx0
                if d > thr32:
                    g = -1
                    la[0] = np.uint64(base[9])
                    _row(fill, out, cur, 0, b, s[0], K_J_FAIL, K_OFF, K_PC, STORE, spc[9], 4, np.uint32(1), obj[9], la)
                segs[S_RED_FIN] += 1
                s[0] += SEG_LEN[S_RED_FIN]
                for w in range(2):
                    segs[S_RED_JOIN] += 1
                    s[w] += SEG_LEN[S_RED_JOIN]
                    la[:] = np.uint64(base[9])
                    _row(
                        fill,
                        out,
                        cur,
                        w,
                        b,
                        s[w],
                        K_LDS0,
                        K_OFF,
                        K_PC,
                        LOAD,
                        spc[9],
                        4,
                        np.uint32(0xFFFFFFFF),
                        obj[9],
                        la,
                    )
                    if g >= 0:
                        if w == 0:
                            la[:] = np.uint64(0)
                            la[0] = np.uint64(base[1] + b * N + g)
                            _row(
                                fill,
                                out,
                                cur,
                                0,
                                b,
                                s[0],
                                K_AIG,
                                K_OFF,
                                K_PC,
                                STORE,
                                spc[1],
                                1,
                                np.uint32(1),
                                obj[1],
                                la,
                            )
                        segs[S_RED_END_OK] += 1
                        s[w] += SEG_LEN[S_RED_END_OK]
                    else:
                        segs[S_RED_END_NO] += 1
                        s[w] += SEG_LEN[S_RED_END_NO]
                    segs[S_ROUND_END] += 1
                    s[w] += SEG_LEN[S_ROUND_END]
                if g < 0:
                    break
                ai[g] = 1
                latest = g
                cnt += 1
            if cnt > best:
                best = cnt
            for w in range(2):
                segs[S_POSTSEED] += 1
                s[w] += SEG_LEN[S_POSTSEED]
        la[:] = np.uint64(0)
        la[0] = np.uint64(base[4] + 4 * (2 * b))
        _row(fill, out, cur, 0, b, s[0], K_CARD0, K_OFF, K_PC, STORE, spc[4], 4, np.uint32(1), obj[4], la)
        la[0] = np.uint64(base[4] + 4 * (2 * b + 1))
        _row(fill, out, cur, 0, b, s[0], K_CARD1, K_OFF, K_PC, STORE, spc[4], 4, np.uint32(1), obj[4], la)
        segs[S_END_W0] += 1
        segs[S_END_WX] += 1
        if not fill:
            counts[2 * b] = cur[0]
            counts[2 * b + 1] = cur[1]


def _seg(*parts):
    """Sum of segments: (length, counts)."""
    length = sum(p.length for p in parts)
    counts = {c: sum(p.counts[c] for p in parts) for c in parts[0].counts}
    return length, counts


def _slots():
    """The 12 register-slot blocks (Ai_mask, clustered_pnts_mask, distance_matrix loads) and the
    BSYNC block after each."""
    blocks = C.recipe(SASS)["blocks"]
    out = []
    for i, b in enumerate(blocks):
        if [m[1] for m in b["mem"]] == ["LDG.E.U8", "LDG.E.U8", "LDG.E"]:
            out.append((b, blocks[i + 1]))
    assert len(out) == SLOTS, len(out)
    return out


def qtc(points: int, threshold: int = 1):
    """SHOC QTC QTC_device (full storage, distance matrix in global memory; Huang & Li Table IV:
    distance_matrix_txt G -> 2T): the first launch of the clustering of ``points`` synthetic points
    with cluster diameter ``threshold``. See the module docstring."""
    N = points
    if N < 32:
        raise InputError(f"qtc: at least 32 points, got {N}")
    pts, ind, deg = neighbourhoods(N, float(threshold))
    D = ind.shape[1]
    blocks = 256 if N >= 256 else N  # SHOC calculate_participants: SM_COUNT * OVR_SBSCR_FACTOR
    L = C.Layout()
    dm = L.add("distance_matrix_txt", "global", 4 * N * N, shape=(N, N))
    im = L.add("indr_mtrx", "global", 4 * N * D, shape=(N, D))
    dg = L.add("degrees", "global", 4 * N)
    ug = L.add("ungrpd_pnts_indr", "global", 4 * N)
    am = L.add("Ai_mask", "global", blocks * N, elem_bytes=1, shape=(blocks, N), written=True)
    dc = L.add("dist_to_clust", "global", 4 * blocks * D, shape=(blocks, D), written=True)
    cm = L.add("clustered_pnts_mask", "global", N, elem_bytes=1)
    cc = L.add("cluster_cardinalities", "global", 4 * 2 * blocks, written=True)
    da = L.add("dist_array", "shared", 4 * TPB, written=True)
    ia = L.add("index_array", "shared", 4 * TPB, written=True)
    order = (dm, am, cm, im, cc, ug, dc, dg, da, ia)
    base = np.array([o.base for o in order], np.int64)
    obj = np.array([o.id for o in order], np.int16)
    spc = np.array([C.space_code(o) for o in order], np.int8)

    k = SASS
    sg = lambda *a, **kw: C.segment(k, *a, **kw)  # noqa: E731
    ai_it = sg(".L_x_8", per=16, mem_per_iter=1)
    dc_it = sg(".L_x_17", per=16, mem_per_iter=1)
    red_all = sg(".L_x_75...L_x_73")
    red0 = sg(".L_x_75...L_x_57")
    # Thread 0's scan, 4 unrolled bodies: costed on the usual path (dist[j] no smaller than the minimum:
    # each body up to its branch to the BSYNC, the BSYNC, and the loop edge once per 4); rows are
    # spaced by the 4 bodies' average length so that every path's rows keep their SASS order.
    common = _seg(sg(".L_x_75", upto=9), sg(".L_x_57"), sg(".L_x_54", upto=8), sg(".L_x_62"), sg(".L_x_59", upto=8),
                  sg(".L_x_67"), sg(".L_x_64", upto=10), sg(".L_x_73"), sg(".L_x_70"))  # fmt: skip
    red_j = (int(round(red_all.length / 4)), {c: v / 4 for c, v in common[1].items()})
    S = {
        S_HEAD: _seg(sg(k)),
        S_SEEDCHK: _seg(sg(".L_x_78", upto=10)),
        S_SEEDNEXT: _seg(sg(".L_x_1")),
        S_AICLR_FIX: _seg(sg(".L_x_78...L_x_4", first=10), sg(".L_x_7"), sg(".L_x_10"), sg(".L_x_3")),
        S_AICLR_IT: _seg(ai_it),
        S_DCLR_FIX: _seg(sg(".L_x_2...L_x_13"), sg(".L_x_16"), sg(".L_x_19"), sg(".L_x_12")),
        S_DCLR_IT: _seg(dc_it),
        S_POSTSEED: _seg(sg(".L_x_22...L_x_1")),
        S_ROUND_PRE: _seg(sg(".L_x_21...L_x_20")),
        S_X_FIX: _seg(sg(".L_x_45")),
        S_EXTRA_IT: _seg(sg(".L_x_51...L_x_49")),
        S_RED_STS: _seg(sg(".L_x_48...L_x_47")),
        S_RED_J: red_j,
        S_RED_FIN: _seg(sg(".L_x_70...L_x_69")),
        S_RED_JOIN: _seg(sg(".L_x_53")),
        S_RED_END_OK: _seg(sg(".L_x_52")),
        S_RED_END_NO: _seg(sg(".L_x_52", upto=6)),
        S_ROUND_END: _seg(sg(".L_x_76")),
        S_END_W0: _seg(sg(".L_x_0...L_x_81")),
        S_END_WX: _seg(sg(".L_x_0"), sg(".L_x_80", upto=1)),
    }
    SEG_LEN = np.array([S[i][0] for i in range(N_SEG)], np.int64)
    pre = sg(".L_x_11")
    red_sts = sg(".L_x_48...L_x_47")
    x_it = sg(".L_x_51...L_x_49")
    fin = sg(".L_x_70...L_x_69")
    end_ok = sg(".L_x_52")
    end0 = sg(".L_x_0...L_x_81")
    kinds = {
        K_UNG: (1, 0), K_DEG: (1, 1),  # (segment, index of its memory instruction)
        K_AICLR: (ai_it, 0), K_DCLR: (dc_it, 0), K_AISEED: (pre, 0),
        K_STS_IDX: (red_sts, 0), K_STS_DIST: (red_sts, 1),
        K_J_DIST: (red0, 0), K_J_IDXJ: (red0, 1), K_J_IDX0: (red0, 2), K_J_IDXJ_LT: (red0, 3), K_J_STS: (red0, 4),
        K_J_FAIL: (fin, 0), K_LDS0: (end_ok, 0), K_AIG: (end_ok, 1), K_CARD0: (end0, 0), K_CARD1: (end0, 1),
        K_X_IND: (x_it, 0), K_X_AI: (x_it, 1), K_X_CL: (x_it, 2), K_X_DM: (x_it, 3), K_X_DC: (x_it, 4), K_X_DCST: (x_it, 5),
    }  # fmt: skip
    seedchk = sg(".L_x_78", upto=10)
    kinds[K_UNG] = (seedchk, 0)
    kinds[K_DEG] = (seedchk, 1)
    K_OFF = np.array([kinds[i][0].mem[kinds[i][1]] for i in range(N_KIND)], np.int64)
    K_PC = np.array([kinds[i][0].pcs[kinds[i][1]] for i in range(N_KIND)], np.int32)
    assert K_OFF[K_J_STS] < red_j[0]
    slots = _slots()
    SLOT_LEN = np.array([b["n"] + nb_["n"] for b, nb_ in slots], np.int64)
    skip_n = [[i for i, ch in enumerate(b["cls"]) if ch == "b"][1] + 1 for b, _ in slots]
    SLOT_SKIP = np.array([n + nb_["n"] for n, (_, nb_) in zip(skip_n, slots)], np.int64)
    SLOT_OFF = np.array([[m[0] for m in b["mem"]] for b, _ in slots], np.int64)
    SLOT_PC = np.array([[b["pc"] + C.PC_STEP * m[0] for m in b["mem"]] for b, _ in slots], np.int32)
    pref_mem = pre.mem[1:]  # the 12 prefetch loads (the first memory instruction is Ai_mask[seed] = 1)
    assert len(pref_mem) == SLOTS
    PREF_OFF = np.array(pref_mem, np.int64)
    PREF_PC = np.array(pre.pcs[1:], np.int32)
    cuts = [pref_mem[n] for n in range(SLOTS)] + [pre.length]
    PREF_CUT = np.array(cuts, np.int64)
    px, py = np.ascontiguousarray(pts[:, 0]), np.ascontiguousarray(pts[:, 1])
    n_cnt = N_SEG + 3 * SLOTS + 1
    segs = np.zeros(n_cnt, np.int64)
    counts = np.zeros(2 * blocks, np.int64)
    args = (N, D, blocks, px, py, float(threshold), ind, deg, SEG_LEN, K_OFF, K_PC, SLOT_LEN, SLOT_SKIP, SLOT_OFF,
            SLOT_PC, PREF_CUT, PREF_OFF, PREF_PC, red_j[0], base, obj, spc)  # fmt: skip
    _walk(False, C.out_tuple(C.alloc_rows(0)), counts, counts, segs, 0, blocks, *args)
    off = C.offsets_from_counts(counts)
    cols = C.alloc_rows(int(off[-1]))
    _walk(True, C.out_tuple(cols), off, counts, np.zeros(n_cnt, np.int64), 0, blocks, *args)
    t = C.Tally()
    for i in range(N_SEG):
        t.add(S[i][1], segs[i])
    for j, (b, nb_) in enumerate(slots):
        t.add(_seg(sg(b["label"], upto=skip_n[j]), sg(nb_["label"]))[1], segs[N_SEG + j])
        t.add(_seg(sg(b["label"]), sg(nb_["label"]))[1], segs[N_SEG + SLOTS + j])
    for n in range(SLOTS + 1):
        if segs[N_SEG + 2 * SLOTS + n]:
            t.add(sg(".L_x_11", upto=int(PREF_CUT[n])), segs[N_SEG + 2 * SLOTS + n])
    grown = int(segs[S_POSTSEED]) // 2
    rounds = int(segs[S_ROUND_END]) // 2
    info = C.kernel_info("qtc", (blocks, 1, 1), (TPB, 1, 1), L, t, sass=SASS,
                         params={"points": N, "threshold": threshold, "max_degree": D, "seeds_grown": grown,
                                 "rounds": rounds},
                         notes="first QTC_device launch; full-storage distance matrix (SHOC sizes 1-4); clearing "
                               "loops costed at their 16-unrolled bodies' average")  # fmt: skip
    return cols, info
