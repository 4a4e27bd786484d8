"""The LD/ST-unit throughput bound (placement.models.ldst) in MWP-CWP and GPUPerf; hand-worked numbers."""

from dataclasses import replace

import pytest

from placement.gpu import get_gpu
from placement.models import gpuperf, mwp_cwp
from placement.models.counters import gpu_from_spec
from placement.models.kernel import KernelParams
from placement.models.ldst import l1tex_wavefronts, ldst_cycles_per_warp, ldst_insts
from placement.models.params import c2050, hong_kim_example, machine_from_gpu

SPEC = {"gpu_name": "x", "max_clock_rate": "1000", "L2": "1", "bus": "256", "memory_clock": "3000", "bandwith": "192"}


def test_ldst_cycles_hand_worked():
    k = KernelParams(threads_per_block=64, blocks=4, comp_insts=20.0, coal_mem_insts=2.0, uncoal_mem_insts=1.0,
                     uncoal_per_mw=4.0, shared_insts=10.0, bank_conflict_insts=3.0)  # fmt: skip
    # 2 coalesced x 1 transaction + 1 uncoalesced x 4 transactions (3 replays), 10 shared, 3 shared replays
    assert ldst_insts(k) == 19.0
    m = hong_kim_example()
    assert ldst_cycles_per_warp(k, replace(m, ldst_units=32)) == pytest.approx(19.0)  # Kepler: 32 / 32 = 1 cycle each
    assert ldst_cycles_per_warp(k, replace(m, ldst_units=16)) == pytest.approx(38.0)  # Fermi: 2 cycles each
    assert ldst_cycles_per_warp(k, m) == 0.0  # no unit count (the papers' presets): off
    # A 32-transaction column walk holds the units 32 passes, as nvprof's global replays count
    assert ldst_insts(replace(k, uncoal_per_mw=32.0)) == 2.0 + 32.0 + 10.0 + 3.0


def test_ldst_units_per_architecture():
    assert machine_from_gpu(get_gpu("k40")).ldst_units == 32  # GK110 whitepaper
    assert machine_from_gpu(get_gpu("gtx680")).ldst_units == 32  # GK104 whitepaper
    assert machine_from_gpu(get_gpu("c2050")).ldst_units == 16  # Fermi whitepaper
    assert machine_from_gpu(get_gpu("v100")).ldst_units is None  # no default from Volta on
    assert hong_kim_example().ldst_units is None and c2050().ldst_units is None  # papers' presets as published
    units = {cc: machine_from_gpu(gpu_from_spec({**SPEC, "compute_version": cc, "num_of_cores": "3840"})).ldst_units
             for cc in ("3.5", "5.2", "6.0", "6.1")}  # fmt: skip
    assert units == {"3.5": 32, "5.2": 32, "6.0": 16, "6.1": 32}


def test_l1tex_wavefronts_from_volta_on_hand_worked():
    # Nsight Compute style (sectors a request counted): 2 coalesced (a line each) + 10 uncoalesced of 6 sectors
    # (1.5 wavefronts of 4 sectors) + 4 shared + 3 bank conflicts = 2 + 15 + 4 + 3
    k = KernelParams(threads_per_block=64, blocks=4, comp_insts=20.0, coal_mem_insts=2.0, uncoal_mem_insts=10.0,
                     uncoal_per_mw=6.0, uncoal_sectors_per_mw=6.0, shared_insts=4.0,
                     bank_conflict_insts=3.0)  # fmt: skip
    assert l1tex_wavefronts(k, 4.0) == pytest.approx(24.0)
    assert l1tex_wavefronts(replace(k, uncoal_sectors_per_mw=2.0), 4.0) == pytest.approx(19.0)  # at least one a request
    # a trace's params count lines a request, not sectors: 3 lines, 3 wavefronts
    assert l1tex_wavefronts(replace(k, uncoal_per_mw=3.0, uncoal_sectors_per_mw=0.0), 4.0) == pytest.approx(39.0)
    h100 = machine_from_gpu(get_gpu("h100"))
    assert h100.ldst_units is None and h100.l1tex_sectors_per_wavefront == 4.0  # [NCU-L1], [NVF-LSU]
    assert ldst_cycles_per_warp(k, h100) == pytest.approx(24.0)  # one wavefront a cycle
    for name in ("v100", "t4", "a100", "rtx3090"):
        assert machine_from_gpu(get_gpu(name)).l1tex_sectors_per_wavefront == 4.0, name
    # Kepler keeps its units' passes (the whitepaper's 32), the papers' presets no bound
    assert machine_from_gpu(get_gpu("k40")).l1tex_sectors_per_wavefront is None
    assert ldst_cycles_per_warp(k, hong_kim_example()) == 0.0


def _mk(**kw):
    # 8 warps an SM (2 blocks of 4 warps), one round; one coalesced load and 40 other
    # instructions a warp, 30 of them shared-memory accesses
    base = {"threads_per_block": 128, "blocks": 32, "active_blocks_per_sm": 2, "active_sms": 16, "comp_insts": 40.0,
            "coal_mem_insts": 1.0, "shared_insts": 30.0}  # fmt: skip
    return KernelParams(**{**base, **kw})


def test_mwp_cwp_ldst_bound_hand_worked():
    # Hong & Kim's Sec. 3.6 machine (Issue_cycles 4, Mem_LD 420, Departure_del_coal 4,
    # 80 GB/s, 16 SMs at 1 GHz) with 4 LD/ST units: 32 / 4 = 8 cycles per LD/ST instruction.
    m = replace(hong_kim_example(), ldst_units=4)
    off = mwp_cwp.predict(_mk(), hong_kim_example())
    on = mwp_cwp.predict(_mk(), m)
    # Issue: 4 x 41 = 164 cycles; LD/ST: (1 + 30) x 8 = 248 cycles, the larger
    assert off.comp_cycles == pytest.approx(164.0) and off.ldst_cycles == 0.0
    assert on.issue_cycles_comp == pytest.approx(164.0) and on.ldst_cycles == pytest.approx(248.0)
    assert on.comp_cycles == pytest.approx(248.0)
    # MWP: min(420 / 4, 80 / (16 x 128 B x 1 GHz / 420), N = 8) = 8; CWP = (420 + 248) / 248 = 2.69 < 8
    assert on.mwp == pytest.approx(8.0)
    assert on.cwp == pytest.approx(668.0 / 248.0)
    # Eq. 24 (compute bound): Mem_L x #Rep + Comp_cycles x N x #Rep = 420 + 248 x 8 = 2404
    assert on.case == "eq24" and on.exec_cycles == pytest.approx(2404.0)
    assert off.case == "eq24" and off.exec_cycles == pytest.approx(420.0 + 164.0 * 8)
    # A kernel whose issue outweighs its LD/ST work is unchanged
    light = _mk(shared_insts=5.0)  # (1 + 5) x 8 = 48 < 164
    assert mwp_cwp.predict(light, m).exec_cycles == pytest.approx(
        mwp_cwp.predict(light, hong_kim_example()).exec_cycles
    )


def test_gpuperf_ldst_bound_hand_worked():
    # Sim et al.'s C2050 (avg_inst_lat 18, SIMD 32: ITILP_max 18) with its 16 LD/ST units: 2 cycles each.
    m = replace(c2050(), ldst_units=16)
    k = _mk(ilp=4.0, bank_conflict_insts=2.0, active_sms=14, blocks=28)  # 8 warps per SM, ITILP = min(4 x 8, 18) = 18
    off, on = gpuperf.predict(k, c2050()), gpuperf.predict(k, m)
    # W_parallel = 41 insts x 8 warps x 18 / 18 = 328; O_bank = 2 x 8 x 18 / 18 = 16
    assert off.w_parallel == pytest.approx(328.0) and off.o_bank == pytest.approx(16.0)
    assert off.t_comp == pytest.approx(328.0 + off.w_serial) and off.t_ldst == 0.0
    # T_LDST = (1 + 30 + 2) x 2 x 8 warps = 528 > 328 + 16: T_comp = 528 + O_sync + O_SFU + O_CFdiv (all 0 here)
    assert on.t_ldst == pytest.approx(528.0)
    assert on.o_sync == 0.0 and on.o_sfu == 0.0 and on.o_cfdiv == 0.0
    assert on.t_comp == pytest.approx(528.0)
    assert on.t_exec >= off.t_exec
    # Replays are counted once: when W_parallel + O_bank is the larger, T_comp is as published
    light = replace(k, shared_insts=5.0)  # T_LDST = (1 + 5 + 2) x 2 x 8 = 128 < 344
    assert gpuperf.predict(light, m).t_comp == pytest.approx(gpuperf.predict(light, c2050()).t_comp)
