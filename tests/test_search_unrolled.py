"""rank weighs each staged placement also as ``;unrolled`` (search._Runner.many) and keeps the faster, under its label."""

from __future__ import annotations

import json

import pytest

import placement
import traces
from placement.gpu import get_gpu

from conftest import ROOT

MATMUL = ROOT / "configs" / "examples" / "matmul.parquet"
A100 = get_gpu("a100")


@pytest.fixture(scope="module")
def mm():
    return traces.read(MATMUL)


@pytest.fixture(scope="module")
def ranked(mm):
    return {u: placement.rank(mm, A100, top=12, workers=1, unrolled=u) for u in (True, False)}


def _time(mm, label: str) -> float:
    return placement.evaluate(mm, A100, label).target.time_ns


def test_each_staged_row_is_the_faster_of_the_two_builds(mm, ranked):
    rows = [p for p in ranked[True].ranking if "S/" in p.label]
    assert rows
    for p in rows:
        spaces = p.label.removesuffix(";unrolled")
        rolled, unrolled = _time(mm, spaces), _time(mm, spaces + ";unrolled")
        assert p.time_ns == pytest.approx(min(rolled, unrolled), rel=1e-12)
        assert p.label.endswith(";unrolled") == (unrolled < rolled)
    # the textbook tiled matrix multiply: its compile-time loops (LDS.128 reads of M's rows, the copy's loads in
    # flight together) are faster than the hints' run-time loops, so its row is the ;unrolled build
    assert any(p.label == "M=S/G,N=S/G;unrolled" for p in rows)
    # the twins are evaluations of their own, which the summary counts apart
    n = int(ranked[True].surrogate["unrolled_twins"])
    assert n >= len(rows) and f"({n} more: the ;unrolled twins of the staged ones" in ranked[True].text()


def test_rolled_only_ranks_the_hints_loops(mm, ranked):
    rows = [p for p in ranked[False].ranking if "S/" in p.label]
    assert rows and not any("unrolled" in p.label for p in ranked[False].ranking)
    for p in rows:
        assert p.time_ns == pytest.approx(_time(mm, p.label), rel=1e-12)
    # a placement's row can only get faster when its unrolled build is weighed too
    with_twins = {p.label.removesuffix(";unrolled"): p.time_ns for p in ranked[True].ranking}
    for p in rows:
        if p.label in with_twins:
            assert with_twins[p.label] <= p.time_ns * (1 + 1e-12)


def test_the_kept_twins_hints_are_its_compile_time_copy(mm):
    r = placement.rank(mm, A100, top=3, workers=1, hints=True, exhaustive=True)
    best = r.ranking[0]
    if best.label.endswith(";unrolled"):
        assert any("#pragma unroll" in h.kernel for h in r.hints)
    else:
        assert not any("#pragma unroll" in h.kernel for h in r.hints)
    assert r.hints_incomplete == {}


def test_rolled_only_from_the_command_line(run_cli):
    code, out, err = run_cli("rank", MATMUL, "--gpu", "a100", "--rolled-only", "--json", "--workers", "1")
    assert code == 0, err
    d = json.loads(out)
    labels = [row["label"] for row in d["ranking"]]
    assert "M=S/G,N=S/G" in labels and not any("unrolled" in label for label in labels)
    assert d["surrogate"]["unrolled_twins"] == 0
