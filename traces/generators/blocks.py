"""Block-cooperative kernels with shared memory: reduction, matrixmul, convolution_rows.

Each kernel's rows are written by one numba pass in final (cta, warp, seq) order
(``_kern.reduction_rows``, ``matrixmul_rows``, ``convolution_rows_rows``): a counting
pass sizes the output, a second writes every row once. Addresses follow the CUDA
source; the order and place of the rows follow the SASS (recipes.toml). The
``Emitter`` here (rows built with numpy one SASS memory instruction at a time over
every warp that runs it, then sorted into warp program order) serves the SHOC
kernels of ``shoc``.

reduction (SHOC reduce<float, 256>, blocks of 256):
  ``reduction`` 11 (STS sdata[tid] = 0) | ``.L_x_3`` 13 per while-iteration (LDG i+256,
  LDG i) | ``.L_x_2`` STS | ``.L_x_1`` | ``.L_x_0`` 41: tid<128 and tid<64 steps
  (LDS, LDS, STS each, predicated), warps 1..7 branch out after 17, warp 0 runs the
  six volatile warp steps | ``.L_x_5`` | ``.L_x_4`` 5: ``@P2 EXIT``, lane 0 LDS sdata[0],
  STG g_odata[block] | EXIT.
matrixmul (CUDA SDK, BLOCK_SIZE 16): ``matrixmul`` 30 | ``.L_x_1`` 49 per tile: LDG A,
  LDG B, STS As, STS Bs, BAR, 16 LDS Bs[k][tx] and 4 LDS.128 As[ty][4m..4m+3] in SASS
  order, BAR | ``.L_x_0`` STG C | EXIT.
convolution_rows (CUDA SDK, radius 8, 16 x 4 threads, 8 result steps): one
  straight-line block of 316; every LDS/LDG/STS address comes from its SASS operand's
  immediate offset (the STGs, whose base register moves, in source order); the 136 FFMA operands c[0x3][..] are the c_Kernel
  reads (rows in constant space at the FFMA's place: no load instruction of
  their own, so they are not in the ldst count).
"""

from __future__ import annotations

import re

import numpy as np

from ..codes import LOAD, STORE
from ..schema import COLUMNS
from . import _common as C
from ._kern import convolution_rows_rows, matrixmul_rows, reduction_rows, scatter_part, seq_sorted

LANES = np.arange(32, dtype=np.uint32)


class Emitter:
    """Collects rows instruction by instruction; ``columns`` sorts them into warp program order."""

    def __init__(self) -> None:
        self.parts: list[tuple] = []

    def add(self, cta, warp, seq, pc, op, obj, width, active, index, byte_offset=None):
        """cta, warp, seq: (n,); active: (n, 32) bool; index: (n, 32) element index into obj
        (or byte offsets in ``byte_offset`` mode). Rows with no active lane are dropped."""
        active = np.asarray(active, bool)
        keep = active.any(axis=1)
        if not keep.any():
            return
        n = int(keep.sum())
        shape = active.shape
        cta = np.broadcast_to(np.asarray(cta), keep.shape)[keep]
        warp = np.broadcast_to(np.asarray(warp), keep.shape)[keep]
        seq = np.broadcast_to(np.asarray(seq), keep.shape)[keep]
        idx = np.broadcast_to(np.asarray(index if byte_offset is None else byte_offset, np.int64), shape)[keep]
        active = active[keep]
        scale = obj.elem_bytes if byte_offset is None else 1
        addr = np.where(active, np.uint64(obj.base) + (idx * scale).astype(np.uint64), np.uint64(0))
        mask = (active.astype(np.uint32) << LANES).sum(axis=1, dtype=np.uint64).astype(np.uint32)
        self.parts.append((cta, warp, seq, np.full(n, pc), np.full(n, op), np.full(n, C.space_code(obj)),
                           np.full(n, width), mask, addr, np.full(n, obj.id)))  # fmt: skip

    def columns(self) -> dict[str, np.ndarray]:
        """Rows in (cta, warp, seq) order. Parts are added in each warp's program order, so a
        stable counting sort by warp (one numba pass writing every row once, in place) gives
        the final order; should a generator add out of order, a lexsort on seq fixes it."""
        if not self.parts:
            return C.alloc_rows(0)
        n_warp = 1 + max(int(p[1].max()) for p in self.parts)
        n_key = n_warp * (1 + max(int(p[0].max()) for p in self.parts))
        keys = [p[0].astype(np.int64) * n_warp + p[1] for p in self.parts]
        counts = np.zeros(n_key, np.int64)
        for k in keys:
            counts += np.bincount(k, minlength=n_key)
        cursor = C.offsets_from_counts(counts)[:-1].copy()
        out = C.alloc_rows(int(counts.sum()))
        tup = C.out_tuple(out)
        for k, p in zip(keys, self.parts):
            scatter_part(tup, cursor, k, p[0].astype(np.int32), p[1].astype(np.int32), p[2].astype(np.int64),
                         np.int32(p[3][0]), np.int8(p[4][0]), np.int8(p[5][0]), np.int8(p[6][0]), p[7], p[8],
                         np.int16(p[9][0]))  # fmt: skip
        if not seq_sorted(out["cta"], out["warp"], out["seq"]):
            order = np.lexsort((out["seq"], out["warp"], out["cta"]))
            for name in COLUMNS:
                out[name] = out[name][order]
        return out


def _grid_warps(n_ctas: int, wpb: int):
    """(n_ctas * wpb,) cta and warp ids and the (n, 32) thread ids of their lanes."""
    cta = np.repeat(np.arange(n_ctas, dtype=np.int64), wpb)
    warp = np.tile(np.arange(wpb, dtype=np.int64), n_ctas)
    tid = warp[:, None] * 32 + np.arange(32)[None, :]
    return cta, warp, tid


def reduction(n: int, blocks: int = 64):
    """SHOC reduce<float, 256>: g_idata (n floats) -> g_odata (one sum per block); sdata in shared."""
    B = 256
    per_pass = 2 * B * blocks
    n = -(-n // per_pass) * per_pass  # whole passes: every thread runs the same number of iterations
    n_it = n // per_pass
    L = C.Layout()
    g_idata = L.add("g_idata", "global", 4 * n)
    g_odata = L.add("g_odata", "global", 4 * blocks, written=True)
    sdata = L.add("sdata", "shared", 4 * B, written=True)
    k = "reduction"
    head, loop, after, bsync, tree, bs5, fin, ex = (C.segment(k, lb) for lb in
        ("reduction", ".L_x_3", ".L_x_2", ".L_x_1", ".L_x_0", ".L_x_5", ".L_x_4", ".L_x_8"))  # fmt: skip
    tree_short = C.segment(k, ".L_x_0", upto=17)
    wpb = B // 32
    # One numba pass writes the rows in final order (_kern.reduction_rows). The tree: (threshold,
    # offset) steps, three memory instructions each (LDS tid, LDS tid+off, STS tid), rows in seq order.
    s_after = head.length + n_it * loop.length
    s = s_after + after.length + bsync.length
    steps = [(128, 128), (64, 64)] + [(32, o) for o in (32, 16, 8, 4, 2, 1)]
    tr = [(thr, add, op, s + tree.mem[3 * j + m], tree.pcs[3 * j + m])
          for j, (thr, o) in enumerate(steps) for m, (op, add) in enumerate(((LOAD, 0), (LOAD, o), (STORE, 0)))]  # fmt: skip
    tr.sort(key=lambda x: x[3])  # stable: program order by seq
    tr_thr, tr_add, tr_op, tr_seq, tr_pc = (np.array([x[i] for x in tr], np.int64) for i in range(5))
    s_w0 = s + tree.length + bs5.length  # warp 0 runs the whole tree, warps 1..7 leave after 17
    s_w = s + tree_short.length + bs5.length
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    ids = np.array([g_idata.id, g_odata.id, sdata.id], np.int16)
    spaces = np.array([C.space_code(o) for o in (g_idata, g_odata, sdata)], np.int8)
    args = (blocks, n_it, head.mem[0], head.pcs[0], head.length, loop.length, i64(loop.mem[:2]), i64(loop.pcs[:2]),
            s_after + after.mem[0], after.pcs[0], tr_thr, tr_add, tr_op.astype(np.int8), tr_seq, tr_pc.astype(np.int32),
            s_w0, s_w, i64(fin.mem[:2]), i64(fin.pcs[:2]), ids, spaces, g_idata.base, g_odata.base, sdata.base)  # fmt: skip
    cols = C.alloc_rows(reduction_rows(False, C.counting_rows(blocks * wpb), *args))
    reduction_rows(True, C.out_tuple(cols), *args)
    n_warps = blocks * wpb
    t = C.Tally()
    t.add(head, n_warps)
    t.add(loop, n_warps * n_it)
    t.add(after, n_warps)
    t.add(bsync, n_warps)
    t.add(tree, blocks)
    t.add(tree_short, n_warps - blocks)
    t.add(bs5, n_warps)
    t.add(fin, blocks)
    t.add(ex, blocks)
    t.add({"branch": 1.0}, n_warps - blocks)  # @P2 EXIT
    info = C.kernel_info(k, (blocks, 1, 1), (B, 1, 1), L, t, params={"n": n, "blocks": blocks})
    return cols, info


def matrixmul(W: int, tile: int = 16):
    """CUDA SDK matrixMul, C = A * B with square W x W matrices; As, Bs tiles in shared memory."""
    if tile != 16 or W % 16:
        from ..errors import InputError

        raise InputError(
            f"matrixmul: the SASS recipe is for BLOCK_SIZE 16; W must be a multiple of 16, got W={W}, tile={tile}"
        )
    k = "matrixmul"
    segs = [C.segment(k, lb) for lb in ("matrixmul", ".L_x_1", ".L_x_0", ".L_x_3")]
    return tiled_matmul(k, k, W, 16, ("A", "B", "C", "As", "Bs"), *segs, params={"W": W, "tile": 16})


def tiled_matmul(name, sass, W, BS, names, head, body, store, ex, *, params, notes=""):
    """C = A * B (W x W, W a multiple of BS), BS x BS threads, one BS x BS tile of A and of B staged
    in shared memory per phase. ``names``: A, B, C, As, Bs; ``head``, ``body`` (one phase: LDG A,
    LDG B, STS As, STS Bs, BAR, BS LDS Bs[k][tx] and BS/4 LDS.128 As[ty][4m..4m+3] in SASS order,
    BAR), ``store``, ``ex``: the SASS segments of a warp's path."""
    L = C.Layout()
    A, B, Cm = (L.add(n, "global", 4 * W * W, shape=(W, W), written=(i == 2)) for i, n in enumerate(names[:3]))
    As, Bs = (L.add(n, "shared", 4 * BS * BS, shape=(BS, BS), written=True) for n in names[3:])
    g = W // BS
    wpb = BS * BS // 32
    # One numba pass writes the rows in final order (_kern.matrixmul_rows); the body's memory
    # slots in SASS order: LDG A, LDG B, STS As, STS Bs, then LDS Bs[k][tx] (k-th) and LDS.128
    # As[ty][4m..4m+3] (m-th).
    kinds, args = [], []
    q, kb, ma = 0, 0, 0
    for op in body.ops:
        if op.startswith("LDG") or op.startswith("STS"):
            kinds.append(q)
            args.append(0)
            q += 1
        elif op == "LDS.128":
            kinds.append(4)
            args.append(ma)
            ma += 1
        else:
            kinds.append(5)
            args.append(kb)
            kb += 1
    n_rows = g * g * wpb * ((W // BS) * len(kinds) + 1)
    cols = C.alloc_rows(n_rows)
    objs = np.array([A.id, B.id, As.id, Bs.id, Cm.id], np.int16)
    spaces = np.array([C.space_code(o) for o in (A, B, As, Bs, Cm)], np.int8)
    matrixmul_rows(C.out_tuple(cols), W, BS, head.length, body.length, np.array(kinds, np.int64), np.array(args, np.int64),
                   body.mem_array(), body.pc_array(), A.base, B.base, As.base, Bs.base, Cm.base, objs, spaces,
                   store.mem[0], store.pcs[0])  # fmt: skip
    n_warps = g * g * wpb
    t = C.Tally()
    t.add(head, n_warps)
    t.add(body, n_warps * (W // BS))
    t.add(store, n_warps)
    t.add(ex, n_warps)
    info = C.kernel_info(name, (g, g, 1), (BS, BS, 1), L, t, params=params, sass=sass, notes=notes)
    return cols, info


_IMM = re.compile(r"\[(R\d+|RZ)(\.X4)?(?:\.64)?(?:\+(0x[0-9a-f]+))?\]")


def convolution_rows(width: int, height: int | None = None):
    """CUDA SDK convolutionRowsKernel over a width x height image (pitch = width).

    Each block (16 x 4 threads) produces 8 x 16 outputs of 4 rows: it loads its main
    tile and one 16-wide halo on each side into s_Data (halo lanes outside the
    image store 0 instead of loading), then each thread computes 8 outputs from
    17 taps of s_Data and c_Kernel.
    """
    height = width if height is None else height
    if width % 128 or height % 4:
        from ..errors import InputError

        raise InputError(f"convolution_rows: width must be a multiple of 128 and height of 4, got {width} x {height}")
    R, BX, BY, STEPS, HALO = 8, 16, 4, 8, 1
    SW = (STEPS + 2 * HALO) * BX  # s_Data row length (160 floats)
    L = C.Layout()
    d_Src = L.add("d_Src", "global", 4 * width * height, shape=(height, width))
    d_Dst = L.add("d_Dst", "global", 4 * width * height, shape=(height, width), written=True)
    c_Kernel = L.add("c_Kernel", "constant", 4 * (2 * R + 1))
    s_Data = L.add("s_Data", "shared", 4 * BY * SW, shape=(BY, SW), written=True)
    k = "convolution_rows"
    blk = C.recipe(k)["blocks"][0]
    whole, ex = C.segment(k, k), C.segment(k, ".L_x_1")
    gx, gy = width // (STEPS * BX), height // BY
    wpb = BX * BY // 32
    # The warp's row template in SASS order (kind, predicate, e, base, seq, pc, op, object); one
    # numba pass (_kern.convolution_rows_rows) writes every warp's rows in final order.
    tpl = []
    const_seen = 0
    stg = 0
    for off, op, operand in blk["mem"]:
        pc = blk["pc"] + C.PC_STEP * off
        if op == "CONST":
            imm = int(operand.split("[")[2].rstrip("]"), 16)
            tpl.append((0, 0, 0, c_Kernel.base + imm, off, pc, LOAD, c_Kernel))
            const_seen += 1
            continue
        m = _IMM.search(operand)
        imm = int(m.group(3), 16) if m and m.group(3) else 0
        e = imm // 4
        if op.startswith("LDG"):
            # Halo loads are predicated: left halo (e == 0) when baseX >= 0, right (e == 9*16)
            # when imageW - baseX > 9*16.
            pred = 1 if e == 0 else 2 if e == (STEPS + HALO) * BX else 0
            tpl.append((1, pred, e, d_Src.base + 4 * e, off, pc, LOAD, d_Src))
        elif op.startswith("STG"):
            # The stores' base register moves between them: take them in source order, i = 1..8.
            stg += 1
            tpl.append((1, 0, 0, d_Dst.base + 4 * stg * BX, off, pc, STORE, d_Dst))
        elif op.startswith("STS"):
            tpl.append((2, 0, 0, s_Data.base + 4 * e, off, pc, STORE, s_Data))
        elif op.startswith("LDS"):
            tpl.append((2, 0, 0, s_Data.base + 4 * e, off, pc, LOAD, s_Data))
    tpl.sort(key=lambda x: x[4])  # stable: program order by seq
    col = lambda i, dt: np.array([x[i] for x in tpl], dt)  # noqa: E731
    args = (gx, gy, width, col(0, np.int8), col(1, np.int8), col(2, np.int64), col(3, np.int64), col(4, np.int64),
            col(5, np.int32), col(6, np.int8), np.array([C.space_code(x[7]) for x in tpl], np.int8),
            np.array([x[7].id for x in tpl], np.int16))  # fmt: skip
    cols = C.alloc_rows(convolution_rows_rows(False, C.counting_rows(gx * gy * wpb), *args))
    convolution_rows_rows(True, C.out_tuple(cols), *args)
    n_warps = gx * gy * wpb
    t = C.Tally()
    t.add(whole, n_warps)
    t.add(ex, n_warps)
    info = C.kernel_info(k, (gx, gy, 1), (BX, BY, 1), L, t, params={"width": width, "height": height},
                         notes=f"{const_seen} c_Kernel rows are FFMA operands in the constant bank, not load instructions",
                         extra={"const_operands": ["c_Kernel"]})  # fmt: skip
    return cols, info
