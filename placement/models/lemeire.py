"""Lemeire et al.'s microbenchmark models: the occupancy roofline and the pipeline latencies.

From a table of measured runs of one microbenchmark (work items, work-group size,
local memory per work group, runtime, instructions per work item):

- CPI_warp with the run correction (Sec. V-B): the runtime is divided over the
  *runs* each compute unit executes, so a partly filled last run does not bias it;
- issue latency lambda = min over runs of CPI_warp (Eq. 4), completion latency
  Lambda = max (Eq. 5);
- the occupancy roofline, performance against concurrent work items on one CU
  (Sec. III), peak performance (Eq. 1) and the ridge point: the smallest
  concurrency within 5 % of the peak.

From a varying-size random walk (pointer chase: latency against footprint,
Sec. VI-C), the cache levels: one plateau per level with its completion latency,
and the capacity where the curve leaves the plateau. Eq. 6 gives the shape of the
step (CPMR = Lambda_L1 + (Lambda_L2 - Lambda_L1)(1 - CacheSize / arraySize));
:func:`cpmr` evaluates it for any number of levels.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass

import numpy as np

from traces.errors import InputError, one_line
from traces.inputfile import quote_line, read_text

from ..gpu import Gpu

log = logging.getLogger(__name__)


def peak_performance(nbr_cu: int, nbr_pe: int, clock_hz: float) -> float:
    """Eq. 1: PeakPerformance = NbrCU x NbrPE_itype x ClockFrequency (operations per second)."""
    return nbr_cu * nbr_pe * clock_hz


# --- runs -------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One measured run of a microbenchmark (Table I software parameters)."""

    work_items: int
    wg_size: int
    local_mem: int
    """Bytes of local (shared) memory per work group, which sets concWG (Eq. 2)."""
    runtime_s: float
    instr_kernel: float
    """Instructions of the type under study per work item."""


@dataclass(frozen=True)
class RunPoint:
    """Sec. V-B quantities of one run."""

    work_items: int
    wg_size: int
    conc_wg: int
    conc_warps: int
    actual_warp_size: float
    runs_cu: int
    cycles_of_run: float
    cpi_cu: float
    cpi_warp: float
    concurrency: float
    """Concurrent work items on one CU (the roofline's x axis)."""
    performance: float
    """Operations per second, instrKernel x workItems / runtime."""


@dataclass(frozen=True)
class RunsReport:
    points: tuple[RunPoint, ...]
    issue_latency: float
    completion_latency: float
    peak: float
    ridge_concurrency: float
    ridge_tolerance: float

    def as_dict(self) -> dict:
        d = asdict(self)
        d["points"] = [asdict(p) for p in self.points]
        return d


def run_point(r: Run, *, nbr_cu: int, clock_hz: float, max_conc_wg: int, max_local_mem: int,
              max_conc_warps: int, warp_size: int = 32) -> RunPoint:  # fmt: skip
    """CPI_warp of one run with the run correction (Sec. V-B equations), corrected: concWG is also at most
    MaxConcWarps / warpsWG. The paper's concWG = min(MaxConcWG, WG, MaxLocalMem / localMem) leaves out the CU's
    warp limit, which only its concWarps takes; instrRun = instrKernel x WGSize x concWG then counts groups that do
    not run (256-item groups on the K80: 16 by MaxConcWG, where its 2,048 threads an SM hold 8), and CPI_warp comes
    out half the measured one."""
    wg = math.ceil(r.work_items / r.wg_size)
    by_mem = max_local_mem // r.local_mem if r.local_mem > 0 else max_conc_wg
    warps_wg = math.ceil(r.wg_size / warp_size)
    conc_wg = max(1, min(max_conc_wg, wg, by_mem, max_conc_warps // warps_wg))
    actual = r.wg_size / warps_wg
    conc_warps = min(max_conc_warps, warps_wg * conc_wg)
    total_warps = r.work_items / actual
    runs_cu = max(1, math.ceil(total_warps / nbr_cu / conc_warps))
    cycles = r.runtime_s / runs_cu * clock_hz
    instr_run = r.instr_kernel * r.wg_size * conc_wg
    cpi_cu = cycles / instr_run
    return RunPoint(
        work_items=r.work_items,
        wg_size=r.wg_size,
        conc_wg=conc_wg,
        conc_warps=conc_warps,
        actual_warp_size=actual,
        runs_cu=runs_cu,
        cycles_of_run=cycles,
        cpi_cu=cpi_cu,
        cpi_warp=cpi_cu * actual,
        concurrency=conc_warps * actual,
        performance=r.instr_kernel * r.work_items / r.runtime_s,
    )


def ridge_point(concurrency, performance, tolerance: float = 0.05) -> float:
    """The smallest concurrency whose performance is within ``tolerance`` of the peak (Sec. III)."""
    c = np.asarray(concurrency, dtype=float)
    p = np.asarray(performance, dtype=float)
    if c.size == 0:
        raise InputError("no runs to find a ridge point in")
    peak = p.max()
    ok = (peak - p) / peak < tolerance
    return float(c[ok].min())


def analyze_runs(runs: list[Run], gpu: Gpu, tolerance: float = 0.05) -> RunsReport:
    """CPI_warp per run, issue/completion latencies (Eq. 4-5), peak and ridge point."""
    if not runs:
        raise InputError("no runs given")
    c, m = gpu.compute, gpu.memory
    pts = tuple(
        run_point(
            r,
            nbr_cu=c.sms,
            clock_hz=gpu.clock_hz,
            max_conc_wg=c.max_blocks_per_sm,
            max_local_mem=m.smem_per_sm,
            max_conc_warps=c.max_threads_per_sm // c.warp_size,
            warp_size=c.warp_size,
        )
        for r in runs
    )
    cpi = [p.cpi_warp for p in pts]
    return RunsReport(
        points=pts,
        issue_latency=min(cpi),
        completion_latency=max(cpi),
        peak=max(p.performance for p in pts),
        ridge_concurrency=ridge_point([p.concurrency for p in pts], [p.performance for p in pts], tolerance),
        ridge_tolerance=tolerance,
    )


RUN_COLUMNS = ("work_items", "wg_size", "local_mem", "runtime_s")

MAX_RUNTIME_S = 1e6
"""The longest runtime a run may give, in seconds (11.6 days; 1e300 s made its cycles infinite)."""

MAX_COUNT = 2**63 - 1
"""The largest work-item count, work-group size or local memory a run may give (an int64)."""


def read_runs(path, instr_kernel: float | None = None) -> list[Run]:
    """A CSV of runs: work_items, wg_size, local_mem, runtime_s and instr_kernel (or the argument)."""
    import io

    import pandas as pd

    p = str(path)
    text = read_text(p)  # a missing file, a folder, no permission, bytes that are not UTF-8: named, one line
    try:
        df = pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{p}: not a CSV file ({one_line(exc)})") from None
    need = list(RUN_COLUMNS) + ([] if instr_kernel is not None else ["instr_kernel"])
    for col in need:
        if col not in df.columns:
            given = " (or give --instr-kernel)" if col == "instr_kernel" else ""
            raise InputError(f"{p}: column {col!r} missing{given}; expected {', '.join(need)}")
    out = []
    for i, rec in enumerate(df.to_dict("records"), start=1):
        try:
            r = Run(
                work_items=int(rec["work_items"]),
                wg_size=int(rec["wg_size"]),
                local_mem=int(rec["local_mem"]),
                runtime_s=float(rec["runtime_s"]),
                instr_kernel=float(rec["instr_kernel"] if instr_kernel is None else instr_kernel),
            )
        except (TypeError, ValueError, OverflowError) as exc:  # (int() of an infinity overflows)
            raise InputError(f"{p} row {i}: expected finite numbers ({exc})") from None
        if (r.work_items < 1 or r.wg_size < 1 or r.local_mem < 0 or not 0 < r.runtime_s <= MAX_RUNTIME_S
                or not 0 < r.instr_kernel < math.inf):  # fmt: skip
            raise InputError(
                f"{p} row {i}: work_items, wg_size, runtime_s and instr_kernel must be finite and > 0, local_mem >= 0, "
                f"runtime_s at most {MAX_RUNTIME_S:g}"
            )
        if max(r.work_items, r.wg_size, r.local_mem) > MAX_COUNT or not math.isfinite(
            r.instr_kernel * r.work_items / r.runtime_s
        ):
            raise InputError(f"{p} row {i}: work_items, wg_size or local_mem of 2^63 or more, or a rate that overflows")
        out.append(r)
    return out


# --- cache levels from a varying-size random walk ----------------------------------


@dataclass(frozen=True)
class CacheLevel:
    """One plateau of the latency curve: a cache level (or DRAM, the last, unbounded one)."""

    name: str
    latency: float
    """Completion latency (cycles): the plateau's median."""
    size_bytes: float | None
    """Capacity: where the curve leaves the plateau; None for the last level."""
    from_kb: float
    to_kb: float
    points: int

    def as_dict(self) -> dict:
        return asdict(self)


def cpmr(array_bytes, levels: list[CacheLevel]):
    """Eq. 6 for any number of levels: Lambda_1 + sum_i (Lambda_{i+1} - Lambda_i) max(0, 1 - C_i / size)."""
    s = np.asarray(array_bytes, dtype=float)
    out = np.full(s.shape, levels[0].latency, dtype=float)
    for lo, hi in zip(levels[:-1], levels[1:]):
        out = out + (hi.latency - lo.latency) * np.clip(1.0 - lo.size_bytes / s, 0.0, None)
    return out


def _segments(lat: np.ndarray, tol: float, step_tol: float) -> list[list[int]]:
    segs: list[list[int]] = []
    for i, v in enumerate(lat):
        if segs:
            med = float(np.median(lat[segs[-1]]))
            prev = lat[segs[-1][-1]]
            if abs(v - med) <= tol * med and abs(v - prev) <= step_tol * prev:
                segs[-1].append(i)
                continue
        segs.append([i])
    return segs


def _trim(seg: list[int], lat: np.ndarray, tol: float) -> list[int]:
    """Drop end points more than ``tol`` from the segment's median (the foot of a transition)."""
    seg = list(seg)
    while len(seg) > 2:
        med = float(np.median(lat[seg]))
        if abs(lat[seg[-1]] - med) > tol * med:
            seg.pop()
        elif abs(lat[seg[0]] - med) > tol * med:
            seg.pop(0)
        else:
            break
    return seg


def _flat(f: np.ndarray, lat: np.ndarray, max_slope: float) -> bool:
    """Whether latency stays within 5 % or rises by at most ``max_slope`` of its median per decade of footprint."""
    x = np.log10(f)
    med = float(np.median(lat))
    if x[-1] - x[0] <= 0 or (lat.max() - lat.min()) <= 0.05 * med:
        return True
    slope = np.polyfit(x, lat / np.median(lat), 1)[0]
    return bool(slope <= max_slope)


def cache_levels(footprint_kb, latency, *, tol: float = 0.08, step_tol: float = 0.05, min_points: int = 4,
                 max_slope: float = 0.2, kb: int = 1024) -> list[CacheLevel]:  # fmt: skip
    """The cache levels of a pointer-chase curve.

    Plateaus are runs of at least ``min_points`` points within ``tol`` of their
    median and within ``step_tol`` of their neighbour, rising by at most
    ``max_slope`` of their latency per decade of footprint (a transition rises faster);
    neighbouring plateaus within ``tol`` of each other merge (noise). A level's
    capacity is where its plateau ends: between the last point on the plateau and
    the first point above it, at the size Eq. 6 gives for that first point
    (C = s (1 - f), f its fraction of the step), but never below the last point on
    the plateau (real caches step more sharply than Eq. 6's random replacement).
    """
    f = np.asarray(footprint_kb, dtype=float)
    lat = np.asarray(latency, dtype=float)
    order = np.argsort(f, kind="stable")
    f, lat = f[order], lat[order]
    segs = [_trim(s, lat, tol / 2) for s in _segments(lat, tol, step_tol)]
    plateaus = [s for s in segs if len(s) >= min_points and _flat(f[s], lat[s], max_slope)]
    merged: list[list[int]] = []
    for s in plateaus:
        if merged:
            a, b = float(np.median(lat[merged[-1]])), float(np.median(lat[s]))
            if abs(b - a) <= tol * a:
                merged[-1] = list(range(merged[-1][0], s[-1] + 1))
                continue
        merged.append(s)
    if not merged:
        raise InputError("no plateau in the latency curve (too few points?)")
    lats = [float(np.median(lat[s])) for s in merged]
    tail = np.arange(merged[-1][-1] + 1, len(f))
    if tail.size and float(np.median(lat[tail])) > lats[-1] * (1 + tol):  # the curve rises past the last plateau
        log.warning("the last %d points (%g kB on) rise to %.0f cycles, too few for a level (%d points make one): the "
                    "last level read, %.0f cycles, is named DRAM; measure larger footprints", tail.size, f[tail[0]],
                    float(np.median(lat[tail])), min_points, lats[-1])  # fmt: skip
    levels = []
    for j, s in enumerate(merged):
        size = None
        if j + 1 < len(merged):
            lo, hi = lats[j], lats[j + 1]
            last = s[-1]
            nxt = last + 1
            size_kb = f[last]
            if nxt < len(f) and hi > lo:
                frac = (lat[nxt] - lo) / (hi - lo)
                if 0 < frac < 1:
                    size_kb = max(f[last], f[nxt] * (1.0 - frac))
            size = size_kb * kb
        name = f"L{j + 1}" if j + 1 < len(merged) else "DRAM"
        levels.append(CacheLevel(name=name, latency=lats[j], size_bytes=size, from_kb=float(f[s[0]]),
                                 to_kb=float(f[s[-1]]), points=len(s)))  # fmt: skip
    return levels


def read_chase(path) -> tuple[np.ndarray, np.ndarray]:
    """A gpu-benches ``gpu-latency`` table: iterations, clock (MHz), footprint (kB), time (ms), latency (cycles)."""
    p = str(path)
    lines = read_text(p).splitlines()  # a missing file, a folder, bytes that are not UTF-8: named, one line
    fp, lt = [], []
    for i, line in enumerate(lines, start=1):
        s = line.strip()
        if not s or s.startswith("#") or ":" in s:
            continue  # header lines such as "clock: ..."
        parts = s.replace(",", " ").split()
        try:
            vals = [float(x) for x in parts]
        except ValueError:
            if not fp:
                continue  # a column header
            raise InputError(f"{p} line {i}: expected numbers, got {quote_line(s)}") from None
        if not all(math.isfinite(v) for v in vals):
            raise InputError(f"{p} line {i}: expected finite numbers, got {quote_line(s)}")
        if vals and min(vals) <= 0:  # a footprint or a latency of 0 (log10 of the footprint; ratios of latencies)
            raise InputError(f"{p} line {i}: expected positive numbers, got {quote_line(s)}")
        if len(vals) == 5:
            fp.append(vals[2])
            lt.append(vals[4])
        elif len(vals) == 2:
            fp.append(vals[0])
            lt.append(vals[1])
        else:
            raise InputError(
                f"{p} line {i}: expected 5 columns (iterations clock footprint_kB time_ms latency) or 2 (footprint_kB latency), got {len(vals)}"
            )
    if len(fp) < 3:
        raise InputError(f"{p}: fewer than 3 data rows")
    return np.array(fp), np.array(lt)


def cache_levels_from_file(path, **kw) -> list[CacheLevel]:
    f, lat = read_chase(path)
    try:
        return cache_levels(f, lat, **kw)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
