"""Sim et al.'s GPUPerf on the Tesla C2050 of Table 3: each branch worked by hand."""

import json

import pytest

from placement.cli import main
from placement.models import KernelParams, c2050
from placement.models import gpuperf as gp

M = c2050()  # 1.15 GHz, 144 GB/s, 14 SMs x 32 SPs, 4 SFUs, FP lat 18, DRAM 440, Delta 20, L1 18, L2 130

# Hand-worked constants for a coalesced kernel on the C2050 without cache hits:
AVG_DRAM = 440.0  # Eq. 13 with one transaction per request
AMAT = 440.0 + 18.0 + 130.0  # Eq. 12 expanded: DRAM x miss + L1 hit lat + L2 hit lat = 588
PEAK = 144e9 / (1.15e9 * 128 / 440.0 * 14)  # Eq. A.6-A.7: 30.74
MWP = min(440.0 / 20.0, PEAK)  # Eq. A.5: 22


def k(**kw):
    base = dict(
        threads_per_block=256, blocks=84, active_blocks_per_sm=6, active_sms=14, comp_insts=20.0, coal_mem_insts=2.0
    )
    base.update(kw)
    return KernelParams(**base)


def approx(x):
    return pytest.approx(x, rel=1e-9)


def test_cwp_greater_than_mwp_memory_bound():
    r = gp.predict(k(), M)
    n, insts = 48, 22.0
    assert r.n == n and r.itilp == 18.0 and r.itilp_max == 18.0  # Eq. 4-5: min(1 x 48, 18/(32/32))
    assert r.w_parallel == approx(insts * 48 * 18 / 18)  # Eq. 3: 1056
    assert r.amat == approx(AMAT) and r.mwp == approx(MWP) and r.mwp_peak_bw == approx(PEAK)
    assert r.cwp == approx(min((2 * AMAT + insts) / insts, n))  # Eq. A.1-A.4: 48
    assert r.case == "memory"
    itmlp = min(min(max(1.0, r.cwp - 1.0), MWP), PEAK)  # Eq. 14-15: 22
    assert r.itmlp == approx(itmlp)
    t_mem = 2 * 48 / itmlp * AMAT  # Eq. 11: 2565.8
    assert r.t_mem == approx(t_mem)
    assert r.f_overlap == 1.0  # zeta = 0 when CWP > MWP
    assert r.t_overlap == approx(min(1056.0, t_mem))
    assert r.t_exec == approx(t_mem) and r.bound == "memory"
    assert r.time_s == approx(t_mem / 1.15e9)


def test_cwp_not_greater_than_mwp_compute_bound():
    r = gp.predict(k(comp_insts=400.0, coal_mem_insts=1.0), M)
    insts = 401.0
    tc = insts * 48 * 18 / 18  # W_parallel, no serial overhead
    cwp = (AMAT + insts) / insts  # 2.466
    assert r.cwp == approx(cwp) and r.case == "compute"
    itmlp = min(max(1.0, cwp - 1.0), MWP)
    tm = 1 * 48 / itmlp * AMAT
    fo = (48 - 1) / 48  # zeta = 1
    assert r.f_overlap == approx(fo)
    assert r.t_mem == approx(tm)
    assert r.t_overlap == approx(min(tc * fo, tm))
    assert r.t_exec == approx(tc + tm - min(tc * fo, tm))


def test_sfu_contention_on():
    r = gp.predict(k(sfu_insts=10.0), M)
    f = 10 / 22 - 4 / 32  # Eq. 10: SFU ratio above the SFU/SIMD unit ratio
    assert r.f_sfu == approx(f)
    assert r.o_sfu == approx(10 * 48 * 32 / 4 * f)  # Eq. 9: 1265.5
    assert r.w_serial == approx(r.o_sfu) and r.b_serial == approx(r.o_sfu)
    assert r.t_comp == approx(1056 + r.o_sfu)


def test_sfu_contention_off():
    r = gp.predict(k(sfu_insts=2.0), M)  # 2/22 = 0.09 < 4/32
    assert r.f_sfu == 0.0 and r.o_sfu == 0.0 and r.w_serial == 0.0


def test_sync_overhead():
    r = gp.predict(k(synch_insts=2.0), M)
    assert r.o_sync == approx(2 * 48 * (64 * AVG_DRAM * 2 / 22))  # Eq. 7-8 with Gamma = 64


def test_not_enough_warps():
    r = gp.predict(k(threads_per_block=64, blocks=14, active_blocks_per_sm=1), M)
    assert r.n == 2 and r.mwp == 2 and r.cwp == 2 and r.case == "not enough warps"
    assert r.itilp == 2.0  # ILP x N = 2 < ITILP_max
    assert r.w_parallel == approx(22 * 2 * 18 / 2)  # 396
    assert r.b_itilp == approx(396 - 22 * 28 * 18 / (14 * 18))  # Eq. 20: 352
    assert r.f_overlap == approx(0.5)  # (N - 1) / N with CWP <= MWP


def test_benefits_add_up():
    r = gp.predict(k(fp_insts=10.0, sfu_insts=10.0, data_bytes=84 * 256 * 8.0), M)
    assert r.t_fp == approx(10 * 672 * 18 / (14 * 18))  # Eq. 18
    assert r.b_fp == approx(r.t_comp - r.t_fp - r.b_itilp - r.b_serial)  # Eq. 22
    size = 84 * 256 * 8 / 128 / 14
    assert r.t_mem_min == approx(size * AVG_DRAM / PEAK)  # Eq. 19
    assert r.b_memlp == approx(max(r.t_mem - r.t_overlap - r.t_mem_min, 0))  # Eq. 23


def test_uncoalesced_raises_avg_dram_lat():
    r = gp.predict(k(coal_mem_insts=0.0, uncoal_mem_insts=2.0, uncoal_per_mw=8.0), M)
    assert r.avg_dram_lat == approx(440 + 7 * 20)  # Eq. 13


def test_reusable_pieces():
    assert gp.f_overlap(10, 3.0, 5.0) == approx(0.9)
    assert gp.f_overlap(10, 6.0, 5.0) == 1.0
    assert gp.t_overlap(100.0, 50.0, 0.9) == 50.0
    assert gp.itmlp(2.0, 5.0, 3.0, 100.0) == 4.0  # MLP x min(max(1, CWP-1), MWP)
    assert gp.amat(400.0, 0.5, 100.0) == 300.0


def test_cli_kernel_file(tmp_path, capsys):
    p = tmp_path / "k.toml"
    p.write_text("[kernel]\nthreads_per_block = 256\nblocks = 84\nactive_blocks_per_sm = 6\nactive_sms = 14\n"
                 "comp_insts = 20\ncoal_mem_insts = 2\n")  # fmt: skip
    assert main(["model", "gpuperf", "--kernel", str(p), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["machine"] == "c2050-sim2012"
    for key in ("t_exec", "t_comp", "t_mem", "t_overlap", "b_itilp", "b_memlp", "b_fp", "b_serial", "bound"):
        assert key in doc
    assert doc["bound"] == "memory"
