"""The Python API: placement.rank / placement.evaluate, their results, and the CLI's JSON coming from them."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import placement
from placement.uncertainty import MODEL_RATIO_ERROR
import traces
from placement.attribution import accesses, addressing
from placement.commands._output import _default
from placement.gpu import get_gpu
from placement.evaluate_whole import WholeTraceEvaluator
from placement.placements import parse_placement
from placement.search import count_legal
from placement.staging import StagingFacts

from conftest import ROOT

MATMUL = ROOT / "configs" / "examples" / "matmul.parquet"
VECADD = ROOT / "configs" / "examples" / "vecadd.parquet"


def _json(doc):
    return json.loads(json.dumps(doc, default=_default))


def test_import_placement_stays_light():
    code = ("import sys, placement; placement.rank; placement.evaluate; "
            "print(sorted(m for m in ('numba', 'ortools', 'pandas', 'matplotlib', 'pyarrow') if m in sys.modules))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"


@pytest.fixture(scope="module")
def ranked():
    return placement.rank(MATMUL, "k80", top=5)


def test_rank_result_matches_the_command(ranked, run_cli):
    code, out, err = run_cli("rank", MATMUL, "--gpu", "k80", "--top", "5", "--json", "--workers", "1")
    assert code == 0, err
    assert json.loads(out) == _json(ranked.to_dict())


def test_rank_says_what_is_legal_and_why_not(ranked):
    trace = traces.read(MATMUL)
    k80 = get_gpu("k80")
    d = ranked.to_dict()
    assert d["legal_placements"] == count_legal(trace.info, k80, staging=StagingFacts(trace)) == 128
    # P is written: only G and S/G; M, N (64 x 64 floats, 16 KiB) may go anywhere
    assert set(d["excluded"]) == {"P"}
    assert set(d["excluded"]["P"]) == {"T", "2T", "C", "R", "S/T", "S/R"}
    assert d["candidates"] == 8 * 8 * 2
    assert d["model_ratio_error"] == MODEL_RATIO_ERROR and d["uncertainty"]
    assert d["overlap_trained"] is False
    times = [r["time_ns"] for r in d["ranking"]]
    assert times == sorted(times) and [r["rank"] for r in d["ranking"]] == [1, 2, 3, 4, 5]
    for r in d["ranking"]:
        assert r["speedup"] == pytest.approx(d["sample"]["time_ns"] / r["time_ns"])
        assert r["within_model_error"] == (abs(max(r["speedup"], 1 / r["speedup"]) - 1) <= MODEL_RATIO_ERROR)


def test_rank_frame(ranked):
    f = ranked.to_frame()
    assert list(f["rank"][:5]) == [1, 2, 3, 4, 5] and f["moved"].iloc[-1] == "sample"
    assert f["placement"].iloc[-1] == "M=G,N=G,P=G" and f["moved"].iloc[0] == ranked.ranking[0].label
    assert len(f) == 6 and f["rank"].isna().iloc[-1]  # the sample is not among the best 5 here
    assert f["speedup"].iloc[0] == pytest.approx(ranked.ranking[0].speedup)
    assert f["time_ns"].iloc[-1] == pytest.approx(ranked.sample.time_ns)


def test_rank_text_reads_like_a_decision(ranked):
    text = ranked.text()
    assert "128 legal placements" in text and "evaluated exactly" in text
    assert "P not in T, 2T, C, R, S/T, S/R: P is written by the kernel" in text
    assert "placement train MEASURED.csv --gpu k80" in text
    assert "Why #1" in text and "add --hints" in text


def test_evaluate_takes_strings_mappings_and_objects():
    trace, gpu = traces.read(MATMUL), get_gpu("k80")
    a = placement.evaluate(MATMUL, "k80", "M=C,N=R")
    b = placement.evaluate(trace, gpu, {"M": "constant", "N": "readonly"})
    assert a.to_dict() == b.to_dict()
    assert a.target.placement == {"M": "C", "N": "R", "P": "G"} and a.target.label == "M=C,N=R"
    f = a.to_frame()
    assert list(f.index) == ["sample", "target"] and f.loc["target", "time_ns"] == pytest.approx(a.time_ns)
    with pytest.raises(TypeError, match="trace: expected a path"):
        placement.evaluate(3, "k80")
    with pytest.raises(traces.InputError, match="no object 'Q'"):
        placement.evaluate(MATMUL, "k80", "Q=C")


def test_evaluate_command_prints_the_result(run_cli):
    code, out, err = run_cli("evaluate", MATMUL, "--gpu", "k80", "--place", "M=C,N=R", "--json")
    assert code == 0, err
    assert json.loads(out) == _json(placement.evaluate(MATMUL, "k80", "M=C,N=R").to_dict())


def test_per_object_addressing_adds_up_to_the_kernel_delta():
    trace = traces.read(MATMUL)
    ev = WholeTraceEvaluator(trace, get_gpu("k80"))
    for text in ("M=C", "M=2T,N=S/T", "M=S,N=S,P=S", "N=R,P=S"):
        p = parse_placement(text, trace.info)
        per = addressing(trace, p, ev.cost, ev.context)
        assert sum(per.values()) == ev.evaluate(p).target.addressing_delta, text


def test_accesses_by_hand():
    acc = accesses(traces.read(MATMUL))
    # 128 warps, each reads M and N 64 times (one k each) and writes P once
    assert (acc["M"].loads, acc["N"].loads, acc["P"].stores, acc["P"].loads) == (8192, 8192, 128, 0)


def test_vecadd_texture_reason_in_a_developers_words():
    e = placement.evaluate(VECADD, "k80", "a=T")
    (a,) = e.target.explanation.objects
    # Kepler float: G 2 -> T 0 addressing instructions per load (Huang & Li Sec. III-B); 2,048 warp loads of a
    assert (a.object, a.before, a.after) == ("a", "G", "T")
    assert (
        "2,048 warp reads" in a.facts and "4,096 fewer instructions to compute its addresses (2 per access)" in a.facts
    )
    assert e.target.within_model_error
    assert "within the model's median error" in e.text()


def test_vecadd_ranking_says_nothing_beats_the_sample():
    r = placement.rank(VECADD, "k80", top=3)
    (note,) = r.uncertainty()
    # on the K80 nothing is predicted faster at all (a write of c no longer fetches its line from DRAM first)
    assert "The sample placement is already the best" in note and "keep it" in note


def test_staged_reason_names_tile_and_windows():
    e = placement.evaluate(MATMUL, "k80", "M=S,N=S;windows=1")
    m, n = e.target.explanation.objects
    # block (bx, by) of 16 x 16 threads reads rows 16 by .. 16 by + 15 of M, all 64 columns: in one window, a 16 x 64
    # tile
    assert m.facts[0].startswith("staged in shared memory: a tile of 16 x 64 elements (4 KiB) per block, 1 window")
    assert n.facts[0].startswith("staged in shared memory: a tile of 64 x 16 elements (4 KiB) per block, 1 window")
    assert any("__syncthreads()" in k for k in e.target.explanation.kernel)
    l2 = [
        sum(c["requests"] for k, c in t.caches.items() if k.startswith("l2."))
        for t in (e.sample.evaluation.target, e.target.evaluation.target)
    ]
    assert f"L2 lookups {l2[0]:,} -> {l2[1]:,}" in "; ".join(e.target.explanation.kernel) and l2[1] < l2[0]
    assert e.target.evaluation.target.staging["tiles"]["M"] == {
        "bytes": 4096,
        "pitch": 64,
        "pad": 0,
    }  # ;windows=K: unpadded
    assert np.isclose(e.speedup, e.sample.time_ns / e.time_ns)


def test_placements_illegal_only_together_are_counted():
    from test_search import _kernel_with

    # two 40,000-byte read-only objects: each fits the 64 KiB constant bank alone, not both
    r = placement.rank(_kernel_with([(40000, False, False), (40000, False, False)]), "k80", top=3)
    assert r.candidates == 7 * 7 and r.legal_placements == 48
    assert (
        "48 legal placements (the other 1 of the 49 the per-object rules allow break a rule only together" in r.text()
    )
