"""The L2 throughput bound (placement.models.l2bound), BSP's Comm_GM from L2 sectors, and
the counters they read; hand-worked numbers."""

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from placement.gpu import get_gpu
from placement.models import bsp, gpuperf, mwp_cwp
from placement.models.counters import gpu_from_spec, read_counters
from placement.models.kernel import KernelParams
from placement.models.l2bound import rate_from_counters, t_l2
from placement.models.params import c2050, hong_kim_example, machine_from_gpu

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "gpuperfpredict" / "Apps-Gpus"


def _k(**kw):
    # 4 blocks of 64 threads = 8 warps; 10 computation and 2 uncoalesced memory instructions a warp
    base = dict(threads_per_block=64, blocks=4, comp_insts=10.0, uncoal_mem_insts=2.0, uncoal_per_mw=8.0,
                active_blocks_per_sm=1, active_sms=4)  # fmt: skip
    base.update(kw)
    return KernelParams(**base)


def test_t_l2_hand_worked():
    m = replace(hong_kim_example(), l2_transactions_per_cycle=4.0)
    # 16 transactions a warp x 8 warps / 4 a cycle = 32 cycles
    assert t_l2(_k(l2_transactions=16.0), m) == pytest.approx(32.0)
    assert t_l2(_k(), m) == 0.0  # no transaction counts: off
    assert t_l2(_k(l2_transactions=16.0), hong_kim_example()) == 0.0  # no machine rate: off


def test_machines_rate():
    # Kepler: one line every other cycle per SM (configs/architectures.toml), Maxwell 0.9;
    # the papers' presets and Fermi: none
    assert machine_from_gpu(get_gpu("gtx680")).l2_transactions_per_cycle == pytest.approx(8 * 0.5)
    assert machine_from_gpu(get_gpu("k40")).l2_transactions_per_cycle == pytest.approx(15 * 0.5)
    assert machine_from_gpu(get_gpu("gtx980")).l2_transactions_per_cycle == pytest.approx(16 * 0.9)
    assert machine_from_gpu(get_gpu("c2050")).l2_transactions_per_cycle is None
    assert hong_kim_example().l2_transactions_per_cycle is None and c2050().l2_transactions_per_cycle is None
    # a spec row's channels from its bus (384 bit = 6) and its SMs from its cores (2880 / 192 = 15)
    g = gpu_from_spec({"compute_version": "3.5", "gpu_name": "x", "max_clock_rate": "745", "num_of_cores": "2880",
                       "bus": "384", "bandwith": "288.384"})  # fmt: skip
    assert g.dram.channels == 6 and machine_from_gpu(g).l2_transactions_per_cycle == pytest.approx(7.5)


def test_mwp_cwp_memory_term_is_at_least_t_l2():
    k = _k(l2_transactions=1000.0)
    m0 = hong_kim_example()
    r0 = mwp_cwp.predict(k, m0)
    assert r0.t_l2 == 0.0
    m = replace(m0, l2_transactions_per_cycle=1.0)
    r = mwp_cwp.predict(k, m)
    # 1000 x 8 warps / 1 = 8000 cycles, far above the latency-based memory term
    assert r.t_l2 == pytest.approx(8000.0)
    assert r.case == r0.case
    if r.case == "eq22":
        rest = (r.comp_cycles + r.comp_cycles / k.mem_insts * (r.mwp - 1)) * r.rep
    elif r.case == "eq23":
        rest = r.comp_cycles / k.mem_insts * (r.mwp - 1) * r.rep
    else:  # Eq. 24: the bound caps the whole time
        rest = 0.0
    assert r.exec_cycles_app == pytest.approx(8000.0 + rest)
    # a rate so high the bound is below the latency term: unchanged
    r_hi = mwp_cwp.predict(k, replace(m0, l2_transactions_per_cycle=1e9))
    assert r_hi.exec_cycles == pytest.approx(r0.exec_cycles)


def test_mwp_cwp_eq24_whole_time_is_at_least_t_l2():
    # Compute bound (Eq. 24): 8 warps an SM, one round, Comp_cycles 248 (4 LD/ST units), Mem_L 420:
    # 420 + 248 x 8 = 2404 cycles (tests/test_models_ldst.py works the same kernel by hand).
    k = KernelParams(threads_per_block=128, blocks=32, active_blocks_per_sm=2, active_sms=16, comp_insts=40.0,
                     coal_mem_insts=1.0, shared_insts=30.0)  # fmt: skip
    m = replace(hong_kim_example(), ldst_units=4, l2_transactions_per_cycle=1.0)
    # 10 transactions x 128 warps / 1 a cycle = 1280 < 2404: memory stays hidden, the time is unchanged
    low = mwp_cwp.predict(replace(k, l2_transactions=10.0), m)
    assert low.case == "eq24" and low.t_l2 == pytest.approx(1280.0)
    assert low.exec_cycles == pytest.approx(2404.0)
    # 50 x 128 = 6400 > 2404: the L2 paces the kernel, 6400 cycles in all
    high = mwp_cwp.predict(replace(k, l2_transactions=50.0), m)
    assert high.case == "eq24" and high.exec_cycles == pytest.approx(6400.0)


def test_mwp_cwp_cached_departure_delay_hand_worked():
    # Hong & Kim's Sec. 3.6 machine: Departure_del_coal 4, Mem_LD 420, no L2 latency; an L2 of
    # 2 transactions a cycle shared by 4 active SMs: an L2 hit leaves every 4 / 2 = 2 cycles.
    m = replace(hong_kim_example(), l2_transactions_per_cycle=2.0)
    k = _k(uncoal_mem_insts=0.0, coal_mem_insts=2.0, l2_hit_ratio=0.75)
    # 0.25 miss x 4 + 0.75 hit x 1 transaction x 2 = 2.5 cycles
    assert mwp_cwp.departure_delay_cached(k, m, 4) == pytest.approx(2.5)
    r = mwp_cwp.predict(k, m)
    assert r.departure_delay == pytest.approx(2.5)
    # Eq. 16: MWP_Without_BW_full = Mem_L / Departure_delay = (0.25 x 420) / 2.5 = 42
    assert r.mwp_without_bw_full == pytest.approx(42.0)
    # an uncoalesced request of 8 transactions that hits pays 8 L2 spacings; L1 hits do not leave the SM
    k8 = _k(l1_hit_ratio=0.2, l2_hit_ratio=0.5)
    assert mwp_cwp.departure_delay_cached(k8, m, 4) == pytest.approx(0.3 * 10.0 * 8.0 + 0.5 * 8.0 * 2.0)
    # no hit ratios, or no L2 rate: Eq. 15 as published
    assert mwp_cwp.departure_delay_cached(_k(), m, 4) == pytest.approx(mwp_cwp.departure_delay(_k(), m))
    assert mwp_cwp.departure_delay_cached(k, hong_kim_example(), 4) == pytest.approx(4.0)
    # no L2 rate (Volta and later) but L1 hits: the 20 % that hit L1 do not leave the SM, the rest leave at
    # Eq. 15's spacing (k8: 8 uncoalesced transactions, Departure_del_uncoal 10 each: 80 cycles a request)
    assert mwp_cwp.departure_delay(k8, hong_kim_example()) == pytest.approx(80.0)
    assert mwp_cwp.departure_delay_cached(k8, hong_kim_example(), 4) == pytest.approx(0.8 * 80.0)


def test_mwp_cwp_on_the_h100_ncu_export(shared_data):
    # the naive matmul at 1024^2 on the H100 (Nsight Compute, 417 us): 87.7 % of its requests hit the L1. Charged
    # Eq. 15's DRAM spacing for every request, its MWP was 13 of 64 warps and it was predicted 1,539 us (+269 %);
    # its L1 hits not leaving the SM, MWP reaches N and it is predicted within 25 % (314 us). Every launch of
    # the two exports: MAPE 80.4 % -> 23.1 % (8 launches), 152.8 % -> 28.0 % (36 variants)
    from placement.commands.model import _spec_machine, read_counter_rows

    rows, _ = read_counter_rows(shared_data / "h100-placements" / "ncu-raw-8-launches.csv")
    r = rows[3]
    assert r.kernel == "matmul_naive" and r.measured_s == pytest.approx(416.96e-6)
    m = _spec_machine(r.spec, "row 4")
    assert r.params.l1_hit_ratio == pytest.approx(0.877, abs=5e-4) and m.l2_transactions_per_cycle is None
    res = mwp_cwp.predict(r.params, m)
    assert res.mwp == res.n == 64
    assert abs(res.time_s / r.measured_s - 1) < 0.25
    for name, bound in (("ncu-raw-8-launches.csv", 25.0), ("ncu-raw-variants.csv", 30.0)):
        rows, _ = read_counter_rows(shared_data / "h100-placements" / name)
        errs = [abs(mwp_cwp.predict(x.params, _spec_machine(x.spec, name)).time_s / x.measured_s - 1) for x in rows]
        assert 100 * sum(errs) / len(errs) < bound, name


def test_gpuperf_t_mem_is_max_of_latency_and_l2():
    k = _k(l2_transactions=1000.0)
    m0 = c2050()
    r0 = gpuperf.predict(k, m0)
    r = gpuperf.predict(k, replace(m0, l2_transactions_per_cycle=1.0))
    assert r.t_mem_latency == pytest.approx(r0.t_mem)
    assert r.t_l2 == pytest.approx(8000.0) and r.t_mem == pytest.approx(max(r0.t_mem, 8000.0))
    assert r.t_overlap == pytest.approx(min(r.t_comp * r.f_overlap, r.t_mem))
    assert r.t_exec == pytest.approx(r.t_comp + r.t_mem - r.t_overlap)


def test_bsp_comm_gm_from_sectors():
    m = machine_from_gpu(get_gpu("gtx680"))  # 32-byte sectors
    # 8 sectors a warp = 8 x 32 B / (32 threads x 4 B) = 2 coalesced accesses a thread; no hits
    k = _k(l2_sectors=8.0)
    assert bsp.global_accesses(k, m) == pytest.approx(2.0)
    assert bsp.predict(k, m).comm_gm == pytest.approx(2.0 * 500.0)
    # an uncoalesced request (32 sectors) costs 8 accesses; half of them L2 hits: 4 x 500 + 4 x 250
    k2 = _k(uncoal_mem_insts=1.0, l2_sectors=32.0, l2_hit_ratio=0.5)
    assert bsp.predict(k2, m).comm_gm == pytest.approx(4 * 500.0 + 4 * 250.0)
    # without sector counts: the requests per thread, as before
    assert bsp.global_accesses(_k(), m) == pytest.approx(2.0)


def test_rate_from_counters():
    row = lambda tx, warps_blocks, s: SimpleNamespace(params=_k(l2_transactions=tx, blocks=warps_blocks), measured_s=s)  # noqa: E731
    # 100 x 8 warps / (1e-6 s x 1000 MHz x 4 channels) = 0.2; 300 x 8 / (1e-6 x 1e9 x 4) = 0.6
    rows = [row(100.0, 4, 1e-6), row(300.0, 4, 1e-6), SimpleNamespace(params=None, measured_s=1.0)]
    assert rate_from_counters(rows, 1000.0, 4) == pytest.approx(0.6)
    assert rate_from_counters([], 1000.0, 4) == 0.0


def test_counters_transactions_and_sectors():
    p = DATA / "matrix_sum_normal-GTX-680.csv"
    if not p.exists():
        pytest.skip(f"{p} is absent (real data lives in ../shared/data)")
    rows = read_counters(p)
    r = next(r for r in rows if r.block[0] == 32 and r.input_size == 256)
    k = r.params
    # block 32 x 32, width 256: 4096 load and 2048 store requests over 2048 warps, 32 transactions each
    # (Global.Load/Store.Transactions 131072 and 65536), one 32-byte sector each (L2 from L1: 131072 + 65536)
    assert k.total_warps == 2048
    assert k.l2_transactions == pytest.approx((131072 + 65536) / 2048)
    assert k.l2_sectors == pytest.approx((131072 + 65536) / 2048, rel=1e-3)  # L2 counts 65544 writes (a few extra)
    v = next(r for r in read_counters(DATA / "vectorAdd-GTX-680.csv") if r.input_size == 131072)
    # vectorAdd: one transaction (a 128-byte line) a request, four sectors
    assert v.params.l2_sectors == pytest.approx(4 * v.params.l2_transactions, rel=1e-3)
