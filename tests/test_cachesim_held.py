"""cachesim.held: the rows a streamed walk holds back, read by row number across the groups they came in."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachesim.held import HeldRows, Rows


def _group(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    # a trace's kinds of column: 1-D of several widths and the lanes' 2-D addresses
    return (rng.integers(0, 1 << 30, n).astype(np.int32), rng.integers(-5, 5, n).astype(np.int8),
            rng.integers(0, 1 << 62, (n, 4)).astype(np.uint64))  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=12), seed=st.integers(0, 999))
def test_gather_reads_the_rows_of_the_concatenation(sizes, seed):
    rng = np.random.default_rng(seed)
    groups = [_group(rng, n) for n in sizes]
    held = HeldRows()
    for g in groups:
        held.append(g)
    assert held.rows == len(held) == sum(sizes)
    assert held.nbytes == sum(c.nbytes for g in groups for c in g)  # the groups' bytes, as arrays or as copies
    if not sum(sizes):
        with pytest.raises(ValueError, match="no rows"):
            held.take()
        return
    rows = held.take()
    assert held.rows == 0 and rows.n == sum(sizes)  # the holder emptied
    whole = [np.concatenate([g[j] for g in groups]) for j in range(3)]
    for j in range(3):
        np.testing.assert_array_equal(rows.column(j), whole[j])
    # any rows in any order, repeats too, any columns in any order
    pick = rng.integers(0, rows.n, rng.integers(0, 3 * rows.n))
    got = rows.gather(pick, (2, 0))
    np.testing.assert_array_equal(got[0], whole[2][pick])
    np.testing.assert_array_equal(got[1], whole[0][pick])
    assert got[0].dtype == np.uint64 and got[0].shape == (pick.shape[0], 4)


def test_a_wave_of_one_group_is_held_as_it_came():
    g = (np.arange(10, dtype=np.int64), np.zeros((10, 2), np.uint64))
    held = HeldRows()
    held.append(g)
    assert all(a is b for a, b in zip(held.take().pieces[0], g))


def test_a_wave_of_several_groups_is_held_as_copies_shared_between_streams():
    # a group read from a file is a view of the reader's buffers: once a second group comes, each is copied, and
    # streams fed the same arrays share one copy, as they shared the group; a column of a rewritten group is a new
    # array, a new copy; gathered rows (owned) are kept as they are
    rng = np.random.default_rng(5)
    g1, g2 = _group(rng, 10), _group(rng, 7)
    r1 = (g1[0] + 1, g1[1], g1[2])  # the same rows rewritten: a new first column
    a, b = HeldRows(), HeldRows()
    for holder, first in ((a, g1), (b, r1)):
        holder.append(first)
        holder.append(g2)
    mine = _group(rng, 3)
    a.append(mine, owned=True)
    want = [np.concatenate([g1[j], g2[j], mine[j]]) for j in range(3)]
    g1[0][:] = -1  # the groups reused by their reader
    g2[2][:] = 0
    ra, rb = a.take(), b.take()
    for j in range(3):
        np.testing.assert_array_equal(ra.column(j), want[j])
    np.testing.assert_array_equal(rb.column(0)[:10], want[0][:10] + 1)
    assert ra.pieces[0][1] is rb.pieces[0][1] and ra.pieces[0][1] is not g1[1]  # one copy, shared
    assert ra.pieces[1][2] is rb.pieces[1][2]
    assert ra.pieces[0][0] is not rb.pieces[0][0]
    assert all(x is y for x, y in zip(ra.pieces[2], mine))


def test_no_rows_is_an_error():
    with pytest.raises(ValueError, match="no rows"):
        Rows([])


def test_the_copies_are_forgotten_with_their_holders():
    import gc

    from cachesim import held as H

    gc.collect()  # earlier tests' unreachable holders would otherwise leave the registry during this one
    before = len(H._copies)
    h = HeldRows()
    h.append((np.arange(5), np.ones((5, 3))))
    h.append((np.arange(4), np.ones((4, 3))))
    assert len(H._copies) == before + 4
    del h
    gc.collect()
    assert len(H._copies) == before


# ---- PackedLanes: lane addresses in fewer bytes, exactly ------------------------------------------------------------
def _lanes(rng: np.random.Generator, n: int, lanes: int) -> np.ndarray:
    """Rows of each kind a trace has: coalesced, broadcast, a column walk (wide spans), lanes left at 0, and any
    64-bit values; spans at each tier's edges (65,534 / 65,535 and 2^32 - 2 / 2^32 - 1 from the lowest address)."""
    base = rng.integers(1, 1 << 62, n).astype(np.uint64)
    kind = rng.integers(0, 8, n)
    step = np.choose(kind, [4, 0, 8192, 1 << 20, 1, 1, 1, 1]).astype(np.uint64)
    a = base[:, None] + step[:, None] * np.arange(lanes, dtype=np.uint64)[None, :]
    edge = np.array([65534, 65535, (1 << 32) - 2, (1 << 32) - 1], np.uint64)
    for k, span in zip((4, 5, 6, 7), edge):  # lane 1 at the edge, the rest at the base
        sel = kind == k
        a[sel] = base[sel, None]
        if lanes > 1:
            a[sel, 1] += span
    a[rng.random((n, lanes)) < 0.2] = 0  # lanes that do not run
    wild = rng.random(n) < 0.1
    a[wild] = rng.integers(0, 1 << 63, (int(wild.sum()), lanes)).astype(np.uint64) * np.uint64(2)
    return a


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 300), lanes=st.sampled_from([1, 4, 32]), seed=st.integers(0, 999))
def test_packed_lanes_give_back_every_address(n, lanes, seed):
    from cachesim.held import PackedLanes

    rng = np.random.default_rng(seed)
    a = _lanes(rng, n, lanes)
    p = PackedLanes(a)
    assert p.shape == a.shape and len(p) == n and p.dtype == np.uint64
    np.testing.assert_array_equal(np.asarray(p), a)
    pick = rng.integers(0, max(n, 1), rng.integers(0, 2 * n + 1)) if n else np.zeros(0, np.int64)
    np.testing.assert_array_equal(p[pick], a[pick])
    assert p[pick].shape == (pick.shape[0], lanes)
    if n:  # numpy's other indices: negative row numbers, a slice, one row, a mask; out of range refused as numpy does
        np.testing.assert_array_equal(p[pick - n], a[pick - n])
        np.testing.assert_array_equal(p[1::3], a[1::3])
        np.testing.assert_array_equal(p[n - 1], a[n - 1 : n])
        np.testing.assert_array_equal(p[a[:, 0] % 2 == 0], a[a[:, 0] % 2 == 0])
        for bad in (np.array([n]), np.array([-n - 1])):
            with pytest.raises(IndexError):
                p[bad]


def test_packed_lanes_tiers_by_hand():
    from cachesim import _held_kernels as K
    from cachesim.held import PackedLanes

    b = np.uint64(0x7F00_0000_0000)
    rows = np.zeros((8, 32), np.uint64)
    rows[0] = b + 4 * np.arange(32, dtype=np.uint64)  # a coalesced warp: 124 bytes, 16-bit offsets
    rows[1, :3] = (b, b + np.uint64(65534), 0)  # the widest 16-bit span; lanes 3-31 at 0
    rows[2, :2] = (b, b + np.uint64(65535))  # one byte wider: 32 bits
    rows[3, :2] = (b, b + np.uint64((1 << 32) - 2))  # the widest 32-bit span
    rows[4, :2] = (b, b + np.uint64((1 << 32) - 1))  # one wider: the addresses as they came
    # row 5: every lane at 0
    rows[6] = rows[0] + np.uint64(4096)  # row 0's pattern at another base: its pattern again
    rows[7, :2] = (b + np.uint64(8), b + np.uint64(8 + 65535))  # row 2's offsets at another base: not shared
    p = PackedLanes(rows)
    tier, slot, base, off16, off32, full = p._parts
    assert tier.tolist() == [K.TIER16, K.TIER16, K.TIER32, K.TIER32, K.TIER_FULL, K.TIER16, K.TIER16, K.TIER32]
    assert slot.tolist() == [0, 1, 0, 1, 0, 2, 0, 2]  # 16-bit rows: their pattern's number; 32-bit: their row
    assert base.tolist() == [int(b)] * 5 + [0, int(b) + 4096, int(b) + 8]
    assert off16.shape == (3, 32)  # three distinct patterns
    assert off16[0, :3].tolist() == [0, 4, 8] and off16[1, :4].tolist() == [0, 65534, K.ZERO16, K.ZERO16]
    assert (off16[2] == K.ZERO16).all()
    assert off32[1, :3].tolist() == [0, (1 << 32) - 2, K.ZERO32]
    # bytes: 8 x (1 + 4 + 8) a row, 3 patterns x 64, 3 x 128 in 32 bits, 1 x 256 as they came
    assert p.nbytes == 8 * 13 + 3 * 64 + 3 * 128 + 256
    np.testing.assert_array_equal(np.asarray(p), rows)


def test_a_holder_told_the_lanes_keeps_its_copies_and_its_own_rows_compact():
    from cachesim.held import NarrowInts, PackedLanes

    rng = np.random.default_rng(9)
    g1, g2 = _group(rng, 10), _group(rng, 7)
    mine = _group(rng, 3)
    h = HeldRows(lanes=2)
    h.append(g1)
    assert all(a is b for a, b in zip(h._pieces[0], g1))  # one group: held as it came
    h.append(g2)
    h.append(mine, owned=True)
    assert h.nbytes == sum(c.nbytes for p in h._pieces for c in p)
    rows = h.take()
    assert h.nbytes == 0 and rows.compact
    for p in rows.pieces:  # the lanes packed, the int32 column narrowed, the int8 one copied as it is
        assert isinstance(p[2], PackedLanes) and isinstance(p[0], NarrowInts) and isinstance(p[1], np.ndarray)
    whole = [np.concatenate([g[j] for g in (g1, g2, mine)]) for j in range(3)]
    pick = rng.integers(0, rows.n, 50)
    got = rows.gather(pick, (2, 0, 1))
    for k, j in enumerate((2, 0, 1)):
        np.testing.assert_array_equal(got[k], whole[j][pick])
        assert got[k].dtype == whole[j].dtype
        np.testing.assert_array_equal(rows.column(j), whole[j])
    assert all(isinstance(c, np.ndarray) for c in HeldRows()._own(g1, False))  # told nothing: plain copies


@settings(max_examples=80, deadline=None)
@given(dtype=st.sampled_from(["int16", "int32", "int64", "uint16", "uint32", "uint64"]),
       span_bits=st.integers(0, 40), n=st.integers(0, 50), seed=st.integers(0, 999))  # fmt: skip
def test_narrow_ints_give_back_every_value(dtype, span_bits, n, seed):
    # values anywhere in the dtype's range, spread over 2^span_bits: narrowed where the span fits 32 bits
    from cachesim.held import NarrowInts, _narrow

    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    span = min((1 << span_bits) - 1, int(info.max) - int(info.min))
    lo = int(rng.integers(int(info.min), int(info.max) - span, endpoint=True, dtype=np.int64 if info.min < 0
                          else np.uint64))  # fmt: skip
    a = np.array([lo + int(x) for x in rng.integers(0, span, n, endpoint=True, dtype=np.uint64)], dtype)
    c = _narrow(a)
    real = int(a.max()) - int(a.min()) if n else 0
    assert isinstance(c, NarrowInts) == (real < 1 << 32)
    if isinstance(c, NarrowInts):
        assert c.nbytes == n * (1 if real < 1 << 8 else 2 if real < 1 << 16 else 4)
    np.testing.assert_array_equal(np.asarray(c), a)
    pick = rng.integers(0, max(n, 1), 2 * n) if n else np.zeros(0, np.int64)
    got = c[pick]
    np.testing.assert_array_equal(got, a[pick])
    assert got.dtype == a.dtype


def test_a_streamed_walk_holds_its_waves_lane_addresses_packed(monkeypatch):
    # the walk of a wave longer than a group reads its held rows from PackedLanes: every count and DRAM request
    # the same as the whole trace's (tests/test_streaming.py's assert_same), and the addresses held in fewer bytes
    import cachesim
    from cachesim import held as H
    from placement.gpu import get_gpu
    from placement.memory import hierarchy_config
    from traces import generators

    made: list[H.PackedLanes] = []
    real = H.PackedLanes.__init__

    def spy(self, addr):
        real(self, addr)
        made.append(self)

    monkeypatch.setattr(H.PackedLanes, "__init__", spy)
    t = generators.trace("matmul_tiled")
    cfg = hierarchy_config(get_gpu("k80"))
    whole = cachesim.simulate_hierarchy(t, cfg, 4).totals()
    s = cachesim.HierarchyStream(cfg, t.info, 4)
    for lo in range(0, len(t), 1000):
        s.feed(traces_slice(t, lo, 1000))
    got = s.finish()
    assert made
    for f in ("requests", "hits", "misses", "instructions", "transactions", "lsu_cycles", "l2_sectors"):
        np.testing.assert_array_equal(getattr(got, f), getattr(whole, f), err_msg=f)
    assert (got.dram_requests, got.dram_bytes, got.row_buffer) == (whole.dram_requests, whole.dram_bytes,
                                                                   whole.row_buffer)  # fmt: skip
    held = sum(p.nbytes for p in made)
    raw = sum(p.shape[0] * p.shape[1] * 8 for p in made)
    # matmul_tiled's lanes lie within 64 KiB of each other in a few patterns: 13 bytes a row, not 256
    assert held < raw / 10


def traces_slice(t, lo: int, n: int):
    import traces

    return traces.Trace(**{k: v[lo : lo + n] for k, v in t.columns().items()}, info=t.info, start=lo)
