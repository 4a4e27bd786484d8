"""traces.staging: footprints, windows, overlapping writes and the staging rewrite, worked out by hand;
and properties every staged trace must have (hypothesis)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traces
from traces import staging as S
from traces.schema import GLOBAL, SHARED

BASE = 0x100000
COLS = 64  # the 2D object is 8 x 64 floats


def trace_of(rows, objects, ctas=2, threads=32, block=None):
    """rows: (cta, warp, seq, op, obj, element indices (32,), active mask)."""
    info = traces.KernelInfo(
        "k", (ctas, 1, 1), block or (threads, 1, 1), tuple(objects),
        traces.Instructions(executed=100, warps=ctas * -(-threads // 32)), regs_per_thread=16,
    )  # fmt: skip
    n = len(rows)
    addr = np.zeros((n, 32), np.uint64)
    for k, r in enumerate(rows):
        o = objects[r[4]]
        m = r[6]
        for lane in range(32):
            if (m >> lane) & 1:
                addr[k, lane] = o.base + 4 * int(r[5][lane])
    cols = {
        "cta": np.array([r[0] for r in rows], np.int32), "warp": np.array([r[1] for r in rows], np.int32),
        "seq": np.array([r[2] for r in rows], np.int64), "pc": np.arange(n, dtype=np.int32) * 16,
        "op": np.array([r[3] for r in rows], np.int8), "space": np.zeros(n, np.int8),
        "width": np.full(n, 4, np.int8), "mask": np.array([r[6] for r in rows], np.uint32), "addr": addr,
        "obj": np.array([r[4] for r in rows], np.int16),
    }  # fmt: skip
    t = traces.Trace(**cols, info=info)
    traces.validate(t)
    return t


def stencil(ctas=2):
    """Each block's single warp reads rows 0, 1, 2 of X (8 x 64 floats), columns 16 b .. 16 b + 31, at seq 0, 10, 20,
    then writes Y[32 b + lane] at seq 30."""
    X = traces.ObjectInfo(0, "X", "global", BASE, 8 * COLS * 4, 4, (8, COLS), False)
    Y = traces.ObjectInfo(1, "Y", "global", BASE + 0x10000, 64 * 4 * ctas, 4, None, True)
    lanes = np.arange(32)
    rows = []
    for b in range(ctas):
        for k in range(3):
            rows.append((b, 0, 10 * k, 0, 0, k * COLS + 16 * b + lanes, 0xFFFFFFFF))
        rows.append((b, 0, 30, 1, 1, 32 * b + lanes, 0xFFFFFFFF))
    return trace_of(rows, [X, Y], ctas)


def test_access_and_footprint_by_hand():
    t = stencil()
    order = S.program_order(t)
    rows = S.object_rows(t, order, 0)
    a = S.access(t, rows, 0)
    assert (a.ordinals, a.loads, a.stores, a.atomics, a.written) == (3, 6, 0, 0, False)
    fp = S.footprint(t, rows, a)
    # W = 1: rows 0-2 x 32 columns = 384 B; W = 2 (L = 2): rows 0-1 = 256 B; W = 4 (L = 1): one row, 128 B
    assert fp.windows == (1, 2, 4)
    assert fp.bytes == (384, 256, 128) and fp.pitch == (32, 32, 32)
    assert fp.at(3) == (128, 32) and fp.at(100) == (128, 32)


def test_divergent_loads_by_hand():
    # a load counts when its active lanes read more than one address: all lanes on one element (a broadcast) or
    # one active lane does not; inactive lanes do not count (lane 5 alone differs but is off); stores never count
    X = traces.ObjectInfo(0, "X", "global", BASE, 8 * COLS * 4, 4, (8, COLS), False)
    Y = traces.ObjectInfo(1, "Y", "global", BASE + 0x10000, 64 * 4, 4, None, True)
    lanes = np.arange(32)
    one = np.zeros(32, np.int64)
    odd = one.copy()
    odd[5] = 7
    rows = [
        (0, 0, 0, 0, 0, lanes, 0xFFFFFFFF),  # 32 addresses: divergent
        (0, 0, 1, 0, 0, one, 0xFFFFFFFF),  # a broadcast
        (0, 0, 2, 0, 0, odd, 0xFFFFFFDF),  # lane 5 (the only other address) inactive: a broadcast
        (0, 0, 3, 0, 0, odd, 0x00000030),  # lanes 4 and 5: two addresses
        (0, 0, 4, 0, 0, lanes, 0x00000001),  # one lane
        (0, 0, 5, 1, 1, lanes, 0xFFFFFFFF),  # a store
        (0, 0, 6, 0, 1, lanes // 2, 0xFFFFFFFF),  # Y read in pairs: divergent
    ]
    t = trace_of(rows, [X, Y], ctas=1)
    assert S.divergent_loads(t).tolist() == [2, 1]
    assert S.divergent_loads(t, np.array([1, 2, 4, 5], np.int64)).tolist() == [0, 0]
    order = S.program_order(t)
    assert S.access(t, S.object_rows(t, order, 0), 0).divergent_loads == 2
    assert S.access(t, S.object_rows(t, order, 1), 1).divergent_loads == 1


def test_write_overlap_names_two_blocks_and_an_element():
    t = stencil()
    order = S.program_order(t)
    assert S.write_overlap(t, S.object_rows(t, order, 1), 1) is None  # Y[32 b + lane]: disjoint
    # both blocks write Y[0..31]
    cols = t.columns()
    cols["addr"] = cols["addr"].copy()
    y1 = np.flatnonzero((cols["obj"] == 1) & (cols["cta"] == 1))[0]
    cols["addr"][y1] = BASE + 0x10000 + 4 * np.arange(32, dtype=np.uint64)
    t2 = traces.Trace(**cols, info=t.info)
    assert S.write_overlap(t2, S.object_rows(t2, order, 1), 1) == (0, 1, 0)


def staged_x(t, windows, pitch=32, length=None, int_per=3):
    a = S.access(t, S.object_rows(t, S.program_order(t), 0), 0)
    so = S.StagedObject(0, "global", length or -(-a.ordinals // windows), 0, pitch, True, "none", int_per, 0)
    return S.stage(t, np.zeros(len(t), np.int16), [so], windows, barrier=1, smem_per_block=384)


def test_one_window_by_hand():
    st_ = staged_x(stencil(), 1)
    t = st_.trace
    # per block: 3 x 32 = 96 tile elements, one warp of 32 threads: 3 iterations of (LDG, STS, 3 int), 1 barrier
    assert st_.inserted == {"loads": 6, "stores": 6, "int": 18, "barriers": 2, "writeback_loads": 0,
                            "writeback_stores": 0}  # fmt: skip
    assert len(t) == 8 + 12
    b0 = np.flatnonzero(t.cta == 0)
    # program order of block 0: LDG, STS (+3 int), x3, barrier, then X rows 0..2 (shifted by 3 x 5 + 1 = 16), Y
    assert t.seq[b0].tolist() == [0, 1, 5, 6, 10, 11, 16, 26, 36, 46]
    assert t.space[b0].tolist() == [GLOBAL, SHARED] * 3 + [SHARED] * 3 + [GLOBAL]
    assert t.op[b0].tolist() == [0, 1] * 3 + [0, 0, 0, 1]
    # the staging loads read row k of the tile, columns 0..31 (block 0); the stores fill the tile row-major
    lanes = np.arange(32, dtype=np.uint64)
    for k in range(3):
        assert (t.addr[b0[2 * k]] == BASE + 4 * (k * COLS + lanes)).all()
        assert (t.addr[b0[2 * k + 1]] == 4 * (32 * k + lanes)).all()
        # X row k now reads tile row k: offset (k * pitch + lane) * 4
        assert (t.addr[b0[6 + k]] == 4 * (32 * k + lanes)).all()
    # block 1 reads columns 16..47: its staging loads start at column 16, its tile at offset 0
    b1 = np.flatnonzero(t.cta == 1)
    assert (t.addr[b1[0]] == BASE + 4 * (16 + lanes)).all() and (t.addr[b1[6]] == 4 * lanes).all()


def test_windows_add_barriers_between_tiles():
    st_ = staged_x(stencil(), 2)  # L = 2: window 0 = rows 0-1 (64 elements), window 1 = row 2 (32)
    t = st_.trace
    b0 = np.flatnonzero(t.cta == 0)
    # stage w0 (2 iterations: 0,1 | 5,6), barrier (10) -> X0 @ 11, X1 @ 21; then barrier (31), stage w1 (32, 33),
    # barrier (37) -> X2 @ 38; Y @ 48
    assert t.seq[b0].tolist() == [0, 1, 5, 6, 11, 21, 32, 33, 38, 48]
    assert st_.inserted["barriers"] == 2 * 3 and st_.inserted["loads"] == 2 * 3
    # window 1's tile is row 2 alone: X row 2 reads tile row 0
    assert (t.addr[b0[8]] == 4 * np.arange(32, dtype=np.uint64)).all()


def test_written_object_is_stored_back_after_a_barrier():
    t = stencil()
    so = S.StagedObject(1, "global", 1, 512, 32, False, "store", 3, 4)
    st_ = S.stage(t, np.zeros(len(t), np.int16), [so], 1, barrier=1, smem_per_block=640)
    b0 = np.flatnonzero(st_.trace.cta == 0)
    tt = st_.trace
    # nothing to stage (Y is only written): no staging barrier; Y's store goes to shared memory at 512 + 4 lane;
    # then a barrier and the write-back: a shared load and a global store of the 32 elements
    assert tt.seq[b0].tolist() == [0, 10, 20, 30, 32, 33]
    assert tt.space[b0].tolist() == [GLOBAL, GLOBAL, GLOBAL, SHARED, SHARED, GLOBAL]
    assert tt.op[b0].tolist() == [0, 0, 0, 1, 0, 1]
    assert (tt.addr[b0[3]] == 512 + 4 * np.arange(32, dtype=np.uint64)).all()
    assert (tt.addr[b0[5]] == BASE + 0x10000 + 4 * np.arange(32, dtype=np.uint64)).all()
    assert st_.inserted == {"loads": 0, "stores": 0, "int": 8, "barriers": 2, "writeback_loads": 2,
                            "writeback_stores": 2}  # fmt: skip


def test_privatized_atomics_zero_then_reduce():
    """Two blocks add into the same 32 bins with atomics: each zeroes its tile, adds in shared memory, reduces back."""
    H = traces.ObjectInfo(0, "H", "global", BASE, 32 * 4, 4, None, True)
    lanes = np.arange(32)
    rows = [(b, 0, 0, 2, 0, lanes[::-1].copy(), 0xFFFFFFFF) for b in range(2)]
    t = trace_of(rows, [H])
    assert S.write_overlap(t, S.object_rows(t, S.program_order(t), 0), 0) == (0, 1, 31)
    so = S.StagedObject(0, "global", 1, 0, 32, False, "atomic", 2, 2)
    st_ = S.stage(t, np.zeros(len(t), np.int16), [so], 1, barrier=1, smem_per_block=128)
    tt = st_.trace
    b0 = np.flatnonzero(tt.cta == 0)
    # zero store (STS, 2 int), barrier, the atomic in shared memory, barrier, shared load + reduction to global
    assert tt.seq[b0].tolist() == [0, 4, 6, 7]
    assert tt.op[b0].tolist() == [1, 2, 0, 3] and tt.space[b0].tolist() == [SHARED, SHARED, SHARED, GLOBAL]
    assert (tt.addr[b0[1]] == 4 * lanes[::-1].astype(np.uint64)).all()


def test_copy_columns_by_hand():
    # a 2D block keeps its own threadIdx.x, whatever the tile's width; so does a 1D block a tile at least as wide
    assert S.copy_columns((16, 16, 1), 1, True) == 16 and S.copy_columns((32, 4, 2), 300, True) == 32
    assert S.copy_columns((256, 1, 1), 256, True) == 256 and S.copy_columns((128, 1, 1), 270, True) == 128
    # a narrower tile in a 1D block, and any 1D tile: the flattened loop
    assert [S.copy_columns((256, 1, 1), p, True) for p in (1, 20, 255)] == [0, 0, 0]
    assert S.copy_columns((16, 16, 1), 1, False) == 0 and S.copy_columns((256, 1, 1), 300, False) == 0


def test_column_tile_of_a_1d_block_is_copied_by_every_thread():
    # a block of 64 threads (2 warps); warp w reads X column 5 at rows 32 w .. 32 w + 31 (X is 64 x 8 floats):
    # the tile is 64 rows x 1 column, and the copy arranges the threads 1 x 64 (copy_columns): each warp loads
    # its 32 rows of the column in one instruction and stores them to shared rows 32 w .. (pitch 1). With the
    # block's own extent (64 x 1) thread 0 alone would copy the 64 elements, in 64 iterations.
    cols = 8
    X = traces.ObjectInfo(0, "X", "global", BASE, 64 * cols * 4, 4, (64, cols), False)
    lanes = np.arange(32)
    rows = [(0, w, 0, 0, 0, (32 * w + lanes) * cols + 5, 0xFFFFFFFF) for w in range(2)]
    t = trace_of(rows, [X], ctas=1, threads=64)
    so = S.StagedObject(0, "global", 1, 0, 1, True, "none", 2, 0)
    st_ = S.stage(t, np.zeros(len(t), np.int16), [so], 1, barrier=1, smem_per_block=256)
    s = st_.trace
    assert st_.inserted["loads"] == 2 and st_.inserted["stores"] == 2
    u = lanes.astype(np.uint64)
    for w in range(2):
        mine = np.flatnonzero(s.warp == w)
        load, store, access = mine  # LDG, STS, barrier, then the access reads shared memory
        assert s.mask[load] == 0xFFFFFFFF and s.mask[store] == 0xFFFFFFFF
        assert (s.addr[load] == BASE + 4 * ((32 * w + u) * cols + 5)).all()
        assert (s.addr[store] == 4 * (32 * w + u)).all() and (s.addr[access] == s.addr[store]).all()
        assert s.seq[mine].tolist() == [0, 1, 5]  # load, store + 2 int, barrier at 4, the access at 5


def test_narrow_tile_of_a_1d_block_is_copied_by_the_flattened_loop():
    # 96 threads (3 warps), a tile of 2 rows x 40 columns (narrower than the block): thread t copies element t of
    # the 80, at (t / 40, t % 40): warp 0 row 0 columns 0..31; warp 1 row 0 columns 32..39, then row 1 columns
    # 0..23; warp 2 row 1 columns 24..39 (lanes 0..15). The 2D loop would give tile row 0 to warps 0 and 1 (lanes
    # 0..7) and row 1 to them again, warp 2 nothing.
    cols = 40
    X = traces.ObjectInfo(0, "X", "global", BASE, 100 * cols * 4, 4, (100, cols), False)
    lanes = np.arange(32)
    rows = [(0, 0, 0, 0, 0, 3 * cols + lanes, 0xFFFFFFFF), (0, 1, 0, 0, 0, 4 * cols + 8 + lanes, 0xFFFFFFFF)]
    t = trace_of(rows, [X], ctas=1, block=(96, 1, 1))
    so = S.StagedObject(0, "global", 1, 0, cols, True, "none", 1, 0)
    s = S.stage(t, np.zeros(len(t), np.int16), [so], 1, barrier=1, smem_per_block=2 * cols * 4).trace
    loads = np.flatnonzero(s.space == GLOBAL)
    assert s.warp[loads].tolist() == [0, 1, 2] and s.mask[loads].tolist() == [0xFFFFFFFF, 0xFFFFFFFF, 0xFFFF]
    q = np.arange(96).reshape(3, 32)
    for w in range(3):
        n = 32 if w < 2 else 16
        r, c = q[w, :n] // cols, q[w, :n] % cols
        assert (s.addr[loads[w]][:n] == BASE + 4 * ((3 + r) * cols + c).astype(np.uint64)).all()
        assert (s.addr[loads[w] + 1][:n] == 4 * q[w, :n].astype(np.uint64)).all()  # shared: row-major, pitch 40


BLOCKS = st.sampled_from([(32, 1, 1), (64, 1, 1), (96, 1, 1), (128, 1, 1), (16, 4, 1), (8, 4, 2), (32, 3, 1)])


@st.composite
def tiles_of_blocks(draw):
    """A 2D object read by blocks of any shape, each warp a few rows of one column or a few columns of one row."""
    block = draw(BLOCKS)
    warps = -(-block[0] * block[1] * block[2] // 32)
    ctas = draw(st.integers(1, 2))
    ncols = draw(st.sampled_from([1, 3, 16, 40, 70]))
    nrows = 4096 // ncols
    X = traces.ObjectInfo(0, "X", "global", BASE, nrows * ncols * 4, 4, (nrows, ncols), False)
    rows = []
    for b in range(ctas):
        for w in range(warps):
            for k in range(draw(st.integers(0, 3))):
                r0, c0 = draw(st.integers(0, nrows - 33)), draw(st.integers(0, ncols - 1))
                n = draw(st.integers(1, 32))
                if draw(st.booleans()):  # down a column
                    idx = (r0 + np.minimum(np.arange(32), n - 1)) * ncols + c0
                else:  # along a row, as far as it goes
                    idx = r0 * ncols + np.minimum(c0 + np.arange(32), ncols - 1)
                rows.append((b, w, 10 * k, 0, 0, idx, (1 << n) - 1 if n < 32 else 0xFFFFFFFF))
    if not rows:
        rows.append((0, 0, 0, 0, 0, np.zeros(32, np.int64), 1))
    return trace_of(rows, [X], ctas, block=block), ncols


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiles_of_blocks())
def test_every_tile_element_is_copied_once_by_any_block(case):
    # one window: each block's staging loads cover the bounding box of its accesses to X, every element once,
    # whatever the block's shape and the copy's arrangement of its threads (copy_columns); each store puts the
    # lane's element at its row-major place in the tile
    t, ncols = case
    a = S.access(t, S.object_rows(t, S.program_order(t), 0), 0)
    fp = S.footprint(t, S.object_rows(t, S.program_order(t), 0), a, (1,))
    pitch = fp.pitch[0]
    so = S.StagedObject(0, "global", a.ordinals, 0, pitch, True, "none", 1, 0)
    s = S.stage(t, np.zeros(len(t), np.int16), [so], 1, barrier=1, smem_per_block=fp.bytes[0]).trace
    for b in range(t.info.ctas):
        mine = t.cta == b
        if not mine.any():
            continue
        used = t.addr[mine][(t.mask[mine][:, None] >> np.arange(32, dtype=np.uint32)) & 1 == 1]
        e = (used - BASE) // 4
        r, c = e // ncols, e % ncols
        box = {(int(i), int(j)) for i in range(r.min(), r.max() + 1) for j in range(c.min(), c.max() + 1)}
        loads = np.flatnonzero((s.cta == b) & (s.space == GLOBAL) & (s.pc >= int(t.pc.max()) + 16))
        copied, places = [], []
        for i in loads:
            act = ((int(s.mask[i]) >> np.arange(32)) & 1).astype(bool)
            ge = ((s.addr[i][act] - BASE) // 4).astype(np.int64)
            copied += [(int(x // ncols), int(x % ncols)) for x in ge]
            st_row = s.addr[i + 1][act].astype(np.int64) // 4  # the store that follows the load, same lanes
            assert s.space[i + 1] == SHARED and s.mask[i + 1] == s.mask[i]
            places += [(x // pitch, x % pitch) for x in st_row]
        assert len(copied) == len(set(copied)) and set(copied) == box
        r0, c0 = int(r.min()), int(c.min())
        assert places == [(i - r0, j - c0) for i, j in copied]


# ---------------------------------------------------------------------------------------------------------------------
# properties of any staged trace


@st.composite
def random_traces(draw):
    ctas = draw(st.integers(1, 3))
    warps = draw(st.integers(1, 2))
    cols2d = draw(st.sampled_from([0, 16, 48]))
    n_elem = 1024
    X = traces.ObjectInfo(0, "X", "global", BASE, n_elem * 4, 4, (n_elem // cols2d, cols2d) if cols2d else None, False)
    rows = []
    for b in range(ctas):
        for w in range(warps):
            k = draw(st.integers(0, 5))
            seq = 0
            for _ in range(k):
                seq += draw(st.integers(1, 5))
                start = draw(st.integers(0, n_elem - 64))
                stride = draw(st.sampled_from([1, 2, 16, 17, 48]))
                lane = np.arange(32)
                idx = draw(st.sampled_from([
                    start + stride * lane,
                    start + lane % 16 + (lane // 16) * stride,  # a 16 x 16 block's warp: two half-rows
                    start + (lane // 16) * stride,  # ... reading one element a half-warp (a broadcast)
                ]))  # fmt: skip
                idx = np.minimum(idx, n_elem - 1)
                mask = draw(st.sampled_from([0xFFFFFFFF, 0x0000FFFF, 0x80000001]))
                rows.append((b, w, seq, 0, 0, idx, mask))
    if not rows:
        rows.append((0, 0, 0, 0, 0, np.arange(32), 0xFFFFFFFF))
    return trace_of(rows, [X], ctas, threads=32 * warps), draw(st.integers(1, 4))


def x_plan(t, windows, source="global", shared_base=0, int_per=2.0):
    """(plan, footprint, access) of object 0 of ``t`` staged in ``windows`` windows from ``source``: its tile at
    ``shared_base``, loaded, never written, ``int_per`` non-memory instructions an element."""
    order = S.program_order(t)
    rows = S.object_rows(t, order, 0)
    a = S.access(t, rows, 0)
    fp = S.footprint(t, rows, a, (windows,))
    plan = S.StagedObject(0, source, -(-a.ordinals // windows), shared_base, fp.pitch[0], True, "none", int_per, 0)
    return plan, fp, a


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_traces())
def test_staged_traces_keep_every_access_in_order_inside_the_tile(case):
    t, windows = case
    so, fp, a = x_plan(t, windows, "readonly", 64, 2)
    tile = fp.bytes[0]
    st_ = S.stage(t, np.zeros(len(t), np.int16), [so], windows, barrier=1, smem_per_block=64 + tile)
    s = st_.trace
    ins = st_.inserted
    assert len(s) == len(t) + ins["loads"] + ins["stores"]
    # program order kept: seq strictly increasing per warp, the original rows in their order
    o2 = S.program_order(s)
    g = s.cta[o2].astype(np.int64) * 8 + s.warp[o2]
    same = g[1:] == g[:-1]
    assert (np.diff(s.seq[o2])[same] > 0).all()
    orig = s.pc != s.pc.max()  # inserted rows have pcs above every original one
    orig &= s.pc < (int(t.pc.max()) + 16)
    assert orig.sum() == len(t)
    # every staged access and every shared store lands inside [64, 64 + tile)
    sh = s.space == SHARED
    for i in np.flatnonzero(sh):
        m = int(s.mask[i])
        act = [(m >> k) & 1 for k in range(32)]
        a_ = s.addr[i][np.array(act, bool)]
        assert (a_ >= 64).all() and (a_ + 4 <= 64 + tile).all()
    # every staging load reads the object from the read-only path, inside the object
    ld = s.space == traces.SPACE_CODES["readonly"]
    assert ld.sum() == ins["loads"]
    # instructions added: each staging row of a warp costs its load, its store and 2 int; barriers
    assert ins["int"] == 2 * ins["stores"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_traces())
def test_staged_accesses_read_their_element_of_the_tile(case):
    # every active lane of a staged access reads its element at its row-major place in its block's tile of its
    # window: sbase + ((row - row0) * pitch + (col - col0)) * 4, (row0, col0) the least row and column of the
    # block's accesses in that window (the k-th access of a warp is in window k // L); worked out lane by lane
    # here, against the kernels' stepping of evenly spaced lanes (_affine) and their bounding boxes
    t, windows = case
    ncols = t.info.objects[0].shape[1] if t.info.objects[0].shape else 0
    order = S.program_order(t)
    so, fp, _ = x_plan(t, windows, "global", 64, 1)
    length = so.length
    s = S.stage(t, np.zeros(len(t), np.int16), [so], windows, barrier=1, smem_per_block=64 + fp.bytes[0]).trace
    seen: dict[tuple[int, int], int] = {}
    where = {}  # original row -> (block, window, elements of its active lanes)
    for i in order:
        g = (int(t.cta[i]), int(t.warp[i]))
        k = seen.get(g, 0)
        seen[g] = k + 1
        act = ((int(t.mask[i]) >> np.arange(32)) & 1).astype(bool)
        e = (t.addr[i].astype(np.int64) - BASE) // 4
        rc = [(int(x // ncols), int(x % ncols)) if ncols else (0, int(x)) for x in e]
        where[int(i)] = (g[0], k // length, act, rc)
    origin = {}
    for b, j, act, rc in where.values():
        for lane in np.flatnonzero(act):
            r0, c0 = origin.get((b, j), (1 << 40, 1 << 40))
            origin[(b, j)] = (min(r0, rc[lane][0]), min(c0, rc[lane][1]))
    for i, (b, j, act, rc) in where.items():
        (k,) = np.flatnonzero((s.pc == t.pc[i]) & (s.cta == b))
        r0, c0 = origin[(b, j)]
        want = [64 + ((r - r0) * fp.pitch[0] + (c - c0)) * 4 for r, c in rc]
        assert s.space[k] == SHARED and s.addr[k][act].tolist() == [w for w, on in zip(want, act) if on]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_traces())
def test_one_pass_staging_equals_for_any_buffer_length(case):
    # stage() writes in one pass into buffers of a guessed length and stages again when they are too short:
    # buffers far too short, exactly long enough and too long, and the program order given or not, all give the
    # same rows, deltas and inserted counts
    t, windows = case
    order = S.program_order(t)
    so, fp, _ = x_plan(t, windows, "global", 0, 2.5)
    delta = (np.arange(len(t)) % 3).astype(np.int16)
    ref = S.stage(t, delta, [so], windows, barrier=1, smem_per_block=fp.bytes[0])
    n = len(ref.trace)
    for hint, given_order in ((1, None), (n - 1, order), (n, order), (3 * n, None)):
        st_ = S.stage(t, delta, [so], windows, barrier=1, smem_per_block=fp.bytes[0], order=given_order, rows_hint=hint)
        assert st_.inserted == ref.inserted and st_.windows == ref.windows
        assert np.array_equal(st_.addr_inst_delta, ref.addr_inst_delta)
        for c, v in ref.trace.columns().items():
            assert np.array_equal(getattr(st_.trace, c), v), c


SOURCE_COSTS = st.tuples(st.sampled_from(S.SOURCES), st.sampled_from([0, 0.6667, 1, 2, 2.5, 3.4999]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_traces(), SOURCE_COSTS, SOURCE_COSTS, SOURCE_COSTS, SOURCE_COSTS, st.booleans())
def test_restage_equals_staging_with_the_other_sources(case, xa, xb, ya, yb, with_y):
    # restage(stage(plan a), plan b) == stage(plan b), row for row, for staging sources and per-element costs that
    # differ between a and b (the rounded seq step too: 0.6667 -> 1, 2.5 -> 3, 3.4999 -> 3); with a second, written
    # object staged beside X (its tile written back), whose own source changes too
    t, windows = case
    order = S.program_order(t)
    a = S.access(t, S.object_rows(t, order, 0), 0)
    fp = S.footprint(t, S.object_rows(t, order, 0), a, (windows,))
    plan_a = [S.StagedObject(0, xa[0], -(-a.ordinals // windows), 0, fp.pitch[0], True, "none", xa[1], 0)]
    plan_b = [S.StagedObject(0, xb[0], -(-a.ordinals // windows), 0, fp.pitch[0], True, "none", xb[1], 0)]
    if with_y:  # Y: each warp writes its own 32 elements after its reads of X, and reads them again
        t = _with_written_y(t)
        base = -(-fp.bytes[0] // 16) * 16
        plan_a.append(S.StagedObject(1, ya[0], -(-2 // windows), base, 32, True, "store", ya[1], 1.5))
        plan_b.append(S.StagedObject(1, yb[0], -(-2 // windows), base, 32, True, "store", yb[1], 1.5))
    _restaged_equals_staged(t, fp, windows, plan_a, plan_b)


def _restaged_equals_staged(t, fp, windows, plan_a, plan_b):
    """restage(stage(plan a), plan b) == stage(plan b), every column, delta, count and recorded tile row."""
    delta = (np.arange(len(t)) % 3).astype(np.int16)
    smem = fp.bytes[0] + 1024
    ref = S.stage(t, delta, plan_b, windows, barrier=1, smem_per_block=smem)
    got = S.restage(S.stage(t, delta, plan_a, windows, barrier=1, smem_per_block=smem), plan_b)
    assert got.inserted == ref.inserted and got.int_milli == ref.int_milli and got.objects == ref.objects
    assert np.array_equal(got.addr_inst_delta, ref.addr_inst_delta)
    assert (got.tile_rows is None) == (ref.tile_rows is None)
    assert ref.tile_rows is None or np.array_equal(got.tile_rows, ref.tile_rows)
    for c, v in ref.trace.columns().items():
        assert np.array_equal(getattr(got.trace, c), v), c
    assert got.trace.info == ref.trace.info


COPY_ROWS = st.one_of(st.just(()), st.tuples(*[st.integers(0, 20)] * S.COPY_ROWS_LEN))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_traces(), st.sampled_from([None, 16]), SOURCE_COSTS, SOURCE_COSTS, COPY_ROWS, COPY_ROWS,
       st.sampled_from([0, 16]), st.booleans())  # fmt: skip
def test_restage_of_an_unrolled_copy_equals_staging_with_the_other_sources(case, bx, xa, xb, rows_a, rows_b,
                                                                           vector, with_y):  # fmt: skip
    # as above for the unrolled copy (copy_unroll 4): where copy_rows price a 2D tile a row at a time, the rows'
    # prices, the max of a row's price and its loads' and stores' seq, and the prologue before a pass's first priced
    # row differ by source (one source with copy_rows, another without, both with others); in a 1D block of 32 or 64
    # threads and in a 2D one 16 wide, with the kernel's reads merged into vector loads or not
    t, windows = case
    if bx:
        t = traces.Trace(**t.columns(), info=replace(t.info, block=(bx, t.info.threads_per_block // bx, 1)))
    order = S.program_order(t)
    a = S.access(t, S.object_rows(t, order, 0), 0)
    fp = S.footprint(t, S.object_rows(t, order, 0), a, (windows,))

    def x(src, rows):
        return S.StagedObject(0, src[0], -(-a.ordinals // windows), 0, fp.pitch[0], True, "none", src[1], 0,
                              vector_bytes=vector, copy_unroll=4, copy_rows=rows)  # fmt: skip

    plan_a, plan_b = [x(xa, rows_a)], [x(xb, rows_b)]
    if with_y:
        t = _with_written_y(t)
        base = -(-fp.bytes[0] // 16) * 16
        plan_a.append(S.StagedObject(1, "global", -(-2 // windows), base, 32, True, "store", 1, 1.5, copy_unroll=4))
        plan_b.append(S.StagedObject(1, "readonly", -(-2 // windows), base, 32, True, "store", 2.5, 1.5, copy_unroll=4))
    _restaged_equals_staged(t, fp, windows, plan_a, plan_b)


def test_an_unrolled_copys_tile_rows_are_priced_by_their_source():
    # stencil(): one warp of 32 threads a block reads rows 0-2 of X, 32 columns from 16 b; staged in one window its
    # 3 x 32 tile is copied by the 2D loop, a tile row a round (one iteration each lane: a remainder of 1), so each
    # of its 3 rows costs head + first, the pass's first row the prologue before it too. With copy_rows (10, 5, 0,
    # 0, 0, 0, 7) a row takes 15 where its load and store take 2 + 1 (P_INT 1): the copy moves the warp's next row
    # by 7 + 3 x 15 = 52; with (1, 1, 0, 0, 0, 0, 0) by 3 x max(2, 3) = 9: 43 less (43,000 thousandths of non-memory
    # instructions a block: the prologue's 7 and 15 - 3 a row), and the re-sourced staging equals the staging with
    # those counts
    t = stencil()
    so = S.StagedObject(0, "global", 3, 0, 32, True, "none", 1, 0, copy_unroll=4, copy_rows=(10, 5, 0, 0, 0, 0, 7))
    other = replace(so, source="readonly", copy_rows=(1, 1, 0, 0, 0, 0, 0))
    delta = np.zeros(len(t), np.int16)
    a = S.stage(t, delta, [so], 1, barrier=1, smem_per_block=384)
    b = S.stage(t, delta, [other], 1, barrier=1, smem_per_block=384)
    assert a.tile_rows.shape == (2 * 3, S.K.SEG_LEN)  # 3 tile rows a block
    first_read = (a.trace.pc < a.pc_top) & (a.trace.obj == 0)
    assert (a.trace.seq[first_read][::3] - b.trace.seq[first_read][::3]).tolist() == [43, 43]
    got = S.restage(a, [other])
    for c, v in b.trace.columns().items():
        assert np.array_equal(getattr(got.trace, c), v), c
    assert got.int_milli == b.int_milli and got.int_milli - a.int_milli == -2 * (7 + 3 * 12) * 1000  # two blocks


def _with_written_y(t):
    """``t`` plus object Y (64 floats per warp slot): each warp stores its 32 elements after its last row, then loads them."""
    n_slots = t.info.ctas * t.info.warps_per_block
    Y = traces.ObjectInfo(1, "Y", "global", BASE + 0x100000, 32 * 4 * n_slots, 4, None, True)
    rows = []
    for b, w in sorted({(int(c), int(w)) for c, w in zip(t.cta, t.warp)}):
        last = int(t.seq[(t.cta == b) & (t.warp == w)].max())
        g = b * t.info.warps_per_block + w
        for k, op in enumerate((1, 0)):
            rows.append((b, w, last + 1 + k, op, 1, 32 * g + np.arange(32), 0xFFFFFFFF))
    extra = trace_of(rows, [t.info.objects[0], Y], t.info.ctas, t.info.threads_per_block)
    cols = {c: np.concatenate([v, getattr(extra, c)]) for c, v in t.columns().items()}
    cols["pc"] = np.arange(len(cols["seq"]), dtype=np.int32) * 16
    info = traces.KernelInfo(
        "k", t.info.grid, t.info.block, (t.info.objects[0], Y), t.info.instructions, regs_per_thread=16,
    )  # fmt: skip
    out = traces.Trace(**cols, info=info)
    traces.validate(out)
    return out


def test_restage_refuses_another_staging():
    t = stencil()
    so = S.StagedObject(0, "global", 3, 0, 32, True, "none", 3, 0)
    st_ = S.stage(t, np.zeros(len(t), np.int16), [so], 1, barrier=1, smem_per_block=384)
    with pytest.raises(ValueError, match="staged differently"):
        S.restage(st_, [S.StagedObject(0, "texture1d", 3, 0, 64, True, "none", 3, 0)])
    with pytest.raises(ValueError, match="source 'shared'"):
        S.restage(st_, [S.StagedObject(0, "shared", 3, 0, 32, True, "none", 3, 0)])
    with pytest.raises(ValueError, match="2 staged objects for a staging of 1"):
        S.restage(st_, [so, so])


# ---------------------------------------------------------------------------------------------------------------------
# the addressing context of each access (traces.context)


def test_access_context_by_hand():
    from traces.context import INDEXED, OFFSET, access_context

    t = stencil()
    # X rows 1 and 2 sit one row (256 B) after the previous X access of the warp, from another instruction, in
    # both blocks: constant offsets; X row 0 and Y are each warp's first access of their object
    cols = t.columns()
    cols["pc"] = np.tile(np.array([0, 16, 32, 48], np.int32), 2)  # the same four instructions in both blocks
    t = traces.Trace(**cols, info=t.info)
    assert access_context(t).tolist() == [INDEXED, OFFSET, OFFSET, INDEXED] * 2
    # a rolled loop (the same instruction again) is indexed; so is an access whose distance changes
    cols = t.columns()
    cols["pc"] = np.where(cols["obj"] == 0, 0, 48).astype(np.int32)
    assert access_context(traces.Trace(**cols, info=t.info)).tolist() == [INDEXED] * 8
    cols = t.columns()
    cols["pc"] = np.tile(np.array([0, 16, 32, 48], np.int32), 2)
    cols["addr"] = cols["addr"].copy()
    cols["addr"][6] += np.uint64(4)  # block 1's third X row: 260 B from its second, not 256
    assert access_context(traces.Trace(**cols, info=t.info)).tolist() == [INDEXED, OFFSET, INDEXED, INDEXED] * 2
