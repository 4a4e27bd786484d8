"""Evaluator results pinned before the rank-speed work (issue 18): every term of every placement unchanged.

``evaluator_pins.json`` holds ``Terms.as_dict()`` of the sample and of single moves, pairs
and staged placements (S/G, S/T, S/R, several objects staged together, windows) of several
generator kernels on GPUs of four architectures (Fermi, Kepler, Volta, Ampere), computed by
the code before the one-pass staging, the cached program order and the retained memory
(commit f4527de). The evaluations of the faster path must equal them exactly: every count,
every float to the last bit (no summation order changed). Regenerate only for an intended
change of the model: ``PYTHONPATH=. python tests/test_evaluator_pins.py``.
"""

from __future__ import annotations

import itertools
import json
import os
import sys

import pytest

import traces
from placement.gpu import get_gpu
from placement.evaluate_whole import WholeTraceEvaluator
from placement.placements import IllegalPlacement, Placement, is_staged
from placement.search import domains
from traces.generators import generate

PINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "evaluator_pins.json")
CASES = [
    ("conv1d", None, "k80"), ("conv1d", None, "v100"), ("matmul_tiled", [64], "a100"), ("stencil2d", None, "c2050"),
    ("histogram", None, "k80"), ("convolution_rows", None, "v100"), ("transpose", None, "k80"),
]  # fmt: skip
PER_CASE = 12
"""Placements pinned per case besides the sample: staged ones first, then the other single moves, then pairs."""


def _placements(ev: WholeTraceEvaluator) -> list[Placement]:
    dom = domains(ev.info, ev.gpu, ev.staging)
    sample = ev.sample_placement
    moves = [(n, s) for n, spaces in dom.items() for s in spaces if s != sample[n]]
    singles = [Placement(tuple((m, s if m == n else t) for m, t in sample.spaces)) for n, s in moves]
    pairs = [
        Placement(tuple((m, a[1] if m == a[0] else b[1] if m == b[0] else t) for m, t in sample.spaces))
        for a, b in itertools.combinations(moves, 2) if a[0] != b[0]
    ]  # fmt: skip
    staged = [p for p in singles + pairs if any(is_staged(s) for _, s in p.spaces)]
    out: list[Placement] = []
    for p in staged[:4] + [p for p in singles if p not in staged] + staged[4:] + pairs:
        if len(out) >= PER_CASE:
            break
        if p in out:
            continue
        try:
            ev.check(p)
        except IllegalPlacement:
            continue
        out.append(p)
    return out


def _evaluations(name, size, gpu_name) -> dict[str, dict]:
    cols, info = generate(name, size, None)
    ev = WholeTraceEvaluator(traces.Trace(**cols, info=info), get_gpu(gpu_name))
    out = {"sample": ev.sample.as_dict()}
    for p in _placements(ev):
        out[p.label(ev.sample_placement)] = ev.evaluate(p).target.as_dict()
    return json.loads(json.dumps(out))  # tuples as lists, keys as strings: the file's form


def _case_id(case) -> str:
    name, size, gpu = case
    return f"{name}{'-' + 'x'.join(map(str, size)) if size else ''}-{gpu}"


@pytest.fixture(scope="module")
def pins():
    with open(PINS) as fh:
        return json.load(fh)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_evaluations_equal_the_pinned_ones(case, pins):
    from placement.workers import retain_freed_memory

    want = pins[_case_id(case)]
    with retain_freed_memory():  # as rank evaluates them
        got = _evaluations(*case)
    assert list(got) == list(want)
    staged = [k for k in want if k != "sample" and want[k]["staging"]]
    assert staged, "every case pins staged placements"
    for label in want:
        assert got[label] == want[label], label


def main() -> None:
    out = {_case_id(c): _evaluations(*c) for c in CASES}
    with open(PINS + ".tmp", "w") as fh:
        json.dump(out, fh, indent=0, sort_keys=False)
    os.replace(PINS + ".tmp", PINS)
    print(f"wrote {PINS}: {sum(len(v) for v in out.values())} evaluations", file=sys.stderr)


if __name__ == "__main__":
    main()
