"""A placement's own build and its registers: conv2d_kt's R, S/G and S/R builds (traces/generators/
registers_variants.toml, benchmarks/arch_registers.py --variants), the trace's ``extra["regs_by_placement"]``,
its validation, and the occupancy the model then takes for each placement (placement.occupancy.regs_for),
worked by hand."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import placement
import traces
from placement.gpu import get_gpu as load_gpu
from placement.occupancy import occupancy, regs_for
from placement.placements import build_key, check, parse_placement, sample_placement
from traces import generators
from traces.generators import _common as C
from traces.schema import KernelInfo

from test_arch_registers import _metadata as arch_metadata
from conftest import benchmark_script

ROOT = Path(__file__).resolve().parent.parent


def _small(name: str):
    """The GPU with 4 SMs: the tests' 64-block grids then fill every SM to its occupancy limit."""
    gpu = load_gpu(name)
    return replace(gpu, compute=replace(gpu.compute, sms=4))


def _vecadd(by_arch, by_placement, regs=40) -> KernelInfo:
    _, info = generators.generate("vecadd", [4096], [256])
    extra = dict(info.extra, regs_by_arch=by_arch, regs_by_placement=by_placement)
    return replace(info, regs_per_thread=regs, extra=extra)


def test_build_key_names_the_moved_objects_in_object_order():
    _, info = generators.generate("vecadd", [4096], [256])
    assert build_key(info, sample_placement(info)) == ""
    assert build_key(info, parse_placement("b=T,a=R", info)) == "a=R,b=T"
    _, kt = generators.generate("conv2d_kt", [128, 64], [32, 4, 2, 2])
    assert build_key(kt, parse_placement("input=S/G", kt)) == "input=S/G"
    assert build_key(kt, parse_placement("input=S/R;windows=1", kt)) == "input=S/R"


def test_regs_for_takes_the_placements_build_then_the_plain_build_then_the_traces():
    info = _vecadd({"sm_80": 32, "sm_90": 164}, {"a=R": {"sm_80": 52, "sm_75": 70}})
    a100, h100 = load_gpu("a100"), load_gpu("h100")
    assert regs_for(info, a100, "a=R") == 52
    assert regs_for(info, replace(a100, compute_capability=(8, 6)), "a=R") == 52  # no sm_86: its sm_80
    assert regs_for(info, h100, "a=R") == 164  # the build has no sm_9x: the plain build's
    assert regs_for(info, replace(a100, compute_capability=(7, 5)), "a=R") == 70
    assert regs_for(info, a100, "b=R") == 32  # a build the trace does not know
    assert regs_for(info, a100) == regs_for(info, a100, "") == 32
    assert regs_for(_vecadd({}, {"a=R": {"sm_70": 99}}), a100, "a=R") == 40  # neither: the trace's own


def test_variant_table_covers_every_shape_and_holds_nvccs_counts():
    table = C.variant_registers()["conv2d_kt"]
    archs = C.variant_registers()["archs"]
    assert {"sm_80", "sm_90"} <= set(archs)
    # R at every (block_size_y, tile) of Kernel Tuner's space; S/G and S/R at 4 block widths, blocks of at most
    # 1024 threads, where ptxas builds them (a staged tile over 48 KB of static shared memory does not build)
    assert sum(k.startswith("R,") for k in table) == 5 * 4 * 4
    staged = [k for k in table if k.startswith("S/")]
    assert staged and all(int(k.split(",")[1]) in (16, 32, 64, 128) for k in staged)
    # ptxas -v (nvcc 13.0), 28 Nov 2026: the A100's __ldg build of 32 x 4 blocks with 2 x 2 tiles, the H100's
    # plain and staged ones
    assert C.regs_by_arch(table["R,4,2,2"])["sm_80"] == 52
    assert C.regs_by_arch(C.registers()["conv2d_kt"]["4,2,2"])["sm_90"] == 164
    assert C.regs_by_arch(table["S/G,32,4,2,2"])["sm_90"] == 80
    assert C.regs_by_arch(table["S/R,32,4,2,2"])["sm_90"] == 80
    # a 64 x 16 block's 4 x 4 tiles stage (16 x 4 + 14) rows of (64 x 4 + 14) floats, 84,240 B: no build
    assert "S/G,64,16,4,4" not in table


def test_generated_conv_traces_carry_their_builds():
    _, info = generators.generate("conv2d_kt", [256, 128], [32, 4, 2, 2])
    t = C.variant_registers()["conv2d_kt"]
    assert info.extra["regs_by_placement"] == {
        "input=R": C.regs_by_arch(t["R,4,2,2"]),
        "input=S/G": C.regs_by_arch(t["S/G,32,4,2,2"]),
        "input=S/R": C.regs_by_arch(t["S/R,32,4,2,2"]),
    }
    # a block width the staged builds were not made at: only R, whose code does not follow it
    _, wide = generators.generate("conv2d_kt", [480, 64], [48, 2, 1, 1])
    assert set(wide.extra["regs_by_placement"]) == {"input=R"}


def test_h100_occupancy_of_the_staged_build_by_hand(tmp_path):
    # 32 x 4 blocks (4 warps), 2 x 2 tiles. Plain build on sm_90: 164 registers, 164 x 32 = 5,248 a warp, rounded
    # to the 256-register unit 5,376; 65,536 / 5,376 = 12 warps (a multiple of the 4 sub-partitions): 3 blocks.
    # Staged build: 80 registers, 2,560 a warp, 65,536 / 2,560 = 25.6 -> 24 warps: 6 blocks. Its tile,
    # (4 x 2 + 14) x (32 x 2 + 14) floats = 6,864 B + the 1 KB reserved a block, leaves shared memory for 28.
    cols, info = generators.generate("conv2d_kt", [256, 128], [32, 4, 2, 2])  # 64 blocks
    h100 = _small("h100")
    assert occupancy(h100, 128, 164).blocks_per_sm == 3 and occupancy(h100, 128, 80).blocks_per_sm == 6
    path = tmp_path / "kt.parquet"
    traces.write(path, cols, info)
    for stream in ("no", "yes"):
        r = placement.evaluate(path, h100, "input=S/G", stream=stream).to_dict()
        assert (r["sample"]["blocks_per_sm"], r["blocks_per_sm"]) == (3, 6), stream
        assert (r["sample"]["n"], r["n"]) == (12, 24), stream
        assert any("registers of its own" in line for line in r["reasons"]["kernel"])
    assert placement.evaluate(path, h100, "input=S/R").to_dict()["blocks_per_sm"] == 6
    # a placement the trace has no build of (the filter in global memory) keeps the plain build's 3
    assert placement.evaluate(path, h100, "filter=G").to_dict()["blocks_per_sm"] == 3


def test_a100_occupancy_of_the_ldg_build_by_hand():
    # sm_80: plain loads 32 registers (64 warps, the warp slots' limit: 16 blocks of 4 warps); __ldg 52:
    # 52 x 32 = 1,664 -> 1,792 a warp, 65,536 / 1,792 = 36.6 -> 36 warps, 9 blocks, the registers' limit
    cols, info = generators.generate("conv2d_kt", [256, 128], [32, 4, 2, 2])
    a100 = load_gpu("a100")
    occ = check(info, a100, parse_placement("input=R", info)).occupancy
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (9, 36, "registers")
    assert check(info, a100, sample_placement(info)).occupancy.blocks_per_sm == 16


def test_staged_placements_evaluated_together_take_each_builds_registers(tmp_path):
    # S/G and S/R share their rewritten trace and tiles (one group_key) but are two builds: given 32 and 128
    # registers on sm_90, 4 x 32 = 1,024 a warp -> 64 warps, the warp slots' limit, 16 blocks of 4 warps; 128 x 32
    # = 4,096 a warp -> 16 warps, 4 blocks
    from placement.evaluate_whole import WholeTraceEvaluator

    cols, info = generators.generate("conv2d_kt", [256, 128], [32, 4, 2, 2])
    info = replace(info, extra=dict(info.extra, regs_by_placement={"input=S/G": {"sm_90": 32},
                                                                   "input=S/R": {"sm_90": 128}}))  # fmt: skip
    trace = traces.Trace(**cols, info=info)
    path = tmp_path / "kt.parquet"
    traces.write(path, cols, info)
    h100 = _small("h100")
    ps = [parse_placement("input=S/G", info), parse_placement("input=S/R", info)]
    got = [(e.target.blocks_per_sm, e.target.n) for e in WholeTraceEvaluator(trace, h100).evaluate_many(ps)]
    assert got == [(16, 64), (4, 16)]
    assert [placement.evaluate(path, h100, p, stream="yes").to_dict()["n"]
            for p in ("input=S/G", "input=S/R")] == [64, 16]  # fmt: skip


def _metadata(by_placement) -> str:
    return arch_metadata(by_placement, "regs_by_placement")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.text(max_size=5),
                 st.dictionaries(st.sampled_from(["a=R", "b=T", "a=R,b=C", "x", "", "a=S/G"]),
                                 st.one_of(st.integers(), st.dictionaries(st.sampled_from(["sm_80", "sm_90", "sm80"]),
                                                                          st.one_of(st.integers(-5, 300), st.text(max_size=2), st.booleans()),
                                                                          max_size=3)),
                                 max_size=3)))  # fmt: skip
def test_any_regs_by_placement_reads_or_is_one_trace_error(by_placement):
    try:
        info = KernelInfo.from_json(_metadata(by_placement), "t.parquet")
    except traces.TraceError as exc:
        assert "\n" not in str(exc)
        return
    a100 = load_gpu("a100")
    builds = by_placement or {}
    for key in ("a=R", "b=T", "a=S/G"):
        want = builds.get(key, {}).get("sm_80", regs_for(info, a100))
        assert regs_for(info, a100, key) == want


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed (CUDA toolkit)")
def test_nvcc_rebuilds_the_tables_counts(tmp_path):
    mod = benchmark_script("arch_registers")
    table = C.variant_registers()["conv2d_kt"]
    nvcc = shutil.which("nvcc")
    for v, shape, arch in (("S/G", (32, 4, 2, 2), "sm_90"), ("R", (32, 2, 4, 2), "sm_86")):
        got = mod.try_report(nvcc, ROOT / "benchmarks" / "kernels" / "conv2d_kt.cu", arch, tmp_path,
                             (*mod.KT_VARIANTS[v], *mod.kt_defines(*shape)))  # fmt: skip
        assert C.regs_by_arch({arch: got["conv2d_kt"]}) == {
            arch: C.regs_by_arch(table[mod.variant_key(v, *shape)])[arch]
        }
    # a staged tile over 48 KB of static shared memory: ptxas refuses it, and the table has no entry
    assert mod.try_report(nvcc, ROOT / "benchmarks" / "kernels" / "conv2d_kt.cu", "sm_80", tmp_path,
                          (*mod.KT_VARIANTS["S/G"], *mod.kt_defines(64, 16, 4, 4))) is None  # fmt: skip


def test_info_says_the_mlp_of_a_trace_of_one_build_or_none(tmp_path, run_cli):
    # a traced kernel carries its own build's MLP (traces.sanitizer.sass.mlp), an NVBit trace none (the model's 1)
    from dataclasses import replace

    cols, info = generators.generate("matvec", [64, 64], [64])
    plain = {k: v for k, v in info.extra.items() if not k.startswith("mlp")}
    for extra, line in (({**plain, "mlp": 6.625}, "MLP           6.625 (this build's)"),
                        (plain, "MLP           1: none in the trace, the model's default")):  # fmt: skip
        path = tmp_path / f"t{len(extra)}.parquet"
        traces.write(path, cols, replace(info, extra=extra))
        code, out, err = run_cli("info", path)
        assert code == 0 and line in out.splitlines(), err


def test_info_lists_the_builds(tmp_path, run_cli):
    # their registers, and their MLPs (tests/test_build_mlp.py; traces/generators/mlp.toml)
    cols, info = generators.generate("conv2d_kt", [256, 128], [32, 4, 2, 2])
    path = tmp_path / "kt.parquet"
    traces.write(path, cols, info)
    code, out, err = run_cli("info", path)
    assert code == 0, err
    lines = out.splitlines()
    assert "  built input=S/G: sm_75 57, sm_80 32, sm_86 40, sm_90 80" in lines
    assert ("MLP           16.133 in this build; per architecture (the model takes the GPU's): "
            "sm_75 38.561, sm_80 16.133, sm_86 22.023, sm_90 87.188") in lines  # fmt: skip
    assert "  built input=R: sm_75 20.096, sm_80 10.544, sm_86 10.742, sm_90 93.809" in lines
    code, out, err = run_cli("info", path, "--json")
    d = json.loads(out)
    assert d["regs_by_placement"]["input=R"]["sm_80"] == 52
    assert d["mlp_by_arch"] == C.mlps()["conv2d_kt"]["4,2,2"]
    assert d["mlp_by_placement"] == {"input=R": C.mlps()["conv2d_kt"]["R,4,2,2"]}
