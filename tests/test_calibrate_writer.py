"""placement.calibrate.writer: the calibrated GPU configuration, without a GPU.

Recorded measurements stand in for a run: the H100's microbenchmarks.csv and mt4g
(../shared/data), and a gpu-benches curve through the analysis.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from placement.calibrate.analysis import AddressBits, Stat, find_levels, name_levels
from placement.calibrate.measurements import (
    Calibration,
    Curve,
    Device,
    Measured,
    Skipped,
)
from placement.calibrate.recorded import (
    measurements_from_microbenchmarks,
    measurements_from_mt4g,
    read_gpu_benches,
    read_microbenchmarks,  # fmt: skip
    read_mt4g,
)
from placement.calibrate.writer import build_config, resize_cache, write_config
from placement.gpu import ConfigError, get_gpu, gpu_from_dict, load_gpu
from placement.hms import departure_delays, dram_bandwidth_gbs
from placement.models.params import sustained_fraction_of

ROOT = Path(__file__).resolve().parents[1]
VECADD = ROOT / "configs" / "examples" / "vecadd.parquet"
H100 = Device("NVIDIA H100 80GB HBM3", 0, (9, 0), 132, "580.159.04", "13.0")
DATE = "2026-11-25"


def measured(key, value, unit="cycles", benchmark="test bench", spread=0.0, n=5):
    return Measured(key, Stat(value, spread, n), unit, benchmark)


@pytest.fixture
def csv_calibration(shared_data):
    rows = read_microbenchmarks(shared_data / "h100-placements" / "microbenchmarks.csv")
    return Calibration(
        H100, DATE, False, measurements_from_microbenchmarks(rows, "h100-placements/microbenchmarks.csv")
    )


def test_microbenchmarks_csv_gives_its_latencies(tmp_path, csv_calibration):
    out = tmp_path / "calibrated.toml"
    g, cal = write_config(out, get_gpu("h100"), csv_calibration)
    assert cal.skipped == ()
    # every latency the csv gives, in its field (cycles at the measured clock)
    assert g.compute.clock_mhz == 1974.7
    assert g.caches.l1_latency == 39.56
    assert g.caches.tex_latency == 88.0
    assert g.caches.const_latency == 34.0
    assert g.caches.l2_latency == 290.02
    assert g.memory.dram_latency == 696.91
    assert g.memory.smem_latency == 28.94
    # the copy kernel's 2,788.8 GB/s over the 3,350 datasheet: the H100's own sustained share
    assert g.memory.dram_sustained_fraction == pytest.approx(2788.8 / 3350) and g.memory.bandwidth_gbs == 3350
    # the file round-trips through the loader: the same configuration
    again = load_gpu(out)
    assert again == g
    # unmeasured values are the base's
    base = get_gpu("h100")
    assert (g.compute.sms, g.caches.l1, g.caches.l2, g.dram.mapping) == (
        base.compute.sms,
        base.caches.l1,
        base.caches.l2,
        base.dram.mapping,
    )
    assert (
        g.memory.bandwidth_gbs == base.memory.bandwidth_gbs
    )  # the datasheet peak stays (the models apply the sustained share)
    text = out.read_text()
    line = next(t for t in text.splitlines() if t.startswith("l1_latency = "))
    # the comment names the benchmark, the device, the driver, the date and the spread
    for part in ("L1 hit (ld, 16 KiB)", "NVIDIA H100 80GB HBM3", "driver 580.159.04", DATE, "one measurement"):
        assert part in line
    data = tomllib.loads(text)
    assert data["calibration"]["measured"]["dram_read_gbs"] == 3039.2
    assert data["calibration"]["measured"]["l1_latency_ptr64"] == 32.0
    assert data["calibration"]["device"] == "NVIDIA H100 80GB HBM3" and data["calibration"]["base"] == "h100"
    # configs/gpus/h100.toml takes its clock and latencies from these rows (issue 33): calibrating it reproduces it
    assert (g.compute, g.memory, g.caches, g.dram) == (base.compute, base.memory, base.caches, base.dram)


def test_mt4g_latencies_go_to_their_fields(tmp_path, shared_data):
    # mt4g's p50 in their fields, nothing else changed (the bundled h100.toml has microbenchmarks.csv's latencies)
    r = read_mt4g(shared_data / "mt4g" / "NVIDIA H100 80GB HBM3.json")
    cal = Calibration(H100, DATE, False, measurements_from_mt4g(r, "mt4g/NVIDIA H100 80GB HBM3.json"))
    g, _ = write_config(tmp_path / "mt4g.toml", get_gpu("h100"), cal)
    base = get_gpu("h100")
    assert (g.caches.l1_latency, g.caches.tex_latency, g.caches.const_latency, g.caches.l2_latency) == (
        38.0,
        42.0,
        17.0,
        222.0,
    )
    assert (g.memory.dram_latency, g.memory.smem_latency) == (864.0, 30.0)
    lat = dict.fromkeys(("l1_latency", "tex_latency", "const_latency", "l2_latency"), 1.0)
    assert replace(g.caches, **lat) == replace(base.caches, **lat)
    assert replace(g.memory, dram_latency=1.0, smem_latency=1.0) == replace(
        base.memory, dram_latency=1.0, smem_latency=1.0
    )


def test_spread_and_repetitions_in_the_comment(tmp_path):
    cal = Calibration(
        H100, DATE, True, {"l1_latency": measured("l1_latency", 39.6, spread=0.2, n=7, benchmark="pchase L1 hit")}
    )
    write_config(tmp_path / "c.toml", get_gpu("h100"), cal)
    line = next(t for t in (tmp_path / "c.toml").read_text().splitlines() if t.startswith("l1_latency = "))
    assert line.startswith("l1_latency = 39.6  # pchase L1 hit: NVIDIA H100 80GB HBM3, driver 580.159.04, 2026-11-25;")
    assert "median of 7, spread 0.2 cycles (0.51 %, median absolute deviation)" in line


def test_capacities_from_a_recorded_walk_resize_the_caches(tmp_path, shared_data):
    # the H100 PCIe curve: the L1 leaves its plateau at 216-239 KiB, the L2's far half at 51750-56926 KiB
    c = read_gpu_benches(shared_data / "gpu-benches-latency" / "h100_pcie.txt")
    named = name_levels(find_levels(c.footprint_bytes, c.cycles), global_in_l1=True, dram_latency=650.0)
    cal = Calibration(Device("NVIDIA H100 PCIe", 0, (9, 0), 114, "unknown", ""), DATE, False, {
        "l1_bytes": Measured("l1_bytes", Stat(named.l1.capacity_bytes, 0.0, 33), "bytes", "walk"),
        "l2_bytes": Measured("l2_bytes", Stat(named.l2_capacity_bytes, 0.0, 6), "bytes", "walk"),
        "l1_latency": Measured("l1_latency", named.l1.latency, "cycles", "walk"),
        "l2_latency": Measured("l2_latency", named.l2_latency, "cycles", "walk"),
    }, curves={"walk_ld": Curve("walk_ld", "footprint_bytes", "cycles", tuple(c.footprint_bytes), tuple(c.cycles))})  # fmt: skip
    base = get_gpu("h100-pcie")  # the catalog's H100 PCIe
    g, _ = write_config(tmp_path / "pcie.toml", base, cal)
    sets, line = 4, 128
    ways = round((216 * 239) ** 0.5 * 1024 / (sets * line))  # 446: the bracket's midpoint, 227 KiB
    assert g.caches.l1 == f"S:{sets}:{line}:{ways},{base.caches.l1.split(',')[1]}"
    geom = base.caches.l2.split(",")[0].split(":")
    l2_bytes = int(geom[1]) * int(geom[2]) * int(g.caches.l2.split(",")[0].split(":")[3]) * g.caches.l2_slices
    assert abs(l2_bytes / named.l2_capacity_bytes - 1) < 0.03  # whole ways per slice
    assert g.caches.l1_latency == pytest.approx(34.2, rel=0.01) and g.caches.l2_latency == pytest.approx(
        265.5, rel=0.01
    )
    data = tomllib.loads((tmp_path / "pcie.toml").read_text())
    walk = data["calibration"]["curves"]["walk_ld"]
    assert walk["x"] == list(c.footprint_bytes) and walk["y"] == list(c.cycles) and walk["x_name"] == "footprint_bytes"


def test_resize_cache():
    assert resize_cache("S:4:128:466,L:T:m:L:L", 238848) == "S:4:128:466,L:T:m:L:L"
    assert resize_cache("N:1:64:32,L:R:f:N:L", 2048) == "N:1:64:32,L:R:f:N:L"
    assert resize_cache("S:256:128:20,L:B:m:L:X", 50 * 1024 * 1024 / 80) == "S:256:128:20,L:B:m:L:X"
    assert resize_cache("S:4:128:466,L:T:m:L:L", 10) == "S:4:128:1,L:T:m:L:L"


def test_bad_measurements_are_dropped_not_written(tmp_path):
    base = get_gpu("h100")
    cal = Calibration(H100, DATE, False, {
        "l1_latency": measured("l1_latency", -5.0),  # a benchmark gone wrong
        "sector_bytes": measured("sector_bytes", 48.0, unit="bytes"),  # 128-byte lines are not whole 48-byte sectors
        "l2_latency": measured("l2_latency", 290.0),
    })  # fmt: skip
    g, cal2 = write_config(tmp_path / "c.toml", base, cal)
    assert g.caches.l1_latency == base.caches.l1_latency and g.memory.sector_bytes == base.memory.sector_bytes
    assert g.caches.l2_latency == 290.0
    skipped = {s.benchmark: s.reason for s in cal2.skipped}
    assert set(skipped) == {"writer: l1_latency", "writer: sector_bytes"}
    assert (
        "caches.l1_latency" in skipped["writer: l1_latency"] and "memory.line_bytes" in skipped["writer: sector_bytes"]
    )
    data = tomllib.loads((tmp_path / "c.toml").read_text())
    assert any(s.startswith("writer: l1_latency: refused") for s in data["calibration"]["skipped"])


def test_skipped_benchmarks_and_notes_are_kept(tmp_path):
    cal = Calibration(H100, DATE, True, {}, skipped=(Skipped("dram_bits", "RuntimeError: out of memory"),),
                      notes=("Huang & Li Algorithm 1, bits 5-29: no column (row-hit) bits stand out",))  # fmt: skip
    g, _ = write_config(tmp_path / "c.toml", get_gpu("h100"), cal)
    data = tomllib.loads((tmp_path / "c.toml").read_text())
    assert data["calibration"]["skipped"] == ["dram_bits: RuntimeError: out of memory"]
    assert data["calibration"]["quick"] is True and data["calibration"]["notes"][0].startswith("Huang & Li")
    assert g.dram == get_gpu("h100").dram


def test_found_address_bits_replace_the_mapping(tmp_path):
    bits = AddressBits(True, column_bits=(8, 9, 10), row_bits=(30, 31, 32), other_bits=(5, 6, 7, 11, 12), row_hit=400.0,
                       row_miss=700.0, row_conflict=950.0)  # fmt: skip
    cal = Calibration(H100, DATE, False, {"dram_row_hit_ns": measured("dram_row_hit_ns", 202.5, "ns"),
                                          "dram_row_miss_ns": measured("dram_row_miss_ns", 354.5, "ns"),
                                          "dram_row_conflict_ns": measured("dram_row_conflict_ns", 481.1, "ns")},
                      address_bits=bits)  # fmt: skip
    g, _ = write_config(tmp_path / "c.toml", get_gpu("h100"), cal)
    assert g.dram.mapping == "" and g.dram.row_bits == (30, 31, 32) and g.dram.column_bits == (8, 9, 10)
    assert g.dram.byte_bits == (0, 1, 2, 3, 4)
    assert (g.dram.row_hit_ns, g.dram.row_miss_ns, g.dram.row_conflict_ns) == (202.5, 354.5, 481.1)


def test_loader_accepts_and_ignores_the_calibration_table(tmp_path):
    base = get_gpu("h100")
    text = Path(base.path).read_text() + '\n[calibration]\ndevice = "x"\n[calibration.curves.walk]\nx = [1.0, 2.0]\n'
    p = tmp_path / "with.toml"
    p.write_text(text)
    g = load_gpu(p)
    assert (g.compute, g.memory, g.caches, g.dram) == (base.compute, base.memory, base.caches, base.dram)
    data = tomllib.loads(Path(base.path).read_text())
    data["calibration"] = 3
    with pytest.raises(ConfigError, match="calibration: expected a table"):
        gpu_from_dict(data, "x.toml")


def test_corrupted_measured_value_is_refused_naming_the_field(tmp_path, run_cli, csv_calibration):
    out = tmp_path / "calibrated.toml"
    write_config(out, get_gpu("h100"), csv_calibration)
    code, _, err = run_cli("gpus", out, "--json")
    assert code == 0
    text = out.read_text().replace("l1_latency = 39.56  #", "l1_latency = -39.56  #", 1)
    out.write_text(text)
    code, stdout, err = run_cli("gpus", out)
    assert code == 2 and stdout == ""
    assert err.count("\n") == 1 and "caches.l1_latency" in err and "must be > 0" in err and str(out) in err


def test_rank_runs_on_the_calibrated_file(tmp_path, run_cli, csv_calibration):
    out = tmp_path / "calibrated.toml"
    write_config(out, get_gpu("h100"), csv_calibration)
    code, stdout, err = run_cli("rank", VECADD, "--gpu", out, "--top", "2", "--json")
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["gpu"] == "h100-calibrated" and len(doc["ranking"]) == 2


def test_output_folder_must_exist(tmp_path):
    from traces.errors import InputError

    cal = Calibration(H100, DATE, False, {})
    with pytest.raises(InputError, match="does not exist"):
        write_config(tmp_path / "no" / "c.toml", get_gpu("h100"), cal)
    # build_config validates the text and writes nothing; write_config writes what it validated
    text, g, skipped = build_config(tmp_path / "c.toml", get_gpu("h100"), cal)
    assert skipped == [] and not (tmp_path / "c.toml").exists()
    assert gpu_from_dict(tomllib.loads(text), str(tmp_path / "c.toml")) == g


def test_the_copy_kernel_gives_the_gpus_own_sustained_share_and_the_models_take_it(tmp_path):
    # the H200's quick run (30 Nov 2026): copy 3,584.1 GB/s of the catalog's 4,800 -> 0.7467; its read and write
    # kernels are recorded only
    base = get_gpu("h200")
    cal = Calibration(H100, DATE, True, {k: measured(k, v, unit="GB/s") for k, v in
                                         (("dram_copy_gbs", 3584.1), ("dram_read_gbs", 3663.1),
                                          ("dram_write_gbs", 3512.8))})  # fmt: skip
    g, _ = write_config(tmp_path / "c.toml", base, cal)
    assert g.memory.dram_sustained_fraction == pytest.approx(3584.1 / 4800)
    line = next(t for t in (tmp_path / "c.toml").read_text().splitlines() if t.startswith("dram_sustained_fraction"))
    assert "dram_copy_gbs 3584 GB/s over the datasheet's 4800" in line
    # the models space DRAM requests by it: the sustained bandwidth and the departure delays
    assert sustained_fraction_of(base) == 0.764  # the catalog's H200: the median of three such runs (3,667 GB/s)
    assert sustained_fraction_of(g) == pytest.approx(0.7467, abs=1e-4)
    assert dram_bandwidth_gbs(g) == pytest.approx(3584.1)
    assert departure_delays(g)[0] == pytest.approx(g.memory.departure_del_coal * 4800 / 3584.1)
    # a copy faster than the datasheet is not a share: not written, the base's stays (the catalog's H200: its own;
    # the H100 PCIe: none, so Hopper's 0.86)
    fast = Calibration(H100, DATE, True, {"dram_copy_gbs": measured("dram_copy_gbs", 5000.0, unit="GB/s")})
    g2, _ = write_config(tmp_path / "d.toml", base, fast)
    assert g2.memory.dram_sustained_fraction == 0.764
    g3, _ = write_config(tmp_path / "e.toml", get_gpu("h100-pcie"), fast)
    assert g3.memory.dram_sustained_fraction == 0.0 and sustained_fraction_of(g3) == 0.86


@pytest.mark.parametrize("value", ["1.5", "-0.1", '"most"'])
def test_a_bad_sustained_share_in_a_configuration_is_one_line(tmp_path, value):
    text = (ROOT / "configs" / "gpus" / "h100.toml").read_text()
    bad = re.sub(r"^dram_sustained_fraction = [0-9.]+", f"dram_sustained_fraction = {value}", text, flags=re.M)
    assert bad != text
    (tmp_path / "bad.toml").write_text(bad)
    with pytest.raises(ConfigError, match=r"memory.dram_sustained_fraction"):
        load_gpu(tmp_path / "bad.toml")
