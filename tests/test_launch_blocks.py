"""A trace of some of a launch's blocks (``placement trace --ctas``) or of a smaller grid of the same blocks
(``extra.launch_ctas``, a suite's ``launch_ctas``): ``placement.hms.blocks_scale`` and what reads and writes it."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traces
from placement import api
from placement.batch.plan import plan
from placement.batch.suite import SuiteError, load_suite
from placement.gpu import get_gpu
from placement.hms import blocks_scale, t_launch
from placement.training import Sample
from traces import generators
from traces.errors import TraceError
from traces.schema import METADATA_KEY


def _trace(name, size, block, **extra) -> traces.Trace:
    cols, info = generators.generate(name, size, block)
    return traces.Trace(**cols, info=dataclasses.replace(info, extra={**info.extra, **extra}))


def _info(grid, **extra) -> traces.KernelInfo:
    _, info = generators.generate("vecadd", [4096], [256])
    return dataclasses.replace(info, grid=grid, extra={**info.extra, **extra})


def test_blocks_scale_by_hand():
    a100 = get_gpu("a100")  # 108 SMs
    assert a100.compute.sms == 108
    # the A100 convolution suite's 32 x 4 blocks of 2 x 2 tiles: 21 x 165 blocks traced (3,465 / 108 an SM), 64 x 512
    # launched: the busiest SM runs ceil(32,768 / 108) = 304 of them
    assert blocks_scale(_info((21, 165, 1), launch_ctas=32768), a100) == pytest.approx(304 * 108 / 3465, rel=1e-12)
    # 4 blocks recorded of 1,000 (less than a wave): 4 SMs with one block each against ceil(1000 / 108) = 10
    assert blocks_scale(_info((1000, 1, 1), traced_ctas=4), a100) == pytest.approx(10, rel=1e-12)
    # 216 of 1,000 blocks: 2 per SM against 10
    assert blocks_scale(_info((1000, 1, 1), traced_ctas=216), a100) == pytest.approx(5, rel=1e-12)
    assert blocks_scale(_info((16, 1, 1)), a100) == 1.0
    # a whole launch whose blocks do not spread evenly: 1,000 on 108 SMs, the busiest with 10 against 1000 / 108
    assert blocks_scale(_info((1000, 1, 1)), a100) == pytest.approx(10 * 108 / 1000, rel=1e-12)
    assert blocks_scale(_info((216, 1, 1)), a100) == 1.0


def test_kernel_info_defaults_to_the_grid():
    info = _info((7, 3, 1))
    assert (info.traced_ctas, info.launch_ctas) == (21, 21)
    info = _info((7, 3, 1), traced_ctas=5, launch_ctas=40)
    assert (info.traced_ctas, info.launch_ctas) == (5, 40)


@pytest.mark.parametrize("gpu", ["a100", "h100"])
def test_half_the_waves_scaled_is_the_whole_trace(gpu):
    """vecadd's blocks do alike and share nothing: half its grid, scaled to the whole launch, is the whole trace's
    time to rounding; conv2d_kt's share the image's rows with their neighbours, within 5 %."""
    whole = _trace("vecadd", [1 << 20], [256])
    half = _trace("vecadd", [1 << 19], [256], launch_ctas=whole.info.ctas)
    tw = api.evaluate(whole, gpu).sample.evaluation.target
    th = api.evaluate(half, gpu).sample.evaluation.target
    # 4,096 blocks: the busiest SM runs ceil(4096 / SMs) of them, the trace's terms spread them evenly
    busiest = math.ceil(4096 / get_gpu(gpu).compute.sms)
    assert tw.blocks_scale == pytest.approx(busiest / (4096 / get_gpu(gpu).compute.sms), rel=1e-12)
    assert th.blocks_scale == pytest.approx(2 * tw.blocks_scale, rel=1e-12)
    assert th.time_ns == pytest.approx(tw.time_ns, rel=1e-9)
    whole = _trace("conv2d_kt", [512, 512], [32, 4, 2, 2])
    half = _trace("conv2d_kt", [512, 256], [32, 4, 2, 2], launch_ctas=whole.info.ctas)
    tw = api.evaluate(whole, gpu).sample.evaluation.target
    th = api.evaluate(half, gpu).sample.evaluation.target
    assert th.blocks_scale == pytest.approx(2 * tw.blocks_scale, rel=1e-12)
    assert th.time_ns == pytest.approx(tw.time_ns, rel=0.05)


def test_scaled_time_keeps_the_ratios_and_launches_the_launchs_blocks():
    t = _trace("conv2d_kt", [256, 256], [32, 4, 2, 2])
    k = 5
    big = _trace("conv2d_kt", [256, 256], [32, 4, 2, 2], launch_ctas=k * t.info.ctas)
    # an A100 without a launch cost (its configuration assumes the H100's floor): the busiest of its 108 SMs runs
    # 2 of the trace's 128 blocks and 6 of the launch's 640, so every time is 3 times the trace's, the speedup the
    # same
    g = get_gpu("a100")
    g = dataclasses.replace(g, compute=dataclasses.replace(g.compute, launch_us=0.0))
    a100 = api.evaluate(t, g, "input=R")
    a100k = api.evaluate(big, g, "input=R")
    for r, rk in ((a100.sample, a100k.sample), (a100.target, a100k.target)):
        assert rk.evaluation.target.time_ns == pytest.approx(3 * r.evaluation.target.time_ns, rel=1e-12)
        assert rk.evaluation.target.t_comp == r.evaluation.target.t_comp  # the terms stay the trace's
    assert a100k.target.evaluation.speedup == pytest.approx(a100.target.evaluation.speedup, rel=1e-12)
    # the H100's launch: the floor plus the dispatch of the launch's blocks that the kernel does not cover
    h100 = get_gpu("h100")
    s = api.evaluate(big, h100).sample.evaluation.target
    kernel = s.cycles - s.t_launch
    assert s.t_launch == pytest.approx(t_launch(h100, k * t.info.ctas, kernel), rel=1e-12)
    # 128 blocks fill 128 of the H100's 132 SMs, one each; the launch's 640 take ceil(640 / 132) = 5 on the busiest
    assert t.info.ctas == 128 and s.blocks_scale == pytest.approx(5, rel=1e-12)
    assert kernel == pytest.approx(s.blocks_scale * max(s.t_comp + s.t_mem - s.t_overlap, s.t_round, s.t_block))


def test_training_undoes_the_scale():
    """A measured time equal to the model's own gives back the trace's T: (T_comp + T_mem - T) / T_mem with T the
    trace's blocks' (Eq. 1, or T_round or T_block where one binds), not the launch's."""
    t = _trace("conv2d_kt", [256, 256], [32, 4, 2, 2], launch_ctas=4 * 128)
    gpu = get_gpu("h100")
    x = api.evaluate(t, gpu).sample.evaluation.target
    assert x.blocks_scale == pytest.approx(4, rel=1e-12)  # ceil(512 / 132) on the busiest SM, the trace's 1
    s = Sample(kernel="conv2d_kt", trace="t", placement="", measured_ns=x.time_ns, terms=x)
    own = max(x.t_comp + x.t_mem - x.t_overlap, x.t_round, x.t_block)
    assert s.observed_ratio(gpu) == pytest.approx((x.t_comp + x.t_mem - own) / x.t_mem, rel=1e-9)


def _with_extra(tmp_path, **extra):
    import pyarrow.parquet as pq

    t = _trace("vecadd", [512], [64])  # 8 blocks
    d = json.loads(t.info.to_json())
    d["extra"].update(extra)
    p = tmp_path / "t.parquet"
    table = traces.to_table(t.columns(), t.info)
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(d).encode()}), p)
    return p


_VALUES = st.one_of(st.integers(-(1 << 40), 1 << 40), st.floats(allow_nan=True), st.booleans(), st.text(max_size=4),
                    st.none(), st.lists(st.integers(), max_size=2))  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(["traced_ctas", "launch_ctas"]), value=_VALUES)
def test_block_counts_read_or_one_line(tmp_path_factory, key, value):
    """Any value of either key: read back where it is a whole number in range (traced 1..8, launched 8..), else a
    TraceError naming the file and the field."""
    p = _with_extra(tmp_path_factory.mktemp("t"), **{key: value})
    ok = value is None or (type(value) is int and (1 <= value <= 8 if key == "traced_ctas" else value >= 8))
    ok = ok and not (type(value) is int and value > 65535 * 65535 * ((1 << 31) - 1))
    if ok:
        info = traces.read_info(p)
        assert getattr(info, key) == (value or 8)
    else:
        with pytest.raises(TraceError) as e:
            traces.read_info(p)
        assert e.value.field == f"extra.{key}" and str(p) in str(e.value) and "\n" not in str(e.value)


def test_cli_bad_block_count_is_one_line_exit_2(tmp_path, run_cli):
    p = _with_extra(tmp_path, launch_ctas=3)
    code, out, err = run_cli("evaluate", p, "--gpu", "h100")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{p}: extra.launch_ctas: launch_ctas must be a whole number of blocks from the grid's 8 to CUDA's" in err


def test_suite_launch_ctas(tmp_path):
    def suite(entry: str):
        f = tmp_path / "s.toml"
        f.write_text(f'gpu = "a100"\n[[entry]]\nid = "e"\n{entry}\nplacements = [""]\n')
        return f

    s = load_suite(suite('generator = "vecadd"\nsize = [4096]\nblock = [256]\nlaunch_ctas = 160'))
    src = s.entries[0].source
    assert src.launch_ctas == 160 and "launch_ctas=160" in src.key and "launch_ctas=160" in src.label
    assert src.load().info.launch_ctas == 160
    # under the generator's grid (16 blocks): known once the trace is built, the plan's, which says it of the suite
    # file's entry as it does a trace file's errors
    small = suite('generator = "vecadd"\nsize = [4096]\nblock = [256]\nlaunch_ctas = 15')
    with pytest.raises(TraceError):
        load_suite(small).entries[0].source.load()
    with pytest.raises(SuiteError) as e:
        plan(load_suite(small))
    msg = str(e.value)
    assert msg.startswith(f"{small}: entry 1 ") and "\n" not in msg
    assert "extra.launch_ctas: launch_ctas must be a whole number of blocks from the grid's 16 " in msg
    for bad in ("0", '"many"', "2.5", "true"):
        with pytest.raises(SuiteError, match="launch_ctas must be a whole number"):
            load_suite(suite(f'generator = "vecadd"\nlaunch_ctas = {bad}'))
    t = tmp_path / "t.parquet"
    tr = _trace("vecadd", [512], [64])
    traces.write(t, tr.columns(), tr.info)
    with pytest.raises(SuiteError, match="launch_ctas go with 'generator'"):
        load_suite(suite(f'trace = "{t}"\nlaunch_ctas = 100'))


def test_subset_trace_records_its_blocks(tmp_path):
    """The sanitizer decoder writes extra.traced_ctas where --ctas recorded fewer blocks than the launch's."""
    from test_sanitizer_records import ALLOCS, _accesses, _launch
    from traces.sanitizer.decode import import_sanitizer
    from traces.sanitizer.records import encode

    def launch(grid):
        return dataclasses.replace(_launch(), grid=grid)

    p = tmp_path / "rec.bin"
    p.write_bytes(encode(launch((5, 1, 1)), ALLOCS, _accesses(), chunk_rows=5))
    _, info = import_sanitizer(p, ctas="0-1")
    assert info.extra["traced_ctas"] == 2 and (info.traced_ctas, info.launch_ctas) == (2, 5)
    _, info = import_sanitizer(p)  # no --ctas: the rows are the launch's, whatever ran
    assert "traced_ctas" not in info.extra and info.traced_ctas == 5
    p.write_bytes(encode(launch((2, 1, 1)), ALLOCS, _accesses(), chunk_rows=5))
    _, info = import_sanitizer(p, ctas="0-1")  # both blocks of the launch: nothing to scale
    assert "traced_ctas" not in info.extra
    assert np.isclose(blocks_scale(info, get_gpu("h100")), 1.0)


def test_text_output_says_the_scale_and_shows_the_launchs_terms(tmp_path, run_cli):
    t = _trace("conv2d_kt", [256, 256], [32, 4, 2, 2], launch_ctas=1280)  # 128 blocks traced, one an SM
    p = tmp_path / "t.parquet"
    traces.write(p, t.columns(), t.info)
    code, out, _ = run_cli("evaluate", p, "--gpu", "h100", "--place", "input=R")
    assert code == 0
    scale = 10  # ceil(1280 / 132), the launch's blocks on the busiest SM; the trace's one an SM
    assert f"x {scale:.4g} (the busiest SM's blocks of the launch over the trace's blocks per SM" in out
    r = api.evaluate(t, "h100", "input=R")
    s = r.sample.evaluation.target
    assert s.term_ns_per_cycle == pytest.approx(s.time_ns / s.cycles * scale, rel=1e-12)
    # the terms at term_ns_per_cycle add up to the change of the launch's time (its launch cost is the floor
    # in both: 1,280 blocks' dispatch, 0.77 us, is under either kernel)
    x = r.target.evaluation.target

    def own(z):
        return max(z.t_comp + z.t_mem - z.t_overlap, z.t_round, z.t_block)

    assert x.t_launch == s.t_launch
    assert (own(x) - own(s)) * s.term_ns_per_cycle == pytest.approx(x.time_ns - s.time_ns, rel=1e-9)
    code, out, _ = run_cli("info", p)
    assert code == 0 and "128 of its launch's 1,280 in the trace" in out


def test_streamed_equals_whole(tmp_path):
    t = _trace("conv2d_kt", [256, 256], [32, 4, 2, 2], launch_ctas=1280)
    p = tmp_path / "t.parquet"
    traces.write(p, t.columns(), t.info)
    whole = api.evaluate(p, "h100", "input=S/G", stream="no")
    streamed = api.evaluate(p, "h100", "input=S/G", stream="yes")
    for a, b in ((whole.sample, streamed.sample), (whole.target, streamed.target)):
        assert b.evaluation.target.blocks_scale == a.evaluation.target.blocks_scale == pytest.approx(10)
        assert b.evaluation.target.time_ns == pytest.approx(a.evaluation.target.time_ns, rel=1e-12)


def test_the_blocks_line_says_which_reason_applies():
    """It listed every reason the scale can have; now the one that applies, with its numbers. conv1d's 64 blocks on
    the K80's 13 SMs: 5 on the busiest, 64 / 13 = 4.92 on average (x 65 / 64); conv2d_kt's 128 of a launch of 640 on
    the A100's 108 SMs: 6 on the busiest of the launch over 128 / 108 of the trace."""
    from conftest import ROOT
    from placement.textout import evaluation_text, rank_text

    e = api.evaluate(ROOT / "configs" / "examples" / "conv1d.parquet", "k80", "in=T")
    line = next(x for x in evaluation_text(e).splitlines() if x.startswith("Blocks:"))
    assert "x 1.016 (" in line and "the launch's 64 blocks on 13 SMs: the busiest runs 5, 4.92 on average)" in line
    assert "traced_ctas" not in line
    t = _trace("conv2d_kt", [256, 256], [32, 4, 2, 2], launch_ctas=5 * 128)
    r = api.rank(t, "a100", top=1, workers=1)
    line = next(x for x in rank_text(r).splitlines() if x.startswith("Blocks:"))
    assert r.blocks == (640, 128) and f"x {6 / (128 / 108):.4g} (" in line
    assert ("the trace holds 128 of its launch's 640 blocks (extra.traced_ctas, extra.launch_ctas); the launch's 640 "
            "blocks on 108 SMs: the busiest runs 6, 5.93 on average)") in line  # fmt: skip
