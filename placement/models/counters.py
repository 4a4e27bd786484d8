"""nvprof counters in the gpuperfpredict format, turned into seed-model inputs.

One CSV row is one run of one kernel (Amaris et al.'s gpuperfpredict data set):
the GPU's specification columns, ``Input.Size``, about 100 nvprof metrics and 115
events, ``Duration`` (seconds) and the launch (``Grid.*``, ``Block.*``,
``Registers.Per.Thread``, ``Static.SMem``, ``Dynamic.SMem``). Events count over
the whole GPU, in warp-level instructions; the ``*.Instructions`` metrics count
thread-level instructions.

Without a ``--gpu`` configuration the machine comes from the row itself
(:func:`gpu_from_spec`): clock, cores, bus and memory clock, L2, compute capability,
with the defaults of its architecture in ``configs/architectures.toml`` for
everything else (any architecture of the GPU catalog).

Column names differ between nvprof generations (:data:`NVPROF_NAMES`) and so do the
units of some counters (:func:`_per_request`, :func:`unified_hit_ratio`); Nsight
Compute exports come in through ``placement.models.ncu`` and the same
:func:`_params`.

Every number is checked before the models see it (a bad one is an InputError
naming the row and column): blank, ``NA`` or text counters are missing (the row
is reported, not predicted); a number must be finite and at least 0; counts, sizes
and times at most 1e18; rates in percent in [0, 100], ``Achieved.Occupancy`` in
[0, 1], transactions per request at most 128; grid and block within CUDA's maxima
(``traces.launch``; a blank dimension is 1), registers per thread at most 255 and
shared memory per block below 2^32 bytes. Specification columns: compute
capability in [1, 10), clock 1 to 1e5 MHz, 1 to 2^18 cores, bandwidth 1e-3 to 1e6
GB/s (or a bus of 1 to 8192 bits and a memory clock of 1 to 1e6 MHz), L2 (when
given) 1e-3 to 1e4 MB.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

from traces.errors import InputError, shown
from traces.inputfile import read_bytes, refuse_repeated_column
from traces.launch import MAX_REGS_PER_THREAD, MAX_SMEM_PER_BLOCK, launch_problem

from ..gpu import Gpu, build_gpu
from .kernel import KernelParams

log = logging.getLogger(__name__)

# Columns every row must have (the launch and the measurement).
REQUIRED = ("Input.Size", "Duration", "Grid.X", "Grid.Y", "Grid.Z", "Block.X", "Block.Y", "Block.Z")
SPEC = ("compute_version", "gpu_name", "max_clock_rate", "num_of_cores", "L2", "bus", "memory_clock", "bandwith")

# The counters the models read, by the name used here, and the names each nvprof
# generation gives them (first found wins; the gpuperfpredict names, then nvprof's own). Kepler (cc 3.x) events and metrics on the
# left; Maxwell and Pascal (cc 5.x, 6.x) renamed the request events (global_load,
# global_store: "number of executed global load / store instructions", per warp, the
# same count as Kepler's gld_request / gst_request) and report the L2 side of the
# unified L1/texture cache as "Texture" traffic (l2_tex_read_transactions,
# l2_texture_read_hit_rate), in the same 32-byte sectors as Kepler's
# l2_l1_read_transactions. Every gpuperfpredict file shows its GPU's naming.
NVPROF_NAMES: dict[str, tuple[str, ...]] = {
    "warps_launched": ("warps_launched",),
    "inst_executed": ("inst_executed",),
    "gld_request": ("gld_request", "global_load"),
    "gst_request": ("gst_request", "global_store"),
    "shared_load": ("shared_load",),
    "shared_store": ("shared_store",),
    "shared_load_replay": ("shared_load_replay", "shared_ld_bank_conflict"),
    "shared_store_replay": ("shared_store_replay", "shared_st_bank_conflict"),
    "l2_read_sectors": ("L2.Read.Transactions..L1.read.requests.", "L2.Transactions..Texture.Reads.",
                        "l2_l1_read_transactions", "l2_tex_read_transactions"),
    "l2_write_sectors": ("L2.Write.Transactions..L1.write.requests.", "L2.Transactions..Texture.Writes.",
                         "l2_l1_write_transactions", "l2_tex_write_transactions"),
    "l2_hit_rate": ("L2.Hit.Rate..L1.Reads.", "L2.Hit.Rate..Texture.Reads.", "l2_l1_read_hit_rate",
                    "l2_texture_read_hit_rate", "l2_tex_read_hit_rate"),
    "gld_per_request": ("Global.Load.Transactions.Per.Request", "gld_transactions_per_request"),
    "gst_per_request": ("Global.Store.Transactions.Per.Request", "gst_transactions_per_request"),
    "l1_hit_rate": ("L1.Global.Hit.Rate", "Global.Hit.Rate", "l1_cache_global_hit_rate", "global_hit_rate"),
    "dram_read": ("Device.Memory.Read.Transactions", "dram_read_transactions"),
    "dram_write": ("Device.Memory.Write.Transactions", "dram_write_transactions"),
    "fp32": ("FP.Instructions.Single.", "inst_fp_32"),
    "fp64": ("FP.Instructions.Double.", "inst_fp_64"),
    "sfu_ops": ("Floating.Point.Operations.Single.Precision.Special.", "flop_count_sp_special"),
}  # fmt: skip
"""Each counter under the gpuperfpredict column names (nvprof's metric descriptions, made
R names) and then nvprof's own metric and event names (``nvprof --query-metrics``), so a
wide table exported straight from nvprof reads too."""

# Counters without which a row is not predicted (nvprof sometimes gives up on long runs).
# On Kepler the requests' 128-byte line transactions come from gld/gst_transactions_per_request;
# from Maxwell on, from the L2 sectors (see _per_request).
COUNTERS = ("warps_launched", "inst_executed", "gld_request", "gst_request", "l2_hit_rate")
KEPLER_COUNTERS = ("gld_per_request",)
SECTOR_COUNTERS = ("l2_read_sectors", "l1_hit_rate", "gld_per_request")


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


def _check_fields(p: str, data: bytes) -> None:
    """Every row has the header's fields, and no column the models read is named twice: pandas reads a short row's missing fields
    as blank counters (the row then predicted as if whole) and a second ``Duration`` as ``Duration.1``."""
    import csv
    import io

    reader = csv.reader(io.StringIO(data.decode("utf-8", errors="replace"), newline=""))
    try:
        header = next(reader, [])
        read = {*REQUIRED, *SPEC, *_RANGES, *(n for names in NVPROF_NAMES.values() for n in names)}
        refuse_repeated_column(p, header, read)  # of those read: nvprof repeats its Context
        for row in reader:
            if row and len(row) != len(header):
                raise InputError(f"{p} line {reader.line_num}: {len(row)} fields, the header has {len(header)}")
    except csv.Error as exc:
        raise InputError(f"{p} line {reader.line_num}: not a CSV row ({exc})") from None


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
    _check_fields(p, data)
    cols = set(df.columns)
    for c in REQUIRED:
        if c not in cols:
            raise InputError(
                f"{p}: column {c!r} missing; expected the gpuperfpredict format (Input.Size, Duration, Grid.*, Block.*, nvprof events)"
            )
    out = []
    for i, rec in enumerate(df.to_dict("records"), start=1):
        out.append(_row(p, i, rec))
    return out


KEPLER, UNIFIED, NCU = "kepler", "unified", "ncu"
"""How a row's counters read (:func:`_params`): Kepler's nvprof (lines per request, L1 hit rate
over requests), Maxwell's and Pascal's nvprof (unified-cache lookups and L2 sectors), or Nsight
Compute's metrics (L1 sectors and requests, hit rates over sectors; ``placement.models.ncu``)."""


def _reading(rec: dict) -> str:
    """KEPLER or UNIFIED for an nvprof row: by compute capability when the row has it, else by
    which naming it uses."""
    cc = _num(rec.get("compute_version"))
    if cc == cc:
        return UNIFIED if cc >= 5.0 else KEPLER
    return KEPLER if "gld_request" in rec else UNIFIED


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
    raw = {}
    for canon, names in NVPROF_NAMES.items():
        raw[canon] = next((g(n) for n in names if n in rec), math.nan)
    reading = _reading(rec)
    required = COUNTERS + (SECTOR_COUNTERS if reading == UNIFIED else KEPLER_COUNTERS)
    missing = tuple(c for c in required if not (raw[c] >= 0))
    params = None
    if not missing:
        params = _params(kernel, tpb, blocks, raw, g, reading)
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


def unified_hit_ratio(raw: dict) -> float:
    """The fraction of a global load's sectors the Maxwell / Pascal unified L1/texture cache
    serves, from nvprof's global_hit_rate h.

    That cache counts every sector a request touches twice, and the second lookup hits: a
    streaming kernel the cache cannot help (gpuperfpredict's vectorAdd, dotProd,
    matrix_sum_coalesced on the GTX-980) reports h = 50 % with gld_transactions = 2 x its
    L2 sectors (8 against 4 a request), for every block shape. A kernel whose loads do hit
    reports more (matMul_gpu_uncoalesced at block 16 x 16: 94.8 %, and 1.6 L2 sectors a
    request where the GTX-680 sends 8.5). The share of sectors served is 2h - 1, clamped
    to [0, 1] (below 50 %, at 32 sectors a request, the double count stops: matrix_sum_normal
    and matMul_gpu_uncoalesced at 32 x 32 report 0 % and 8 % with every sector sent to L2).
    """
    h = _ratio(raw["l1_hit_rate"], 0.0) / 100.0
    return min(max(2.0 * h - 1.0, 0.0), 1.0)


def _per_request(raw: dict, gld: float, gst: float, reading: str) -> tuple[float, float]:
    """(load, store) transactions per request, the models' #Uncoal_per_mw.

    Kepler (cc 3.x) counts one transaction per 128-byte line a request touches (1-4 sectors of
    32 bytes: gld/gst_transactions_per_request), and the models read that. From Maxwell on a
    request's lines cannot be read from the counters: gld_transactions counts the unified
    L1/texture cache's lookups (two a sector, see :func:`unified_hit_ratio`), and the L2
    counters count 32-byte sectors; Nsight Compute counts a request's L1 sectors
    (l1tex__t_sectors / l1tex__t_requests). There the transactions are sectors
    (:func:`_sectors_per_request`), the unit those GPUs' sectored L1 and L2 move: a strided
    walk's one-sector lines read the same either way (matrix_sum_normal: 8, 16, 32 on both
    GPUs), a coalesced warp's line reads as its 4 sectors (vectorAdd), whose Departure_delay
    (4 x Departure_del_uncoal, one sector's time each) equals the line's Departure_del_coal.
    """
    if reading == KEPLER:
        return _ratio(raw["gld_per_request"], 1.0), _ratio(raw["gst_per_request"], 1.0)
    sl, ss = _sectors_per_request(raw, gld, gst, reading)
    return max(sl, 1.0), max(ss, 1.0)


def _sectors_per_request(raw: dict, gld: float, gst: float, reading: str) -> tuple[float, float]:
    """(load, store) 32-byte sectors a request touches; 0 when uncounted.

    Kepler: the L2 sectors per request (global loads skip L1). Maxwell and later: a load's
    sectors are its L2 sectors over the share the unified cache did not serve
    (:func:`unified_hit_ratio`), and at least half its unified-cache lookups (two a sector),
    which stay exact when the cache serves nearly everything (matMul_gpu_uncoalesced at block
    16 x 16: 18 lookups, 9 sectors, where the GTX-680 counts 8.5). Stores are not cached.
    Nsight Compute: the L1 sectors of the requests (``gld_sectors``, ``gst_sectors``).
    """
    if reading == NCU:
        sl = _ratio(raw["gld_sectors"], 0.0) / gld if gld > 0 else 0.0
        return sl, (_ratio(raw["gst_sectors"], 0.0) / gst if gst > 0 else 0.0)
    sl = _ratio(raw["l2_read_sectors"], 0.0) / gld if gld > 0 else 0.0
    if reading == UNIFIED:
        served = unified_hit_ratio(raw)
        touched = sl / (1.0 - served) if served < 1.0 else 0.0
        sl = max(touched, _ratio(raw["gld_per_request"], 0.0) / 2.0)
    ss = _ratio(raw["l2_write_sectors"], 0.0) / gst if gst > 0 else 0.0
    return sl, ss


def _params(kernel: str, tpb: int, blocks: int, raw: dict, g, reading: str) -> KernelParams:
    # Counts are per warp: a warp count below one (1e-320 is a number, not a count) takes the launch's.
    warps = raw["warps_launched"] if raw["warps_launched"] >= 1 else blocks * -(-tpb // 32)
    per = lambda x: _ratio(x, 0.0) / warps  # noqa: E731
    executed = per(raw["inst_executed"])
    gld, gst = per(raw["gld_request"]), per(raw["gst_request"])
    tl, ts = _per_request(raw, raw["gld_request"], raw["gst_request"], reading)
    coal = (gld if tl <= 1.0 else 0.0) + (gst if ts <= 1.0 else 0.0)
    unc_l, unc_s = (gld if tl > 1.0 else 0.0), (gst if ts > 1.0 else 0.0)
    uncoal = unc_l + unc_s
    per_mw = (unc_l * tl + unc_s * ts) / uncoal if uncoal > 0 else 32.0
    sl, ss = _sectors_per_request(raw, raw["gld_request"], raw["gst_request"], reading)
    unc_sectors = (unc_l * sl + unc_s * ss) / uncoal if uncoal > 0 else 0.0
    sfu = per(raw["sfu_ops"]) / 32.0
    fp = (per(raw["fp32"]) + per(raw["fp64"])) / 32.0
    shared = per(raw["shared_load"]) + per(raw["shared_store"])
    # Kepler's L1 global hit rate (0: global loads skip L1 on cc 3.x); Maxwell's and Pascal's
    # share of sectors the unified L1/texture cache serves (unified_hit_ratio); Nsight
    # Compute's L1 sector hit rate of global loads.
    l1 = unified_hit_ratio(raw) if reading == UNIFIED else _ratio(raw["l1_hit_rate"], 0.0) / 100.0
    l2 = _ratio(raw["l2_hit_rate"], 0.0) / 100.0
    dram_bytes = (_ratio(raw["dram_read"], 0.0) + _ratio(raw["dram_write"], 0.0)) * 32.0
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
        uncoal_sectors_per_mw=unc_sectors,
        sfu_insts=sfu,
        fp_insts=fp,
        fp64_insts=per(raw["fp64"]) / 32.0,
        shared_insts=shared,
        bank_conflict_insts=per(raw["shared_load_replay"]) + per(raw["shared_store_replay"]),
        regs_per_thread=int(_ratio(g("Registers.Per.Thread"), 0)),
        smem_per_block=int(_ratio(g("Static.SMem"), 0) + _ratio(g("Dynamic.SMem"), 0)),
        l1_hit_ratio=l1 * load_share,
        l2_hit_ratio=l2 * (1.0 - l1) * load_share,
        data_bytes=dram_bytes,
        # one L2 transaction per 128-byte line a request touches (1-4 sectors): vectorAdd 1
        # (4 sectors), matrix_sum_normal at block 32 x 32, 32 (one sector each).
        store_insts=gst,
        l2_transactions=gld * tl * (1.0 - l1) + gst * ts,
        # and the L2 counts those lines' 32-byte sectors (vectorAdd 4 per request).
        l2_sectors=per(raw["l2_read_sectors"]) + per(raw["l2_write_sectors"]),
        input_size=g("Input.Size"),
        measured_s=g("Duration"),
    )


# --- GPUs from specification columns ---------------------------------------------


# (lowest, highest) of the specification columns a GPU is made of.
SPEC_RANGES = {"compute_version": (1.0, 9.99), "max_clock_rate": (1.0, 1e5), "num_of_cores": (1.0, 2.0**18),
               "bandwith": (1e-3, 1e6), "bus": (1.0, 8192.0), "memory_clock": (1.0, 1e6),
               "L2": (1e-3, 1e4)}  # fmt: skip


def _spec(spec: dict, key: str, where: str, required: bool = True) -> float:
    v = _num(spec.get(key))
    lo, hi = SPEC_RANGES[key]
    if not lo <= v <= hi:
        if not required and v != v:
            return v
        raise InputError(f"{where}: {key}: expected a number in [{lo:g}, {hi:g}], got {shown(spec.get(key))}")
    return v


def gpu_from_spec(spec: dict, where: str = "row") -> Gpu:
    """A Gpu for a spec row: the row's compute capability, clock, cores, bandwidth, bus
    and L2 (each within SPEC_RANGES); the catalog's architecture defaults
    (``configs/architectures.toml``) for the rest, through the same builder as a catalog
    GPU (:func:`placement.gpu.build_gpu`). Shared memory and L1 per SM are those of the
    catalog's GPUs of the same compute capability."""
    from .. import catalog

    cc = _spec(spec, "compute_version", where)
    clock = _spec(spec, "max_clock_rate", where)
    cores = _spec(spec, "num_of_cores", where)
    major, minor = int(cc), int(round((cc - int(cc)) * 10))
    try:
        arch = catalog.arch_of_cc((major, minor))
    except InputError as exc:
        raise InputError(f"{where}: compute_version {shown(spec.get('compute_version'))}: {exc}") from None
    like = [e for e in catalog.entries() if e.cc == (major, minor)] or [e for e in catalog.entries() if e.arch == arch]
    bw = _spec(spec, "bandwith", where, required=False)
    bus = _spec(spec, "bus", where, required=False)
    mclk = _spec(spec, "memory_clock", where, required=False)
    if not bw > 0:
        if not (bus > 0 and mclk > 0):
            raise InputError(
                f"{where}: bandwith: expected GB/s (or bus and memory_clock), got {shown(spec.get('bandwith'))}"
            )
        bw = bus / 8 * mclk * 2 / 1000  # GDDR5: two transfers per memory clock
    cores_per_sm = catalog.arch_table(arch, (major, minor))["compute"]["cores_per_sm"]
    sms = max(1, int(round(cores / cores_per_sm)))
    l2_mb = _spec(spec, "L2", where, required=False)  # MB
    bus_bits = int(bus) if bus >= 32 else like[0].bus_bits
    memory = like[0].memory  # the memory type of the catalog's GPUs of this compute capability
    name = str(spec.get("gpu_name") or f"cc{cc}")
    s = catalog.Spec(
        name=name,
        description=f"{name} from its specification columns ({arch} defaults)",
        arch=arch, cc=(major, minor), sms=sms, clock_mhz=clock, bandwidth_gbs=bw, bus_bits=bus_bits,
        memory=memory,
        l2_bytes=int(round(l2_mb * 1024 * 1024)) if l2_mb > 0 else like[0].l2_kb * 1024,
        smem_per_sm=like[0].smem_per_sm_kb * 1024, l1_bytes=like[0].l1_kb * 1024, where=where,
    )  # fmt: skip
    return build_gpu(s)
