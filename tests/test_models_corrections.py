"""Corrections to the seed models for Kepler counters: MLP in MWP-CWP, the per-block barrier
cap, GPUPerf's O_sync without Gamma, spec-row memory timing, code facts, launch overhead."""

from dataclasses import replace
from pathlib import Path

import pytest

from placement.gpu import get_gpu
from placement.models import KernelParams, c2050, hong_kim_example, machine_from_gpu
from placement.models import gpuperf, mwp_cwp
from placement.models.kernel import launch
from placement.models.counters import gpu_from_spec, read_counters
from placement.models.gpuperfpredict import PAIRED_LOADS_MLP, tiles, with_code_facts

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "gpuperfpredict" / "Apps-Gpus"


def _k(**kw):
    base = dict(threads_per_block=128, blocks=80, active_blocks_per_sm=5, active_sms=16, comp_insts=0.0)
    base.update(kw)
    return KernelParams(**base)


def test_mlp_overlaps_latency_when_warps_are_few():
    # Eq. 22 (MWP = CWP = N = 2): with MLP 2 the two loads' waits overlap, Mem_cycles 840 -> 420.
    k = _k(threads_per_block=64, blocks=16, active_blocks_per_sm=1, comp_insts=9, coal_mem_insts=2)
    r1 = mwp_cwp.predict(k, hong_kim_example())
    r2 = mwp_cwp.predict(replace(k, mlp=2.0), hong_kim_example())
    assert r1.case == r2.case == "eq22"
    assert r1.mem_cycles == 840 and r2.mem_cycles == 420
    assert r2.exec_cycles_app == pytest.approx(420 + 44 + 44 / 2 * (2 - 1))


def test_mlp_keeps_the_bandwidth_bound():
    # Eq. 23 bound by MWP_peak_BW: Mem_cycles x N / MWP is the same with MLP 2 (MWP in warps halves).
    k = _k(comp_insts=3, coal_mem_insts=1)
    r1 = mwp_cwp.predict(k, hong_kim_example())
    r2 = mwp_cwp.predict(replace(k, mlp=2.0), hong_kim_example())
    assert r1.case == r2.case == "eq23"
    assert r2.mwp == pytest.approx(r1.mwp / 2)
    assert r2.mem_cycles * r2.n / r2.mwp == pytest.approx(r1.mem_cycles * r1.n / r1.mwp)


def test_synch_cost_capped_by_block_warps():
    # Table 2's block (4 warps, MWP 2.28) is below the cap; a 2-warp block waits on one departure.
    assert mwp_cwp.synch_cost(320, 2.28, 4, 6, 5, 1) == pytest.approx(320 * 1.28 * 6 * 5)
    assert mwp_cwp.synch_cost(10, 25.0, 2, 4, 16, 3) == pytest.approx(10 * 1 * 4 * 16 * 3)
    assert mwp_cwp.synch_cost(10, 25.0, 32, 4, 2, 1) == pytest.approx(10 * 24 * 4 * 2)
    assert mwp_cwp.synch_cost(10, 0.5, 1, 4, 2, 1) == 0.0


def test_gpuperf_osync_gamma_and_without():
    k = KernelParams(threads_per_block=256, blocks=84, active_blocks_per_sm=6, active_sms=14, comp_insts=20.0,
                     coal_mem_insts=2.0, synch_insts=2.0)  # fmt: skip
    m = c2050()
    r = gpuperf.predict(k, m)  # Eq. 7-8 with Gamma 64
    assert r.o_sync == pytest.approx(2.0 * 84 * 8 / 14 * 64 * 440.0 * 2 / 22)
    r0 = gpuperf.predict(
        k, replace(m, gamma=None)
    )  # Hong & Kim Eq. 26, Delta = 20, MWP = min(440 / 20, 48) capped at 8 warps
    assert r0.o_sync == pytest.approx(20.0 * (8 - 1) * 2.0 * 6 * 1.0)
    assert machine_from_gpu(get_gpu("k40")).gamma is None


def test_gpuperf_uncoalesced_bytes_load_bandwidth():
    # 32 transactions of 32 B per request move 1 KB: MWP_peak_bw is 8x lower than for a 128-byte request.
    m = machine_from_gpu(get_gpu("k40"))
    kc = KernelParams(threads_per_block=256, blocks=1500, comp_insts=10.0, coal_mem_insts=2.0)
    ku = replace(kc, coal_mem_insts=0.0, uncoal_mem_insts=2.0, uncoal_per_mw=32.0)
    rc, ru = gpuperf.predict(kc, m), gpuperf.predict(ku, m)
    bw = 288.384e9 * 0.775  # the K40's sustained bandwidth (Kepler's dram_sustained_fraction)
    assert m.bandwidth_gbs * 1e9 == pytest.approx(bw)
    assert rc.mwp_peak_bw == pytest.approx(bw / (745e6 * 128 / rc.avg_dram_lat * 15))  # Eq. A.6-A.7
    assert ru.mwp_peak_bw == pytest.approx(bw / (745e6 * 32 * 32 / ru.avg_dram_lat * 15))
    assert ru.t_mem > 4 * rc.t_mem


def test_spec_row_memory_timing_matches_bundled_configs():
    for spec, name in (
        (
            {
                "compute_version": "3.5",
                "gpu_name": "Tesla-K40",
                "max_clock_rate": "745",
                "num_of_cores": "2880",
                "bandwith": "288,384",
            },
            "k40",
        ),
        (
            {
                "compute_version": "3",
                "gpu_name": "GTX-680",
                "max_clock_rate": "1058",
                "num_of_cores": "1536",
                "bandwith": "192,256",
            },
            "gtx680",
        ),
    ):
        g, cfg = gpu_from_spec(spec), get_gpu(name)
        for f in ("departure_del_coal", "departure_del_uncoal", "dram_latency"):
            assert getattr(g.memory, f) == pytest.approx(getattr(cfg.memory, f), rel=0.002), (name, f)


def test_code_facts():
    k = KernelParams(threads_per_block=64, blocks=1024, comp_insts=10.0, coal_mem_insts=3.0)
    assert with_code_facts(k, "unknown_kernel", 256, (8, 8, 1)) is k
    v = with_code_facts(k, "vectorAdd", 131072, (64, 1, 1))
    assert v.mlp == PAIRED_LOADS_MLP == 1.5 and v.synch_insts == 0
    s = with_code_facts(k, "matMul_gpu_sharedmem", 1280, (16, 16, 1))
    assert tiles(1280, 16) == 80 and s.synch_insts == 160
    assert tiles(250, 16) == 16


def test_code_facts_agree_with_counters():
    p = DATA / "matMul_gpu_sharedmem-GTX-680.csv"
    if not p.exists():
        pytest.skip(f"{p} is absent (real data lives in ../shared/data, not in a fresh clone)")
    for r in read_counters(p):
        if r.params is None:
            continue
        # Two global loads per tile per thread, plus the store: gld + gst requests per warp = 2 x tiles + 1.
        t = tiles(r.input_size, r.block[0])
        assert r.params.mem_insts == pytest.approx(2 * t + 1)
        assert with_code_facts(r.params, r.kernel, r.input_size, r.block).synch_insts == 2 * t


def test_launch_overhead_added():
    k = _k(comp_insts=3, coal_mem_insts=1)
    m = hong_kim_example()
    for f in (mwp_cwp.predict, gpuperf.predict):
        assert f(k, replace(m, launch_overhead_s=5e-6)).time_s == pytest.approx(f(k, m).time_s + 5e-6)


def test_a_gpu_configuration_gives_the_seed_models_its_launch():
    # The H100's empty kernel (h100-placements/variants-extra.csv): 3.872 us at one block, 0.602 ns each further one,
    # the floor HMS adds (placement.hms.t_launch); the papers' presets keep none.
    m = machine_from_gpu(get_gpu("h100"))
    assert m.launch_overhead_s == pytest.approx(3.872e-6) and m.launch_per_block_s == pytest.approx(0.602e-9)
    assert hong_kim_example().launch_overhead_s == 0.0 and hong_kim_example().launch_per_block_s == 0.0
    # by hand: 65,536 blocks start in 39.45 us; a 10 us kernel leaves 29.45 of it uncovered, a 50 us one none
    assert m.launch_s(65_536, 10e-6) == pytest.approx(3.872e-6 + 65_536 * 0.602e-9 - 10e-6)
    assert m.launch_s(65_536, 50e-6) == pytest.approx(3.872e-6)
    k = _k(comp_insts=3, coal_mem_insts=1)
    bare = replace(m, launch_overhead_s=0.0, launch_per_block_s=0.0)
    for f in (mwp_cwp.predict, gpuperf.predict):
        kernel_s = f(k, bare).time_s
        assert f(k, m).time_s == pytest.approx(kernel_s + 3.872e-6 + max(0.0, 80 * 0.602e-9 - kernel_s))


@pytest.mark.parametrize("name", ["active_sms", "active_blocks_per_sm"])
def test_a_launch_of_no_sms_or_no_resident_blocks_is_refused(name):
    # 0 was read as "not given": Hong & Kim's 16 SMs then ran a launch the caller had said ran on none
    with pytest.raises(ValueError, match=f"KernelParams.{name}: must be at least 1"):
        _k(**{name: 0})
    with pytest.raises(ValueError, match=name):
        _k(**{name: -3})


def test_a_given_active_sms_is_taken_as_given():
    # Eq. 21: #Rep = 80 blocks / (5 a SM x #Active_SMs): 80 / 15 on 3 SMs, 80 / 80 on all 16 of Table 2's
    m = hong_kim_example()
    assert launch(_k(active_sms=3), m).rep == pytest.approx(80 / 15)
    assert launch(_k(active_sms=None), m).active_sms == m.sms == 16
