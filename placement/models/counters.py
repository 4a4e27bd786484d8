"""nvprof counters in the gpuperfpredict format, turned into seed-model inputs.

One CSV row is one run of one kernel (Amaris et al.'s gpuperfpredict data set):
the GPU's specification columns, ``Input.Size``, about 100 nvprof metrics and 115
events, ``Duration`` (seconds) and the launch (``Grid.*``, ``Block.*``,
``Registers.Per.Thread``, ``Static.SMem``, ``Dynamic.SMem``). Events count over
the whole GPU, in warp-level instructions; the ``*.Instructions`` metrics count
thread-level instructions.

Without a ``--gpu`` configuration the machine comes from the row itself
(:func:`gpu_from_spec`): clock, cores, bus and memory clock, compute capability,
with per-architecture defaults (Kepler, Maxwell, Pascal) for everything else.

Every number is checked before the models see it (a bad one is an InputError
naming the row and column): blank, ``NA`` or text counters are missing (the row
is reported, not predicted); a number must be finite and at least 0; counts, sizes
and times at most 1e18; rates in percent in [0, 100], ``Achieved.Occupancy`` in
[0, 1], transactions per request at most 128; grid and block within CUDA's maxima
(``traces.launch``; a blank dimension is 1), registers per thread at most 255 and
shared memory per block below 2^32 bytes. Specification columns: compute
capability in [1, 10), clock 1 to 1e5 MHz, 1 to 2^18 cores, bandwidth 1e-3 to 1e6
GB/s (or a bus of 1 to 8192 bits and a memory clock of 1 to 1e6 MHz).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from pathlib import Path

from traces.errors import InputError, shown
from traces.inputfile import read_bytes
from traces.launch import MAX_REGS_PER_THREAD, MAX_SMEM_PER_BLOCK, launch_problem

from ..gpu import Gpu, get_gpu
from .kernel import KernelParams

log = logging.getLogger(__name__)

# Columns every row must have (the launch and the measurement).
REQUIRED = ("Input.Size", "Duration", "Grid.X", "Grid.Y", "Grid.Z", "Block.X", "Block.Y", "Block.Z")
SPEC = ("compute_version", "gpu_name", "max_clock_rate", "num_of_cores", "L2", "bus", "memory_clock", "bandwith")
# Counters the models read; a row lacking one of these (nvprof sometimes gives up
# on long runs) is reported, not predicted.
COUNTERS = ("warps_launched", "inst_executed", "gld_request", "gst_request",
            "Global.Load.Transactions.Per.Request", "L2.Hit.Rate..L1.Reads.")


@dataclass(frozen=True)
class CounterRow:
    """One run: its kernel parameters (None when counters are missing), spec and measurement."""

    row: int
    """Data row number in the file (1 = first row after the header)."""
    kernel: str
    input_size: float
    block: tuple[int, int, int]
    measured_s: float
    spec: dict
    params: KernelParams | None
    missing: tuple[str, ...]
    raw: dict
    """The counters the models read, by column name, for BSP and reports."""


def _num(v) -> float:
    """A number from a cell; handles '192,256' (decimal comma) and blanks."""
    if v is None:
        return math.nan
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).strip().strip('"')
    if not s or s.upper() in ("NA", "NAN"):
        return math.nan
    try:
        return float(s)
    except ValueError:
        try:
            return float(s.replace(",", "."))
        except ValueError:
            return math.nan


def read_counters(path: str | Path) -> list[CounterRow]:
    """Parse a gpuperfpredict CSV; raises InputError naming the file, row and column."""
    import io

    import pandas as pd

    p = str(path)
    data = read_bytes(p)
    try:
        df = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{p}: not a CSV file ({exc})") from None
    cols = set(df.columns)
    for c in REQUIRED:
        if c not in cols:
            raise InputError(f"{p}: column {c!r} missing; expected the gpuperfpredict format (Input.Size, Duration, Grid.*, Block.*, nvprof events)")
    out = []
    for i, rec in enumerate(df.to_dict("records"), start=1):
        out.append(_row(p, i, rec))
    return out


MAX_VALUE = 1e18
# (lowest, highest) of the columns that are not counts, sizes or times.
_RANGES = {
    "L1.Global.Hit.Rate": (0.0, 100.0), "L2.Hit.Rate..L1.Reads.": (0.0, 100.0), "Achieved.Occupancy": (0.0, 1.0),
    "Global.Load.Transactions.Per.Request": (0.0, 128.0), "Global.Store.Transactions.Per.Request": (0.0, 128.0),
    "Registers.Per.Thread": (0.0, MAX_REGS_PER_THREAD), "Static.SMem": (0.0, MAX_SMEM_PER_BLOCK),
    "Dynamic.SMem": (0.0, MAX_SMEM_PER_BLOCK),
}  # fmt: skip


def _checked(path: str, i: int, rec: dict, c: str, required: bool = False) -> float:
    """Column ``c`` of row ``i``: a number in its range, or NaN when blank or not a number (a missing counter)."""
    raw = rec.get(c)
    v = _num(raw)
    if v != v:
        if required:
            raise InputError(f"{path} row {i}: {c}: expected a number, got {shown(raw)}")
        return v
    lo, hi = _RANGES.get(c, (0.0, MAX_VALUE))
    if not lo <= v <= hi:
        raise InputError(f"{path} row {i}: {c}: expected a number in [{lo:g}, {hi:g}], got {shown(raw)}")
    return v


def _dims(path: str, i: int, rec: dict) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Grid and block of row ``i`` (a blank dimension is 1), within CUDA's maxima."""
    out = []
    for kind in ("Grid", "Block"):
        dims = []
        for a in "XYZ":
            c = f"{kind}.{a}"
            v = _num(rec.get(c))
            if v != v and a != "X" and not str(rec.get(c) or "").strip():
                v = 1.0
            if not (v == v and 1 <= v < 2**31 and v == int(v)):
                raise InputError(f"{path} row {i}: {c}: expected a positive whole number, got {shown(rec.get(c))}")
            dims.append(int(v))
        out.append(tuple(dims))
    grid, block = out
    problem = launch_problem(grid, block)
    if problem:
        raise InputError(f"{path} row {i}: Grid/Block: {problem}")
    return grid, block  # type: ignore[return-value]


def _row(path: str, i: int, rec: dict) -> CounterRow:
    g = lambda c: _checked(path, i, rec, c)  # noqa: E731
    for c in ("Input.Size", "Duration"):
        _checked(path, i, rec, c, required=True)
    grid, block = _dims(path, i, rec)
    tpb = block[0] * block[1] * block[2]
    blocks = grid[0] * grid[1] * grid[2]
    spec = {c: rec.get(c) for c in SPEC if c in rec}
    kernel = str(rec.get("AppName") or rec.get("Kernel") or Path(path).stem)
    names = (
        "warps_launched", "inst_executed", "inst_issued1", "inst_issued2", "gld_request", "gst_request",
        "shared_load", "shared_store", "shared_load_replay", "shared_store_replay",
        "Global.Load.Transactions.Per.Request", "Global.Store.Transactions.Per.Request",
        "L1.Global.Hit.Rate", "L2.Hit.Rate..L1.Reads.", "Device.Memory.Read.Transactions",
        "Device.Memory.Write.Transactions", "FP.Instructions.Single.", "FP.Instructions.Double.",
        "Floating.Point.Operations.Single.Precision.Special.", "Achieved.Occupancy",
        "l1_global_load_hit", "l1_global_load_miss",
        "L2.Read.Transactions..L1.read.requests.", "L2.Write.Transactions..L1.write.requests.",
    )  # fmt: skip
    raw = {n: g(n) for n in names}
    missing = tuple(c for c in COUNTERS if not (raw[c] >= 0))
    params = None
    if not missing:
        params = _params(kernel, tpb, blocks, rec, raw, g)
    return CounterRow(
        row=i,
        kernel=kernel,
        input_size=g("Input.Size"),
        block=block,
        measured_s=g("Duration"),
        spec=spec,
        params=params,
        missing=missing,
        raw=raw,
    )


def _ratio(x: float, default: float) -> float:
    return x if x == x and x >= 0 else default


def _params(kernel: str, tpb: int, blocks: int, rec: dict, raw: dict, g) -> KernelParams:
    # Counts are per warp: a warp count below one (1e-320 is a number, not a count) takes the launch's.
    warps = raw["warps_launched"] if raw["warps_launched"] >= 1 else blocks * -(-tpb // 32)
    per = lambda x: _ratio(x, 0.0) / warps  # noqa: E731
    executed = per(raw["inst_executed"])
    gld, gst = per(raw["gld_request"]), per(raw["gst_request"])
    tl = _ratio(raw["Global.Load.Transactions.Per.Request"], 1.0)
    ts = _ratio(raw["Global.Store.Transactions.Per.Request"], 1.0)
    coal = (gld if tl <= 1.0 else 0.0) + (gst if ts <= 1.0 else 0.0)
    unc_l, unc_s = (gld if tl > 1.0 else 0.0), (gst if ts > 1.0 else 0.0)
    uncoal = unc_l + unc_s
    per_mw = (unc_l * tl + unc_s * ts) / uncoal if uncoal > 0 else 32.0
    sfu = per(raw["Floating.Point.Operations.Single.Precision.Special."]) / 32.0
    fp = (per(raw["FP.Instructions.Single."]) + per(raw["FP.Instructions.Double."])) / 32.0
    shared = per(raw["shared_load"]) + per(raw["shared_store"])
    l1 = _ratio(raw["L1.Global.Hit.Rate"], 0.0) / 100.0
    l2 = _ratio(raw["L2.Hit.Rate..L1.Reads."], 0.0) / 100.0
    dram_bytes = (_ratio(raw["Device.Memory.Read.Transactions"], 0.0) + _ratio(raw["Device.Memory.Write.Transactions"], 0.0)) * 32.0
    # Loads are what the L2 hit rate measures; stores always go to L2 and are
    # written back later, so the hit ratio applies to the load share only.
    load_share = gld / (gld + gst) if gld + gst > 0 else 0.0
    return KernelParams(
        name=kernel,
        threads_per_block=tpb,
        blocks=blocks,
        comp_insts=max(0.0, executed - gld - gst - sfu),
        coal_mem_insts=coal,
        uncoal_mem_insts=uncoal,
        uncoal_per_mw=per_mw,
        sfu_insts=sfu,
        fp_insts=fp,
        shared_insts=shared,
        bank_conflict_insts=per(raw["shared_load_replay"]) + per(raw["shared_store_replay"]),
        regs_per_thread=int(_ratio(g("Registers.Per.Thread"), 0)),
        smem_per_block=int(_ratio(g("Static.SMem"), 0) + _ratio(g("Dynamic.SMem"), 0)),
        l1_hit_ratio=l1 * load_share,
        l2_hit_ratio=l2 * (1.0 - l1) * load_share,
        data_bytes=dram_bytes,
        # nvprof's gld/gst_transactions_per_request count one L2 transaction per
        # 128-byte line a request touches (1-4 sectors): vectorAdd 1 (4 sectors),
        # matrix_sum_normal at block 32 x 32, 32 (one sector each).
        store_insts=gst,
        l2_transactions=gld * tl + gst * ts,
        # and the L2 counts those lines' 32-byte sectors (vectorAdd 4 per request).
        l2_sectors=per(raw["L2.Read.Transactions..L1.read.requests."]) + per(raw["L2.Write.Transactions..L1.write.requests."]),
        input_size=g("Input.Size"),
        measured_s=g("Duration"),
    )


# --- GPUs from specification columns ---------------------------------------------

# Per-architecture defaults for what a spec row lacks. The Kepler values start
# from configs/gpus/k80.toml (Mei & Chu latencies, Hong & Kim departure delays);
# Pascal latencies are mt4g's Quadro P6000 measurements (shared/data/mt4g,
# p50 cycles: L1 90, L2 232, DRAM 413, shared 38); Maxwell has no measurement in
# reach and takes Pascal's (same SM memory pipeline, GM -> GP shrink). FP32
# dependent latencies: Kepler 9 (Lemeire et al. Table II), Maxwell and Pascal 6
# (Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
# Microbenchmarking", 2018). Occupancy limits: CUDA C Programming Guide,
# "Compute Capabilities" table.
ARCH_DEFAULTS: dict[str, dict] = {
    "kepler": {
        "compute": {"cores_per_sm": 192, "sfus_per_sm": 32, "max_blocks_per_sm": 16, "regs_per_sm": 65536,
                    "fp_latency": 9.0, "avg_inst_latency": 9.0},
        "memory": {"smem_per_sm": 49152},
    },
    "maxwell": {
        "compute": {"cores_per_sm": 128, "sfus_per_sm": 32, "max_blocks_per_sm": 32, "regs_per_sm": 65536,
                    "max_regs_per_thread": 255, "fp_latency": 6.0, "avg_inst_latency": 6.0},
        "memory": {"smem_per_sm": 98304, "dram_latency": 413.0, "smem_latency": 38.0, "smem_bank_bytes": 4},
        "caches": {"l1_latency": 90.0, "l2_latency": 232.0},
    },
    "pascal": {
        "compute": {"cores_per_sm": 64, "sfus_per_sm": 16, "max_blocks_per_sm": 32, "regs_per_sm": 65536,
                    "max_regs_per_thread": 255, "fp_latency": 6.0, "avg_inst_latency": 6.0},
        "memory": {"smem_per_sm": 65536, "dram_latency": 413.0, "smem_latency": 38.0, "smem_bank_bytes": 4},
        "caches": {"l1_latency": 90.0, "l2_latency": 232.0},
    },
}  # fmt: skip


# Huang & Li Sec. III-C2: DRAM row-buffer miss latency measured on the K80 (GK210),
# 742 ns; configs/gpus/k40.toml and gtx680.toml take it for every GDDR5 Kepler part.
KEPLER_DRAM_MISS_NS = 742.0


def derived_memory_timing(arch: str, bandwidth_gbs: float, sms: int, clock_mhz: float) -> dict:
    """Departure delays (and on Kepler the DRAM latency) of a spec row, by the rule of
    configs/gpus/k40.toml and gtx680.toml: a 128-byte line (coalesced) or a 32-byte
    sector (uncoalesced, per transaction) over the SM's share of the bandwidth per
    cycle; Kepler DRAM latency = 742 ns x clock. Without this every spec row would
    inherit the K80's delays, whatever its bandwidth and SM count."""
    share = bandwidth_gbs * 1e9 / sms / (clock_mhz * 1e6)  # bytes per SM cycle
    out = {"departure_del_coal": 128.0 / share, "departure_del_uncoal": 32.0 / share}
    if arch == "kepler":
        out["dram_latency"] = KEPLER_DRAM_MISS_NS * clock_mhz / 1000.0
    return out


def arch_of(cc: float) -> str:
    major = int(cc)
    if major == 3:
        return "kepler"
    if major == 5:
        return "maxwell"
    if major == 6:
        return "pascal"
    raise InputError(f"compute capability {cc}: no per-architecture defaults (Kepler 3.x, Maxwell 5.x, Pascal 6.x); give --gpu")


# (lowest, highest) of the specification columns a GPU is made of.
SPEC_RANGES = {"compute_version": (1.0, 9.99), "max_clock_rate": (1.0, 1e5), "num_of_cores": (1.0, 2.0**18),
               "bandwith": (1e-3, 1e6), "bus": (1.0, 8192.0), "memory_clock": (1.0, 1e6)}  # fmt: skip


def _spec(spec: dict, key: str, where: str, required: bool = True) -> float:
    v = _num(spec.get(key))
    lo, hi = SPEC_RANGES[key]
    if not lo <= v <= hi:
        if not required and v != v:
            return v
        raise InputError(f"{where}: {key}: expected a number in [{lo:g}, {hi:g}], got {shown(spec.get(key))}")
    return v


def gpu_from_spec(spec: dict, where: str = "row") -> Gpu:
    """A Gpu for a spec row: the row's clock, cores, bandwidth; the architecture's defaults for the rest."""
    cc = _spec(spec, "compute_version", where)
    clock = _spec(spec, "max_clock_rate", where)
    cores = _spec(spec, "num_of_cores", where)
    arch = arch_of(cc)
    bw = _spec(spec, "bandwith", where, required=False)
    if not bw > 0:
        if not (_num(spec.get("bus")) > 0 and _num(spec.get("memory_clock")) > 0):
            raise InputError(f"{where}: bandwith: expected GB/s (or bus and memory_clock), got {shown(spec.get('bandwith'))}")
        bus, mclk = _spec(spec, "bus", where), _spec(spec, "memory_clock", where)
        bw = bus / 8 * mclk * 2 / 1000  # GDDR5: two transfers per memory clock
    d = ARCH_DEFAULTS[arch]
    major, minor = int(cc), int(round((cc - int(cc)) * 10))
    base = get_gpu("k80")
    comp = dict(d["compute"])
    if (major, minor) == (6, 1):
        comp.update(cores_per_sm=128, sfus_per_sm=32)
        mem_extra = {"smem_per_sm": 98304}
    else:
        mem_extra = {}
    if (major, minor) == (3, 0):
        comp["max_regs_per_thread"] = 63
    cores_per_sm = comp["cores_per_sm"]
    sms = max(1, int(round(cores / cores_per_sm)))
    comp.update(sms=sms, clock_mhz=clock, issue_cycles=32.0 / cores_per_sm,
                max_regs_per_block=65536)  # fmt: skip
    mem = dict(d.get("memory", {}), **mem_extra, bandwidth_gbs=bw)
    mem.update(derived_memory_timing(arch, bw, sms, clock))
    caches = dict(d.get("caches", {}))
    name = str(spec.get("gpu_name") or f"cc{cc}")
    bus = _spec(spec, "bus", where, required=False)
    dram = replace(base.dram, channels=int(bus // 64)) if bus >= 64 else base.dram  # 64-bit GDDR5 channels
    return replace(
        base,
        dram=dram,
        name=name,
        description=f"{name} from its specification columns ({arch} defaults)",
        arch=arch,
        compute_capability=(major, minor),
        compute=replace(base.compute, **comp),
        memory=replace(base.memory, **mem),
        caches=replace(base.caches, **caches),
        path="",
    )
