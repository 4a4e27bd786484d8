"""Element-per-thread kernels: vecadd, triad, matrix_sum_normal/coalesced, transpose.

Every lane's address is affine in its global (X, Y) thread coordinates, so one
numba kernel (``_kern.affine2d``) writes them all. The SASS (recipes.toml):

| kernel | warp path | memory instructions (SASS order) |
| --- | --- | --- |
| vecadd | head 5 + ``@P0 EXIT``; active: 10 + EXIT | LDG b, LDG a, STG v |
| triad | 13 + EXIT (no bounds check) | LDG A, LDG B, STG C |
| matrix_sum_* | head 9 + ``@P0 EXIT``; active: 11 + EXIT | LDG B, LDG A, STG S |
| transpose | 26 + EXIT, loop of 4 unrolled | (LDG idata, STG odata) x 4 |

A warp whose lanes are all out of bounds runs the head and the predicated EXIT
and has no rows.
"""

from __future__ import annotations

import numpy as np

from ..codes import LOAD, STORE
from . import _common as C
from ._kern import affine2d


def _run(name, sass, grid, block, lim, instrs, layout, tally_fn, params, notes="", tile=None):
    """instrs: list of (obj, op, cx, cy, c0) in SASS order."""
    gx, gy = grid
    bx, by = block
    sx, sy = tile or block
    K = len(instrs)
    m_obj = np.array([o.id for o, *_ in instrs], np.int16)
    m_base = np.array([o.base for o, *_ in instrs], np.int64)
    m_elem = np.array([o.elem_bytes for o, *_ in instrs], np.int64)
    m_width = m_elem.astype(np.int8)
    m_op = np.array([op for _, op, *_ in instrs], np.int8)
    m_space = np.array([C.space_code(o) for o, *_ in instrs], np.int8)
    m_cx = np.array([i[2] for i in instrs], np.int64)
    m_cy = np.array([i[3] for i in instrs], np.int64)
    m_c0 = np.array([i[4] for i in instrs], np.int64)
    seq, pcs = tally_fn.mem_seq, tally_fn.mem_pc
    wpb = (bx * by + 31) // 32
    n_warps = gx * gy * wpb
    no_guard = np.zeros(K, np.int64)
    args = (gx, gy, bx, by, sx, sy, lim[0], lim[1], m_obj, m_base, m_elem, m_width, m_op, m_space, seq, pcs, m_cx,
            m_cy, m_c0, no_guard, no_guard)  # fmt: skip
    # A counting pass (no rows), then one pass writing every row once, in final order.
    n_rows, active = affine2d(False, C.counting_rows(n_warps), *args)
    cols = C.alloc_rows(n_rows)
    affine2d(True, C.out_tuple(cols), *args)
    tally = tally_fn(active, n_warps - active)
    info = C.kernel_info(name, (gx, gy, 1), (bx, by, 1), layout, tally, params=params, sass=sass, notes=notes)
    return cols, info


class _GuardedPath:
    """head + predicated EXIT for idle warps; head + body + EXIT for active ones."""

    def __init__(self, sass: str, head: str, body: str, tail: str | None):
        self.head = C.segment(sass, head)
        self.body = C.segment(sass, body)
        self.tail = C.segment(sass, tail) if tail else None
        self.mem_seq = np.array([self.head.length + m for m in self.body.mem], np.int64)
        self.mem_pc = self.body.pc_array()

    def __call__(self, active: int, idle: int) -> C.Tally:
        t = C.Tally()
        t.add(self.head, active + idle)
        t.add(self.body, active)
        if self.tail is not None:
            t.add(self.tail, active)
        t.add({"branch": 1.0}, idle)  # the predicated EXIT, first instruction of the body
        return t


class _Straight:
    """One straight-line block (no bounds check) and the final EXIT."""

    def __init__(self, sass: str, body: str, tail: str):
        self.body = C.segment(sass, body)
        self.tail = C.segment(sass, tail)
        self.mem_seq = self.body.mem_array()
        self.mem_pc = self.body.pc_array()

    def __call__(self, active: int, idle: int) -> C.Tally:
        t = C.Tally()
        t.add(self.body, active + idle)
        t.add(self.tail, active + idle)
        return t


def vecadd(n: int, block: int = 256):
    """v = a + b over n floats (Huang & Li Fig. 2a); a, b, v in global memory."""
    L = C.Layout()
    a = L.add("a", "global", 4 * n)
    b = L.add("b", "global", 4 * n)
    v = L.add("v", "global", 4 * n, written=True)
    grid = (-(-n // block), 1)
    path = _GuardedPath("vecadd", "vecadd", ".L_x_1", ".L_x_2")
    instrs = [(b, LOAD, 1, 0, 0), (a, LOAD, 1, 0, 0), (v, STORE, 1, 0, 0)]
    return _run("vecadd", "vecadd", grid, (block, 1), (n, 1), instrs, L, path, {"n": n, "block": block})


def triad(n: int, block: int = 256):
    """C = A + s*B over n floats (SHOC Triad); Huang & Li test B(G->S)."""
    # SHOC launches exactly n threads with no bounds check: n is rounded up to whole blocks.
    n = -(-n // block) * block
    L = C.Layout()
    A = L.add("A", "global", 4 * n)
    B = L.add("B", "global", 4 * n)
    Cc = L.add("C", "global", 4 * n, written=True)
    grid = (n // block, 1)
    path = _Straight("triad", "triad", ".L_x_1")
    instrs = [(A, LOAD, 1, 0, 0), (B, LOAD, 1, 0, 0), (Cc, STORE, 1, 0, 0)]
    return _run("triad", "triad", grid, (block, 1), (n, 1), instrs, L, path, {"n": n, "block": block})


def _matrix_sum(name: str, N: int, tile: int, coalesced: bool):
    L = C.Layout()
    A = L.add("A", "global", 4 * N * N, shape=(N, N))
    B = L.add("B", "global", 4 * N * N, shape=(N, N))
    S = L.add("S", "global", 4 * N * N, shape=(N, N), written=True)
    g = -(-N // tile)
    path = _GuardedPath(name, name, ".L_x_2" if coalesced else ".L_x_4", ".L_x_3" if coalesced else ".L_x_5")
    # coalesced: tid = Y*N + X (column from x); normal: tid = X*N + Y (row from x).
    cx, cy = (1, N) if coalesced else (N, 1)
    instrs = [(B, LOAD, cx, cy, 0), (A, LOAD, cx, cy, 0), (S, STORE, cx, cy, 0)]
    return _run(name, name, (g, g), (tile, tile), (N, N), instrs, L, path, {"N": N, "tile": tile})


def matrix_sum_normal(N: int, tile: int = 16):
    """S = A + B, N x N, thread (i from x, j from y): lanes stride N (uncoalesced)."""
    return _matrix_sum("matrix_sum_normal", N, tile, False)


def matrix_sum_coalesced(N: int, tile: int = 16):
    """S = A + B, N x N, thread (j from x, i from y): lanes consecutive."""
    return _matrix_sum("matrix_sum_coalesced", N, tile, True)


def transpose(width: int, height: int | None = None, tile: int = 32, rows: int = 8):
    """odata = idata^T (CUDA SDK transposeNaive, TILE_DIM 32, BLOCK_ROWS 8); Huang & Li test idata(G->2T, G->T).

    idata is height x width; thread (x, y) copies idata[y + i][x] to odata[x][y + i]
    for i = 0, 8, 16, 24: reads coalesced along a row, writes strided by height.
    """
    height = width if height is None else height
    if tile != 32 or rows != 8 or width % 32 or height % 32:
        from ..errors import InputError

        raise InputError(f"transpose: width and height must be multiples of 32 (TILE_DIM), got {width} x {height}")
    L = C.Layout()
    idata = L.add("idata", "global", 4 * width * height, shape=(height, width))
    odata = L.add("odata", "global", 4 * width * height, shape=(width, height), written=True)
    path = _Straight("transpose", "transpose", ".L_x_1")
    instrs = []
    for i in range(0, 32, 8):
        instrs.append((idata, LOAD, 1, width, i * width))  # idata[(y + i) * width + x]
        instrs.append((odata, STORE, height, 1, i))  # odata[x * height + y + i]
    grid = (width // 32, height // 32)
    # Block (32, 8) covers a 32 x 32 tile: Y = blockIdx.y * TILE_DIM + threadIdx.y.
    return _run(
        "transpose",
        "transpose",
        grid,
        (32, 8),
        (width, height),
        instrs,
        L,
        path,
        {"width": width, "height": height},
        tile=(32, 32),
    )
