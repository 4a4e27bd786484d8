"""Coalescing: hand-worked bank conflicts, transactions and replays, and naive references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cachesim
import traces
from cachesim import _coalesce_kernels as Q

FULL = 0xFFFFFFFF


def one_row_trace(space, lane_addr, width=4, mask=FULL, objects=(), obj=-1):
    lane_addr = np.asarray(lane_addr, dtype=np.uint64)
    addr = np.where(((mask >> np.arange(32)) & 1).astype(bool), lane_addr, 0).astype(np.uint64)[None, :]
    info = traces.KernelInfo(
        kernel="t", grid=(1, 1, 1), block=(32, 1, 1), objects=tuple(objects),
        instructions=traces.Instructions(executed=1, warps=1),
    )  # fmt: skip
    return traces.Trace(
        cta=np.zeros(1, np.int32), warp=np.zeros(1, np.int32), seq=np.zeros(1, np.int64), pc=np.zeros(1, np.int32),
        op=np.zeros(1, np.int8), space=np.array([space], np.int8), width=np.array([width], np.int8),
        mask=np.array([mask], np.uint32), addr=addr, obj=np.array([obj], np.int16), info=info,
    )  # fmt: skip


def degree(lane_addr, width=4, bank_bytes=4, mask=FULL):
    cfg = cachesim.CoalesceConfig(smem_bank_bytes=bank_bytes)
    c = cachesim.coalesce(one_row_trace(2, lane_addr, width, mask), cfg)
    assert c.replays[0, 4] == max(0, c.lines[0] - 1)
    return int(c.lines[0])


lanes = np.arange(32)


def test_bank_conflicts_hand_worked():
    assert degree(lanes * 4) == 1  # consecutive words: conflict-free
    assert degree(lanes * 8) == 2  # stride-2 words: 2-way
    assert degree(lanes * 128) == 32  # stride-32 words: 32-way
    assert degree(np.zeros(32)) == 1  # identical words: broadcast, no conflict
    assert degree(lanes * 4 % 64) == 1  # 16 words, each read by two lanes: broadcast
    assert degree(lanes * 8, bank_bytes=8) == 1  # 8-byte banks: stride-2 4-byte words fit
    assert degree(lanes * 8, width=8) == 2  # 8-byte lanes on 4-byte banks: two words per bank
    assert degree(lanes * 8, width=8, bank_bytes=8) == 1
    assert degree(lanes * 128, mask=0x3) == 2  # only two lanes active
    assert degree(lanes * 4, mask=0) == 0


def ref_degree(addrs, width, bank_bytes, banks=32):
    words = {
        int(a) // bank_bytes + k for a in addrs for k in range((int(a) % bank_bytes + width - 1) // bank_bytes + 1)
    }
    per_bank = {}
    for w in words:
        per_bank.setdefault(w % banks, set()).add(w)
    return max((len(v) for v in per_bank.values()), default=0)


@pytest.mark.parametrize("seed", range(5))
def test_bank_conflicts_random(seed):
    rng = np.random.default_rng(seed)
    for _ in range(50):
        width = int(rng.choice([1, 2, 4, 8, 16]))
        bb = int(rng.choice([4, 8]))
        mask = int(rng.integers(0, 1 << 32))
        a = (rng.integers(0, 1 << 12, 32) // width) * width
        active = [a[i] for i in range(32) if (mask >> i) & 1]
        assert degree(a, width, bb, mask) == ref_degree(active, width, bb)


def test_global_transactions_and_replays():
    c = cachesim.coalesce(one_row_trace(0, 0x1000 + lanes * 4))
    assert (c.lines[0], c.sectors[0], c.replays[0, 1]) == (1, 4, 0)
    c = cachesim.coalesce(one_row_trace(0, 0x1000 + lanes * 8, width=8))  # 256 B: two transactions
    assert (c.lines[0], c.sectors[0], c.replays[0, 1]) == (2, 8, 1)
    c = cachesim.coalesce(one_row_trace(0, 0x1000 + lanes * 16, width=16))  # 512 B
    assert (c.lines[0], c.sectors[0], c.replays[0, 1]) == (4, 16, 3)
    # misaligned by 4 bytes: 2 lines, 5 sectors; the paper's replay count stays words / size - 1 = 0
    c = cachesim.coalesce(one_row_trace(0, 0x1004 + lanes * 4))
    assert (c.lines[0], c.sectors[0], c.replays[0, 1]) == (2, 5, 0)
    # stride of a line: 32 lines of one sector each
    c = cachesim.coalesce(one_row_trace(0, lanes * 128))
    assert (c.lines[0], c.sectors[0]) == (32, 32)
    # one lane
    c = cachesim.coalesce(one_row_trace(1, lanes * 4 + 64, mask=1 << 5))
    assert (c.lines[0], c.sectors[0], c.replays[0, 1]) == (1, 1, 0)


def test_readonly_rows_coalesce_as_global_ones():
    # R (read-only, space 6) is global memory through the read-only path: lines and sectors as global,
    # cause-1 replays; it went through the texture rule here (one 128-byte texture line, no sectors
    # counted) while the hierarchy walk coalesced it as global
    c = cachesim.coalesce(one_row_trace(6, 0x1000 + lanes * 4))  # 32 lanes x 4 B = 128 B: one line, 4 sectors
    assert (c.lines[0], c.sectors[0], c.replays[0].tolist()) == (1, 4, [0, 0, 0, 0, 0])
    c = cachesim.coalesce(one_row_trace(6, 0x1000 + lanes * 8, width=8))  # 256 B: 2 lines, 8 sectors, 1 replay
    assert (c.lines[0], c.sectors[0], c.replays[0].tolist()) == (2, 8, [0, 1, 0, 0, 0])
    c = cachesim.coalesce(one_row_trace(6, lanes * 64))  # stride 64 B: 32 sectors, two in each of 16 lines
    assert (c.lines[0], c.sectors[0], c.replays[0, 1]) == (16, 32, 0)
    c = cachesim.coalesce(one_row_trace(6, lanes * 128))  # stride of a line: 32 lines of one sector
    assert (c.lines[0], c.sectors[0], c.replays[0, 1]) == (32, 32, 0)


def test_coalesce_counts_what_the_hierarchy_walk_counts():
    # one rule per space for both: the walk's transactions and replays (but cause 2, constant-cache
    # misses) are the sums of coalesce's lines and replays, for a row of every space
    obj = traces.ObjectInfo(0, "M", "texture2d", 0x10000, 64 * 64 * 4, 4, (64, 64), False)
    cases = [(lanes * 4, 4), (lanes * 64 * 4, 4), (lanes * 8, 8), ((lanes % 3) * 4, 4), (lanes * 128, 4)]
    n = len(cases) * len(traces.SPACE_NAMES)
    addr = np.zeros((n, 32), np.uint64)
    space = np.zeros(n, np.int8)
    width = np.zeros(n, np.int8)
    for k, (sp, (a, w)) in enumerate((sp, case) for sp in range(len(traces.SPACE_NAMES)) for case in cases):
        addr[k], space[k], width[k] = 0x10000 + a, sp, w
    info = traces.KernelInfo(
        kernel="t", grid=(1, 1, 1), block=(32, 1, 1), objects=(obj,), instructions=traces.Instructions(executed=n, warps=1),
    )  # fmt: skip
    trace = traces.Trace(
        cta=np.zeros(n, np.int32), warp=np.zeros(n, np.int32), seq=np.arange(n, dtype=np.int64), pc=np.zeros(n, np.int32),
        op=np.zeros(n, np.int8), space=space, width=width, mask=np.full(n, FULL, np.uint32), addr=addr,
        obj=np.zeros(n, np.int16), info=info,
    )  # fmt: skip
    dram = cachesim.DramConfig(352.0, 742.0, 1008.0, row_bits=tuple(range(14, 22)), column_bits=tuple(range(8, 14)))
    h = cachesim.simulate_hierarchy(trace, cachesim.HierarchyConfig(sms=1, l2="N:64:128:16,L:B:m:W:L", l2_slices=1,
                                                                    dram=dram, tex="N:16:128:24,L:R:m:N:L"), 1)  # fmt: skip
    c = cachesim.coalesce(trace)
    assert h.transactions.tolist() == np.bincount(space, weights=c.lines, minlength=7).astype(int).tolist()
    assert c.replay_totals[cachesim.REPLAY_CONST_MISS] == 0
    mine = c.replay_totals.tolist()
    mine[cachesim.REPLAY_CONST_MISS] = int(h.replays[cachesim.REPLAY_CONST_MISS])
    assert h.replays.tolist() == mine
    readonly = space == traces.SPACE_CODES["readonly"]
    assert c.lines[readonly].tolist() == [1, 32, 2, 1, 32] and c.sectors[readonly].tolist() == [4, 32, 8, 1, 32]


@pytest.mark.parametrize("seed", range(3))
def test_global_random_against_reference(seed):
    rng = np.random.default_rng(seed)
    for _ in range(100):
        width = int(rng.choice([1, 2, 4, 8, 16]))
        mask = int(rng.integers(0, 1 << 32))
        a = (rng.integers(0, 1 << 14, 32) // width) * width
        act = [int(a[i]) for i in range(32) if (mask >> i) & 1]
        sectors = {(x + k) // 32 for x in act for k in range(width)}
        lines = {s // 4 for s in sectors}
        c = cachesim.coalesce(one_row_trace(0, a, width, mask))
        assert c.lines[0] == len(lines) and c.sectors[0] == len(sectors)
        assert c.replays[0, 1] == max(0, -(-len(act) * width // 128) - 1)


def test_constant_serialization():
    c = cachesim.coalesce(one_row_trace(3, np.full(32, 0x40)))
    assert (c.lines[0], c.replays[0, 3]) == (1, 0)
    c = cachesim.coalesce(one_row_trace(3, lanes * 4))
    assert (c.lines[0], c.replays[0, 3]) == (32, 31)
    c = cachesim.coalesce(one_row_trace(3, (lanes % 3) * 4))
    assert (c.lines[0], c.replays[0, 3]) == (3, 2)


def test_texture_2d_tiles():
    # a 64 x 64 float matrix: tiles of 4 rows x 8 cols = one 128-byte line
    assert Q.tile_shape(128, 4) == (4, 8)
    assert Q.tile_shape(128, 8) == (4, 4)
    assert Q.tile_shape(128, 16) == (2, 4)
    assert Q.tile_shape(128, 1) == (8, 16)
    obj = traces.ObjectInfo(0, "M", "texture2d", 0x10000, 64 * 64 * 4, 4, (64, 64), False)
    column = 0x10000 + lanes * 64 * 4  # 32 rows of column 0
    row = 0x10000 + lanes * 4  # 32 columns of row 0
    col_1d = cachesim.coalesce(one_row_trace(4, column, objects=[obj], obj=0))
    col_2d = cachesim.coalesce(one_row_trace(5, column, objects=[obj], obj=0))
    row_1d = cachesim.coalesce(one_row_trace(4, row, objects=[obj], obj=0))
    row_2d = cachesim.coalesce(one_row_trace(5, row, objects=[obj], obj=0))
    assert (col_1d.lines[0], col_2d.lines[0]) == (32, 8)  # 32 rows = 8 tiles of 4 rows
    assert (row_1d.lines[0], row_2d.lines[0]) == (1, 4)  # 32 columns = 4 tiles of 8 columns
    # element (r, c) = (5, 10) is in tile (1, 1) = tile 1 * 8 + 1 = 9, inside at (1, 2) -> 1 * 8 + 2
    a = np.uint64(0x10000 + (5 * 64 + 10) * 4)
    tab = cachesim.coalesce.__globals__["object_table"](one_row_trace(5, row, objects=[obj], obj=0).info)
    assert Q.tiled_address(a, 0, tab, 128) == 0x10000 + 9 * 128 + (1 * 8 + 2) * 4
    # without a 2D shape the address is unchanged
    assert Q.tiled_address(a, -1, tab, 128) == a


def test_bad_config():
    with pytest.raises(cachesim.HierarchyConfigError, match="^line_bytes"):
        cachesim.CoalesceConfig(line_bytes=96)
    with pytest.raises(cachesim.HierarchyConfigError, match="^smem_banks"):
        cachesim.CoalesceConfig(smem_banks=0)


def lines_reference(mask, row, width, line_log2, sect_log2):
    """lines_touched in plain Python: each active lane's sectors, lines in order of first touch."""
    out: dict[int, int] = {}
    per = line_log2 - sect_log2
    for lane in range(32):
        if (mask >> lane) & 1:
            a = int(row[lane])
            for s in range(a >> sect_log2, ((a + width - 1) >> sect_log2) + 1):
                line = (s >> per) << line_log2
                out[line] = out.get(line, 0) | (1 << (s & ((1 << per) - 1)))
    return list(out), list(out.values())


def _check_lines(mask, row, width, geometry):
    """The kernel's lines and sector masks of a row equal the plain-Python reference's."""
    line_log2, sect_log2 = geometry
    lines, smasks = np.zeros(64, np.uint64), np.zeros(64, np.uint64)
    k = Q.lines_touched(np.int64(mask), row, np.int64(width), line_log2, sect_log2, lines, smasks)
    ref_lines, ref_masks = lines_reference(mask, row, width, line_log2, sect_log2)
    assert [int(x) for x in lines[:k]] == ref_lines
    assert [int(x) for x in smasks[:k]] == ref_masks


@settings(max_examples=300, deadline=None)
@given(
    base=st.integers(0, (1 << 40)),
    width=st.sampled_from([1, 2, 4, 8, 16]),
    geometry=st.sampled_from([(7, 5), (7, 7), (5, 5), (6, 5), (7, 2)]),
    nudge=st.one_of(st.none(), st.tuples(st.integers(1, 31), st.integers(-64, 64))),
    mask=st.sampled_from([FULL, FULL ^ 1, 0x0000FFFF, 1 << 31, 1, 1 << 5]),
)
def test_lines_touched_coalesced_rows_against_reference(base, width, geometry, nudge, mask):
    """A row of lanes one after another (the kernel's short way) and the same row with one lane moved or
    lanes idle (the lane loop) give the lines and sector masks of the plain-Python reference."""
    row = (np.uint64(base) + np.arange(32, dtype=np.uint64) * np.uint64(width)).astype(np.uint64)
    if nudge is not None:
        row[nudge[0]] = np.uint64(max(0, int(row[nudge[0]]) + nudge[1]))
    _check_lines(mask, row, width, geometry)


@settings(max_examples=300, deadline=None)
@given(
    base=st.integers(0, (1 << 40)),
    width=st.sampled_from([1, 2, 4, 8, 16]),
    geometry=st.sampled_from([(7, 5), (7, 7), (5, 5), (6, 5), (7, 2)]),
    steps=st.one_of(
        st.integers(0, 300).map(lambda k: [k] * 31), st.lists(st.integers(0, 200), min_size=31, max_size=31)
    ),
    shuffle=st.booleans(),
    mask=st.sampled_from([FULL, FULL ^ 1, 0x0F0F0F0F, 1 << 31, 1 << 9]),
)
def test_lines_touched_strided_and_scattered_rows_against_reference(base, width, geometry, steps, shuffle, mask):
    """Rows whose lanes go up by any steps (a column of an image, lanes overlapping or crossing lines: the
    ascending short way) and the same rows with lanes swapped (the full scan) give the reference's lines."""
    row = (np.uint64(base) + np.concatenate([[0], np.cumsum(steps)]).astype(np.uint64)).astype(np.uint64)
    if shuffle:
        row = row[np.random.default_rng(int(base) % 1000).permutation(32)]
    _check_lines(mask, row, width, geometry)


def bank_degree_reference(mask, row, width, nbanks, bank_bytes):
    """The bank-conflict degree in plain Python: distinct words per bank, the largest count."""
    words = {
        w
        for lane in range(32)
        if (mask >> lane) & 1
        for w in range(int(row[lane]) // bank_bytes, (int(row[lane]) + width - 1) // bank_bytes + 1)
    }
    per_bank: dict[int, int] = {}
    for w in words:
        per_bank[w % nbanks] = per_bank.get(w % nbanks, 0) + 1
    return max(per_bank.values(), default=0)


@settings(max_examples=300, deadline=None)
@given(
    base=st.integers(0, 1 << 20),
    width=st.sampled_from([1, 2, 4, 8, 16]),
    banks=st.sampled_from([(32, 4), (32, 8), (16, 4), (4, 4), (24, 4), (32, 6)]),  # the last two: divisions
    nudge=st.one_of(st.none(), st.tuples(st.integers(1, 31), st.integers(-64, 64))),
    mask=st.sampled_from([FULL, FULL ^ (1 << 7), 0xFFFF, 1, 1 << 31, 1 << 12]),  # the last three: one lane
)
def test_bank_conflict_degree_coalesced_rows_against_reference(base, width, banks, nudge, mask):
    """A row of lanes one after another (the kernel's short way) and the same row with a lane moved or
    lanes idle (the sort), or one lane alone (its span), give the plain-Python reference's degree."""
    row = (np.uint64(base) + np.arange(32, dtype=np.uint64) * np.uint64(width)).astype(np.uint64)
    if nudge is not None:
        row[nudge[0]] = np.uint64(max(0, int(row[nudge[0]]) + nudge[1]))
    nbanks, bank_bytes = banks
    words, counts = np.zeros(32 * 16, np.uint64), np.zeros(nbanks, np.int64)
    d = Q.bank_conflict_degree(np.int64(mask), row, np.int64(width), nbanks, bank_bytes, words, counts)
    assert d == bank_degree_reference(mask, row, width, nbanks, bank_bytes)
