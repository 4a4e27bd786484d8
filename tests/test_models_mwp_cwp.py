"""Hong & Kim's MWP-CWP model: Table 2 of the paper and hand-worked cases."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from placement.cli import main
from placement.models import KernelParams, hong_kim_example, load_kernel_file
from placement.models import mwp_cwp

ROOT = Path(__file__).resolve().parents[1]
TABLE2 = ROOT / "configs" / "examples" / "hong-kim-table2.toml"


def close(x, want, rel=0.005):
    return abs(x - want) <= rel * abs(want)


def test_table2_library():
    k, mach = load_kernel_file(TABLE2)
    r = mwp_cwp.predict(k, replace(hong_kim_example(), **mach))
    assert r.departure_delay == 320 and r.mem_l == 730  # Eq. 15, Eq. 10/12
    assert close(r.mwp, 2.28) and r.cwp == 20 and close(r.cwp_full, 34.18)
    assert r.comp_cycles == 132 and r.mem_cycles == 4380  # Eq. 19, Eq. 18
    assert close(r.mwp_peak_bw, 28.57) and r.rep == 1
    assert r.case == "eq23"
    assert close(r.exec_cycles_app, 38450)
    assert close(r.synch_cost, 12288)
    assert close(r.exec_cycles, 50738)


def test_table2_cli_json(capsys):
    assert main(["model", "mwp-cwp", "--kernel", str(TABLE2), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for key, want in (
        ("mwp", 2.28),
        ("cwp", 20),
        ("exec_cycles_app", 38450),
        ("synch_cost", 12288),
        ("exec_cycles", 50738),
    ):
        assert close(doc[key], want), (key, doc[key], want)


def _k(**kw):
    base = dict(threads_per_block=128, blocks=80, active_blocks_per_sm=5, active_sms=16, comp_insts=0.0)
    base.update(kw)
    return KernelParams(**base)


def test_mwp_greater_than_cwp_eq24():
    # Coalesced, 800 GB/s so bandwidth does not bind: MWP = min(420/4, 164, 20) = N = 20;
    # Comp_cycles = 4 x 41 = 164 < Mem_cycles = 420, CWP = 584/164 = 3.56 < MWP.
    m = replace(hong_kim_example(), bandwidth_gbs=800.0)
    r = mwp_cwp.predict(_k(comp_insts=40, coal_mem_insts=1, blocks=80), m)
    assert r.mwp == 20 and close(r.cwp, 584 / 164)
    assert r.case == "eq24"
    assert close(r.exec_cycles_app, 420 + 164 * 20)  # (Mem_L + Comp_cycles x N) x #Rep


def test_not_enough_warps_eq22():
    # One block of 2 warps per SM: MWP = CWP = N = 2.
    r = mwp_cwp.predict(
        _k(threads_per_block=64, blocks=16, active_blocks_per_sm=1, comp_insts=9, coal_mem_insts=1), hong_kim_example()
    )
    assert r.n == 2 and r.mwp == 2 and r.cwp == 2 and r.case == "eq22"
    assert close(r.exec_cycles_app, 420 + 40 + 40 * (2 - 1))  # Eq. 22


def test_eq22_waits_on_loads_not_stores():
    # 2 warps an SM, 2 coalesced loads and 1 store a warp: Mem_cycles = 3 x 420 = 1260,
    # Comp_cycles = 4 x (9 + 3) = 48; MWP = CWP = N = 2 (Eq. 22).
    k = _k(threads_per_block=64, blocks=16, active_blocks_per_sm=1, comp_insts=9, coal_mem_insts=3)
    r = mwp_cwp.predict(k, hong_kim_example())
    assert r.case == "eq22" and close(r.exec_cycles_app, 1260 + 48 + 48 / 3 * (2 - 1))  # every access waited on
    # Knowing one of the three is a store: the warp waits on 2 x 420 = 840 cycles only
    rs = mwp_cwp.predict(replace(k, store_insts=1.0), hong_kim_example())
    assert rs.case == "eq22" and close(rs.exec_cycles_app, 840 + 48 + 16)
    assert rs.mem_cycles == r.mem_cycles and rs.mwp == r.mwp  # bandwidth and MWP still see the store


def test_bandwidth_limits_mwp():
    # Coalesced, 80 GB/s: BW_per_warp = 1 GHz x 128 B / 420 = 0.305 GB/s; MWP_peak_BW = 80 / (0.305 x 16) = 16.4.
    r = mwp_cwp.predict(_k(comp_insts=3, coal_mem_insts=1), hong_kim_example())
    assert close(r.mwp_peak_bw, 80e9 / (1e9 * 128 / 420 * 16))
    assert r.mwp == r.mwp_peak_bw and r.case == "eq23"
    assert close(r.exec_cycles_app, 420 * 20 / r.mwp + 16 / 1 * (r.mwp - 1))


def test_rep_counts_waves():
    r = mwp_cwp.predict(_k(blocks=160, comp_insts=27, uncoal_mem_insts=6), hong_kim_example())
    assert r.rep == 2
    r1 = mwp_cwp.predict(_k(blocks=80, comp_insts=27, uncoal_mem_insts=6), hong_kim_example())
    assert close(r.exec_cycles_app, 2 * r1.exec_cycles_app, 1e-9)


def test_compute_only_kernel():
    r = mwp_cwp.predict(_k(comp_insts=100), hong_kim_example())
    assert r.case == "compute-only" and r.exec_cycles == 4 * 100 * 20


def test_fewer_memory_instructions_than_one_per_warp_stay_finite():
    """Eq. 23's Comp_p = Comp_cycles / #Mem_insts holds at most the warp's whole computation: 1e-320 memory
    instructions per warp (fuzz input kernel 32638) predicted an infinite time."""
    tiny = mwp_cwp.predict(_k(comp_insts=27, uncoal_mem_insts=1e-320), hong_kim_example())
    assert tiny.case == "eq23"
    # by hand: N = 20 warps, MWP 2.28125 (Table 2's), Mem_cycles ~ 0, Comp_cycles = 4 x 27 = 108:
    # Comp_p = 108 (not 108 / 1e-320), app = 108 x (MWP - 1)
    assert close(tiny.exec_cycles_app, 108 * (tiny.mwp - 1), 1e-12)
    # at one memory instruction per warp the same Comp_p, and the time only grows with memory
    one = mwp_cwp.predict(_k(comp_insts=27, uncoal_mem_insts=1), hong_kim_example())
    assert one.exec_cycles_app > tiny.exec_cycles_app


def test_kernel_file_unknown_key(tmp_path, capsys):
    p = tmp_path / "k.toml"
    p.write_text("[kernel]\nthreads_per_block = 128\nblocks = 8\ncomp_insts = 3\nbogus = 1\n")
    assert main(["model", "mwp-cwp", "--kernel", str(p)]) == 2
    err = capsys.readouterr().err
    assert "kernel.bogus" in err and err.count("\n") == 1


def test_kernel_file_missing(capsys):
    assert main(["model", "mwp-cwp", "--kernel", "/nonexistent/k.toml"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_trace_needs_gpu(capsys, tmp_path):
    assert main(["model", "mwp-cwp", "--trace", str(tmp_path / "t.parquet")]) == 2
    assert "--gpu" in capsys.readouterr().err


def test_a_zero_for_an_optional_count_is_refused(tmp_path, capsys):
    # active_sms = 0 (and active_blocks_per_sm = 0) read as "not given": the table's 16 SMs ran instead
    text = TABLE2.read_text()
    for key in ("active_sms", "active_blocks_per_sm"):
        p = tmp_path / f"{key}.toml"
        p.write_text(text.replace(f"\n{key} = ", f"\n{key} = 0 #", 1))
        assert main(["model", "mwp-cwp", "--kernel", str(p)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"kernel.{key}: must be at least 1" in err, err


def test_gpu_on_the_command_line_wins_over_the_files_machine(capsys, caplog):
    """``--kernel table2.toml --gpu k80`` modeled the file's 16-SM, 420-cycle paper machine and called it so
    ("mwp-cwp on hong-kim-sec3.6"): the file's [machine] table replaced the GPU given. Now the K80's own machine,
    and a warning naming the table's keys not used."""
    from placement.gpu import get_gpu
    from placement.models.params import machine_from_gpu

    with caplog.at_level("WARNING", logger="placement.commands.model"):
        assert main(["model", "mwp-cwp", "--kernel", str(TABLE2), "--gpu", "k80", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    k80 = machine_from_gpu(get_gpu("k80"))
    assert doc["machine"] == "k80" and doc["mem_l"] >= k80.dram_latency != 420
    assert any("the file's [machine] table (bandwidth_gbs, clock_mhz," in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("key", ["uncoal_per_mw", "departure_del_uncoal"])
def test_a_departure_delay_of_zero_is_unbounded_not_a_crash(tmp_path, capsys, key):
    """A request of no transactions, or a delay of 0, leaves MWP without the bandwidth limit unbounded (Mem_L / 0):
    ``--json`` ended in a traceback on the infinity. Now null, "unbounded" in the text, and MWP the other limits'."""
    text = TABLE2.read_text()
    p = tmp_path / "k.toml"
    p.write_text(re.sub(rf"(?m)^{key} = [0-9.]+", f"{key} = 0", text))
    assert main(["model", "mwp-cwp", "--kernel", str(p), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mwp_without_bw_full"] is None and doc["mwp"] == min(doc["mwp_peak_bw"], doc["n"])
    assert main(["model", "mwp-cwp", "--kernel", str(p)]) == 0
    assert re.search(r"mwp_without_bw_full +unbounded", capsys.readouterr().out)
