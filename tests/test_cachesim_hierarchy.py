"""The hierarchy: schedule, per-level counts, replays and the DRAM stream, worked by hand,
and the L2 against simulate_cache on the same line stream."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cachesim
import traces
from traces.codes import READONLY

DRAM = cachesim.DramConfig(
    352.0, 742.0, 1008.0,
    row_bits=(14, 15, 16, 17, 18, 19, 20, 21, 30, 31, 32), column_bits=(8, 9, 10, 11, 12, 13), byte_bits=(0, 1, 2),
)  # fmt: skip
L2 = "N:64:128:16,L:B:m:W:L"
lanes = np.arange(32, dtype=np.uint64)


def make_trace(rows, ctas, wpb, objects=()):
    """rows: list of (cta, warp, seq, op, space, width, lane addresses (32), obj); all lanes active."""
    n = len(rows)
    col = lambda k, dt: np.array([r[k] for r in rows], dtype=dt)  # noqa: E731
    info = traces.KernelInfo(
        kernel="t", grid=(ctas, 1, 1), block=(32 * wpb, 1, 1), objects=tuple(objects),
        instructions=traces.Instructions(executed=n, warps=ctas * wpb),
    )  # fmt: skip
    addr = np.array([np.asarray(r[6], dtype=np.uint64) for r in rows], dtype=np.uint64).reshape(n, 32)
    return traces.Trace(
        cta=col(0, np.int32), warp=col(1, np.int32), seq=col(2, np.int64), pc=np.zeros(n, np.int32),
        op=col(3, np.int8), space=col(4, np.int8), width=col(5, np.int8), mask=np.full(n, 0xFFFFFFFF, np.uint32),
        addr=addr, obj=col(7, np.int16), info=info,
    )  # fmt: skip


def config(**kw):
    base = dict(sms=2, l2=L2, l2_slices=1, dram=DRAM, l2_latency=100.0, issue_cycles=1.0)
    base.update(kw)
    return cachesim.HierarchyConfig(**base)


def test_schedule_hand_worked():
    # 5 blocks of 1 warp, 2 SMs, 2 blocks per SM: wave 0 = blocks 0-3 (SM 0: 0, 2; SM 1: 1, 3),
    # wave 1 = block 4 on SM 0. Two warps resident per SM in wave 0, one in wave 1.
    rows = [(b, 0, s, 0, 0, 4, lanes * 4, -1) for b in range(5) for s in (0, 1)]
    t = make_trace(rows, 5, 1)
    sm, slot = cachesim.schedule(t, 2, 2)
    assert sm.tolist() == [0, 0, 1, 1, 0, 0, 1, 1, 0, 0]
    # wave 0: slot = seq * 2 + rank (block 0 rank 0, block 2 rank 1); wave 0 lasts 4 slots
    assert slot.tolist() == [0, 2, 0, 2, 1, 3, 1, 3, 4, 5]


def test_shared_line_l1_per_sm():
    # 4 blocks x 1 warp, all reading the same 128-byte line; 2 SMs each with an L1
    rows = [(b, 0, 0, 0, 0, 4, 0x1000 + lanes * 4, -1) for b in range(4)]
    r = cachesim.simulate_hierarchy(make_trace(rows, 4, 1), config(l1="N:32:128:4,L:L:m:N:L"), blocks_per_sm=2)
    assert r.stat("l1", "global") == (4, 2, 2)  # one miss per SM
    assert r.stat("l2", "global") == (2, 1, 1)
    assert r.dram_addr.tolist() == [0x1000] and r.dram_bytes.tolist() == [128]
    assert r.dram_write.tolist() == [False] and r.dram_warp.tolist() == [0]
    assert r.dram_cycle.tolist() == [100.0]  # issued at slot 0, plus the L2 latency
    assert r.instructions[0] == 4 and r.transactions[0] == 4 and r.replays.tolist() == [0, 0, 0, 0, 0]
    # no L1: every warp goes to the L2
    r = cachesim.simulate_hierarchy(make_trace(rows, 4, 1), config(), blocks_per_sm=2)
    assert r.stat("l1", "global") == (0, 0, 0) and r.stat("l2", "global") == (4, 3, 1)


def test_sectored_l2_fetches_sectors():
    # a warp reading 64 bytes (16 lanes x 4 B, the others repeating) from a sectored L2
    a = 0x2000 + (lanes % 16) * 4
    rows = [(0, 0, 0, 0, 0, 4, a, -1), (0, 0, 1, 0, 0, 4, a + 64, -1), (0, 0, 2, 0, 0, 4, a, -1)]
    r = cachesim.simulate_hierarchy(make_trace(rows, 1, 1), config(l2="S:64:128:16,L:B:m:W:L"), blocks_per_sm=1)
    assert r.stat("l2", "global") == (3, 1, 2)  # sectors 0-1 miss, sectors 2-3 miss in the same line, then hit
    assert r.dram_addr.tolist() == [0x2000, 0x2040] and r.dram_bytes.tolist() == [64, 64]


def test_writes_and_write_backs():
    # a write-back L2 of 1 set x 1 way: a store allocates (fetch on write), a read of another
    # line evicts it dirty -> a DRAM write-back with warp -1
    rows = [(0, 0, 0, 1, 0, 4, 0x0 + lanes * 4, 0), (0, 0, 1, 0, 0, 4, 0x4000 + lanes * 4, 1)]
    objs = [
        traces.ObjectInfo(0, "A", "global", 0, 128, 4, None, True),
        traces.ObjectInfo(1, "B", "global", 0x4000, 128, 4, None, False),
    ]
    r = cachesim.simulate_hierarchy(make_trace(rows, 1, 1, objs), config(l2="N:1:128:1,L:B:m:W:L"), blocks_per_sm=1)
    assert r.dram_addr.tolist() == [0x0, 0x0, 0x4000]
    assert r.dram_write.tolist() == [False, True, False]
    assert r.dram_obj.tolist() == [0, -1, 1] and r.dram_warp.tolist() == [0, -1, 0]
    # write-through L2 sends the store itself to DRAM and keeps nothing dirty
    r = cachesim.simulate_hierarchy(make_trace(rows, 1, 1, objs), config(l2="N:1:128:1,L:T:m:N:L"), blocks_per_sm=1)
    assert r.dram_write.tolist() == [True, False]


def test_constant_and_shared_replays():
    rows = [
        (0, 0, 0, 0, 3, 4, np.where(lanes < 16, 0x100, 0x2000), -1),  # two addresses, two lines
        (0, 0, 1, 0, 3, 4, np.full(32, 0x100, np.uint64), -1),  # one address, cached
        (0, 0, 2, 0, 2, 4, lanes * 128, -1),  # stride-32 words: 32-way conflict
        (0, 0, 3, 0, 2, 4, lanes * 8, -1),  # stride-2 words: 2-way
    ]
    r = cachesim.simulate_hierarchy(make_trace(rows, 1, 1), config(const="N:128:64:1,L:R:f:N:L"), blocks_per_sm=1)
    assert r.replays.tolist() == [0, 0, 2, 1, 31 + 1]
    assert r.stat("const", "constant") == (3, 1, 2)
    assert r.stat("l2", "constant") == (2, 0, 2)
    assert r.transactions.tolist() == [0, 0, 32 + 2, 2 + 1, 0, 0, 0]
    assert r.instructions.tolist() == [0, 0, 2, 2, 0, 0, 0]


def test_texture_2d_locality():
    obj = traces.ObjectInfo(0, "M", "texture2d", 0x10000, 64 * 64 * 4, 4, (64, 64), False)
    # 4 warps read 4 consecutive columns of the first 32 rows
    rows = [(0, w, 0, 0, sp, 4, 0x10000 + lanes * 256 + 4 * w, 0) for w in range(4) for sp in [5]]
    tex = "N:16:128:24,L:R:m:N:L"
    r2 = cachesim.simulate_hierarchy(make_trace(rows, 1, 4, [obj]), config(tex=tex), blocks_per_sm=1)
    rows1 = [(c, w, s, o, 4, wd, a, ob) for (c, w, s, o, _, wd, a, ob) in rows]
    r1 = cachesim.simulate_hierarchy(make_trace(rows1, 1, 4, [obj]), config(tex=tex), blocks_per_sm=1)
    assert r2.stat("tex", "texture2d") == (32, 24, 8)  # 8 tiles of 4 rows, then hits
    assert r1.stat("tex", "texture1d") == (128, 96, 32)  # 32 lines, then hits


def test_texels_count_the_texture_rows_active_lanes():
    """``texels``: the lanes a texture row fetches (its active mask's bits), texture rows only (the texture units'
    work, ``placement.hms.t_tex``): 32 + 32 + 5 from three texture rows, none from the global row, with 1D and 2D
    fetches alike."""
    obj = traces.ObjectInfo(0, "M", "texture2d", 0x10000, 64 * 64 * 4, 4, (64, 64), False)
    rows = [
        (0, 0, 0, 0, 4, 4, 0x10000 + lanes * 4, 0),  # texture1d, 32 lanes
        (0, 0, 1, 0, 5, 4, 0x10000 + lanes * 256, 0),  # texture2d, 32 lanes
        (0, 0, 2, 0, 4, 4, 0x10100 + lanes * 4, 0),  # texture1d, 5 lanes active (mask below)
        (0, 0, 3, 0, 0, 4, 0x20000 + lanes * 4, -1),  # global: no texels
    ]
    t = make_trace(rows, 1, 1, [obj])
    t.mask[2] = 0b10110001001
    cfg = config(tex="N:16:128:24,L:R:m:N:L")
    r = cachesim.simulate_hierarchy(t, cfg, blocks_per_sm=1)
    assert r.texels == 32 + 32 + 5
    assert r.totals().texels == r.texels
    s = cachesim.HierarchyStream(cfg, t.info, 1)
    s.feed(t)
    assert s.finish().texels == r.texels


@pytest.mark.parametrize("spec", ["N:4:128:2,L:B:m:W:L", "N:16:128:2,F:B:m:W:P", "N:4:128:2,L:B:m:W:X"])
def test_l2_matches_simulate_cache(spec):
    # one warp, one lane active per row in program order: the L2 sees exactly the line stream
    rng = np.random.default_rng(3)
    addrs = (rng.integers(0, 1 << 15, 400) // 4 * 4).astype(np.uint64)
    rows = [(0, 0, s, 0, 0, 4, np.full(32, a, np.uint64), -1) for s, a in enumerate(addrs)]
    r = cachesim.simulate_hierarchy(
        make_trace(rows, 1, 1), config(sms=1, l2=spec, l2_slice_bytes=1 << 20), blocks_per_sm=1
    )
    hits = cachesim.simulate_cache(spec, addrs)
    assert r.stat("l2", "global") == (400, int(hits.sum()), int((~hits).sum()))
    np.testing.assert_array_equal(r.dram_addr, (addrs[~hits] // 128) * 128)


def test_l2_slices():
    # 4 slices interleaved every 256 B: lines 0x000 and 0x400 are in slice 0, 0x100 in slice 1;
    # each slice is 1 set x 1 way, so 0x000 and 0x400 evict each other and 0x100 does not
    a = [0x000, 0x100, 0x400, 0x100, 0x000]
    rows = [(0, 0, s, 0, 0, 4, np.full(32, x, np.uint64), -1) for s, x in enumerate(a)]
    r = cachesim.simulate_hierarchy(
        make_trace(rows, 1, 1), config(sms=1, l2="N:1:128:1,L:R:m:N:L", l2_slices=4), blocks_per_sm=1
    )
    assert r.stat("l2", "global") == (5, 1, 4)
    assert r.dram_addr.tolist() == [0x000, 0x100, 0x400, 0x000]


def test_many_rows_grow_buffers():
    # more DRAM requests than the first buffer holds
    n = 3000
    rows = [(0, 0, s, 0, 0, 4, lanes * 128 + np.uint64(s) * 4096 * 32, -1) for s in range(n)]
    r = cachesim.simulate_hierarchy(make_trace(rows, 1, 1), config(sms=1), blocks_per_sm=1)
    assert r.dram_addr.shape == (32 * n,) and r.dram.outcome.shape == (32 * n,)
    assert r.stat("l2", "global") == (32 * n, 0, 32 * n)


def test_bad_inputs():
    rows = [(0, 0, 0, 0, 0, 4, lanes * 4, -1)]
    with pytest.raises(cachesim.HierarchyConfigError, match="^blocks_per_sm"):
        cachesim.simulate_hierarchy(make_trace(rows, 1, 1), config(), blocks_per_sm=0)
    with pytest.raises(cachesim.HierarchyConfigError, match="^l1"):
        config(l1="N:3:128:4,L:L:m:N:L")
    with pytest.raises(cachesim.HierarchyConfigError, match="^sms"):
        config(sms=0)
    with pytest.raises(cachesim.HierarchyConfigError, match="^l2_slice_bytes"):
        config(l2_slice_bytes=64)
    with pytest.raises(cachesim.HierarchyConfigError, match="^dram"):
        config(dram=None)


def test_load_store_path_cycles_by_hand():
    """The SMs' data path (32 banks x 4 B = 128 B a cycle): per warp-instruction, a cached access its sectors'
    bytes over 128 B (one cycle at least), an uncached one a cycle per line, shared a cycle per wavefront,
    constant a cycle per distinct address."""
    rows = [
        (0, 0, 0, 0, 0, 4, 0x1000 + lanes * 4, -1),  # aligned 128 B: 4 sectors -> 1 cycle
        (0, 0, 1, 0, 0, 4, 0x2004 + lanes * 4, -1),  # unaligned: 5 sectors (160 B) -> 1.25
        (0, 0, 2, 0, 0, 4, 0x3000 + (lanes % 8) * 4, -1),  # 8 lanes' worth, 1 sector -> 1 (the minimum)
        (0, 0, 3, 0, 2, 4, lanes * 8, -1),  # shared, stride-2 words: 2-way conflict -> 2
        (0, 0, 4, 0, 3, 4, np.where(lanes < 16, 0x100, 0x200), -1),  # constant, 2 addresses -> 2
        (0, 0, 5, 0, 6, 4, 0x4004 + lanes * 4, -1),  # read-only path (through the L1 here): 1.25
    ]
    t = make_trace(rows, 1, 1)
    l1 = "S:4:128:8,L:R:m:N:L"
    r = cachesim.simulate_hierarchy(t, config(l1=l1, readonly="l1", const="N:16:64:2,L:R:f:N:L"), blocks_per_sm=1)
    assert r.lsu_cycles.tolist() == [1 + 1.25 + 1, 0, 2, 2, 0, 0, 1.25]
    # no L1 for global loads (Kepler): one cycle per 128-byte line: 1, 2, 1; the L2 (128-byte lines) serves
    # their 4 + 5 + 1 sectors of 32 bytes, and the read-only load's 5 sectors the sectored L1 missed
    r = cachesim.simulate_hierarchy(t, config(l1=l1, global_in_l1=False, readonly="l1"), blocks_per_sm=1)
    assert r.lsu_cycles[0] == 1 + 2 + 1
    assert r.l2_sectors[0] == 4 + 5 + 1 and r.l2_sectors[6] == 5
    # Volta and later: the constant cache is a unit of its own, its 2 addresses take no data-path cycles;
    # the other spaces' cycles and every level's requests and hits are the same
    rc = cachesim.simulate_hierarchy(t, config(l1=l1, readonly="l1", const_on_path=False), blocks_per_sm=1)
    r = cachesim.simulate_hierarchy(t, config(l1=l1, readonly="l1"), blocks_per_sm=1)
    assert rc.lsu_cycles.tolist() == [1 + 1.25 + 1, 0, 2, 0, 0, 0, 1.25]
    assert (rc.requests == r.requests).all() and (rc.hits == r.hits).all()


def test_shared_atomics_path_cycles_by_hand():
    """Shared-memory atomics (smem_atomic_cycles 9.5, smem_atomic_lane_cycles 1 here; the H100 measured 9.39 and
    0.986): a warp-instruction on distinct words takes 9.5 cycles, each further lane on one word one more, a bank
    conflict's wavefronts where they are more; loads keep their wavefronts (one word: a broadcast)."""
    from traces.codes import ATOMIC, LOAD, REDUCTION

    rows = [
        (0, 0, 0, ATOMIC, 2, 4, lanes * 4, -1),  # 32 distinct words, conflict-free: 9.5
        (0, 0, 1, ATOMIC, 2, 4, lanes * 0 + 64, -1),  # 32 lanes on one word: 9.5 + 31 = 40.5
        (0, 0, 2, REDUCTION, 2, 4, (lanes % 4) * 4, -1),  # 8 lanes on each of 4 words: 9.5 + 7 = 16.5
        (0, 0, 3, LOAD, 2, 4, lanes * 0 + 64, -1),  # a load of one word: 1
        (0, 0, 4, ATOMIC, 2, 4, lanes * 128, -1),  # 32 words in one bank: 32 wavefronts, more than 9.5
    ]
    t = make_trace(rows, 1, 1)
    r = cachesim.simulate_hierarchy(t, config(smem_atomic_cycles=9.5, smem_atomic_lane_cycles=1.0), blocks_per_sm=1)
    assert r.lsu_cycles[2] == 9.5 + 40.5 + 16.5 + 1 + 32
    # without the GPU's figures an atomic is priced as a load: 1, 1 (broadcast), 1, 1, 32
    r0 = cachesim.simulate_hierarchy(t, config(), blocks_per_sm=1)
    assert r0.lsu_cycles[2] == 1 + 1 + 1 + 1 + 32
    with pytest.raises(cachesim.HierarchyConfigError, match="^smem_atomic_lane_cycles"):
        config(smem_atomic_lane_cycles=-1.0)


def _fold(line_index):
    """The tag stage's set by hand: the XOR of the line index's 2-bit fields (4 sets)."""
    s = 0
    while line_index:
        s ^= line_index & 3
        line_index >>= 2
    return s


def test_tag_stage_cycles_by_hand():
    """Volta and later (l1_tags_per_cycle 4): the L1's tag stage resolves 4 lines a cycle, one per set, so a warp's
    access takes at least as many cycles as the most of its lines that share a set; the stage's set of a line is the
    XOR of its index's 2-bit fields (gpu-benches' gpu-strides on the A100, A40 and H200), not the cache's index."""
    block_rows = 0x200000 + 4 * ((lanes + 1) * 4098)  # gpu-strides' 1-wide block: a lane a row, 16,392 B apart
    rows = [
        (0, 0, 0, 0, 0, 4, 0x10000 + lanes * 4096, -1),  # 32 lines 4096 B apart: 8 a set (linear index: one set, 32)
        (0, 0, 1, 0, 0, 4, 0x80000 + lanes * 128, -1),  # 32 consecutive lines: 8 a set, 32 sectors -> 8
        (0, 0, 2, 0, 0, 4, 0xC0000 + (lanes % 16) * 512, -1),  # 16 lines 512 B apart: 4 a set, 16 sectors -> 4
        (0, 0, 3, 0, 0, 4, 0x100004 + lanes * 4, -1),  # unaligned 128 B: 2 lines, 2 sets, 5 sectors -> 1.25
        (0, 0, 4, 0, 0, 4, 0x180000 + (lanes // 8) * 640, -1),  # lines 0, 5, 10, 15 past 0x3000: fields 00, 01|01,
        # 10|10, 11|11 fold to one set -> 4 (a linear index: 4 sets, 1; 4 sectors: 1)
        (0, 0, 5, 0, 0, 4, block_rows, -1),  # 32 lines in sets of 8, 7, 9, 8 -> 9 (measured 9.2; linear: 16)
    ]
    lines = sorted({int(a) // 128 for a in block_rows})
    assert len(lines) == 32 and max(Counter(_fold(x) for x in lines).values()) == 9
    assert max(Counter(x % 4 for x in lines).values()) == 16
    t = make_trace(rows, 1, 1)
    l1 = "S:4:128:64,L:R:m:N:L"
    r = cachesim.simulate_hierarchy(t, config(l1=l1, l1_tags_per_cycle=4), blocks_per_sm=1)
    assert r.lsu_cycles[0] == 8 + 8 + 4 + 1.25 + 4 + 9
    # without the tag stage's bound (Kepler, Maxwell, Pascal here): the sectors' bytes over 128 B a cycle
    r0 = cachesim.simulate_hierarchy(t, config(l1=l1), blocks_per_sm=1)
    assert r0.lsu_cycles[0] == 8 + 8 + 4 + 1.25 + 1 + 8
    # one tag a cycle: each line its own cycle
    r1 = cachesim.simulate_hierarchy(t, config(l1=l1, l1_tags_per_cycle=1), blocks_per_sm=1)
    assert r1.lsu_cycles[0] == 32 + 32 + 16 + 2 + 4 + 32
    for bad in (-1, 3, 6):
        with pytest.raises(cachesim.HierarchyConfigError, match="^l1_tags_per_cycle"):
            config(l1_tags_per_cycle=bad)


def test_l1_data_banks_by_hand():
    """Volta and later (l1_data_banks): the L1's data array is the shared memory's 32 banks of 4 bytes, so a warp's
    cached load takes at least as many cycles as the most distinct words one bank serves, whatever its sectors and
    tags say. Lines 1,152 B apart (9 lines) hold their words in the same banks; the tag stage puts the two rows'
    lines (indices 512 and 521) in sets 2 and 1 and the four rows' (1,024, 1,033, 1,042, 1,051) in 1, 2, 2, 1."""
    two_rows = 0x10000 + (lanes % 16) * 4 + (lanes // 16) * 1152
    four_rows = 0x20000 + (lanes % 8) * 4 + (lanes // 8) * 1152
    rows = [
        (0, 0, 0, 0, 0, 4, two_rows, -1),  # 16-wide block, 2 rows: banks 0-15 twice -> 2 (4 sectors: 1)
        (0, 0, 1, 0, 0, 4, 0x40004 + lanes * 4, -1),  # unaligned 128 B: 2 lines, every bank once -> 5 sectors, 1.25
        (0, 0, 2, 0, 0, 4, four_rows, -1),  # 8-wide, 4 rows: banks 0-7 four times -> 4 (4 sectors: 1)
        (0, 0, 3, 0, 0, 8, 0x60000 + lanes * 8, -1),  # 256 B of doubles: 2 words a bank -> 2 (8 sectors: 2)
        (0, 0, 4, 0, 0, 4, 0x80000 + lanes * 4096, -1),  # 32 lines in one bank -> 32 (tags: 8)
    ]
    t = make_trace(rows, 1, 1)
    l1 = "S:4:128:64,L:R:m:N:L"
    r = cachesim.simulate_hierarchy(t, config(l1=l1, l1_tags_per_cycle=4, l1_data_banks=True), blocks_per_sm=1)
    assert r.lsu_cycles[0] == 2 + 1.25 + 4 + 2 + 32
    # counted as Nsight Compute's global-load data bank conflicts: each load's degree less one
    assert r.l1_bank_conflicts == r.totals().l1_bank_conflicts == 1 + 0 + 3 + 1 + 31
    s = cachesim.HierarchyStream(config(l1=l1, l1_tags_per_cycle=4, l1_data_banks=True), t.info, 1)
    s.feed(t)
    assert s.finish().l1_bank_conflicts == r.l1_bank_conflicts
    # a separate L1 (Maxwell and Pascal here): sectors and tags only (four rows: 2 lines in sets 1 and 2 -> 2; the 32
    # lines 4096 B apart: 8 a set)
    r0 = cachesim.simulate_hierarchy(t, config(l1=l1, l1_tags_per_cycle=4), blocks_per_sm=1)
    assert r0.lsu_cycles[0] == 1 + 1.25 + 2 + 2 + 8
    assert [_fold(x) for x in (512, 521)] == [2, 1] and [_fold(x) for x in (1024, 1033, 1042, 1051)] == [1, 2, 2, 1]
    assert r0.l1_bank_conflicts == 0
    # the same loads through the read-only path served by the L1 (__ldg from Volta on) pay the same
    ro = make_trace([(c, w, q, op, READONLY, wd, a, o) for (c, w, q, op, _, wd, a, o) in rows], 1, 1)
    cfg = config(l1=l1, l1_tags_per_cycle=4, l1_data_banks=True, readonly="l1")
    assert cachesim.simulate_hierarchy(ro, cfg, blocks_per_sm=1).lsu_cycles[READONLY] == 2 + 1.25 + 4 + 2 + 32
    with pytest.raises(cachesim.HierarchyConfigError, match="^l1_data_banks"):
        config(l1_data_banks=1)


def test_writable_and_read_only_columns_share_one_kernel():
    # a trace read from Parquet has read-only columns, a rewritten or staged one writable ones:
    # the kernels see read-only views either way (one numba specialisation, one cache load),
    # and the caller's arrays keep their flags
    from cachesim import _hierarchy_kernels as H

    rows = [(b, 0, s, 0, 0, 4, 0x1000 + lanes * 4 * (s + 1), -1) for b in range(3) for s in range(2)]
    writable = make_trace(rows, 3, 1)
    frozen = make_trace(rows, 3, 1)
    for name in ("cta", "warp", "seq", "op", "space", "width", "mask", "addr", "obj"):
        getattr(frozen, name).flags.writeable = False
    frozen.space.flags.writeable = True  # a mixture, as a rewritten space column over read-only ones
    cfg = config(l1="N:32:128:4,L:L:m:N:L")
    a = cachesim.simulate_hierarchy(writable, cfg, blocks_per_sm=2)
    b = cachesim.simulate_hierarchy(frozen, cfg, blocks_per_sm=2)
    for name in (
        "requests",
        "hits",
        "misses",
        "instructions",
        "transactions",
        "replays",
        "lsu_cycles",
        "l2_sectors",
        "dram_addr",
        "dram_cycle",
        "dram_obj",
        "dram_warp",
        "dram_write",
        "dram_bytes",
        "sm",
        "cycle",
    ):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.stat("l1", "global")[0] > 0
    assert len(H.walk.signatures) == 1 and len(H.schedule.signatures) == 1
    assert writable.cta.flags.writeable and not frozen.cta.flags.writeable


def _runs_reference(bits: int) -> list[tuple[int, int]]:
    """Runs of consecutive set bits of a 64-bit mask, (first, last), lowest first: the plain-Python reference."""
    out, b = [], 0
    while b < 64:
        if bits >> b & 1:
            e = b
            while e + 1 < 64 and bits >> (e + 1) & 1:
                e += 1
            out.append((b, e))
            b = e + 1
        else:
            b += 1
    return out


@given(st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 1, 0xF, 0xF0, 0b1011, 2**63, 2**64 - 1, 2**63 + 1])))
@settings(max_examples=300, deadline=None)
def test_next_run_finds_each_run_of_sectors(bits):
    """The walk's runs of consecutive sectors (each one request) are those of the reference, in order,
    up to the top bit (a full 64-bit mask is one run)."""
    from cachesim._hierarchy_kernels import _next_run

    got, b = [], 0
    while True:
        first, last = _next_run(np.uint64(bits), b)
        if first < 0:
            break
        got.append((int(first), int(last)))
        b = last + 1
    assert got == _runs_reference(bits)


def _schedule_reference(cta, warp, seq, n_ctas, n_sms, blocks_per_sm, wpb):
    """The schedule's policy row by row in plain Python (see ``_hierarchy_kernels.schedule``)."""
    per_wave = n_sms * blocks_per_sm
    sm, slot, wave = [], [], []
    for b, w_, s in zip(cta.tolist(), warp.tolist(), seq.tolist()):
        w, j = divmod(b, per_wave)
        in_wave = min(per_wave, n_ctas - w * per_wave)
        resident = -(-(in_wave - j % n_sms) // n_sms) * wpb
        sm.append(j % n_sms)
        slot.append(s * resident + (j // n_sms) * wpb + w_)
        wave.append(w)
    n_waves = -(-n_ctas // per_wave)
    length = [0] * n_waves
    for s, w in zip(slot, wave):
        length[w] = max(length[w], s + 1)
    start = [sum(length[:w]) for w in range(n_waves)]
    return np.array(sm), np.array([s + start[w] for s, w in zip(slot, wave)])


@given(
    st.integers(1, 40),
    st.integers(1, 5),
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(0, 2**32 - 1),
    st.booleans(),
)
@settings(max_examples=100, deadline=None)
def test_schedule_against_reference(n_ctas, n_sms, blocks_per_sm, wpb, seed, block_by_block):
    """SM and slot of every row as the plain-Python policy gives them, whether the rows come block by block
    (the kernel works a block out once) or in any order."""
    from cachesim import _hierarchy_kernels as H

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    cta = rng.integers(0, n_ctas, n).astype(np.int32)
    if block_by_block:
        cta.sort()
    warp = rng.integers(0, wpb, n).astype(np.int32)
    seq = rng.integers(0, 50, n).astype(np.int64)
    for a in (cta, warp, seq):
        a.flags.writeable = False  # as simulate_hierarchy passes a trace's columns: one specialisation
    sm, slot = np.empty(n, np.int32), np.empty(n, np.int64)
    H.schedule(cta, warp, seq, n_ctas, n_sms, blocks_per_sm, wpb, sm, slot)
    want_sm, want_slot = _schedule_reference(cta, warp, seq, n_ctas, n_sms, blocks_per_sm, wpb)
    np.testing.assert_array_equal(sm, want_sm)
    np.testing.assert_array_equal(slot, want_slot)
