"""SHOC / Rodinia generators: properties worked out by hand from each kernel's code (benchmarks/kernels/*.cu).

Determinism, read-back and `placement info` for every registered kernel are in test_generators.py
(its parametrized test covers these kernels too); the generator API is used here throughout."""

from __future__ import annotations

import numpy as np
import pytest

import traces
from traces import generators as G
from traces.generators import qtc as qtc_mod
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
    assert np.array_equal(np.sort(elems(cols, info, "foundKey")), np.arange(8)) and set(cols["width"][k].tolist()) == {
        1
    }
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


# ---------------------------------------------------------------------------------------------
# qtc (benchmarks/kernels/qtc_full.cu: SHOC QTC_device, full storage)


def _qtc_reference_cluster(pts, ind, deg, seed, threshold):
    """QT growth by the definition (independent of the generator's walk): repeatedly add the
    neighbour of ``seed`` whose largest distance to the cluster is smallest (ties: smaller id) while
    that distance is within the threshold. Distances in float32 as SHOC computes them."""
    p = pts.astype(np.float32)
    thr = np.float32(threshold)

    def dist(a, b):
        d2 = (p[a, 0] - p[b, 0]) * (p[a, 0] - p[b, 0]) + (p[a, 1] - p[b, 1]) * (p[a, 1] - p[b, 1])
        return np.float32(np.sqrt(np.float64(d2))) if d2 < thr * thr else np.float32(np.finfo(np.float32).max)

    cluster = [seed]
    cands = [int(c) for c in ind[seed, : deg[seed]]]
    while True:
        best = None
        for c in cands:
            if c in cluster:
                continue
            d = max(dist(c, m) for m in cluster)
            if best is None or d < best[0] or (d == best[0] and c < best[1]):
                best = (d, c)
        if best is None or best[0] > thr:
            return cluster
        cluster.append(best[1])


def _qtc_block_rows(cols, cta, warp=None):
    sel = cols["cta"] == cta
    if warp is not None:
        sel &= cols["warp"] == warp
    return np.flatnonzero(sel)


@pytest.fixture(scope="module")
def qtc_small():
    n = 512
    cols, info = G.generate("qtc", [n, 1])
    return n, cols, info


def test_qtc_objects_and_2d_distance_matrix(qtc_small):
    n, cols, info = qtc_small
    dm = info.object("distance_matrix_txt")
    assert dm.space == "global" and dm.shape == (n, n) and dm.size == 4 * n * n
    assert info.grid == (256, 1, 1) and info.block == (64, 1, 1)  # SHOC: 16 SMs x 16 blocks of 64 threads
    assert info.object("dist_array").space == "shared" and info.object("index_array").space == "shared"
    assert info.object("Ai_mask").shape == (256, n) and info.object("Ai_mask").elem_bytes == 1
    assert info.instructions.sync > 0 and info.instructions.ldst >= 0


def test_qtc_distance_rows_one_matrix_row_per_lane_same_column(qtc_small):
    n, cols, info = qtc_small
    dm = info.object("distance_matrix_txt")
    rows = rows_of(cols, info, "distance_matrix_txt")
    assert rows.size > 0
    for r in rows[:: max(1, rows.size // 400)]:
        e = elems(cols, info, "distance_matrix_txt", np.array([r]))
        row, col = e // n, e % n
        assert len(set(col.tolist())) == 1  # column `latest`, the point added last
        assert len(set(row.tolist())) == e.size  # each lane its own candidate row
        # rows are n floats apart: one 128-byte line per active lane (uncoalesced)
        assert len(set((cols["addr"][r][active(cols, r)] // 128).tolist())) == e.size
        assert not np.any(row == col)  # a point is never its own candidate
    assert set(cols["width"][rows].tolist()) == {4} and set(cols["op"][rows].tolist()) == {0}
    assert dm.written is False


def test_qtc_first_round_reads_the_seed_neighbours():
    n = 512
    cols, info = G.generate("qtc", [n, 1])
    pts, ind, deg = qtc_mod.neighbourhoods(n, 1.0)
    checked = 0
    for b in range(256):
        if deg[b] == 0:
            continue
        # Block b's first seed is point b. Its slot-0 row of warp 0: lanes t < degree read
        # Ai_mask[c], clustered[c], distance_matrix[c][b] for c = indr_mtrx[b][t].
        w0 = _qtc_block_rows(cols, b, 0)
        dmr = w0[cols["obj"][w0] == info.object("distance_matrix_txt").id][0]
        e = elems(cols, info, "distance_matrix_txt", np.array([dmr]))
        k = min(32, int(deg[b]))
        assert int(cols["mask"][dmr]) == (1 << k) - 1
        assert np.array_equal(e // n, ind[b, :k]) and set((e % n).tolist()) == {b}
        # the prefetch of slot 0 read indr_mtrx[b][0..k) just before
        pre = w0[cols["obj"][w0] == info.object("indr_mtrx").id][0]
        assert np.array_equal(elems(cols, info, "indr_mtrx", np.array([pre])), b * ind.shape[1] + np.arange(k))
        checked += 1
        if checked == 20:
            break
    assert checked == 20


def test_qtc_first_cluster_matches_the_qt_definition():
    n = 512
    cols, info = G.generate("qtc", [n, 1])
    pts, ind, deg = qtc_mod.neighbourhoods(n, 1.0)
    am = info.object("Ai_mask")
    for b in (0, 3, 17, 100):
        w0 = _qtc_block_rows(cols, b, 0)
        st = w0[(cols["obj"][w0] == am.id) & (cols["op"][w0] == 1) & (cols["mask"][w0] == 1)]
        marked = (cols["addr"][st, 0] - np.uint64(am.base + b * n)).astype(np.int64)
        # the first seed b marks itself, then every point the reduction picks, until the next seed's clear
        clear = w0[(cols["obj"][w0] == am.id) & (cols["op"][w0] == 1) & (cols["mask"][w0] != 1)]
        first = marked[st < clear[clear > st[0]][0]] if np.any(clear > st[0]) else marked
        assert first[0] == b
        assert first.tolist() == _qtc_reference_cluster(pts, ind, deg, b, 1.0)


def test_qtc_reduction_and_clearing_counts(qtc_small):
    n, cols, info = qtc_small
    p = info.extra["params"]
    rounds, grown = p["rounds"], p["seeds_grown"]
    ia, da = info.object("index_array"), info.object("dist_array")
    full = cols["mask"] == 0xFFFFFFFF
    # per round: every thread stores (dist, index), thread 0 reads dist_array[1..63], all threads read index[0]
    lds0 = (cols["obj"] == ia.id) & (cols["op"] == 0) & full
    assert np.count_nonzero(lds0) == 2 * rounds
    scan = (cols["obj"] == da.id) & (cols["op"] == 0)
    assert np.count_nonzero(scan) == 63 * rounds and set(cols["mask"][scan].tolist()) == {1}
    assert np.all(cols["warp"][scan] == 0)
    assert np.count_nonzero((cols["obj"] == da.id) & (cols["op"] == 1)) == 2 * rounds
    # per grown seed and warp: ceil(n / 64) byte stores clearing the block's Ai_mask row
    am = info.object("Ai_mask")
    clr = np.flatnonzero((cols["obj"] == am.id) & (cols["op"] == 1) & (cols["mask"] != 1))
    assert clr.size == grown * 2 * (-(-n // 64))
    b0 = clr[cols["cta"][clr] == 0]
    e = elems(cols, info, "Ai_mask", b0)
    times = np.bincount(e, minlength=n)
    assert times.min() == times.max() > 0  # each byte of block 0's row once per grown seed
    # two cardinality stores per block by thread 0
    cc = rows_of(cols, info, "cluster_cardinalities")
    assert cc.size == 2 * 256 and set(cols["mask"][cc].tolist()) == {1}
    # the skip test reads the seed id and its degree, broadcast, for every seed of every block (both warps)
    ug = rows_of(cols, info, "ungrpd_pnts_indr")
    assert ug.size == 2 * n and all(len(set(cols["addr"][r].tolist())) == 1 for r in ug[:64])
    assert np.array_equal(np.sort(elems(cols, info, "ungrpd_pnts_indr")), np.repeat(np.arange(n), 64))


def test_qtc_lane_masks_nest_and_inactive_lanes_zero(qtc_small):
    n, cols, info = qtc_small
    inactive = ((cols["mask"][:, None] >> np.arange(32, dtype=np.uint32)) & 1) == 0
    assert np.all(cols["addr"][inactive] == 0)
    # within a slot: the lanes reading the distance are a subset of those reading clustered_pnts_mask,
    # themselves a subset of those reading Ai_mask (rows in that order, each warp's rows in seq order)
    ids = {o.name: o.id for o in info.objects}
    obj = cols["obj"]
    i = np.flatnonzero((obj[:-2] == ids["Ai_mask"]) & (obj[1:-1] == ids["clustered_pnts_mask"]) &
                       (obj[2:] == ids["distance_matrix_txt"]))  # fmt: skip
    assert i.size > 0
    m0, m1, m2 = cols["mask"][i], cols["mask"][i + 1], cols["mask"][i + 2]
    assert np.all((m1 & ~m0) == 0) and np.all((m2 & ~m1) == 0)
    key = cols["cta"].astype(np.int64) * 2 + cols["warp"]
    same = key[1:] == key[:-1]
    assert np.all(np.diff(cols["seq"])[same] > 0)
