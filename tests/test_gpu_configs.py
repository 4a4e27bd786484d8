"""The bundled GPU configurations (configs/gpus/*.toml) against their sources.

Each file cites its sources in comments; these tests pin the numbers that come from a
source we hold: the papers in ../shared/papers and the measurements in ../shared/data.
Spot checks with the expected value written here run everywhere; the checks that read
the source files themselves skip when ../shared is absent (a fresh clone).
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pytest

from placement.gpu import ConfigError, get_gpu, gpu_dir, gpu_names, load_gpu

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / ".." / "shared"
SHARED_DATA = SHARED / "data"
SHARED_PAPERS = SHARED / "papers"

BUNDLED = ["a100", "c2050", "fx5600", "gtx280", "gtx680", "h100", "k40", "k80", "v100"]
KiB, MiB = 1024, 1024 * 1024

# L2 capacity each GPU's sources state (None: no L2 for global memory, compute capability 1.x).
L2_BYTES = {
    "fx5600": None,
    "gtx280": None,
    "c2050": 768 * KiB,  # Sim et al. Table 3
    "gtx680": MiB // 2,  # deviceInfo.csv L2 0.5 (MB)
    "k40": 3 * MiB // 2,  # deviceInfo.csv L2 1.5
    "k80": 3 * MiB // 2,  # K80 datasheet: 1.5 MB per GK210
    "v100": 6 * MiB,  # mt4g memory.l2.size
    "a100": 40 * MiB,  # mt4g memory.l2.size
    "h100": 50 * MiB,  # mt4g memory.l2.size
}
MT4G_FILES = {
    "v100": "Tesla V100-PCIE-16GB.json",
    "a100": "NVIDIA A100-PCIE-40GB.json",
    "h100": "NVIDIA H100 80GB HBM3.json",
}
DEVICE_INFO_ROWS = {"gtx680": "GTX-680", "k40": "Tesla-K40"}
HL_HIT, HL_MISS, HL_CONFLICT = 352.0, 742.0, 1008.0  # Huang & Li Sec. III-C2, K80 (ns)

_CACHE = re.compile(r"^([NS]):(\d+):(\d+):(\d+),")


def cache_bytes(spec: str) -> int:
    """nsets * line * assoc of a GPGPU-Sim cache string, parsed here on purpose (not with cachesim)."""
    m = _CACHE.match(spec)
    assert m, f"not a GPGPU-Sim cache string: {spec!r}"
    return int(m[2]) * int(m[3]) * int(m[4])


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent (a fresh clone has no ../shared)")
    return path


def mt4g(name: str) -> dict:
    return json.loads(_need(SHARED_DATA / "mt4g" / MT4G_FILES[name]).read_text())


def device_info(name: str) -> dict:
    with open(_need(SHARED_DATA / "gpuperfpredict" / "deviceInfo.csv"), newline="") as fh:
        rows = {r["gpu_name"]: r for r in csv.DictReader(fh)}
    return rows[DEVICE_INFO_ROWS[name]]


def paper(name: str) -> str:
    return _need(SHARED_PAPERS / name).read_text()


# --- every bundled configuration ------------------------------------------------------


def test_the_bundled_set():
    assert gpu_names() == BUNDLED


@pytest.mark.parametrize("name", BUNDLED)
def test_loads_and_is_consistent(name):
    g = get_gpu(name)
    assert g.name == name and Path(g.path).stem == name
    assert g.compute.max_threads_per_sm % g.compute.warp_size == 0
    # the kind of cache string says whether lines are sectored; all are 32-byte sectors
    for spec in (g.caches.l1, g.caches.tex, g.caches.const, g.caches.l2):
        if spec:
            cache_bytes(spec)
    if g.caches.l1.startswith("S") or g.caches.l2.startswith("S"):
        assert g.memory.sector_bytes == 32 and g.memory.line_bytes == 128


@pytest.mark.parametrize("name", BUNDLED)
def test_cache_strings_parse_in_cachesim(name):
    from cachesim.spec import parse_spec

    g = get_gpu(name)
    for spec in (g.caches.l1, g.caches.tex, g.caches.const, g.caches.l2):
        if spec:
            assert parse_spec(spec).size == cache_bytes(spec)


@pytest.mark.parametrize("name", BUNDLED)
def test_l2_slices_add_up_to_the_stated_l2(name):
    g = get_gpu(name)
    stated = L2_BYTES[name]
    if stated is None:
        assert g.caches.l2 == "" and g.caches.l1 == ""
        return
    assert cache_bytes(g.caches.l2) * g.caches.l2_slices == stated


@pytest.mark.parametrize("name", ["fx5600", "gtx280", "c2050", "v100", "a100", "h100"])
def test_derived_row_buffer_timings(name):
    """No published row timings: row miss = DRAM latency in ns, hit and conflict at Huang & Li's K80 ratios."""
    g = get_gpu(name)
    d, miss = g.dram, g.cycles_to_ns(g.memory.dram_latency)  # the files round to 0.1 ns
    assert d.row_miss_ns == pytest.approx(miss, abs=0.051)
    assert d.row_hit_ns == pytest.approx(miss * HL_HIT / HL_MISS, abs=0.051)
    assert d.row_conflict_ns == pytest.approx(miss * HL_CONFLICT / HL_MISS, abs=0.051)


@pytest.mark.parametrize("name", ["gtx680", "k40"])
def test_kepler_row_buffer_timings_are_huang_li(name):
    g, k80 = get_gpu(name), get_gpu("k80")
    assert (g.dram.row_hit_ns, g.dram.row_miss_ns, g.dram.row_conflict_ns) == (HL_HIT, HL_MISS, HL_CONFLICT)
    assert (g.dram.row_bits, g.dram.column_bits, g.dram.byte_bits) == (
        k80.dram.row_bits, k80.dram.column_bits, k80.dram.byte_bits,
    )  # fmt: skip
    # HL's row miss in cycles at the K40's 745 MHz: a Kepler load's latency is a number of core
    # cycles (configs/architectures.toml), not of ns, on every Kepler part but the K80 it was measured on
    expect = g.ns_to_cycles(HL_MISS) if name in ("k80", "k40") else 742.0 * 0.745
    assert g.memory.dram_latency == pytest.approx(expect, abs=0.06)


# --- spot checks, values written here ---------------------------------------------------


def test_hong_kim_gpus():
    fx, gt = get_gpu("fx5600"), get_gpu("gtx280")
    assert (fx.compute.sms, fx.compute.cores_per_sm, fx.compute.clock_mhz) == (16, 8, 1350.0)
    assert (gt.compute.sms, gt.compute.cores_per_sm, gt.compute.clock_mhz) == (30, 8, 1300.0)
    assert (fx.memory.dram_latency, fx.memory.departure_del_uncoal, fx.memory.departure_del_coal) == (420, 10, 4)
    assert (gt.memory.dram_latency, gt.memory.departure_del_uncoal, gt.memory.departure_del_coal) == (450, 40, 4)
    assert fx.memory.bandwidth_gbs == 76.8 and gt.memory.bandwidth_gbs == 141.7
    assert fx.compute.issue_cycles == gt.compute.issue_cycles == 4
    assert (fx.compute.regs_per_sm, fx.compute.max_threads_per_sm, fx.compute.reg_alloc_unit) == (8192, 768, 256)
    assert (gt.compute.regs_per_sm, gt.compute.max_threads_per_sm, gt.compute.reg_alloc_unit) == (16384, 1024, 512)
    for g in (fx, gt):
        assert g.compute.reg_alloc_granularity == "block" and g.compute.warp_alloc_granularity == 2
        assert (g.memory.smem_per_sm, g.memory.smem_banks, g.memory.smem_bank_bytes) == (16384, 16, 4)
        assert g.memory.smem_alloc_unit == 512 and g.compute.max_blocks_per_sm == 8


def test_c2050():
    g = get_gpu("c2050")
    assert (g.compute.sms, g.compute.cores_per_sm, g.compute.sfus_per_sm, g.compute.clock_mhz) == (14, 32, 4, 1150.0)
    assert (g.compute.fp_latency, g.memory.dram_latency, g.memory.departure_del_uncoal) == (18, 440, 20)
    assert (g.caches.l1_latency, g.caches.l2_latency) == (18, 130)
    assert cache_bytes(g.caches.l1) == 16 * KiB and g.memory.smem_per_sm == 48 * KiB
    assert g.memory.bandwidth_gbs == 144.0


def test_v100_spot():
    g = get_gpu("v100")
    assert (g.compute.sms, g.compute.clock_mhz, g.memory.dram_latency) == (80, 1380.0, 395.0)
    assert g.memory.tex1d_max_elems == 2**28 and g.memory.bandwidth_gbs == 900.0


# --- against the sources themselves ------------------------------------------------------


def _row(text: str, label: str, n: int, after: str = "") -> list[str]:
    """The n numbers after a table row's label (first line that starts with it, below ``after``)."""
    if after:
        assert after in text, f"no {after!r}"
        text = text[text.index(after) :]
    for line in text.splitlines():
        if line.startswith(label):
            nums = re.findall(r"\d+(?:\.\d+)?", line[len(label) :])
            assert len(nums) >= n, line
            return nums[:n]
    raise AssertionError(f"no row {label!r}")


def test_hong_kim_tables_3_and_6():
    text = paper("hong-kim-2009-mwp-cwp.txt")
    # Table 3 columns: 8800GTX, Quadro FX5600, 8800GT, GTX280; Table 6: FX5600, GTX280
    table3 = "Table 3: The specifications of GPUs used in this study"
    sms = _row(text, "#SM", 4, after=table3)
    cores = _row(text, "(SP) Processor Cores", 4, after=table3)
    clock = _row(text, "Processor Clock", 4, after=table3)
    bw = _row(text, "Memory Bandwidth", 4, after=table3)
    table6 = "Table 6: Results of the Memory Model Parameters"
    mem_ld = _row(text, "Mem_LD ", 2, after=table6)
    uncoal = _row(text, "Departure_del_uncoal ", 2, after=table6)
    coal = _row(text, "Departure_del_coal ", 2, after=table6)
    for name, t3, t6 in (("fx5600", 1, 0), ("gtx280", 3, 1)):
        g = get_gpu(name)
        assert g.compute.sms == int(sms[t3])
        assert g.compute.sms * g.compute.cores_per_sm == int(cores[t3])
        assert g.compute.clock_mhz == float(clock[t3]) * 1000
        assert g.memory.bandwidth_gbs == float(bw[t3])
        assert g.memory.dram_latency == float(mem_ld[t6])
        assert g.memory.departure_del_uncoal == float(uncoal[t6])
        assert g.memory.departure_del_coal == float(coal[t6])


def test_sim_table_3():
    text = paper("sim-2012-gpuperf.txt")
    g = get_gpu("c2050")

    def one(label: str) -> float:
        return float(_row(text, label, 1, after="Model Tesla C2050")[0])

    assert g.compute.clock_mhz == one("Processor clock") * 1000
    assert g.memory.bandwidth_gbs == one("Memory bandwidth")
    assert g.compute.sms == one("The number of SMs")
    assert g.compute.cores_per_sm == one("The number of SPs")
    assert g.compute.sfus_per_sm == one("The number of SFUs")
    assert g.memory.smem_per_sm == one("Shared memory (per SM)") * KiB
    assert cache_bytes(g.caches.l1) == one("L1 cache (per SM)") * KiB
    assert cache_bytes(g.caches.l2) * g.caches.l2_slices == one("L2 cache ") * KiB
    assert g.compute.fp_latency == one("FP latency, FP lat")
    assert g.memory.dram_latency == one("DRAM latency, DRAM lat")
    assert g.memory.departure_del_coal == g.memory.departure_del_uncoal == one("Departure delay")
    assert g.caches.l1_latency == one("L1 cache latency")
    assert g.caches.l2_latency == one("L2 cache latency")


@pytest.mark.parametrize("name", ["gtx680", "k40"])
def test_device_info(name):
    row, g = device_info(name), get_gpu(name)
    assert f"{g.compute_capability[0]}.{g.compute_capability[1]}" == row["compute_version"]
    assert g.compute.sms == int(row["num_sm"])
    assert g.compute.cores_per_sm == int(row["num_cores_sm"])
    assert g.compute.sms * g.compute.cores_per_sm == int(row["num_of_cores"])
    assert g.compute.clock_mhz == float(row["max_clock_rate"])
    assert g.memory.bandwidth_gbs == float(row["bandwith"])
    assert cache_bytes(g.caches.l2) * g.caches.l2_slices == float(row["L2"]) * MiB
    assert g.dram.channels == int(row["bus"]) // 64


@pytest.mark.parametrize("name", ["v100", "a100", "h100"])
def test_mt4g(name):
    d, g = mt4g(name), get_gpu(name)
    comp, mem = d["compute"], d["memory"]
    cc = d["general"]["computeCapability"]
    assert g.compute_capability == (cc["major"], cc["minor"])
    assert g.compute.sms == comp["multiProcessorCount"]
    assert g.compute.cores_per_sm == comp["numberOfCoresPerMultiProcessor"]
    if name != "h100":  # the H100's clock is the measured one (test_h100_microbenchmarks)
        assert g.compute.clock_mhz == d["general"]["clockRate"]["value"] / 1000
    assert g.compute.warp_size == comp["warpSize"]
    assert g.compute.max_threads_per_block == comp["maxThreadsPerBlock"]
    assert g.compute.max_threads_per_sm == comp["maxThreadsPerMultiProcessor"]
    assert g.compute.max_blocks_per_sm == comp["maxBlocksPerMultiProcessor"]
    assert g.compute.regs_per_sm == comp["regsPerMultiProcessor"]
    assert g.compute.max_regs_per_block == comp["regsPerBlock"]
    sh = mem["shared"]
    assert g.memory.smem_per_sm == sh["sharedMemPerMultiProcessor"]["value"]
    assert g.memory.smem_per_block == sh["sharedMemPerBlock"]["value"]
    assert g.memory.smem_reserved_per_block == sh["reservedSharedMemPerBlock"]["value"]
    assert g.memory.const_bank_bytes == mem["constant"]["totalConstMem"]["value"]
    assert g.memory.line_bytes == mem["l1"]["lineSize"]["size"] == mem["l2"]["lineSize"]["size"]
    assert g.memory.sector_bytes == mem["l1"]["fetchGranularity"]["size"] == mem["l2"]["fetchGranularity"]["size"]
    assert cache_bytes(g.caches.l2) * g.caches.l2_slices == mem["l2"]["size"]["value"]
    # unified L1 / texture: one array (l1_tex_unified, tex = ""), 4 sets of 128-byte lines, whole ways, within
    # one way group (512 B) below mt4g's L1 size; mt4g's texture-path size is the same array, measured within 3 %
    assert g.caches.l1_tex_unified and g.caches.tex == "" and g.caches.global_in_l1 and g.caches.readonly_cache == "l1"
    assert g.caches.l1.startswith("S:4:128:")
    assert 0 <= mem["l1"]["size"]["size"] - cache_bytes(g.caches.l1) < 4 * 128
    assert abs(mem["texture"]["size"]["size"] / cache_bytes(g.caches.l1) - 1) < 0.03
    # constant L1: mt4g's 2112 B is 2 KB plus one 64-byte line (the p-chase overshoot)
    assert (
        cache_bytes(g.caches.const) == mem["constant"]["l1"]["size"]["size"] - mem["constant"]["l1"]["lineSize"]["size"]
    )
    if name == "h100":
        return  # its latencies are microbenchmarks.csv's (test_h100_microbenchmarks)
    # latencies are mt4g's p50, with two documented exceptions on the A100
    p50 = lambda *path: _dig(mem, *path)["latency"]["p50"]  # noqa: E731
    assert g.memory.dram_latency == p50("main")
    assert g.caches.tex_latency == p50("texture")
    assert g.caches.const_latency == p50("constant", "l1")
    if name == "a100":
        assert g.caches.l1_latency == p50("readOnly")  # mt4g's l1 entry (68) disagrees with readOnly and gpu-benches
        assert g.caches.l2_latency == round(mem["l2"]["latency"]["mean"])  # bimodal: near and far L2 halves
    else:
        assert g.caches.l1_latency == p50("l1")
        assert g.caches.l2_latency == p50("l2")
    if name == "a100":  # its shared chase carries the l1 chase's overhead over readOnly's (68 - 35 = 33 cycles)
        assert g.memory.smem_latency == p50("shared") - (p50("l1") - p50("readOnly")) == 27.0
    else:
        assert g.memory.smem_latency == p50("shared")


def _dig(d: dict, *path: str) -> dict:
    for p in path:
        d = d[p]
    return d


def h100_microbenchmarks() -> dict[str, dict[str, str]]:
    """../shared/data/h100-placements/microbenchmarks.csv by test name (the names hold unquoted commas:
    the test is every cell between the kind and the last six columns)."""
    rows = {}
    with open(_need(SHARED_DATA / "h100-placements" / "microbenchmarks.csv"), newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        for cells in reader:
            rows[",".join(cells[1:-6])] = dict(zip(header, [cells[0], ",".join(cells[1:-6]), *cells[-6:]]))
    return rows


def test_h100_microbenchmarks():
    """The H100's clock and latencies are its microbenchmarks.csv rows (those `placement calibrate` reads: the
    int-index pointer chases); bandwidth_gbs stays the datasheet peak, above every measured one, and the
    departure delays are derived from it at the measured clock."""
    from placement.catalog import departure_delays

    rows, g = h100_microbenchmarks(), get_gpu("h100")

    def cyc(test: str) -> float:
        return float(rows[test]["cycles_per_hop"])

    assert g.compute.clock_mhz == float(re.search(r"SM clock ([0-9.]+) MHz", rows["spin_all"]["note"])[1]) == 1974.7
    assert g.memory.dram_latency == cyc("DRAM (ld, 1 GiB random)") == 696.91
    assert g.caches.l1_latency == cyc("L1 hit (ld, 16 KiB)") == 39.56
    assert g.caches.l2_latency == cyc("L2 hit (ld, 8 MiB)") == 290.02
    assert g.caches.tex_latency == cyc("L1 hit (tex1Dfetch, 16 KiB)") == 88.0
    assert g.caches.const_latency == cyc("constant cache hit (1 KiB)") == 34.0
    assert g.memory.smem_latency == cyc("shared memory (LDS)") == 28.94
    assert g.dram.row_miss_ns == pytest.approx(float(rows["DRAM (ld, 1 GiB random)"]["ns_per_hop_or_us"]), abs=0.051)
    measured = [float(r["GBps"]) for r in rows.values() if r["kind"] == "bandwidth"]
    assert len(measured) == 5 and max(measured) < g.memory.bandwidth_gbs == 3350.0
    # the launch: variants-extra.csv's empty kernel, 3.872 us at 1 block and 43.312 us at 65,536
    extra = {r["size"]: float(r["med_us"]) for r in csv.DictReader(open(_need(SHARED_DATA / "h100-placements" / "variants-extra.csv")))
             if r["kernel"] == "empty"}  # fmt: skip
    assert g.compute.launch_us == extra["grid=1"] == 3.872
    assert g.compute.launch_per_block_ns == round((extra["grid=65536"] - extra["grid=1"]) * 1e3 / 65535, 3) == 0.602
    coal, uncoal = departure_delays(3350.0, 132, 1974.7, 128, 32)
    assert (
        (g.memory.departure_del_coal, g.memory.departure_del_uncoal)
        == (round(coal, 2), round(uncoal, 2))
        == (9.96, 2.49)
    )


def test_a100_l1_latency_corroborated_by_gpu_benches():
    """The A100 L1 hit latency taken from mt4g's readOnly path matches gpu-benches' pointer chase."""
    path = _need(SHARED_DATA / "gpu-benches-latency" / "a100_40.txt")
    rows = [line.split() for line in path.read_text().splitlines()[1:] if line.strip()]
    small = [float(r[4]) for r in rows if float(r[2]) <= 64]  # footprints of at most 64 kB hit in L1
    assert small and math.isclose(get_gpu("a100").caches.l1_latency, sum(small) / len(small), abs_tol=2)


# --- the loader refuses broken copies, naming the key --------------------------------------


def _copy(tmp_path: Path, name: str, edit) -> Path:
    text = (gpu_dir() / f"{name}.toml").read_text()
    new = edit(text)
    assert new != text
    out = tmp_path / f"{name}-broken.toml"
    out.write_text(new)
    return out


@pytest.mark.parametrize(
    "name, key, qualified",
    [
        ("v100", "sms", "compute.sms"),
        ("gtx280", "dram_latency", "memory.dram_latency"),
        ("c2050", "l2_slices", "caches.l2_slices"),
        ("k80", "l2_slice_bytes", "caches.l2_slice_bytes"),
        ("a100", "row_miss_ns", "dram.row_miss_ns"),
    ],
)
def test_missing_key_is_named(tmp_path, name, key, qualified):
    path = _copy(tmp_path, name, lambda t: re.sub(rf"^{key}\s*=.*\n", "", t, count=1, flags=re.M))
    with pytest.raises(ConfigError) as exc:
        load_gpu(path)
    assert exc.value.key == qualified
    assert qualified in str(exc.value) and "missing key" in str(exc.value)


@pytest.mark.parametrize(
    "name, key, value, qualified, words",
    [
        ("h100", "smem_bank_bytes", "16", "memory.smem_bank_bytes", "must be in [4, 8]"),
        ("fx5600", "warp_size", "16", "compute.warp_size", "must be in [32, 32]"),
        ("k40", "bandwidth_gbs", "-288.384", "memory.bandwidth_gbs", "must be > 0"),
        ("gtx680", "max_regs_per_thread", "256", "compute.max_regs_per_thread", "must be in [1, 255]"),
        ("k80", "l2_slice_bytes", "384", "caches.l2_slice_bytes", "expected a power of two, got 384"),
        ("h100", "l2_slice_bytes", "64", "caches.l2_slice_bytes", "64 is smaller than the L2 line 128 B"),
        ("v100", "l2_slice_bytes", "0", "caches.l2_slice_bytes", "must be > 0"),
        ("h100", "launch_us", "-1", "compute.launch_us", "must be in [0, "),
        ("h100", "launch_per_block_ns", "-0.6", "compute.launch_per_block_ns", "must be in [0, "),
        ("h100", "l2_atomic_interval_ns", "-0.733", "memory.l2_atomic_interval_ns", "must be in [0, "),
        ("h100", "l2_atomic_unit_bytes", "-512", "memory.l2_atomic_unit_bytes", "must be in [0, "),
        ("h100", "l2_atomic_unit_bytes", "48", "memory.l2_atomic_unit_bytes", "a multiple of sector_bytes, got 48"),
        ("h100", "smem_atomic_cycles", "-9.39", "memory.smem_atomic_cycles", "must be in [0, "),
        ("h100", "smem_atomic_lane_cycles", "-1", "memory.smem_atomic_lane_cycles", "must be in [0, "),
    ],
)
def test_out_of_range_value_is_named(tmp_path, name, key, value, qualified, words):
    path = _copy(tmp_path, name, lambda t: re.sub(rf"^{key}\s*=\s*\S+", f"{key} = {value}", t, count=1, flags=re.M))
    with pytest.raises(ConfigError) as exc:
        load_gpu(path)
    assert exc.value.key == qualified
    assert qualified in str(exc.value) and words in str(exc.value)


@pytest.mark.parametrize(
    "key",
    [
        "texels_per_cycle",
        "lsu_instructions_per_cycle",
        "readonly_instructions_per_cycle",
        "readonly_split_instructions_per_cycle",
        "global_split_instructions_per_cycle",
    ],
)
@pytest.mark.parametrize("value", ["-0.5", '"fast"'])
def test_a_bad_measured_rate_is_named(tmp_path, key, value):
    # the rates placement calibrate writes into [compute] (0 or absent: the architecture's)
    path = _copy(tmp_path, "h100", lambda t: t.replace("[compute]\n", f"[compute]\n{key} = {value}\n", 1))
    with pytest.raises(ConfigError) as exc:
        load_gpu(path)
    assert exc.value.key == f"compute.{key}" and f"compute.{key}" in str(exc.value) and "\n" not in str(exc.value)
    ok = _copy(tmp_path, "h100", lambda t: t.replace("[compute]\n", f"[compute]\n{key} = 0.75\n", 1))
    assert getattr(load_gpu(ok).compute, key) == 0.75


def test_the_l2_slice_interleave_reaches_the_simulation(tmp_path):
    """The L2 slice of an address is (address // caches.l2_slice_bytes) mod caches.l2_slices; the
    simulation took 256 B whatever the configuration said (it had no such key)."""
    from placement.memory import hierarchy_config

    assert {get_gpu(n).caches.l2_slice_bytes for n in gpu_names()} == {256}  # GPGPU-Sim's dramid@8, every one
    path = _copy(tmp_path, "k80", lambda t: re.sub(r"^l2_slice_bytes = 256", "l2_slice_bytes = 1024", t, flags=re.M))
    assert hierarchy_config(load_gpu(path)).l2_slice_bytes == 1024
    assert hierarchy_config(get_gpu("k80")).l2_slice_bytes == 256


def test_a_cache_line_beyond_the_maximum_is_named(tmp_path):
    """A 4 GiB L1 line (fuzz input gpu 43052) was accepted, and the first evaluation aborted the process
    under the fuzz workers' 4 GiB address-space limit; lines are 4 B to 4 KiB."""
    from cachesim.spec import MAX_LINE_BYTES, parse_spec

    path = _copy(tmp_path, "c2050", lambda t: t.replace('l1 = "N:32:128:4,', 'l1 = "N:32:4294967296:4,', 1))
    with pytest.raises(ConfigError) as exc:
        load_gpu(path)
    assert exc.value.key == "caches.l1" and "from 4 to 4096 bytes" in str(exc.value)
    assert parse_spec(f"N:32:{MAX_LINE_BYTES}:4,L:L:m:N:L").line == MAX_LINE_BYTES  # the maximum itself is fine
