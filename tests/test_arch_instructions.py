"""Per-architecture instruction counts: ``traces/generators/instructions.toml`` (benchmarks/arch_instructions.py),
the generator's ``extra["inst_by_arch"]``, its validation, and the scale the model takes
(``placement.builds.inst_scale``)."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traces
from placement.builds import inst_scale
from placement.evaluate_stream import StreamEvaluator
from placement.evaluate_whole import WholeTraceEvaluator
from placement.gpu import get_gpu
from placement.placements import parse_placement
from traces import generators
from traces.generators import _common as C
from traces.generators import conv
from traces.schema import KernelInfo

from test_arch_registers import _metadata
from test_sass_exec import NCU_H200, conv_per_warp

TABLE = C.instructions()["conv2d_kt"]
SHAPES = [",".join(map(str, s)) for s in itertools.product((1, 2, 4, 8, 16), (1, 2, 3, 4), (1, 2, 3, 4))]


def _spills(key: str, arch: str) -> bool:
    """Whether nvcc spills the shape's plain build on ``arch`` (``registers.toml``: [registers, store, load bytes])."""
    v = C.registers()["conv2d_kt"][key][arch]
    return not isinstance(v, int) and bool(v[1] or v[2])


def test_the_table_covers_kernel_tuners_space_and_its_sm_80_counts_are_the_generators():
    # the generator's counts come from the sm_80 recipe scaled by the shape (conv.warp_counts, checked against nvcc's
    # SASS in tests/test_generators_conv.py), spills left out; the interpreter's sm_80 counts are the same on every
    # shape nvcc does not spill but one (a 1-row block with 2 x 1 tiles, 923 against 921), and above it on the three
    # it does (2-, 4- and 8-row blocks with 4 x 4 tiles: their LDL and STL)
    assert sorted(TABLE) == sorted(SHAPES)
    spilled, off = [], []
    for key in SHAPES:
        by, tx, ty = map(int, key.split(","))
        formula = sum(conv.warp_counts(32, by, tx, ty).values())
        if _spills(key, "sm_80"):
            spilled.append(key)
            assert TABLE[key]["sm_80"] > formula, key
        elif TABLE[key]["sm_80"] != formula:
            off.append(key)
            assert abs(TABLE[key]["sm_80"] - formula) <= 2, key
    assert spilled == ["2,4,4", "4,4,4", "8,4,4"] and off == ["1,2,1"]


def test_sm_90s_counts_are_nsight_computes_on_an_h200():
    # the plain (G) builds measured on an H200 (smsp__inst_executed over the warps); the code does not depend on
    # block_size_x >= 15, so the 16- and 64-wide blocks read the 32-wide entries
    for (bx, by, tx, ty), (g, *_) in NCU_H200.items():
        assert TABLE[f"{by},{tx},{ty}"]["sm_90"] == g, (bx, by, tx, ty)


def test_sm_90_adds_the_filters_uldc_64s_at_every_shape_it_does_not_spill():
    # 225 filter floats, two a ULDC.64: 113 and one more, at every tile (the filter is read once a thread whatever the
    # tile: its constants are shared by the tile's FFMAs); 115 where nvcc splits one pair
    # where neither build spills; the one other (2-row blocks with 4 x 3 tiles, 254 registers on sm_90) adds 209
    plain = [k for k in SHAPES if not _spills(k, "sm_80") and not _spills(k, "sm_90")]
    assert len(plain) == 64
    assert [k for k in plain if TABLE[k]["sm_90"] - TABLE[k]["sm_80"] not in (114, 115)] == ["2,4,3"]
    # and a build that spills on sm_90 issues more, its LDL and STL (4-row blocks with 4 x 4 tiles: 11,517 a warp)
    assert all(TABLE[k]["sm_90"] - TABLE[k]["sm_80"] > 115 for k in SHAPES if _spills(k, "sm_90"))
    # Turing, Ampere's GA10x and Ada read the filter as operands too: within 2 of sm_80 where neither spills
    for a in ("sm_75", "sm_86", "sm_89"):
        same = [k for k in SHAPES if not _spills(k, "sm_80") and not _spills(k, a)]
        assert all(abs(TABLE[k][a] - TABLE[k]["sm_80"]) <= 2 for k in same), a


@pytest.mark.parametrize("arch, shape", [("sm_90", (32, 2, 2, 2)), ("sm_100", (32, 1, 1, 1)), ("sm_75", (48, 4, 3, 1))])
def test_the_table_is_the_interpreters(tmp_path, arch, shape):
    assert conv_per_warp(tmp_path, arch, shape, 0, 0) == TABLE[",".join(map(str, shape[1:]))][arch]


def test_the_generator_scales_each_architecture_by_sm_80s():
    _, info = generators.generate("conv2d_kt", [128, 64], [64, 1, 1, 1])
    by_arch = info.extra["inst_by_arch"]
    assert by_arch["sm_80"] == 1.0 and by_arch["sm_90"] == round(582 / 468, 6)
    # the trace's own counts are sm_80's: a full warp of the shape, 468
    assert sum(conv.warp_counts(64, 1, 1, 1).values()) == 468
    # outside the table (block narrower than the filter) nothing is scaled
    _, narrow = generators.generate("conv2d_kt", [64, 64], [8, 4, 1, 1])
    assert "inst_by_arch" not in narrow.extra and inst_scale(narrow, get_gpu("h200")) == 1.0


def test_the_sample_issues_the_gpus_builds_count(tmp_path):
    # Eq. 3's issued count of the sample is the trace's times the scale of the GPU's architecture, and the targets
    # (derived from the sample's) keep the difference: on the H200 (sm_90) 582 / 468 of the trace's, on the A100
    # (sm_80) the trace's; the replays go on top unscaled, and no other term changes
    cols, info = generators.generate("conv2d_kt", [128, 64], [64, 1, 1, 1])
    plain = replace(info, extra={k: v for k, v in info.extra.items() if k != "inst_by_arch"})
    scale = info.extra["inst_by_arch"]["sm_90"]
    for gpu, s in (("h200", scale), ("a100", 1.0)):
        g = get_gpu(gpu)
        with_ = WholeTraceEvaluator(traces.Trace(**cols, info=info), g).sample
        without = WholeTraceEvaluator(traces.Trace(**cols, info=plain), g).sample
        replays = float(sum(with_.replays.values()))
        assert with_.replays == without.replays
        assert with_.issued_instructions - replays == pytest.approx((without.issued_instructions - replays) * s)
        assert with_.executed_instructions == pytest.approx(info.instructions.executed * s)
    # the streaming evaluator takes it the same way
    path = tmp_path / "kt.parquet"
    traces.write(path, cols, info)
    h200 = get_gpu("h200")
    whole = WholeTraceEvaluator(traces.Trace(**cols, info=info), h200).evaluate_many(
        [parse_placement("input=S/G;windows=1;unrolled", info)])[0]  # fmt: skip
    stream = StreamEvaluator(path, h200).evaluate_many([parse_placement("input=S/G;windows=1;unrolled",
                                                                                     info)])[0]  # fmt: skip
    assert stream.target.issued_instructions == pytest.approx(whole.target.issued_instructions)


def test_the_seed_models_take_the_scale(tmp_path):
    from placement.models.kernel import kernel_from_trace

    cols, info = generators.generate("conv2d_kt", [128, 64], [64, 1, 1, 1])
    path = tmp_path / "kt.parquet"
    traces.write(path, cols, info)
    a100, h200 = kernel_from_trace(path, get_gpu("a100")), kernel_from_trace(path, get_gpu("h200"))
    extra = info.instructions.executed / info.instructions.warps * (info.extra["inst_by_arch"]["sm_90"] - 1)
    assert h200.comp_insts - a100.comp_insts == pytest.approx(extra)


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.text(max_size=5),
                 st.dictionaries(st.text(max_size=8), st.one_of(st.floats(-2, 200), st.text(max_size=3), st.booleans()),
                                 max_size=4)))  # fmt: skip
def test_any_inst_by_arch_reads_or_is_one_trace_error(by_arch):
    try:
        info = KernelInfo.from_json(_metadata(by_arch, "inst_by_arch"), "t.parquet")
    except traces.TraceError as exc:
        assert "\n" not in str(exc)
        return
    assert inst_scale(info, get_gpu("h100")) in set((by_arch or {}).values()) | {1.0}


def test_placement_info_shows_the_scale(tmp_path, capsys):
    from placement.cli import main

    cols, info = generators.generate("conv2d_kt", [128, 64], [64, 1, 1, 1])
    path = tmp_path / "kt.parquet"
    traces.write(path, cols, info)
    assert main(["info", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["inst_by_arch"]["sm_90"] == info.extra["inst_by_arch"]["sm_90"]
