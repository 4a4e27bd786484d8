"""conv2d_kt (Kernel Tuner's 2D convolution, benchmarks/kernels/conv2d_kt.cu): rows and totals worked
out by hand from the source, and the instruction formula checked against nvcc's SASS of other shapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import traces
from traces import generators as G
from traces.errors import InputError
from traces.generators import conv
from conftest import benchmark_script

ROOT = Path(__file__).resolve().parent.parent
CU = ROOT / "benchmarks" / "kernels" / "conv2d_kt.cu"


def rows_of(cols, info, name):
    return np.flatnonzero(cols["obj"] == info.object(name).id)


def elements(cols, info, name, row):
    """Element indices (row-major) the active lanes of one row touch."""
    o = info.object(name)
    m = int(cols["mask"][row])
    lanes = [k for k in range(32) if (m >> k) & 1]
    return (cols["addr"][row][lanes].astype(np.int64) - o.base) // 4, lanes


def test_default_shape_rows_and_totals():
    # 256 x 256 outputs, blocks of 32 x 4 threads, 2 x 2 outputs each: 4 x 32 blocks of 4 warps.
    cols, info = G.generate("conv2d_kt")
    warps = 4 * 32 * 4
    assert info.grid == (4, 32, 1) and info.block == (32, 4, 1)
    # 2 tile columns of 15 columns each (32 apart: disjoint), 4 + 15 = 19 input rows: 570 loads; 4 stores.
    assert rows_of(cols, info, "input").size == warps * 570
    assert rows_of(cols, info, "output").size == warps * 4
    assert rows_of(cols, info, "filter").size == 0  # FFMA constant operands: no load instruction
    i = info.instructions
    assert (i.int, i.fp32, i.ldst, i.branch) == (17 * warps, (225 * 4 + 1) * warps, 574 * warps, 3 * warps)
    assert info.object("input").shape == (256 + 14, 256 + 14)
    assert info.object("output").shape == (256, 256) and info.object("output").written
    assert info.object("filter").space == "constant" and info.object("filter").shape == (15, 15)


def test_load_order_is_first_use_and_lanes_coalesced():
    cols, info = G.generate("conv2d_kt", [128, 64])
    iw = 128 + 14
    # Warp 1 of block (1, 2): ty = 1, tx = lane; first output (y0, x0) = (2*8 + 1, 64 + lane).
    nx = 128 // 64
    first = np.flatnonzero((cols["cta"] == 2 * nx + 1) & (cols["warp"] == 1))
    # i = 0, j = 0 over (a, b): offsets (0, 0), (0, 32), (4, 0), (4, 32); then j = 1: (0, 1), (0, 33), ...
    expect = [(0, 0), (0, 32), (4, 0), (4, 32), (0, 1), (0, 33), (4, 1), (4, 33)]
    for row, (dr, dc) in zip(first[:8], expect):
        e, lanes = elements(cols, info, "input", row)
        assert lanes == list(range(32))
        assert e.tolist() == [(17 + dr) * iw + 64 + lane + dc for lane in range(32)]
    # i = 4 reaches row offsets 4 (a = 0) and 8 (a = 1): the a = 0 ones were loaded at i = 0, a = 1.
    r, c = conv.load_offsets(32, 4, 2, 2)
    assert (r.max(), c.max(), r.size) == (4 + 14, 32 + 14, 570)
    # stores (a, b) = (0, 0), (0, 1), (1, 0), (1, 1), output pitch 128
    st = first[570:]
    assert cols["op"][st].tolist() == [1, 1, 1, 1]
    starts = [elements(cols, info, "output", row)[0][0] for row in st]
    assert starts == [17 * 128 + 64, 17 * 128 + 96, 21 * 128 + 64, 21 * 128 + 96]
    # seq increases, pc = 16 * seq (straight-line code), distinct pcs for distinct instructions
    s = cols["seq"][first]
    assert np.all(np.diff(s) > 0) and np.array_equal(cols["pc"][first], 16 * s)


def test_partial_tiles_and_idle_warps():
    # 100 x 20 outputs: blocks cover 64 x 8; 2 x 3 blocks. Block x 1 (bx0 = 64): second outputs
    # x = 96 + tx are inside for tx < 4 only. Block y 2 (by0 = 16): y0 = 16..19 inside, the a = 1
    # outputs (y = 20..23) all outside: those stores have no row.
    cols, info = G.generate("conv2d_kt", [100, 20])
    out = rows_of(cols, info, "output")
    for row in out:
        cta = int(cols["cta"][row])
        e, lanes = elements(cols, info, "output", row)
        assert np.all(e // 100 < 20) and np.all(e % 100 < 100)
        if cta % 2 == 1 and e.min() % 100 >= 96:
            assert lanes == [0, 1, 2, 3]
    full_rows = 2 * 2 * 4 * 4  # blocks y 0, 1: 4 stores a warp
    last_row = 2 * 4 * 2  # block y 2: only the a = 0 stores
    assert out.size == full_rows + last_row
    # loads unguarded: lanes of block (1, 2) read up to input row 19 + 4 + 14 = 37 and column
    # 95 + 32 + 14 = 141 of a row of 114: the input object covers 39 rows.
    assert info.object("input").shape == (39, 114)
    # 64 x 2 outputs: one block row; warps ty = 2, 3 exit at once (head + EXIT, no rows).
    cols, info = G.generate("conv2d_kt", [64, 2])
    assert set(cols["warp"].tolist()) == {0, 1}
    per_warp = conv.warp_counts(32, 4, 2, 2)
    assert info.instructions.int == 2 * per_warp["int"] + 2 * 9
    assert info.instructions.branch == 2 * per_warp["branch"] + 2 * 1


def test_tile_one_and_partial_warps():
    cols, info = G.generate("conv2d_kt", [64, 64], [16, 16, 1, 1])
    assert rows_of(cols, info, "input").size == 16 * 8 * 225
    assert rows_of(cols, info, "output").size == 16 * 8
    i = info.instructions
    assert (i.int, i.fp32, i.ldst, i.branch) == (14 * 128, 226 * 128, 226 * 128, 2 * 128)
    # 48 x 1 threads: warp 1 holds threads 32..47 (16 lanes); 3 outputs each, 144 apart.
    cols, info = G.generate("conv2d_kt", [144, 1], [48, 1, 3, 1])
    w1 = np.flatnonzero(cols["warp"] == 1)
    assert set(cols["mask"][w1].tolist()) == {0xFFFF}
    assert rows_of(cols, info, "input").size == 2 * 3 * 225 and rows_of(cols, info, "output").size == 2 * 3


def test_formula_counts_and_bad_block():
    # U = tile_size_x * 15 * rows; rows = (tile_size_y - 1) * block_size_y + 15 when block_size_y < 15
    for shape, u in (
        ((32, 4, 2, 2), 570),
        ((16, 8, 4, 4), 4 * 15 * 39),
        ((16, 16, 3, 2), 3 * 15 * 30),
        ((64, 1, 4, 4), 4 * 15 * 18),
    ):
        assert conv.load_offsets(*shape)[0].size == u
    assert conv.warp_counts(16, 16, 1, 1) == {
        "int": 14,
        "fp32": 226,
        "fp64": 0,
        "sfu": 0,
        "ldst": 226,
        "sync": 0,
        "branch": 2,
    }
    with pytest.raises(InputError):
        G.generate("conv2d_kt", [64, 64], [64, 32, 1, 1])


def test_registers_of_the_shapes_nvcc_gives_255():
    _, info = G.generate("conv2d_kt", [64, 64], [32, 4, 4, 4])
    assert info.regs_per_thread == 255 and "spills" in info.extra["notes"]
    _, info = G.generate("conv2d_kt", [64, 64], [64, 1, 4, 4])
    assert info.regs_per_thread == 255 and "spills" not in info.extra["notes"]
    assert G.generate("conv2d_kt", [64, 64])[1].regs_per_thread == 32


def test_large_trace_is_valid(tmp_path):
    cols, info = G.generate("conv2d_kt", [192, 40], [48, 2, 3, 3])
    path = tmp_path / "c.parquet"
    traces.write(path, cols, info)
    assert len(traces.read(path)) == len(cols["cta"])


# --- nvcc's SASS of other shapes --------------------------------------------------------------


def _recipes_script():
    return benchmark_script("sass_recipes")


@pytest.fixture(scope="module")
def sass(tmp_path_factory):
    """Compile conv2d_kt.cu with macros: returns (class counts, opcode counts) of the kernel."""
    mod = _recipes_script()
    nvcc, nvdisasm = mod.find_tool("nvcc"), mod.find_tool("nvdisasm")
    if not nvcc or not nvdisasm:
        pytest.skip("nvcc and nvdisasm are not both installed (CUDA toolkit; pip install nvidia-cuda-nvdisasm)")
    tmp = tmp_path_factory.mktemp("conv2d_kt")

    def run(bsx, bsy, tsx, tsy, **extra):
        names = ("block_size_x", "block_size_y", "tile_size_x", "tile_size_y")
        defines = tuple(f"{n}={v}" for n, v in zip(names, (bsx, bsy, tsx, tsy))) + tuple(
            f"{k}={v}" for k, v in extra.items()
        )
        text = mod.compile_sass(CU, tmp / "k.cubin", "sm_80", nvcc, nvdisasm, defines)
        blocks = mod.parse(text)["conv2d_kt"]
        ops = {}
        for b in blocks:
            for _pc, _pred, op, _operands in b["insns"]:
                ops[op] = ops.get(op, 0) + 1
        return mod.class_counts(blocks), ops

    return run


def _count(ops, prefix):
    return sum(v for k, v in ops.items() if k.split(".")[0] == prefix)


# Shapes other than the recipe's (32, 4, 2, 2): tile 1 x 1, 2 x 2 (block_size_y 8), 3 x 1 with
# block_size_x 48, 4 x 4, 3 x 2 with block_size_x 80; none spills registers.
SHAPES = [(16, 16, 1, 1), (16, 8, 2, 2), (48, 1, 3, 1), (64, 1, 4, 4), (80, 2, 3, 2)]


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{s[0]}x{s[1]}_t{s[2]}x{s[3]}" for s in SHAPES])
def test_formula_matches_sass(shape, sass):
    counts, ops = sass(*shape)
    assert _count(ops, "LDL") == _count(ops, "STL") == 0
    assert _count(ops, "LDG") == conv.load_offsets(*shape)[0].size
    assert _count(ops, "STG") == shape[2] * shape[3]
    assert _count(ops, "FFMA") == 225 * shape[2] * shape[3]
    formula = conv.warp_counts(*shape)
    for c, n in counts.items():
        assert abs(formula[c] - n) <= 0.02 * n, (c, formula[c], n)


def test_variants_read_only_and_shared(sass):
    """The other placements of the image, compiled for comparison (no generator)."""
    counts, ops = sass(32, 4, 4, 4)
    # a shape nvcc spills (HIGH_REGS): the loads stay U, local-memory traffic appears
    assert _count(ops, "LDG") == conv.load_offsets(32, 4, 4, 4)[0].size and _count(ops, "STL") > 0
    _, ops = sass(32, 4, 2, 2, read_only=1)
    # __ldg: the same 570 loads through the read-only path; nvcc 13 then computes each
    # address with integer instructions instead of an immediate offset.
    assert ops.get("LDG.E.CONSTANT", 0) == 570 and _count(ops, "LDG") == 570
    assert _count(ops, "FFMA") == 900 and _count(ops, "STG") == 4
    _, ops = sass(32, 4, 2, 2, use_shmem=1)
    # staged tile of (4*2 + 14) x (32*2 + 14) floats; the 570 distinct reads now come from shared
    assert _count(ops, "LDS") == 570 and _count(ops, "BAR") == 1 and _count(ops, "STG") == 4
