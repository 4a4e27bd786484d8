"""Why a placement differs from the sample (placement.explain): shares of a pooled cache, T_comp's parts."""

from __future__ import annotations

import pytest

import placement
import traces
from placement.attribution import ObjectAccesses
from placement.explain import explain

from conftest import ROOT

CONV1D = ROOT / "configs" / "examples" / "conv1d.parquet"


@pytest.fixture(scope="module")
def conv1d_textures():
    return placement.evaluate(CONV1D, "k80", "in=T,mask=T")


def test_objects_sharing_a_cache_get_their_own_share(conv1d_textures):
    # issue 34: in and mask both in the texture cache got the same line (the pooled hits). cachesim counts hits
    # per space, not per object: each line now says so and gives the object's part, split by its warp accesses
    e = conv1d_textures
    tex = e.target.evaluation.target.caches["tex.texture1d"]
    assert tex["requests"] == 10240
    i, m = e.target.explanation.objects
    assert (i.object, m.object) == ("in", "mask") and i.facts != m.facts
    # 3,584 warp reads each: half each
    for o, other in ((i, "mask"), (m, "in")):
        line = next(f for f in o.facts if f.startswith("texture cache"))
        assert f"for {o.object} and {other} together (the simulation counts hits per cache, not per object" in line
        assert (f"split by {o.object}'s 50 % of their warp accesses, about 5,120 of the texture cache's requests and "
                f"{round(tex['hits'] / 2):,} of its hits are {o.object}'s)") in line  # fmt: skip


def test_the_split_follows_the_warp_accesses(conv1d_textures):
    # the same evaluation with in read three times as often as mask: 3/4 and 1/4 of the 10,240 requests
    e = conv1d_textures
    s, t = e.sample.evaluation.target, e.target.evaluation.target
    info = traces.read_info(str(CONV1D))
    acc = {"in": ObjectAccesses(3 * 3584, 0, 0), "mask": ObjectAccesses(3584, 0, 0), "out": ObjectAccesses(0, 512, 0)}
    i, m = explain(info, s, t, acc, {}).objects
    hits = t.caches["tex.texture1d"]["hits"]
    assert any(f"in's 75 % of their warp accesses, about 7,680 of the texture cache's requests and "
               f"{round(hits * 0.75):,} of its hits are in's" in f for f in i.facts)  # fmt: skip
    assert any(f"mask's 25 % of their warp accesses, about 2,560 of the texture cache's requests and "
               f"{round(hits * 0.25):,} of its hits are mask's" in f for f in m.facts)  # fmt: skip


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
    ns = s.time_ns / s.cycles
    line = next(k for k in e.target.explanation.kernel if k.startswith("T_comp"))
    assert line == (
        f"T_comp +{(t.t_comp - s.t_comp) * ns:.0f} ns is W_serial +{t.w_serial * ns:.0f} ns (0 -> "
        f"{t.w_serial:.0f} cycles: O_sync, the 512 __syncthreads() the staging code adds, each waiting for the 8 "
        f"warps of its block) and the parallel part -{(par[0] - par[1]) * ns:.1f} ns (max(W_parallel, T_LSU) "
        f"{par[0]:.0f} -> {par[1]:.0f} cycles: 1,920 fewer issued instructions, 51,712 -> 49,792)"
    )
    assert "T_comp +201 ns is W_serial +239 ns" in e.text()


def test_no_t_comp_split_without_a_serial_change(conv1d_textures):
    assert not any(k.startswith("T_comp") for k in conv1d_textures.target.explanation.kernel)
