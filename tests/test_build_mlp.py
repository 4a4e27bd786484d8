"""MLP per architecture and per placement build (``placement.builds``, ``traces/generators/mlp.toml``,
``benchmarks/arch_mlp.py``)."""

from __future__ import annotations

import json
import sys
import tempfile
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traces
from placement.builds import arch_value, mlp_for, own_mlp
from placement.gpu import get_gpu as load_gpu
from placement.hms import residency
from placement.occupancy import occupancy, regs_for
from traces import generators
from traces.generators import _common as C
from traces.schema import KernelInfo
from conftest import benchmark_script

ROOT = Path(__file__).resolve().parent.parent


def _script():
    return benchmark_script("arch_mlp")


def _info(extra: dict) -> KernelInfo:
    _, info = generators.generate("vecadd", [4096], [256])
    ex = {k: v for k, v in info.extra.items() if not k.startswith("mlp")}
    return replace(info, extra={**ex, **extra})


def test_arch_value_takes_the_gpus_build_else_the_nearest_lower_of_its_major():
    by_arch = {"sm_75": 7.75, "sm_80": 16.1, "sm_86": 22.0, "sm_90": 87.2}
    assert arch_value(by_arch, (8, 0)) == 16.1
    assert arch_value(by_arch, (8, 6)) == 22.0
    assert arch_value(by_arch, (8, 9)) == 22.0  # Ada reads Ampere's sm_86
    assert arch_value(by_arch, (9, 0)) == 87.2
    assert arch_value(by_arch, (7, 5)) == 7.75
    assert arch_value(by_arch, (7, 0)) is None  # Volta: sm_75 is not lower
    assert arch_value(by_arch, (10, 0)) is None  # Blackwell is another family
    assert arch_value({}, (9, 0)) is None


def test_mlp_for_prefers_the_placements_build_then_the_architecture_then_the_trace():
    h100, a100, v100 = (load_gpu(n) for n in ("h100", "a100", "v100"))
    info = _info({"mlp": 16.133, "mlp_by_arch": {"sm_80": 16.1, "sm_90": 87.2},
                  "mlp_by_placement": {"a=R": {"sm_80": 10.5, "sm_90": 93.8}}})  # fmt: skip
    assert mlp_for(info, h100) == 87.2 and mlp_for(info, a100) == 16.1
    assert mlp_for(info, h100, "a=R") == 93.8 and mlp_for(info, a100, "a=R") == 10.5
    assert own_mlp(info, h100, "a=R") == 93.8 and own_mlp(info, h100, "b=R") is None and own_mlp(info, h100, "") is None
    assert mlp_for(info, h100, "b=R") == 87.2  # a build the trace does not know: the architecture's
    assert mlp_for(info, v100) == mlp_for(info, v100, "a=R") == 16.133  # no Volta build: the trace's own
    assert mlp_for(info) == 16.133  # no GPU: the trace's
    assert mlp_for(_info({})) == 1.0 and mlp_for(_info({"mlp": 0}), h100) == 1.0


def test_every_kernels_sm80_mlp_is_the_recipes():
    # the recipes are sm_80 builds of the same sources (benchmarks/sass_recipes.py), the table every
    # architecture's (benchmarks/arch_mlp.py): two runs of the same rule on the same SASS
    table, recipes = C.mlps()["kernels"], C.recipes()
    assert set(table) >= {"conv1d", "matvec", "matmul_naive", "matmul_tiled_16", "histogram", "conv2d_kt"}
    for name, per in table.items():
        if name in recipes:
            assert per["sm_80"] == pytest.approx(recipes[name].get("mlp", 1.0), abs=1e-3), name
    # conv2d_kt's recipe is its default shape, 32 x 4 with 2 x 2 tiles
    assert C.mlps()["conv2d_kt"]["4,2,2"]["sm_80"] == pytest.approx(recipes["conv2d_kt"]["mlp"], abs=1e-3)


def test_conv2d_kt_hopper_hoists_its_loads():
    # nvdisasm -c of nvcc 13.0 -O3 (checked by hand, 28 Nov 2026): the 32 x 4 block with 2 x 2 tiles
    # issues 16.1 loads on average before it waits on sm_80 and 87.2 on sm_90 (254 registers), and
    # its __ldg build 10.5 and 93.8
    kt = C.mlps()["conv2d_kt"]
    assert kt["4,2,2"]["sm_80"] == pytest.approx(16.1, abs=0.05)
    assert kt["4,2,2"]["sm_90"] == pytest.approx(87.2, abs=0.05)
    assert kt["R,4,2,2"]["sm_80"] == pytest.approx(10.5, abs=0.05)
    assert kt["R,4,2,2"]["sm_90"] == pytest.approx(93.8, abs=0.05)
    assert len([k for k in kt if not k.startswith("R,")]) == 80 and len([k for k in kt if k.startswith("R,")]) == 80


def test_generated_traces_carry_the_mlps_and_they_survive_a_file(tmp_path):
    cols, info = generators.generate("conv2d_kt", [256, 128], [32, 4, 2, 2])
    kt = C.mlps()["conv2d_kt"]
    assert info.extra["mlp_by_arch"] == kt["4,2,2"]
    assert info.extra["mlp_by_placement"] == {"input=R": kt["R,4,2,2"]}
    path = tmp_path / "k.parquet"
    traces.write(path, cols, info)
    back = traces.read(path).info
    assert back.extra["mlp_by_arch"] == info.extra["mlp_by_arch"]
    assert back.extra["mlp_by_placement"] == info.extra["mlp_by_placement"]
    # a kernel of benchmarks/kernels carries its own row
    _, mv = generators.generate("matvec", [1024], [128])
    assert mv.extra["mlp_by_arch"] == C.mlps()["kernels"]["matvec"]
    # a conv2d_kt shape outside the table (block_size_x < 15) keeps the recipe's MLP everywhere, as its
    # registers: not the kernels' row, which is the default shape's (2 x 2 tiles: 87.2 on sm_90)
    _, small = generators.generate("conv2d_kt", [64, 64], [8, 4, 1, 1])
    assert small.extra["mlp_by_arch"] == {} and "mlp_by_placement" not in small.extra
    assert mlp_for(small, load_gpu("h100")) == C.recipes()["conv2d_kt"]["mlp"] == 16.133


def test_residency_takes_the_builds_mlp():
    _, info = generators.generate("conv2d_kt", [512, 256], [32, 4, 2, 2])
    kt = C.mlps()["conv2d_kt"]
    h100, a100 = load_gpu("h100"), load_gpu("a100")
    occ = occupancy(h100, info.threads_per_block, regs_for(info, h100), info.smem_per_block)
    assert residency(info, h100, occ).mlp == kt["4,2,2"]["sm_90"]
    assert residency(info, h100, occ, 1.0, "input=R").mlp == kt["R,4,2,2"]["sm_90"]
    assert residency(info, a100, occ, 2.0).mlp == 2.0 * kt["4,2,2"]["sm_80"]


def test_a_placements_own_mlp_prices_that_placement_only(tmp_path):
    # the same trace with its __ldg build's MLP said to be 1 (a build that waits on every load): R can only
    # get slower, by a memory time that grows, and the sample (its own build) is priced as before
    from placement import api

    cols, info = generators.generate("conv2d_kt", [512, 256], [32, 4, 2, 2])
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    traces.write(a, cols, info)
    traces.write(b, cols, replace(info, extra={**info.extra, "mlp_by_placement": {"input=R": {"sm_90": 1.0}}}))
    ra, rb = api.evaluate(a, "h100", "input=R"), api.evaluate(b, "h100", "input=R")
    sa, ta = ra.target.evaluation.sample, ra.target.evaluation.target
    sb, tb = rb.target.evaluation.sample, rb.target.evaluation.target
    kt = C.mlps()["conv2d_kt"]
    assert sa.time_ns == sb.time_ns and sa.mlp == sb.mlp == kt["4,2,2"]["sm_90"]
    assert ta.mlp == kt["R,4,2,2"]["sm_90"] and tb.mlp == 1.0
    assert tb.itmlp < ta.itmlp and tb.time_ns > ta.time_ns
    assert any("MLP" in f and "mlp_by_placement" in f for f in rb.target.explanation.kernel)


@pytest.mark.parametrize(
    "key, value, field",
    [
        ("mlp", "16", "extra.mlp"),
        ("mlp", -1, "extra.mlp"),
        ("mlp", 1e7, "extra.mlp"),
        ("mlp", True, "extra.mlp"),
        ("mlp_by_arch", [16.1], "extra.mlp_by_arch"),
        ("mlp_by_arch", {"gfx90a": 16.1}, "extra.mlp_by_arch"),
        ("mlp_by_arch", {"sm_90": 0.5}, "extra.mlp_by_arch.sm_90"),
        ("mlp_by_arch", {"sm_90": "87"}, "extra.mlp_by_arch.sm_90"),
        ("mlp_by_placement", {"a": {"sm_80": 10.5}}, "extra.mlp_by_placement"),
        ("mlp_by_placement", {"a=R": 10.5}, "extra.mlp_by_placement.a=R"),
        ("mlp_by_placement", {"a=R": {"sm_80": 0}}, "extra.mlp_by_placement.a=R.sm_80"),
    ],
)
def test_bad_mlps_are_refused_naming_the_field(key, value, field):
    _, info = generators.generate("vecadd", [4096], [256])
    d = json.loads(info.to_json())
    d["extra"][key] = value
    with pytest.raises(traces.TraceError) as e:
        KernelInfo.from_json(json.dumps(d), "t.parquet")
    assert e.value.field == field and "t.parquet" in str(e.value) and "\n" not in str(e.value)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["mlp", "mlp_by_arch", "mlp_by_placement"]),
       st.one_of(st.none(), st.integers(-3, 10), st.floats(allow_nan=True), st.text(max_size=4),
                 st.dictionaries(st.sampled_from(["sm_80", "sm_90", "a=R", "x"]),
                                 st.one_of(st.floats(-1, 100), st.text(max_size=2),
                                           st.dictionaries(st.sampled_from(["sm_80", "sm_90"]), st.floats(0, 100))),
                                 max_size=3)))  # fmt: skip
def test_any_mlp_metadata_reads_or_is_one_trace_error(key, value):
    _, info = generators.generate("vecadd", [4096], [256])
    d = json.loads(info.to_json())
    d["extra"][key] = value
    try:
        back = KernelInfo.from_json(json.dumps(d, allow_nan=True), "t.parquet")
    except traces.TraceError as exc:
        assert "\n" not in str(exc) and exc.field.startswith(f"extra.{key}")
        return
    for gpu in ("h100", "a100"):  # what reads is a positive, finite MLP: nothing divides by zero
        assert 0 < mlp_for(back, load_gpu(gpu), "a=R") < 1e6 and 0 < mlp_for(back, load_gpu(gpu)) < 1e6


def test_the_table_script_renders_what_it_found():
    mod = _script()
    text = mod.toml_table({"vecadd": {"sm_80": 1.5, "sm_90": 1.5}}, {"4,2,2": {"sm_80": 16.133}, "R,4,2,2": {"sm_80": 10.5}},
                          ("sm_80", "sm_90"), ("sm_80",), "13.0.88")  # fmt: skip
    got = tomllib.loads(text)
    assert got["archs"] == ["sm_80", "sm_90"]
    assert got["kernels"]["vecadd"] == {"sm_80": 1.5, "sm_90": 1.5}
    assert got["conv2d_kt"] == {"4,2,2": {"sm_80": 16.133}, "R,4,2,2": {"sm_80": 10.5}}


def test_rerunning_the_script_reproduces_the_table(tmp_path):
    """Two kernels on two architectures, and conv2d_kt's default shape's plain and __ldg builds on sm_90, built
    again (about a minute): the table is what nvcc and nvdisasm give."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from sass_recipes import find_tool

    if not find_tool("nvcc") or not find_tool("nvdisasm"):
        pytest.skip("nvcc and nvdisasm are not both installed (CUDA toolkit; pip install nvidia-cuda-nvdisasm)")
    mod = _script()
    out = tmp_path / "m.toml"
    assert mod.main(["--arch", "sm_75,sm_90", "--kernels", "matvec,conv1d", "--no-conv2d-kt", "-o", str(out)]) == 0
    got = tomllib.loads(out.read_text())["kernels"]
    table = C.mlps()["kernels"]
    for name in ("matvec", "conv1d"):
        assert got[name] == {a: table[name][a] for a in ("sm_75", "sm_90")}
    with tempfile.TemporaryDirectory() as tmp:
        nvcc, nvdisasm = find_tool("nvcc"), find_tool("nvdisasm")
        cu = ROOT / "benchmarks" / "kernels" / "conv2d_kt.cu"
        defines = ("block_size_x=32", "block_size_y=4", "tile_size_x=2", "tile_size_y=2")
        plain = mod.build_mlp(cu, "sm_90", Path(tmp), nvcc, nvdisasm, defines)
        ldg = mod.build_mlp(cu, "sm_90", Path(tmp), nvcc, nvdisasm, ("read_only=1", *defines))
    kt = C.mlps()["conv2d_kt"]
    assert plain == {"conv2d_kt": kt["4,2,2"]["sm_90"]} and ldg == {"conv2d_kt": kt["R,4,2,2"]["sm_90"]}
