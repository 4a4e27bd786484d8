"""Kernel Tuner's 2D convolution, the variant without shared memory: ``conv2d_kt``.

Source: ``benchmarks/kernels/conv2d_kt.cu`` (our own CUDA source of the kernel of
Kernel Tuner's benchmark_hub ``convolution_milo``, ``use_shmem = 0``, ``read_only = 0``;
the measured A100 variants are in ``shared/data/kerneltuner-convolution``). The filter is
15 x 15, fixed (``FH``, ``FW``, as in the measured data). Each thread of a
(block_size_x, block_size_y) block computes tile_size_y x tile_size_x outputs at
(by0 + ty + a*block_size_y, bx0 + tx + b*block_size_x), by0 = blockIdx.y*block_size_y*tile_size_y,
bx0 = blockIdx.x*block_size_x*tile_size_x, from
``sum[a][b] += input[(y + i)*IW + x + j] * d_filter[i*FW + j]`` with every loop unrolled
(order i, j, a, b).

What the SASS (nvcc 13.0, sm_80) does, and so the rows:

- The code is one straight line. nvcc loads each distinct input element a thread needs
  once, at offset (a*block_size_y + i, b*block_size_x + j) from its first output, and
  reuses it across the tile (for tile 2 x 2 and block_size_y 4: 570 LDG for 900 FFMA):
  one load row per distinct offset, in order of first use in the source loops
  (:func:`load_offsets`), every one its own instruction at its own pc.
- ``d_filter`` is read as the FFMAs' constant-bank operands ``c[0x3][imm]``, with no load
  instruction: it has no rows (the object stays in the metadata, so the kernel is
  described and a placement can move it).
- Then the tile's stores, in (a, b) order. A lane whose first output lies outside the
  image exits at once (``@P0 EXIT`` after the 9-instruction head): it is inactive in
  every row. A later output outside the image (a partial tile at the image's edge) is a
  predicated store: the lane drops out of that row only, and a store no lane makes has
  no row. Loads are not guarded (as in the source): near a partial tile an active lane
  reads input rows past the H + FH - 1 the image has, so the ``input`` object covers the
  rows the launch reads (:func:`input_rows`).

Registers (``extra``): ``regs_by_arch``, the shape's plain build on every architecture
(``registers.toml``), and ``regs_by_placement``, its builds with the input through ``__ldg`` or staged in
shared memory (``input=R``, ``input=S/G``, ``input=S/R``: ``registers_variants.toml``,
:func:`variant_registers`), which ``placement.occupancy.regs_for`` takes for those placements. MLP, the
same way (:func:`shape_mlp`, ``mlp.toml``): ``mlp_by_arch`` of the plain build and ``mlp_by_placement`` of
the ``__ldg`` build on Turing, Ampere and Hopper (``placement.builds.mlp_for``). And ``inst_by_arch``, the plain
build's warp-instructions on every architecture over the trace's (:func:`shape_instructions`,
``instructions.toml``): sm_90 reads the filter through 114 ``ULDC.64`` a warp where sm_80 has it as FFMA operands,
and a build that spills issues its ``LDL``/``STL`` too (``placement.builds.inst_scale``).

Instruction totals (:func:`warp_counts`): the recipe (``recipes.toml`` entry
``conv2d_kt``, compiled at ``RECIPE_SHAPE``) scaled by the shape's structure: ldst = U + T
(U distinct loads, T = tile_size_x*tile_size_y stores); fp32 = FH*FW*T FFMA plus the
recipe's other fp32; int = the recipe's int plus one ISETP for every store after the
first (the early exit already guards the first); branch = the recipe's EXITs, less the
predicated EXIT nvcc puts before the last store when a tile has one output only. A warp
that exits at once runs the head and the EXIT. ``tests/test_generators_conv.py`` checks
the formula against nvcc's SASS of other shapes.

seq and pc: a warp runs the code top to bottom once, so an instruction's pc is
``16 * seq``. The head is the recipe's instructions before its first load; the body that
follows holds the U loads and the FFMAs, the loads evenly spaced in it (the SASS
interleaves them with the FFMAs); the rest of the instructions (guards, the output
address, the stores, the EXITs) follow, with the stores evenly spaced among them.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np

from ..codes import LOAD, STORE
from ..errors import InputError
from . import _common as C
from ._kern import affine2d

FH = FW = 15
KERNEL = "conv2d_kt"
RECIPE_SHAPE = (32, 4, 2, 2)  # the .cu's default block_size_x, block_size_y, tile_size_x, tile_size_y
ELEM = 4  # float
GUARD_INT = 1  # SASS: one ISETP for each store after the first (a predicate per later output)
# Registers per thread per architecture: ``registers.toml`` [conv2d_kt] (benchmarks/arch_registers.py, nvcc 13.0
# -Xptxas -v), keyed "block_size_y,tile_size_x,tile_size_y" over Kernel Tuner's space (block_size_y 1..16, tiles
# 1..4), for block_size_x >= FW (tile columns disjoint: the same code at every such width; checked on sm_90 at 16,
# 48, 128 and 256). On sm_75, sm_80 and sm_86 six shapes take more than 64 (the largest tiles, 240-255, some
# spilling), the others 31-40 (62-64 on sm_75); on sm_90 42 of the 80 do (56-255: a 2 x 2 tile of 8-row blocks
# takes 254), on sm_100 and sm_120 39.
# Spilled traffic (LDL/STL, local memory) is not in the rows nor in the totals.


def shape_registers(bsx: int, bsy: int, tsx: int, tsy: int) -> dict | None:
    """The shape's ``registers.toml`` entry ({sm_XY: registers or [registers, spill-store, spill-load bytes]}),
    None for a shape outside the table (block_size_x < 15, or block_size_y or a tile outside Kernel Tuner's)."""
    if bsx < FW:
        return None
    return C.registers().get(KERNEL, {}).get(f"{bsy},{tsx},{tsy}")


def variant_registers(bsx: int, bsy: int, tsx: int, tsy: int) -> dict[str, dict[str, int]]:
    """``{"input=R": {sm_XY: registers}, "input=S/G": ..., "input=S/R": ...}``: the registers of the shape's
    builds with the input through ``__ldg`` or staged in shared memory (``-Dread_only=1``, ``-Duse_shmem=1``;
    ``registers_variants.toml``), for ``extra["regs_by_placement"]`` (``placement.occupancy.regs_for``). A
    build the table lacks (block_size_x < 15; a staged one at a block_size_x it was not built for) is left out
    and that placement takes the plain build's registers."""
    if bsx < FW:
        return {}
    table = C.variant_registers().get(KERNEL, {})
    out = {}
    for v in ("R", "S/G", "S/R"):
        entry = table.get(f"R,{bsy},{tsx},{tsy}" if v == "R" else f"{v},{bsx},{bsy},{tsx},{tsy}")
        if entry:
            out[f"input={v}"] = C.regs_by_arch(entry)
    return out


def shape_mlp(bsx: int, bsy: int, tsx: int, tsy: int) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """The MLP of the shape's builds (``mlp.toml``, ``benchmarks/arch_mlp.py``): ``({sm_XY: MLP},
    {"input=R": {sm_XY: MLP}})``, its plain build's on every architecture the table has, for
    ``extra["mlp_by_arch"]``, and its ``__ldg`` build's, for ``extra["mlp_by_placement"]``
    (``placement.builds.mlp_for``). Empty for a shape outside the table (block_size_x < 15). A staged build
    has none: its compute loop reads shared memory, and its copy loop is priced apart (``placement.staging``)."""
    if bsx < FW:
        return {}, {}
    table = C.mlps().get(KERNEL, {})
    plain = {a: float(v) for a, v in table.get(f"{bsy},{tsx},{tsy}", {}).items()}
    ldg = {a: float(v) for a, v in table.get(f"R,{bsy},{tsx},{tsy}", {}).items()}
    return plain, ({"input=R": ldg} if ldg else {})


def shape_instructions(bsx: int, bsy: int, tsx: int, tsy: int) -> dict[str, float]:
    """``{sm_XY: scale}``: the warp-instructions a warp of the shape's plain build issues on each architecture
    (``instructions.toml``, ``benchmarks/arch_instructions.py``) over the trace's own, :func:`warp_counts` (the sm_80
    recipe's code without spills: on sm_80 the table has the same count but for the shapes nvcc spills, whose
    ``LDL``/``STL`` it adds), for ``extra["inst_by_arch"]`` (``placement.builds.inst_scale``). Empty for a shape
    outside the table (block_size_x < 15, or block_size_y or a tile outside Kernel Tuner's)."""
    if bsx < FW:
        return {}
    entry = C.instructions().get(KERNEL, {}).get(f"{bsy},{tsx},{tsy}")
    if not entry:
        return {}
    own = sum(warp_counts(bsx, bsy, tsx, tsy).values())
    return {a: round(v / own, 6) for a, v in entry.items()}


def load_offsets(bsx: int, bsy: int, tsx: int, tsy: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column offsets (a*bsy + i, b*bsx + j) from a thread's first output of every distinct
    input element it reads, in order of first use over the loops i, j, a, b."""
    i, j, a, b = (g.ravel() for g in np.indices((FH, FW, tsy, tsx)))
    r = a * bsy + i
    c = b * bsx + j
    key = r * (bsx * (tsx - 1) + FW) + c
    _, first = np.unique(key, return_index=True)
    first.sort()
    return r[first], c[first]


@lru_cache(maxsize=1)
def _recipe_facts() -> dict:
    """Totals per class of the recipe shape's SASS, its loads and stores, its head (instructions
    before the first load) and the cost of a warp that exits at once (first block + EXIT)."""
    blocks = C.recipe(KERNEL)["blocks"]
    totals = {c: float(sum(b.get(c, 0) for b in blocks)) for c in C.INSTRUCTION_CLASSES}
    pos, loads, stores, head = 0, 0, 0, None
    for b in blocks:
        for off, op, _operand in b["mem"]:
            if op.startswith("LDG"):
                loads += 1
                head = pos + off if head is None else head
            elif op.startswith("STG"):
                stores += 1
        pos += b["n"]
    idle = {c: float(blocks[0].get(c, 0)) for c in C.INSTRUCTION_CLASSES}
    idle["branch"] += 1.0  # the @P0 EXIT that opens the second block
    bsx, bsy, tsx, tsy = RECIPE_SHAPE
    if loads != load_offsets(*RECIPE_SHAPE)[0].size or stores != tsx * tsy:
        raise AssertionError(f"{C.RECIPE_FILE.name} [{KERNEL}]: {loads} LDG, {stores} STG; RECIPE_SHAPE {RECIPE_SHAPE} "
                             f"expects {load_offsets(*RECIPE_SHAPE)[0].size} and {tsx * tsy}")  # fmt: skip
    return {"totals": totals, "loads": loads, "stores": stores, "head": head, "idle": idle}


def warp_counts(bsx: int, bsy: int, tsx: int, tsy: int) -> dict[str, float]:
    """Instructions per class one warp with an active lane runs, for any block and tile shape."""
    f = _recipe_facts()
    t0 = f["stores"]
    u = load_offsets(bsx, bsy, tsx, tsy)[0].size
    t = tsx * tsy
    n = dict(f["totals"])
    n["ldst"] += (u - f["loads"]) + (t - t0)
    n["fp32"] += FH * FW * (t - t0)
    n["int"] += GUARD_INT * (t - t0)
    n["branch"] += (t > 1) - (t0 > 1)
    return n


def input_rows(width: int, height: int, bsx: int, bsy: int, tsx: int, tsy: int) -> int:
    """Rows of the input the launch reads: H + FH - 1, more when a partial tile's active lanes read
    below the image (their loads are not guarded)."""
    iw = width + FW - 1
    sy, sx = bsy * tsy, bsx * tsx
    by0, bx0 = (height - 1) // sy * sy, (width - 1) // sx * sx
    ymax = min(by0 + bsy - 1, height - 1) + (tsy - 1) * bsy  # last active lane's last output row
    xmax = min(bx0 + bsx - 1, width - 1) + (tsx - 1) * bsx
    last = (ymax + FH - 1) * iw + xmax + FW - 1
    return max(height + FH - 1, last // iw + 1)


def _spread(n: int, start: int, length: int) -> np.ndarray:
    """n distinct positions evenly spaced in [start, start + length) (length >= n)."""
    return start + ((np.arange(n) + 0.5) * length / max(n, 1)).astype(np.int64)


def conv2d_kt(width: int, height: int, block_size_x: int = RECIPE_SHAPE[0], block_size_y: int = RECIPE_SHAPE[1],
              tile_size_x: int = RECIPE_SHAPE[2], tile_size_y: int = RECIPE_SHAPE[3]):  # fmt: skip
    """Kernel Tuner's 2D convolution (use_shmem 0, read_only 0): input, output global; filter constant."""
    bsx, bsy, tsx, tsy = block_size_x, block_size_y, tile_size_x, tile_size_y
    if bsx * bsy > 1024:
        raise InputError(f"conv2d_kt: a block holds at most 1024 threads, got {bsx} x {bsy} = {bsx * bsy}")
    iw = width + FW - 1
    L = C.Layout()
    rows = input_rows(width, height, bsx, bsy, tsx, tsy)
    inp = L.add("input", "global", ELEM * rows * iw, shape=(rows, iw))
    L.add("filter", "constant", ELEM * FH * FW, shape=(FH, FW))
    out = L.add("output", "global", ELEM * width * height, shape=(height, width), written=True)
    r, c = load_offsets(bsx, bsy, tsx, tsy)
    u, t = r.size, tsx * tsy
    a, b = (g.ravel() for g in np.indices((tsy, tsx)))
    f = _recipe_facts()
    n = warp_counts(bsx, bsy, tsx, tsy)
    body = u + FH * FW * t
    rest = int(round(sum(n.values()))) - f["head"] - body
    seq = np.concatenate([_spread(u, f["head"], body), _spread(t, f["head"] + body, rest)])
    k = u + t
    is_load = np.arange(k) < u
    m_obj = np.where(is_load, inp.id, out.id).astype(np.int16)
    m_base = np.where(is_load, inp.base, out.base).astype(np.int64)
    m_elem = np.full(k, ELEM, np.int64)
    m_op = np.where(is_load, LOAD, STORE).astype(np.int8)
    m_space = np.full(k, C.space_code(inp), np.int8)
    m_cy = np.where(is_load, iw, width).astype(np.int64)
    m_c0 = np.concatenate([r * iw + c, a * bsy * width + b * bsx]).astype(np.int64)
    m_gx = np.concatenate([np.zeros(u, np.int64), b * bsx])
    m_gy = np.concatenate([np.zeros(u, np.int64), a * bsy])
    gx, gy = -(-width // (bsx * tsx)), -(-height // (bsy * tsy))
    args = (gx, gy, bsx, bsy, bsx * tsx, bsy * tsy, width, height, m_obj, m_base, m_elem, m_elem.astype(np.int8), m_op,
            m_space, seq, (C.PC_STEP * seq).astype(np.int32), np.ones(k, np.int64), m_cy, m_c0, m_gx, m_gy)  # fmt: skip
    # A counting pass (no rows), then one pass writing every row once, in final order.
    n_rows, active = affine2d(False, C.counting_rows(gx * gy * -(-(bsx * bsy) // 32)), *args)
    cols = C.alloc_rows(n_rows)
    affine2d(True, C.out_tuple(cols), *args)
    n_warps = gx * gy * -(-(bsx * bsy) // 32)
    tally = C.Tally()
    tally.add(n, active)
    tally.add(f["idle"], n_warps - active)
    params = {"width": width, "height": height, "block_size_x": bsx, "block_size_y": bsy, "tile_size_x": tsx,
              "tile_size_y": tsy, "filter": f"{FH} x {FW}"}  # fmt: skip
    notes = (f"filter: read as FFMA constant-bank operands (no load instruction), so it has no rows; "
             f"{u} distinct input loads and {t} stores per thread; totals from the {RECIPE_SHAPE} recipe scaled "
             f"by the shape")  # fmt: skip
    entry = shape_registers(bsx, bsy, tsx, tsy)
    arch = C.recipe(KERNEL)["arch"]
    spills = [f"{a} ({v[1]} B stored, {v[2]} B loaded per thread)" for a, v in (entry or {}).items()
              if not isinstance(v, int) and (v[1] or v[2])]  # fmt: skip
    if spills:
        notes += f"; nvcc spills this shape on {', '.join(spills)}: local traffic not traced"
    # the shape's own registers on every architecture (placement.occupancy.regs_for); none for a shape
    # outside the table, whose recipe count (the .cu's default shape) stands everywhere
    by_arch = C.regs_by_arch(entry) if entry else {}
    # and those of its builds for the input's other placements (R, S/G, S/R)
    extra = {"regs_by_arch": by_arch}
    if by_placement := variant_registers(bsx, bsy, tsx, tsy):
        extra["regs_by_placement"] = by_placement
    # and the MLP of the shape's plain and __ldg builds (placement.builds.mlp_for): none for a shape outside the
    # table, whose recipe's (the .cu's default shape on sm_80) stands everywhere, as its registers do (the
    # kernels' row is the default shape's: 87.2 on sm_90 with 2 x 2 tiles, 19.5 with 1 x 1)
    mlp_by_arch, mlp_by_placement = shape_mlp(bsx, bsy, tsx, tsy)
    extra["mlp_by_arch"] = mlp_by_arch
    if mlp_by_placement:
        extra["mlp_by_placement"] = mlp_by_placement
    # and every architecture's instruction count over the trace's (placement.builds.inst_scale): sm_90's ULDC.64s
    if inst_by_arch := shape_instructions(bsx, bsy, tsx, tsy):
        extra["inst_by_arch"] = inst_by_arch
    info = C.kernel_info(KERNEL, (gx, gy, 1), (bsx, bsy, 1), L, tally, params=params, notes=notes,
                         extra=extra)  # fmt: skip
    if arch in by_arch:
        info = replace(info, regs_per_thread=by_arch[arch])
    return cols, info
