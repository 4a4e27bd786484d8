"""StreamEvaluator's ``early`` placements: unstaged targets evaluated in the first read of the file (the
one that finds the access contexts) give what the read after it gives and what the whole trace gives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traces
from placement import attribution, evaluate_stream
from placement.gpu import get_gpu
from placement.evaluate_stream import StreamEvaluator
from placement.evaluate_whole import WholeTraceEvaluator
from placement.placements import IllegalPlacement, parse_placement
from expect import close
from traces import generators
from traces.context import CONTEXTS, OFFSET

CASES = [  # each with objects whose accesses have OFFSET contexts, and a placement whose deltas depend on them
    ("matmul_tiled", "k80", ["Mds=G,Nds=G", "M=T", "N=2T"]),
    ("conv2d_channels", "k80", ["in=T", "mask=C", "in=R,mask=G"]),
    ("transpose", "k80", ["idata=T", "idata=R"]),
    ("stencil2d", "v100", ["data=T", "data=R,sh=G"]),
    ("vecadd", "k80", ["a=T,b=T", "b=R"]),
]


def _file(tmp_path, name):
    cols, info = generators.generate(name)
    path = tmp_path / f"{name}.parquet"
    traces.atomic_write_table(traces.to_table(cols, info), str(path), row_group_rows=1000)
    return path, info


@pytest.mark.parametrize("name,gpu,places", CASES)
def test_early_equals_second_read_and_whole(tmp_path, name, gpu, places):
    """Early: one read in all; every term equal to the second read's exactly (the same sums in the same order)
    and to the whole trace's (counts exactly, times to 1e-12 relative: the queues' variances are summed in
    another order); the sample and the per-object addressing instructions alike."""
    path, info = _file(tmp_path, name)
    g = get_gpu(gpu)
    whole = WholeTraceEvaluator(traces.read(path), g)
    ps = [parse_placement(text, info) for text in places]
    early = StreamEvaluator(path, g, rows=1000, early=ps)
    assert early.passes == 1
    late = StreamEvaluator(path, g, rows=1000)
    assert early.sample.as_dict() == late.sample.as_dict()
    got = early.evaluate_many(ps)
    assert early.passes == 1 and early.evaluations == len(ps)
    want = late.evaluate_many(ps)
    assert late.passes == 2
    indexed_only = []
    for p, e, w in zip(ps, got, want):
        assert e.as_dict() == w.as_dict(), p
        close(e.as_dict(), whole.evaluate(p).as_dict(), str(p))
        addressing = attribution.addressing(whole.trace, p, whole.cost, whole.context)
        assert early.addressing[p] == late.addressing[p] == addressing
        assert sum(addressing.values()) == e.target.addressing_delta
        indexed_only.append(attribution.addressing(whole.trace, p, whole.cost, np.zeros_like(whole.context)))
    if name != "vecadd":  # the OFFSET contexts change some placement's deltas: the per-pc part is at work
        assert (whole.context == OFFSET).any()
        assert any(early.addressing[p] != a for p, a in zip(ps, indexed_only))
    assert early.evaluate(ps[0]).as_dict() == got[0].as_dict() and early.passes == 1  # again, no read


def test_early_takes_only_what_the_first_read_can(tmp_path, monkeypatch):
    """Staged placements, illegal ones, the sample and duplicates are left to evaluate_many; at most
    STREAM_PLACEMENTS_PER_READ are early, the others cost a read as before; the results stay the same."""
    monkeypatch.setattr(evaluate_stream, "STREAM_PLACEMENTS_PER_READ", 2)
    path, info = _file(tmp_path, "matmul_tiled")
    g = get_gpu("k80")
    texts = ["M=T", "M=T", "M=S/G", "Mds=G,Nds=G", "N=T", "N=2T"]
    ps = [parse_placement(t, info) for t in texts]
    sample = parse_placement("", info)
    bad = parse_placement("P=T", info)  # P is written
    ev = StreamEvaluator(path, g, rows=1000, early=[sample, bad, *ps])
    assert ev.passes == 1
    assert set(ev.addressing) == {sample, ps[0], ps[3]}  # the first two legal unstaged ones
    with pytest.raises(IllegalPlacement, match="P is written"):
        ev.evaluate(bad)
    assert ev.passes == 1
    late = StreamEvaluator(path, g, rows=1000)
    for p in [ps[0], ps[3], sample]:
        assert ev.evaluate(p).as_dict() == late.evaluate(p).as_dict(), p
    assert ev.passes == 1
    assert ev.evaluate(ps[4]).as_dict() == late.evaluate(ps[4]).as_dict()
    assert ev.passes == 2
    assert ev.evaluate(ps[2]).as_dict() == late.evaluate(ps[2]).as_dict()  # staged: the footprints, then its read
    assert ev.passes == 4


def test_api_evaluate_streamed_reads_once(tmp_path, monkeypatch):
    """placement.evaluate of a streamed trace file reads it once for an unstaged placement (three times for a
    staged one: the sample's, the footprints', its own) and gives the whole trace's result."""
    from placement import api

    path, info = _file(tmp_path, "conv2d_channels")
    monkeypatch.setattr(evaluate_stream, "STREAM_ROWS", 1000)
    reads = []
    real = traces.iter_batches

    def counting(*args, **kw):
        reads.append(args[0])
        return real(*args, **kw)

    monkeypatch.setattr(traces, "iter_batches", counting)
    for place, n in [("in=T,mask=C", 1), ("in=S/G", 3)]:
        reads.clear()
        streamed = api.evaluate(path, "k80", place, stream="yes")
        assert len(reads) == n, place
        whole = api.evaluate(path, "k80", place, stream="no")
        close(streamed.to_dict(), whole.to_dict(), place)


class _Contexts:
    """A finished ContextStream's ``context`` for given pcs' contexts (the rest INDEXED)."""

    def __init__(self, of_pc):
        self.of_pc = dict(of_pc)

    def context(self, pc):
        return np.array([self.of_pc.get(int(p), 0) for p in pc], np.int8)


@st.composite
def groups(draw):
    n_ids = draw(st.integers(1, 4))
    big = draw(st.booleans())  # pcs past the dense table (and negative ones): the np.unique way
    pcs = st.integers(-(1 << 30), 1 << 30) if big else st.integers(0, 40)
    out = []
    for _ in range(draw(st.integers(0, 4))):
        n = draw(st.integers(0, 30))
        pc = np.array(draw(st.lists(pcs, min_size=n, max_size=n)), np.int32)
        obj = np.array(draw(st.lists(st.integers(-1, n_ids - 1), min_size=n, max_size=n)), np.int16)
        d = st.integers(-(1 << 14), 1 << 14)
        deltas = [np.array(draw(st.lists(d, min_size=n, max_size=n)), np.int16) for _ in CONTEXTS]
        for x in deltas:
            x[obj < 0] = 0  # rows off every object have no delta
        out.append((pc, obj, deltas))
    everything = sorted(set(np.concatenate([g[0] for g in out]).tolist())) if out else []
    of_pc = {p: draw(st.integers(0, len(CONTEXTS) - 1)) for p in everything}
    return n_ids, out, of_pc


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups())
def test_pc_deltas_sum_each_rows_delta_in_its_context(case):
    """_PcDeltas.per_object equals each object's sum of its rows' deltas in their pcs' contexts (INDEXED, OFFSET,
    PAIRED; a plain loop), on groups of random rows: small pcs (the dense table), large and negative ones (the sorted
    keys)."""
    n_ids, gs, of_pc = case
    acc = evaluate_stream._PcDeltas(n_ids)
    want = np.zeros(n_ids, np.int64)
    for pc, obj, deltas in gs:
        acc.feed(pc, obj, deltas[0], tuple(deltas[1:]))
        for i in range(pc.shape[0]):
            if obj[i] >= 0:
                want[obj[i]] += int(deltas[of_pc.get(int(pc[i]), 0)][i])
    got = acc.per_object(_Contexts(of_pc))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
