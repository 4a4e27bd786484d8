"""Kernels whose threads run one counted loop of affine loads: matmul_naive,
matmul_naive_uncoalesced and Hong & Kim's micro-benchmarks mb1..mb7 (c, uc).

One numba kernel (``_kern.affine_loop``) writes them. Recipes (recipes.toml):

| kernel | pre-loop | loop (nvcc's main unrolled body) | post |
| --- | --- | --- | --- |
| matmul_naive(_uncoalesced) | 9 + 25 (``@P0 EXIT`` first) | ``.L_x_12``/``.L_x_4``: 73 insns, 16 iterations, 32 LDG | ``.L_x_8``/``.L_x_0``: 4 (STG P) + EXIT |
| mbN_c / mbN_uc | first block (15-23) | second block, unrolled 4 (mb1-4) or 2 (mb5-7) | block with the STG + EXIT |

A loop iteration costs the main body's instructions divided by its unroll factor
(the remainder loops nvcc adds are costed at the same average); the loads of an
iteration are evenly spaced in it, in source order.
"""

from __future__ import annotations

import numpy as np

from ..codes import LOAD, STORE
from . import _common as C
from ._kern import affine_loop

PRE, LOOP, POST = 0, 1, 2


def _loop_run(name, grid, block, lim, instrs, n_iter, pre, it_seg, post, L, params, *, xperm=0, idle_cost=None,
              tail=None, notes="", path=None, sass=None):  # fmt: skip
    """instrs: (obj, op, phase, cx, cy, ck, c0[, perm]) in order; pre/it_seg/post: Segments (their
    lengths place the rows). ``path``: (segment or counts, times) one active warp runs, for the
    totals when they are not pre + n_iter * it_seg + post (+ tail)."""
    gx, gy = grid
    bx, by = block
    K = len(instrs)
    arr = lambda f, dt: np.array([f(i) for i in instrs], dt)  # noqa: E731
    m_obj = arr(lambda i: i[0].id, np.int16)
    m_base = arr(lambda i: i[0].base, np.int64)
    m_elem = arr(lambda i: i[0].elem_bytes, np.int64)
    m_op = arr(lambda i: i[1], np.int8)
    m_space = arr(lambda i: C.space_code(i[0]), np.int8)
    m_phase = arr(lambda i: i[2], np.int8)
    m_cx, m_cy, m_ck, m_c0 = (arr(lambda i, j=j: i[j], np.int64) for j in (3, 4, 5, 6))
    m_perm = arr(lambda i: i[7] if len(i) > 7 else 0, np.int8)
    # seq offsets and pcs: the k-th instruction of each phase takes the k-th memory slot of its segment.
    m_seq = np.zeros(K, np.int64)
    m_pc = np.zeros(K, np.int32)
    slot = {PRE: 0, LOOP: 0, POST: 0}
    segs = {PRE: pre, LOOP: it_seg, POST: post}
    for k, ins in enumerate(instrs):
        ph = ins[2]
        s = segs[ph]
        j = slot[ph]
        slot[ph] += 1
        m_seq[k] = s.mem[j]
        m_pc[k] = s.pcs[j] if j < len(s.pcs) else s.pcs[-1]
    loop_start = pre.length
    post_start = loop_start
    wpb = (bx * by + 31) // 32
    n_warps = gx * gy * wpb
    args = (gx, gy, bx, by, lim[0], lim[1], xperm, n_iter, loop_start, it_seg.length, post_start,
            m_obj, m_base, m_elem, m_op, m_space, m_phase, m_seq, m_pc, m_cx, m_cy, m_ck, m_c0, m_perm)  # fmt: skip
    # A counting pass (no rows), then one pass writing every row once, in final order.
    active = affine_loop(False, C.counting_rows(n_warps), *args)
    per_warp = sum(n_iter if ph == LOOP else 1 for ph in m_phase.tolist())
    cols = C.alloc_rows(active * per_warp)
    affine_loop(True, C.out_tuple(cols), *args)
    t = C.Tally()
    if path is None:
        path = [(pre, 1), (it_seg, n_iter), (post, 1)] + ([(tail, 1)] if tail is not None else [])
    for seg, times in path:
        t.add(seg, active * times)
    if idle_cost is not None:
        t.add(idle_cost, n_warps - active)
    info = C.kernel_info(name, (gx, gy, 1), (bx, by, 1), L, t, params=params, notes=notes, sass=sass)
    return cols, info


def unrolled4_path(kernel: str, n: int, loads: int) -> tuple[list, C.Segment, C.Segment, C.Segment, dict]:
    """The SASS blocks one warp runs through nvcc's loop over a runtime trip count ``n``, unrolled
    by 4 (conv1d, matvec): a 16x body while more than 12 iterations of the multiple of 4 remain,
    then at most one 8x and one 4x body, then the n % 4 remainder one iteration at a time.

    Blocks in recipe order: head, entry (its branches: EXIT, n < 1, n < 4, none left, <= 12 left),
    16x, 8x (its gate first), gate, 4x, remainder set-up (its gate first), 1x, store, EXIT.
    Returns (path for the totals, pre, iteration, post) as ``_loop_run`` takes them (the
    iteration: the loop's instructions spread evenly over the n iterations, ``loads`` memory
    slots each at the 16x body's pcs) and the cost of a warp that exits at once.
    """
    labels = [b["label"] for b in C.recipe(kernel)["blocks"]]
    head, entry, u16, u8, gate, u4, rem, u1, store, ex = labels
    cut = lambda lb, k: C.segment(
        kernel, lb, upto=[i for i, ch in enumerate(C._block(kernel, lb)["cls"]) if ch == "b"][k] + 1
    )  # noqa: E731
    seg = lambda lb: C.segment(kernel, lb)  # noqa: E731
    r4, r1 = n - n % 4, n % 4
    if n == 0:
        loop = []
        pre = [(seg(head), 1), (cut(entry, 1), 1)]
    elif n < 4:
        pre = [(seg(head), 1), (cut(entry, 2), 1)]
        loop = [(seg(rem), 1), (seg(u1), n)]
    else:
        c16 = -(-(r4 - 12) // 16) if r4 > 12 else 0
        left = r4 - 16 * c16
        pre = [(seg(head), 1), (seg(entry) if c16 else cut(entry, 4), 1)]
        loop = [(seg(u16), c16), (seg(u8) if left > 4 else cut(u8, 0), 1), (seg(gate), 1)]
        left -= 8 if left > 4 else 0
        loop += [(seg(u4), left // 4), (seg(rem) if r1 else cut(rem, 0), 1), (seg(u1), r1)]
    post = [(seg(store), 1), (seg(ex), 1)]
    length = lambda part: sum(s.length * t for s, t in part)  # noqa: E731
    body = C.segment(kernel, u16, per=16, mem_per_iter=loads)
    it_len = max(length(loop) // max(n, 1), loads + 1)
    it = C.Segment(kernel, body.blocks, it_len, {}, tuple(int((k + 0.5) * it_len / loads) for k in range(loads)),
                   body.pcs, body.ops)  # fmt: skip
    pre_seg = C.Segment(kernel, (head, entry), length(pre), {}, (), (), ())
    idle = dict(seg(head).counts)
    idle["branch"] += 1.0  # the @P0 EXIT that opens the entry block
    return pre + loop + post, pre_seg, it, seg(store), idle


def _matmul_naive(name: str, W: int, tile: int, coalesced: bool):
    L = C.Layout()
    M = L.add("M", "global", 4 * W * W, shape=(W, W))
    N = L.add("N", "global", 4 * W * W, shape=(W, W))
    P = L.add("P", "global", 4 * W * W, shape=(W, W), written=True)
    lbl = {"matmul_naive": (".L_x_18", ".L_x_12", ".L_x_8", ".L_x_19"),
           "matmul_naive_uncoalesced": (".L_x_16", ".L_x_4", ".L_x_0", ".L_x_17")}[name]  # fmt: skip
    pre = C.segment(name, [name, lbl[0]])
    it = C.segment(name, lbl[1], per=16, mem_per_iter=2)
    post = C.segment(name, lbl[2])
    tail = C.segment(name, lbl[3])
    # i = Y (row), j = X (column). Coalesced: M[i*W+k], N[k*W+j], P[i*W+j];
    # uncoalesced: M[j*W+k], N[k*W+i], P[j*W+i].
    if coalesced:
        instrs = [(M, LOAD, LOOP, 0, W, 1, 0), (N, LOAD, LOOP, 1, 0, W, 0), (P, STORE, POST, 1, W, 0, 0)]
    else:
        instrs = [(M, LOAD, LOOP, W, 0, 1, 0), (N, LOAD, LOOP, 0, 1, W, 0), (P, STORE, POST, W, 1, 0, 0)]
    g = -(-W // tile)
    idle = {"int": 9.0, "branch": 1.0}
    return _loop_run(name, (g, g), (tile, tile), (W, W), instrs, W, pre, it, post, L, {"W": W, "tile": tile},
                     idle_cost=idle, tail=tail)  # fmt: skip


def matmul_naive(W: int, tile: int = 16):
    """P = M * N (W x W), one output per thread: N reads coalesced, M reads broadcast."""
    return _matmul_naive("matmul_naive", W, tile, True)


def matmul_naive_uncoalesced(W: int, tile: int = 16):
    """P = M * N with i and j swapped: M reads and P writes strided by W (one line per lane)."""
    return _matmul_naive("matmul_naive_uncoalesced", W, tile, False)


# Hong & Kim Table 4: memory (load) instructions and FP instructions per loop iteration.
MB_LOADS = {1: 0, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 6}
MB_FP = {1: 20, 2: 8, 3: 20, 4: 12, 5: 20, 6: 20, 7: 20}


def mb(k: int, coalesced: bool, blocks: int, iters: int, block: int):
    """Hong & Kim micro-benchmark k: ``iters`` loop iterations, MB_LOADS[k] loads each.

    Thread g (warp w, lane l) of T threads reads element it*T + e of each array, e = g
    (coalesced: a warp reads one 128-byte line) or e = l*NW + w (uncoalesced: NW warps,
    each lane in its own line once NW >= 32); after the loop it stores out[g].
    """
    name = f"mb{k}_{'c' if coalesced else 'uc'}"
    T = blocks * block
    NW = T // 32
    L = C.Layout()
    arrays = [L.add(f"a{j}", "global", 4 * T * iters) for j in range(MB_LOADS[k])]
    out = L.add("out", "global", 4 * T, written=True)
    blocks_ = C.recipe(name)["blocks"]
    labels = [b["label"] for b in blocks_]
    body = blocks_[1]
    n_loads = MB_LOADS[k]
    unroll = len(body["mem"]) // n_loads if n_loads else int(round(body.get("fp32", 0) / MB_FP[k]))
    pre = C.segment(name, labels[0])
    it = C.segment(name, labels[1], per=unroll, mem_per_iter=n_loads)
    post = C.segment(name, labels[-2])
    tail = C.segment(name, labels[-1])
    # Loads follow the (possibly lane-major) pattern; out[g] is stored in thread order.
    instrs = [(a, LOAD, LOOP, 1, 0, T, 0, 1) for a in arrays] + [(out, STORE, POST, 1, 0, 0, 0, 0)]
    cols, info = _loop_run(name, (blocks, 1), (block, 1), (T, 1), instrs, iters, pre, it, post, L,
                           {"blocks": blocks, "iters": iters, "block": block}, xperm=0 if coalesced else NW,
                           tail=tail)  # fmt: skip
    return cols, info


def _mb_factory(k: int, coalesced: bool):
    def gen(blocks: int, iters: int, block: int = 128):
        return mb(k, coalesced, blocks, iters, block)

    gen.__name__ = f"mb{k}_{'c' if coalesced else 'uc'}"
    gen.__doc__ = f"Hong & Kim micro-benchmark {k} ({'coalesced' if coalesced else 'uncoalesced'})."
    return gen


MB_GENERATORS = {f"mb{k}_{s}": _mb_factory(k, s == "c") for k in range(1, 8) for s in ("c", "uc")}
