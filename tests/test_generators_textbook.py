"""Textbook generators (benchmarks/kernels/{conv1d,conv2d_channels,matvec,histogram,matmul_tiled}.cu):
rows and totals worked out by hand from each kernel's code and its SASS path."""

from __future__ import annotations

import numpy as np
import pytest

import traces
from traces import generators as G
from traces.errors import InputError

LINE = 128


def rows_of(cols, info, name):
    return np.flatnonzero(cols["obj"] == info.object(name).id)


def elems(cols, info, name, row):
    m = int(cols["mask"][row])
    lanes = [k for k in range(32) if (m >> k) & 1]
    return ((cols["addr"][row][lanes].astype(np.int64) - info.object(name).base) // 4).tolist()


def test_conv1d_rows_and_exact_path():
    # n = 100, mask 7, blocks of 64: 4 warps (the last has lanes 96..99 only).
    cols, info = G.generate("conv1d", [100, 7], [64])
    assert rows_of(cols, info, "in").size == 4 * 7 and rows_of(cols, info, "mask").size == 4 * 7
    w3 = np.flatnonzero((cols["cta"] == 1) & (cols["warp"] == 1))
    assert elems(cols, info, "in", w3[2]) == [97, 98, 99, 100]  # iteration j = 1: in[i + 1], i = 96..99
    assert elems(cols, info, "mask", w3[3]) == [1, 1, 1, 1]  # mask[1], broadcast
    assert elems(cols, info, "out", w3[-1]) == [96, 97, 98, 99]
    # SASS path for 7 iterations: head 5, entry up to its 5th branch 24, the 8x gate 2, gate 2,
    # one 4x body 23, remainder set-up 8, three single iterations 11 each, store 3, EXIT 1.
    assert info.instructions.executed == 4 * (5 + 24 + 2 + 2 + 23 + 8 + 3 * 11 + 3 + 1)
    assert info.instructions.ldst == 4 * (7 * 2 + 1)
    # 3 iterations: head 5, entry up to its 3rd branch 12, set-up 8, 3 x 11, store 3, EXIT 1.
    cols, info = G.generate("conv1d", [64, 3], [64])
    assert info.instructions.executed == 2 * (5 + 12 + 8 + 33 + 3 + 1)


def test_conv1d_long_mask_uses_the_16x_body():
    # 37 iterations: 36 in the unrolled part: 16x twice (36 - 12 > 16), then 4 left: no 8x, one 4x; 1 single.
    cols, info = G.generate("conv1d", [32, 37], [32])
    assert info.instructions.executed == 5 + 25 + 2 * 56 + 2 + 2 + 23 + 8 + 11 + 3 + 1
    s = cols["seq"]
    assert np.all(np.diff(s) > 0)


def test_matvec_uncoalesced_rows_broadcast_x():
    cols, info = G.generate("matvec", [64, 48], [64])
    A = rows_of(cols, info, "A")
    assert A.size == 2 * 48
    # lanes read rows 0..31 (warp 0), one line each: 32 lines per load
    assert {len({a // LINE for a in cols["addr"][r].tolist()}) for r in A} == {32}
    assert elems(cols, info, "A", A[1])[:2] == [1, 49]  # j = 1: A[i*48 + 1]
    x = rows_of(cols, info, "x")
    assert all(len(set(elems(cols, info, "x", r))) == 1 for r in x)
    assert info.object("A").shape == (64, 48)


def test_conv2d_channels_rows_and_shapes():
    # 32 x 16 outputs, blocks 16 x 16: 2 blocks of 8 warps; 2 channels of 3 x 3 taps.
    cols, info = G.generate("conv2d_channels", [32, 16, 2, 3], [16, 16])
    iw, ih = 34, 18
    assert info.object("in").shape == (2 * ih, iw) and info.object("mask").shape == (2 * 3, 3)
    assert rows_of(cols, info, "in").size == 16 * 2 * 9 and rows_of(cols, info, "mask").size == 16 * 2 * 9
    w = np.flatnonzero((cols["cta"] == 1) & (cols["warp"] == 3))  # block x 1, rows y = 6, 7
    # channel 1, tap (i, j) = (2, 1): row 2*(9*2) + ... ; rows in source order (in, mask) per tap
    r_in, r_mask = w[2 * (9 + 2 * 3 + 1)], w[2 * (9 + 2 * 3 + 1) + 1]
    assert elems(cols, info, "in", r_in)[:17] == [(ih + 6 + 2) * iw + 16 + k + 1 for k in range(16)] + [
        (ih + 7 + 2) * iw + 16 + 1
    ]
    assert set(elems(cols, info, "mask", r_mask)) == {9 + 2 * 3 + 1}
    with pytest.raises(InputError):
        G.generate("conv2d_channels", [32, 16, 2, 4])


def test_histogram_reductions_on_bins():
    cols, info = G.generate("histogram", [1000, 16], [128])
    h = rows_of(cols, info, "bins")
    d = rows_of(cols, info, "data")
    assert h.size == d.size == -(-1000 // 32)
    assert set(cols["op"][h].tolist()) == {3} and set(cols["op"][d].tolist()) == {0}
    counts = np.zeros(16, np.int64)
    for r in h:
        np.add.at(counts, elems(cols, info, "bins", r), 1)
    assert counts.sum() == 1000 and counts.min() > 0
    assert cols["mask"][h[-1]] == (1 << (1000 - 31 * 32)) - 1  # 8 elements in the last warp
    again, _ = G.generate("histogram", [1000, 16], [128])
    assert np.array_equal(again["addr"], cols["addr"])


@pytest.mark.parametrize("tile", [8, 16, 32])
def test_matmul_tiled_phases(tile):
    W = 64
    cols, info = G.generate("matmul_tiled", [W], [tile])
    warps = (W // tile) ** 2 * tile * tile // 32
    phases = W // tile
    for name, per in (("M", 1), ("N", 1), ("Mds", 1 + tile // 4), ("Nds", 1 + tile)):
        assert rows_of(cols, info, name).size == warps * phases * per, name
    assert rows_of(cols, info, "P").size == warps
    assert info.instructions.sync == warps * phases * 2
    # warp 0 of block 0, phase 0: M[ty][tx] for lanes (tx, ty) = (l % tile, l // tile)
    first = np.flatnonzero((cols["cta"] == 0) & (cols["warp"] == 0))[0]
    assert elems(cols, info, "M", first) == [(l // tile) * W + l % tile for l in range(32)]
    assert info.object("Mds").space == "shared" and info.smem_per_block == 2 * 4 * tile * tile
    with pytest.raises(InputError):
        G.generate("matmul_tiled", [60], [tile])


def test_traces_are_valid(tmp_path):
    for name, size, block in (("conv1d", [100, 5], [64]), ("conv2d_channels", [20, 10, 2, 5], [16, 8]),
                              ("matvec", [50, 20], [32]), ("histogram", [777, 64], [96]), ("matmul_tiled", [32], [8])):  # fmt: skip
        cols, info = G.generate(name, size, block)
        traces.write(tmp_path / f"{name}.parquet", cols, info)
        assert len(traces.read(tmp_path / f"{name}.parquet")) == len(cols["cta"])
