"""Streamed hierarchy == whole-trace hierarchy: groups of 1000 rows (many groups, many waves)
through cachesim.HierarchyStream give exactly simulate_hierarchy's counts and DRAM stream."""

from __future__ import annotations

import numpy as np
import pytest

import cachesim
import traces
from placement.gpu import get_gpu
from placement.memory import hierarchy_config
from traces import generators
from expect import close

GROUP = 1000


def trace_of(name: str) -> traces.Trace:
    return generators.trace(name)


def groups(t: traces.Trace, rows: int = GROUP):
    for lo in range(0, len(t), rows):
        yield traces.Trace(**{k: v[lo : lo + rows] for k, v in t.columns().items()}, info=t.info, start=lo)


def stream(t: traces.Trace, cfg, bps: int, rows: int = GROUP, **kw):
    pieces = []
    s = cachesim.HierarchyStream(cfg, t.info, bps, on_dram=pieces.append, **kw)
    for g in groups(t, rows):
        s.feed(g)
    return s.finish(), pieces


def assert_same(whole: cachesim.HierarchyResult, totals: cachesim.HierarchyTotals, pieces) -> None:
    w = whole.totals()
    for f in ("requests", "hits", "misses", "instructions", "transactions", "replays", "lsu_cycles", "l2_sectors"):
        np.testing.assert_array_equal(getattr(totals, f), getattr(w, f), err_msg=f)
    assert (totals.dram_requests, totals.dram_bytes, totals.row_buffer, totals.n_banks, totals.texels) == (
        w.dram_requests, w.dram_bytes, w.row_buffer, w.n_banks, w.texels)  # fmt: skip
    assert totals.l1_bank_conflicts == w.l1_bank_conflicts == whole.l1_bank_conflicts
    # the served pieces are the whole run's DRAM requests in its arrival order, with its outcomes
    d = whole.dram
    cat = {f: np.concatenate([getattr(p, f) for p in pieces]) if pieces else np.zeros(0) for f in
           ("addr", "cycle", "obj", "warp", "write", "nbytes", "bank", "outcome", "service_ns")}  # fmt: skip
    np.testing.assert_array_equal(cat["addr"], whole.dram_addr[d.order])
    np.testing.assert_array_equal(cat["cycle"], d.arrival)
    np.testing.assert_array_equal(cat["obj"], whole.dram_obj[d.order])
    np.testing.assert_array_equal(cat["warp"], whole.dram_warp[d.order])
    np.testing.assert_array_equal(cat["write"], whole.dram_write[d.order])
    np.testing.assert_array_equal(cat["nbytes"], whole.dram_bytes[d.order])
    np.testing.assert_array_equal(cat["bank"], d.bank_number[d.bank] if d.n_banks else np.zeros(0))
    np.testing.assert_array_equal(cat["outcome"], d.outcome)
    np.testing.assert_array_equal(cat["service_ns"], d.service_ns)


CASES = [
    ("vecadd", "k80", 2),
    ("matmul_tiled", "k80", 4),
    ("conv2d_kt", "a100", 2),
    ("stencil2d", "v100", 1),
    ("spmv", "gtx680", 3),
    ("md", "c2050", 2),
    ("histogram", "k40", 8),
    ("mb7_uc", "h100", 2),
]


@pytest.mark.parametrize("name,gpu,bps", CASES)
def test_stream_equals_whole(name, gpu, bps):
    t = trace_of(name)
    cfg = hierarchy_config(get_gpu(gpu))
    whole = cachesim.simulate_hierarchy(t, cfg, bps)
    assert whole.dram_addr.shape[0] > 0
    totals, pieces = stream(t, cfg, bps)
    assert_same(whole, totals, pieces)
    if t.info.ctas > 2 * cfg.sms * bps:  # several waves: served as the walk went, not at the end only
        assert len(pieces) > 1


def test_small_dram_buffer_drains_mid_group():
    t = trace_of("matmul_naive")
    cfg = hierarchy_config(get_gpu("k80"))
    whole = cachesim.simulate_hierarchy(t, cfg, 2)
    totals, pieces = stream(t, cfg, 2, rows=50_000, dram_buffer=64)
    assert_same(whole, totals, pieces)


def test_one_group_and_one_row_groups():
    t = trace_of("reduction")
    cfg = hierarchy_config(get_gpu("gtx280"))
    whole = cachesim.simulate_hierarchy(t, cfg, 3)
    for rows in (len(t), 1):
        totals, pieces = stream(t, cfg, 3, rows=rows)
        assert_same(whole, totals, pieces)


def test_rows_out_of_wave_order_are_refused():
    t = trace_of("vecadd")
    cfg = hierarchy_config(get_gpu("k80"))
    s = cachesim.HierarchyStream(cfg, t.info, 1)
    gs = list(groups(t, len(t) // 2))
    s.feed(gs[1])
    with pytest.raises(cachesim.HierarchyConfigError, match=r"row 0: block 0 of wave 0 comes after"):
        s.feed(gs[0])


def test_read_of_many_row_groups_equals_the_columns(tmp_path):
    # read() decodes a file of many row groups batch by batch into its columns
    cols, info = generators.generate("matmul_tiled")
    path = tmp_path / "t.parquet"
    traces.atomic_write_table(traces.to_table(cols, info), str(path), row_group_rows=1000)
    import pyarrow.parquet as pq

    assert pq.ParquetFile(path).metadata.num_row_groups > 50
    t = traces.read(path)
    for k, v in cols.items():
        np.testing.assert_array_equal(getattr(t, k), v, err_msg=k)
    assert t.addr.flags["C_CONTIGUOUS"] and t.addr.shape == (len(cols["cta"]), 32)


def test_read_names_the_bad_row_of_a_later_row_group(tmp_path):
    cols, info = generators.generate("vecadd")
    cols = {k: np.array(v) for k, v in cols.items()}
    bad = 2500  # in the third row group of 1000
    cols["width"][bad] = 3
    path = tmp_path / "t.parquet"
    traces.atomic_write_table(traces.to_table(cols, info), str(path), row_group_rows=1000)
    with pytest.raises(traces.TraceError, match=rf"row {bad}.*width 3"):
        traces.read(path)


@pytest.mark.parametrize("mode", ["kingman", "kingman-paper", "exact"])
@pytest.mark.parametrize("population", [None, 40.0])
def test_queue_stream_equals_dram_latency(mode, population):
    from placement import queuing

    rng = np.random.default_rng(7)
    n = 20_000
    arrival = np.sort(rng.exponential(3.0, n).cumsum())
    arrival[100:110] = arrival[100]  # ties
    bank = rng.integers(0, 24, n) * 1000 + 5  # bank numbers, not dense ids
    bank[-1] = 999_999  # a bank with one request
    service = rng.choice([2.0, 4.5, 6.25], n) * rng.choice([1.0, 2.0], n)
    latency = rng.choice([300.0, 700.0, 900.0], n)
    dense = np.unique(bank, return_inverse=True)[1]
    whole = queuing.dram_latency(dense, arrival, service, mode, latency=latency, population=population)
    qs = queuing.QueueStream()
    for lo in range(0, n, 997):
        qs.feed(bank[lo : lo + 997], arrival[lo : lo + 997], service[lo : lo + 997], latency[lo : lo + 997])
    got = qs.result(mode, population)
    assert whole.saturated_banks == got.saturated_banks
    np.testing.assert_array_equal(got.banks.count, whole.banks.count)
    np.testing.assert_array_equal(got.banks.tau_s, whole.banks.tau_s)  # the same sums in the same order
    np.testing.assert_array_equal(got.banks.wq_exact, whole.banks.wq_exact)
    for f in ("tau_a", "c_a", "c_s", "rho"):  # Welford's sums against two passes
        np.testing.assert_allclose(getattr(got.banks, f), getattr(whole.banks, f), rtol=1e-12, atol=0, err_msg=f)
    for f in ("dram_lat", "mean_queuing_delay", "mean_service"):
        assert getattr(got, f) == pytest.approx(getattr(whole, f), rel=1e-12, abs=0), f


@pytest.mark.parametrize(
    "name,gpu,places",
    [
        ("vecadd", "k80", ["a=T,b=T", "b=R"]),
        ("matmul_tiled", "k80", ["M=T", "Mds=G,Nds=G", "N=2T", "M=C"]),
        ("stencil2d", "v100", ["data=T", "data=R,sh=G"]),
        ("conv1d", "a100", ["in=T,mask=C", "mask=C"]),
    ],
)
def test_stream_evaluator_equals_evaluator(tmp_path, name, gpu, places):
    from placement.gpu import get_gpu
    from placement.evaluate_stream import StreamEvaluator
    from placement.evaluate_whole import WholeTraceEvaluator
    from placement.placements import parse_placement

    cols, info = generators.generate(name)
    path = tmp_path / "t.parquet"
    traces.atomic_write_table(traces.to_table(cols, info), str(path), row_group_rows=1000)
    g = get_gpu(gpu)
    whole = WholeTraceEvaluator(traces.read(path), g)
    streamed = StreamEvaluator(path, g, rows=1000)
    close(streamed.sample.as_dict(), whole.sample.as_dict(), "sample")
    np.testing.assert_array_equal(streamed.contexts.context(whole.trace.pc), whole.context)
    for text in places:
        p = parse_placement(text, info)
        close(streamed.evaluate(p).as_dict(), whole.evaluate(p).as_dict(), text)


def test_stream_evaluator_refuses_rows_out_of_block_order(tmp_path):
    from placement.gpu import get_gpu
    from placement.evaluate_stream import StreamEvaluator

    cols, info = generators.generate("matmul_tiled")
    n = len(cols["cta"])
    back = np.r_[n // 2 : n, 0 : n // 2]  # the second half of the blocks first
    path = tmp_path / "t.parquet"
    traces.atomic_write_table(traces.to_table({k: np.asarray(v)[back] for k, v in cols.items()}, info), str(path),
                              row_group_rows=1000)  # fmt: skip
    with pytest.raises(traces.TraceError, match=r"t\.parquet.*row \d+: block 0 after block"):
        StreamEvaluator(path, get_gpu("k80"), rows=1000)


STAGED = [
    # with placements that differ only in a staged object's source (one read stages them once: evaluate_stream._feed)
    ("matmul_tiled", "k80", 1000, ["M=S/G", "M=S/G,N=S/T", "N=S/R,P=S/G", "M=S/R", "M=S/T,N=S/G", "M=S/T"]),
    ("conv1d", "a100", 1000, ["in=S/R", "in=S/G,mask=C", "out=S/G", "in=S/T,mask=C", "in=S/G"]),
    ("stencil2d", "v100", 1000, ["data=S/T", "data=S/G,sh=G"]),
    ("histogram", "k40", 1000, ["bins=S/G", "data=S/G,bins=S/G"]),
    ("vecadd", "gtx680", 1, ["v=S/G", "a=S/T,b=S/G"]),
    ("transpose", "k80", 1, ["idata=S/G"]),
]


@pytest.mark.parametrize("name,gpu,rows,places", STAGED)
def test_stream_evaluator_equals_evaluator_on_staged_placements(tmp_path, monkeypatch, name, gpu, rows, places):
    """Staged placements streamed in groups of whole blocks (row groups of 1000 rows, or of one row): every term,
    the staging detail (windows tried, tiles, inserted instructions) and the per-object addressing equal the
    whole trace's; counts exactly, times to 1e-12 relative (the queues' variances are summed in another order)."""
    from placement import attribution
    from placement.gpu import get_gpu
    from placement.evaluate_stream import StreamEvaluator
    from placement.evaluate_whole import WholeTraceEvaluator
    from placement.placements import parse_placement

    cols, info = generators.generate(name)
    path = tmp_path / "t.parquet"
    traces.atomic_write_table(traces.to_table(cols, info), str(path), row_group_rows=max(rows, 1000))
    g = get_gpu(gpu)
    whole = WholeTraceEvaluator(traces.read(path), g)
    streamed = StreamEvaluator(path, g, rows=rows)
    ps = [parse_placement(text, info) for text in places]
    for p in ps:  # the legality and the staging options from the streamed facts
        a, b = streamed.check(p), whole.check(p)
        assert a == b, p
    # reads of at most 3 hierarchy states' worth of the sample's held rows (STREAM_HELD_BYTES)
    from placement import evaluate_stream

    monkeypatch.setattr(evaluate_stream, "STREAM_HELD_BYTES", 3 * streamed.held_bytes + 1)
    assert streamed.states_per_read == 3 and streamed.held_bytes > 1
    got = streamed.evaluate_many(ps)
    # the first read, the footprints, then reads of at most 8 placements and 3 hierarchy states (a staged
    # placement holds one per staging option it weighs; one of more goes alone): 2 + those of _reads
    from placement.evaluator import groups

    order = [p for g in groups(ps) for p in g]  # a group_key's placements together, as evaluate_many takes them
    runs = [len(streamed.check(p).staging.options) if streamed.check(p).staging is not None else 1 for p in order]
    reads = held = count = 0
    for n in runs:  # greedily, by hand
        if reads == 0 or held + n > 3 or count == 8:
            reads, held, count = reads + 1, 0, 0
        held, count = held + n, count + 1
    assert streamed.passes == 2 + reads
    for p, e in zip(ps, got):
        w = whole.evaluate(p)
        assert w.target.staging and e.target.staging["inserted"] == w.target.staging["inserted"]
        close(e.as_dict(), w.as_dict(), str(p))
        assert streamed.addressing[p] == attribution.addressing(whole.trace, p, whole.cost, whole.context)
    assert streamed.accesses == attribution.accesses(whole.trace)
    for o in info.objects:
        assert streamed.staging.access(o.name) == whole.staging.access(o.name)
        assert streamed.staging.writeback(o.name) == whole.staging.writeback(o.name)
        wins = traces.staging.window_counts(whole.staging.access(o.name).ordinals)
        assert streamed.staging.footprint(o.name, wins) == whole.staging.footprint(o.name, wins)
        for plain in (False, True):
            assert streamed.staging.overlap(o.name, plain) == whole.staging.overlap(o.name, plain), (o.name, plain)


def test_stream_evaluator_names_the_overlapping_blocks(tmp_path):
    """A written object two blocks both write cannot be staged: the same message as the whole trace's."""
    from placement.gpu import get_gpu
    from placement.evaluate_stream import StreamEvaluator
    from placement.evaluate_whole import WholeTraceEvaluator
    from placement.placements import IllegalPlacement, parse_placement

    cols, info = generators.generate("vecadd")
    cols = {k: np.array(v) for k, v in cols.items()}
    store = np.flatnonzero(cols["op"] == 1)
    cols["addr"][store[-1]] = cols["addr"][store[0]]  # the last block's last store hits block 0's elements
    path = tmp_path / "t.parquet"
    traces.atomic_write_table(traces.to_table(cols, info), str(path), row_group_rows=1000)
    p = parse_placement("v=S/G", info)
    msgs = []
    for ev in (
        WholeTraceEvaluator(traces.read(path), get_gpu("k80")),
        StreamEvaluator(path, get_gpu("k80"), rows=1000),
    ):
        with pytest.raises(IllegalPlacement, match="is written by blocks 0 and 255") as exc:
            ev.evaluate(p)
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("name,place", [("matmul_tiled", "M=S/G"), ("stencil2d", "data=S/T"), ("conv1d", "in=S/R")])
def test_stream_equals_whole_on_staged_traces(name, place):
    # the staged (S/G, S/T, S/R) targets' traces, with their inserted copies and barriers, streamed
    from placement import staging as stg
    from placement.evaluate_whole import WholeTraceEvaluator
    from placement.placements import parse_placement, unstaged
    from traces import staging as ts

    t = trace_of(name)
    gpu = get_gpu("k80")
    ev = WholeTraceEvaluator(t, gpu)
    p = parse_placement(place, t.info)
    legal = ev.check(p)
    staged = [t.info.object(n).id for n, s in p.spaces if s.startswith("S/")]
    rw = traces.rewrite(t, unstaged(p), ev.cost, staged=staged, context=ev.context)
    option = legal.staging.options[0]
    plan = stg.plan(ev.staging, gpu, p, option, legal.staging.own_smem)
    st = ts.stage(
        rw.trace, rw.addr_inst_delta, plan, option.windows, stg.costs(gpu).barrier, option.smem_per_block
    ).trace
    order = np.argsort(st.cta, kind="stable")  # block order for the stream (the whole run does not depend on it)
    st = traces.Trace(**{k: v[order] for k, v in st.columns().items()}, info=st.info)
    cfg = hierarchy_config(gpu)
    whole = cachesim.simulate_hierarchy(st, cfg, 2)
    totals, pieces = stream(st, cfg, 2)
    assert_same(whole, totals, pieces)
    assert whole.instructions[cachesim.SPACES.index("shared")] > 0


@pytest.mark.parametrize("command,name,gpu,extra", [
    ("evaluate", "matmul_tiled", "k80", ["--place", "M=S/G,N=S/T", "--hints"]),
    ("evaluate", "conv1d", "a100", ["--place", "in=T,mask=C"]),
    ("rank", "conv1d", "k80", ["--hints", "--top", "5"]),
    ("rank", "histogram", "k40", []),
])  # fmt: skip
def test_cli_json_streamed_equals_whole(tmp_path, run_cli, monkeypatch, command, name, gpu, extra):
    """`placement evaluate` and `rank` with --stream yes (row groups of 1000 rows) print the JSON document of
    --stream no: the same keys, counts and texts, times to 1e-12 relative (the queues' variances are summed in
    another order); the ranking, explanations and hints (tile origins) alike."""
    import json

    from placement import evaluate_stream

    cols, info = generators.generate(name)
    path = tmp_path / "t.parquet"
    traces.atomic_write_table(traces.to_table(cols, info), str(path), row_group_rows=1000)
    monkeypatch.setattr(evaluate_stream, "STREAM_ROWS", 1000)
    docs = []
    for mode in ("no", "yes"):
        code, out, err = run_cli(command, path, "--gpu", gpu, *extra, "--json", "--stream", mode,
                                 *(["--no-progress", "--workers", "1"] if command == "rank" else []))  # fmt: skip
        assert code == 0, err
        docs.append(json.loads(out))
    close(docs[1], docs[0], command)
    if command == "rank":
        assert [r["placement"] for r in docs[1]["ranking"]] == [r["placement"] for r in docs[0]["ranking"]]


def test_stream_mode_auto_by_size_and_refusals(tmp_path, monkeypatch, caplog):
    """auto streams a trace file whose whole evaluation would pass WHOLE_TRACE_BUDGET (logged); even_banks
    and rows out of block order go whole in auto, and are refused when streaming is forced."""
    import logging

    from placement import api, evaluate_stream
    from placement.gpu import get_gpu
    from placement.evaluate_stream import StreamEvaluator, StreamOrderError
    from placement.evaluate_whole import WholeTraceEvaluator
    from placement.hms import Options

    cols, info = generators.generate("vecadd")
    path = tmp_path / "t.parquet"
    traces.atomic_write_table(traces.to_table(cols, info), str(path), row_group_rows=1000)
    g = get_gpu("k80")
    with caplog.at_level(logging.INFO, logger="placement.api"):
        assert isinstance(api._evaluator(path, g, Options(), "auto"), WholeTraceEvaluator)
        monkeypatch.setattr(api, "WHOLE_TRACE_BUDGET", len(cols["cta"]) * api.WHOLE_BYTES_PER_ROW - 1)
        assert isinstance(api._evaluator(path, g, Options(), "auto"), StreamEvaluator)
        assert isinstance(api._evaluator(path, g, Options(even_banks=True), "auto"), WholeTraceEvaluator)
    assert "streamed evaluation of vecadd (6144 rows" in caplog.text
    assert "--even-banks needs the whole DRAM stream" in caplog.text
    with pytest.raises(traces.InputError, match="even_banks"):
        api._evaluator(path, g, Options(even_banks=True), "yes")
    n = len(cols["cta"])
    back = np.r_[n // 2 : n, 0 : n // 2]
    traces.atomic_write_table(traces.to_table({k: np.asarray(v)[back] for k, v in cols.items()}, info), str(path),
                              row_group_rows=1000)  # fmt: skip
    monkeypatch.setattr(evaluate_stream, "STREAM_ROWS", 1000)  # the blocks out of order in different groups
    with caplog.at_level(logging.WARNING, logger="placement.api"):
        assert isinstance(api._evaluator(path, g, Options(), "auto"), WholeTraceEvaluator)
    assert "block 0 after block" in caplog.text and "evaluating the whole trace instead" in caplog.text
    with pytest.raises(StreamOrderError, match="block order"):
        api._evaluator(path, g, Options(), "yes")


def test_write_ranges_equal_write_range():
    """The streamed facts' one-pass kernel gives write_range's lowest and highest element of every object, both
    ways (all writes, plain stores), on random rows: widths 1 to 16 over 1- to 8-byte elements (lanes that
    straddle elements), partial masks, loads, stores, atomics and rows on no object."""
    from traces import _staging_kernels as SK

    rng = np.random.default_rng(5)
    n = 3000
    bases = np.array([0x1000, 0x90000, 0x200000], np.uint64)
    elems = np.array([4, 1, 8], np.int64)
    obj = rng.integers(-1, 3, n).astype(np.int16)
    op = rng.integers(0, 4, n).astype(np.int8)
    width = rng.choice([1, 2, 4, 8, 16], n).astype(np.int8)
    mask = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    mask[:50] = 0
    addr = bases[np.maximum(obj, 0)][:, None] + rng.integers(0, 50_000, (n, 32)).astype(np.uint64)
    lo = np.full((2, 3), SK.BIG, np.int64)
    hi = np.full((2, 3), -SK.BIG, np.int64)
    for a in range(0, n, 700):  # in groups, as the stream feeds them
        s = slice(a, a + 700)
        SK.write_ranges(obj[s], op[s], mask[s], addr[s], width[s], bases, elems, lo, hi)
    for o in range(3):
        rows = np.flatnonzero(obj == o).astype(np.int64)
        for plain in (False, True):
            want = SK.write_range(rows, op, mask, addr, width, int(bases[o]), int(elems[o]), plain)
            assert (lo[int(plain), o], hi[int(plain), o]) == want, (o, plain)


@pytest.mark.parametrize("rows", [1, 1000])
def test_streamed_write_overlap_equals_owner_array(tmp_path, monkeypatch, rows):
    """The streamed overlap check (one byte per element, blocks in order, the earlier writer found by one more
    read) gives write_overlap's answer: none; a block writing its own element twice (none); two neighbouring
    blocks in one group; a late block writing an early one's element; with the list of a block's elements
    grown from one entry."""
    from placement import streamstaging
    from placement.gpu import get_gpu
    from placement.evaluate_stream import StreamEvaluator

    monkeypatch.setattr(streamstaging, "TOUCHED", 1)
    cols, info = generators.generate("vecadd")
    store = np.flatnonzero(np.asarray(cols["op"]) == 1)
    cases = {"none": lambda c: None}
    cases["own"] = lambda c: c["addr"].__setitem__(store[1], c["addr"][store[0]])  # block 0, warps 0 and 1
    cases["neighbour"] = lambda c: c["addr"].__setitem__(store[8], c["addr"][store[7]])  # block 1 writes block 0's
    cases["late"] = lambda c: c["addr"].__setitem__(store[-1], c["addr"][store[3]])
    for name, edit in cases.items():
        c = {k: np.array(v) for k, v in cols.items()}
        edit(c)
        path = tmp_path / f"{name}.parquet"
        traces.atomic_write_table(traces.to_table(c, info), str(path), row_group_rows=1000)
        whole = traces.staging.write_overlap(traces.read(path), np.flatnonzero(c["obj"] == 2).astype(np.int64), 2)
        ev = StreamEvaluator(path, get_gpu("k80"), rows=rows)
        got = ev.staging.overlap("v", False)
        assert got == whole, name
        assert (got is None) == (name in ("none", "own")), (name, got)


@pytest.mark.parametrize("name,gpu,bps", [CASES[1], CASES[2], CASES[7]])
def test_stream_equals_whole_walked_in_small_chunks(name, gpu, bps, monkeypatch):
    # a held wave walked 777 rows at a time (WALK_CHUNK_ROWS, 262,144 by default), gathered from its groups
    import cachesim.hierarchy

    monkeypatch.setattr(cachesim.hierarchy, "WALK_CHUNK_ROWS", 777)
    t = trace_of(name)
    cfg = hierarchy_config(get_gpu(gpu))
    whole = cachesim.simulate_hierarchy(t, cfg, bps, mlp=2.5)
    totals, pieces = stream(t, cfg, bps, mlp=2.5)  # MLP rounds: the warps' state folded wave by wave
    assert_same(whole, totals, pieces)
    assert (totals.rounds, totals.slow_rounds, totals.copy_rounds) == (whole.rounds, whole.slow_rounds,
                                                                       whole.copy_rounds)  # fmt: skip
    assert whole.rounds > 0


def test_streamed_stagings_take_the_group_before_as_their_hint(tmp_path, monkeypatch):
    # a privatized histogram stages many rows a row (its bins zeroed and reduced back by every block): with no
    # hint every group's staging overflowed its guessed buffers and ran again; with the group before's rate
    # (evaluate_stream.STAGE_RATE_SLACK more) only the first group's can, once per staging option
    from placement.evaluate_stream import StreamEvaluator
    from placement.gpu import get_gpu
    from placement.placements import parse_placement
    from traces import staging as S

    cols, info = generators.generate("histogram", (524288, 1024))
    path = tmp_path / "t.parquet"
    traces.atomic_write_table(traces.to_table(cols, info), str(path), row_group_rows=1000)
    streamed = StreamEvaluator(path, get_gpu("k40"), rows=1000)
    p = parse_placement("bins=S/G", info)
    legal = streamed.check(p)
    runs = []
    kernel = S._Run.rows

    def rows(self, order, cap):
        need, got = kernel(self, order, cap)
        runs.append(got is None)
        return need, got

    monkeypatch.setattr(S._Run, "rows", rows)
    streamed.evaluate(p, legal)
    options = len(legal.staging.options)
    groups = len(runs) - sum(runs)  # one good run a group (or a piece of one) and option
    assert groups >= 10 * options  # many groups
    assert sum(runs) <= options
