"""The GPU catalog (configs/catalog.csv) and the architecture defaults (configs/architectures.toml).

Spot checks pin datasheet values written here; the properties hold for every row:
each builds a valid Gpu whose L2 and L1 strings hold the catalog's capacities, each
row cites sources the file defines, and every number of the architecture file
carries its source. `placement rank` and `placement evaluate` run on one GPU of each
architecture through the bundled vecadd trace.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from placement import catalog
from placement.gpu import ARCHES, get_gpu, gpu_from_entry
from placement.hms import departure_delays, dram_bandwidth_gbs
from placement.models.params import sustained_fraction_of
from traces.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
VECADD = ROOT / "configs" / "examples" / "vecadd.parquet"
_CACHE = re.compile(r"^([NS]):(\d+):(\d+):(\d+),")

# One catalog GPU of every architecture (none has a bundled TOML).
ONE_PER_ARCH = {
    "kepler": "k20",
    "maxwell": "gtx980",
    "pascal": "gtx1080",
    "volta": "titanv",
    "turing": "rtx2080ti",
    "ampere": "rtx3080",
    "ada": "rtx4090",
    "hopper": "h100-pcie",
    "blackwell": "rtx5090",
}


def cache_bytes(spec: str) -> int:
    m = _CACHE.match(spec)
    assert m, spec
    return int(m[2]) * int(m[3]) * int(m[4])


def test_every_row_builds_a_valid_gpu_with_the_catalogs_capacities():
    rows = catalog.entries()
    assert len(rows) >= 100
    for e in rows:
        g = gpu_from_entry(e)
        assert g.name == e.name and g.arch == e.arch and g.compute_capability == e.cc
        assert g.compute.sms == e.sms and g.compute.clock_mhz == e.boost_mhz
        assert cache_bytes(g.caches.l2) * g.caches.l2_slices == e.l2_kb * 1024, e.name
        assert int(g.caches.l2.split(":")[1]) & (int(g.caches.l2.split(":")[1]) - 1) == 0  # power-of-two sets
        if g.caches.l1:
            assert cache_bytes(g.caches.l1) == e.l1_kb * 1024, e.name
        assert g.memory.smem_per_sm == e.smem_per_sm_kb * 1024
        assert g.compute.issue_cycles == 32 / g.compute.cores_per_sm


def test_every_architecture_has_gpus():
    archs = {e.arch for e in catalog.entries()}
    assert archs == set(ONE_PER_ARCH) and archs <= set(ARCHES)
    counts = {a: sum(e.arch == a for e in catalog.entries()) for a in archs}
    assert min(counts.values()) >= 4


@pytest.mark.parametrize(
    ("name", "sms", "gbs", "l2_mib", "cc", "cores"),
    [
        ("rtx3080", 68, 760.3, 5, (8, 6), 8704),  # GA102 whitepaper: 8704 CUDA cores, 5 MB L2
        ("rtx4090", 128, 1008.0, 72, (8, 9), 16384),  # Ada whitepaper: 16384 cores, 72 MB L2
        ("gtx980", 16, 224.3, 2, (5, 2), 2048),  # GTX 980 whitepaper: 2048 cores, 2 MB L2
        ("h100-pcie", 114, 2039.0, 50, (9, 0), 14592),  # H100 whitepaper: 14592 FP32 cores (PCIe)
        ("a100-80gb", 108, 2039.0, 40, (8, 0), 6912),  # A100 whitepaper: 6912 FP32 cores
        ("gtx1080", 20, 320.0, 2, (6, 1), 2560),  # GTX 1080 whitepaper: 2560 cores
        ("rtx5090", 170, 1792.0, 96, (12, 0), 21760),  # RTX Blackwell whitepaper: 21760 cores
    ],
)
def test_datasheet_values(name, sms, gbs, l2_mib, cc, cores):
    g = get_gpu(name)
    assert g.compute.sms == sms and g.memory.bandwidth_gbs == gbs and g.compute_capability == cc
    assert g.compute.sms * g.compute.cores_per_sm == cores
    assert cache_bytes(g.caches.l2) * g.caches.l2_slices == l2_mib * 1024 * 1024


@pytest.mark.parametrize(
    "spelling", ["rtx3080", "GeForce RTX 3080", "RTX-3080", "nvidia geforce rtx 3080", " Rtx 3080 "]
)
def test_names_are_matched_forgivingly(spelling):
    assert get_gpu(spelling).name == "rtx3080"


@pytest.mark.parametrize(
    "device, name",
    [
        ("Tesla V100-PCIE-16GB", "v100"),  # nvidia-smi / cudaGetDeviceProperties names, as the driver spells them
        ("Tesla V100-SXM2-32GB", "v100-sxm2"),
        ("NVIDIA A100-PCIE-40GB", "a100"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("Tesla P100-PCIE-16GB", "p100-pcie"),
        ("Tesla T4", "t4"),
    ],
)
def test_device_names_as_the_driver_gives_them(device, name):
    """The name a profiler export or `placement calibrate` reads from the driver finds its catalog row: "Tesla"
    is noise as "NVIDIA" and "GeForce" are, and the A100 PCIe 80GB's driver name has its words in another order."""
    assert get_gpu(device).name == name


def test_a_miss_says_did_you_mean():
    with pytest.raises(InputError, match=r"did you mean .*rtx4090"):
        get_gpu("rtx 4909")


def test_a_bundled_toml_wins():
    for spelling in ("k40", "Tesla K40", "k40m"):
        assert get_gpu(spelling).path.endswith("k40.toml")
    assert get_gpu("GeForce GTX 680").path.endswith("gtx680.toml")
    assert get_gpu("rtx3080").path.endswith("catalog.csv:rtx3080")


def test_which_loads_each_cache_serves_per_architecture():
    """The issue's table: global loads in L1 on Volta and later; __ldg through the texture
    cache on GK110 / Maxwell / Pascal, none on GK104, the L1 from Volta on."""
    g = {a: get_gpu(n) for a, n in ONE_PER_ARCH.items()}
    assert [a for a in g if g[a].caches.global_in_l1] == ["volta", "turing", "ampere", "ada", "hopper", "blackwell"]
    assert g["kepler"].caches.readonly_cache == "tex" and not g["kepler"].caches.l1_tex_unified
    assert get_gpu("gtx770").caches.readonly_cache == "none"  # GK104, cc 3.0
    assert get_gpu("gtx770").caches.tex.startswith("N:4:128:24")  # 12 KB texture working set
    for a in ("maxwell", "pascal"):
        assert g[a].caches.readonly_cache == "tex" and g[a].caches.l1_tex_unified and g[a].caches.tex == ""
    for a in ("volta", "turing", "ampere", "ada", "hopper", "blackwell"):
        assert g[a].caches.readonly_cache == "l1" and g[a].caches.l1_tex_unified


def test_occupancy_limits_per_compute_capability():
    """CUDA C++ Programming Guide, technical specifications per compute capability."""
    expect = {  # (max threads per SM, max blocks per SM, cores per SM)
        "k20": (2048, 16, 192), "gtx980": (2048, 32, 128), "p100": (2048, 32, 64), "gtx1080": (2048, 32, 128),
        "titanv": (2048, 32, 64), "rtx2080ti": (1024, 16, 64), "a100-80gb": (2048, 32, 64), "rtx3080": (1536, 16, 128),
        "rtx4090": (1536, 24, 128), "h100-pcie": (2048, 32, 128), "rtx5090": (1536, 32, 128),
    }  # fmt: skip
    for name, (threads, blocks, cores) in expect.items():
        c = get_gpu(name).compute
        assert (c.max_threads_per_sm, c.max_blocks_per_sm, c.cores_per_sm) == (threads, blocks, cores), name
    assert get_gpu("gtx770").compute.max_regs_per_thread == 63  # cc 3.0


def test_derived_memory_timing_hand_worked():
    g = get_gpu("rtx3080")
    share = 760.3e9 / 68 / 1710e6  # bytes per SM cycle
    assert g.memory.departure_del_coal == pytest.approx(128 / share)
    assert g.memory.departure_del_uncoal == pytest.approx(32 / share)
    assert g.memory.dram_latency == 671.0  # Ampere's: mt4g's A100 p50 in cycles
    assert g.dram.channels == 320 // 16  # GDDR6X channels of 16 bits (Accel-Sim SM86_RTX3070)


def test_hopper_takes_the_h100s_measured_latencies_launch_and_atomics():
    # the catalog's Hopper GPUs (same GH100 die) take microbenchmarks.csv's latencies in cycles, its empty kernel and
    # its atomics, as the bundled h100.toml does (issue 33: mt4g's 222 / 864 / 42 / 17 are not the H100's)
    h100 = get_gpu("h100")
    for name in ("h200", "h100-pcie", "h100-nvl"):
        g = get_gpu(name)
        for f in ("l1_latency", "tex_latency", "const_latency", "l2_latency"):
            assert getattr(g.caches, f) == getattr(h100.caches, f), (name, f)
        assert (g.memory.dram_latency, g.memory.smem_latency) == (696.91, 28.94)
        assert (g.dram.row_hit_ns, g.dram.row_miss_ns, g.dram.row_conflict_ns) == (167.4, 352.9, 479.4)
        assert (g.compute.launch_us, g.compute.launch_per_block_ns) == (3.872, 0.602)
        # 1.4475 cycles an update at the GPU's own clock: h100.toml's 0.733 ns at 1974.7 MHz is 1.4475 cycles
        assert g.memory.l2_atomic_interval_ns == pytest.approx(1.4475e3 / g.compute.clock_mhz, rel=1e-12)
        assert h100.ns_to_cycles(h100.memory.l2_atomic_interval_ns) == pytest.approx(1.4475, abs=1e-4)
        assert (g.memory.l2_atomic_unit_bytes, g.memory.smem_atomic_cycles, g.memory.smem_atomic_lane_cycles) == (
            512, 9.39, 0.986)  # fmt: skip


def test_atomics_are_assumed_from_volta_on_and_absent_before():
    # Volta to Blackwell assume the H100's cycles; Kepler to Pascal have no source, so no bound (0)
    for name, clock in (("v100-sxm2", 1530.0), ("t4", 1590.0), ("rtx3090", 1695.0), ("rtx4090", 2520.0),
                        ("rtx5090", 2407.0)):  # fmt: skip
        m = get_gpu(name).memory
        assert get_gpu(name).compute.clock_mhz == clock
        assert m.l2_atomic_interval_ns == pytest.approx(1447.5 / clock, rel=1e-12)
        assert (m.l2_atomic_unit_bytes, m.smem_atomic_cycles) == (512, 9.39)
    for name in ("gtx1080", "gtx980", "k40"):
        m = get_gpu(name).memory
        assert (m.l2_atomic_interval_ns, m.l2_atomic_unit_bytes, m.smem_atomic_cycles) == (0.0, 0, 0.0)


def test_the_launch_floor_is_assumed_from_volta_on_and_absent_before():
    # Volta to Blackwell (and the bundled V100 and A100) assume the H100's empty kernel between two cudaEvents,
    # 3.872 us, without its per-block dispatch, which no other GPU's count of SMs and clock is known to share;
    # Kepler to Pascal: none (the gpuperfpredict data they are judged on is nvprof's kernel time, launch excluded)
    for name in ("v100", "v100-sxm2", "t4", "a100", "rtx3090", "rtx4090", "rtx5090"):
        c = get_gpu(name).compute
        assert (c.launch_us, c.launch_per_block_ns) == (3.872, 0.0), name
    for name in ("gtx1080", "gtx980", "k40", "k80"):
        c = get_gpu(name).compute
        assert (c.launch_us, c.launch_per_block_ns) == (0.0, 0.0), name


@pytest.mark.parametrize("value", ['"fast"', "-1.0", "true"])
def test_a_bad_atomic_interval_in_the_architecture_file_is_one_line(tmp_path, monkeypatch, value):
    (tmp_path / "gpus").mkdir()
    (tmp_path / "catalog.csv").write_text(catalog.catalog_path().read_text())
    text = catalog.arch_path().read_text()
    bad = text.replace("l2_atomic_cycles = 1.4475            # [AT-H]", f"l2_atomic_cycles = {value}  # [AT-H]", 1)
    assert bad != text
    (tmp_path / "architectures.toml").write_text(bad)
    monkeypatch.setenv("PLACEMENT_CONFIGS", str(tmp_path))
    for f in (catalog._load, catalog._index, catalog._arch_data):
        f.cache_clear()
    try:
        with pytest.raises(InputError, match=r"architectures.toml: \[hopper.memory\] l2_atomic_cycles must be a "
                                             r"number in \[0, 1e6\), got "):  # fmt: skip
            get_gpu("h200")
    finally:
        for f in (catalog._load, catalog._index, catalog._arch_data):
            f.cache_clear()


def test_l2_string_splits_awkward_sizes():
    # H200: 50 MB over 48 HBM3e channels x 2 slices does not split evenly; 80 slices do.
    s, slices = catalog.l2_string(50 * 1024 * 1024, 96, 128, 20, "L:B:m:L:X", "X")
    assert slices == 80 and cache_bytes(s) * slices == 50 * 1024 * 1024
    # IPOLY needs 16-64 sets; a 1.5 MB slice has 768 or 1024 sets: XOR instead.
    s, slices = catalog.l2_string(72 * 1024 * 1024, 48, 128, 16, "L:B:m:L:P", "P")
    assert s == "S:1024:128:12,L:B:m:L:X" and slices == 48


def test_every_row_cites_defined_sources():
    text = catalog.catalog_path().read_text()
    defined = set(re.findall(r"^# \[([A-Z0-9-]+)\]", text, flags=re.M))
    for e in catalog.entries():
        keys = e.source.split(";")
        assert keys and set(keys) <= defined, (e.name, keys)


def test_every_number_in_the_architecture_file_carries_a_source():
    """A numeric key without a comment is allowed only right under a commented line of the
    same table that states where it comes from ("as Hopper", "as fp_latency")."""
    prev_commented = False
    for lineno, line in enumerate(catalog.arch_path().read_text().splitlines(), start=1):
        code = line.split("#", 1)[0]
        numeric = re.match(r"^\s*[a-z_0-9]+\s*=\s*[-\d{]", code) and not code.strip().startswith("schema")
        if numeric:
            assert "#" in line or prev_commented, f"line {lineno} has no source: {line}"
            prev_commented = prev_commented or "#" in line
        else:
            prev_commented = False


def test_catalog_errors_name_the_file_and_row(tmp_path, monkeypatch):
    src = catalog.catalog_path()
    (tmp_path / "gpus").mkdir()
    (tmp_path / "architectures.toml").write_text(catalog.arch_path().read_text())
    lines = src.read_text().splitlines()
    head = [ln for ln in lines if not ln.startswith("#")][0]
    (tmp_path / "catalog.csv").write_text(head + "\nbad,Bad GPU,,kepler,GK104,3.0,eight,1,1,GDDR5,256,1,512,48,16,X\n")
    monkeypatch.setenv("PLACEMENT_CONFIGS", str(tmp_path))
    catalog._load.cache_clear()
    catalog._index.cache_clear()
    try:
        with pytest.raises(
            InputError, match=r"catalog.csv line 2 \(bad\): sms: expected a positive number, got 'eight'"
        ):
            catalog.entries()
    finally:
        catalog._load.cache_clear()
        catalog._index.cache_clear()


def test_device_info_rows_agree(shared_data):
    """The rows citing [DI] match gpuperfpredict's cudaDeviceProp (cores, SMs, bus)."""
    with open(shared_data / "gpuperfpredict" / "deviceInfo.csv", newline="") as fh:
        di = {r["gpu_name"]: r for r in csv.DictReader(fh)}
    pairs = {"GTX-680": "gtx680", "Tesla-K40": "k40", "Tesla-K20": "k20", "Titan": "titan", "Quadro": "k5200",
             "TitanX": "titanx-maxwell", "GTX-970": "gtx970", "GTX-980": "gtx980", "Tesla-P100": "p100-pcie-12gb"}  # fmt: skip
    for di_name, name in pairs.items():
        e = catalog.find(name)
        r = di[di_name]
        assert e.sms == int(r["num_sm"]), name
        cores = catalog.arch_table(e.arch, e.cc)["compute"]["cores_per_sm"]
        assert e.sms * cores == int(r["num_of_cores"]), name
        assert f"{e.cc[0]}.{e.cc[1]}" == r["compute_version"], name


@pytest.mark.parametrize("arch", list(ONE_PER_ARCH))
def test_rank_and_evaluate_on_one_gpu_per_architecture(run_cli, arch):
    name = ONE_PER_ARCH[arch]
    code, out, err = run_cli("rank", VECADD, "--gpu", name, "--top", "2", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["gpu"] == name and len(doc["ranking"]) >= 1
    code, out, err = run_cli("evaluate", VECADD, "--gpu", name, "--place", "a=T", "--json")
    assert code == 0, err
    ev = json.loads(out)
    assert ev["gpu"] == name and ev["time_ns"] > 0 and ev["t_comp"] > 0


def test_gpus_command_shows_a_catalog_gpu_in_full(run_cli):
    code, out, err = run_cli("gpus", "RTX-3080", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["name"] == "rtx3080" and d["compute"]["sms"] == 68 and d["caches"]["global_in_l1"] is True
    # the architecture's rates as the model takes them: GA10x's load/store pipe issues half an instruction a cycle
    assert d["model"]["lsu_instructions_per_cycle"] == 0.5 and d["model"]["texels_per_cycle"] == 4.0
    assert d["model"]["readonly_instructions_per_cycle"] == 0.5  # the pipe's, where nothing was measured
    assert d["model"]["readonly_split_instructions_per_cycle"] == 0.5  # the one-line rate, where none was measured
    assert d["model"]["global_split_instructions_per_cycle"] == 0.5  # the pipe's, where none was measured
    code, out, _ = run_cli("gpus", "GeForce RTX 3080")
    assert code == 0 and "catalog.csv:rtx3080" in out and "[caches]" in out
    assert "[model]" in out and "  lsu_instructions_per_cycle = 0.5" in out
    code, out, _ = run_cli("gpus", "h100", "--json")
    assert code == 0 and json.loads(out)["model"]["lsu_instructions_per_cycle"] == 1.0
    code, out, _ = run_cli("gpus")
    assert code == 0 and "rtx5090" in out and "blackwell" in out


def _catalog_with(tmp_path, monkeypatch, text: str):
    (tmp_path / "gpus").mkdir(exist_ok=True)
    (tmp_path / "architectures.toml").write_text(catalog.arch_path().read_text())
    (tmp_path / "catalog.csv").write_text(text)
    monkeypatch.setenv("PLACEMENT_CONFIGS", str(tmp_path))
    for f in (catalog._load, catalog._index, catalog._arch_data):
        f.cache_clear()


def test_a_boards_measured_dram_share_is_its_sustained_bandwidth():
    # the H200's own, the median copy kernel of three calibrate runs (3,584, 3,667, 3,746 GB/s): 3,667 / 4,800;
    # the H100 NVL's and T1000's from mt4g (below, from its files); a row without one takes its architecture's
    h200, nvl, t1000, a100 = (get_gpu(n) for n in ("h200", "h100-nvl", "t1000", "a100"))
    assert catalog.find("h200").dram_share == 0.764 and h200.memory.dram_sustained_fraction == 0.764
    assert dram_bandwidth_gbs(h200) == pytest.approx(4800 * 0.764)  # 3,667.2 GB/s
    assert departure_delays(h200)[0] == pytest.approx(h200.memory.departure_del_coal / 0.764)
    assert sustained_fraction_of(nvl) == 0.8435 and sustained_fraction_of(t1000) == 0.9227
    assert catalog.find("a100").dram_share == 0.0 and a100.memory.dram_sustained_fraction == 0.0
    assert sustained_fraction_of(a100) == 0.781  # Ampere's, mt4g's A100 PCIe 40GB: this very board
    assert sustained_fraction_of(get_gpu("h100-pcie")) == 0.86


@pytest.mark.parametrize("board,name", [("h100-nvl", "NVIDIA H100 NVL"), ("t1000", "NVIDIA T1000")])
def test_the_mt4g_dram_shares_are_its_read_and_write_streams(shared_data, board, name):
    # the rule of the architectures' shares: the mean of mt4g's main-memory read and write bandwidth (GiB/s) over
    # the datasheet's GB/s, to 4 places
    mem = json.loads((shared_data / "mt4g" / f"{name}.json").read_text())["memory"]["main"]
    gbs = [mem[k]["value"] * 2**30 / 1e9 for k in ("readBandwidth", "writeBandwidth")]
    e = catalog.find(board)
    assert "MT4G" in e.source.split(";")
    assert e.dram_share == pytest.approx(sum(gbs) / 2 / e.bandwidth_gbs, abs=5e-5)


@pytest.mark.parametrize("value", ["0", "1.2", "-0.5", "most", "nan"])
def test_a_bad_dram_share_in_the_catalog_is_one_line(tmp_path, monkeypatch, value):
    head = "name,full_name,aliases,arch,chip,cc,sms,base_mhz,boost_mhz,memory,bus_bits,bandwidth_gbs,l2_kb,"
    head += "smem_per_sm_kb,l1_kb,source,dram_share"
    _catalog_with(tmp_path, monkeypatch, head + f"\nx,X,,kepler,GK104,3.0,8,1,1,GDDR5,256,1,512,48,16,X,{value}\n")
    try:
        with pytest.raises(InputError, match=r"catalog.csv line 2 \(x\): dram_share: expected the sustained share "
                                             r"of bandwidth_gbs in \(0, 1\], or empty for the architecture's, got "):  # fmt: skip
            catalog.entries()
    finally:
        for f in (catalog._load, catalog._index, catalog._arch_data):
            f.cache_clear()


def test_a_catalog_without_the_dram_share_column_still_reads(tmp_path, monkeypatch):
    # an older catalog (no dram_share column): every board takes its architecture's share
    lines = [ln for ln in catalog.catalog_path().read_text().splitlines() if ln and not ln.startswith("#")]
    old = "\n".join(ln.rsplit(",", 1)[0] for ln in lines) + "\n"
    assert lines[0].endswith(",dram_share") and "dram_share" not in old
    _catalog_with(tmp_path, monkeypatch, old)
    try:
        assert len(catalog.entries()) == len(lines) - 1
        assert all(e.dram_share == 0.0 for e in catalog.entries())
        assert sustained_fraction_of(get_gpu("h200")) == 0.86
    finally:
        for f in (catalog._load, catalog._index, catalog._arch_data):
            f.cache_clear()
