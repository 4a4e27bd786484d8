"""SHOC (and Rodinia CFD) kernels of Huang & Li Table IV: scan, stencil2d, spmv, md, bfs, sort, fft,
neuralnet, cfd, md5hash, s3d, qtc.

Each generator follows its kernel's code (``benchmarks/kernels/<name>.cu``, a rendering of the
SHOC / Rodinia source) over a deterministic input, one SASS memory instruction at a time over
every warp that runs it, and puts the rows in warp program order (``blocks.Emitter``). The place
of a row (``seq``, ``pc``) and the instruction totals come from the kernel's SASS blocks
(recipes.toml), walked as below; "per k" is an unrolled loop body costed per source iteration
(``_common.segment(per=k)``).

| kernel | warp path (SASS blocks) | memory rows |
| --- | --- | --- |
| scan | ``scan`` 44; loop ``.L_x_7`` per 16; ``.L_x_0`` 42 tree (warps 1..7 leave after 18); ``.L_x_10`` | in[i], i += 256 below the block's stop; sdata tree; isums[b] by lane 0 |
| stencil2d | ``stencil2d``; column loop ``.L_x_4`` per 16 (x lszRow+2; again ``.L_x_13`` for the warps holding the first / last column); BAR; point loop ``.L_x_22`` per 8 | data -> sh, then 9 sh reads and one newData write per point |
| spmv | ``spmv`` 8 + ``.L_x_11`` 28; loop ``.L_x_4`` 16; ``.L_x_0`` 22 + ``.L_x_12`` 9 | rowDelimiters (2, broadcast); per 32 nonzeros cols, vec (texture), val; partialSums tree; out by lane 0 |
| md | ``md`` 5 + ``.L_x_34`` 18; loop ``.L_x_22`` 25 per neighbour; ``.L_x_0`` 4 + ``.L_x_35`` | position[i] (texture, 16 B); per neighbour neighList[j*n+i], position[jidx]; force[i] |
| bfs | ``bfs`` 38; per owned vertex ``.L_x_3`` 13; per 32 edges of a frontier vertex ``.L_x_2`` 16 | levels[v] (broadcast), edgeArray[v], [v+1]; edgeArrayAux, levels[u]; store levels[u] and flag by the lanes that find u unvisited |
| sort | ``sort`` 50 (straight line) | keys, values (uint2); offsets, blockOffsets (16 lanes); shared stores; sKeys/sValues, sOffsets[r], sBlockOffsets[r]; outKeys, outValues x 2 |
| fft | ``fft`` 394 (straight line, 8 BAR) | 8 work loads (8 B, stride 64); 2 exchanges x (x, y) x (8 STS, 8 LDS); 8 work stores |
| neuralnet | ``neuralnet`` 8 (STG zs = 0), ``.L_x_4``; loop ``.L_x_1`` per 4 | per input: weights[t*bound2+i], activations1[i], store zs[t] |
| cfd | ``cfd`` 41, ``.L_x_0`` 46; per neighbour one of the unrolled neighbour blocks; ``.L_x_17`` 15 | 5 variables of i; per neighbour: nb, 3 normals, 5 variables of nb (interior) or ff_variable (constant, far field); 5 fluxes |
| md5hash | whole kernel per key (MD5 in registers; the key array is local) | the key bytes in local memory are not traced (obj -1 would be unplaced); foundIndex and the 8 foundKey bytes by the lane that matches |
| s3d | ``s3d`` 121 + ``.L_x_0`` 67 (straight line) | T, P, 22 Y loads (8 B); 22 C stores |
| qtc | QTC_device per seed, per round: candidates of the seed row, scan of the latest point's row | see :func:`qtc` |

Inputs are generated from fixed seeds (``numpy.random.default_rng``); the same size gives the same
trace bit for bit.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..codes import LOAD, STORE
from ..errors import InputError
from . import _common as C
from ._kern import put
from .blocks import Emitter, _grid_warps

NUMBA_DEPS = "3f3096249b846fdf"  # its imports' sources, for numba's cache (traces.numba_cache)

SEED = 20240611


def _rng(tag: int) -> np.random.Generator:
    return np.random.default_rng([SEED, tag])


def _allon(tid):
    return np.ones_like(tid, bool)


# ---------------------------------------------------------------------------------------------
# scan


def scan(n: int, blocks: int = 64):
    """SHOC Scan's first kernel reduce<float, 256>: block b sums its region of g_idata into isums[b].

    region = ((n / blocks) / 4) * 4 elements; the last block also takes the remainder. Thread t
    reads in[start + t + 256k] while below the block's stop. g_idata has a 2D shape (n/1024, 1024)
    (n is rounded up to a multiple of 1024) so that it can be placed in a 2D texture (Huang & Li
    Table IV: g_idata G -> 2T).
    """
    B = 256
    n = -(-n // 1024) * 1024
    if n // blocks < 4:
        raise InputError(f"scan: {n} elements are too few for {blocks} blocks (at least 4 per block)")
    L = C.Layout()
    g_idata = L.add("g_idata", "global", 4 * n, shape=(n // 1024, 1024))
    isums = L.add("isums", "global", 4 * blocks, written=True)
    sdata = L.add("sdata", "shared", 4 * B, written=True)
    k = "scan"
    head, loop, tree, fin, ex = (C.segment(k, lb) for lb in ("scan", ".L_x_7", ".L_x_0", ".L_x_10", ".L_x_14"))
    loop = C.segment(k, ".L_x_7", per=16, mem_per_iter=1)
    pre_loop = C.segment(k, ".L_x_2")
    tree_short = C.segment(k, ".L_x_0", upto=18)
    wpb = B // 32
    cta, warp, tid = _grid_warps(blocks, wpb)
    region = ((n // blocks) // 4) * 4
    start = cta[:, None] * region
    stop = np.where(cta[:, None] == blocks - 1, n, start + region)
    E = Emitter()
    s = head.length + pre_loop.length
    counts = np.maximum(0, -(-(stop - start - tid) // B))  # iterations per lane
    n_it = counts.max(axis=1)
    for it in range(int(n_it.max())):
        act = counts > it
        E.add(cta, warp, s + it * loop.length + loop.mem[0], loop.pcs[0], LOAD, g_idata, 4, act, start + tid + it * B)
    s_tree = s + n_it * loop.length
    allon = _allon(tid)
    E.add(cta, warp, s_tree + tree.mem[0], tree.pcs[0], STORE, sdata, 4, allon, tid)
    steps = [(128, 128), (64, 64)] + [(32, o) for o in (32, 16, 8, 4, 2, 1)]
    for j, (thr, o) in enumerate(steps):
        act = tid < thr
        for m, (op, idx) in enumerate(((LOAD, tid), (LOAD, tid + o), (STORE, tid))):
            q = 1 + 3 * j + m
            E.add(cta, warp, s_tree + tree.mem[q], tree.pcs[q], op, sdata, 4, act, idx)
    s_fin = s_tree + np.where(warp == 0, tree.length, tree_short.length)
    lane0 = tid == 0
    E.add(cta, warp, s_fin + fin.mem[0], fin.pcs[0], LOAD, sdata, 4, lane0, np.zeros_like(tid))
    E.add(cta, warp, s_fin + fin.mem[1], fin.pcs[1], STORE, isums, 4, lane0, np.broadcast_to(cta[:, None], tid.shape))
    n_warps = blocks * wpb
    t = C.Tally()
    t.add(head, n_warps)
    t.add(pre_loop, n_warps)
    t.add(loop, n_it)
    t.add(tree, blocks)
    t.add(tree_short, n_warps - blocks)
    t.add(fin, blocks)
    t.add(ex, blocks)
    t.add({"branch": 1.0}, n_warps - blocks)
    info = C.kernel_info(k, (blocks, 1, 1), (B, 1, 1), L, t, params={"n": n, "blocks": blocks})
    return E.columns(), info


# ---------------------------------------------------------------------------------------------
# stencil2d


def stencil2d(rows: int, cols: int | None = None, strip: int = 8, lcols: int = 256):
    """SHOC Stencil2D StencilKernel<float>: 9-point stencil of a rows x cols matrix (plus a 1-wide halo).

    Blocks of (1, lcols) threads; block (bx, by) computes rows bx*strip .. +strip of columns
    by*lcols .. +lcols. Thread c copies its column of strip+2 rows of ``data`` into ``sh`` (the
    threads of the first and last column also copy the halo column beside them), then computes
    strip points from 9 ``sh`` reads each. Rows of ``data`` are padded to a multiple of 16 floats.
    The SASS keeps some ``sh`` values in registers across the unrolled point loop (6 LDS per
    point); the trace follows the source (9 reads per point), the totals the SASS.
    """
    cols = rows if cols is None else cols
    if rows % strip or cols % lcols or lcols % 32:
        raise InputError(f"stencil2d: rows must be a multiple of strip ({strip}) and cols of lcols ({lcols}, itself a "
                         f"multiple of 32); got {rows} x {cols}")  # fmt: skip
    n_cols = cols + 2
    align = 16
    padded = -(-n_cols // align) * align
    gw = padded - 2  # gRowWidth
    L = C.Layout()
    data = L.add("data", "global", 4 * (rows + 2) * padded, shape=(rows + 2, padded))
    new = L.add("newData", "global", 4 * (rows + 2) * padded, shape=(rows + 2, padded), written=True)
    lw = lcols  # lRowWidth
    sh = L.add("sh", "shared", 4 * (strip + 2) * (lw + 2), shape=(strip + 2, lw + 2), written=True)
    k = "stencil2d"
    head = C.segment(k, "stencil2d")
    ld = C.segment(k, ".L_x_4", per=16, mem_per_iter=2)
    ld_edge = C.segment(k, ".L_x_13", per=16, mem_per_iter=2)
    mid = C.segment(k, ".L_x_7")
    pre = C.segment(k, ".L_x_25")
    pt = C.segment(k, ".L_x_22", per=8, mem_per_iter=7)
    ex = C.segment(k, ".L_x_27")
    gx, gy = rows // strip, cols // lcols
    wpb = lcols // 32
    cta, warp, tid = _grid_warps(gx * gy, wpb)
    lc = tid  # lidCol (blockDim.x == 1)
    g_row = (cta % gx)[:, None] * strip
    g_col = (cta // gx)[:, None] * lcols + lc

    def flat(r, c, width):
        return (r + 1) * (width + 2) + (c + 1)

    allon = _allon(tid)
    E = Emitter()
    s = np.full(cta.shape, head.length, np.int64)
    for i in range(strip + 2):
        E.add(cta, warp, s + ld.mem[0], ld.pcs[0], LOAD, data, 4, allon, flat(g_row - 1 + i, g_col, gw))
        E.add(cta, warp, s + ld.mem[1], ld.pcs[1], STORE, sh, 4, allon, flat(-1 + i, lc, lw))
        s = s + ld.length
    edge_warp = (warp == 0) | (warp == wpb - 1)
    for side, lane_sel, dc in ((0, lc == 0, -1), (1, lc == lcols - 1, 1)):
        for i in range(strip + 2):
            e_s = s + i * ld_edge.length
            E.add(
                cta,
                warp,
                e_s + ld_edge.mem[0],
                ld_edge.pcs[0],
                LOAD,
                data,
                4,
                lane_sel,
                flat(g_row - 1 + i, g_col + dc, gw),
            )
            E.add(cta, warp, e_s + ld_edge.mem[1], ld_edge.pcs[1], STORE, sh, 4, lane_sel, flat(-1 + i, lc + dc, lw))
        s = s + np.where(lane_sel.any(axis=1), (strip + 2) * ld_edge.length, 0)
    s = s + mid.length + pre.length
    taps = [(0, 0), (-1, 0), (1, 0), (0, 1), (0, -1), (-1, 1), (1, 1), (-1, -1), (1, -1)]
    gap = max(1, pt.length // 10)
    for i in range(strip):
        for q, (dr, dc) in enumerate(taps):
            E.add(
                cta, warp, s + q * gap, pt.pcs[min(q, len(pt.pcs) - 1)], LOAD, sh, 4, allon, flat(i + dr, lc + dc, lw)
            )
        E.add(cta, warp, s + 9 * gap, pt.pcs[-1], STORE, new, 4, allon, flat(g_row + i, g_col, gw))
        s = s + max(pt.length, 10 * gap + 1)
    n_warps = gx * gy * wpb
    n_edge = int(edge_warp.sum()) if wpb > 1 else n_warps
    t = C.Tally()
    t.add(head, n_warps)
    t.add(ld, n_warps * (strip + 2))
    t.add(ld_edge, n_edge * (strip + 2))
    t.add(mid, n_warps)
    t.add(pre, n_warps)
    t.add(pt, n_warps * strip)
    t.add(ex, n_warps)
    info = C.kernel_info(k, (gx, gy, 1), (1, lcols, 1), L, t,
                         params={"rows": rows, "cols": cols, "strip": strip, "lcols": lcols},
                         notes="sh reads follow the source (9 per point); the SASS reuses some in registers")  # fmt: skip
    return E.columns(), info


# ---------------------------------------------------------------------------------------------
# spmv


def csr_matrix(rows: int, avg: int, tag: int = 1):
    """A deterministic sparse rows x rows pattern: row lengths ~ Poisson(avg) clipped to [1, rows]
    (SHOC's random matrix puts its nonzeros at uniform random places, so row lengths are binomial),
    sorted distinct random columns. Returns (rowDelimiters, cols)."""
    rng = _rng(tag)
    lengths = np.clip(rng.poisson(avg, rows), 1, rows).astype(np.int64)
    delim = C.offsets_from_counts(lengths)
    nnz = int(delim[-1])
    cols = rng.integers(0, rows, nnz, dtype=np.int64)
    row_of = np.repeat(np.arange(rows, dtype=np.int64), lengths)
    order = np.lexsort((cols, row_of))
    cols = cols[order]
    return delim, cols


def spmv(rows: int, avg: int = 0):
    """SHOC Spmv CSR vector kernel (float, BLOCK_SIZE 128, one warp per row); vec in a 1D texture.

    ``avg`` nonzeros per row on average (0: 1 % of ``rows``, SHOC's density, at least 8).
    """
    avg = avg or max(8, rows // 100)
    B = 128
    delim, colidx = csr_matrix(rows, avg)
    nnz = int(delim[-1])
    L = C.Layout()
    val = L.add("val", "global", 4 * nnz)
    cols = L.add("cols", "global", 4 * nnz)
    rowd = L.add("rowDelimiters", "global", 4 * (rows + 1))
    vec = L.add("vec", "texture1d", 4 * rows)
    out = L.add("out", "global", 4 * rows, written=True)
    part = L.add("partialSums", "shared", 4 * B, written=True)
    k = "spmv"
    head, rd, it, red, fin = (C.segment(k, lb) for lb in ("spmv", ".L_x_11", ".L_x_4", ".L_x_0", ".L_x_12"))
    ex = C.segment(k, ".L_x_13")
    wpb = B // 32
    g = -(-rows // wpb)
    cta, warp, tid = _grid_warps(g, wpb)
    lane = tid % 32
    row = (cta * wpb + warp)[:, None]
    ok = np.broadcast_to(row < rows, tid.shape)
    r = np.minimum(row, rows - 1)
    begin, end = delim[r], delim[r + 1]
    E = Emitter()
    s = head.length
    E.add(cta, warp, s + rd.mem[0], rd.pcs[0], LOAD, rowd, 4, ok, r)
    E.add(cta, warp, s + rd.mem[1], rd.pcs[1], LOAD, rowd, 4, ok, r + 1)
    s += rd.length
    n_it = np.where(ok[:, 0], -(-(end - begin)[:, 0] // 32), 0)
    colidx_pad = np.append(colidx, 0)
    for i in range(int(n_it.max(initial=0))):
        j = begin + lane + 32 * i
        act = ok & (j < end)
        jj = np.where(act, j, nnz)
        base = s + i * it.length
        E.add(cta, warp, base + it.mem[0], it.pcs[0], LOAD, cols, 4, act, j)
        E.add(cta, warp, base + it.mem[1], it.pcs[1], LOAD, vec, 4, act, colidx_pad[jj])
        E.add(cta, warp, base + it.mem[2], it.pcs[2], LOAD, val, 4, act, j)
    s_red = s + n_it * it.length
    E.add(cta, warp, s_red + red.mem[0], red.pcs[0], STORE, part, 4, ok, tid)
    q = 1
    for o in (16, 8, 4, 2):
        act = ok & (lane < o)
        for op, idx in ((LOAD, tid), (LOAD, tid + o), (STORE, tid)):
            E.add(cta, warp, s_red + red.mem[q], red.pcs[q], op, part, 4, act, idx)
            q += 1
    s_fin = s_red + red.length
    act = ok & (lane < 1)
    for m, (op, obj, idx) in enumerate(((LOAD, part, tid), (LOAD, part, tid + 1), (STORE, part, tid), (LOAD, part, tid),
                                        (STORE, out, np.broadcast_to(r, tid.shape)))):  # fmt: skip
        E.add(cta, warp, s_fin + fin.mem[m], fin.pcs[m], op, obj, 4, act, idx)
    n_warps = g * wpb
    active = int(ok[:, 0].sum())
    t = C.Tally()
    t.add(head, n_warps)
    t.add(rd, active)
    t.add(it, n_it)
    t.add(red, active)
    t.add(fin, active)
    t.add(ex, active)
    t.add({"branch": 1.0}, n_warps - active)
    info = C.kernel_info(k, (g, 1, 1), (B, 1, 1), L, t, params={"rows": rows, "avg": avg, "nnz": nnz},
                         notes="loop costed with the one-iteration SASS body (.L_x_4); nvcc also emits bodies unrolled 4, 8 and 16")  # fmt: skip
    return E.columns(), info


# ---------------------------------------------------------------------------------------------
# md


@nb.njit(cache=True)
def _knn(pos, edge, k, cell):
    """The k nearest other atoms of every atom (squared distance, ties by index), searched in the
    27 cells around its own (cell edge ``cell``; the caller sizes cells so they hold enough atoms)."""
    n = pos.shape[0]
    m = max(1, int(edge / cell))
    cid = np.empty(n, np.int64)
    for i in range(n):
        cx = min(m - 1, int(pos[i, 0] / edge * m))
        cy = min(m - 1, int(pos[i, 1] / edge * m))
        cz = min(m - 1, int(pos[i, 2] / edge * m))
        cid[i] = (cz * m + cy) * m + cx
    order = np.argsort(cid, kind="mergesort")
    start = np.zeros(m * m * m + 1, np.int64)
    for i in range(n):
        start[cid[i] + 1] += 1
    for c in range(m * m * m):
        start[c + 1] += start[c]
    out = np.empty((k, n), np.int32)
    cand = np.empty(n, np.int64)
    d2 = np.empty(n, np.float64)
    for i in range(n):
        c = cid[i]
        cx, cy, cz = c % m, (c // m) % m, c // (m * m)
        nc = 0
        for dz in range(-1, 2):
            for dy in range(-1, 2):
                for dx in range(-1, 2):
                    x, y, z = cx + dx, cy + dy, cz + dz
                    if 0 <= x < m and 0 <= y < m and 0 <= z < m:
                        cc = (z * m + y) * m + x
                        for p in range(start[cc], start[cc + 1]):
                            j = order[p]
                            if j != i:
                                cand[nc] = j
                                d2[nc] = ((pos[i, 0] - pos[j, 0]) ** 2 + (pos[i, 1] - pos[j, 1]) ** 2
                                          + (pos[i, 2] - pos[j, 2]) ** 2)  # fmt: skip
                                nc += 1
        idx = np.argsort(d2[:nc] + cand[:nc] * 1e-12, kind="mergesort")
        for q in range(k):
            out[q, i] = cand[idx[q % nc]] if nc > 0 else i
    return out


def md(atoms: int, neighbors: int = 128, block: int = 256):
    """SHOC MD compute_lj_force<float> (one atom per thread): d_position in a 1D texture, neighList global.

    Atoms sit at uniform random places in a cube (SHOC: srand48 8650341, domain edge 20); the
    neighbour list holds each atom's ``neighbors`` nearest atoms, stored neighbour-major
    (neighList[j * atoms + i]), so a warp's read of neighbour j is one coalesced row.
    """
    rng = _rng(2)
    edge = 20.0
    pos = rng.random((atoms, 3)) * edge
    density = atoms / edge**3
    cell = (max(3.0 * neighbors / 27.0, 8.0) / density) ** (1 / 3)
    nl = _knn(pos, edge, neighbors, cell)
    L = C.Layout()
    d_position = L.add("d_position", "texture1d", 16 * atoms, elem_bytes=16)
    neighList = L.add("neighList", "global", 4 * atoms * neighbors, shape=(neighbors, atoms))
    d_force = L.add("d_force", "global", 16 * atoms, elem_bytes=16, written=True)
    k = "md"
    head, ip, it, st, ex = (C.segment(k, lb) for lb in ("md", ".L_x_34", ".L_x_22", ".L_x_0", ".L_x_35"))
    wpb = -(-block // 32)
    g = -(-atoms // block)
    cta, warp, tid = _grid_warps(g, wpb)
    i = cta[:, None] * block + tid
    act = (i < atoms) & (tid < block)
    ii = np.minimum(i, atoms - 1)
    E = Emitter()
    s = head.length
    E.add(cta, warp, s + ip.mem[0], ip.pcs[0], LOAD, d_position, 16, act, ii)
    s += ip.length
    for j in range(neighbors):
        b = s + j * it.length
        E.add(cta, warp, b + it.mem[0], it.pcs[0], LOAD, neighList, 4, act, j * atoms + ii)
        E.add(cta, warp, b + it.mem[1], it.pcs[1], LOAD, d_position, 16, act, nl[j][ii])
    s += neighbors * it.length
    E.add(cta, warp, s + st.mem[0], st.pcs[0], STORE, d_force, 16, act, ii)
    n_warps = g * wpb
    active = int(act.any(axis=1).sum())
    t = C.Tally()
    t.add(head, n_warps)
    t.add(ip, active)
    t.add(it, active * neighbors)
    t.add(st, active)
    t.add(ex, active)
    t.add({"branch": 1.0}, n_warps - active)
    info = C.kernel_info(k, (g, 1, 1), (block, 1, 1), L, t, params={"atoms": atoms, "neighbors": neighbors, "block": block},
                         notes="ipos is fetched through the texture too (SHOC reads it from global); one object, one space")  # fmt: skip
    return E.columns(), info


# ---------------------------------------------------------------------------------------------
# bfs


def graph(vertices: int, degree: int, tag: int = 3):
    """A deterministic undirected graph in CSR form (edgeArray offsets, edgeArrayAux neighbours):
    ``vertices * degree / 2`` random edges plus a random spanning tree (every vertex reachable),
    no self loops; neighbour lists sorted."""
    rng = _rng(tag)
    m = max(0, vertices * degree // 2 - (vertices - 1))
    parent = (rng.random(vertices - 1) * np.arange(1, vertices)).astype(np.int64)
    a = np.concatenate([np.arange(1, vertices), rng.integers(0, vertices, m)])
    b = np.concatenate([parent, rng.integers(0, vertices, m)])
    keep = a != b
    a, b = a[keep], b[keep]
    src = np.concatenate([a, b])
    dst = np.concatenate([b, a])
    counts = np.bincount(src, minlength=vertices)
    offsets = C.offsets_from_counts(counts)
    # (src, dst) pairs in lexicographic order: a counting sort by src, then each list sorted.
    return offsets, _csr_sorted(offsets, src, dst)


@nb.njit(cache=True)
def _csr_sorted(offsets, src, dst):
    cursor = offsets[:-1].copy()
    out = np.empty(dst.shape[0], np.int64)
    for i in range(src.shape[0]):
        out[cursor[src[i]]] = dst[i]
        cursor[src[i]] += 1
    for v in range(offsets.shape[0] - 1):  # insertion sort: lists are short (degree ~ 8)
        lo, hi = offsets[v], offsets[v + 1]
        if hi - lo > 64:
            out[lo:hi].sort()
            continue
        for i in range(lo + 1, hi):
            x = out[i]
            j = i - 1
            while j >= lo and out[j] > x:
                out[j + 1] = out[j]
                j -= 1
            out[j + 1] = x
    return out


@nb.njit(cache=True)
def bfs_levels(offsets, nbrs, source=0):
    """BFS level of every vertex from ``source`` (-1 where unreachable)."""
    n = offsets.shape[0] - 1
    lev = np.full(n, -1, np.int64)
    queue = np.empty(n, np.int64)
    lev[source] = 0
    queue[0] = source
    head, tail = 0, 1
    while head < tail:
        v = queue[head]
        head += 1
        for e in range(offsets[v], offsets[v + 1]):
            u = nbrs[e]
            if lev[u] < 0:
                lev[u] = lev[v] + 1
                queue[tail] = u
                tail += 1
    return lev


@nb.njit(cache=True)
def _bfs_new_masks(vertices, front, nxt, offs, nbrs, n_ed):
    """Per edge-loop iteration of the frontier vertices (in vertex order), the lanes that find their
    neighbour u unvisited (``nxt[u]``: BFS level curr + 1); and the number of rows they make."""
    masks = np.empty(n_ed, np.uint32)
    ne = nbrs.shape[0]
    j = 0
    rows = 0
    for v in range(vertices):
        if not front[v]:
            continue
        first = offs[v]
        deg = offs[v + 1] - first
        for it in range((deg + 31) // 32):
            new = np.uint32(0)
            for lane in range(min(32, deg - 32 * it)):
                e = first + 32 * it + lane
                if nxt[nbrs[e] if ne else e]:
                    new |= np.uint32(1) << np.uint32(lane)
            masks[j] = new
            j += 1
            rows += 4 if new else 2
    return masks, rows


@nb.njit(cache=True)
def _bfs_rows(out, vertices, wpb, n_warps, front, new_masks, offs, nbrs, head_len, vx_len, vx_seq, vx_pc, ed_len,
              ed_seq, ed_pc, ids, spaces, levels_base, ea_base, aux_base, flag_base):  # fmt: skip
    """SHOC BFS_kernel_warp rows in final order. Warp w owns vertices 32w .. 32w+31; per owned
    vertex v: LDG levels[v] (broadcast) and, for a frontier vertex (``front[v]``), LDG
    edgeArray[v], [v+1]; then per 32 of its edges (lane l takes e = edgeArray[v] + 32 it + l):
    LDG edgeArrayAux[e], LDG levels[u], and, by the lanes that find u unvisited (``new_masks``,
    one per iteration in vertex order), STG levels[u] and STG *flag. ``ids``/``spaces``: levels,
    edgeArray, edgeArrayAux, flag."""
    addr = out[8]
    full = np.uint32(0xFFFFFFFF)
    ne = nbrs.shape[0]
    r = 0
    j = 0
    for w in range(n_warps):
        cta = w // wpb
        warp = w % wpb
        s = head_len
        for c in range(32):
            v = w * 32 + c
            if v >= vertices:
                break
            put(out, r, cta, warp, s + vx_seq[0], vx_pc[0], 0, spaces[0], 4, full, ids[0])
            for lane in range(32):
                addr[r, lane] = np.uint64(levels_base + 4 * v)
            r += 1
            s += vx_len
            if not front[v]:
                continue
            for q in range(2):
                put(out, r, cta, warp, s - vx_len + vx_seq[1 + q], vx_pc[1 + q], 0, spaces[1], 4, full, ids[1])
                for lane in range(32):
                    addr[r, lane] = np.uint64(ea_base + 4 * (v + q))
                r += 1
            first = offs[v]
            deg = offs[v + 1] - first
            for it in range((deg + 31) // 32):
                n_act = min(32, deg - 32 * it)
                mask = full if n_act == 32 else (np.uint32(1) << np.uint32(n_act)) - np.uint32(1)
                new = new_masks[j]
                j += 1
                e0 = first + 32 * it
                put(out, r, cta, warp, s + ed_seq[0], ed_pc[0], 0, spaces[2], 4, mask, ids[2])
                put(out, r + 1, cta, warp, s + ed_seq[1], ed_pc[1], 0, spaces[0], 4, mask, ids[0])
                for lane in range(32):
                    if lane < n_act:
                        u = nbrs[e0 + lane] if ne else e0 + lane
                        addr[r, lane] = np.uint64(aux_base + 4 * (e0 + lane))
                        addr[r + 1, lane] = np.uint64(levels_base + 4 * u)
                    else:
                        addr[r, lane] = np.uint64(0)
                        addr[r + 1, lane] = np.uint64(0)
                if new:
                    put(out, r + 2, cta, warp, s + ed_seq[2], ed_pc[2], 1, spaces[0], 4, new, ids[0])
                    put(out, r + 3, cta, warp, s + ed_seq[3], ed_pc[3], 1, spaces[3], 4, new, ids[3])
                    for lane in range(32):
                        if (new >> np.uint32(lane)) & np.uint32(1):
                            addr[r + 2, lane] = addr[r + 1, lane]
                            addr[r + 3, lane] = np.uint64(flag_base)
                        else:
                            addr[r + 2, lane] = np.uint64(0)
                            addr[r + 3, lane] = np.uint64(0)
                r += 4 if new else 2
                s += ed_len


def bfs(vertices: int, degree: int = 8, level: int = -1, block: int = 1024):
    """SHOC BFS BFS_kernel_warp (W_SZ = CHUNK_SZ = 32) for one BFS level of a generated graph.

    ``level`` picks the launch (curr); -1 takes the level with the largest frontier. Lanes that
    find a neighbour unvisited (levels[u] == UINT_MAX when the launch starts: its BFS level is
    curr + 1) store levels[u] and *flag. The graph, its BFS levels, the lanes that find a
    neighbour unvisited (``_bfs_new_masks``) and the rows (one pass in final order, ``_bfs_rows``)
    come from numba.
    """
    offs, nbrs = graph(vertices, degree)
    lev = bfs_levels(offs, nbrs)
    n_levels = int(lev.max()) + 1
    if level < 0:
        level = int(np.argmax(np.bincount(lev[lev >= 0], minlength=n_levels)))
    if level >= n_levels:
        raise InputError(f"bfs: the generated graph has {n_levels} levels (0..{n_levels - 1}); got level {level}")
    ne = int(offs[-1])
    L = C.Layout()
    levels = L.add("levels", "global", 4 * vertices, written=True)
    edgeArray = L.add("edgeArray", "global", 4 * (vertices + 1))
    edgeArrayAux = L.add("edgeArrayAux", "global", 4 * max(ne, 1))
    flag = L.add("flag", "global", 4, written=True)
    k = "bfs"
    head, vx, ed, ex = (C.segment(k, lb) for lb in ("bfs", ".L_x_3", ".L_x_2", ".L_x_6"))
    wpb = block // 32
    n_w = -(-vertices // 32)
    g = -(-n_w // wpb)
    n_warps = g * wpb
    objs = (levels, edgeArray, edgeArrayAux, flag)
    front = (lev == level).astype(np.uint8)  # byte flags: the random lookups stay in cache
    nxt = (lev == level + 1).astype(np.uint8)
    deg = np.diff(offs)[front.astype(bool)]
    n_ed = int(((deg + 31) // 32).sum())
    new_masks, ed_rows = _bfs_new_masks(vertices, front, nxt, offs, nbrs, n_ed)
    cols = C.alloc_rows(vertices + 2 * int(front.sum()) + ed_rows)
    _bfs_rows(C.out_tuple(cols), vertices, wpb, n_warps, front, new_masks, offs, nbrs, head.length, vx.length,
              vx.mem_array(), vx.pc_array(), ed.length, ed.mem_array(), ed.pc_array(),
              np.array([o.id for o in objs], np.int16), np.array([C.space_code(o) for o in objs], np.int8), levels.base,
              edgeArray.base, edgeArrayAux.base, flag.base)  # fmt: skip
    t = C.Tally()
    t.add(head, n_warps)
    t.add(vx, vertices)  # every owned vertex
    t.add(ed, n_ed)
    t.add(ex, n_warps)
    info = C.kernel_info(k, (g, 1, 1), (block, 1, 1), L, t,
                         params={"vertices": vertices, "degree": degree, "level": level, "block": block, "edges": ne,
                                 "levels": n_levels, "frontier": int((lev == level).sum())})  # fmt: skip
    return cols, info


# ---------------------------------------------------------------------------------------------
# sort


def sort(n: int, startbit: int = 0):
    """SHOC Sort reorderData (blocks of 256 threads, two keys each): scatter each block's locally
    digit-sorted keys and values to their global places; sOffsets and sBlockOffsets in shared.

    Keys are random 32-bit values; the block's 512 keys are stably sorted by the 4-bit digit at
    ``startbit`` (what radixSortBlocks leaves); blockOffsets[b*16 + r] is where digit r starts in
    block b, offsets[r*blocks + b] the digit-major exclusive scan of the block counts.
    """
    T, PER = 256, 512
    n = -(-n // PER) * PER
    nb_ = n // PER
    rng = _rng(4)
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).reshape(nb_, PER)
    digit = ((keys >> np.uint64(startbit)) & np.uint64(0xF)).astype(np.int64)
    order = np.argsort(digit, axis=1, kind="stable")
    digit = np.take_along_axis(digit, order, axis=1)
    cnt = np.stack([(digit == r).sum(axis=1) for r in range(16)], axis=1)  # (blocks, 16)
    boff = np.concatenate([np.zeros((nb_, 1), np.int64), np.cumsum(cnt, axis=1)[:, :-1]], axis=1)
    flat = cnt.T.reshape(-1)  # r-major
    goff = (np.concatenate([[0], np.cumsum(flat)[:-1]])).reshape(16, nb_)
    L = C.Layout()
    outKeys = L.add("outKeys", "global", 4 * n, written=True)
    outValues = L.add("outValues", "global", 4 * n, written=True)
    keys_o = L.add("keys", "global", 4 * n, elem_bytes=8)
    values_o = L.add("values", "global", 4 * n, elem_bytes=8)
    blockOffsets = L.add("blockOffsets", "global", 4 * 16 * nb_)
    offsets = L.add("offsets", "global", 4 * 16 * nb_)
    sKeys2 = L.add("sKeys2", "shared", 8 * T, elem_bytes=8, written=True)
    sValues2 = L.add("sValues2", "shared", 8 * T, elem_bytes=8, written=True)
    sOffsets = L.add("sOffsets", "shared", 64, written=True)
    sBlockOffsets = L.add("sBlockOffsets", "shared", 64, written=True)
    k = "sort"
    body, ex = C.segment(k, "sort"), C.segment(k, ".L_x_1")
    wpb = T // 32
    cta, warp, tid = _grid_warps(nb_, wpb)
    b = cta[:, None]
    allon = _allon(tid)
    low = tid < 16
    m, pc = body.mem, body.pcs
    E = Emitter()
    i = b * T + tid
    E.add(cta, warp, m[0], pc[0], LOAD, keys_o, 8, allon, i)
    E.add(cta, warp, m[1], pc[1], LOAD, values_o, 8, allon, i)
    E.add(cta, warp, m[2], pc[2], LOAD, offsets, 4, low, tid * nb_ + b)
    E.add(cta, warp, m[3], pc[3], LOAD, blockOffsets, 4, low, b * 16 + tid)
    E.add(cta, warp, m[4], pc[4], STORE, sKeys2, 8, allon, tid)
    E.add(cta, warp, m[5], pc[5], STORE, sValues2, 8, allon, tid)
    E.add(cta, warp, m[6], pc[6], STORE, sOffsets, 4, low, tid)
    E.add(cta, warp, m[7], pc[7], STORE, sBlockOffsets, 4, low, tid)
    E.add(cta, warp, m[8], pc[8], LOAD, sKeys2, 4, allon, None, byte_offset=4 * (tid + T))
    E.add(cta, warp, m[9], pc[9], LOAD, sKeys2, 4, allon, None, byte_offset=4 * tid)
    E.add(cta, warp, m[10], pc[10], LOAD, sValues2, 4, allon, None, byte_offset=4 * tid)
    E.add(cta, warp, m[11], pc[11], LOAD, sValues2, 4, allon, None, byte_offset=4 * (tid + T))
    bb = np.broadcast_to(b, tid.shape)
    r1, r2 = digit[bb, tid], digit[bb, tid + T]
    E.add(cta, warp, m[12], pc[12], LOAD, sOffsets, 4, allon, r1)
    E.add(cta, warp, m[13], pc[13], LOAD, sOffsets, 4, allon, r2)
    E.add(cta, warp, m[14], pc[14], LOAD, sBlockOffsets, 4, allon, r2)
    E.add(cta, warp, m[15], pc[15], LOAD, sBlockOffsets, 4, allon, r1)
    g1 = goff[r1, bb] + tid - boff[bb, r1]
    g2 = goff[r2, bb] + tid + T - boff[bb, r2]
    E.add(cta, warp, m[16], pc[16], STORE, outKeys, 4, allon, g1)
    E.add(cta, warp, m[17], pc[17], STORE, outValues, 4, allon, g1)
    E.add(cta, warp, m[18], pc[18], STORE, outKeys, 4, allon, g2)
    E.add(cta, warp, m[19], pc[19], STORE, outValues, 4, allon, g2)
    t = C.Tally()
    t.add(body, nb_ * wpb)
    t.add(ex, nb_ * wpb)
    info = C.kernel_info(k, (nb_, 1, 1), (T, 1, 1), L, t, params={"n": n, "startbit": startbit})
    return E.columns(), info


# ---------------------------------------------------------------------------------------------
# fft


def fft(ffts: int):
    """SHOC FFT FFT512_device<float2>: ``ffts`` independent 512-point FFTs, one per block of 64 threads.

    Thread t (hi = t >> 3, lo = t & 7) loads work[t + 64 i] (i = 0..7), and twice exchanges its 8
    values through smem (576 floats), x parts then y parts: first storing at hi*8+lo + 66 i and
    loading at lo*66+hi + 8 i, then storing at hi*8+lo + 72 i and loading at hi*72+lo + 8 i. The
    SASS issues the 8 loads and stores of an exchange in the order of their address offsets.
    """
    L = C.Layout()
    work = L.add("work", "global", 8 * 512 * ffts, elem_bytes=8, written=True)
    smem = L.add("smem", "shared", 4 * 8 * 8 * 9, written=True)
    k = "fft"
    body, ex = C.segment(k, "fft"), C.segment(k, ".L_x_1")
    blk = C.mem_entries(k, "fft")
    gx = min(ffts, 65535)
    gy = -(-ffts // gx)
    if gx * gy != ffts:
        raise InputError(f"fft: {ffts} FFTs do not fill a {gx} x {gy} grid; use a multiple of {gx}")
    cta, warp, tid = _grid_warps(ffts, 2)
    hi, lo = tid >> 3, tid & 7
    allon = _allon(tid)
    E = Emitter()
    imm = [int(o.split("+")[1].rstrip("]"), 16) if "+" in o else 0 for _, _, o in blk]
    ex_defs = [(hi * 8 + lo, lo * 66 + hi), (hi * 8 + lo, hi * 72 + lo)]
    q = 0
    for m, pc, (off, op, _), im in zip(body.mem, body.pcs, blk, imm):
        grp = q // 8
        if op.startswith("LDG"):
            i = im // 0x200
            E.add(cta, warp, m, pc, LOAD, work, 8, allon, cta[:, None] * 512 + tid + 64 * i)
        elif op.startswith("STG"):
            i = im // 0x200
            E.add(cta, warp, m, pc, STORE, work, 8, allon, cta[:, None] * 512 + tid + 64 * i)
        else:
            e = (grp - 1) // 4  # exchange 0 or 1 (groups 1..8 are the shared accesses)
            sbase, lbase = ex_defs[e]
            if op.startswith("STS"):
                i = im // 4 // (66 if e == 0 else 72)
                E.add(cta, warp, m, pc, STORE, smem, 4, allon, sbase + (66 if e == 0 else 72) * i)
            else:
                i = im // 4 // 8
                E.add(cta, warp, m, pc, LOAD, smem, 4, allon, lbase + 8 * i)
        q += 1
    t = C.Tally()
    t.add(body, ffts * 2)
    t.add(ex, ffts * 2)
    info = C.kernel_info(k, (gx, gy, 1), (64, 1, 1), L, t, params={"ffts": ffts})
    return E.columns(), info


# ---------------------------------------------------------------------------------------------
# neuralnet


def neuralnet(neurons: int, inputs: int = 784):
    """SHOC NeuralNet kernelFeedForward1 for one layer: one block of ``neurons`` threads, each the dot
    product of its row of ``weights`` (neurons x inputs, row-major: lanes ``inputs`` floats apart)
    with ``activations1``; zs[t] is zeroed, then stored every iteration (it may alias the inputs).
    """
    if neurons > 1024:
        raise InputError(f"neuralnet: one block holds at most 1024 neurons, got {neurons}")
    L = C.Layout()
    zs = L.add("zs", "global", 4 * neurons, written=True)
    weights = L.add("weights", "global", 4 * neurons * inputs, shape=(neurons, inputs))
    act = L.add("activations1", "global", 4 * inputs)
    k = "neuralnet"
    head, pre, it, ex = (
        C.segment(k, "neuralnet"),
        C.segment(k, ".L_x_4"),
        C.segment(k, ".L_x_1", per=4, mem_per_iter=3),
        C.segment(k, ".L_x_6"),
    )
    wpb = -(-neurons // 32)
    cta, warp, tid = _grid_warps(1, wpb)
    on = tid < neurons
    E = Emitter()
    E.add(cta, warp, head.mem[0], head.pcs[0], STORE, zs, 4, on, tid)
    s = head.length + pre.length
    for i in range(inputs):
        b = s + i * it.length
        E.add(cta, warp, b + it.mem[0], it.pcs[0], LOAD, weights, 4, on, tid * inputs + i)
        E.add(cta, warp, b + it.mem[1], it.pcs[1], LOAD, act, 4, on, np.full_like(tid, i))
        E.add(cta, warp, b + it.mem[2], it.pcs[2], STORE, zs, 4, on, tid)
    t = C.Tally()
    t.add(head, wpb)
    t.add(pre, wpb)
    t.add(it, wpb * inputs)
    t.add(ex, wpb)
    info = C.kernel_info(k, (1, 1, 1), (neurons, 1, 1), L, t, params={"neurons": neurons, "inputs": inputs})
    return E.columns(), info


# ---------------------------------------------------------------------------------------------
# s3d

SPECIES = 22


def s3d(points: int, block: int = 128):
    """SHOC S3D gr_base (double): per grid point, T, P and the 22 mass fractions Y (species-major,
    stride = points) in, 22 concentrations C out; Huang & Li move gpu_p and gpu_y to texture."""
    points = -(-points // block) * block
    L = C.Layout()
    P = L.add("gpu_p", "global", 8 * points, elem_bytes=8)
    T = L.add("gpu_t", "global", 8 * points, elem_bytes=8)
    Y = L.add("gpu_y", "global", 8 * points * SPECIES, elem_bytes=8, shape=(SPECIES, points))
    Cc = L.add("gpu_c", "global", 8 * points * SPECIES, elem_bytes=8, shape=(SPECIES, points), written=True)
    k = "s3d"
    head, mid, tail = (C.segment(k, lb) for lb in ("s3d", ".L_x_1", ".L_x_0"))
    wpb = block // 32
    g = points // block
    cta, warp, tid = _grid_warps(g, wpb)
    i = cta[:, None] * block + tid
    allon = _allon(tid)
    E = Emitter()
    E.add(cta, warp, head.mem[0], head.pcs[0], LOAD, T, 8, allon, i)
    E.add(cta, warp, head.mem[1], head.pcs[1], LOAD, P, 8, allon, i)
    for sp in range(SPECIES):
        E.add(cta, warp, head.mem[2 + sp], head.pcs[2 + sp], LOAD, Y, 8, allon, sp * points + i)
    s = head.length + mid.length
    for sp in range(SPECIES):
        E.add(cta, warp, s + tail.mem[sp], tail.pcs[sp], STORE, Cc, 8, allon, sp * points + i)
    t = C.Tally()
    t.add(head, g * wpb)
    t.add(mid, g * wpb)
    t.add(tail, g * wpb)
    info = C.kernel_info(k, (g, 1, 1), (block, 1, 1), L, t, params={"points": points, "block": block})
    return E.columns(), info


# ---------------------------------------------------------------------------------------------
# cfd

NNB, NVAR = 4, 5


def cfd_mesh(nelr: int, tag: int = 5):
    """Neighbours of a deterministic mesh, neighbour-major (nb[j, i]): element i of a W-wide band
    of cells meets i-1, i+1, i-W, i+W; the band's left and right ends are walls (-1), its first
    and last rows the far field (-2). One element in 16 has one neighbour swapped with a random
    element (an unstructured mesh's far links)."""
    W = max(2, int(round(np.sqrt(nelr))))
    i = np.arange(nelr)
    x = i % W
    nb = np.stack([np.where(x > 0, i - 1, -1), np.where((x < W - 1) & (i + 1 < nelr), i + 1, -1),
                   np.where(i - W >= 0, i - W, -2), np.where(i + W < nelr, i + W, -2)])  # fmt: skip
    rng = _rng(tag)
    pick = rng.random(nelr) < 1 / 16
    j = rng.integers(0, NNB, nelr)
    far = rng.integers(0, nelr, nelr)
    sel = pick & (nb[j, i] >= 0)
    nb[j[sel], i[sel]] = far[sel]
    return nb


def cfd(nelr: int, block: int = 192):
    """Rodinia CFD cuda_compute_flux (euler3d, float): one element per thread; variables, normals and
    the neighbour list in global memory (structure-of-arrays, stride nelr), ff_variable in constant
    memory. Huang & Li Table IV: variables G -> T.

    The SASS unrolls the neighbour loop; each neighbour costs its interior / wall / far-field
    block (the warp runs every kind any of its lanes takes; an interior neighbour's block loads
    nb, 3 normals and the first variable, the block after it the other 4 variables).
    """
    nelr = -(-nelr // block) * block
    nb = cfd_mesh(nelr)
    L = C.Layout()
    ese = L.add("elements_surrounding_elements", "global", 4 * NNB * nelr, shape=(NNB, nelr))
    normals = L.add("normals", "global", 4 * 3 * NNB * nelr, shape=(3 * NNB, nelr))
    variables = L.add("variables", "global", 4 * NVAR * nelr, shape=(NVAR, nelr))
    fluxes = L.add("fluxes", "global", 4 * NVAR * nelr, shape=(NVAR, nelr), written=True)
    ff = L.add("ff_variable", "constant", 4 * NVAR)
    k = "cfd"
    head, own, interior, inner2, wall, far, st = (C.segment(k, lb) for lb in
        ("cfd", ".L_x_0", ".L_x_3", ".L_x_5", ".L_x_6", ".L_x_4", ".L_x_17"))  # fmt: skip
    ex = C.segment(k, ".L_x_34")
    own_c = [(off, op) for off, op, _ in C.mem_entries(k, ".L_x_0")]
    wpb = block // 32
    g = nelr // block
    cta, warp, tid = _grid_warps(g, wpb)
    i = cta[:, None] * block + tid
    allon = _allon(tid)
    E = Emitter()
    # Own variables: 4 in the head block, the fifth in .L_x_0.
    for v in range(4):
        E.add(cta, warp, head.mem[v], head.pcs[v], LOAD, variables, 4, allon, v * nelr + i)
    s0 = head.length
    E.add(cta, warp, s0 + own.mem[0], own.pcs[0], LOAD, variables, 4, allon, 4 * nelr + i)
    s = np.full(cta.shape, s0 + own.length, np.int64)
    n_int = n_wall = n_far = 0
    for j in range(NNB):
        n = nb[j][i]
        # neighbour id and the 3 normals
        E.add(cta, warp, s + interior.mem[0], interior.pcs[0], LOAD, ese, 4, allon, j * nelr + i)
        for d in range(3):
            E.add(
                cta,
                warp,
                s + interior.mem[1 + d],
                interior.pcs[1 + d],
                LOAD,
                normals,
                4,
                allon,
                (j + d * NNB) * nelr + i,
            )
        s = s + interior.length
        is_in, is_wall, is_far = n >= 0, n == -1, n == -2
        nn = np.where(is_in, n, 0)
        run_in = is_in.any(axis=1)
        for v in range(NVAR):
            E.add(cta, warp, s + inner2.mem[0] + v, inner2.pcs[0], LOAD, variables, 4, is_in, v * nelr + nn)
        s = s + np.where(run_in, inner2.length, 0)
        run_wall = is_wall.any(axis=1)
        s = s + np.where(run_wall, wall.length, 0)
        run_far = is_far.any(axis=1)
        for v, (off, op) in enumerate([e for e in own_c if e[1] == "CONST"][:NVAR]):
            E.add(cta, warp, s + v, own.pcs[0], LOAD, ff, 4, is_far, None, byte_offset=np.full_like(tid, 4 * v))
        s = s + np.where(run_far, far.length + NVAR, 0)
        n_int += int(run_in.sum())
        n_wall += int(run_wall.sum())
        n_far += int(run_far.sum())
    for v in range(NVAR):
        E.add(cta, warp, s + st.mem[v], st.pcs[v], STORE, fluxes, 4, allon, v * nelr + i)
    n_warps = g * wpb
    t = C.Tally()
    t.add(head, n_warps)
    t.add(own, n_warps)
    t.add(interior, n_warps * NNB)
    t.add(inner2, n_int)
    t.add(wall, n_wall)
    t.add(far, n_far)
    t.add(st, n_warps)
    t.add(ex, n_warps)
    info = C.kernel_info(k, (g, 1, 1), (block, 1, 1), L, t, params={"nelr": nelr, "block": block},
                         notes="ff_variable reads are FFMA operands (c[0x3]) at the far-field block; no load instruction",
                         extra={"const_operands": ["ff_variable"]})  # fmt: skip
    return E.columns(), info


# ---------------------------------------------------------------------------------------------
# md5hash

_MD5_SETUP = ("md5hash", ".L_x_2", ".L_x_1", ".L_x_3", ".L_x_0", ".L_x_18")
_MD5_PER_KEY = (".L_x_16", ".L_x_8", ".L_x_7", ".L_x_9", ".L_x_6", ".L_x_5", ".L_x_4", ".L_x_11", ".L_x_10", ".L_x_14",
                ".L_x_13", ".L_x_12")  # fmt: skip


def md5hash(byte_length: int = 5, vals_per_byte: int = 10, keyspan: int = 16, block: int = 256):
    """SHOC MD5Hash FindKeyWithDigest_Kernel: thread t hashes keys t*keyspan .. +keyspan of the
    vals_per_byte ** byte_length key space and the one lane whose key matches the searched digest
    (key index 2/3 through the space, fixed) writes foundIndex and the 8 bytes of foundKey.

    The kernel computes in registers; its key array lives in local memory, whose accesses are not
    traced. The totals cost every key with the SASS of one pass of the per-key loop.
    """
    if byte_length > 8:
        raise InputError(f"md5hash: keys have at most 8 bytes, got byte_length {byte_length}")
    space = vals_per_byte**byte_length
    threads = -(-space // keyspan)
    g = -(-threads // block)
    target = (2 * space) // 3
    L = C.Layout()
    foundIndex = L.add("foundIndex", "global", 4, written=True)
    foundKey = L.add("foundKey", "global", 8, elem_bytes=1, written=True)
    k = "md5hash"
    setup = [C.segment(k, lb) for lb in _MD5_SETUP]
    per = [C.segment(k, lb) for lb in _MD5_PER_KEY]
    fin = C.segment(k, ".L_x_15")
    s_setup = sum(x.length for x in setup)
    per_len = sum(x.length for x in per)
    hit = C.mem_entries(k, ".L_x_4")
    before = sum(x.length for x in per[: _MD5_PER_KEY.index(".L_x_4")])
    stg = [(off, op, opd) for off, op, opd in hit if op.startswith("STG")]
    pc0 = C.recipe(k)["blocks"][[b["label"] for b in C.recipe(k)["blocks"]].index(".L_x_4")]["pc"]
    t_id = target // keyspan
    kk = target % keyspan
    cta, w, lane = t_id // block, (t_id % block) // 32, t_id % 32
    E = Emitter()
    act = np.zeros((1, 32), bool)
    act[0, lane] = True
    base = s_setup + kk * per_len + before
    off0, _, _ = stg[0]
    E.add(np.array([cta]), np.array([w]), base + off0, pc0 + C.PC_STEP * off0, STORE, foundIndex, 4, act,
          np.zeros((1, 32), np.int64))  # fmt: skip
    for off, _, opd in stg[1:]:
        b = int(opd.split("+")[1].rstrip("]"), 16) if "+" in opd else 0
        E.add(
            np.array([cta]),
            np.array([w]),
            base + off,
            pc0 + C.PC_STEP * off,
            STORE,
            foundKey,
            1,
            act,
            np.full((1, 32), b),
        )
    n_warps = g * (block // 32)
    t = C.Tally()
    for x in setup:
        t.add(x, n_warps)
    for x in per:
        t.add(x, n_warps * keyspan)
    t.add(fin, n_warps)
    info = C.kernel_info(k, (g, 1, 1), (block, 1, 1), L, t,
                         params={"byte_length": byte_length, "vals_per_byte": vals_per_byte, "keyspan": keyspan,
                                 "block": block, "found": target},
                         notes="local-memory accesses to the key array are not traced")  # fmt: skip
    return E.columns(), info


def specs(_p, KernelSpec):
    """Registry entries of this module's kernels (Huang & Li Table IV sample placements)."""
    return [
        KernelSpec("scan", "SHOC Scan reduce: per-block sums of n floats", "SHOC Scan (reduce); Huang & Li Table IV",
                   "g_idata, isums: global; sdata: shared",
                   (_p("n", 1 << 17, "elements (rounded up to a multiple of 1024)"), _p("blocks", 64, "thread blocks")), (), scan),
        KernelSpec("stencil2d", "SHOC Stencil2D: 9-point stencil through a shared tile", "SHOC Stencil2D (StencilKernel); Huang & Li Table IV",
                   "data, newData: global; sh: shared",
                   (_p("rows", 64, "matrix rows (multiple of strip)"), _p("cols", 256, "matrix columns (multiple of lcols)")),
                   (_p("strip", 8, "rows per thread (nStripItems)"), _p("lcols", 256, "threads per block (columns)", 32)), stencil2d),
        KernelSpec("spmv", "SHOC Spmv CSR vector kernel: one warp per row", "SHOC Spmv (spmv_csr_vector_kernel); Huang & Li Table IV",
                   "val, cols, rowDelimiters, out: global; vec: texture1d; partialSums: shared",
                   (_p("rows", 2048, "matrix rows (= columns)"), _p("avg", 0, "nonzeros per row on average (0: 1 % of rows, >= 8)", 0)), (), spmv),
        KernelSpec("md", "SHOC MD compute_lj_force: Lennard-Jones forces over a neighbour list", "SHOC MD; Huang & Li Table IV",
                   "d_position: texture1d; neighList, d_force: global",
                   (_p("atoms", 2048, "atoms"), _p("neighbors", 128, "neighbours per atom (maxNeighbors)")),
                   (_p("block", 256, "threads per block"),), md),
        KernelSpec("bfs", "SHOC BFS_kernel_warp: one BFS level, warp per 32 vertices", "SHOC BFS; Huang & Li Table IV",
                   "levels, edgeArray, edgeArrayAux, flag: global",
                   (_p("vertices", 4096, "graph vertices"), _p("degree", 8, "average degree"),
                    _p("level", -1, "BFS level of the launch (-1: the largest frontier)", -1)),
                   (_p("block", 1024, "threads per block", 32),), bfs),
        KernelSpec("sort", "SHOC Sort reorderData: scatter to radix positions", "SHOC Sort (reorderData); Huang & Li Table IV",
                   "keys, values, offsets, blockOffsets, outKeys, outValues: global; sKeys2, sValues2, sOffsets, sBlockOffsets: shared",
                   (_p("n", 1 << 15, "keys (rounded up to a multiple of 512)"), _p("startbit", 0, "radix digit position", 0)), (), sort),
        KernelSpec("fft", "SHOC FFT FFT512_device: 512-point FFTs through shared memory", "SHOC FFT; Huang & Li Table IV",
                   "work: global; smem: shared", (_p("ffts", 128, "512-point FFTs (blocks)"),), (), fft),
        KernelSpec("neuralnet", "SHOC NeuralNet kernelFeedForward1: one layer's dot products", "SHOC NeuralNet; Huang & Li Table IV",
                   "zs, weights, activations1: global",
                   (_p("neurons", 128, "neurons (threads of the one block, <= 1024)"), _p("inputs", 784, "inputs per neuron (bound2)")), (),
                   neuralnet),
        KernelSpec("cfd", "Rodinia CFD cuda_compute_flux: fluxes over a 4-neighbour mesh", "Rodinia/SHOC CFD; Huang & Li Table IV",
                   "variables, normals, elements_surrounding_elements, fluxes: global; ff_variable: constant",
                   (_p("nelr", 16384, "mesh elements (rounded up to whole blocks)"),), (_p("block", 192, "threads per block", 32),), cfd),
        KernelSpec("md5hash", "SHOC MD5Hash FindKeyWithDigest_Kernel: brute-force key search", "SHOC MD5Hash; Huang & Li Table IV",
                   "foundIndex, foundKey: global",
                   (_p("byte_length", 5, "key bytes (<= 8)"), _p("vals_per_byte", 10, "values per key byte"),
                    _p("keyspan", 16, "keys per thread")), (_p("block", 256, "threads per block", 32),), md5hash),
        KernelSpec("s3d", "SHOC S3D gr_base: molar concentrations of 22 species (double)", "SHOC S3D; Huang & Li Table IV",
                   "gpu_p, gpu_t, gpu_y, gpu_c: global", (_p("points", 16384, "grid points (rounded up to whole blocks)"),),
                   (_p("block", 128, "threads per block", 32),), s3d),
    ]  # fmt: skip
