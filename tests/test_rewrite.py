"""traces.rewrite: spaces, addresses and addressing deltas of a target placement."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import traces
from traces.schema import GLOBAL, SHARED, TEXTURE1D, TEXTURE2D
from tracemaker import vecadd

# Kepler, 4-byte element (Huang & Li Sec. III-B): G 2, T 0, C 1, S 1; 2T taken as 0 here.
KEPLER_FLOAT = {"global": 2, "texture1d": 0, "texture2d": 0, "constant": 1, "shared": 1, "local": 0, "readonly": 2}


def cost_table(info):
    t = np.zeros((len(info.objects), len(traces.SPACE_NAMES)), np.int16)
    for code, name in enumerate(traces.SPACE_NAMES):
        t[:, code] = KEPLER_FLOAT[name]
    return t


def whole(ctas=2, wpb=2, mask=0xFFFFFFFF):
    cols, info = vecadd(ctas=ctas, warps_per_block=wpb, mask=mask)
    return traces.Trace(**cols, info=info)


def test_sample_as_target_changes_nothing():
    t = whole()
    r = traces.rewrite(t, {"A": "G", "B": "global"}, cost_table(t.info))
    assert r.moved == ()
    assert r.trace.addr is t.addr  # no copy when no address moves
    np.testing.assert_array_equal(r.trace.space, t.space)
    assert not r.addr_inst_delta.any()
    assert r.trace.info == t.info


def test_global_to_texture_keeps_addresses_and_saves_two_instructions():
    t = whole()
    r = traces.rewrite(t, {"A": "T", "B": "T"}, cost_table(t.info))
    assert r.moved == (0, 1)
    np.testing.assert_array_equal(r.trace.addr, t.addr)
    on_ab = t.obj < 2
    assert (r.trace.space[on_ab] == TEXTURE1D).all() and (r.trace.space[~on_ab] == GLOBAL).all()
    # 2 address instructions (IMAD + IMAD.HI.X) become 0 for each load of A and B.
    np.testing.assert_array_equal(r.addr_inst_delta, np.where(on_ab, -2, 0))
    assert [o.space for o in r.trace.info.objects] == ["texture1d", "texture1d", "global"]


def test_into_shared_gets_offsets_above_the_kernel_usage():
    t = whole()
    t = dataclasses.replace(t, info=dataclasses.replace(t.info, smem_per_block=100))
    r = traces.rewrite(t, {"B": "S"}, cost_table(t.info))
    b = r.trace.info.object("B")
    # Above the 100 bytes in use, aligned to 16: 112; the block needs 112 + 512.
    assert (b.space, b.base, b.size) == ("shared", 112, 4 * 32 * 4)
    assert r.trace.info.smem_per_block == 112 + 512
    rows = np.flatnonzero(t.obj == 1)
    assert (r.trace.space[rows] == SHARED).all()
    # warp 3's lane 5 read B[3 * 32 + 5]: offset 112 + 4 * 101
    k = rows[3]
    assert r.trace.addr[k, 5] == 112 + 4 * (3 * 32 + 5)
    assert (r.addr_inst_delta[rows] == 1 - 2).all()
    # the rewritten trace meets the contract, addresses inside the moved object included
    traces.validate(r.trace, "rewritten")


def _shared_kernel():
    """Each block writes s[tid] (a 64-float shared array) then reads G[gid]."""
    ctas, wpb = 3, 2
    s_size = 64 * 4
    objs = (
        traces.ObjectInfo(0, "G", "global", 0x1000, ctas * 64 * 4, 4, None, False),
        traces.ObjectInfo(1, "s", "shared", 0, s_size, 4, None, True),
    )
    info = traces.KernelInfo("k", (ctas, 1, 1), (64, 1, 1), objs, traces.Instructions(executed=60, warps=6),
                             smem_per_block=s_size)  # fmt: skip
    rows = []
    for c in range(ctas):
        for w in range(wpb):
            lane = np.arange(32, dtype=np.uint64)
            rows.append((c, w, 0, 1, SHARED, (w * 32 + lane) * 4, 1))
            rows.append((c, w, 3, 0, GLOBAL, 0x1000 + ((c * 64 + w * 32) + lane) * 4, 0))
    n = len(rows)
    cols = {
        "cta": np.array([r[0] for r in rows], np.int32), "warp": np.array([r[1] for r in rows], np.int32),
        "seq": np.array([r[2] for r in rows], np.int64), "pc": np.zeros(n, np.int32),
        "op": np.array([r[3] for r in rows], np.int8), "space": np.array([r[4] for r in rows], np.int8),
        "width": np.full(n, 4, np.int8), "mask": np.full(n, 0xFFFFFFFF, np.uint32),
        "addr": np.stack([r[5] for r in rows]).astype(np.uint64), "obj": np.array([r[6] for r in rows], np.int16),
    }  # fmt: skip
    traces.validate(traces.Trace(**cols, info=info))
    return traces.Trace(**cols, info=info)


def test_out_of_shared_becomes_per_block_slices_of_one_global_array():
    t = _shared_kernel()
    r = traces.rewrite(t, {"s": "G"})
    s = r.trace.info.object("s")
    # G ends at 0x1000 + 768 = 0x1300, aligned up to 256: 0x1300; 3 blocks x 256 bytes.
    assert (s.space, s.base, s.size) == ("global", 0x1300, 3 * 256)
    assert r.trace.info.smem_per_block == 0
    # block 2, warp 1, lane 3: s[35] -> g[2 * 64 + 35]
    k = np.flatnonzero((t.cta == 2) & (t.warp == 1) & (t.obj == 1))[0]
    assert r.trace.addr[k, 3] == 0x1300 + 4 * (2 * 64 + 35)
    assert r.trace.space[k] == GLOBAL
    traces.validate(r.trace, "rewritten")


def test_2d_texture_keeps_linear_addresses():
    t = whole()
    info = dataclasses.replace(
        t.info, objects=tuple(dataclasses.replace(o, shape=(4, 32)) if o.name == "A" else o for o in t.info.objects)
    )
    t = dataclasses.replace(t, info=info)
    r = traces.rewrite(t, {"A": "2T"})
    assert (r.trace.space[t.obj == 0] == TEXTURE2D).all()
    np.testing.assert_array_equal(r.trace.addr, t.addr)


def test_batches_rewrite_like_the_whole(tmp_path):
    cols, info = vecadd(ctas=4, warps_per_block=2, mask=0x00FF00FF)
    traces.write(tmp_path / "t.parquet", cols, info)
    whole_r = traces.rewrite(traces.read(tmp_path / "t.parquet"), {"A": "S", "C": "S"}, cost_table(info))
    parts = [
        traces.rewrite(b, {"A": "S", "C": "S"}, cost_table(info))
        for b in traces.iter_batches(tmp_path / "t.parquet", rows=5)
    ]
    np.testing.assert_array_equal(np.concatenate([p.trace.addr for p in parts]), whole_r.trace.addr)
    np.testing.assert_array_equal(np.concatenate([p.addr_inst_delta for p in parts]), whole_r.addr_inst_delta)
    # inactive lanes stay 0
    assert (whole_r.trace.addr[:, 8:16] == 0).all()


@pytest.mark.parametrize("target, message", [({"Z": "G"}, "does not have"), ({"A": "L1"}, "is not one of")])
def test_bad_targets(target, message):
    with pytest.raises(traces.InputError, match=message):
        traces.rewrite(whole(), target)


@pytest.mark.parametrize("name,target,staged", [
    ("matmul_tiled", {"Mds": "G", "Nds": "G"}, ()),
    ("matmul_tiled", {"M": "T"}, ("N",)),
    ("conv2d_channels", {"in": "R", "mask": "G"}, ()),
    ("stencil2d", {"data": "T", "sh": "G"}, ()),
])  # fmt: skip
def test_addr_inst_delta_is_rewrites(name, target, staged):
    """addr_inst_delta gives rewrite's per-row deltas (the same row pass, no rewritten trace) in every context:
    all rows indexed, all offset, and a random mix, with the generators' per-context cost tables."""
    from placement.gpu import get_gpu
    from placement.hms import addr_cost_table
    from traces import generators

    t = generators.trace(name)
    info = t.info
    cost = addr_cost_table(info, get_gpu("k80"))
    n = len(t)
    rng = np.random.default_rng(3)
    for context in (np.zeros(n, np.int8), np.ones(n, np.int8), rng.integers(0, 2, n).astype(np.int8)):
        want = traces.rewrite(t, target, cost, staged=staged, context=context).addr_inst_delta
        got = traces.addr_inst_delta(t, target, cost, staged=staged, context=context)
        assert got.dtype == np.int16
        np.testing.assert_array_equal(got, want)
    assert (traces.addr_inst_delta(t, target, cost, context=np.ones(n, np.int8))
            != traces.addr_inst_delta(t, target, cost)).any()  # fmt: skip  # the contexts' tables differ here


def test_a_layout_converted_once_rewrites_like_its_mapping():
    """A placement converted once (``target_layout``, as ``placements.Legality.layout`` holds it) is taken as it is:
    the same rewrite as the mapping, every column; a layout of another kernel is refused."""
    t = dataclasses.replace(whole(), info=dataclasses.replace(whole().info, smem_per_block=100))
    target = {"A": "T", "B": "S"}
    layout = traces.target_layout(t.info, target)
    by_map, by_layout = traces.rewrite(t, target, cost_table(t.info)), traces.rewrite(t, layout, cost_table(t.info))
    assert by_layout.trace.info == by_map.trace.info and by_layout.moved == by_map.moved == (0, 1)
    for col in ("space", "addr"):
        np.testing.assert_array_equal(getattr(by_layout.trace, col), getattr(by_map.trace, col))
    np.testing.assert_array_equal(by_layout.addr_inst_delta, by_map.addr_inst_delta)
    np.testing.assert_array_equal(traces.addr_inst_delta(t, layout, cost_table(t.info)), by_map.addr_inst_delta)
    other = dataclasses.replace(layout, objects=layout.objects[:2])
    with pytest.raises(ValueError, match="not those of kernel"):
        traces.rewrite(t, other)
