"""Why a placement differs from the sample (placement.explain): each object's own cache counts, T_comp's parts."""

from __future__ import annotations

import pytest

import placement
from placement import units

from conftest import ROOT

CONV1D = ROOT / "configs" / "examples" / "conv1d.parquet"


@pytest.fixture(scope="module")
def conv1d_textures():
    return placement.evaluate(CONV1D, "k80", "in=T,mask=T")


def test_objects_sharing_a_cache_get_their_own_counts(conv1d_textures):
    # issue 34: in and mask both in the texture cache got the same line (the pooled hits), then a split by warp
    # accesses (50 % each). cachesim counts requests and hits per object now: in (16 K elements, streamed) and
    # mask (7 elements, read by every warp) each get their own, adding up to the texture cache's 10,240 requests
    e = conv1d_textures
    t = e.target.evaluation.target
    tex = t.caches["tex.texture1d"]
    assert tex["requests"] == 10240
    own = {n: t.object_caches[n]["tex"] for n in ("in", "mask")}
    for k in ("requests", "hits", "misses"):
        assert own["in"][k] + own["mask"][k] == tex[k]
    assert own["mask"]["requests"] == 3584  # one line per warp read: 7 floats in one 128-byte texture line
    assert own["mask"]["hits"] / own["mask"]["requests"] > 0.99
    assert own["in"]["hits"] / own["in"]["requests"] < 0.95
    i, m = e.target.explanation.objects
    assert (i.object, m.object) == ("in", "mask") and i.facts != m.facts
    for o, other in ((i, "mask"), (m, "in")):
        line = next(f for f in o.facts if f.startswith("texture cache"))
        c = own[o.object]
        assert line.startswith(f"texture cache {units.share(c['hits'] / c['requests'])} hits of {c['requests']:,} "
                               f"requests, ")  # fmt: skip
        assert (
            f"; {o.object} and {other} together: texture cache {units.share(tex['hits'] / tex['requests'])} "
            f"hits of 10,240 requests" in line
        )
        assert "warp accesses" not in line
    assert next(f for f in m.facts if f.startswith("texture cache")).startswith("texture cache 99.6 % hits of 3,584")
    # the object's counts are not in the ranking JSON's terms
    assert "object_caches" not in t.as_dict()


def test_staging_barriers_explain_a_longer_t_comp():
    # issue 34: conv1d in=S on k80 showed T_comp +201 ns beside issued instructions 51,712 -> 49,792, unexplained.
    # T_comp = max(W_parallel, T_LSU) + W_serial: the one __syncthreads() per warp the staging code adds (64
    # blocks x 8 warps = 512) costs O_sync in W_serial, more than the 1,920 fewer instructions save
    # (51,712 - 3,584 addressing + 576 copy loads + 576 shared stores + 512 barriers = 49,792).
    e = placement.evaluate(CONV1D, "k80", "in=S")
    s, t = e.sample.evaluation.target, e.target.evaluation.target
    assert (s.issued_instructions, t.issued_instructions) == (51712, 49792)
    assert s.w_serial == 0 and t.w_serial > 0 and t.t_comp > s.t_comp
    par = [max(x.w_parallel, x.t_lsu) for x in (s, t)]
    assert par[1] < par[0] and t.t_comp - s.t_comp == pytest.approx((t.w_serial - s.w_serial) + (par[1] - par[0]))
    ns = s.term_ns_per_cycle  # the launch's ns per cycle of a term: 64 blocks, 5 on the busiest of the 13 SMs
    assert s.blocks_scale == pytest.approx(5 * 13 / 64)
    line = next(k for k in e.target.explanation.kernel if k.startswith("T_comp"))
    assert line == (
        f"T_comp +{units.time_ns((t.t_comp - s.t_comp) * ns)} is W_serial +{units.time_ns(t.w_serial * ns)} (0 -> "
        f"{t.w_serial:.0f} cycles: O_sync, the 512 __syncthreads() the staging code adds, each waiting for the 8 "
        f"warps of its block) and the parallel part -{units.time_ns((par[0] - par[1]) * ns)} (max(W_parallel, "
        f"T_LSU) {par[0]:.0f} -> {par[1]:.0f} cycles: 1,920 fewer issued instructions, 51,712 -> 49,792)"
    )
    # W_serial: O_sync at Kepler's sustained bandwidth (239 ns at the peak, / 0.775), x 5 / (64 / 13) = 313.3 ns,
    # at the share of the requests reaching the L2 that go on to DRAM (hms.dram_share: the K80 caches no
    # global load in L1, so in's taps and mask reach the L2 and mostly hit): 1,026 of 4,672
    c = t.caches["l2.global"]
    assert (c["requests"], c["misses"]) == (4672, 1026)
    assert t.w_serial * ns == pytest.approx(313.29 * 1026 / 4672, rel=1e-4)
    assert "T_comp +30.2 ns is W_serial +68.8 ns" in e.text()


def test_no_t_comp_split_without_a_serial_change(conv1d_textures):
    assert not any(k.startswith("T_comp") for k in conv1d_textures.target.explanation.kernel)


def test_each_staged_object_gets_its_own_copies_counts():
    """matmul_naive 64 (block 16) on the H100, M and N staged from global: each said "the copies (with P):" and the
    whole global space's 2,304 L2 requests and 768 L2 misses. Each tile is copied once per block and window: 16
    blocks x 4 windows x 16 rows = 1,024 requests of one 64-byte row each, M's and N's alike; P's 256 are its
    stores (a 16 x 16 block's rows, 16 blocks)."""
    import traces.generators

    e = placement.evaluate(traces.generators.trace("matmul_naive", [64], [16]), "h100", "M=S/G,N=S/G")
    t = e.target.evaluation.target
    l1, l2 = t.caches["l1.global"], t.caches["l2.global"]
    own = {n: t.object_caches[n] for n in ("M", "N", "P")}
    assert own["M"]["l2"]["requests"] == own["N"]["l2"]["requests"] == 16 * 4 * 16
    assert own["P"]["l2"]["requests"] == 16 * 16
    for k in ("requests", "hits", "misses"):
        assert sum(c["l2"][k] for c in own.values()) == l2[k]
    for o in e.target.explanation.objects:
        c, others = own[o.object], {"M": "N", "N": "M"}[o.object]
        line = next(f for f in o.facts if f.startswith("the copies"))
        assert line == (
            f"the copies: L1 cache {units.share(c['l1']['hits'] / 1024)} hits of 1,024 requests, L2 cache "
            f"{units.share(c['l2']['hits'] / 1024)} hits of 1,024 requests, {c['l2']['misses']:,} L2 misses; "
            f"{o.object}, {others} and P together: L1 cache {units.share(l1['hits'] / l1['requests'])} hits of "
            f"2,304 requests, L2 cache {units.share(l2['hits'] / l2['requests'])} hits of 2,304 requests, "
            f"{l2['misses']:,} L2 misses"
        )


def test_a_change_of_the_bound_term_is_said_beside_the_term_changes():
    """matmul on the A100, #1 of `rank`: "kernel: 8.10 µs -> 6.38 µs (T_comp -406 ns, ..., T_block +2.50 µs)" read
    as terms adding up to the time, and "+2.50 µs" as a slowdown: the sample's T is T_round, the target's T_block."""
    mm = ROOT / "configs" / "examples" / "matmul.parquet"
    r = placement.rank(mm, "a100", top=1, workers=1)
    best = r.ranking[0]
    s, t = best.evaluation.sample, best.evaluation.target
    assert (s.bound, t.bound) == ("round", "block")
    line = best.explanation.kernel[0]
    assert line.startswith(f"{units.time_ns(s.time_ns)} (bound by T_round) -> {units.time_ns(t.time_ns)} (bound by "
                           "T_block); each term's change: T_comp ")  # fmt: skip
    # the same bound on both sides: the plain form
    e = placement.evaluate(CONV1D, "k80", "in=T")
    assert e.sample.evaluation.target.bound == e.target.evaluation.target.bound
    assert " (T_" in e.target.explanation.kernel[0] and "bound by" not in e.target.explanation.kernel[0]
