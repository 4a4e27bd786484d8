"""Recorded microbenchmark outputs: what others measured, read for the analysis and its tests.

- gpu-benches ``gpu-latency`` output (github te42kyfo/gpu-benches): a first line
  ``clock: f1 f2 ...`` (SM clocks in MHz sampled while the clock ramps up), then one
  line per footprint: iterations, clock (MHz), footprint (KiB: the program prints bytes
  / 1024), time (ms, the fastest of 7 launches of all iterations) and latency (cycles
  per hop at that clock). Nodes are 64 B apart in a random cyclic order.
- mt4g JSON (github caps-tum/mt4g ``sample_results``): per cache (``l1``, ``l2``,
  ``main``, ``shared``, ``constant/l1``, ``constant/l1.5``, ``texture``, ``readOnly``)
  latency statistics (cycles), size, line size and fetch granularity.
- ``microbenchmarks.csv`` of ``shared/data/h100-placements``: pointer-chase latencies
  (cycles per hop at the measured SM clock), the clock and bandwidths of one H100.

Each reader refuses a malformed file with an InputError naming the file and line.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from traces.errors import InputError
from traces.inputfile import read_bytes

from .analysis import Stat
from .measurements import Measured

KIB = 1024


@dataclass(frozen=True)
class LatencyCurve:
    """A latency-versus-footprint curve (the varying-size random walk)."""

    footprint_bytes: np.ndarray
    cycles: np.ndarray
    clock_mhz: float
    """The clock the cycles are counted at (the rows' clock column)."""
    clock_ramp_mhz: tuple[float, ...] = ()
    """The ``clock:`` line: clocks sampled before the walk (the GPU boosting)."""


def read_gpu_benches(path) -> LatencyCurve:
    """A gpu-benches ``gpu-latency`` output file."""
    text = read_bytes(path).decode("utf-8", errors="replace")
    ramp: tuple[float, ...] = ()
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        s = line.split()
        if not s:
            continue
        if s[0] == "clock:":
            try:
                ramp = tuple(float(v) for v in s[1:])
            except ValueError:
                raise InputError(f"{path} line {lineno}: clock: expected numbers, got {line.strip()!r}") from None
            continue
        if len(s) != 5:
            raise InputError(f"{path} line {lineno}: expected 5 columns (iterations, clock MHz, footprint kB, time ms, "
                             f"latency cycles), got {len(s)}")  # fmt: skip
        try:
            row = [float(v) for v in s]
        except ValueError:
            raise InputError(f"{path} line {lineno}: expected numbers, got {line.strip()!r}") from None
        if not all(np.isfinite(row)) or min(row) <= 0:
            raise InputError(f"{path} line {lineno}: every column must be > 0, got {line.strip()!r}")
        rows.append(row)
    if not rows:
        raise InputError(f"{path}: no measurement lines")
    a = np.array(rows)
    clocks = np.unique(a[:, 1])
    if clocks.size != 1:
        raise InputError(
            f"{path}: the rows give {clocks.size} clocks ({', '.join(f'{c:g}' for c in clocks)}); expected one"
        )
    return LatencyCurve(a[:, 2] * KIB, a[:, 4], float(clocks[0]), ramp)


# --- mt4g ------------------------------------------------------------------------------


MT4G_CACHES = ("l1", "l2", "main", "shared", "constant/l1", "constant/l1.5", "texture", "readOnly")


@dataclass(frozen=True)
class Mt4gCache:
    """One cache (or memory) of an mt4g result."""

    latency_p50: float | None
    latency_mean: float | None
    size_bytes: int | None
    line_bytes: int | None
    fetch_bytes: int | None


@dataclass(frozen=True)
class Mt4gResult:
    name: str
    clock_mhz: float
    cc: tuple[int, int]
    sms: int
    caches: dict[str, Mt4gCache]


def _get(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _size(v) -> int | None:
    if isinstance(v, dict):
        v = v.get("size", v.get("value"))
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def read_mt4g(path) -> Mt4gResult:
    """An mt4g result file (JSON)."""
    try:
        d = json.loads(read_bytes(path))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not an mt4g JSON file ({exc})") from None
    name = _get(d, "general", "name")
    clock = _get(d, "general", "clockRate", "value")
    if not isinstance(name, str) or not isinstance(clock, (int, float)):
        raise InputError(f"{path}: general.name and general.clockRate.value are missing")
    caches = {}
    for key in MT4G_CACHES:
        c = _get(d, "memory", *key.split("/"))
        if not isinstance(c, dict):
            continue
        lat = c.get("latency") if isinstance(c.get("latency"), dict) else {}
        caches[key] = Mt4gCache(lat.get("p50"), lat.get("mean"), _size(c.get("size")), _size(c.get("lineSize")),
                                _size(c.get("fetchGranularity")))  # fmt: skip
    cc = (_get(d, "general", "computeCapability", "major") or 0, _get(d, "general", "computeCapability", "minor") or 0)
    return Mt4gResult(
        name,
        float(clock) / 1000.0,
        (int(cc[0]), int(cc[1])),
        int(_get(d, "compute", "multiProcessorCount") or 0),
        caches,
    )


def measurements_from_mt4g(r: Mt4gResult, source: str) -> dict[str, Measured]:
    """The latencies an mt4g result gives, as calibration measurements (its p50)."""
    keys = {"l1_latency": "l1", "l2_latency": "l2", "dram_latency": "main", "smem_latency": "shared",
            "const_latency": "constant/l1", "const_l15_latency": "constant/l1.5", "tex_latency": "texture",
            "ldg_latency": "readOnly"}  # fmt: skip
    out = {}
    for key, cache in keys.items():
        c = r.caches.get(cache)
        if c is not None and c.latency_p50 is not None:
            out[key] = Measured(key, Stat(float(c.latency_p50), 0.0, 1), "cycles", f"mt4g {cache} p50", source)
    return out


# --- the H100's microbenchmarks.csv ------------------------------------------------------

MICROBENCHMARK_COLUMNS = ("kind", "test", "bytes", "hops_or_reps", "cycles_per_hop", "ns_per_hop_or_us", "GBps", "note")

# Which test row gives which measurement (the first row named wins; the others are kept as extras).
_CSV_KEYS = {
    "l1_latency": "L1 hit (ld, 16 KiB)",
    "ldg_latency": "L1 hit (__ldg, 16 KiB)",
    "tex_latency": "L1 hit (tex1Dfetch, 16 KiB)",
    "l2_latency": "L2 hit (ld, 8 MiB)",
    "dram_latency": "DRAM (ld, 1 GiB random)",
    "smem_latency": "shared memory (LDS)",
    "const_latency": "constant cache hit (1 KiB)",
    "const_l15_latency": "constant L1.5 (32 KiB)",
    "l1_latency_ptr64": "L1 hit (ld, 64-bit pointers, 16 KiB)",
    "l2_latency_ldcg": "L2 hit (__ldcg, 8 MiB)",
    "dram_latency_ldcg": "DRAM (__ldcg, 1 GiB random)",
    "dram_read_gbs": "read kernel float4",
    "dram_write_gbs": "write kernel float4",
    "dram_copy_gbs": "copy kernel float4 (read+write)",
}

_CLOCK = re.compile(r"SM clock ([0-9.]+) MHz")


def read_microbenchmarks(path) -> list[dict[str, str]]:
    """The rows of a ``microbenchmarks.csv`` (every column as text)."""
    text = read_bytes(path).decode("utf-8", errors="replace")
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or tuple(h.strip() for h in header) != MICROBENCHMARK_COLUMNS:
        raise InputError(f"{path} line 1: expected the columns {', '.join(MICROBENCHMARK_COLUMNS)}")
    rows = []
    tail = len(MICROBENCHMARK_COLUMNS) - 2  # the columns after the test name
    for lineno, cells in enumerate(reader, start=2):
        if not cells:
            continue
        if len(cells) < len(MICROBENCHMARK_COLUMNS):
            raise InputError(f"{path} line {lineno}: expected {len(MICROBENCHMARK_COLUMNS)} columns, got {len(cells)}")
        # The test names hold unquoted commas ("L1 hit (ld, 16 KiB)"): the test is every cell
        # between the kind and the last six columns.
        test = ",".join(cells[1:-tail])
        rows.append(dict(zip(MICROBENCHMARK_COLUMNS, [cells[0], test, *cells[-tail:]], strict=True)))
    return rows


def measurements_from_microbenchmarks(rows, source: str) -> dict[str, Measured]:
    """The clock, latencies and bandwidths of ``microbenchmarks.csv`` rows as calibration
    measurements (one measurement each: the file gives no spread)."""
    out: dict[str, Measured] = {}
    by_test = {r["test"]: r for r in rows}
    for r in rows:
        if r["kind"] == "clock":
            m = _CLOCK.search(r["note"])
            if m:
                out["sm_clock_mhz"] = Measured("sm_clock_mhz", Stat(float(m[1]), 0.0, 1), "MHz", r["test"], source)
    for key, test in _CSV_KEYS.items():
        r = by_test.get(test)
        if r is None:
            continue
        col, unit = ("cycles_per_hop", "cycles") if r["kind"] == "latency" else ("GBps", "GB/s")
        try:
            v = float(r[col])
        except ValueError:
            raise InputError(f"{source}: {test}: {col}: expected a number, got {r[col]!r}") from None
        out[key] = Measured(key, Stat(v, 0.0, 1), unit, test, source)
    return out


def gpu_benches_files(folder) -> dict[str, Path]:
    """The curves of a gpu-benches-latency folder by GPU (file stem)."""
    return {p.stem: p for p in sorted(Path(folder).glob("*.txt"))}
