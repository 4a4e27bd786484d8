"""The GPU catalog: ``configs/catalog.csv`` rows plus ``configs/architectures.toml`` defaults.

A catalog row holds what a vendor publishes for one GPU (SMs, clocks, memory type,
bus and bandwidth, L2, shared memory and L1 per SM, compute capability), with its
source. The architecture file holds what follows from the architecture and the
compute capability (latencies, cache geometry as GPGPU-Sim cache strings, DRAM
mapping, occupancy limits, which loads each cache serves), each with its source.
:func:`config_tables` joins the two into the tables a hand-written TOML holds;
:func:`placement.gpu.gpu_from_entry` validates them into the same frozen
:class:`placement.gpu.Gpu` by the same code (:func:`placement.gpu.gpu_from_dict`).
This module builds no Gpu itself: ``placement.gpu`` imports it to resolve names, so
it does not import ``placement.gpu`` back.

Derived fields (every constant they use is in the data files):

- ``issue_cycles`` = warp size / cores per SM (Hong & Kim, Issue_cycles);
- ``dram_latency`` is the architecture's, in cycles, as the microbenchmarks measure it
  (a load's latency scales with the core clock more than with the memory's: see the
  Kepler line of the architecture file);
- departure delays: a 128-byte line (coalesced) or one 32-byte sector (uncoalesced)
  over the SM's share of the bandwidth per cycle, the rule of
  ``configs/gpus/k40.toml`` (no published value for most GPUs);
- memory channels = bus width / the memory type's channel width; L2 slices =
  channels x slices per channel, each slice a GPGPU-Sim cache string whose set
  count is a power of two (:func:`l2_string`);
- the L1 (and Kepler's texture cache) ways from the catalog's size over the
  architecture's sets and line size;
- ``l2_atomic_interval_ns`` = the architecture's ``l2_atomic_cycles`` over the GPU's
  clock (the H100's measured interval in cycles, which Volta to Blackwell assume).

Names are matched forgivingly (:func:`normalize`): case, spaces, dashes, dots and
the vendor's words (NVIDIA, GeForce) do not matter; :func:`suggest` gives the
closest names for a miss.
"""

from __future__ import annotations

import csv
import difflib
import logging
import math
import os
import re
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

from cachesim.spec import IPOLY
from traces.errors import InputError
from traces.tomlfile import load_toml

from .resources import CONFIGS_ENV, config_dir

log = logging.getLogger(__name__)

CATALOG_NAME = "catalog.csv"
ARCH_NAME = "architectures.toml"
SECTIONS = ("compute", "memory", "caches", "dram")

# Keys of the architecture file that are inputs of a derivation, not Gpu fields.
_DERIVATION_KEYS = {
    "memory": {"l2_atomic_cycles"},
    "caches": {"l1_geometry", "l1_policy", "tex_kb", "tex_geometry", "tex_policy", "l2_assoc", "l2_policy",
               "l2_index", "l2_slices_per_channel"},
    "dram": {"channel_bits"},
}  # fmt: skip


class CatalogError(InputError):
    """A catalog or architecture file with a missing column or an impossible value."""


@dataclass(frozen=True)
class CatalogEntry:
    """One row of ``configs/catalog.csv``."""

    name: str
    full_name: str
    aliases: tuple[str, ...]
    arch: str
    chip: str
    cc: tuple[int, int]
    sms: int
    base_mhz: float
    boost_mhz: float
    memory: str
    bus_bits: int
    bandwidth_gbs: float
    l2_kb: int
    smem_per_sm_kb: int
    l1_kb: int
    source: str
    dram_share: float = 0.0
    """The share of ``bandwidth_gbs`` this board's DRAM sustains, measured on it (0, the column empty or absent: its
    architecture's ``dram_sustained_fraction``, measured on one GPU of the architecture)."""
    row: int = 0
    """Line of the row in the file (for messages)."""
    path: str = ""

    @property
    def where(self) -> str:
        return f"{self.path}:{self.name}" if self.path else self.name


_COLUMNS = [f.name for f in fields(CatalogEntry) if f.name not in ("row", "path")]
_OPTIONAL_COLUMNS = {"dram_share"}


def catalog_path() -> Path:
    return config_dir() / CATALOG_NAME


def arch_path() -> Path:
    return config_dir() / ARCH_NAME


# --- names ---------------------------------------------------------------------------

_NOISE = re.compile(r"\b(nvidia|geforce|tesla)\b")


def normalize(name: str) -> str:
    """The matching key of a GPU name: lower case, without NVIDIA / GeForce / Tesla and without
    anything but letters and digits (``"GeForce RTX-3080"`` -> ``rtx3080``; the driver's
    ``"Tesla V100-SXM2-32GB"`` -> ``v100sxm232gb``, an alias of ``v100-sxm2``)."""
    s = _NOISE.sub(" ", str(name).lower())
    return re.sub(r"[^a-z0-9]", "", s)


def _keys(e: CatalogEntry) -> list[str]:
    keys = [normalize(e.name), normalize(e.full_name)] + [normalize(a) for a in e.aliases]
    return [k for k in keys if k]


@lru_cache(maxsize=4)
def _index(path: str) -> dict[str, CatalogEntry]:
    out: dict[str, CatalogEntry] = {}
    for e in _load(path):
        for k in _keys(e):
            other = out.get(k)
            if other is not None and other.name != e.name:
                raise CatalogError(f"{path} line {e.row}: name {k!r} also names {other.name!r} (line {other.row})")
            out[k] = e
    return out


def find(name: str) -> CatalogEntry | None:
    """The catalog entry ``name`` spells (forgivingly), or None."""
    return _index(str(catalog_path())).get(normalize(name))


CALIBRATED_SUFFIX = "-calibrated"
"""What ``placement calibrate`` appends to the name of the configuration it measured (``h100-calibrated``)."""


@lru_cache(maxsize=64)
def same_gpu(a: str, b: str) -> bool:
    """Whether names ``a`` and ``b`` are one GPU: spelt alike (:func:`normalize`), the catalog's names of one
    entry (``"Tesla V100-SXM2-32GB"`` and ``v100-sxm2``), or a configuration and its calibrated copy."""
    a, b = (str(x).removesuffix(CALIBRATED_SUFFIX) for x in (a, b))
    if normalize(a) == normalize(b):
        return True
    ea, eb = find(a), find(b)
    return ea is not None and eb is not None and ea.name == eb.name


def suggest(name: str, n: int = 3) -> list[str]:
    """Up to ``n`` catalog names closest to ``name`` (difflib), for "did you mean"."""
    idx = _index(str(catalog_path()))
    close = difflib.get_close_matches(normalize(name), list(idx), n=n * 3, cutoff=0.6)
    out: list[str] = []
    for k in close:
        if idx[k].name not in out:
            out.append(idx[k].name)
    return out[:n]


def entries() -> tuple[CatalogEntry, ...]:
    """Every catalog row, in file order."""
    return _load(str(catalog_path()))


# --- the catalog file ------------------------------------------------------------------


@lru_cache(maxsize=4)
def _load(path: str) -> tuple[CatalogEntry, ...]:
    p = Path(path)
    if not p.exists():
        raise CatalogError(f"{p}: the GPU catalog is missing")
    with open(p, newline="") as fh:
        lines = [(i, line) for i, line in enumerate(fh, start=1) if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise CatalogError(f"{p}: no header row")
    reader = csv.reader([line for _, line in lines])
    header = [h.strip() for h in next(reader)]
    missing = [c for c in _COLUMNS if c not in header and c not in _OPTIONAL_COLUMNS]
    if missing:
        raise CatalogError(f"{p} line {lines[0][0]}: column {missing[0]!r} missing; expected {', '.join(_COLUMNS)}")
    archs = set(_arch_data(str(arch_path()))["architectures"])
    out = []
    for (lineno, _), cells in zip(lines[1:], reader, strict=False):
        rec = dict(zip(header, (c.strip() for c in cells), strict=False))
        out.append(_entry(str(p), lineno, rec, archs))
    return tuple(out)


def _entry(path: str, lineno: int, rec: dict, archs: set[str]) -> CatalogEntry:
    def bad(col: str, want: str):
        return CatalogError(
            f"{path} line {lineno} ({rec.get('name') or '?'}): {col}: expected {want}, got {rec.get(col)!r}"
        )

    def num(col: str, kind=float):
        try:
            v = kind(rec.get(col, ""))
        except ValueError:
            raise bad(col, "a positive number") from None
        if not v > 0:
            raise bad(col, "a positive number")
        return v

    if not rec.get("name"):
        raise bad("name", "a name")
    if rec.get("arch") not in archs:
        raise bad("arch", f"one of {', '.join(sorted(archs))}")
    m = re.fullmatch(r"(\d+)\.(\d+)", rec.get("cc", ""))
    if not m:
        raise bad("cc", "a compute capability such as 8.6")
    if not rec.get("source"):
        raise bad("source", "the documents the row comes from")
    share = 0.0
    if rec.get("dram_share"):
        try:
            share = float(rec["dram_share"])
        except ValueError:
            share = math.nan
        if not 0 < share <= 1:
            raise bad("dram_share", "the sustained share of bandwidth_gbs in (0, 1], or empty for the architecture's")
    e = CatalogEntry(
        name=rec["name"],
        full_name=rec.get("full_name") or rec["name"],
        aliases=tuple(a.strip() for a in rec.get("aliases", "").split("|") if a.strip()),
        arch=rec["arch"],
        chip=rec.get("chip", ""),
        cc=(int(m[1]), int(m[2])),
        sms=num("sms", int),
        base_mhz=num("base_mhz"),
        boost_mhz=num("boost_mhz"),
        memory=rec.get("memory", ""),
        bus_bits=num("bus_bits", int),
        bandwidth_gbs=num("bandwidth_gbs"),
        l2_kb=num("l2_kb", int),
        smem_per_sm_kb=num("smem_per_sm_kb", int),
        l1_kb=num("l1_kb", int),
        source=rec["source"],
        dram_share=share,
        row=lineno,
        path=path,
    )
    if e.boost_mhz < e.base_mhz:
        raise bad("boost_mhz", f"at least base_mhz {e.base_mhz:g}")
    return e


# --- the architecture file -------------------------------------------------------------


@lru_cache(maxsize=4)
def _arch_data(path: str) -> dict:
    data = load_toml(path, missing="the architecture defaults are missing")
    archs = data.get("architectures")
    if not isinstance(archs, list) or not archs:
        raise CatalogError(f"{path}: 'architectures' must list the architecture sections")
    for a in archs:
        if not isinstance(data.get(a), dict):
            raise CatalogError(f"{path}: [{a}] is missing")
        for s in SECTIONS:
            if not isinstance(data[a].get(s), dict):
                raise CatalogError(f"{path}: [{a}.{s}] is missing")
    return data


def arch_table(arch: str, cc: tuple[int, int]) -> dict[str, dict]:
    """The sections (compute, memory, caches, dram, models) of ``arch`` with the
    overrides of compute capability ``cc`` applied."""
    path = str(arch_path())
    data = _arch_data(path)
    if arch not in data["architectures"]:
        raise CatalogError(f"{path}: no architecture {arch!r} (known: {', '.join(data['architectures'])})")
    over = data.get("cc", {}).get(f"{cc[0]}.{cc[1]}", {})
    return {s: {**data[arch].get(s, {}), **over.get(s, {})} for s in (*SECTIONS, "models")}


def model_defaults(arch: str, cc: tuple[int, int]) -> dict:
    """The seed models' constants of an architecture and compute capability
    (``[<arch>.models]``); empty for an architecture the file does not know. A copy of one table cached per
    file, as the file's data is (an evaluation asks for them tens of times: 15 % of an exhaustive search's CPU
    on a small trace before they were cached)."""
    key = (os.environ.get(CONFIGS_ENV), arch, int(cc[0]), int(cc[1]))
    held = _MODEL_TABLES.get(key)
    # a new read of the file (its cache cleared) is read anew here too
    if held is None or _arch_data(held[0]) is not held[1]:
        path = str(arch_path())
        data = _arch_data(path)
        if arch in data["architectures"]:
            table = arch_table(arch, cc)["models"]
        else:
            table = dict(data.get("older", {}).get(arch, {}).get("models", {}))
        held = _MODEL_TABLES[key] = (path, data, table)
    return dict(held[2])


_MODEL_TABLES: dict[tuple, tuple[str, dict, dict]] = {}
"""model_defaults' tables by (``$PLACEMENT_CONFIGS``, architecture, compute capability), each beside the file and
the file's data it came from."""


def arch_of_cc(cc: tuple[int, int]) -> str:
    """The architecture of a compute capability, from the catalog (the arch of its rows)."""
    for e in entries():
        if e.cc[0] == cc[0]:
            return e.arch
    raise InputError(f"compute capability {cc[0]}.{cc[1]}: no architecture in {catalog_path()} has it")


# --- a Gpu's tables ----------------------------------------------------------------------


def _pow2_split(lines: int, assoc: int) -> tuple[int, int]:
    """(nsets, ways) with nsets a power of two, nsets x ways = lines, ways closest to ``assoc``."""
    best = None
    sets = 1
    while sets <= lines:
        if lines % sets == 0:
            ways = lines // sets
            key = (abs(math.log(ways / assoc)), -sets)
            if best is None or key < best[0]:
                best = (key, sets, ways)
        sets *= 2
    return best[1], best[2]


def l2_string(l2_bytes: int, slices: int, line: int, assoc: int, policy: str, index: str) -> tuple[str, int]:
    """One L2 slice as a GPGPU-Sim cache string, and the slice count actually used.

    ``slices`` (channels x slices per channel) is lowered to the largest count that
    splits the L2's lines evenly (H200: 50 MB over 96 would not). The set count is a
    power of two (cachesim requires it) with the ways closest to ``assoc``. The
    index function of ``policy`` is kept when it allows the set count (IPOLY "P": the set
    counts cachesim has a polynomial for), else "X" (XOR), as Accel-Sim does for large L2s.
    """
    lines = l2_bytes // line
    while slices > 1 and lines % slices:
        slices -= 1
    sets, ways = _pow2_split(lines // slices, assoc)
    idx = index if not (index == "P" and sets not in IPOLY) else "X"
    parts = policy.split(":")
    parts[-1] = idx
    return f"S:{sets}:{line}:{ways},{':'.join(parts)}", slices


def _array_string(kind_sets_line: str, policy: str, size_bytes: int) -> str:
    """A per-SM cache string "T:nsets:line:ways,policy" with ways = size / (nsets x line)."""
    kind, nsets, line = kind_sets_line.split(":")
    ways = size_bytes // (int(nsets) * int(line))
    if ways < 1:
        raise CatalogError(f"{arch_path()}: {size_bytes} B cannot fill {nsets} sets of {line} B")
    return f"{kind}:{nsets}:{line}:{ways},{policy}"


def _tex_string(geometry: str, policy: str, size_bytes: int) -> str:
    """Kepler's texture cache: 'N:line:ways' geometry, sets = size / (line x ways)."""
    kind, line, ways = geometry.split(":")
    sets = size_bytes // (int(line) * int(ways))
    return f"{kind}:{sets}:{line}:{ways},{policy}"


def departure_delays(
    bandwidth_gbs: float, sms: int, clock_mhz: float, line_bytes: int, sector_bytes: int
) -> tuple[float, float]:
    """(coalesced, uncoalesced) departure delays: a line, or one sector, over the SM's share of
    the bandwidth per SM cycle (the rule of configs/gpus/k40.toml)."""
    share = bandwidth_gbs * 1e9 / sms / (clock_mhz * 1e6)
    return line_bytes / share, sector_bytes / share


@dataclass(frozen=True)
class Spec:
    """What :func:`config_tables` needs of a GPU beyond its architecture: a catalog row, or a
    gpuperfpredict spec row (``placement.models.counters``)."""

    name: str
    description: str
    arch: str
    cc: tuple[int, int]
    sms: int
    clock_mhz: float
    bandwidth_gbs: float
    bus_bits: int
    memory: str
    l2_bytes: int
    smem_per_sm: int | None = None
    """Bytes; None: the architecture's."""
    l1_bytes: int | None = None
    where: str = ""
    dram_sustained_fraction: float = 0.0
    """The board's own measured share of ``bandwidth_gbs`` (0: the architecture's)."""


def spec_of(e: CatalogEntry) -> Spec:
    return Spec(
        name=e.name,
        description=f"{e.full_name} ({e.chip}), from the GPU catalog (sources: {e.source}) and the {e.arch} defaults",
        arch=e.arch, cc=e.cc, sms=e.sms, clock_mhz=e.boost_mhz, bandwidth_gbs=e.bandwidth_gbs,
        bus_bits=e.bus_bits, memory=e.memory, l2_bytes=e.l2_kb * 1024, smem_per_sm=e.smem_per_sm_kb * 1024,
        l1_bytes=e.l1_kb * 1024, where=e.where, dram_sustained_fraction=e.dram_share,
    )  # fmt: skip


def channel_bits(table: dict, memory: str, where: str) -> int:
    widths = table["dram"].get("channel_bits", {})
    if memory in widths:
        return int(widths[memory])
    if len(set(widths.values())) == 1:  # one width for every memory type of the architecture
        return int(next(iter(widths.values())))
    raise CatalogError(f"{where}: memory {memory!r}: no channel width in {arch_path()} (known: {', '.join(widths)})")


def config_tables(s: Spec) -> dict:
    """A GPU's configuration as the tables of a ``configs/gpus/*.toml`` (``name``, ``arch``, ...,
    ``compute``, ``memory``, ``caches``, ``dram``) from a spec and its architecture's defaults;
    :func:`placement.gpu.build_gpu` validates them (errors name ``s.where or s.name``)."""
    t = arch_table(s.arch, s.cc)
    comp = {k: v for k, v in t["compute"].items()}
    comp.update(sms=s.sms, clock_mhz=s.clock_mhz, issue_cycles=comp["warp_size"] / comp["cores_per_sm"])
    mem = {k: v for k, v in t["memory"].items() if k not in _DERIVATION_KEYS["memory"]}
    mem["bandwidth_gbs"] = s.bandwidth_gbs
    coal, uncoal = departure_delays(s.bandwidth_gbs, s.sms, s.clock_mhz, mem["line_bytes"], mem["sector_bytes"])
    mem.update(departure_del_coal=coal, departure_del_uncoal=uncoal)
    if s.dram_sustained_fraction:
        mem["dram_sustained_fraction"] = s.dram_sustained_fraction
    if s.smem_per_sm is not None:
        mem["smem_per_sm"] = s.smem_per_sm
    mem.setdefault("smem_per_sm", mem["smem_per_block"])
    if "l2_atomic_cycles" in t["memory"]:  # the architecture's atomic interval in cycles, at this GPU's clock
        cycles = t["memory"]["l2_atomic_cycles"]
        if isinstance(cycles, bool) or not isinstance(cycles, (int, float)) or not 0 <= cycles < 1e6:
            raise CatalogError(f"{arch_path()}: [{s.arch}.memory] l2_atomic_cycles must be a number in [0, 1e6), "
                               f"got {cycles!r}")  # fmt: skip
        mem["l2_atomic_interval_ns"] = float(cycles) * 1e3 / s.clock_mhz
    c = t["caches"]
    caches = {k: v for k, v in c.items() if k not in _DERIVATION_KEYS["caches"]}
    l1 = ""
    if c["l1_geometry"]:
        l1 = _array_string(c["l1_geometry"], c["l1_policy"], s.l1_bytes if s.l1_bytes else 0)
    tex = _tex_string(c["tex_geometry"], c["tex_policy"], int(c["tex_kb"]) * 1024) if c["tex_kb"] else ""
    width = channel_bits(t, s.memory, s.where or s.name)
    channels = max(1, s.bus_bits // width)
    l2, slices = l2_string(s.l2_bytes, channels * int(c["l2_slices_per_channel"]), mem["line_bytes"],
                           int(c["l2_assoc"]), c["l2_policy"], c["l2_index"])  # fmt: skip
    caches.update(l1=l1, tex=tex, l2=l2, l2_slices=slices)
    dram = {k: v for k, v in t["dram"].items() if k not in _DERIVATION_KEYS["dram"]}
    dram["channels"] = channels
    data = {
        "name": s.name,
        "description": s.description,
        "arch": s.arch,
        "compute_capability": list(s.cc),
        "compute": comp,
        "memory": mem,
        "caches": caches,
        "dram": dram,
    }
    return data
