"""Memory bounded by a piece, not by the trace (issue 34).

A staged trace can be many times its trace (a histogram's privatized bins: the copy loops
add about 24 rows a row), and the evaluators once held it whole: 16.9 GB resident for a
2 M-row histogram with ``bins=S/G``. ``traces.staging.stage_pieces`` stages it in pieces of
whole blocks, each of a bounded number of rows; the evaluators feed the pieces to the
hierarchy one at a time. These tests check that the pieces are the staging (row for row),
that the evaluations made from pieces equal the whole ones (every count exactly, times to
1e-12 relative: the DRAM queues' moments are summed in another order), and that the peak
memory of an evaluation does not grow with its staged trace.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_staging import random_traces

import traces
from traces import staging as S
from expect import close


def _plan(t, windows):
    order = S.program_order(t)
    rows = S.object_rows(t, order, 0)
    a = S.access(t, rows, 0)
    fp = S.footprint(t, rows, a, (windows,))
    return order, fp, [S.StagedObject(0, "global", -(-a.ordinals // windows), 0, fp.pitch[0], True, "none", 2.5, 0)]


def _concat(pieces):
    return {c: np.concatenate([getattr(p.trace, c) for p in pieces]) for c in pieces[0].trace.columns()}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_traces(), st.integers(1, 40), st.sampled_from([None, 0, 60]), st.sampled_from([None, 1, 35, 500]))
def test_pieces_are_the_staging(case, rows, whole, hint):
    # pieces of at most `rows` staged rows (a block with more alone), concatenated: stage()'s rows, deltas and
    # counts; one piece, not a part, exactly when the whole staged trace fits `rows` or `whole` (given the true
    # hint); buffers of any expected length (`rows_hint`) give the same rows. Without a hint the rate is learnt
    # from the first blocks and extrapolated, so a trace that fits may still be cut when its first block stages
    # into more rows a row than the rest (hypothesis found one: 53 staged rows, whole 60, its first block 9.8 a
    # row, 68.6 expected): never a wrong row, one more piece
    t, windows = case
    order, fp, plan = _plan(t, windows)
    delta = (np.arange(len(t)) % 3).astype(np.int16)
    ref = S.stage(t, delta, plan, windows, barrier=1, smem_per_block=fp.bytes[0])
    pieces = list(S.stage_pieces(t, delta, plan, windows, barrier=1, smem_per_block=fp.bytes[0], order=order,
                                 rows=rows, whole=whole, rows_hint=hint))  # fmt: skip
    n = len(ref.trace)
    fits = n <= max(rows, whole or 0) or len(np.unique(t.cta)) == 1
    if not fits:  # never one piece over the bounds, whatever the hint
        assert len(pieces) > 1
    elif hint == n:  # it fits, and the true hint: one piece
        assert len(pieces) == 1
    # (a wrong hint, 35 for a staged trace of 6 rows, may cut a trace that fits: the rows below are the same)
    true_hint = list(S.stage_pieces(t, delta, plan, windows, barrier=1, smem_per_block=fp.bytes[0], order=order,
                                    rows=rows, whole=whole, rows_hint=n))  # fmt: skip
    assert (len(true_hint) == 1) == fits
    assert all(p.part == (len(pieces) > 1) for p in pieces)
    for p in pieces:
        blocks = np.unique(p.trace.cta)
        assert len(p.trace) <= (rows if len(pieces) > 1 else max(rows, whole or 0)) or len(blocks) == 1
    got = _concat(pieces)
    for c, v in ref.trace.columns().items():
        assert np.array_equal(got[c], v), c
    assert np.array_equal(np.concatenate([p.addr_inst_delta for p in pieces]), ref.addr_inst_delta)
    for k in S.INSERTED:
        if k != "int":
            assert sum(p.inserted[k] for p in pieces) == ref.inserted[k], k
    assert sum(p.int_milli for p in pieces) == ref.int_milli
    assert all(p.pc_top == ref.pc_top and p.trace.info == ref.trace.info for p in pieces)


def _counts(d):
    """The integer terms (counts) of an evaluation's dict: equal exactly, whatever the summation order."""
    keys = ("issued_instructions", "executed_instructions", "addressing_delta", "replays", "mem_requests",
            "dram_requests", "row_buffer", "caches", "blocks_per_sm", "smem_per_block", "saturated_banks")  # fmt: skip
    return {k: d[k] for k in keys} | {"inserted": d["staging"].get("inserted")}


PLACEMENTS = ("bins=S/G", "data=S/G,bins=S/G", "data=S/R,bins=S/G", "data=S/T,bins=S/G")
"""A privatized histogram's bins staged alone and with its data from each source (one group: re-sourced)."""


def _count_parts(monkeypatch) -> list[int]:
    """Spy on ``stage_pieces``: the pieces of each staging that came in several."""
    seen: list[int] = []
    real = S.stage_pieces

    def spy(*args, **kwargs):
        n = 0
        for p in real(*args, **kwargs):
            n += p.part
            yield p
        seen.append(n)

    monkeypatch.setattr(S, "stage_pieces", spy)
    return seen


def test_evaluations_from_pieces_equal_the_whole(monkeypatch):
    # a histogram (privatized bins: 24 staged rows a row) evaluated from one whole staged trace and from pieces of
    # 500 rows: every count equal, every time to 1e-12 relative
    from placement.evaluate_whole import WholeTraceEvaluator
    from placement.gpu import get_gpu
    from placement.placements import parse_placement
    from traces.generators import generate

    cols, info = generate("histogram", [4096, 512], [32])
    t = traces.Trace(**cols, info=info)
    gpu = get_gpu("a100")
    ps = [parse_placement(x, info) for x in PLACEMENTS]
    whole = [e.target.as_dict() for e in WholeTraceEvaluator(t, gpu).evaluate_many(ps)]
    monkeypatch.setattr(S, "STAGE_PIECE_ROWS", 500)
    monkeypatch.setattr(S, "STAGE_WHOLE_ROWS", 500)
    parts = _count_parts(monkeypatch)
    ev = WholeTraceEvaluator(t, gpu)
    pieces = [e.target.as_dict() for e in ev.evaluate_many(ps)]
    assert len(parts) >= 2 and min(parts) > 10  # each group's staging (per window count) in pieces
    for w, p in zip(whole, pieces):
        assert _counts(w) == _counts(p)
        close(w, p)


def test_streamed_evaluations_from_pieces_equal_the_whole(tmp_path, monkeypatch):
    # the streamed evaluator's groups of 1000 rows (whole blocks) staged in pieces of 700 rows: as the whole
    from placement.evaluate_stream import StreamEvaluator
    from placement.evaluate_whole import WholeTraceEvaluator
    from placement.gpu import get_gpu
    from placement.placements import parse_placement
    from traces.generators import generate

    cols, info = generate("histogram", [32768, 512], [32])  # 2,048 rows: groups of 1,000 rows, three of them
    path = tmp_path / "h.parquet"
    traces.write(path, cols, info)
    t = traces.Trace(**cols, info=info)
    gpu = get_gpu("a100")
    ps = [parse_placement(x, info) for x in PLACEMENTS]
    whole = [e.target.as_dict() for e in WholeTraceEvaluator(t, gpu).evaluate_many(ps)]
    monkeypatch.setattr(S, "STAGE_PIECE_ROWS", 700)
    parts = _count_parts(monkeypatch)
    ev = StreamEvaluator(str(path), gpu, rows=1000)
    streamed = [e.target.as_dict() for e in ev.evaluate_many(ps)]
    assert len(parts) >= 6 and sum(n >= 2 for n in parts) >= 6  # groups staged in several pieces
    for w, s in zip(whole, streamed):
        assert _counts(w) == _counts(s)
        close(w, s)


PEAK_SCRIPT = textwrap.dedent("""
    import sys, tracemalloc
    import traces
    from placement.gpu import get_gpu
    from placement.evaluate_stream import StreamEvaluator
    from placement.evaluate_whole import WholeTraceEvaluator
    from placement.placements import parse_placement
    from traces.generators import generate

    mode, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    cols, info = generate("histogram", [n, 512], [32])
    t = traces.Trace(**cols, info=info)
    del cols
    if mode == "whole":
        ev = WholeTraceEvaluator(t, get_gpu("a100"))
    else:  # one group of 262,144 rows: the whole trace
        traces.write(path, t.columns(), info)
        ev = StreamEvaluator(path, get_gpu("a100"), rows=1 << 18)
    p = parse_placement("bins=S/G", info)
    tracemalloc.start()
    e = ev.evaluate(p)
    print(tracemalloc.get_traced_memory()[1], e.target.staging["inserted"]["stores"], len(t))
""")


def _peak(mode: str, n: int, path) -> tuple[int, int, int]:
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, mode, str(n), str(path)], capture_output=True, text=True,
                         env=env, check=True, timeout=600)  # fmt: skip
    peak, stores, rows = (int(x) for x in out.stdout.split())
    return peak, stores, rows


PEAK_BOUND = 640 << 20
"""Bytes an evaluation of the histogram's bins=S/G may allocate (traced by tracemalloc) beyond its evaluator: the
pieces' columns (buffers of ``STAGE_PIECE_ROWS`` rows of 289 bytes, 72 MiB) and the hierarchy's work on one piece.
The whole staged trace of 2**21 elements (3.18 M rows of 289 bytes, 0.9 GiB) went well over it: 1,278 MiB allocated
by the whole-trace evaluator, 1,118 MiB by the streamed one with its trace in one group (both measured before the
pieces); in pieces of 2**18 rows they allocate 178 and 180 MiB. (A staged trace of up to
``STAGE_WHOLE_ROWS``, 2**21 rows, is still evaluated whole by the whole-trace evaluator: this one has 3.18 M.)"""


@pytest.mark.parametrize("mode", ["whole", "stream"])
def test_a_staged_evaluation_is_bounded_by_its_pieces(mode, tmp_path):
    # n = 2**21 elements in blocks of 32 threads: 131,072 rows that stage into 3.18 M (a tile of up to 512 bins
    # zeroed and reduced back per block), evaluated by the whole-trace evaluator and by the streamed one
    peak, stores, rows = _peak(mode, 1 << 21, tmp_path / "h.parquet")
    assert rows == 131072 and stores > 15 * 65536  # zeroing a tile of up to 512 bins: up to 16 warp stores a block
    assert peak < PEAK_BOUND, f"{peak / 2**20:.0f} MiB"


def test_a_finished_memory_run_lets_its_rows_go():
    # MemoryRun (a placement's hierarchy and queues fed rows a piece at a time) and its HierarchyStream made a
    # reference cycle (on_dram, a bound method), so a finished run kept its last wave of rows and its buffers
    # until the garbage collector ran: a batch of many tasks grew by them. Finished, the stream goes at once.
    import gc
    import weakref

    from placement.gpu import get_gpu
    from placement.hms import MemoryRun, Options
    from traces.generators import generate

    cols, info = generate("histogram", [4096, 64], [32])
    t = traces.Trace(**cols, info=info)
    gc.collect()
    gc.disable()
    try:
        run = MemoryRun(info, get_gpu("a100"), Options(), 8)
        run.feed(t)
        hier = weakref.ref(run.hier)
        memory = run.finish()
        assert hier() is None
        assert memory(8, 100.0).requests > 0
    finally:
        gc.enable()


BATCH = """\
name = "four"
gpu = "a100"
""" + "".join(
    f"""
[[entry]]
id = "h{n}"
generator = "histogram"
size = [{n}, 64]
block = [32]
placements = ["", "bins=S/G"]
"""
    for n in (8192, 16384, 24576, 32768)
)


def test_a_batch_holds_no_more_than_its_largest_trace(tmp_path, monkeypatch):
    # whenever a batch loads (generates) a trace, in planning or to run a task, the traces it still holds and the
    # new one hold no more rows than its largest (issue 34: the plan kept every generated trace up to 4 M rows for
    # the run, and each process's caches up to 8 M rows of traces and evaluators, so memory grew with the tasks)
    import gc
    import weakref

    from placement import batch
    from placement.batch import suite as suite_mod

    alive: list[weakref.ref] = []
    held: list[int] = []
    real = suite_mod.TraceSource.load

    def load(self):
        t = real(self)
        gc.collect()
        alive.append(weakref.ref(t))
        held.append(sum(len(x) for x in (r() for r in alive) if x is not None))
        return t

    monkeypatch.setattr(suite_mod.TraceSource, "load", load)
    path = tmp_path / "four.toml"
    path.write_text(BATCH)
    r = batch.run(str(path), str(tmp_path / "out.parquet"), workers=1)
    assert r.rows == 8
    largest = 32768 // 16  # rows: a load and a reduction per warp
    assert max(held) <= largest, held  # (before: 5,120, every trace the plan generated)


ONE_WAVE_SCRIPT = textwrap.dedent("""
    import sys
    import cachesim, traces
    from placement.gpu import get_gpu
    from placement.memory import hierarchy_config
    from traces.generators import generate

    def status(key):
        for line in open("/proc/self/status"):
            if line.startswith(key):
                return int(line.split()[1]) << 10

    path = sys.argv[1]
    cols, info = generate("matmul_naive", [320], [16])  # 400 blocks: one wave of the H100's 132 x 8
    n, nbytes = len(cols["cta"]), sum(v.nbytes for v in cols.values())
    traces.write(path, cols, info)
    del cols
    s, before = cachesim.HierarchyStream(hierarchy_config(get_gpu("h100")), info, 8), None
    for g in traces.iter_batches(path, 1 << 16):
        s.feed(g)
        before = before or status("VmRSS")  # the kernels loaded, a group read
    del g
    s.finish()
    print(n, nbytes, status("VmHWM") - before)
""")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the resident set from /proc/self/status")
def test_a_streamed_wave_is_held_once(tmp_path):
    # a trace of one wave (all of its rows walked together) read in groups of 65,536 rows, as the evaluators read
    # a file: the stream held every group and joined them when the wave was walked, 2.08x the trace's bytes more
    # resident at the peak than after the first group; walked from the groups it holds a slice of the issue order
    # at a time (cachesim.held), 1.22x (the walk's own arrays, the rows' SM, slot, wave and order, and the slice)
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", ONE_WAVE_SCRIPT, str(tmp_path / "w.parquet")], capture_output=True,
                         text=True, env=env, check=True, timeout=600)  # fmt: skip
    rows, nbytes, grown = (int(x) for x in out.stdout.split())
    assert rows == 2051200 and nbytes > 550 << 20
    assert grown < 1.6 * nbytes, f"{grown / nbytes:.2f} x the trace's bytes"


def test_a_stream_of_many_waves_holds_no_state_per_warp_of_the_grid():
    # the warps' round state (MLP rounds, cachesim._hierarchy_kernels.W_ROWS int64s a warp) was a column per warp of
    # the grid, allocated whole and touched as the walk went: bench_evaluate's 10 M rows grew to 680 MiB resident
    # (2 streams x 178 MiB of it) where 391 MiB holds them now. One wave's columns, folded after each wave: the
    # memory a stream allocates no longer grows with the trace (before: 21 MiB more for 4x the rows here)
    import tracemalloc

    import cachesim
    from placement.gpu import get_gpu
    from placement.memory import hierarchy_config
    from traces.generators import generate

    def streamed(n: int) -> tuple[int, cachesim.HierarchyTotals]:
        cols, info = generate("vecadd", [n], [256])
        t = traces.Trace(**cols, info=info)
        tracemalloc.start()
        s = cachesim.HierarchyStream(hierarchy_config(get_gpu("k80")), info, 8, mlp=4.0)
        for lo in range(0, len(t), 65536):
            s.feed(traces.Trace(**{k: v[lo : lo + 65536] for k, v in t.columns().items()}, info=info, start=lo))
        totals = s.finish()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return peak, totals

    streamed(1 << 16)  # the kernels loaded (or compiled) outside the measured runs
    small, t1 = streamed(1 << 22)
    large, t4 = streamed(1 << 24)
    assert (t1.rounds, t4.rounds) == ((1 << 22) // 32, (1 << 24) // 32)  # a warp's two loads: one round of 4
    assert large - small < 4 << 20, f"{(large - small) / 2**20:.1f} MiB more for 4x the rows"


def test_a_trace_that_fits_may_be_cut_without_a_hint_never_wrongly():
    """The example hypothesis found: two blocks, the first's strided row staging into 49 rows, the second's two rows
    into 4; 53 in all, `whole` 60. Without a hint the first block's 9.8 rows a row predict 68.6, so the trace goes in
    two pieces; with the true hint, one. Both are `stage`'s rows."""
    from traces.schema import Instructions, KernelInfo, ObjectInfo

    base = 1 << 20
    lin, strided = [base + 4 * i for i in range(32)], [base + 64 * i for i in range(32)]
    info = KernelInfo(kernel="k", grid=(2, 1, 1), block=(32, 1, 1),
                      objects=(ObjectInfo(0, "X", "global", base, 4096, 4, (21, 48), False),),
                      instructions=Instructions(executed=100, warps=2), regs_per_thread=16)  # fmt: skip
    t = traces.Trace(cta=np.array([0, 0, 0, 0, 0, 1, 1], np.int32), warp=np.zeros(7, np.int32),
                     seq=np.array([1, 2, 3, 4, 5, 1, 2]), pc=np.arange(0, 112, 16, dtype=np.int32),
                     op=np.zeros(7, np.int8), space=np.zeros(7, np.int8), width=np.full(7, 4, np.int8),
                     mask=np.full(7, 0xFFFFFFFF, np.uint32),
                     addr=np.array([lin, lin, lin, lin, strided, lin, lin], np.uint64), obj=np.zeros(7, np.int16),
                     info=info)  # fmt: skip
    order, fp, plan = _plan(t, 1)
    delta = (np.arange(len(t)) % 3).astype(np.int16)
    ref = S.stage(t, delta, plan, 1, barrier=1, smem_per_block=fp.bytes[0])
    assert len(ref.trace) == 53
    for hint, lengths in ((None, [49, 4]), (53, [53])):
        pieces = list(S.stage_pieces(t, delta, plan, 1, barrier=1, smem_per_block=fp.bytes[0], order=order, rows=1,
                                     whole=60, rows_hint=hint))  # fmt: skip
        assert [len(p.trace) for p in pieces] == lengths
        for c, v in _concat(pieces).items():
            np.testing.assert_array_equal(v, getattr(ref.trace, c))
