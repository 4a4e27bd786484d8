"""Registers per thread per architecture: the table nvcc's builds give (traces/generators/registers.toml,
benchmarks/arch_registers.py), the generators' ``extra["regs_by_arch"]``, its validation, and the
occupancy the model takes from the GPU's entry (placement.occupancy.regs_for), worked by hand."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import placement
import traces
from placement.gpu import get_gpu as load_gpu
from placement.occupancy import occupancy, regs_for
from placement.placements import check, sample_placement
from traces import generators
from traces.generators import _common as C
from traces.schema import KernelInfo
from conftest import benchmark_script


def _script():
    return benchmark_script("arch_registers")


def _info(by_arch, regs=40) -> KernelInfo:
    _, info = generators.generate("vecadd", [4096], [256])
    extra = dict(info.extra)
    extra["regs_by_arch"] = by_arch
    return replace(info, regs_per_thread=regs, extra=extra)


def test_regs_for_takes_the_gpus_build_else_the_nearest_lower_of_its_major_else_the_traces():
    info = _info({"sm_75": 64, "sm_80": 32, "sm_90": 254})
    h100, a100, v100, k80 = (load_gpu(n) for n in ("h100", "a100", "v100", "k80"))
    assert regs_for(info, h100) == 254  # 9.0
    assert regs_for(info, a100) == 32  # 8.0
    assert regs_for(info, replace(a100, compute_capability=(8, 6))) == 32  # no sm_86: sm_80
    assert regs_for(info, replace(a100, compute_capability=(7, 5))) == 64
    assert regs_for(info, v100) == 40  # 7.0: sm_75 is not lower, so the trace's own count
    assert regs_for(info, k80) == 40
    assert regs_for(_info({}), h100) == 40


def test_h100_occupancy_of_254_registers_by_hand():
    # 254 x 32 = 8,128 registers a warp, rounded to the 256-register unit: 8,192; the 65,536-register file
    # in 4 sub-partitions holds 16,384 / 8,192 = 2 warps each, 8 in all: one block of 8 warps (256 threads)
    h100 = load_gpu("h100")
    occ = occupancy(h100, 256, 254)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (1, 8, "registers")
    # with 32 registers (the sm_80 build) 8 blocks fit: 2,048 threads, the warp slots' limit
    assert occupancy(h100, 256, 32).blocks_per_sm == 8


def test_the_model_prices_the_gpus_registers():
    # Kernel Tuner's convolution, 16 x 8 blocks (4 warps) with 2 x 2 outputs a thread: 32 registers on sm_80,
    # 254 on sm_90 (cuobjdump -res-usage, 26 Nov 2026). On the H100: 254 x 32 -> 8,192 registers a warp, 2 warps
    # in each of the 4 register-file quarters, 8 warps: 2 blocks (registers). On the A100: 32 registers leave
    # the warp slots the limit, 64 / 4 = 16 blocks.
    cols, info = generators.generate("conv2d_kt", [512, 512], [16, 8, 2, 2])
    assert info.regs_per_thread == 32 and info.extra["regs_by_arch"]["sm_90"] == 254
    h100, a100 = load_gpu("h100"), load_gpu("a100")
    occ = check(info, h100, sample_placement(info)).occupancy
    assert (occ.blocks_per_sm, occ.limiter) == (2, "registers")
    occ = check(info, a100, sample_placement(info)).occupancy
    assert (occ.blocks_per_sm, occ.limiter) == (16, "warps")
    # 512 blocks over 132 SMs: 2 resident a SM with the sm_90 build, 4 (of 512 / 132) with the sm_80 one
    assert placement.evaluate(traces.Trace(**cols, info=info), h100, "").to_dict()["sample"]["n"] == 8
    sm80 = replace(info, extra={k: v for k, v in info.extra.items() if k != "regs_by_arch"})
    assert placement.evaluate(traces.Trace(**cols, info=sm80), h100, "").to_dict()["sample"]["n"] == 16


def test_every_generator_kernel_has_its_sm80_registers_as_the_recipes_say():
    # two nvcc runs of the same sources (sass_recipes.py's cuobjdump -res-usage, arch_registers.py's
    # ptxas -v) agree on the recipes' architecture
    table = C.registers()
    rec = C.recipes()
    assert set(table["archs"]) >= {"sm_75", "sm_80", "sm_86", "sm_90"}
    missing = [k for k in rec if k not in table["kernels"]]
    assert missing == []
    for name, r in rec.items():
        assert C.regs_by_arch(table["kernels"][name])[r["arch"]] == r["regs"], name


def test_conv2d_kt_shapes_cover_kernel_tuners_space_and_spill_where_sm80_did():
    kt = C.registers()["conv2d_kt"]
    assert len(kt) == 5 * 4 * 4
    assert C.regs_by_arch(kt["8,2,2"])["sm_90"] == 254 and C.regs_by_arch(kt["8,2,2"])["sm_80"] == 32
    assert C.regs_by_arch(kt["2,1,1"])["sm_75"] == 63  # b16 x 2 t1 x 1 (cuobjdump, 26 Nov 2026)
    # the 4 x 4 tiles of 4-row blocks spill on sm_80 (the numbers this generator used to hard-code)
    assert kt["4,4,4"]["sm_80"] == [255, 2692, 2708]


def test_generated_traces_carry_the_table_and_it_survives_a_file(tmp_path):
    cols, info = generators.generate("conv1d", [4096, 7], [256])
    assert info.extra["regs_by_arch"] == C.regs_by_arch(C.registers()["kernels"]["conv1d"])
    assert info.extra["regs_by_arch"]["sm_80"] == info.regs_per_thread
    path = tmp_path / "c.parquet"
    traces.write(path, cols, info)
    assert traces.read(path).info.extra["regs_by_arch"] == info.extra["regs_by_arch"]
    # a shape outside the table keeps the recipe's count everywhere
    _, out = generators.generate("conv2d_kt", [64, 64], [8, 4, 1, 1])
    assert out.extra["regs_by_arch"] == {} and regs_for(out, load_gpu("h100")) == out.regs_per_thread


def _metadata(by_arch, key: str = "regs_by_arch") -> str:
    """A vecadd trace's metadata with ``extra[key]`` set to ``by_arch`` (tests/test_build_registers.py too)."""
    _, info = generators.generate("vecadd", [4096], [256])
    d = json.loads(info.to_json())
    d["extra"][key] = by_arch
    return json.dumps(d)


@pytest.mark.parametrize(
    "by_arch, field",
    [
        ([32], "extra.regs_by_arch"),
        ({"gfx90a": 32}, "extra.regs_by_arch"),
        ({"sm_90": 256}, "extra.regs_by_arch.sm_90"),
        ({"sm_90": "32"}, "extra.regs_by_arch.sm_90"),
        ({"sm_90": True}, "extra.regs_by_arch.sm_90"),
        ({"sm_90": -1}, "extra.regs_by_arch.sm_90"),
        # a placement's build's registers (tests/test_build_registers.py)
        ([32], "extra.regs_by_placement"),
        ({"a": {"sm_80": 32}}, "extra.regs_by_placement"),
        ({"a=R;windows=2": {"sm_80": 32}}, "extra.regs_by_placement"),
        ({"a=R": 32}, "extra.regs_by_placement.a=R"),
        ({"a=R": {"gfx90a": 32}}, "extra.regs_by_placement.a=R"),
        ({"a=R": {"sm_80": 300}}, "extra.regs_by_placement.a=R.sm_80"),
        ({"a=R,b=T": {"sm_80": "52"}}, "extra.regs_by_placement.a=R,b=T.sm_80"),
        # an architecture's build's instructions over the trace's (tests/test_arch_instructions.py)
        *[({"sm_90": v}, "extra.inst_by_arch.sm_90") for v in (0, -1.0, 101, "1.2", True, None, float("nan"))],
        # a build's -Xptxas -dlcm (placement.memory.build_hierarchy_config)
        ("cs", "extra.dlcm"),
        (["ca"], "extra.dlcm"),
        (True, "extra.dlcm"),
    ],
)
def test_bad_regs_by_arch_is_refused_naming_the_field(by_arch, field):
    with pytest.raises(traces.TraceError) as e:
        KernelInfo.from_json(_metadata(by_arch, field.split(".")[1]), "t.parquet")
    assert e.value.field == field and "t.parquet" in str(e.value) and "\n" not in str(e.value)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.text(max_size=5),
                 st.dictionaries(st.text(max_size=8), st.one_of(st.integers(-5, 300), st.text(max_size=3), st.booleans()),
                                 max_size=4)))  # fmt: skip
def test_any_regs_by_arch_reads_or_is_one_trace_error(by_arch):
    try:
        info = KernelInfo.from_json(_metadata(by_arch), "t.parquet")
    except traces.TraceError as exc:
        assert "\n" not in str(exc)
        return
    assert regs_for(info, load_gpu("h100")) in set((by_arch or {}).values()) | {info.regs_per_thread}


def test_ptxas_report_by_hand():
    text = """ptxas info    : 0 bytes gmem, 900 bytes cmem[3]
ptxas info    : Compiling entry function 'conv2d_kt' for 'sm_80'
ptxas info    : Function properties for conv2d_kt
    2672 bytes stack frame, 2692 bytes spill stores, 2708 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 2672 bytes cumulative stack size
ptxas info    : Compiling entry function 'vecadd' for 'sm_80'
ptxas info    : Function properties for vecadd
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 16 registers, used 0 barriers, 380 bytes cmem[0]
"""
    assert _script().ptxas_report(text) == {"conv2d_kt": (255, 2692, 2708), "vecadd": (16, 0, 0)}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed (CUDA toolkit)")
def test_rerunning_the_script_reproduces_the_table(tmp_path):
    out = tmp_path / "r.toml"
    assert (
        _script().main(["--arch", "sm_90,sm_75", "--kernels", "conv1d,matvec", "--no-conv2d-kt", "-o", str(out)]) == 0
    )
    import tomllib

    got = tomllib.loads(out.read_text())["kernels"]
    table = C.registers()["kernels"]
    for name in ("conv1d", "matvec"):
        assert got[name] == {a: table[name][a] for a in ("sm_75", "sm_90")}


def test_seed_models_take_the_gpus_registers_too(tmp_path):
    # placement model --trace T --gpu G: the seed models' occupancy from the same registers as the placement model
    from placement.models.kernel import kernel_from_trace

    cols, info = generators.generate("conv2d_kt", [128, 64], [32, 8, 2, 2])
    path = tmp_path / "kt.parquet"
    traces.write(path, cols, info)
    assert kernel_from_trace(path).regs_per_thread == 32
    assert kernel_from_trace(path, load_gpu("h100")).regs_per_thread == 254
    assert kernel_from_trace(path, load_gpu("rtx2080ti")).regs_per_thread == 64


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.sampled_from(["ca", "cg", "cs", "CA", ""]), st.integers(), st.booleans(),
                 st.lists(st.text(max_size=2), max_size=2)))  # fmt: skip
def test_any_dlcm_reads_or_is_one_trace_error(dlcm):
    # extra.dlcm: "ca" or "cg" (the build's -Xptxas -dlcm), else one TraceError naming the field
    try:
        info = KernelInfo.from_json(_metadata(dlcm, "dlcm"), "t.parquet")
    except traces.TraceError as exc:
        assert dlcm not in ("ca", "cg", None) and exc.field == "extra.dlcm" and "\n" not in str(exc)
        return
    assert info.extra.get("dlcm") in ("ca", "cg", None) and info.extra.get("dlcm") == dlcm
