"""One ``placement evaluate``: the placement parsed once, checked once, converted once.

``placement.evaluate`` (what ``placement evaluate TRACE --gpu G --place ...`` calls) parses
the ``--place`` text (``placements.parse_placement``), checks the placement's legality
(``placements.check``) and converts it for the rewrite (``traces.target_layout``: spaces,
addresses and shared bytes of its unstaged objects) once each: the ``Legality`` that
``check`` returns carries the layout to ``traces.rewrite``, both the evaluation's and the
explanation's (``attribution.addressing``). The sample likewise is checked and converted
once. The functions are wrapped where the code looks them up, so a call through any module
that imported them is counted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import placement
import traces
from placement import placements as P

EXAMPLE = Path(__file__).resolve().parent.parent / "configs" / "examples" / "conv1d.parquet"


def _count(monkeypatch, fn) -> list[tuple[tuple, dict, object]]:
    """Wrap ``fn`` in every loaded module of placement and traces that holds it; (args, kwargs, result) per call."""
    calls = []

    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        calls.append((args, kwargs, out))
        return out

    for name, mod in list(sys.modules.items()):
        if mod is None or not name.split(".")[0] in ("placement", "traces"):
            continue
        for attr, value in list(vars(mod).items()):
            if value is fn:
                monkeypatch.setattr(mod, attr, wrapper)
    return calls


def _arg(call, i: int, name: str):
    args, kwargs, _ = call
    return args[i] if len(args) > i else kwargs[name]


@pytest.mark.parametrize("place", ["in=S", "in=T,mask=C"])  # staged (checked with footprints), unstaged (checked early)
def test_one_evaluate_parses_checks_and_converts_the_placement_once(monkeypatch, place):
    if not EXAMPLE.exists():
        pytest.skip(f"{EXAMPLE} not found")
    placement.evaluate(EXAMPLE, "k80", place)  # load every module the path uses before wrapping
    info = traces.read_info(EXAMPLE)
    target, sample = P.parse_placement(place, info), P.sample_placement(info)
    rewrite_mod = sys.modules["traces.rewrite"]
    parses = _count(monkeypatch, P.parse_placement)
    checks = _count(monkeypatch, P.check)
    layouts = _count(monkeypatch, rewrite_mod.target_layout)
    rewrites = _count(monkeypatch, rewrite_mod.rewrite)

    r = placement.evaluate(EXAMPLE, "k80", place)

    assert len(parses) == 1 and _arg(parses[0], 0, "text") == place
    for p in (target, sample):
        assert len([c for c in checks if _arg(c, 2, "placement") == p]) == 1, p
        assert len([c for c in layouts if dict(_arg(c, 1, "target")) == P.unstaged(p)]) == 1, p
    assert len(checks) == 2 and len(layouts) == 2
    # every rewrite (the target's evaluation, the target's and the sample's explanations) takes a layout
    # a check made, as it is: no conversion of its own
    made = [legality.layout for _, _, legality in checks]
    assert len(rewrites) == 3
    assert all(any(_arg(c, 1, "target") is m for m in made) for c in rewrites)
    assert r.target.placement == target.as_dict() and r.target.label == target.label(sample)
