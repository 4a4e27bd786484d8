"""Textbook kernels where placing an array is a real choice, in the sample placement a developer
starts from (every array global): conv1d, conv2d_channels, matvec, histogram, matmul_tiled.

Sources ``benchmarks/kernels/<name>.cu`` (ours, after Kirk & Hwu's *Programming Massively
Parallel Processors* and gpuperfpredict); instruction totals and the place of the rows from their
SASS (recipes.toml):

| kernel | warp path (SASS blocks) | rows per warp |
| --- | --- | --- |
| conv1d, matvec | head 5, entry, nvcc's loop unrolled by 4 (16x / 8x / 4x bodies, then one iteration at a time; ``loops.unrolled4_path`` walks it exactly for the trip count), store | per iteration: in[i+j] (or A[i*cols+j], lanes ``cols`` apart), mask[j] (or x[j], broadcast); out[i] |
| conv2d_channels_kK | head 9 + 19, channel loop (one channel per iteration, K*K taps unrolled), store | per channel: K*K pairs in[c][y+i][x+j], mask[c][i][j] (broadcast); out[y][x] |
| histogram | head 5 + 8 (``LDG``, ``RED.E.ADD``), EXIT | data[i]; bins[data[i]] as a reduction (op 3): nvcc compiles an ``atomicAdd`` whose result is unused to ``RED`` |
| matmul_tiled_T | head, per phase the body (two phases per body for T = 8), store | as ``blocks.tiled_matmul`` |

A row's order inside an unrolled group is the source order; a loop iteration costs the loop's
instructions spread evenly over its iterations (``_common``).
"""

from __future__ import annotations

import numpy as np

from ..codes import LOAD, REDUCTION, STORE
from ..errors import InputError
from . import _common as C
from .blocks import tiled_matmul
from .loops import LOOP, POST, _loop_run, unrolled4_path

SEED = 20240611  # histogram data
CONV2D_MASKS = (3, 5, 7)  # one compiled kernel per mask edge
MATMUL_TILES = (8, 16, 32)


def conv1d(n: int, mask_width: int = 7, block: int = 256):
    """out[i] = sum_j in[i + j] * mask[j] (in: n + mask_width - 1 floats), one output per thread."""
    L = C.Layout()
    inp = L.add("in", "global", 4 * (n + mask_width - 1))
    mask = L.add("mask", "global", 4 * mask_width)
    out = L.add("out", "global", 4 * n, written=True)
    path, pre, it, post, idle = unrolled4_path("conv1d", mask_width, 2)
    instrs = [(inp, LOAD, LOOP, 1, 0, 1, 0), (mask, LOAD, LOOP, 0, 0, 1, 0), (out, STORE, POST, 1, 0, 0, 0)]
    return _loop_run("conv1d", (-(-n // block), 1), (block, 1), (n, 1), instrs, mask_width, pre, it, post, L,
                     {"n": n, "mask_width": mask_width, "block": block}, idle_cost=idle, path=path)  # fmt: skip


def matvec(rows: int, cols: int | None = None, block: int = 256):
    """y = A x, one row of A per thread (the textbook version: A read uncoalesced, x broadcast)."""
    cols = rows if cols is None else cols
    L = C.Layout()
    A = L.add("A", "global", 4 * rows * cols, shape=(rows, cols))
    x = L.add("x", "global", 4 * cols)
    y = L.add("y", "global", 4 * rows, written=True)
    path, pre, it, post, idle = unrolled4_path("matvec", cols, 2)
    instrs = [(A, LOAD, LOOP, cols, 0, 1, 0), (x, LOAD, LOOP, 0, 0, 1, 0), (y, STORE, POST, 1, 0, 0, 0)]
    return _loop_run("matvec", (-(-rows // block), 1), (block, 1), (rows, 1), instrs, cols, pre, it, post, L,
                     {"rows": rows, "cols": cols, "block": block}, idle_cost=idle, path=path)  # fmt: skip


def conv2d_channels(width: int, height: int, channels: int = 3, mask: int = 3, block_x: int = 16, block_y: int = 16):
    """out[y][x] = sum_c sum_i sum_j in[c][y+i][x+j] * mask[c][i][j], one output per thread.

    ``in`` is stored as channels planes of (height + mask - 1) x (width + mask - 1): shape
    (channels * (height + mask - 1), width + mask - 1); ``mask`` as (channels * mask, mask).
    """
    if mask not in CONV2D_MASKS:
        raise InputError(
            f"conv2d_channels: mask edge must be one of {', '.join(map(str, CONV2D_MASKS))} (one compiled kernel each), got {mask}"
        )
    k = f"conv2d_channels_k{mask}"
    iw, ih = width + mask - 1, height + mask - 1
    L = C.Layout()
    inp = L.add("in", "global", 4 * channels * ih * iw, shape=(channels * ih, iw))
    msk = L.add("mask", "global", 4 * channels * mask * mask, shape=(channels * mask, mask))
    out = L.add("out", "global", 4 * width * height, shape=(height, width), written=True)
    labels = [b["label"] for b in C.recipe(k)["blocks"]]
    pre, it, post, tail = (
        C.segment(k, labels[:2]),
        C.segment(k, labels[2]),
        C.segment(k, labels[3]),
        C.segment(k, labels[4]),
    )
    taps = [(i, j) for i in range(mask) for j in range(mask)]
    instrs = []
    for i, j in taps:
        instrs += [(inp, LOAD, LOOP, 1, iw, ih * iw, i * iw + j), (msk, LOAD, LOOP, 0, 0, mask * mask, i * mask + j)]
    instrs.append((out, STORE, POST, 1, width, 0, 0))
    idle = dict(C.segment(k, labels[0]).counts)
    idle["branch"] += 1.0  # the @P0 EXIT that opens the second block
    grid = (-(-width // block_x), -(-height // block_y))
    params = {
        "width": width,
        "height": height,
        "channels": channels,
        "mask": mask,
        "block_x": block_x,
        "block_y": block_y,
    }
    return _loop_run("conv2d_channels", grid, (block_x, block_y), (width, height), instrs, channels, pre, it, post, L,
                     params, idle_cost=idle, tail=tail, sass=k)  # fmt: skip


def histogram(n: int, bins: int = 256, block: int = 256):
    """bins[data[i]] += 1 with a global atomicAdd, one element per thread; data uniform in [0, bins)
    from a fixed seed."""
    k = "histogram"
    # its n-long arrays before the rows: data, the lanes' indices, threads and values (8 bytes each), the mask
    C.require_free(33 * n + C.row_bytes() * 2 * -(-n // 32), f"histogram of {n:,} values")
    data = np.random.default_rng([SEED, bins]).integers(0, bins, n)
    L = C.Layout()
    d = L.add("data", "global", 4 * n)
    h = L.add("bins", "global", 4 * bins, written=True)
    head, body, ex = (C.segment(k, b["label"]) for b in C.recipe(k)["blocks"])
    # Warp w holds elements 32 w .. 32 w + 31 of its block's range; rows: LDG data, RED bins.
    n_blocks = -(-n // block)
    wpb = -(-block // 32)
    warps = np.arange(n_blocks * wpb)
    tid = (warps % wpb * 32)[:, None] + np.arange(32)[None, :]  # thread index in the block
    idx = (warps // wpb * block)[:, None] + tid
    on = (tid < block) & (idx < n)
    keep = on.any(axis=1)
    warps, idx, on = warps[keep], idx[keep], on[keep]
    m = warps.size
    cols = C.alloc_rows(2 * m)
    val = np.where(on, data[np.minimum(idx, n - 1)], 0)
    mask = (on.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1).astype(np.uint32)
    for r, (o, op, addr, seq) in enumerate(
        ((d, LOAD, d.base + 4 * idx, body.mem[0]), (h, REDUCTION, h.base + 4 * val, body.mem[1]))
    ):
        cols["cta"][r::2] = warps // wpb
        cols["warp"][r::2] = warps % wpb
        cols["seq"][r::2] = head.length + seq
        cols["pc"][r::2] = body.pcs[r]
        cols["op"][r::2] = op
        cols["space"][r::2] = C.space_code(o)
        cols["width"][r::2] = 4
        cols["mask"][r::2] = mask
        cols["addr"][r::2] = np.where(on, addr, 0).astype(np.uint64)
        cols["obj"][r::2] = o.id
    t = C.Tally()
    n_warps = n_blocks * wpb
    t.add(head, n_warps)
    t.add(body, m)
    t.add(ex, m)
    t.add({"branch": 1.0}, n_warps - m)  # @P0 EXIT, first instruction of the body block
    info = C.kernel_info(k, (n_blocks, 1, 1), (block, 1, 1), L, t, params={"n": n, "bins": bins, "block": block},
                         notes=f"data uniform in [0, {bins}) (numpy default_rng([{SEED}, bins])); bins updated by RED (op 3)")  # fmt: skip
    return cols, info


def matmul_tiled(W: int, tile: int = 16):
    """gpuperfpredict matMul_gpu_sharedmem (Kirk & Hwu tiled matrix multiply), tile 8, 16 or 32."""
    if tile not in MATMUL_TILES or W % tile:
        raise InputError(
            f"matmul_tiled: tile must be one of {', '.join(map(str, MATMUL_TILES))} and W a multiple of it, got W={W}, tile={tile}"
        )
    k = f"matmul_tiled_{tile}"
    labels = [b["label"] for b in C.recipe(k)["blocks"]]
    head, store, ex = C.segment(k, labels[0]), C.segment(k, labels[-2]), C.segment(k, labels[-1])
    main = C._block(k, labels[1])
    phases = sum(op.startswith("LDG") for _, op, _ in main["mem"]) // 2  # two LDG a phase
    per_phase = len([m for m in main["mem"] if m[1] != "CONST"]) // phases
    body = C.segment(k, labels[1], per=phases, mem_per_iter=per_phase) if phases > 1 else C.segment(k, labels[1])
    return tiled_matmul("matmul_tiled", k, W, tile, ("M", "N", "P", "Mds", "Nds"), head, body, store, ex,
                        params={"W": W, "tile": tile})  # fmt: skip
