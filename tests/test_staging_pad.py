"""Padded rows of a staged 2D tile (``;pad=P``, ``traces.staging.best_pad``): bank conflicts by hand, Kernel Tuner's
own padding rule as an independent reference, a pure-Python count of the banks, and what the evaluation and the
CUDA hints make of it."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import placement
import traces
from placement import hints as H
from placement.gpu import get_gpu
from placement.placements import MAX_PAD, IllegalPlacement, parse_placement
from traces import generators
from traces import staging as ts

from test_staging import BASE, trace_of

H100 = get_gpu("h100")


@pytest.fixture(scope="module")
def transpose():
    # 256 x 256 floats, 32 x 8 blocks: each warp writes 32 rows of one odata column
    return generators.trace("transpose")


def _pad_of(t: traces.Trace, name: str, pitch: int, banks: int = 32, bank_bytes: int = 4):
    o = t.info.object(name)
    return ts.best_pad(t, ts.object_rows(t, ts.program_order(t), o.id), o.id, pitch, banks, bank_bytes)


def test_a_transposes_column_writes_by_hand(transpose):
    # odata's 32 x 32 tile is written down a column: lane l at row l, the same column. Rows 32 floats (128 B) apart
    # put all 32 words in one bank (32 wavefronts); a pad of 1 (stride 33) puts word l in bank l (1 wavefront).
    # idata is read along rows (one line, 32 banks): nothing to pad.
    writes = int((transpose.obj == transpose.info.object("odata").id).sum())
    assert writes == 256 * 256 // 32
    assert _pad_of(transpose, "odata", 32) == (1, writes, 32 * writes)
    assert _pad_of(transpose, "idata", 32) == (0, writes, writes)
    # with Kepler's 8-byte banks a pad of 1 float moves a row by half a word: word 16.5 l, still 2 lanes a bank
    # every other row; 2 floats (one word) are the fewest that clear them
    assert _pad_of(transpose, "odata", 32, bank_bytes=8)[:2] == (2, writes)


def test_kernel_tuners_padding_rule_is_the_fewest_conflicts():
    # Kernel Tuner's convolution (benchmark_hub, use_padding = 1) pads a 16-wide block's tile by
    # (32 - (14 + 16 tx - 16)) & 31 columns: 18 with 1 x 1 tiles (30 -> 48 floats), 2 with 2 x 2 (46 -> 48). A warp
    # reads two 16-float half-rows, disjoint in the 32 banks only at a stride of 16 mod 32: the same pads
    import sys

    sys.path.insert(0, str(__import__("conftest").ROOT / "benchmarks"))
    from make_placement_suites import kt_pad

    assert (kt_pad(16, 1), kt_pad(16, 2), kt_pad(32, 1), kt_pad(64, 2), kt_pad(128, 1)) == (18, 2, 0, 0, 0)
    for tx, width in ((1, 30), (2, 46)):
        t = generators.trace("conv2d_kt", [64 * tx, 16], [16, 2, tx, 1])
        pad, deg, bare = _pad_of(t, "input", width)
        assert pad == kt_pad(16, tx) and (width + pad) % 32 == 16
        assert 1.9 < bare / deg <= 2.0  # a 2-way conflict on nearly every read (some rows hold one half only)


def _degree_by_hand(rc: list[list[tuple[int, int]]], stride: int, banks: int = 32) -> int:
    total = 0
    for lanes in rc:
        words = {r * stride + c for r, c in lanes}  # 4-byte elements, 4-byte words
        per_bank: dict[int, int] = {}
        for w in words:
            per_bank[w % banks] = per_bank.get(w % banks, 0) + 1
        total += max(per_bank.values(), default=0)
    return total


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.tuples(st.integers(0, 63), st.integers(0, 63)), min_size=32, max_size=32), min_size=1,
                max_size=6), st.integers(1, 70))  # fmt: skip
def test_bank_degrees_match_a_reference(accesses, pitch):
    # any 32 (row, column) elements an access of a 64 x 64 float array: the kernel's summed degree at each of the
    # 32 strides pitch .. pitch + 31 equals a set-based count, and best_pad takes the smallest of the fewest
    X = traces.ObjectInfo(0, "X", "global", BASE, 64 * 64 * 4, 4, (64, 64), False)
    rows = [(0, 0, k, 0, 0, np.array([r * 64 + c for r, c in a]), 0xFFFFFFFF) for k, a in enumerate(accesses)]
    t = trace_of(rows, [X], ctas=1)
    idx = ts.object_rows(t, ts.program_order(t), 0)
    strides = np.arange(32, dtype=np.int64) + pitch
    out = np.zeros(32, np.int64)
    from traces import _staging_kernels as K

    K.tile_bank_degrees(idx, t.mask, t.addr, t.width, np.int64(BASE), np.int64(4), np.int64(64), strides,
                        np.int64(32), np.int64(4), out)  # fmt: skip
    want = [_degree_by_hand(accesses, int(s)) for s in strides]
    assert out.tolist() == want
    pad, deg, bare = ts.best_pad(t, idx, 0, pitch, 32, 4)
    assert deg == min(want) and bare == want[0] and pad == want.index(min(want))


def test_the_placement_option(transpose):
    info = transpose.info
    p = parse_placement("odata=S/G;pad=1", info)
    assert p.pad == 1 and p.label() == "idata=G,odata=S/G;pad=1"
    assert parse_placement("odata=S;windows=1;unrolled;pad=0", info).pad == 0
    for bad, why in (("odata=S/G;pad=x", "pad=P"), (f"odata=S/G;pad={MAX_PAD + 1}", "pad=P"),
                     ("odata=S/G;pad=1;pad=2", "at most once"), ("idata=T;pad=1", "no 2D object")):  # fmt: skip
        with pytest.raises(traces.InputError, match=why):
            parse_placement(bad, info)


def test_the_tool_pads_and_says_so(transpose):
    # the tool's choice pads odata's rows by 1: no shared bank conflicts, where the unpadded tile (;pad=0, the code
    # one wrote without padding) replays each 32-way write 31 times, and it is the faster of the two it tried
    ev = placement.evaluate(transpose, H100, "odata=S/G", hints=True)
    bare = placement.evaluate(transpose, H100, "odata=S/G;pad=0")
    writes = 256 * 256 // 32
    t, b = ev.target.evaluation.target, bare.target.evaluation.target
    assert t.staging["tiles"]["odata"] == {"bytes": 32 * 33 * 4, "pitch": 32, "pad": 1}
    assert b.staging["tiles"]["odata"] == {"bytes": 32 * 32 * 4, "pitch": 32, "pad": 0}
    assert t.replays["shared memory bank conflicts"] == 0 and b.replays["shared memory bank conflicts"] == 31 * writes
    assert t.time_ns < b.time_ns and t.time_ns == min(x["time_ns"] for x in t.staging["tried"])
    (h,) = [x for x in ev.hints if x.object == "odata"]
    assert "__shared__ float s_odata[32][32 + 1];" in h.kernel and "padded by 1 element" in h.kernel
    assert "c < 32;" in h.kernel  # the copy (here the write-back) covers the 32 columns, not the padding
    assert any("its rows padded to 33 elements (;pad=1)" in f for o in ev.target.explanation.objects for f in o.facts)


def test_an_asked_pad_takes_the_windows_it_fits_in(transpose):
    # an H100 allowing 4,096 bytes a block: odata's 32 x 32 float tile fits in one window unpadded (4,096 B) but not
    # padded by 1 (32 x 33 x 4 = 4,224 B); ;pad=1 takes the 2 windows whose 32 x 16 tile padded to 17 fits (2,176 B)
    # where it used to stay unpadded in one window without a word, and ;windows=1;pad=1 is refused
    import dataclasses

    small = dataclasses.replace(H100, memory=dataclasses.replace(H100.memory, smem_per_block=4096))
    tool = placement.evaluate(transpose, small, "odata=S/G").target.evaluation.target
    assert tool.staging["windows"] == 1 and tool.staging["tiles"]["odata"]["pad"] == 0  # the pad does not fit
    asked = placement.evaluate(transpose, small, "odata=S/G;pad=1").target.evaluation.target
    assert asked.staging["windows"] == 2
    assert asked.staging["tiles"]["odata"] == {"bytes": 32 * 17 * 4, "pitch": 16, "pad": 1}
    assert asked.staging["why"] == "fewest windows that fit, the padded tiles of ;pad=1"
    with pytest.raises(IllegalPlacement, match="need 4,224 bytes of shared memory per block"):
        placement.evaluate(transpose, small, "odata=S/G;windows=1;pad=1")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed (CUDA toolkit): not compiled")
def test_padded_hints_compile(transpose, tmp_path):
    ev = placement.evaluate(transpose, H100, "odata=S/G", hints=True)
    src = tmp_path / "hints.cu"
    src.write_text(H.translation_unit(ev.hints))
    r = subprocess.run(["nvcc", "-c", "-arch=sm_90", str(src), "-o", str(tmp_path / "hints.o")], capture_output=True,
                       text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr


def test_a_streamed_trace_pads_the_same(transpose, tmp_path):
    # the streamed evaluator weighs the pad on the file's first group of blocks: the same pad, the same time
    path = tmp_path / "transpose.parquet"
    traces.write(path, transpose, transpose.info)
    whole = placement.evaluate(path, H100, "odata=S/G", stream="no").target.evaluation.target
    streamed = placement.evaluate(path, H100, "odata=S/G", stream="yes").target.evaluation.target
    assert streamed.staging["tiles"] == whole.staging["tiles"] == {"odata": {"bytes": 4224, "pitch": 32, "pad": 1}}
    assert streamed.time_ns == pytest.approx(whole.time_ns, rel=1e-12)
