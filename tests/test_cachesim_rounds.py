"""The walk's rounds of long-latency loads (``cachesim.simulate_hierarchy(..., mlp=)``): worked by hand, the
stream against the whole trace, and properties that must hold."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cachesim_hierarchy import config, lanes, make_trace

import cachesim
import traces
from traces.codes import GLOBAL, LOAD, SHARED, STORE

L1 = "N:32:128:4,L:L:m:N:L"


def _rounds(rows, ctas, wpb, mlp, bps=1, **kw):
    r = cachesim.simulate_hierarchy(make_trace(rows, ctas, wpb), config(sms=1, **kw), blocks_per_sm=bps, mlp=mlp)
    return r


def test_same_round_hit_waits_for_the_fill():
    # one block of two warps on one SM, each loading line A at seq 0 and again at seq 1. Slots (2 resident warps):
    # warp 0 seq 0 -> 0, warp 1 seq 0 -> 1, warp 0 seq 1 -> 2, warp 1 seq 1 -> 3.
    a = 0x1000 + lanes * 4
    rows = [(0, w, s, LOAD, GLOBAL, 4, a, -1) for w in (0, 1) for s in (0, 1)]
    # MLP 1: four rounds. Warp 0's first misses (slow); warp 1's first hits a line filled at slot 0, within its round's
    # turn (slots 0-1): still in flight, slow. The second rounds hit lines filled a turn before: fast.
    r = _rounds(rows, 1, 2, 1.0, l1=L1)
    assert r.stat("l1", "global") == (4, 3, 1)  # the caches' counts do not change
    assert (r.rounds, r.slow_rounds) == (4, 2)
    # MLP 2: each warp's two loads are one round, and both rounds wait on the L2
    r = _rounds(rows, 1, 2, 2.0, l1=L1)
    assert (r.rounds, r.slow_rounds) == (2, 2)
    # no MLP: no rounds
    r = _rounds(rows, 1, 2, 0.0, l1=L1)
    assert (r.rounds, r.slow_rounds) == (0, 0)
    # no L1: every round goes to the L2
    r = _rounds(rows, 1, 2, 1.0)
    assert (r.rounds, r.slow_rounds) == (4, 4)


def test_round_sizes_average_the_mlp():
    # one warp, 10 loads of one line: rounds of floor((r + 1) 2.5) - floor(r 2.5) = 2, 3, 2, 3 loads
    a = 0x1000 + lanes * 4
    rows = [(0, 0, s, LOAD, GLOBAL, 4, a, -1) for s in range(10)]
    r = _rounds(rows, 1, 1, 2.5, l1=L1)
    assert (r.rounds, r.slow_rounds) == (4, 1)  # only the first round misses
    r = _rounds(rows, 1, 1, 0.5, l1=L1)  # below 1: one load a round
    assert (r.rounds, r.slow_rounds) == (10, 1)


def test_a_staging_copy_makes_its_own_rounds():
    # Objects 0 and 1 (global), each staged by a copy: an element's load, then its store to shared memory.
    objs = (
        traces.ObjectInfo(0, "m", "global", 0x1000, 0x1000, 4),
        traces.ObjectInfo(1, "n", "global", 0x2000, 0x1000, 4),
    )
    a, b, sh = 0x1000 + lanes * 4, 0x2000 + lanes * 4, lanes * 4

    def walk(spec, mlp=4.0):
        rows = [(0, 0, s, op, space, 4, addr, o) for s, (op, space, addr, o) in enumerate(spec)]
        t = make_trace(rows, 1, 1, objs)
        return cachesim.simulate_hierarchy(t, config(sms=1, l1=L1), blocks_per_sm=1, mlp=mlp)

    ld_m, st_m = (LOAD, GLOBAL, a, 0), (STORE, SHARED, sh, 0)
    ld_n, st_n = (LOAD, GLOBAL, b, 1), (STORE, SHARED, sh + 128, 1)
    rd = (LOAD, SHARED, sh, 0)
    # the textbook tile: M's and N's element loaded, both stored, then read after the barrier: one round, a copy's.
    # The first shared load after the stores (the barrier) closes it: the next tile's loads are a round of their own.
    r = walk([ld_m, st_m, ld_n, st_n, rd, (LOAD, GLOBAL, a + 128, 0), (STORE, SHARED, sh, 0), rd])
    assert (r.rounds, r.slow_rounds, r.copy_rounds) == (2, 2, 2)
    # a copy loop over one object's elements: each load after a store of the same object opens a round
    r = walk([ld_m, st_m, (LOAD, GLOBAL, a + 128, 0), (STORE, SHARED, sh + 128, 0), rd])
    assert (r.rounds, r.slow_rounds, r.copy_rounds) == (2, 2, 2)
    # loads whose values no shared store keeps: one round, slow, not a copy's; stores are not in rounds
    r = walk([ld_m, ld_n, (STORE, GLOBAL, a, 0)])
    assert (r.rounds, r.slow_rounds, r.copy_rounds) == (1, 1, 0)
    # a round of L1 hits stays fast even when a store follows it: loaded again a round later, then kept
    r = walk([ld_m, rd, ld_m, st_m], mlp=1.0)
    assert (r.rounds, r.slow_rounds, r.copy_rounds) == (2, 1, 0)


def test_a_blocks_slowest_warp_sets_its_copy_rounds():
    # Two blocks of two warps copy object 0 (a load, then its store to shared memory, one element after another):
    # block 0's warp 0 copies 3 elements, its warp 1 one; block 1's warps 2 each. Every load misses (no L1), so
    # every copy round is slow: 3 + 1 + 2 + 2 = 8 in all, and the blocks' barriers wait for 3 and 2 of them.
    objs = (traces.ObjectInfo(0, "m", "global", 0x1000, 0x4000, 4),)
    rows = []
    for cta, warp, n in ((0, 0, 3), (0, 1, 1), (1, 0, 2), (1, 1, 2)):
        base = 0x1000 + (cta * 4 + warp * 2) * 0x400
        for e in range(n):
            rows += [(cta, warp, 2 * e, LOAD, GLOBAL, 4, base + e * 128 + lanes * 4, 0),
                     (cta, warp, 2 * e + 1, STORE, SHARED, 4, (warp * 4 + e) * 128 + lanes * 4, 0)]  # fmt: skip
    t = make_trace(rows, 2, 2, objs)
    for bps in (1, 2):
        r = cachesim.simulate_hierarchy(t, config(sms=1), blocks_per_sm=bps, mlp=4.0)
        assert (r.copy_rounds, r.block_copy_rounds) == (8, 3 + 2)
        s = cachesim.HierarchyStream(config(sms=1), t.info, bps, mlp=4.0)
        s.feed(t)
        assert (s.finish().copy_rounds, s.finish().block_copy_rounds) == (8, 5)


def test_bad_mlp():
    rows = [(0, 0, 0, LOAD, GLOBAL, 4, lanes * 4, -1)]
    for bad in (-1.0, "2", True, float("nan")):
        with pytest.raises(cachesim.HierarchyConfigError, match="mlp"):
            _rounds(rows, 1, 1, bad, l1=L1)


rows_st = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 1), st.sampled_from([LOAD, LOAD, STORE]),
              st.sampled_from([GLOBAL, GLOBAL, SHARED]), st.integers(0, 40)),
    min_size=1, max_size=60,
)  # fmt: skip


def _random_trace(spec):
    """Rows from (cta, warp, op, space, line) in block order, each warp's seq counting up."""
    spec = sorted(spec, key=lambda r: r[0])
    seq: dict[tuple[int, int], int] = {}
    rows = []
    for cta, warp, op, space, line in spec:
        s = seq.get((cta, warp), 0)
        seq[(cta, warp)] = s + 1
        base = line * 128 if space == GLOBAL else (line % 8) * 128
        rows.append((cta, warp, s, op, space, 4, base + lanes * 4, -1))
    return make_trace(rows, 6, 2)


@settings(max_examples=60, deadline=None)
@given(rows_st, st.sampled_from([0.5, 1.0, 1.75, 3.0, 6.281]), st.integers(1, 3), st.integers(1, 4))
def test_stream_equals_whole_and_bounds(spec, mlp, bps, group):
    t = _random_trace(spec)
    cfg = config(sms=2, l1=L1)
    whole = cachesim.simulate_hierarchy(t, cfg, blocks_per_sm=bps, mlp=mlp)
    s = cachesim.HierarchyStream(cfg, t.info, bps, mlp=mlp)
    for k in range(0, len(t), group):
        s.feed(traces.Trace(**{c: v[k : k + group] for c, v in t.columns().items()}, info=t.info, start=k))
    tot = s.finish()
    assert (tot.rounds, tot.slow_rounds, tot.copy_rounds) == (whole.rounds, whole.slow_rounds, whole.copy_rounds)
    assert tot.block_copy_rounds == whole.block_copy_rounds
    assert whole.copy_rounds <= whole.slow_rounds
    # a block's slowest warp has at least its warps' mean of copy rounds and at most their sum
    assert whole.copy_rounds / 2 <= whole.block_copy_rounds <= whole.copy_rounds
    loads = int(((t.op == LOAD) & (t.space == GLOBAL)).sum())
    assert 0 < whole.slow_rounds <= whole.rounds <= loads if loads else whole.rounds == 0
    if mlp <= 1.0:
        assert whole.rounds == loads  # one load a round
