"""A GPU configuration from a base configuration and a calibration's measurements.

The written file is a ``configs/gpus/*.toml`` like the bundled ones: the base's tables
(the catalog entry of the detected device or ``--base NAME``) with every measured value
put in its place (:data:`CONFIG_KEYS`, cache sizes into the cache strings' ways), each
with a comment naming the benchmark, the device, its driver, the date and the spread
over repetitions. Values without a comment are the base's (the header names its file,
whose comments cite their sources).

What was measured beyond the configuration's fields stays in the same file, in a
``[calibration]`` table that the GPU loader accepts and ignores (``placement.gpu``):
``[calibration]`` (device, driver, CUDA runtime, date, base, skipped benchmarks, notes),
``[calibration.measured]`` (every measured value, with the same comments),
``[calibration.dram_bits]`` (Huang & Li's row and column bits, where found) and
``[calibration.curves.NAME]`` (each curve: ``x``, ``y``, ``spread`` and their names; the
varying-size random walks among them). One file carries the configuration and the
evidence for it.

The text is validated by the loader (:func:`placement.gpu.gpu_from_dict`) before it is
written, atomically (``traces.atomic``). A measured value the loader refuses (a benchmark
gone wrong: a negative latency, a line not a multiple of the sector) is dropped, its
field keeps the base's value, and the refusal is listed with the skipped benchmarks.
"""

from __future__ import annotations

import json
import logging
import math
import tomllib
from dataclasses import asdict, replace
from typing import Any

from traces.atomic import check_output_folder, write_text

from .. import __version__
from ..catalog import CALIBRATED_SUFFIX
from ..gpu import ConfigError, Gpu, gpu_from_dict
from .measurements import Calibration, Measured, Skipped

log = logging.getLogger(__name__)

CONFIG_KEYS: dict[str, tuple[str, ...]] = {
    "sm_clock_mhz": ("compute.clock_mhz",),
    "fp32_latency": ("compute.fp_latency", "compute.avg_inst_latency"),
    "fp32_issue_cycles": ("compute.issue_cycles",),
    "dram_latency": ("memory.dram_latency",),
    "smem_latency": ("memory.smem_latency",),
    "sector_bytes": ("memory.sector_bytes",),
    "line_bytes": ("memory.line_bytes",),
    "l1_latency": ("caches.l1_latency",),
    "tex_latency": ("caches.tex_latency",),
    "const_latency": ("caches.const_latency",),
    "l2_latency": ("caches.l2_latency",),
    "launch_1_block_us": ("compute.launch_us",),
    "tex_texels_per_cycle_per_sm": ("compute.texels_per_cycle",),
    "lsu_inst_per_cycle_per_sm": ("compute.lsu_instructions_per_cycle",),
    "ro_inst_per_cycle_per_sm": ("compute.readonly_instructions_per_cycle",),
    "fp64_results_per_cycle_per_sm": ("compute.fp64_per_cycle",),
    "ro_split_inst_per_cycle_per_sm": ("compute.readonly_split_instructions_per_cycle",),
    "ldg_split_inst_per_cycle_per_sm": ("compute.global_split_instructions_per_cycle",),
    "dram_row_hit_ns": ("dram.row_hit_ns",),
    "dram_row_miss_ns": ("dram.row_miss_ns",),
    "dram_row_conflict_ns": ("dram.row_conflict_ns",),
}
"""Measurement -> the configuration fields it sets. ``avg_inst_latency`` takes the FP32
latency, as the bundled configurations do (Huang & Li's Appendix: the FP latency stands for
the mean). ``compute.launch_per_block_ns`` is derived from the launches of 1 and 65,536 blocks
(:data:`LAUNCH_SPAN`). ``memory.bandwidth_gbs`` stays the datasheet peak: the models apply the
sustained fraction to it (placement.models.params), and the measured copy bandwidth gives the GPU's own,
``memory.dram_sustained_fraction`` (:data:`DRAM_COPY`)."""

CACHE_SIZE_KEYS: dict[str, str] = {"l1_bytes": "l1", "l2_bytes": "l2", "const_bytes": "const", "tex_bytes": "tex"}
"""Measured capacities -> the cache string whose ways they set (sets and line as the base's;
``l2_bytes`` over ``l2_slices``; ``tex`` only where it is its own array)."""

LAUNCH_SPAN = ("launch_1_block_us", "launch_65536_blocks_us", 65536)
"""The two empty-kernel launches whose difference over the blocks between them gives ``compute.launch_per_block_ns``."""

ATOMIC_SAME = "atomic_global_same_gops"
"""Every thread of the GPU adding to one global counter, in G adds per second: each lane on the one word is one
update (the L2 does a warp's lanes on one word one after the other: 0.74 ns a lane for 1 to 32 lanes on an H100,
``cachesim.atomics``), so ``memory.l2_atomic_interval_ns`` = 1 / this (``placement.hms.t_atomic``)."""

ATOMIC_SPREAD = ("atomic_global_one_word_gops", "atomic_global_32_sectors_gops")
"""Every warp adding to one word, and to word 0 of 32 sectors (1 KiB): the second runs as many times faster as atomic
units share the KiB (``cachesim.atomics``), so each serves 1 KiB / that many bytes at a time:
``memory.l2_atomic_unit_bytes``, the power of two nearest, from one sector (32 B) to the KiB."""

SHARED_ATOMICS = ("atomic_shared_distinct_gops", "atomic_shared_same_gops")
"""Every thread of the GPU adding to a shared-memory word of its own (distinct) or its block's one word (same), in G
adds per second over the GPU: over the SMs and the clock, the lanes an SM serves a cycle, so that a warp-instruction
takes ``memory.smem_atomic_cycles`` = warp size / the distinct rate, and each further lane on one word
``memory.smem_atomic_lane_cycles`` = (warp size / the same rate - that) / (warp size - 1) (``cachesim``'s walk)."""

DRAM_COPY = "dram_copy_gbs"
"""The copy kernel's GB/s (float4, reads and writes as kernels mix them, counted both ways; STREAM's copy) over the
datasheet's ``memory.bandwidth_gbs`` is ``memory.dram_sustained_fraction``, the share the models space DRAM requests
by (``placement.hms.dram_bandwidth_gbs``; until 30 Nov 2026 always the architecture's). The H100's 2,789 GB/s of 3,350
are 0.83 (h100-placements/microbenchmarks.csv; its read and write kernels reach 0.91 and 0.93), the H200's 3,584 of
4,800 0.75, where Hopper's share was 0.86 for both. A share above 1 (a datasheet below the GPU) is not written."""

L1_QUARTERS = ("ldg_quarters_same_inst_per_cycle_per_sm", "ldg_quarters_apart_inst_per_cycle_per_sm")
"""Plain L1-hit loads in four 8-lane quarters on four lines, the quarters in the same banks and in others
(warp-instructions a cycle and SM): the second rate over the first is the first load's time over the second's,
``memory.l1_bank_ratio``, which decides whether the model reads the GPU's L1 through the shared memory's banks
(``placement.memory.l1_data_banks_of``)."""

_INT_FIELDS = {"memory.sector_bytes", "memory.line_bytes"}


def atomic_unit_bytes(units: float, span: int, sector: int) -> int:
    """The bytes each atomic unit serves at a time when ``span`` bytes were spread over ``units`` of them: span /
    units, to the power of two nearest (in log), at least one sector and at most the span."""
    raw = span / max(units, 1e-9)
    return int(min(span, max(sector, 2 ** round(math.log2(raw)))))


SECTIONS = ("compute", "memory", "caches", "dram")


def base_tables(g: Gpu) -> dict[str, Any]:
    """A configuration's tables, as its TOML holds them."""
    d = asdict(g)
    d.pop("path", None)
    d["compute_capability"] = list(g.compute_capability)
    for k, v in d["dram"].items():
        if isinstance(v, tuple):
            d["dram"][k] = list(v)
    return d


def resize_cache(string: str, size_bytes: float) -> str:
    """A GPGPU-Sim cache string ``kind:nsets:line:ways,policy`` holding ``size_bytes``: the
    sets and line kept, the ways rounded (at least 1)."""
    geom, sep, policy = string.partition(",")
    kind, nsets, line, _ = geom.split(":")
    ways = max(1, round(size_bytes / (int(nsets) * int(line))))
    return f"{kind}:{nsets}:{line}:{ways}{sep}{policy}"


def comment(m: Measured, cal: Calibration) -> str:
    """The comment of a measured value: benchmark, device, driver, date, spread."""
    d = cal.device
    where = f"{d.name}, driver {d.driver or 'unknown'}, {cal.date}"
    origin = f" (recorded: {m.source})" if m.source else ""
    return f"{m.benchmark}{origin}: {where}; {m.stat.describe(m.unit)}"


def calibrated_tables(
    base: Gpu, cal: Calibration, drop: frozenset[str] = frozenset()
) -> tuple[dict, dict[str, str], list[str]]:
    """The base's tables with the measured values in place: (tables, comments by
    ``section.key``, the measurement keys used). Measurements in ``drop`` are left out."""
    t = base_tables(base)
    t["name"] = f"{base.name}{CALIBRATED_SUFFIX}"
    t["description"] = f"{cal.device.name} measured by placement calibrate on {cal.date} (base: {base.name})"
    notes: dict[str, str] = {}
    used: list[str] = []
    for key, fields in CONFIG_KEYS.items():
        m = cal.measured.get(key)
        if m is None or key in drop:
            continue
        for f in fields:
            section, name = f.split(".")
            v = m.value
            t[section][name] = round(v) if f in _INT_FIELDS else float(v)
            notes[f] = comment(m, cal)
        used.append(key)
    one_key, many_key, blocks = LAUNCH_SPAN
    one, many = cal.measured.get(one_key), cal.measured.get(many_key)
    if one is not None and many is not None and many.value >= one.value and not {one_key, many_key} & drop:
        t["compute"]["launch_per_block_ns"] = (many.value - one.value) * 1e3 / (blocks - 1)
        notes["compute.launch_per_block_ns"] = (f"({many_key} {many.value:.3f} - {one_key} {one.value:.3f}) us / "
                                                f"{blocks - 1} blocks: {comment(many, cal)}")  # fmt: skip
        used.append(many_key)
    atom = cal.measured.get(ATOMIC_SAME)
    if atom is not None and atom.value > 0 and ATOMIC_SAME not in drop:
        t["memory"]["l2_atomic_interval_ns"] = 1.0 / atom.value
        notes["memory.l2_atomic_interval_ns"] = (f"1 / {ATOMIC_SAME} {atom.value:.4g} G/s (each lane on the one "
                                                 f"address is one update): {comment(atom, cal)}")  # fmt: skip
        used.append(ATOMIC_SAME)
    one, spread = (cal.measured.get(k) for k in ATOMIC_SPREAD)
    if one is not None and spread is not None and one.value > 0 and spread.value > 0 and not set(ATOMIC_SPREAD) & drop:
        sector = t["memory"].get("sector_bytes", base.memory.sector_bytes)
        units = spread.value / one.value  # the units the KiB's 32 sectors are spread over
        t["memory"]["l2_atomic_unit_bytes"] = atomic_unit_bytes(units, 32 * sector, sector)
        notes["memory.l2_atomic_unit_bytes"] = (f"{32 * sector} B / ({ATOMIC_SPREAD[1]} {spread.value:.4g} G/s over "
                                                f"{ATOMIC_SPREAD[0]} {one.value:.4g} = {units:.3g} units), the power of "
                                                f"two nearest: {comment(spread, cal)}")  # fmt: skip
        used.extend(ATOMIC_SPREAD)
    dist, same = (cal.measured.get(k) for k in SHARED_ATOMICS)
    if dist is not None and same is not None and dist.value > 0 and same.value > 0 and not set(SHARED_ATOMICS) & drop:
        clock = t["compute"].get("clock_mhz", base.compute.clock_mhz)
        w, sms = base.compute.warp_size, t["compute"].get("sms", base.compute.sms)
        per_warp = [w / (g.value * 1e3 / sms / clock) for g in (dist, same)]  # G/s -> lanes a cycle an SM -> cycles
        t["memory"]["smem_atomic_cycles"] = per_warp[0]
        t["memory"]["smem_atomic_lane_cycles"] = max(0.0, (per_warp[1] - per_warp[0]) / (w - 1))
        notes["memory.smem_atomic_cycles"] = (f"{w} lanes / ({SHARED_ATOMICS[0]} {dist.value:.4g} G/s over {sms} SMs "
                                              f"at {clock:.0f} MHz): {comment(dist, cal)}")  # fmt: skip
        notes["memory.smem_atomic_lane_cycles"] = (f"({w} lanes / ({SHARED_ATOMICS[1]} {same.value:.4g} G/s over "
                                                   f"{sms} SMs) = {per_warp[1]:.3g} - {per_warp[0]:.3g}) / {w - 1} "
                                                   f"further lanes: {comment(same, cal)}")  # fmt: skip
        used.extend(SHARED_ATOMICS)
    copy = cal.measured.get(DRAM_COPY)
    if copy is not None and copy.value > 0 and DRAM_COPY not in drop:
        peak = t["memory"].get("bandwidth_gbs", base.memory.bandwidth_gbs)
        if copy.value <= peak:
            t["memory"]["dram_sustained_fraction"] = copy.value / peak
            notes["memory.dram_sustained_fraction"] = (f"{DRAM_COPY} {copy.value:.0f} GB/s over the datasheet's "
                                                       f"{peak:.0f}: {comment(copy, cal)}")  # fmt: skip
            used.append(DRAM_COPY)
    same, apart = (cal.measured.get(k) for k in L1_QUARTERS)
    if same is not None and apart is not None and same.value > 0 and apart.value > 0 and not set(L1_QUARTERS) & drop:
        t["memory"]["l1_bank_ratio"] = apart.value / same.value
        notes["memory.l1_bank_ratio"] = (f"{L1_QUARTERS[1]} {apart.value:.4g} over {L1_QUARTERS[0]} {same.value:.4g} "
                                         f"(the same-bank quarters' time over the others'): {comment(same, cal)}")  # fmt: skip
        used.extend(L1_QUARTERS)
    for key, cache in CACHE_SIZE_KEYS.items():
        m = cal.measured.get(key)
        if m is None or key in drop:
            continue
        c = t["caches"]
        if not c[cache].strip():
            continue  # no array of its own (texture on a unified L1): recorded only
        per_copy = m.value / c["l2_slices"] if cache == "l2" else m.value
        c[cache] = resize_cache(c[cache], per_copy)
        over = f" over {c['l2_slices']} slices" if cache == "l2" else ""
        notes[f"caches.{cache}"] = f"{comment(m, cal)}; capacity {m.value:.0f} B{over}"
        used.append(key)
    bits = cal.address_bits
    if bits is not None and bits.found and "dram_bits" not in drop:
        d = t["dram"]
        d["mapping"] = ""
        d["row_bits"], d["column_bits"] = list(bits.row_bits), list(bits.column_bits)
        low = min(bits.column_bits + bits.row_bits + bits.other_bits)
        d["byte_bits"] = list(range(low))
        src = f"dram_bits (Huang & Li Algorithm 1): {cal.device.name}, driver {cal.device.driver or 'unknown'}, {cal.date}"
        notes["dram.row_bits"] = notes["dram.column_bits"] = src
        notes["dram.mapping"] = "the measured row and column bits replace the base's mapping string"
        notes["dram.byte_bits"] = f"bits below {low}: inside one fetch, not tested"
        used.append("dram_bits")
    return t, notes, used


# --- TOML text ---------------------------------------------------------------------------


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"not a finite number: {v}")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_scalar(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _line(key: str, v: Any, note: str | None) -> str:
    text = f"{key} = {_scalar(v)}"
    return f"{text}  # {' '.join(note.split())}" if note else text


def _array_lines(key: str, values, per_line: int = 8) -> list[str]:
    vals = [_scalar(float(v)) for v in values]
    if len(vals) <= per_line:
        return [f"{key} = [{', '.join(vals)}]"]
    out = [f"{key} = ["]
    for i in range(0, len(vals), per_line):
        out.append("    " + ", ".join(vals[i : i + per_line]) + ",")
    out.append("]")
    return out


def render(base: Gpu, cal: Calibration, tables: dict, notes: dict[str, str], skipped: list[Skipped]) -> str:
    """The configuration file's text."""
    d = cal.device
    out = [
        (
            f"# {d.name} (compute capability {d.cc[0]}.{d.cc[1]}, {d.sms} SMs), measured by `placement calibrate`"
            f"{' --quick' if cal.quick else ''} on {cal.date}"
        ),
        f"# (gpu-placement {__version__}; NVIDIA driver {d.driver or 'unknown'}, CUDA runtime {d.runtime or 'unknown'}).",
        f"# Base: {base.name} ({base.path or 'the GPU catalog'}): every value without a comment is the base's,",
        "# whose file cites its sources. A value with a comment was measured on this GPU: the comment names",
        "# the benchmark (placement/calibrate/benchmarks.py) and the spread over repetitions. Latencies are",
        "# cycles at the measured SM clock (compute.clock_mhz). The [calibration] tables keep every measured",
        "# value and curve; the GPU loader ignores them.",
    ]
    for k in ("name", "description", "arch", "compute_capability"):
        out.append(_line(k, tables[k], None))
    for section in SECTIONS:
        out.append("")
        out.append(f"[{section}]")
        for k, v in tables[section].items():
            out.append(_line(k, v, notes.get(f"{section}.{k}")))
    out += ["", "[calibration]"]
    out.append(_line("device", d.name, None))
    out.append(_line("driver", d.driver, None))
    out.append(_line("cuda_runtime", d.runtime, None))
    out.append(_line("date", cal.date, None))
    out.append(_line("base", base.name, None))
    out.append(_line("quick", cal.quick, None))
    out.append(_line("tool", f"gpu-placement {__version__}", None))
    out.append(_line("skipped", [f"{s.benchmark}: {s.reason}" for s in skipped], None))
    out.append(_line("notes", list(cal.notes), None))
    if cal.measured:
        out += ["", "[calibration.measured]"]
        for k in sorted(cal.measured):
            m = cal.measured[k]
            out.append(_line(k, float(m.value), f"{m.unit}; {comment(m, cal)}"))
    bits = cal.address_bits
    if bits is not None:
        out += ["", "[calibration.dram_bits]"]
        out.append(_line("found", bits.found, "Huang & Li Algorithm 1"))
        out.append(_line("column_bits", list(bits.column_bits), None))
        out.append(_line("row_bits", list(bits.row_bits), None))
        out.append(_line("other_bits", list(bits.other_bits), None))
        if bits.reason:
            out.append(_line("reason", bits.reason, None))
    for name in sorted(cal.curves):
        c = cal.curves[name]
        out += ["", f"[calibration.curves.{name}]"]
        out.append(_line("x_name", c.x_name, None))
        out.append(_line("y_name", c.y_name, None))
        out += _array_lines("x", c.x)
        out += _array_lines("y", c.y)
        if c.spread:
            out += _array_lines("spread", c.spread)
    return "\n".join(out) + "\n"


def build_config(path, base: Gpu, cal: Calibration) -> tuple[str, Gpu, list[Skipped]]:
    """(text, validated Gpu, skips) of the calibrated configuration; a measured value the
    loader refuses is dropped (the base's value stays) and listed in the skips."""
    drop: set[str] = set()
    skipped = list(cal.skipped)
    for _ in range(len(cal.measured) + 2):
        tables, notes, used = calibrated_tables(base, cal, frozenset(drop))
        text = render(base, cal, tables, notes, skipped)
        try:
            g = gpu_from_dict(tomllib.loads(text), str(path))
        except ConfigError as exc:
            culprit = _measurement_of(exc.key, used)
            if culprit is None:
                raise
            log.warning("measured %s refused by the GPU loader (%s); the base's value is kept", culprit, exc)
            drop.add(culprit)
            skipped.append(Skipped(f"writer: {culprit}", f"refused by the GPU loader: {exc}"))
            continue
        return text, g, skipped
    raise ConfigError(path, None, "the calibrated configuration could not be made valid")  # pragma: no cover


def _measurement_of(field: str | None, used: list[str]) -> str | None:
    """The measurement behind a refused configuration field (None: a base field)."""
    if not field:
        return None
    for key in used:
        if field in CONFIG_KEYS.get(key, ()):
            return key
        if key in CACHE_SIZE_KEYS and field == f"caches.{CACHE_SIZE_KEYS[key]}":
            return key
        if key == "dram_bits" and field.startswith("dram."):
            return key
    if field == "memory.line_bytes" and "sector_bytes" in used:
        return "sector_bytes"
    if field == "memory.l1_bank_ratio" and L1_QUARTERS[0] in used:
        return L1_QUARTERS[0]
    return None


def write_config(path, base: Gpu, cal: Calibration) -> tuple[Gpu, Calibration]:
    """Validate and write the calibrated configuration atomically; returns it (loaded) and
    the calibration with the writer's refusals added to its skips."""
    check_output_folder(path)
    text, g, skipped = build_config(path, base, cal)
    write_text(path, text)
    return g, replace(cal, skipped=tuple(skipped))
