"""GPU configurations: ``configs/gpus/*.toml`` loaded into frozen dataclasses.

A configuration has four tables, each a dataclass below: ``[compute]`` (the SM and
its occupancy limits), ``[memory]`` (bandwidth, latencies, shared and constant
memory, texture limits), ``[caches]`` (GPGPU-Sim cache strings and hit latencies)
and ``[dram]`` (address mapping and row-buffer timings). Every key is required
unless its field has a default here; unknown keys are refused with the list of
known ones, so a typo never passes silently. Each number in the files carries its
source in a comment.
"""

from __future__ import annotations

import logging
import math
import os
import typing
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traces.errors import InputError, shown
from traces.tomlfile import load_toml

from .resources import config_dir

if TYPE_CHECKING:  # pragma: no cover
    from . import catalog

log = logging.getLogger(__name__)


class ConfigError(InputError):
    """A configuration file that is missing a key or holds an impossible value."""

    def __init__(self, path, key: str | None, message: str):
        self.path = str(path)
        self.key = key
        where = f"{self.path}: {key}" if key else self.path
        super().__init__(f"{where}: {message}")


# Value constraints, declared once: key -> (minimum, maximum); None for no bound.
_POSITIVE = (1e-12, None)
_NONNEG = (0, None)


@dataclass(frozen=True)
class Compute:
    """The streaming multiprocessor and its occupancy limits (CUDA occupancy calculator terms)."""

    sms: int
    cores_per_sm: int
    sfus_per_sm: int
    clock_mhz: float
    warp_size: int
    issue_cycles: float
    """Cycles to issue one warp-instruction (Hong & Kim Table 1, Issue_cycles)."""
    fp_latency: float
    """FP instruction latency in cycles (Sim et al. Table 3, FP lat)."""
    avg_inst_latency: float
    """Mean dependent-issue latency of an instruction in cycles (GPUPerf avg_inst_lat)."""
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    max_regs_per_block: int
    max_regs_per_thread: int
    reg_alloc_unit: int
    reg_alloc_granularity: str
    """'warp' (registers allocated per warp, rounded to reg_alloc_unit) or 'block'."""
    warp_alloc_granularity: int
    launch_us: float = 0.0
    """The launch cost: an empty kernel of one block between two CUDA events, in microseconds (0: not known;
    ``placement calibrate`` measures it). Every predicted time includes it (``placement.hms.t_launch``)."""
    launch_per_block_ns: float = 0.0
    """What each further block adds to an empty kernel's time, in ns: the rate at which the GPU starts and
    retires blocks (0: not known). A kernel takes at least its blocks x this, its own work overlapped."""
    texels_per_cycle: float = 0.0
    """Texels an SM's texture units fetch per cycle, measured (``placement calibrate``'s ``texture``); 0: the
    architecture's from its texture units per SM (``placement.memory.texels_per_cycle_of``)."""
    fp64_per_cycle: float = 0.0
    """Double-precision results (add, multiply, FMA) an SM completes per cycle, where the configuration knows its
    GPU's own; 0: the architecture's (``placement.memory.fp64_per_cycle_of``)."""
    lsu_instructions_per_cycle: float = 0.0
    """Warp-instructions an SM's load/store pipe issues per cycle, measured (``placement calibrate``'s ``lsu``); 0:
    the architecture's (``placement.memory.lsu_instructions_per_cycle_of``)."""
    readonly_instructions_per_cycle: float = 0.0
    """Read-only loads (``__ldg``, LDG.E.CONSTANT) an SM issues per cycle where they hit in the L1, measured
    (``placement calibrate``'s ``loads``); 0: as the load/store pipe's other instructions
    (``placement.memory.readonly_instructions_per_cycle_of``)."""
    readonly_split_instructions_per_cycle: float = 0.0
    """Read-only loads an SM issues per cycle where each warp's lanes touch two lines (a stencil's shifted taps),
    measured (``placement calibrate``'s ``loads``, ``ro_split``); 0: at the one-line rate
    (``placement.memory.readonly_split_instructions_per_cycle_of``)."""
    global_split_instructions_per_cycle: float = 0.0
    """Plain global loads an SM issues per cycle where they hit in the L1 and each warp's lanes touch two lines,
    measured (``placement calibrate``'s ``loads``, ``ldg_split``); 0: as the load/store pipe's other instructions
    (``placement.memory.global_split_instructions_per_cycle_of``)."""


@dataclass(frozen=True)
class Memory:
    """Off-chip bandwidth and latencies, shared and constant memory, texture limits."""

    bandwidth_gbs: float
    dram_latency: float
    """Baseline DRAM access latency in cycles (Hong & Kim Mem_LD, Sim et al. DRAM lat)."""
    departure_del_coal: float
    departure_del_uncoal: float
    sector_bytes: int
    line_bytes: int
    smem_per_sm: int
    smem_per_block: int
    smem_alloc_unit: int
    smem_reserved_per_block: int
    smem_banks: int
    smem_bank_bytes: int
    smem_latency: float
    const_bank_bytes: int
    tex1d_max_elems: int
    tex2d_max_width: int
    tex2d_max_height: int
    l2_atomic_interval_ns: float = 0.0
    """The time between two global atomic updates by one of the L2's atomic units, in ns (a warp-instruction's
    lanes in one 32-B sector are one update, k lanes on one word k updates; 0: not known). A kernel lasts at least
    its busiest unit's updates times this (``placement.hms.t_atomic``, ``cachesim.atomics``); ``placement
    calibrate`` measures it with every thread of the GPU adding to one counter (one update a thread)."""
    l2_atomic_unit_bytes: int = 0
    """The interleave of the L2's atomic units: each serves this many bytes of the address space at a time,
    round-robin over ``caches.l2_slices`` x ``caches.l2_slice_bytes`` / this units (0: each sector counts
    alone). Measured with ``benchmarks/atomic_contention.py`` (``cachesim.atomics``)."""
    smem_atomic_cycles: float = 0.0
    """Cycles of the SM's shared-memory path a warp's atomic on 32 distinct words takes (0: priced as a load, by its
    bank conflicts); ``placement calibrate``: warp size over its distinct-address shared atomics per cycle an SM."""
    smem_atomic_lane_cycles: float = 0.0
    """Cycles each further lane on one word adds to a shared atomic (serialized); ``placement calibrate``: from its
    same-address shared atomics per cycle an SM, over the warp's 31 further lanes."""
    dram_sustained_fraction: float = 0.0
    """The share of ``bandwidth_gbs`` this GPU's DRAM sustains (0: its architecture's ``dram_sustained_fraction``,
    ``configs/architectures.toml``); ``placement calibrate``: its copy kernel's bandwidth over the datasheet's (an H200:
    3.58 TB/s of 4.8, 0.75; the H100 2.79 of 3.35, 0.83; Hopper's was 0.86 for both); a catalog row: its
    ``dram_share`` column (``configs/catalog.csv``)."""
    l1_bank_ratio: float = 0.0
    """The time of an L1-hit warp-load whose four 8-lane quarters read the same words of four lines (the same 8 of
    the 32 banks) over one whose quarters read different words of the same four lines, measured (``placement
    calibrate``'s ``loads``: 4 where the L1 reads its data through the shared memory's banks, a 4-way conflict, 1
    where it does not); 0: not measured, the architecture's ``l1_data_banks``
    (``placement.memory.l1_data_banks_of``)."""


@dataclass(frozen=True)
class Caches:
    """Caches as GPGPU-Sim cache strings (``N|S:nsets:line:assoc,repl:write:alloc:wralloc:index,...``),
    and which loads each one serves.

    ``l1`` is the per-SM L1 array ("" for none); ``l2`` describes one L2 slice, of
    which there are ``l2_slices``; consecutive ``l2_slice_bytes`` of the address space go to
    consecutive slices (a power of two, at least the L2 line: the interleave of GPGPU-Sim's
    address mapping, ``dramid@8`` = 256 B, in every bundled configuration). Which loads go where
    is stated, not assumed:

    - ``global_in_l1``: global loads are cached in the L1 by default (Fermi and
      Volta and later: yes; Kepler, Maxwell and Pascal: no, they go to the L2);
    - ``readonly_cache``: the per-SM cache that serves loads through the read-only
      data path (``__ldg``, ``const __restrict__``; the placement space R): "tex"
      (Kepler GK110/GK210's 48 KB texture path, Maxwell's and Pascal's unified
      L1/texture cache), "l1" (Volta and later: the unified L1) or "none" (Fermi,
      GK104 and older: no such path, so R is illegal);
    - ``l1_tex_unified``: texture and read-only requests use the L1's array (one
      tag store, the ``l1`` string; ``tex`` must then be ""), as on Maxwell and
      later.

    Latencies are hit latencies in cycles, per path: a texture request that hits
    the unified array still takes ``tex_latency``.
    """

    l1: str
    tex: str
    const: str
    l2: str
    l2_slices: int
    l2_slice_bytes: int
    l1_latency: float
    tex_latency: float
    const_latency: float
    l2_latency: float
    global_in_l1: bool
    readonly_cache: str
    l1_tex_unified: bool


@dataclass(frozen=True)
class Dram:
    """DRAM address mapping and row-buffer service times.

    The bank of an address is given either by a GPGPU-Sim mapping string
    (``mapping``) or by the bit lists: the bits that are neither row, column nor
    byte bits identify the bank (Huang & Li Sec. III-C2). Service times are in ns.
    """

    row_hit_ns: float
    row_miss_ns: float
    row_conflict_ns: float
    channels: int
    mapping: str = ""
    row_bits: tuple[int, ...] = ()
    column_bits: tuple[int, ...] = ()
    byte_bits: tuple[int, ...] = ()


@dataclass(frozen=True)
class Gpu:
    """One GPU configuration (a file in ``configs/gpus``)."""

    name: str
    description: str
    arch: str
    compute_capability: tuple[int, int]
    compute: Compute
    memory: Memory
    caches: Caches
    dram: Dram
    path: str = ""

    @property
    def clock_hz(self) -> float:
        return self.compute.clock_mhz * 1e6

    def cycles_to_ns(self, cycles: float) -> float:
        return cycles * 1e3 / self.compute.clock_mhz

    def ns_to_cycles(self, ns: float) -> float:
        return ns * self.compute.clock_mhz / 1e3


ARCHES = ("tesla", "fermi", "kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")

# Bounds of each numeric key (inclusive); keys not listed must be > 0. Every number
# must also be finite and at most MAX_INT (integers) or MAX_FLOAT: no count, size or
# latency of a GPU comes near them, and below them the model's arithmetic stays finite.
# The counts the cache and DRAM simulation allocate per unit are bounded tighter:
# SMs, L2 slices and DRAM channels at 4096 each, and MAX_CACHE_LINES (below).
MAX_INT = 1 << 40
MAX_FLOAT = 1e15
MAX_UNITS = 4096
_BOUNDS: dict[str, tuple[float | None, float | None]] = {
    "sms": (1, MAX_UNITS),
    "l2_slices": (1, MAX_UNITS),
    "channels": (1, MAX_UNITS),
    "compute_capability": (0, 99),
    "row_bits": (0, 63),
    "column_bits": (0, 63),
    "byte_bits": (0, 63),
    "warp_size": (32, 32),
    "smem_reserved_per_block": _NONNEG,
    "departure_del_coal": _NONNEG,
    "departure_del_uncoal": _NONNEG,
    "smem_bank_bytes": (4, 8),
    "max_regs_per_thread": (1, 255),
    "launch_us": _NONNEG,
    "launch_per_block_ns": _NONNEG,
    "texels_per_cycle": _NONNEG,
    "fp64_per_cycle": _NONNEG,
    "lsu_instructions_per_cycle": _NONNEG,
    "readonly_instructions_per_cycle": _NONNEG,
    "readonly_split_instructions_per_cycle": _NONNEG,
    "global_split_instructions_per_cycle": _NONNEG,
    "l2_atomic_interval_ns": _NONNEG,
    "l2_atomic_unit_bytes": _NONNEG,
    "smem_atomic_cycles": _NONNEG,
    "smem_atomic_lane_cycles": _NONNEG,
    "dram_sustained_fraction": (0, 1),
    "l1_bank_ratio": (0, 32),
}
READONLY_CACHES = ("tex", "l1", "none")
_CHOICES = {"reg_alloc_granularity": ("warp", "block"), "arch": ARCHES, "readonly_cache": READONLY_CACHES}


def _check_value(path: str, key: str, value: Any, kind: Any) -> Any:
    origin = typing.get_origin(kind)
    name = key.rsplit(".", 1)[-1]
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, key, f"expected true or false, got {shown(value)}")
        return value
    if kind is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(path, key, f"expected an integer, got {shown(value)}")
    elif kind is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ConfigError(path, key, f"expected a number, got {shown(value)}")
        if not (isinstance(value, float) or abs(value) <= MAX_FLOAT) or not math.isfinite(value):
            raise ConfigError(path, key, f"expected a finite number, got {shown(value)}")
        value = float(value)
    elif kind is str:
        if not isinstance(value, str):
            raise ConfigError(path, key, f"expected a string, got {shown(value)}")
        choices = _CHOICES.get(name)
        if choices and value not in choices:
            raise ConfigError(path, key, f"expected one of {', '.join(choices)}, got {shown(value)}")
        return value
    elif origin is tuple:
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise ConfigError(path, key, f"expected a list of integers, got {shown(value)}")
        args = typing.get_args(kind)
        if args and args[-1] is not Ellipsis and len(value) != len(args):
            raise ConfigError(path, key, f"expected {len(args)} integers, got {shown(value)}")
        lo, hi = _BOUNDS.get(name, (0, MAX_INT))
        if any(not lo <= v <= hi for v in value):
            raise ConfigError(path, key, f"expected integers in [{lo}, {hi}], got {shown(value)}")
        return tuple(value)
    else:  # pragma: no cover - a field type this loader does not know
        raise TypeError(kind)
    lo, hi = _BOUNDS.get(name, _POSITIVE)
    if hi is None:
        hi = MAX_INT if kind is int else MAX_FLOAT
    if (lo is not None and value < lo) or value > hi:
        top = f"{hi:g}" if isinstance(hi, float) else str(hi)
        if lo == _POSITIVE[0]:
            raise ConfigError(path, key, f"must be > 0 and at most {top}, got {shown(value)}")
        raise ConfigError(path, key, f"must be in [{lo}, {top}], got {shown(value)}")
    return value


def _build(cls, table: Any, path: str, prefix: str):
    if not isinstance(table, dict):
        raise ConfigError(path, prefix.rstrip(".") or None, "expected a table")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in fields(cls)} - {"path"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(path, prefix + unknown[0], f"unknown key; known keys: {', '.join(sorted(known))}")
    values = {}
    for f in fields(cls):
        if f.name == "path":
            continue
        key = prefix + f.name
        kind = hints[f.name]
        if f.name not in table:
            if f.default is MISSING:
                raise ConfigError(path, key, "missing key")
            continue
        if isinstance(kind, type) and kind in _SECTIONS:
            values[f.name] = _build(kind, table[f.name], path, key + ".")
        else:
            values[f.name] = _check_value(path, key, table[f.name], kind)
    return cls(**values)


_SECTIONS = (Compute, Memory, Caches, Dram)


def _cross_checks(g: Gpu) -> None:
    c, m, d = g.compute, g.memory, g.dram
    p = g.path
    if c.max_threads_per_sm % c.warp_size:
        raise ConfigError(p, "compute.max_threads_per_sm", f"must be a multiple of the warp size {c.warp_size}")
    if c.max_threads_per_block > c.max_threads_per_sm:
        raise ConfigError(p, "compute.max_threads_per_block", "exceeds compute.max_threads_per_sm")
    if c.max_regs_per_block > c.regs_per_sm:
        raise ConfigError(p, "compute.max_regs_per_block", "exceeds compute.regs_per_sm")
    if m.smem_per_block > m.smem_per_sm:
        raise ConfigError(p, "memory.smem_per_block", "exceeds memory.smem_per_sm")
    if m.line_bytes % m.sector_bytes:
        raise ConfigError(p, "memory.line_bytes", "must be a multiple of memory.sector_bytes")
    if not d.mapping and not (d.row_bits and d.column_bits):
        raise ConfigError(p, "dram.mapping", "give either a mapping string or both row_bits and column_bits")
    if not d.row_hit_ns <= d.row_miss_ns <= d.row_conflict_ns:
        raise ConfigError(p, "dram.row_hit_ns", "expected row_hit_ns <= row_miss_ns <= row_conflict_ns")
    k = g.caches
    if k.global_in_l1 and not k.l1.strip():
        raise ConfigError(p, "caches.global_in_l1", "is true but caches.l1 is empty (no L1 to cache global loads in)")
    if k.l1_tex_unified and not k.l1.strip():
        raise ConfigError(p, "caches.l1_tex_unified", "is true but caches.l1 is empty (no L1 array to share)")
    if k.l1_tex_unified and k.tex.strip():
        raise ConfigError(
            p, "caches.tex", 'must be "" when caches.l1_tex_unified is true (texture requests use the l1 array)'
        )
    if k.readonly_cache == "l1" and not k.l1.strip():
        raise ConfigError(p, "caches.readonly_cache", 'is "l1" but caches.l1 is empty')
    if k.readonly_cache == "tex" and not (k.tex.strip() or k.l1_tex_unified):
        raise ConfigError(p, "caches.readonly_cache", 'is "tex" but there is no texture cache (caches.tex is empty)')
    bits = list(d.row_bits) + list(d.column_bits) + list(d.byte_bits)
    if len(bits) != len(set(bits)):
        raise ConfigError(p, "dram.row_bits", "row, column and byte bits must not overlap")


CALIBRATION_TABLE = "calibration"
"""A top-level table that ``placement calibrate`` writes beside the configuration (what it
measured, its curves, what it skipped: placement.calibrate.writer); accepted and ignored."""


def gpu_from_dict(data: dict, path: str) -> Gpu:
    """Validate a configuration given as the TOML's tables (``name``, ``arch``, ...,
    ``compute``, ``memory``, ``caches``, ``dram``) and build it; ``path`` names its
    origin in every error (a file, or ``catalog.csv:NAME``)."""
    top = {
        "name",
        "description",
        "arch",
        "compute_capability",
        "compute",
        "memory",
        "caches",
        "dram",
        CALIBRATION_TABLE,
    }
    unknown = sorted(set(data) - top)
    if unknown:
        raise ConfigError(path, unknown[0], f"unknown key; known keys: {', '.join(sorted(top))}")
    if CALIBRATION_TABLE in data:
        if not isinstance(data[CALIBRATION_TABLE], dict):
            raise ConfigError(path, CALIBRATION_TABLE, "expected a table")
        data = {k: v for k, v in data.items() if k != CALIBRATION_TABLE}
    g = _build(Gpu, data, path, "")
    g = Gpu(**{f.name: getattr(g, f.name) for f in fields(Gpu) if f.name != "path"}, path=path)
    _cross_checks(g)
    _check_simulation(g)
    return g


def load_gpu(path: str | Path) -> Gpu:
    """Load and validate one configuration file."""
    p = str(path)
    return gpu_from_dict(load_toml(p), p)


# The key of a configuration behind each field cachesim names in its errors.
_SIM_KEYS = {"l1": "caches.l1", "tex": "caches.tex", "const": "caches.const", "l2": "caches.l2",
             "l2_slice_bytes": "caches.l2_slice_bytes", "mapping": "dram.mapping", "channels": "dram.channels",
             "row_bits": "dram.row_bits", "column_bits": "dram.column_bits", "byte_bits": "dram.byte_bits",
             "atomic_unit_bytes": "memory.l2_atomic_unit_bytes", "atomic_units": "memory.l2_atomic_unit_bytes"}  # fmt: skip
MAX_CACHE_LINES = 1 << 24
"""Lines of one cache over all its copies (per SM, or L2 slices): 16 Mi lines, 2 GiB of
128-byte lines, far above any GPU (an H100's 50 MB L2 holds 0.4 Mi lines); the
simulation allocates per line."""


def _check_simulation(g: Gpu) -> None:
    """The cache strings and DRAM mapping as the simulation reads them, so that a
    configuration it would refuse is refused here, naming the key."""
    from cachesim.errors import CachesimError

    from .memory import hierarchy_config

    try:
        h = hierarchy_config(g)
    except CachesimError as exc:
        raise ConfigError(g.path, _SIM_KEYS.get(exc.field), str(exc)) from None
    for level, spec in h.specs.items():
        if spec is None:
            continue
        copies = g.caches.l2_slices if level == "l2" else g.compute.sms
        lines = spec.nsets * spec.assoc * copies
        if lines > MAX_CACHE_LINES:
            raise ConfigError(g.path, _SIM_KEYS[level], f"{spec.nsets} sets x {spec.assoc} ways x {copies} "
                              f"{'slices' if level == 'l2' else 'SMs'} = {lines} lines; at most {MAX_CACHE_LINES}")  # fmt: skip


def gpu_dir() -> Path:
    return config_dir() / "gpus"


def gpu_names() -> list[str]:
    """Names of the bundled configurations (file stems of ``configs/gpus/*.toml``)."""
    return sorted(p.stem for p in gpu_dir().glob("*.toml"))


def get_gpu(name_or_path: str) -> Gpu:
    """A configuration by path, bundled name or catalog name.

    A name ending in ``.toml``, or naming an existing regular file, is a path and is
    loaded as it is; anything else is a name, even where a folder of that name lies
    in the current folder (``--gpu h200`` beside a folder ``h200/``). A name is matched
    forgivingly (case, spaces, dashes and the vendor's words do not matter:
    ``rtx3080``, ``"GeForce RTX 3080"``, ``RTX-3080``): a bundled
    ``configs/gpus/NAME.toml`` wins, else the GPU catalog
    (:mod:`placement.catalog`, ``configs/catalog.csv``) builds one. An unknown name
    is an InputError with the closest names.
    """
    from . import catalog

    if not str(name_or_path).strip():
        raise InputError("empty GPU name: give a name from `placement gpus` or a path to a .toml file")
    p = Path(name_or_path)
    if p.suffix == ".toml" or os.path.isfile(p):
        return load_gpu(p)
    key = catalog.normalize(name_or_path)
    bundled = {catalog.normalize(n): n for n in gpu_names()}
    if key in bundled:
        return load_gpu(gpu_dir() / f"{bundled[key]}.toml")
    entry = catalog.find(name_or_path)
    if entry is not None:
        if catalog.normalize(entry.name) in bundled:
            return load_gpu(gpu_dir() / f"{bundled[catalog.normalize(entry.name)]}.toml")
        return gpu_from_entry(entry)
    near = catalog.suggest(name_or_path)
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    raise InputError(
        f"unknown GPU {name_or_path!r}{hint} (`placement gpus` lists the catalog; or give a path to a .toml file)"
    )


def build_gpu(s: catalog.Spec) -> Gpu:
    """A validated Gpu from a catalog spec (a catalog row's, or a gpuperfpredict spec row's:
    ``placement.models.counters``) and its architecture's defaults: the catalog's tables
    (:func:`placement.catalog.config_tables`) through :func:`gpu_from_dict`, as a TOML file's."""
    from . import catalog

    return gpu_from_dict(catalog.config_tables(s), s.where or s.name)


def gpu_from_entry(e: catalog.CatalogEntry) -> Gpu:
    """The configuration of a catalog row."""
    from . import catalog

    return build_gpu(catalog.spec_of(e))


def as_dict(g: Gpu) -> dict[str, Any]:
    """A JSON-ready dictionary of a configuration."""
    from dataclasses import asdict

    return asdict(g)
