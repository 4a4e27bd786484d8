"""Nsight Compute CSV exports, turned into seed-model inputs.

Nsight Compute (``ncu``) replaced nvprof from Volta on. Its CSV comes in two shapes,
both read here:

- ``ncu --csv --page raw``: one row per kernel launch, the columns ``ID``, ``Process
  ID``, ``Process Name``, ``Host Name``, ``Kernel Name``, ``Context``, ``Stream``,
  ``Block Size``, ``Grid Size``, ``Device``, ``CC`` and then one per metric, with a
  second row of units (blank under the first eleven);
- ``ncu --csv`` (the details page): one row per metric, ``Metric Name``,
  ``Metric Unit``, ``Metric Value``, gathered here by ``ID``.

Numbers may carry thousands separators (``"10,240,000"``), units may be scaled
(``Kbyte``, ``usecond``), ``n/a`` marks a metric the GPU does not support, and the
profiled program's own output may precede the CSV: all handled.

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
(``placement.models.counters._per_request``).

The GPU is ``--gpu`` or, when the export holds ``device__attribute_display_name``,
the catalog GPU of that name.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

from traces.errors import InputError

from .counters import NCU, CounterRow, _num, _params

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
}
REQUIRED = ("inst_executed", "gld_request", "gst_request", "gld_sectors", "gst_sectors", "l2_hit_rate", "duration")
"""Counters without which a launch is reported, not predicted."""

_LEADING = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name")
# Unit scale factors (Nsight Compute prints scaled units unless --print-units base).
_SCALE = {
    "": 1.0, "byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
    "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0,
    "%": 1.0, "inst": 1.0, "warp": 1.0, "request": 1.0, "sector": 1.0, "register/thread": 1.0,
    "block": 1.0, "thread": 1.0, "cycle": 1.0, "kinst": 1e3, "minst": 1e6, "ginst": 1e9,
}  # fmt: skip


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
    key = unit.strip().lower()
    if key not in _SCALE:
        raise InputError(f"{path} {where}: unit {unit!r} is not one this reader knows ({', '.join(k for k in _SCALE if k)})")
    return v * _SCALE[key]


def _table(path: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows from the line that starts the CSV (the program's output before it is skipped)."""
    p = Path(path)
    try:
        text = p.read_text(errors="replace")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID","Process ID"') or ln.startswith("ID,Process ID")), None)
    if start is None:
        raise InputError(f"{path}: not an Nsight Compute CSV export (no header starting \"ID\",\"Process ID\")")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header = [h.strip() for h in rows[0]]
    for c in _LEADING:
        if c not in header:
            raise InputError(f"{path}: column {c!r} missing from the Nsight Compute header")
    return header, [r for r in rows[1:] if r and any(x.strip() for x in r)]


def _launches(path: str) -> list[tuple[int, dict[str, str], dict[str, tuple[str, str]]]]:
    """(line, the launch's descriptive columns, metric -> (value, unit)) per kernel launch."""
    header, rows = _table(path)
    out = []
    if "Metric Name" in header:  # details page: one metric a row
        by_id: dict[str, tuple[int, dict, dict]] = {}
        for i, r in enumerate(rows, start=2):
            rec = dict(zip(header, r, strict=False))
            key = rec.get("ID", "")
            entry = by_id.setdefault(key, (i, {c: rec.get(c, "") for c in header[: header.index("Metric Name")]}, {}))
            entry[2][rec.get("Metric Name", "")] = (rec.get("Metric Value", ""), rec.get("Metric Unit", ""))
        return list(by_id.values())
    units: list[str] = [""] * len(header)
    if rows and not rows[0][0].strip():  # the raw page's units row
        units = rows[0] + [""] * (len(header) - len(rows[0]))
        rows = rows[1:]
        first = 3
    else:
        first = 2
    n_desc = header.index("CC") + 1 if "CC" in header else len(_LEADING)
    for i, r in enumerate(rows, start=first):
        rec = dict(zip(header, r, strict=False))
        desc = {c: rec.get(c, "") for c in header[:n_desc]}
        metrics = {h: (rec.get(h, ""), units[j]) for j, h in enumerate(header) if j >= n_desc}
        out.append((i, desc, metrics))
    return out


def _dims(text: str) -> tuple[int, int, int] | None:
    nums = [int(x) for x in re.findall(r"\d+", text or "")]
    if not nums:
        return None
    nums = (nums + [1, 1])[:3]
    return nums[0], nums[1], nums[2]


def read_ncu(path: str | Path) -> list[CounterRow]:
    """One CounterRow per kernel launch of an Nsight Compute CSV; InputError names the file, line and column."""
    p = str(path)
    out = []
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
                        raw[canon] = _number(p, f"line {line}: {name}", value, unit)
                    break
        block = _dims(desc.get("Block Size", ""))
        grid = _dims(desc.get("Grid Size", ""))
        if block is None and raw["block_size"] > 0:
            block = (int(raw["block_size"]), 1, 1)
        if grid is None and raw["grid_size"] > 0:
            grid = (int(raw["grid_size"]), 1, 1)
        if block is None or grid is None:
            raise InputError(f"{p} line {line}: Block Size / Grid Size: expected the launch, e.g. (256, 1, 1)")
        tpb, blocks = math.prod(block), math.prod(grid)
        if not raw["warps_launched"] > 0:
            raw["warps_launched"] = blocks * -(-tpb // 32)
        missing = tuple(c for c in REQUIRED if not (raw[c] >= 0))
        # The shapes counters._params reads: L2 sectors of loads (the L1 misses) and of stores,
        # thread-level FP instructions, DRAM transactions of 32 bytes, the SFU's warp instructions x 32.
        l1 = raw["l1_hit_rate"] / 100.0 if raw["l1_hit_rate"] >= 0 else 0.0
        fp32 = raw["fp32_thread"] if raw["fp32_thread"] >= 0 else sum(raw[k] for k in ("fadd", "fmul", "ffma") if raw[k] >= 0)
        vals = dict(raw)
        vals.update(
            l2_read_sectors=raw["gld_sectors"] * (1.0 - l1) if raw["gld_sectors"] >= 0 else math.nan,
            l2_write_sectors=raw["gst_sectors"],
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
                row=n, kernel=kernel, input_size=math.nan, block=block, measured_s=raw["duration"],
                spec=spec, params=params, missing=missing, raw=vals,
            )  # fmt: skip
        )
    if not out:
        raise InputError(f"{p}: no kernel launch in the Nsight Compute export")
    return out


def ncu_names(canonical: str) -> tuple[str, ...]:
    """The Nsight Compute metric names tried for one counter."""
    return NCU_NAMES.get(canonical, (canonical,))
