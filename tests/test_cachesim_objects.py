"""The hierarchy's requests, hits and misses per (level, object) (issue 34): worked by hand for two objects
sharing one cache, and summed over the objects equal to the per-(level, space) counts on generated traces."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import cachesim
import traces

DRAM = cachesim.DramConfig(
    352.0, 742.0, 1008.0,
    row_bits=(14, 15, 16, 17, 18, 19, 20, 21, 30, 31, 32), column_bits=(8, 9, 10, 11, 12, 13), byte_bits=(0, 1, 2),
)  # fmt: skip
lanes = np.arange(32, dtype=np.uint64)
OBJECTS = tuple(
    traces.ObjectInfo(i, n, "global", 0x10000 * (i + 1), 0x10000, 4, None, True) for i, n in enumerate("ABC")
)


def make_trace(rows, ctas=1, wpb=1, objects=OBJECTS):
    """rows: (cta, warp, seq, op, space, lane addresses (32), obj); 4-byte lanes, all active."""
    n = len(rows)

    def col(k, dt):
        return np.array([r[k] for r in rows], dtype=dt)

    info = traces.KernelInfo(
        kernel="t", grid=(ctas, 1, 1), block=(32 * wpb, 1, 1), objects=tuple(objects),
        instructions=traces.Instructions(executed=n, warps=ctas * wpb),
    )  # fmt: skip
    addr = np.array([np.asarray(r[5], dtype=np.uint64) for r in rows], dtype=np.uint64).reshape(n, 32)
    return traces.Trace(
        cta=col(0, np.int32), warp=col(1, np.int32), seq=col(2, np.int64), pc=np.zeros(n, np.int32),
        op=col(3, np.int8), space=col(4, np.int8), width=np.full(n, 4, np.int8), mask=np.full(n, 0xFFFFFFFF, np.uint32),
        addr=addr, obj=col(6, np.int16), info=info,
    )  # fmt: skip


def config(**kw):
    base = {"sms": 2, "l2": "N:64:128:16,L:B:m:W:L", "l2_slices": 1, "dram": DRAM, "l2_latency": 100.0,
            "issue_cycles": 1.0}  # fmt: skip
    base.update(kw)
    return cachesim.HierarchyConfig(**base)


def test_two_objects_sharing_a_cache_by_hand():
    # A (id 0) read once per 128-byte line, 4 lines: 4 misses. B (id 1) read 3 times on one line: 1 miss, 2 hits.
    # One row of no object (-1), its own line: 1 miss in the last column. The per-space counts pool all three.
    a = [(0, 0, s, 0, 0, 0x10000 + 128 * s + lanes * 4, 0) for s in range(4)]
    b = [(0, 0, 4 + s, 0, 0, 0x20000 + lanes * 4, 1) for s in range(3)]
    r = cachesim.simulate_hierarchy(make_trace(a + b + [(0, 0, 7, 0, 0, 0x40000 + lanes * 4, -1)]), config(),
                                    blocks_per_sm=1)  # fmt: skip
    l2 = cachesim.LEVELS.index("l2")
    assert r.obj_requests.shape == (len(cachesim.LEVELS), len(OBJECTS) + 1)
    assert r.obj_stat("l2", 0) == (4, 0, 4)
    assert r.obj_stat("l2", 1) == (3, 2, 1)
    assert r.obj_stat("l2", 2) == (0, 0, 0)
    assert r.obj_stat("l2", -1) == (1, 0, 1)
    assert r.stat("l2", "global") == (8, 2, 6)
    assert r.obj_requests[l2].sum() == 8 and not r.obj_requests[:l2].any()
    # with an L1 in front (global loads cached there): the same at the L1, and only the L1's misses reach the L2
    r = cachesim.simulate_hierarchy(make_trace(a + b), config(l1="N:32:128:4,L:L:m:N:L"), blocks_per_sm=1)
    assert r.obj_stat("l1", 0) == (4, 0, 4) and r.obj_stat("l1", 1) == (3, 2, 1)
    assert r.obj_stat("l2", 0) == (4, 0, 4) and r.obj_stat("l2", 1) == (1, 0, 1)
    t = r.totals()
    assert t.obj_stat("l1", 1) == (3, 2, 1) and t.obj_stat("l2", 0) == (4, 0, 4)


def test_write_backs_of_evicted_lines_count_for_no_object():
    # a write-back L2 of 1 set x 1 way: A's store allocates, B's read evicts it dirty; the write-back reaches no
    # further level here, but a write-back L1 in front sends its dirty line to the L2 as a request of no object
    rows = [(0, 0, 0, 1, 1, 0x10000 + lanes * 4, 0), (0, 0, 1, 0, 1, 0x10000 + 0x1000 + lanes * 4, 1)]
    r = cachesim.simulate_hierarchy(make_trace(rows), config(l1="N:1:128:1,L:B:m:W:L"), blocks_per_sm=1)
    assert r.obj_stat("l1", 0) == (1, 0, 1) and r.obj_stat("l1", 1) == (1, 0, 1)
    assert r.obj_stat("l2", -1)[0] == 1  # the evicted dirty line of A, written back
    for k in ("requests", "hits", "misses"):
        assert (getattr(r, f"obj_{k}").sum(axis=1) == getattr(r, k).sum(axis=1)).all()


SPACES = (0, 1, 3, 4, 6)  # global, local, constant, texture1d, readonly


@st.composite
def generated(draw):
    ctas, wpb = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    n = draw(st.integers(1, 60))
    rows = []
    for i in range(n):
        sp = draw(st.sampled_from(SPACES))
        op = draw(st.integers(0, 3)) if sp in (0, 1) else 0
        if sp == 1:
            op = min(op, 1)  # local: loads and stores
        obj = draw(st.integers(-1, 3))  # 3: an id beyond the table, counted with no object
        base = draw(st.integers(0, 63)) * 64
        stride = draw(st.sampled_from([0, 4, 8, 128]))
        rows.append((i % ctas, (i // ctas) % wpb, i, op, sp, 0x10000 + base + lanes * stride, obj))
    return rows, ctas, wpb


@given(generated(), st.booleans())
@settings(max_examples=40, deadline=None)
def test_objects_add_up_to_the_spaces(case, write_back):
    rows, ctas, wpb = case
    pol = "L:B:m:W:L" if write_back else "L:T:m:N:L"
    cfg = config(l1=f"N:2:128:2,{pol}", tex="N:2:128:2,L:R:m:N:L", const="N:2:64:2,L:R:f:N:L",
                 l2=f"N:2:128:2,{pol}")  # fmt: skip
    t = make_trace(rows, ctas, wpb)
    r = cachesim.simulate_hierarchy(t, cfg, blocks_per_sm=2)
    for k in ("requests", "hits", "misses"):
        per_obj, per_space = getattr(r, f"obj_{k}"), getattr(r, k)
        assert (per_obj.sum(axis=1) == per_space.sum(axis=1)).all(), k
    assert (r.obj_requests == r.obj_hits + r.obj_misses).all()
    # rows of one object only ever count for it or for no object (write-backs)
    for o in range(len(OBJECTS)):
        if not any(row[6] == o for row in rows):
            assert not r.obj_requests[:, o].any()
    # the streamed walk counts the same
    s = cachesim.HierarchyStream(cfg, t.info, blocks_per_sm=2)
    s.feed(t)
    h = s.finish()
    for k in ("obj_requests", "obj_hits", "obj_misses"):
        assert (getattr(h, k) == getattr(r, k)).all(), k
