"""Lemeire et al.: CPI with the run correction, latencies, occupancy roofline, cache levels."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from placement.cli import main
from placement.gpu import get_gpu
from placement.models import lemeire as le

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
LATENCY = DATA / "gpu-benches-latency"


def test_peak_performance_eq1():
    # Sec. III: a GPU of 2 CUs with 192 PEs each at 900 MHz.
    assert le.peak_performance(2, 192, 900e6) == pytest.approx(345.6e9)


def test_run_correction_fig4():
    # Fig. 4: 3 CUs, 2 concurrent work groups of 3 warps each; 7 work groups need 2 runs on some CU.
    r = le.Run(work_items=7 * 96, wg_size=96, local_mem=24 * 1024, runtime_s=2e-6, instr_kernel=100)
    p = le.run_point(r, nbr_cu=3, clock_hz=1e9, max_conc_wg=8, max_local_mem=48 * 1024, max_conc_warps=64)
    assert p.conc_wg == 2 and p.conc_warps == 6 and p.actual_warp_size == 32
    assert p.runs_cu == math.ceil(21 / 3 / 6) == 2
    assert p.cycles_of_run == pytest.approx(1000)  # 2 us / 2 runs x 1 GHz
    assert p.cpi_cu == pytest.approx(1000 / (100 * 96 * 2))
    assert p.cpi_warp == pytest.approx(1000 / (100 * 96 * 2) * 32)


def _pipeline_runs(gpu, completion=6.0, issue=0.5, instr=1000):
    """Runs of a dependent-instruction kernel on the abstract pipeline of Sec. IV-A:
    with w concurrent warps, a run takes instr x max(Lambda, w x lambda) cycles."""
    runs = []
    for w in range(1, 17):
        cycles = instr * max(completion, w * issue)
        runs.append(le.Run(work_items=w * 32 * gpu.compute.sms, wg_size=32,
                           local_mem=gpu.memory.smem_per_sm // w, runtime_s=cycles / gpu.clock_hz,
                           instr_kernel=instr))  # fmt: skip
    return runs


def test_latencies_and_ridge_from_pipeline():
    # GT 640 numbers of Sec. V-A: completion latency 6 cycles, CPI converging to 0.5.
    gpu = get_gpu("k80")
    rep = le.analyze_runs(_pipeline_runs(gpu), gpu)
    assert rep.completion_latency == pytest.approx(6.0)  # Eq. 5, one concurrent warp
    assert rep.issue_latency == pytest.approx(0.5)  # Eq. 4
    # Full pipeline from w = Lambda / lambda = 12 warps; within 5 % of the peak from
    # 6/w <= 0.5/0.95, i.e. w >= 11.4 -> 12 warps = 384 work items per CU.
    assert rep.ridge_concurrency == 12 * 32
    assert rep.peak == pytest.approx(max(r.instr_kernel * r.work_items / r.runtime_s for r in _pipeline_runs(gpu)))


def test_ridge_point_tolerance():
    assert le.ridge_point([1, 2, 3, 4], [10, 90, 96, 100]) == 3
    assert le.ridge_point([1, 2, 3, 4], [10, 90, 96, 100], tolerance=0.2) == 2


def test_cli_runs(tmp_path, capsys):
    gpu = get_gpu("k80")
    p = tmp_path / "runs.csv"
    lines = ["work_items,wg_size,local_mem,runtime_s,instr_kernel"]
    lines += [f"{r.work_items},{r.wg_size},{r.local_mem},{r.runtime_s!r},{r.instr_kernel}" for r in _pipeline_runs(gpu)]
    p.write_text("\n".join(lines) + "\n")
    assert main(["model", "lemeire", "--gpu", "k80", "--runs", str(p), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["issue_latency"] == pytest.approx(0.5) and doc["completion_latency"] == pytest.approx(6.0)
    assert doc["ridge_concurrency"] == 384


def test_cli_runs_bad_column(tmp_path, capsys):
    p = tmp_path / "runs.csv"
    p.write_text("work_items,wg_size,runtime_s\n1,1,1\n")
    assert main(["model", "lemeire", "--gpu", "k80", "--runs", str(p)]) == 2
    assert "local_mem" in capsys.readouterr().err


def test_eq6_curve_k620_constant_cache():
    # Table III / Fig. 7: Quadro K620 constant memory, 8 KB cache, latencies 48 and 90.6 cycles.
    l1 = le.CacheLevel("L1", 48.0, 8 * 1024, 0, 0, 0)
    l2 = le.CacheLevel("DRAM", 90.6, None, 0, 0, 0)
    sizes_kb = np.unique(np.round(np.geomspace(0.25, 4096, 80), 3))
    lat = le.cpmr(sizes_kb * 1024, [l1, l2])
    assert lat[sizes_kb <= 8].max() == pytest.approx(48.0)
    assert le.cpmr([16 * 1024], [l1, l2])[0] == pytest.approx(48 + 42.6 * 0.5)  # Eq. 6 at twice the cache size
    levels = le.cache_levels(sizes_kb, lat)
    assert [lv.name for lv in levels] == ["L1", "DRAM"]
    assert levels[0].latency == pytest.approx(48.0)
    assert levels[0].size_bytes == pytest.approx(8 * 1024, rel=0.02)
    assert levels[1].latency == pytest.approx(90.6, rel=0.05)


def _levels(name):
    path = LATENCY / f"{name}.txt"
    if not path.exists():
        pytest.skip(f"{path} is absent (real data lives in ../shared/data, not in a fresh clone)")
    return le.cache_levels_from_file(path)


MIB = 2**20


def test_v100_levels():
    lv = _levels("v100")
    assert [x.name for x in lv] == ["L1", "L2", "DRAM"]
    assert lv[0].latency == pytest.approx(30, abs=1) and 96 * 1024 <= lv[0].size_bytes <= 128 * 1024
    assert lv[1].latency == pytest.approx(215, abs=3)
    assert lv[1].size_bytes == pytest.approx(6 * MIB, rel=0.1)  # V100 L2: 6 MB
    assert lv[2].latency > 400


@pytest.mark.parametrize("name, l2_mib", [("a100_40", 40), ("a100_80", 40), ("h100_pcie", 50), ("l40", 96)])
def test_last_level_cache_capacity(name, l2_mib):
    lv = _levels(name)
    caches = [x for x in lv if x.size_bytes is not None]
    assert lv[-1].name == "DRAM" and lv[-1].latency > caches[-1].latency
    # The last cache level before DRAM is the whole L2 (A100 and H100 show the
    # near partition as an extra step at half the capacity).
    assert caches[-1].size_bytes == pytest.approx(l2_mib * MIB, rel=0.1)
    assert caches[0].latency < 40  # L1 hit


def test_a100_near_and_far_l2():
    lv = _levels("a100_40")
    assert len(lv) == 4
    assert lv[1].size_bytes == pytest.approx(20 * MIB, rel=0.1)  # near partition
    assert lv[1].latency == pytest.approx(213, abs=3) and lv[2].latency == pytest.approx(426, abs=5)


def test_cli_chase(capsys):
    path = LATENCY / "v100.txt"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    assert main(["model", "lemeire", "--chase", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [x["name"] for x in doc["levels"]] == ["L1", "L2", "DRAM"]


def test_chase_bad_file(tmp_path, capsys):
    p = tmp_path / "x.txt"
    p.write_text("1 2 3\n4 5 6\n")
    assert main(["model", "lemeire", "--chase", str(p)]) == 2
    assert "line 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "is a folder"),  # a folder where the file should be
        (b"\xff\xfe\x00junk", "not a text file"),
        (b"work_items,wg_size,local_mem,runtime_s,instr_kernel\n1024,64,0,inf,100\n", "row 1: "),
        (b"work_items,wg_size,local_mem,runtime_s,instr_kernel\n1e308,64,0,1e-5,100\n", "row 1: "),
        (b"work_items,wg_size,local_mem,runtime_s,instr_kernel\ninf,64,0,1e-5,100\n", "row 1: "),
        # was a traceback under --json (its cycles infinite) and "inf" in the text
        (b"work_items,wg_size,local_mem,runtime_s,instr_kernel\n1024,64,0,1e300,100\n", "runtime_s at most 1e+06"),
        (b"work_items,wg_size,local_mem,runtime_s\n1024,64,0,1e-5\n", "'instr_kernel' missing (or give --instr-ke"),
    ],
)
def test_cli_runs_bad_input_one_line(tmp_path, capsys, content, words):
    # were internal errors (a folder, bytes that are not UTF-8, an infinite work-item count) or accepted (an
    # infinite runtime; a count whose rate overflows, which crashed the ridge point)
    p = tmp_path / "runs.csv"
    p.mkdir() if content is None else p.write_bytes(content)
    assert main(["model", "lemeire", "--gpu", "k80", "--runs", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "runs.csv" in err and words in err, err


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "is a folder"),
        (b"4 30\n8 inf\n16 30\n32 200\n", "line 2: "),
        # were accepted, log10 of a zero footprint warning on stderr (benchmarks/fuzz.py chase, seed 3601)
        (b"0 30\n8 30\n16 30\n32 200\n", "line 1: expected positive numbers"),
        (b"4 30\n8 0\n16 30\n32 200\n", "line 2: expected positive numbers"),
        (b"1 1000 -4 0.1 30\n1 1000 8 0.1 30\n1 1000 16 0.1 30\n", "line 1: expected positive numbers"),
    ],
)
def test_cli_chase_bad_input_one_line(tmp_path, capsys, content, words):
    p = tmp_path / "chase.txt"
    p.mkdir() if content is None else p.write_bytes(content)
    assert main(["model", "lemeire", "--chase", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "chase.txt" in err and words in err, err


def test_concurrent_groups_are_within_the_cus_warps():
    """1,048,576 items in groups of 256 on the K80 (13 SMs at 875 MHz, 16 blocks and 2,048 threads an SM): 8 groups
    run at once, not MaxConcWG's 16. By hand: concWarps 64, totalWarps 32,768, runsCU ceil(32,768 / 13 / 64) = 40,
    cyclesOfRun 0.4 ms / 40 x 875 MHz = 8,750, instrRun 100 x 256 x 8 = 204,800, CPI_warp 8,750 / 204,800 x 32 =
    1.3672 (was 0.684: instrRun of 16 groups)."""
    gpu = get_gpu("k80")
    r = le.Run(work_items=1 << 20, wg_size=256, local_mem=0, runtime_s=4e-4, instr_kernel=100)
    c = gpu.compute
    p = le.run_point(r, nbr_cu=c.sms, clock_hz=gpu.clock_hz, max_conc_wg=c.max_blocks_per_sm,
                     max_local_mem=gpu.memory.smem_per_sm, max_conc_warps=c.max_threads_per_sm // 32)  # fmt: skip
    assert (p.conc_wg, p.conc_warps, p.runs_cu) == (8, 64, 40)
    assert p.cycles_of_run == pytest.approx(8750) and p.cpi_warp == pytest.approx(8750 / 204800 * 32)
    # 128-item groups: 16 by both limits, as before
    q = le.run_point(le.Run(1 << 20, 128, 0, 4.2e-4, 100), nbr_cu=c.sms, clock_hz=gpu.clock_hz, max_conc_wg=16,
                     max_local_mem=gpu.memory.smem_per_sm, max_conc_warps=64)  # fmt: skip
    assert (q.conc_wg, q.conc_warps) == (16, 64)


def test_a_rise_too_short_for_a_level_is_said(caplog):
    """Three points at 500 cycles after a 200-cycle plateau: the 200 cycles were named DRAM without a word."""
    fp = [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    lat = [30, 30, 30, 30, 200, 200, 200, 200, 500, 500, 500]
    with caplog.at_level("WARNING", logger="placement.models.lemeire"):
        levels = le.cache_levels(fp, lat)
    assert [(lv.name, lv.latency) for lv in levels] == [("L1", 30.0), ("DRAM", 200.0)]
    assert any("the last 3 points (1024 kB on) rise to 500 cycles" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level("WARNING", logger="placement.models.lemeire"):
        levels = le.cache_levels(fp + [8192], lat + [500])  # four make a level: no warning
    assert [lv.name for lv in levels] == ["L1", "L2", "DRAM"] and not caplog.records
