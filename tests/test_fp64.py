"""The double-precision units' bound, T_FP64 (``placement.hms.t_fp64``): the kernel's double-precision warp-instructions
at the GPU's results per clock, from the CUDA C++ Programming Guide's throughput table ([PG-AT] in
configs/architectures.toml)."""

from __future__ import annotations

import dataclasses
import json

import pytest

import traces
from placement.evaluate_whole import WholeTraceEvaluator
from placement.gpu import get_gpu
from placement.memory import fp64_per_cycle_of
from placement.placements import parse_placement
from traces.generators import generate

# [PG-AT]: 64-bit floating-point add, multiply, multiply-add, results per clock per multiprocessor, by compute
# capability; a catalog or bundled GPU of each
GUIDE = {
    "gtx680": 8, "k40": 64, "k80": 64, "gtx980": 4, "p100": 32, "gtx1080": 4, "v100": 32, "t4": 2,
    "rtx2080ti": 2, "a100": 32, "rtx3090": 2, "rtx4090": 2, "h100": 64, "c2050": 16,
}  # fmt: skip

# FP64 peaks the vendor publishes (TFLOPS, an FMA counted as 2): Tesla V100 datasheet (SXM2 7.8, PCIe 7), A100
# datasheet 9.7, H100 datasheet (PCIe 26; the H100 whitepaper's SXM5 33.5), Tesla K40 datasheet 1.66 with GPU
# Boost, the GA102 whitepaper's GeForce RTX 3090 0.556, the Ada whitepaper's GeForce RTX 4090 1.29
PEAKS = {"v100-sxm2": 7.8, "v100": 7.0, "a100": 9.7, "h100": 33.5, "h100-pcie": 26.0, "k40": 1.66, "rtx3090": 0.556,
         "rtx4090": 1.29}  # fmt: skip


def _catalog_row(name):
    from placement.catalog import entries

    return next(e for e in entries() if e.name == name)


@pytest.mark.parametrize("name", sorted(GUIDE))
def test_each_gpu_takes_the_programming_guides_rate(name):
    g = get_gpu(name)
    assert fp64_per_cycle_of(g) == GUIDE[name], f"{name} (cc {g.compute_capability})"


def test_a_gpu_the_table_does_not_know_has_no_bound():
    # the bundled GeForce GTX 280 (Tesla, cc 1.3): no architecture row, so no rate and no bound
    assert fp64_per_cycle_of(get_gpu("gtx280")) == 0.0


@pytest.mark.parametrize("name", sorted(PEAKS))
def test_the_rates_give_the_vendors_fp64_peaks(name):
    # SMs x results a clock x 2 flops an FMA x the catalog's boost clock, within 3 % of the published peak
    row = _catalog_row(name)
    tflops = row.sms * fp64_per_cycle_of(get_gpu(name)) * 2 * row.boost_mhz * 1e6 / 1e12
    assert tflops == pytest.approx(PEAKS[name], rel=0.03)


@pytest.fixture(scope="module")
def s3d():
    cols, info = generate("s3d")
    assert info.instructions.fp64 > 0  # s3d's recipe is nvcc's sm_80 SASS, 40 % of it DFMA / DADD / DMUL
    return traces.Trace(**cols, info=info)


def test_t_fp64_by_hand(s3d):
    # T_FP64 = double-precision warp-instructions / active SMs x 32 lanes / results a clock
    fp64 = s3d.info.instructions.fp64
    for name in ("rtx3090", "a100", "h100", "t4"):
        g = get_gpu(name)
        ev = WholeTraceEvaluator(s3d, g)
        sms = ev.sample.active_sms
        assert ev.sample.t_fp64 == pytest.approx(fp64 / sms * 32 / GUIDE[name]), name
        assert ev.sample.t_comp >= ev.sample.t_fp64 + ev.sample.w_serial
    # a GA10x and a GA100 of the same SMs differ by their rates' ratio, 16
    a100, rtx = (WholeTraceEvaluator(s3d, get_gpu(n)).sample for n in ("a100", "rtx3090"))
    assert rtx.t_fp64 * rtx.active_sms == pytest.approx(16 * a100.t_fp64 * a100.active_sms)


def test_the_bound_binds_on_a_geforce_and_not_on_a_data_center_part(s3d):
    # on the RTX 3090 (2 a clock) the 39,936 double-precision warp-instructions take 16 cycles each, far over the
    # FP32-rate issue time; on the A100 (32 a clock) 1 each, under it
    rtx = WholeTraceEvaluator(s3d, get_gpu("rtx3090")).sample
    assert rtx.t_comp == pytest.approx(rtx.t_fp64 + rtx.w_serial) and rtx.t_fp64 > 5 * rtx.w_parallel
    a100 = WholeTraceEvaluator(s3d, get_gpu("a100")).sample
    assert a100.t_fp64 < a100.w_parallel


def test_no_doubles_no_bound():
    cols, info = generate("vecadd", [1 << 14], [256])
    assert info.instructions.fp64 == 0
    assert WholeTraceEvaluator(traces.Trace(**cols, info=info), get_gpu("rtx3090")).sample.t_fp64 == 0.0


def test_a_placement_moves_no_arithmetic(s3d):
    ev = WholeTraceEvaluator(s3d, get_gpu("rtx3090"))
    for text in ("gpu_p=R", "gpu_t=T", "gpu_p=T,gpu_t=R"):
        tgt = ev.evaluate(parse_placement(text, ev.info)).target
        assert tgt.t_fp64 == pytest.approx(ev.sample.t_fp64), text


def test_a_configurations_own_rate_wins(s3d):
    g = get_gpu("rtx3090")
    four = dataclasses.replace(g, compute=dataclasses.replace(g.compute, fp64_per_cycle=4.0))
    assert fp64_per_cycle_of(four) == 4.0
    base = WholeTraceEvaluator(s3d, g).sample.t_fp64
    assert WholeTraceEvaluator(s3d, four).sample.t_fp64 == pytest.approx(base / 2)


def test_evaluate_says_when_the_double_precision_units_bind(tmp_path, run_cli, s3d):
    path = tmp_path / "s3d.parquet"
    traces.write(path, s3d.columns(), s3d.info)
    code, out, err = run_cli("evaluate", path, "--gpu", "rtx3090", "--place", "gpu_p=R")
    assert code == 0, err
    assert "T_FP64 (double-precision units)" in out
    assert "double-precision units bind T_comp" in out
    code, out, err = run_cli("evaluate", path, "--gpu", "a100", "--place", "gpu_p=R")
    assert code == 0, err
    assert "T_FP64 (double-precision units)" in out and "double-precision units bind" not in out


def test_placement_gpus_lists_the_rate(run_cli):
    code, out, _ = run_cli("gpus", "rtx4090", "--json")
    assert code == 0
    assert json.loads(out)["model"]["fp64_per_cycle"] == 2.0


# --- the seed models (placement model mwp-cwp | gpuperf): the same bound, per warp --------------------------------


def test_seed_models_take_the_double_precision_units():
    from placement.models import gpuperf, mwp_cwp
    from placement.models.kernel import KernelParams
    from placement.models.params import fp64_cycles_per_warp, hong_kim_example, machine_from_gpu

    k = KernelParams(threads_per_block=256, blocks=1024, comp_insts=100.0, coal_mem_insts=4.0, fp_insts=60.0,
                     fp64_insts=40.0)  # fmt: skip
    rtx, a100 = machine_from_gpu(get_gpu("rtx3090")), machine_from_gpu(get_gpu("a100"))
    assert (rtx.fp64_width, a100.fp64_width) == (2.0, 32.0)
    assert fp64_cycles_per_warp(40.0, rtx) == 40 * 32 / 2 == 640.0
    assert fp64_cycles_per_warp(40.0, a100) == 40.0
    # the papers' presets have no rate: no bound, the models as published
    assert hong_kim_example().fp64_width is None and fp64_cycles_per_warp(40.0, hong_kim_example()) == 0.0
    # GPUPerf: T_comp's parallel part at least the SM's warps' double-precision cycles (8,192 warps over 82 SMs)
    g = gpuperf.predict(k, rtx)
    assert g.t_fp64 == pytest.approx(640.0 * 8192 / 82)
    assert g.t_comp >= g.t_fp64 and g.t_fp64 > g.w_parallel
    assert gpuperf.predict(replace_fp64(k, 0.0), rtx).t_fp64 == 0.0
    # MWP-CWP: a warp's Comp_cycles at least its double-precision cycles (Issue_cycles x 104 = 26 here)
    w = mwp_cwp.predict(k, rtx)
    assert w.fp64_cycles == 640.0 and w.comp_cycles == 640.0 > w.issue_cycles_comp
    assert mwp_cwp.predict(k, a100).comp_cycles == max(40.0, mwp_cwp.predict(k, a100).issue_cycles_comp)


def replace_fp64(k, v):
    return dataclasses.replace(k, fp64_insts=v)


def test_nsight_computes_double_precision_count_reaches_the_seed_models(tmp_path, run_cli):
    # the bundled hand-written RTX 3080 export with its double-precision thread-instructions added: 33,554,432 over
    # the first launch's 524,288 warps is 2 warp-instructions a warp, 32 cycles of an SM's 2-a-clock units
    import csv

    from placement.models.ncu import read_ncu

    src = [r for r in csv.reader(open("configs/examples/vecadd-rtx3080.ncu.csv"))]
    head, rows = src[:3], src[3:]
    head[1] = head[1] + ["smsp__sass_thread_inst_executed_op_fp64_pred_on.sum"]
    head[2] = head[2] + ["inst"]
    rows = [r + ["33,554,432"] for r in rows]
    path = tmp_path / "fp64.ncu.csv"
    with open(path, "w", newline="") as f:
        f.write(head[0][0] + "\n")
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(head[1:] + rows)
    first = read_ncu(str(path))[0].params
    assert first.fp64_insts == pytest.approx(33554432 / 524288 / 32)
    from placement.models import gpuperf
    from placement.models.params import machine_from_gpu

    r = gpuperf.predict(first, machine_from_gpu(get_gpu("rtx3080")))
    assert r.t_fp64 == pytest.approx(2 * 16 * 524288 / 68)  # 2,048 warps an SM of the RTX 3080's 68
    code, out, err = run_cli("model", "gpuperf", "--counters", path, "--json")  # and the command reads it
    assert code == 0, err
