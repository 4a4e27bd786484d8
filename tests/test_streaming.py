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

GROUP = 1000


def trace_of(name: str) -> traces.Trace:
    cols, info = generators.generate(name)
    return traces.Trace(**{k: np.asarray(v) for k, v in cols.items()}, info=info)


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
    assert (totals.dram_requests, totals.dram_bytes, totals.row_buffer, totals.n_banks) == (
        w.dram_requests, w.dram_bytes, w.row_buffer, w.n_banks)  # fmt: skip
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
