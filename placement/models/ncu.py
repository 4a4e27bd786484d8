"""Nsight Compute CSV exports, turned into seed-model inputs.

Nsight Compute (``ncu``) replaced nvprof from Volta on. Its CSV comes in two shapes,
both read here:

- ``ncu --csv --page raw``: one row per kernel launch, the columns ``ID``, ``Process
  ID``, ``Process Name``, ``Host Name``, ``Kernel Name``, ``Context``, ``Stream``,
  ``Block Size``, ``Grid Size``, ``Device``, ``CC`` and then one per metric, with a
  second row of units (blank under the first eleven);
- ``ncu --csv`` (the details page): one row per metric, ``Metric Name``,
  ``Metric Unit``, ``Metric Value``, gathered here by ``ID``.

Numbers may carry thousands separators (``"10,240,000"``), units may be scaled and
spelled either way (``Kbyte``, ``usecond``, ``ns``) or per something (``byte/block``,
:func:`unit_scale`), ``n/a`` marks a metric the GPU does not support, and the profiled
program's own output and ncu's ``==PROF==`` / ``==WARNING==`` lines may precede (or follow)
the CSV: all handled. An error names the file's own line.

The metrics read, by the name used in ``placement.models.counters`` (the nvprof
equivalents of NVIDIA's "nvprof metric comparison" table in the Nsight Compute CLI
documentation): requests and 32-byte sectors of global loads and stores from the L1
(``l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum``,
``l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum``, ``..._op_st.sum``), warp-level
instructions (``smsp__inst_executed.sum``), warps (``smsp__warps_launched.sum``), the L1
and L2 sector hit rates (``l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct``,
``lts__t_sector_hit_rate.pct``), DRAM bytes (``dram__bytes_read.sum``,
``dram__bytes_write.sum``), shared-memory instructions and bank conflicts, the launch
(``launch__grid_size``, ``launch__block_size``, ``launch__registers_per_thread``,
``launch__shared_mem_per_block_static`` / ``_dynamic``) and the time
(``gpu__time_duration.sum``). A request's transactions are its L1 sectors
(``placement.models.counters._per_request``). Texture loads and global atomics, which
those LSU counters leave out, are counted from their own metrics when the export has them
and derived from the L1TEX and L2 sector totals and hit rates when not
(``placement.models.ncu_traffic``), and folded into the loads and stores.

The GPU is ``--gpu`` or, when the export holds ``device__attribute_display_name``,
the catalog GPU of that name (the CUDA device name, e.g. ``NVIDIA H100 80GB HBM3``, is
an alias in ``configs/catalog.csv``).
"""

from __future__ import annotations

import csv
import logging
import math
import re
from pathlib import Path

from traces.errors import InputError

from . import ncu_traffic
from traces.launch import MAX_REGS_PER_THREAD, MAX_SMEM_PER_BLOCK, launch_problem

from .counters import MAX_VALUE, NCU, CounterRow, _num, _params

log = logging.getLogger(__name__)

# Canonical counter -> Nsight Compute metric names tried, first found wins.
NCU_NAMES: dict[str, tuple[str, ...]] = {
    "warps_launched": ("smsp__warps_launched.sum",),
    "inst_executed": ("smsp__inst_executed.sum", "sm__inst_executed.sum"),
    "gld_request": ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "smsp__inst_executed_op_global_ld.sum"),
    "gst_request": ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "smsp__inst_executed_op_global_st.sum"),
    "gld_sectors": ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",),
    "gst_sectors": ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",),
    "shared_load": ("smsp__inst_executed_op_shared_ld.sum",),
    "shared_store": ("smsp__inst_executed_op_shared_st.sum",),
    "shared_load_replay": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",),
    "shared_store_replay": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",),
    "l1_hit_rate": ("l1tex__t_sector_pipe_lsu_mem_global_op_ld_hit_rate.pct", "l1tex__t_sector_hit_rate.pct"),
    "l2_hit_rate": ("lts__t_sector_op_read_hit_rate.pct", "lts__t_sector_hit_rate.pct"),
    "dram_read_bytes": ("dram__bytes_read.sum",),
    "dram_write_bytes": ("dram__bytes_write.sum",),
    "fp32_thread": ("smsp__sass_thread_inst_executed_op_fp32_pred_on.sum",),
    "fadd": ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",),
    "fmul": ("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",),
    "ffma": ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",),
    "fp64_thread": ("smsp__sass_thread_inst_executed_op_fp64_pred_on.sum",),
    "sfu_warp": ("smsp__inst_executed_pipe_xu.sum",),
    "grid_size": ("launch__grid_size",),
    "block_size": ("launch__block_size",),
    "registers": ("launch__registers_per_thread",),
    "smem_static": ("launch__shared_mem_per_block_static",),
    "smem_dynamic": ("launch__shared_mem_per_block_dynamic",),
    "duration": ("gpu__time_duration.sum",),
    "device_name": ("device__attribute_display_name",),
    # Texture loads, atomics and the totals they are derived from without them (placement.models.ncu_traffic).
    "tex_requests": ("l1tex__t_requests_pipe_tex_mem_texture.sum", "l1tex__t_requests_pipe_tex_mem_texture_op_tex.sum",
                     "l1tex__t_requests_pipe_tex_mem_texture_op_ld.sum", "smsp__inst_executed_op_texture.sum",
                     "sm__sass_inst_executed_op_texture.sum"),
    "tex_sectors": ("l1tex__t_sectors_pipe_tex_mem_texture.sum", "l1tex__t_sectors_pipe_tex_mem_texture_op_tex.sum",
                    "l1tex__t_sectors_pipe_tex_mem_texture_op_ld.sum"),
    "tex_hit_rate": ("l1tex__t_sector_pipe_tex_mem_texture_op_tex_hit_rate.pct",
                     "l1tex__t_sector_pipe_tex_mem_texture_op_ld_hit_rate.pct"),
    "atom_requests": ("l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum", "smsp__sass_inst_executed_op_global_atom.sum"),
    "atom_sectors": ("l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",),
    "red_requests": ("l1tex__t_requests_pipe_lsu_mem_global_op_red.sum", "smsp__inst_executed_op_global_red.sum"),
    "red_sectors": ("l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",),
    "shared_atom": ("smsp__inst_executed_op_shared_atom.sum",),
    "l1_hit_rate_all": ("l1tex__t_sector_hit_rate.pct",),
    "l2_hit_rate_all": ("lts__t_sector_hit_rate.pct",),
    "l2_read_hit_rate": ("lts__t_sector_op_read_hit_rate.pct",),
    "l2_tex_read_sectors": ("lts__t_sectors_srcunit_tex_op_read.sum",),
    "sm_count": ("launch__sm_count", "device__attribute_multiprocessor_count"),
}  # fmt: skip
REQUIRED = ("inst_executed", "gld_request", "gst_request", "gld_sectors", "gst_sectors", "l2_hit_rate", "duration")
"""Counters without which a launch is reported, not predicted."""

_LEADING = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name")
# Units (Nsight Compute prints scaled units unless --print-units base): an optional prefix and
# a base, optionally "/" another ("byte/block", "register/thread", "Gbyte/second"). Before
# seconds a prefix scales down ("ns", "usecond", "msecond"); before anything else, up ("Kbyte",
# "Mbyte", "Ginst", "MHz"). Older releases spell seconds out ("nsecond"), 2023 and later
# abbreviate them ("ns").
_TIME_BASES = ("second", "s")
_COUNT_BASES = ("byte", "b", "inst", "warp", "request", "sector", "register", "block", "thread", "cycle",
                "hz", "sm", "cluster", "pass", "wavefront", "%")  # fmt: skip
_DOWN = {"": 1.0, "n": 1e9, "u": 1e6, "µ": 1e6, "m": 1e3}  # divisors
_UP = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}  # factors
KNOWN_UNITS = "byte, Kbyte, Mbyte, Gbyte, ns, us, ms, s, nsecond, usecond, msecond, second, %, inst, warp, " \
              "request, sector, register, block, thread, cycle, hz, SM, cluster, pass, and X/Y of these"  # fmt: skip


def _unit_parts(unit: str) -> tuple[float, float] | None:
    """(factor, divisor) of ``unit`` (see :func:`unit_scale`), None when unknown."""
    u = unit.strip()
    if not u:
        return 1.0, 1.0
    if "/" in u:
        num, _, den = u.partition("/")
        a, b = _unit_parts(num), _unit_parts(den)
        if a is None or b is None or not num.strip() or not den.strip():
            return None
        return a[0] * b[1], a[1] * b[0]
    low = u.lower()
    for base in sorted(_TIME_BASES + _COUNT_BASES, key=len, reverse=True):
        if low.endswith(base):
            prefix = low[: len(low) - len(base)]
            if base in _TIME_BASES and prefix in _DOWN:
                return 1.0, _DOWN[prefix]
            if base not in _TIME_BASES and prefix in _UP:
                return _UP[prefix], 1.0
    return None


def unit_scale(unit: str) -> float | None:
    """The factor that turns a value in ``unit`` into base units (bytes, seconds, counts):
    ``"Kbyte"`` 1e3, ``"ns"`` 1e-9, ``"byte/block"`` 1, ``"Gbyte/second"`` 1e9; None for a unit
    this reader does not know."""
    parts = _unit_parts(unit)
    return None if parts is None else parts[0] / parts[1]


_PROFILER_LINE = re.compile(r"==[A-Z]+==")


def is_ncu_csv(path: str | Path) -> bool:
    """Whether the file is an Nsight Compute CSV export (its header starts "ID","Process ID")."""
    try:
        with open(path, newline="", errors="replace") as fh:
            for _, line in zip(range(200), fh, strict=False):
                if line.startswith('"ID","Process ID"') or line.startswith("ID,Process ID"):
                    return True
    except OSError:
        return False
    return False


def _number(path: str, where: str, text: str, unit: str) -> float:
    s = str(text).strip().strip('"')
    if not s or s.lower() in ("n/a", "nan", "-"):
        return math.nan
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", s):
        s = s.replace(",", "")
    v = _num(s)
    if v != v:
        return math.nan
    parts = _unit_parts(unit)
    if parts is None:
        raise InputError(f"{path} {where}: unit {unit!r} is not one this reader knows ({KNOWN_UNITS})")
    return v * parts[0] / parts[1]  # 19,328 ns is 1.9328e-05 s exactly as printed


def _table(path: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header and (line in the file, row) from the line that starts the CSV (the program's
    output before it is skipped)."""
    p = Path(path)
    try:
        text = p.read_text(errors="replace")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    lines = text.splitlines()
    start = next(
        (i for i, ln in enumerate(lines) if ln.startswith('"ID","Process ID"') or ln.startswith("ID,Process ID")), None
    )
    if start is None:
        raise InputError(f'{path}: not an Nsight Compute CSV export (no header starting "ID","Process ID")')
    # ncu's own lines (==PROF==, ==WARNING==, ==ERROR==) may also follow the header.
    body = [(i, ln) for i, ln in enumerate(lines[start:], start=start + 1) if not _PROFILER_LINE.match(ln)]
    reader = csv.reader((ln for _, ln in body), strict=True)
    try:
        rows = [(body[reader.line_num - 1][0], r) for r in reader]
    except csv.Error as exc:  # a quoted field left open: the file ends inside it
        line = body[max(reader.line_num - 1, 0)][0] if body else 0
        raise InputError(f"{path} line {line}: {exc} (a truncated or damaged export)") from None
    header = [h.strip() for h in rows[0][1]]
    for c in _LEADING:
        if c not in header:
            raise InputError(f"{path}: column {c!r} missing from the Nsight Compute header")
    data = [(i, r) for i, r in rows[1:] if r and any(x.strip() for x in r)]
    for i, r in data:  # ncu writes every field of every row: fewer is a file cut short (or more, a damaged one)
        if len(r) != len(header):
            raise InputError(f"{path} line {i}: {len(r)} fields where the header has {len(header)} (a truncated or "
                             "damaged export)")  # fmt: skip
    return header, data


def _launches(path: str) -> list[tuple[int, dict[str, str], dict[str, tuple[str, str]]]]:
    """(line, the launch's descriptive columns, metric -> (value, unit)) per kernel launch."""
    header, rows = _table(path)
    out = []
    if "Metric Name" in header:  # details page: one metric a row
        by_id: dict[str, tuple[int, dict, dict]] = {}
        for i, r in rows:
            rec = dict(zip(header, r, strict=False))
            key = rec.get("ID", "")
            entry = by_id.setdefault(key, (i, {c: rec.get(c, "") for c in header[: header.index("Metric Name")]}, {}))
            entry[2][rec.get("Metric Name", "")] = (rec.get("Metric Value", ""), rec.get("Metric Unit", ""))
        return list(by_id.values())
    units: list[str] = [""] * len(header)
    if rows and not rows[0][1][0].strip():  # the raw page's units row
        units = rows[0][1] + [""] * (len(header) - len(rows[0][1]))
        rows = rows[1:]
    n_desc = header.index("CC") + 1 if "CC" in header else len(_LEADING)
    for i, r in rows:
        rec = dict(zip(header, r, strict=False))
        desc = {c: rec.get(c, "") for c in header[:n_desc]}
        metrics = {h: (rec.get(h, ""), units[j]) for j, h in enumerate(header) if j >= n_desc}
        out.append((i, desc, metrics))
    return out


# (lowest, highest) of the values that are not counts, sizes or times (those: [0, counters.MAX_VALUE]), as the
# nvprof reader's ranges (placement.models.counters): rates in percent, registers a thread, shared memory a block.
_RANGES = {"registers": (0.0, MAX_REGS_PER_THREAD), "smem_static": (0.0, MAX_SMEM_PER_BLOCK),
           "smem_dynamic": (0.0, MAX_SMEM_PER_BLOCK)}  # fmt: skip


def _in_range(path: str, where: str, canon: str, v: float, text: str) -> float:
    """``v`` within its range (:data:`_RANGES`, percentages [0, 100], else [0, MAX_VALUE]), or an InputError."""
    lo, hi = _RANGES.get(canon, (0.0, 100.0) if canon.endswith("_rate") else (0.0, MAX_VALUE))
    if not lo <= v <= hi:
        raise InputError(f"{path} {where}: expected a number in [{lo:g}, {hi:g}], got {text.strip()[:40]!r}")
    return v


def _dims(path: str, where: str, text: str) -> tuple[int, int, int] | None:
    """``(x, y, z)`` as ncu prints a launch's Grid or Block Size (a blank: None); anything else an InputError."""
    s = (text or "").strip().strip('"').strip()
    if not s:
        return None
    m = re.fullmatch(r"\(?\s*(\d+)\s*(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?\)?", s)
    if m is None or not all(1 <= int(x) < 2**31 for x in m.groups() if x is not None):
        raise InputError(f"{path} {where}: expected the launch as (x, y, z) of positive whole numbers, got {s[:40]!r}")
    x, y, z = (int(g) if g is not None else 1 for g in m.groups())
    return x, y, z


def read_ncu(path: str | Path) -> list[CounterRow]:
    """One CounterRow per kernel launch of an Nsight Compute CSV; InputError names the file, line and column."""
    p = str(path)
    out = []
    derived = [0, 0]  # launches whose texture loads, atomics were derived
    for n, (line, desc, metrics) in enumerate(_launches(p), start=1):
        raw: dict[str, float] = {}
        text: dict[str, str] = {}
        for canon, names in NCU_NAMES.items():
            raw[canon] = math.nan
            for name in names:
                if name in metrics:
                    value, unit = metrics[name]
                    text[canon] = value
                    if canon != "device_name":
                        v = _number(p, f"line {line}: {name}", value, unit)
                        raw[canon] = v if v != v else _in_range(p, f"line {line}: {name}", canon, v, value)
                    break
        block = _dims(p, f"line {line}: Block Size", desc.get("Block Size", ""))
        grid = _dims(p, f"line {line}: Grid Size", desc.get("Grid Size", ""))
        if block is None and raw["block_size"] >= 1:
            block = (int(raw["block_size"]), 1, 1)
        if grid is None and raw["grid_size"] >= 1:
            grid = (int(raw["grid_size"]), 1, 1)
        if block is None or grid is None:
            raise InputError(f"{p} line {line}: Block Size / Grid Size: expected the launch, e.g. (256, 1, 1)")
        problem = launch_problem(grid, block)
        if problem:
            raise InputError(f"{p} line {line}: Grid Size / Block Size: {problem}")
        tpb, blocks = math.prod(block), math.prod(grid)
        if not raw["warps_launched"] > 0:
            raw["warps_launched"] = blocks * -(-tpb // 32)
        missing = tuple(c for c in REQUIRED if not (raw[c] >= 0))
        # The shapes counters._params reads: L2 sectors of loads (the L1 misses) and of stores,
        # thread-level FP instructions, DRAM transactions of 32 bytes, the SFU's warp instructions x 32.
        fp32 = (
            raw["fp32_thread"]
            if raw["fp32_thread"] >= 0
            else sum(raw[k] for k in ("fadd", "fmul", "ffma") if raw[k] >= 0)
        )
        vals = dict(raw)
        # Texture loads and global atomics, which the LSU's counters above leave out.
        extra = ncu_traffic.traffic(raw)
        vals.update(ncu_traffic.merged(raw, extra))
        vals.update(texture_source=extra.texture, atomics_source=extra.atomics)
        derived[0] += extra.texture == ncu_traffic.DERIVED
        derived[1] += extra.atomics == ncu_traffic.DERIVED
        if raw["shared_atom"] >= 0:
            vals["shared_store"] = (raw["shared_store"] if raw["shared_store"] >= 0 else 0.0) + raw["shared_atom"]
        l1 = vals["l1_hit_rate"] / 100.0 if vals["l1_hit_rate"] >= 0 else 0.0
        vals.update(
            l2_read_sectors=vals.get(
                "l2_read_sectors", vals["gld_sectors"] * (1.0 - l1) if vals["gld_sectors"] >= 0 else math.nan
            ),
            l2_write_sectors=vals.get("l2_write_sectors", vals["gst_sectors"]),
            fp32=fp32,
            fp64=raw["fp64_thread"],
            sfu_ops=raw["sfu_warp"] * 32.0 if raw["sfu_warp"] >= 0 else math.nan,
            dram_read=raw["dram_read_bytes"] / 32.0 if raw["dram_read_bytes"] >= 0 else math.nan,
            dram_write=raw["dram_write_bytes"] / 32.0 if raw["dram_write_bytes"] >= 0 else math.nan,
        )
        cols = {"Registers.Per.Thread": raw["registers"], "Static.SMem": raw["smem_static"],
                "Dynamic.SMem": raw["smem_dynamic"], "Duration": raw["duration"]}  # fmt: skip
        kernel = desc.get("Kernel Name", "") or f"launch {n}"
        params = None
        if not missing:
            params = _params(kernel, tpb, blocks, vals, lambda c: cols.get(c, math.nan), NCU)
        spec = {"ncu_device": text.get("device_name", ""), "cc": desc.get("CC", "")}
        out.append(
            CounterRow(
                row=n,
                kernel=kernel,
                input_size=math.nan,
                block=block,
                measured_s=raw["duration"],
                spec=spec,
                params=params,
                missing=missing,
                raw=vals,
            )
        )
    if not out:
        raise InputError(f"{p}: no kernel launch in the Nsight Compute export")
    if any(derived):
        log.info(
            "%s: texture loads of %d launches and atomics of %d derived from sector totals and hit rates "
            "(the export has no texture or atomic counters; placement.models.ncu_traffic)",
            p,
            *derived,
        )
    return out
