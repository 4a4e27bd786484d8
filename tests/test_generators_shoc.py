"""SHOC / Rodinia generators: properties worked out by hand from each kernel's code (benchmarks/kernels/*.cu).

Determinism, read-back and `placement info` for every registered kernel are in test_generators.py
(its parametrized test covers these kernels too); the generator API is used here throughout."""

from __future__ import annotations

import numpy as np
import pytest

import traces
from traces import generators as G
from traces.generators import shoc
from traces.errors import InputError

SHARED = traces.SPACE_CODES["shared"]
TEX1D = traces.SPACE_CODES["texture1d"]
CONST = traces.SPACE_CODES["constant"]


def rows_of(cols, info, name):
    return np.flatnonzero(cols["obj"] == info.object(name).id)


def active(cols, r):
    m = int(cols["mask"][r])
    return np.array([(m >> k) & 1 for k in range(32)], bool)


def elems(cols, info, name, rows=None):
    """Element indices touched by the active lanes of ``name``'s rows, in row order."""
    o = info.object(name)
    rows = rows_of(cols, info, name) if rows is None else rows
    act = ((cols["mask"][rows, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)
    a = cols["addr"][rows][act]
    return ((a - np.uint64(o.base)) // np.uint64(o.elem_bytes)).astype(np.int64)


def test_new_kernels_registered_with_sample_placements():
    for name in ("scan", "stencil2d", "spmv", "md", "bfs", "sort", "fft", "neuralnet", "cfd", "md5hash", "s3d"):
        assert name in G.names()
    spaces = {n: {o.name: o.space for o in G.generate(n)[1].objects} for n in ("spmv", "md", "sort", "fft", "cfd")}
    assert spaces["spmv"]["vec"] == "texture1d" and spaces["spmv"]["rowDelimiters"] == "global"
    assert spaces["md"]["d_position"] == "texture1d" and spaces["md"]["neighList"] == "global"
    assert spaces["sort"]["sBlockOffsets"] == "shared"
    assert spaces["fft"]["smem"] == "shared"
    assert spaces["cfd"]["variables"] == "global" and spaces["cfd"]["ff_variable"] == "constant"


def test_2d_shapes_where_the_paper_moves_to_2t():
    for name, obj in (("scan", "g_idata"), ("neuralnet", "weights")):
        o = G.generate(name)[1].object(obj)
        assert o.shape is not None and o.shape[0] * o.shape[1] * o.elem_bytes == o.size


def test_spmv_val_covers_nnz_once_and_vec_gathers_cols():
    rows = 512
    cols, info = G.generate("spmv", [rows, 12])
    nnz = info.extra["params"]["nnz"]
    v = elems(cols, info, "val")
    assert np.array_equal(np.sort(v), np.arange(nnz))  # every nonzero exactly once
    c = elems(cols, info, "cols")
    assert np.array_equal(np.sort(c), np.arange(nnz))
    # vec is read (texture) at the column of each nonzero, in the same row / lane order as cols
    delim, colidx = shoc.csr_matrix(rows, 12)
    assert np.array_equal(elems(cols, info, "vec"), colidx[c])
    assert set(cols["space"][rows_of(cols, info, "vec")].tolist()) == {TEX1D}
    # one warp per row: rowDelimiters[row] and [row+1] read by all 32 lanes (broadcast)
    rd = rows_of(cols, info, "rowDelimiters")
    assert rd.size == 2 * rows and set(cols["mask"][rd].tolist()) == {0xFFFFFFFF}
    assert all(len(set(cols["addr"][r].tolist())) == 1 for r in rd[:64])
    out = rows_of(cols, info, "out")
    assert out.size == rows and set(cols["mask"][out].tolist()) == {1}
    # the partial-sum tree: 1 full store, then (LDS, LDS, STS) for 16, 8, 4, 2, 1 lanes, then lane 0's load
    ps = rows_of(cols, info, "partialSums")
    assert ps.size == rows * (1 + 3 * 5 + 1)
    assert set(cols["space"][ps].tolist()) == {SHARED}


def test_md_neighbor_list_rows_coalesced_and_positions_texture():
    atoms, nbrs = 512, 32
    cols, info = G.generate("md", [atoms, nbrs])
    warps = atoms // 32
    nl = rows_of(cols, info, "neighList")
    assert nl.size == warps * nbrs
    # neighbour j of the 32 atoms of a warp: one contiguous 128-byte row neighList[j*atoms + i .. +31]
    for r in nl[:100]:
        d = np.diff(cols["addr"][r].astype(np.int64))
        assert np.all(d == 4) and (int(cols["addr"][r][0]) - info.object("neighList").base) % 128 == 0
    pos = rows_of(cols, info, "d_position")
    assert pos.size == warps * (1 + nbrs)
    assert set(cols["space"][pos].tolist()) == {TEX1D} and set(cols["width"][pos].tolist()) == {16}
    # per warp: position[i], then (neighList, position[jidx]) per neighbour, then the force store
    w0 = np.flatnonzero((cols["cta"] == 0) & (cols["warp"] == 0))
    names = [info.objects[o].name for o in cols["obj"][w0]]
    assert names == ["d_position"] + ["neighList", "d_position"] * nbrs + ["d_force"]
    # the gathered neighbours are other atoms
    i = np.arange(32)
    j0 = elems(cols, info, "d_position", w0[2:3])
    assert not np.any(j0 == i)


def test_bfs_every_edge_of_the_frontier_read_once():
    n, deg = 1024, 6
    cols, info = G.generate("bfs", [n, deg])
    level = info.extra["params"]["level"]
    offs, nbrs = shoc.graph(n, deg)
    lev = shoc.bfs_levels(offs, nbrs)
    front = np.flatnonzero(lev == level)
    expect = np.concatenate([np.arange(offs[v], offs[v + 1]) for v in front])
    got = elems(cols, info, "edgeArrayAux")
    assert np.array_equal(np.sort(got), np.sort(expect))
    # every owned vertex's level is read once by the whole warp (broadcast), frontier vertices read
    # edgeArray[v] and [v+1]
    lv = rows_of(cols, info, "levels")
    full = lv[cols["op"][lv] == 0]
    bc = [r for r in full if cols["mask"][r] == 0xFFFFFFFF and len(set(cols["addr"][r].tolist())) == 1]
    assert len(bc) >= n
    assert rows_of(cols, info, "edgeArray").size == 2 * front.size
    # stores go exactly to the next level's vertices reached from the frontier
    st = rows_of(cols, info, "levels")
    st = st[cols["op"][st] == 1]
    assert set(elems(cols, info, "levels", st).tolist()) == set(np.flatnonzero(lev == level + 1).tolist())


def test_sort_scatter_is_a_permutation_and_offsets_in_shared():
    n = 4096
    cols, info = G.generate("sort", [n])
    for name in ("outKeys", "outValues"):
        assert np.array_equal(np.sort(elems(cols, info, name)), np.arange(n))
    sbo = rows_of(cols, info, "sBlockOffsets")
    assert set(cols["space"][sbo].tolist()) == {SHARED}
    blocks, wpb = n // 512, 8
    # 16 lanes of warp 0 store the 16 block offsets, then every warp reads two (one per key)
    stores = sbo[cols["op"][sbo] == 1]
    assert stores.size == blocks and set(cols["mask"][stores].tolist()) == {0xFFFF}
    assert (sbo.size - stores.size) == blocks * wpb * 2
    assert elems(cols, info, "sBlockOffsets").max() < 16
    # blockOffsets read by 16 lanes: blockOffsets[b*16 + t]
    bo = rows_of(cols, info, "blockOffsets")
    assert np.array_equal(np.sort(elems(cols, info, "blockOffsets", bo)), np.arange(16 * blocks))


def test_fft_shared_exchange_strides():
    cols, info = G.generate("fft", [4])
    sm = rows_of(cols, info, "smem")
    assert sm.size == 4 * 2 * 64  # per warp: 2 exchanges x (x, y) x (8 STS + 8 LDS)
    w0 = sm[(cols["cta"][sm] == 0) & (cols["warp"][sm] == 0)]
    st = w0[cols["op"][w0] == 1]
    ld = w0[cols["op"][w0] == 0]
    e_st = elems(cols, info, "smem", st).reshape(-1, 32)
    e_ld = elems(cols, info, "smem", ld).reshape(-1, 32)
    t = np.arange(32)
    hi, lo = t >> 3, t & 7
    # first exchange stores at hi*8+lo + 66 i, loads at lo*66+hi + 8 i; second: + 72 i, hi*72+lo + 8 i
    assert {tuple(r - (hi * 8 + lo)) for r in e_st[:16]} == {tuple(np.full(32, 66 * i)) for i in range(8)}
    assert {tuple(r - (lo * 66 + hi)) for r in e_ld[:16]} == {tuple(np.full(32, 8 * i)) for i in range(8)}
    assert {tuple(r - (hi * 8 + lo)) for r in e_st[16:]} == {tuple(np.full(32, 72 * i)) for i in range(8)}
    assert {tuple(r - (hi * 72 + lo)) for r in e_ld[16:]} == {tuple(np.full(32, 8 * i)) for i in range(8)}
    assert info.instructions.sync == 4 * 2 * 8
    # work: 8 loads and 8 stores per thread, stride 64 float2, each element of the 4 FFTs once each way
    w = rows_of(cols, info, "work")
    assert np.array_equal(np.sort(elems(cols, info, "work", w[cols["op"][w] == 0])), np.arange(4 * 512))
    assert np.array_equal(np.sort(elems(cols, info, "work", w[cols["op"][w] == 1])), np.arange(4 * 512))


def test_neuralnet_weight_rows_strided_activation_broadcast():
    neurons, inputs = 64, 100
    cols, info = G.generate("neuralnet", [neurons, inputs])
    w = rows_of(cols, info, "weights")
    assert w.size == (neurons // 32) * inputs
    assert all(np.all(np.diff(cols["addr"][r].astype(np.int64)) == 4 * inputs) for r in w[:50])
    a = rows_of(cols, info, "activations1")
    assert all(len(set(cols["addr"][r].tolist())) == 1 for r in a[:50])
    assert rows_of(cols, info, "zs").size == (neurons // 32) * (inputs + 1)


def test_s3d_species_major_loads_and_stores():
    cols, info = G.generate("s3d", [1024])
    y = rows_of(cols, info, "gpu_y")
    assert y.size == (1024 // 32) * 22 and set(cols["width"][y].tolist()) == {8}
    assert np.array_equal(np.sort(elems(cols, info, "gpu_y")), np.arange(22 * 1024))
    assert np.array_equal(np.sort(elems(cols, info, "gpu_c")), np.arange(22 * 1024))
    assert rows_of(cols, info, "gpu_p").size == 1024 // 32
    assert info.instructions.fp64 > 0


def test_cfd_neighbors_and_far_field_constant():
    n = 192 * 8
    cols, info = G.generate("cfd", [n])
    nb = shoc.cfd_mesh(n)
    interior = elems(cols, info, "variables")
    # own 5 variables of every element, plus 5 per interior neighbour
    assert interior.size == 5 * n + 5 * int((nb >= 0).sum())
    ff = rows_of(cols, info, "ff_variable")
    assert set(cols["space"][ff].tolist()) == {CONST}
    assert ff.size > 0 and all(len(set(cols["addr"][r][active(cols, r)].tolist())) == 1 for r in ff)
    assert np.array_equal(np.sort(elems(cols, info, "fluxes")), np.arange(5 * n))


def test_md5hash_one_lane_writes_the_key():
    cols, info = G.generate("md5hash", [4, 10, 8])
    assert len(cols["cta"]) == 9
    assert set(cols["op"].tolist()) == {1} and len(set(cols["mask"].tolist())) == 1
    k = rows_of(cols, info, "foundKey")
    assert np.array_equal(np.sort(elems(cols, info, "foundKey")), np.arange(8)) and set(cols["width"][k].tolist()) == {1}
    assert info.instructions.executed > 1000 * len(cols["cta"])  # a compute-bound kernel


def test_scan_reads_each_element_once_and_tree_in_shared():
    n, blocks = 1 << 14, 16
    cols, info = G.generate("scan", [n, blocks])
    assert np.array_equal(np.sort(elems(cols, info, "g_idata")), np.arange(n))
    out = rows_of(cols, info, "isums")
    assert out.size == blocks and set(cols["mask"][out].tolist()) == {1}
    sd = rows_of(cols, info, "sdata")
    assert set(cols["space"][sd].tolist()) == {SHARED} and elems(cols, info, "sdata").max() < 256


def test_stencil2d_halo_and_nine_point_reads():
    rows, ncols = 16, 256
    cols, info = G.generate("stencil2d", [rows, ncols], [8, 256])
    blocks = rows // 8
    new = rows_of(cols, info, "newData")
    assert new.size == blocks * 8 * 8  # 8 warps, 8 points each
    d = rows_of(cols, info, "data")
    # each column of strip + 2 rows, plus the two halo columns (one lane each)
    assert d.size == blocks * (8 * 10 + 2 * 10)
    sh = rows_of(cols, info, "sh")
    assert set(cols["space"][sh].tolist()) == {SHARED}
    assert (sh.size - (blocks * (8 * 10 + 2 * 10))) == blocks * 8 * 8 * 9


def test_bad_sizes():
    with pytest.raises(InputError):
        G.generate("neuralnet", [2048])
    with pytest.raises(InputError):
        G.generate("stencil2d", [10, 256])
    with pytest.raises(InputError):
        G.generate("bfs", [256, 4, 999])
