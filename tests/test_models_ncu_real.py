"""Real Nsight Compute 2025.3 exports (../shared/data/h100-placements/ncu-raw-*.csv, H100 SXM):
they load as written (==PROF== lines, units such as byte/block and ns, the device name
"NVIDIA H100 80GB HBM3"), their values convert as the CSV says, texture loads and atomics
are read (placement.models.ncu_traffic), and every launch gets a finite prediction.
Units and counted texture / atomic metrics are also checked on small hand-made files."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.models import ncu_traffic
from placement.models.ncu import read_ncu, unit_scale
from traces.errors import InputError

FILES = ("ncu-raw-8-launches.csv", "ncu-raw-variants.csv")


@pytest.fixture
def h100(shared_data):
    return shared_data / "h100-placements"


def _row(rows, kernel_start: str, nth: int = 0):
    return [r for r in rows if r.kernel.startswith(kernel_start)][nth]


def test_the_files_are_as_ncu_writes_them(h100):
    # the premise of the other tests: ncu's own lines precede the CSV, units are ncu's
    for name in FILES:
        head = (h100 / name).read_text().splitlines()[:5]
        assert head[0].startswith("==WARNING==") and head[1].startswith("==PROF== Connected")
        assert any(ln.startswith("==PROF== Disconnected") for ln in head)


def test_eight_launches_values_by_hand(h100):
    rows = read_ncu(h100 / "ncu-raw-8-launches.csv")
    assert len(rows) == 8 and all(not r.missing for r in rows)
    r = rows[0]  # vecadd, (4096, 1, 1) blocks of (256, 1, 1)
    assert r.kernel == "vecadd" and r.block == (256, 1, 1)
    assert r.measured_s == 6.048e-6  # gpu__time_duration.sum "6,048" in "ns"
    assert r.spec["ncu_device"] == "NVIDIA H100 80GB HBM3" and r.spec["cc"] == "9.0"
    k = r.params
    assert k.blocks == 4096 and k.threads_per_block == 256 and k.total_warps == 32768
    assert k.regs_per_thread == 16  # "16" register/thread
    assert k.smem_per_block == 0  # static and dynamic "0" byte/block
    # 65,536 load and 32,768 store requests over 32,768 warps, 4 sectors each (262,144 and 131,072)
    assert k.mem_insts == 3 and k.store_insts == 1 and k.uncoal_per_mw == 4
    assert k.data_bytes == 8_391_424 + 512  # dram__bytes_read.sum + _write.sum, "byte"
    assert k.comp_insts == 655_360 / 32_768 - 3  # smsp__inst_executed.sum "655,360"
    assert k.fp_insts == 1_048_576 / 32 / 32_768  # FADD thread instructions
    assert r.raw["texture_source"] == "none" and r.raw["atomics_source"] == "none"
    assert rows[4].kernel == "matmul_tiled_16" and rows[4].measured_s == 13.12e-6


def test_dynamic_shared_memory_in_bytes_per_block(h100):
    rows = read_ncu(h100 / "ncu-raw-variants.csv")
    k = _row(rows, "void matvec_k<4>").params
    assert k.smem_per_block == 16_384  # launch__shared_mem_per_block_dynamic "16,384" byte/block
    assert _row(rows, "void matvec_k<4>").measured_s == 549.28e-6


def test_device_name_resolves_through_the_catalog():
    from placement import catalog
    from placement.gpu import get_gpu

    assert catalog.find("NVIDIA H100 80GB HBM3").name == "h100"
    assert get_gpu("NVIDIA H100 80GB HBM3").name == "h100"


def test_textured_vecadd_reads_as_the_global_one(h100):
    rows = read_ncu(h100 / "ncu-raw-variants.csv")
    g, t = _row(rows, "void vecadd_k<0, 0>"), _row(rows, "void vecadd_k<2, 2>")
    # tex1Dfetch: no LSU load; the L2's 4,194,304 read sectors from L1TEX are the TEX pipe's
    # misses, and with an L1TEX hit rate of 0 its sectors; 4 a request: 1,048,576 requests
    assert t.raw["texture_source"] == "derived" and g.raw["texture_source"] == "none"
    assert t.raw["gld_request"] == 1_048_576 and t.raw["gld_sectors"] == 4_194_304
    assert t.raw["l2_read_sectors"] == 4_194_304
    kg, kt = g.params, t.params
    for f in ("coal_mem_insts", "uncoal_mem_insts", "uncoal_per_mw", "store_insts", "l1_hit_ratio", "l2_transactions",
              "comp_insts"):  # fmt: skip
        assert getattr(kt, f) == pytest.approx(getattr(kg, f), abs=1e-3), f


def test_texture_sectors_derived_by_hand(h100):
    r = _row(read_ncu(h100 / "ncu-raw-variants.csv"), "void conv1d_k<2, 0>")
    # L2 reads from L1TEX 540,683; LSU ld sectors 917,504 at a 99.99 % hit rate, st 524,288;
    # L1TEX hit rate over all sectors 87.10 %
    missed = 540_683 - 917_504 * (1 - 0.9999)
    sectors = (0.8710 * (917_504 + 524_288) - 0.9999 * 917_504 + missed) / (1 - 0.8710)
    assert r.raw["texture_source"] == "derived"
    assert r.raw["gld_sectors"] == pytest.approx(917_504 + sectors)
    assert r.raw["gld_request"] == pytest.approx(917_504 + sectors / 4)
    assert r.raw["l2_read_sectors"] == pytest.approx(917_504 * (1 - 0.9999) + missed)
    hits = 0.9999 * 917_504 + sectors - missed
    assert r.raw["l1_hit_rate"] == pytest.approx(100 * hits / (917_504 + sectors))


def test_global_atomics_derived_by_hand(h100):
    rows = read_ncu(h100 / "ncu-raw-variants.csv")
    r = _row(rows, "hist_g")
    # L2: 85.06 % of all sectors hit, 0.05 % of the 2,097,152 read sectors; no stores
    a = (0.8506 * 2_097_152 - 0.0005 * 2_097_152) / (1 - 0.8506)
    assert r.raw["atomics_source"] == "derived"
    assert r.raw["gst_sectors"] == pytest.approx(a) and r.raw["gst_request"] == pytest.approx(a / 4)
    assert r.params.store_insts == pytest.approx(a / 4 / 524_288)
    assert _row(rows, "hist_s").raw["atomics_source"] == "derived"


def test_noise_is_not_read_as_texture_or_atomics(h100):
    # LSU-only kernels: the derived texture misses are rounding (conv1d's 90 of 540,710), the
    # derived atomics other L2 traffic (the 256-block matmuls' up to 27 % of their sectors)
    for name in FILES:
        for r in read_ncu(h100 / name):
            if not r.kernel.startswith(("hist_", "void vecadd_k<2", "void conv1d_k<2")):
                assert r.raw["texture_source"] == r.raw["atomics_source"] == "none", r.kernel


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("model", ["mwp-cwp", "gpuperf"])
def test_every_launch_predicts(run_cli, h100, name, model):
    code, out, err = run_cli("model", model, "--counters", h100 / name, "--json")
    assert code == 0, err
    doc = json.loads(out)
    n = 8 if "8-launches" in name else 36
    assert doc["predicted_rows"] == n and doc["skipped_rows"] == 0 and len(doc["rows"]) == n
    for r in doc["rows"]:
        assert r["machine"] == "h100"
        assert math.isfinite(r["predicted_s"]) and r["predicted_s"] > 0
        assert r["measured_s"] > 0 and math.isfinite(r["error_pct"])
        assert r["texture"] in ("none", "derived") and r["atomics"] in ("none", "derived")
    assert math.isfinite(doc["mape"])


def test_text_output(run_cli, h100):
    code, out, err = run_cli("model", "gpuperf", "--counters", h100 / "ncu-raw-8-launches.csv")
    assert code == 0, err
    assert "matmul_tiled_16" in out and out.rstrip().splitlines()[-1].startswith("MAPE ")


# --- units and counted texture / atomic metrics on hand-made exports --------------------


@pytest.mark.parametrize(
    "unit, scale",
    [("", 1), ("byte", 1), ("Kbyte", 1e3), ("Mbyte", 1e6), ("Gbyte", 1e9), ("ns", 1e-9), ("nsecond", 1e-9),
     ("us", 1e-6), ("usecond", 1e-6), ("ms", 1e-3), ("msecond", 1e-3), ("s", 1), ("second", 1),
     ("byte/block", 1), ("Kbyte/block", 1e3), ("register/thread", 1), ("Gbyte/second", 1e9), ("%", 1),
     ("inst", 1), ("Minst", 1e6), ("sector", 1), ("warp", 1), ("SM", 1), ("hz", 1), ("MHz", 1e6)],
)  # fmt: skip
def test_unit_scales(unit, scale):
    assert unit_scale(unit) == pytest.approx(scale, rel=1e-12)


@pytest.mark.parametrize("unit", ["fortnight", "Kns", "byte/", "/block", "msec", "nbyte"])
def test_unknown_units(unit):
    assert unit_scale(unit) is None


RAW_HEAD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
            '"Device","CC",')  # fmt: skip
BASE = [("gpu__time_duration.sum", "ns", "10,000"), ("smsp__inst_executed.sum", "inst", "40,960"),
        ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "", "0"),
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector", "0"),
        ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "", "4,096"),
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "sector", "16,384"),
        ("lts__t_sector_op_read_hit_rate.pct", "%", "10"), ("launch__shared_mem_per_block_static", "byte/block", "2")]  # fmt: skip


def _raw_page(tmp_path, metrics, after: str = "") -> str:
    names = ",".join(f'"{m}"' for m, _, _ in metrics)
    units = ",".join(f'"{u}"' for _, u, _ in metrics)
    vals = ",".join(f'"{v}"' for _, _, v in metrics)
    lines = ["==PROF== Connected to process 7 (./k)", "program output", RAW_HEAD + names,
             '"","","","","","","","","","",""' + "," + units,
             '"0","7","k","h","k(float*)","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0",' + vals]  # fmt: skip
    if after:
        lines.append(after)
    p = tmp_path / "raw.csv"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def test_profiler_lines_after_the_csv_are_skipped(tmp_path):
    (r,) = read_ncu(_raw_page(tmp_path, BASE, after="==PROF== Disconnected from process 7"))
    assert r.measured_s == 1e-5 and r.params.smem_per_block == 2


def test_counted_texture_and_atomics(tmp_path):
    metrics = BASE + [("l1tex__t_requests_pipe_tex_mem_texture.sum", "", "8,192"),
                      ("l1tex__t_sectors_pipe_tex_mem_texture.sum", "sector", "32,768"),
                      ("l1tex__t_sector_pipe_tex_mem_texture_op_tex_hit_rate.pct", "%", "25"),
                      ("l1tex__t_requests_pipe_lsu_mem_global_op_red.sum", "", "4,096"),
                      ("l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum", "sector", "40,960"),
                      ("l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum", "", "1,024"),
                      ("l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum", "sector", "2,048")]  # fmt: skip
    (r,) = read_ncu(_raw_page(tmp_path, metrics))
    assert r.raw["texture_source"] == r.raw["atomics_source"] == "counted"
    assert r.raw["gld_request"] == 8_192 + 1_024 and r.raw["gst_request"] == 4_096 + 4_096
    assert r.raw["gld_sectors"] == 32_768 + 2_048 and r.raw["gst_sectors"] == 16_384 + 40_960
    # a quarter of the texture sectors hit in L1; the ATOMs' sectors go to the L2 and hit there
    assert r.raw["l1_hit_rate"] == pytest.approx(100 * 8_192 / (32_768 + 2_048))
    assert r.raw["l2_read_sectors"] == 24_576 + 2_048
    assert r.raw["l2_hit_rate"] == pytest.approx(100 * (0.1 * 24_576 + 2_048) / (24_576 + 2_048))
    k = r.params  # 4,096 warps: 2.25 loads and 2 stores (1 RED) a warp
    assert k.mem_insts == pytest.approx(4.25) and k.store_insts == 2


def test_without_texture_or_atomic_metrics_nothing_changes(tmp_path):
    (r,) = read_ncu(_raw_page(tmp_path, BASE))
    assert r.raw["texture_source"] == r.raw["atomics_source"] == "none"
    assert r.raw["gld_request"] == 0 and r.raw["gst_sectors"] == 16_384


@settings(max_examples=60, deadline=None)
@given(unit=st.text(alphabet="abcdeghiKkMmnorstuwy%/ ", max_size=10))
def test_any_unit_reads_or_is_one_input_error(tmp_path_factory, unit):
    tmp = tmp_path_factory.mktemp("u")
    metrics = [(m, unit if m == "gpu__time_duration.sum" else u, v) for m, u, v in BASE]
    p = _raw_page(tmp, metrics)
    try:
        (r,) = read_ncu(p)
    except InputError as exc:
        msg = str(exc)
        assert "\n" not in msg and "raw.csv line 5: gpu__time_duration.sum: unit" in msg
    else:
        assert r.measured_s == pytest.approx(10_000 * unit_scale(unit))


def test_traffic_without_counters_is_none():
    t = ncu_traffic.traffic({})
    assert t.texture == t.atomics == "none" and ncu_traffic.merged({}, t) == {}
