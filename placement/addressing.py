"""Address instructions per element access (Huang & Li, Sec. III-B), from configs/addressing.toml.

``addressing_cost(arch, elem_bytes, space, context="indexed")`` is the number of
instructions a thread executes to address one element of a ``elem_bytes``-byte array
placed in ``space`` on ``arch``. The difference between two placements' costs is the
per-access change in executed (and issued) instructions the model charges when an array
moves (Sec. III-B). ``context`` says what kind of access it is:

``indexed``         an access at a computed index (the paper's Fig. 2 kernels), [<family>.bytes];
``offset``          an access at another access's index plus a compile-time constant, after that
                    access in source order (unrolled loops, stencils), [<family>.offset];
``offset_leading``  the same before that access, [<family>.offset_leading] (``__ldg`` differs).

``staging_cost(arch)`` is what staging a tile in shared memory costs per element copied
(the copy loops, per source space, and the write-back) and per ``__syncthreads()``
([<family>.staging]).

``arch`` is a family name as in ``configs/gpus/*.toml`` (``kepler``, ``ampere``,
``hopper``, ...), an architecture (``sm_37``, ``compute_80``, ``"8.6"``, ``"86"``) or a
family the table maps to another one (``[fallback.*]``: fermi, maxwell, pascal and
tesla -> kepler, volta -> turing, sm_87 -> ampere). ``space`` is a placement letter
(``G T 2T C R S``, and ``2G 2C 2S R_restrict`` where measured) or a trace space name
(``global texture1d texture2d constant readonly shared``). Anything the table does not have is a
:class:`traces.errors.InputError` naming the table and the missing key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from placement.resources import config_dir
from traces.errors import InputError
from traces.schema import SHORT_OF_SPACE, SPACE_SHORT
from traces.tomlfile import load_toml

TABLE_NAME = "addressing.toml"
SCHEMA = 2
_RESERVED = {"schema", "spaces", "offset_spaces", "fallback"}
# measured-only columns (benchmarks/addressing_modes.py): 2D kernels of G, C, S and const __restrict__
COMPARISON_COLUMNS = ("2G", "2C", "2S", "R_restrict")
# context -> (the family's table, the top-level key listing the columns every row must have)
CONTEXTS = {
    "indexed": ("bytes", "spaces"),
    "offset": ("offset", "offset_spaces"),
    "offset_leading": ("offset_leading", "offset_spaces"),
}
STAGING = "staging"
STAGING_SOURCES = ("G", "T", "R")  # how a staged tile is read: plain loads, tex1Dfetch, __ldg
WRITEBACK = "writeback"
COPY_UNROLL = "copy_unroll"
COPY_TAIL = "copy_tail"
COPY_ROWS = "copy_rows"


@dataclass(frozen=True)
class StagingLoop:
    """Instructions per element one copy form executes besides the copy's load and store
    (``loop_2d_row``: per row of the 2D loop; ``unrolled_flat``: a 2D tile copied by the flattened
    loop of a 1D block). See configs/addressing.toml's header."""

    loop_1d: float
    loop_2d: float
    loop_2d_row: float
    unrolled_1d: float
    unrolled_2d: float
    unrolled_flat: float


STAGING_KEYS = tuple(f.name for f in fields(StagingLoop))


@dataclass(frozen=True)
class CopyRows:
    """What a warp issues for one tile row of the ``copy_unroll`` copy loop (rule 13 of
    benchmarks/addressing_modes.py; configs/addressing.toml's header): the copy's loads and stores included.
    A row of n iterations in every lane costs ``head`` + ``first`` [n mod u >= 1] + ``rest`` [n mod u >= 2] +
    (``entry`` + ``body`` (n div u)) [n >= u]; ``split`` per further side of a divergent branch; ``prologue``
    once per copy."""

    head: int
    first: int
    rest: int
    entry: int
    body: int
    split: int
    prologue: int


COPY_ROWS_KEYS = tuple(f.name for f in fields(CopyRows))


@dataclass(frozen=True)
class StagingCost:
    """What staging a tile in shared memory costs on one family ([<family>.staging])."""

    family: str  # the section the numbers come from
    sources: Mapping[str, StagingLoop]  # "G", "T", "R": copying global -> shared
    writeback: StagingLoop  # copying shared -> global
    barrier: int  # instructions of one __syncthreads()
    copy_unroll: int = 1
    """How nvcc unrolls a copy loop of compile-time step and bound (1: not at all); see the table's header."""
    copy_tail: int = 0
    """Or, unrolled whole, how many of a tile row's last iterations it batches (0: none); see the table's header."""
    copy_rows: Mapping[str, CopyRows] = field(default_factory=lambda: MappingProxyType({}))
    """Source ("G", "T", "R") -> that copy loop's instructions a tile row (``copy_unroll`` families)."""

    def load(self, space: str) -> StagingLoop:
        """The copy-in loops for a tile read from ``space`` (``G``/``global``, ``T``/``texture1d``,
        ``R``/``readonly``)."""
        key = _space_key(space)
        if key not in self.sources:
            raise InputError(
                f"{table_path()}: [{self.family}.{STAGING}] has no {key!r} row (sources: {', '.join(self.sources)})"
            )
        return self.sources[key]

    def rows(self, space: str) -> CopyRows | None:
        """The ``copy_unroll`` loop's instructions a tile row for a tile read from ``space`` (as :meth:`load`
        names it), or None where the family has none."""
        return self.copy_rows.get(_space_key(space))


def table_path() -> Path:
    return config_dir() / TABLE_NAME


@lru_cache(maxsize=4)
def _load(path: str) -> dict:
    p = Path(path)
    data = load_toml(p, missing="the addressing-mode table is missing")
    _validate(p, data)
    return data


def _is_count(v, whole: bool = True) -> bool:
    kinds = (int,) if whole else (int, float)
    return isinstance(v, kinds) and not isinstance(v, bool) and v >= 0


def _validate_rows(p: Path, fam: str, table: str, rows, columns: list[str]) -> None:
    """One table keyed by element size: every row has every column, counts are whole and >= 0."""
    if not isinstance(rows, dict) or not rows:
        raise InputError(f"{p}: [{fam}.{table}] is missing")
    for key, row in rows.items():
        if not key.isdigit() or int(key) <= 0:
            raise InputError(f"{p}: [{fam}.{table}] key {key!r} is not an element size in bytes")
        for s in columns:
            if s not in row:
                raise InputError(f'{p}: [{fam}.{table}] "{key}" has no {s!r} entry')
        for s, v in row.items():
            if not _is_count(v):
                raise InputError(f'{p}: [{fam}.{table}] "{key}".{s} = {v!r} is not a non-negative integer')


def _validate_staging(p: Path, fam: str, sec, fams: list[str], data: dict) -> None:
    """[<fam>.staging]: ``use`` = a family with its own numbers, or barrier and every row's keys."""
    if not isinstance(sec, dict):
        raise InputError(f"{p}: [{fam}.{STAGING}] is missing")
    if "use" in sec:
        target = sec["use"]
        if target not in fams or "use" in data[target].get(STAGING, {}):
            raise InputError(
                f"{p}: [{fam}.{STAGING}] uses {target!r}, which is not a section with its own staging numbers"
            )
        return
    if not _is_count(sec.get("barrier")):
        raise InputError(f"{p}: [{fam}.{STAGING}] barrier = {sec.get('barrier')!r} is not a non-negative integer")
    unroll = sec.get(COPY_UNROLL, 1)
    if not _is_count(unroll) or unroll < 1:
        raise InputError(f"{p}: [{fam}.{STAGING}] {COPY_UNROLL} = {unroll!r} is not a positive integer")
    tail = sec.get(COPY_TAIL, 0)
    if not _is_count(tail) or tail == 1:
        raise InputError(f"{p}: [{fam}.{STAGING}] {COPY_TAIL} = {tail!r} is not 0 or an integer of at least 2")
    if tail and unroll > 1:
        raise InputError(
            f"{p}: [{fam}.{STAGING}] has both {COPY_UNROLL} and {COPY_TAIL}: a copy loop is one or the other"
        )
    rows = sec.get(COPY_ROWS, {})
    if not isinstance(rows, dict) or (rows and unroll < 2):
        raise InputError(
            f"{p}: [{fam}.{STAGING}] {COPY_ROWS} must be a table of sources, in a section with {COPY_UNROLL} >= 2"
        )
    for who, row in rows.items():
        if who not in STAGING_SOURCES or not isinstance(row, dict):
            raise InputError(f"{p}: [{fam}.{STAGING}] {COPY_ROWS}.{who} is not a source's table ({STAGING_SOURCES})")
        for key in COPY_ROWS_KEYS:
            if not _is_count(row.get(key)):
                raise InputError(
                    f"{p}: [{fam}.{STAGING}] {COPY_ROWS}.{who}.{key} = {row.get(key)!r} is not a non-negative integer"
                )
    for who in (*STAGING_SOURCES, WRITEBACK):
        row = sec.get(who)
        if not isinstance(row, dict):
            raise InputError(f"{p}: [{fam}.{STAGING}] has no {who!r} row")
        for key in STAGING_KEYS:
            if not _is_count(row.get(key), whole=False):
                raise InputError(f"{p}: [{fam}.{STAGING}] {who}.{key} = {row.get(key)!r} is not a non-negative number")


def _validate(p: Path, data: dict) -> None:
    if data.get("schema") != SCHEMA:
        raise InputError(
            f"{p}: schema = {data.get('schema')!r}, this reader expects {SCHEMA} "
            "(regenerate with benchmarks/addressing_modes.py --toml)"
        )
    for _, columns_key in CONTEXTS.values():
        columns = data.get(columns_key)
        if not isinstance(columns, list) or not columns:
            raise InputError(f"{p}: '{columns_key}' must list the placement columns")
    fams = families(data)
    if not fams:
        raise InputError(f"{p}: no architecture section")
    for fam in fams:
        sec = data[fam]
        if not isinstance(sec.get("sm"), list):
            raise InputError(f"{p}: [{fam}] needs an 'sm' list")
        for table, columns_key in CONTEXTS.values():
            _validate_rows(p, fam, table, sec.get(table), data[columns_key])
        _validate_staging(p, fam, sec.get(STAGING), fams, data)
    for name, fb in data.get("fallback", {}).items():
        if fb.get("use") not in fams:
            raise InputError(f"{p}: [fallback.{name}] uses {fb.get('use')!r}, which is not a section")


def families(data: dict | None = None) -> list[str]:
    """The architecture sections of the table (``kepler``, ``turing``, ...)."""
    if data is None:
        data = _load(str(table_path()))
    return [k for k, v in data.items() if k not in _RESERVED and isinstance(v, dict)]


def _sm_name(arch: str) -> str | None:
    """``sm_86`` / ``compute_86`` / ``8.6`` / ``86`` -> ``sm_86``; None if not that form."""
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)([a-z]?)", arch)
    if m:
        return f"sm_{m.group(1)}"
    m = re.fullmatch(r"(\d+)\.(\d+)", arch)
    if m:
        return f"sm_{m.group(1)}{m.group(2)}"
    return None


def resolve_arch(arch: str) -> str:
    """The table section ``arch`` reads from (after the documented fallbacks)."""
    data = _load(str(table_path()))
    key = str(arch).strip().lower()
    fams = families(data)
    fallback = data.get("fallback", {})
    if key in fams:
        return key
    if key in fallback:
        return fallback[key]["use"]
    sm = _sm_name(key)
    if sm is not None:
        for fam in fams:
            if sm in data[fam]["sm"]:
                return fam
        for fb in fallback.values():
            if sm in fb.get("sm", []):
                return fb["use"]
    known = ", ".join(fams + sorted(fallback))
    raise InputError(
        f"{table_path()}: no addressing-mode entry for architecture {arch!r} (known: {known}, or an sm_XX they list)"
    )


def _space_key(space: str) -> str:
    """A placement letter (any case) or a trace space name -> the table's column name."""
    s = str(space).strip()
    for key in (*SPACE_SHORT, *COMPARISON_COLUMNS):
        if s.lower() == key.lower():
            return key
    if s.lower() in SHORT_OF_SPACE:
        return SHORT_OF_SPACE[s.lower()]
    raise InputError(f"unknown memory space {space!r} (use {', '.join(SPACE_SHORT)} or {', '.join(SHORT_OF_SPACE)})")


def addressing_cost(arch: str, elem_bytes: int, space: str, context: str = "indexed") -> int:
    """Instructions to address one ``elem_bytes``-byte element in ``space`` on ``arch``, for an
    access of kind ``context`` (``indexed``, ``offset``, ``offset_leading``)."""
    data = _load(str(table_path()))
    fam = resolve_arch(arch)
    if context not in CONTEXTS:
        raise InputError(f"unknown access context {context!r} (use {', '.join(CONTEXTS)})")
    if isinstance(elem_bytes, bool) or not isinstance(elem_bytes, int) or elem_bytes <= 0:
        raise InputError(f"element size {elem_bytes!r} is not a positive number of bytes")
    table = CONTEXTS[context][0]
    rows = data[fam][table]
    row = rows.get(str(elem_bytes))
    if row is None:
        raise InputError(
            f'{table_path()}: [{fam}.{table}] has no "{elem_bytes}" row '
            f"(element sizes: {', '.join(sorted(rows, key=int))})"
        )
    key = _space_key(space)
    if key not in row:
        raise InputError(
            f'{table_path()}: [{fam}.{table}] "{elem_bytes}" has no {key!r} entry (spaces: {", ".join(row)})'
        )
    return row[key]


def addressing_delta(arch: str, elem_bytes: int, source: str, target: str, context: str = "indexed") -> int:
    """Change in address instructions per access when an array moves from ``source`` to ``target``."""
    return addressing_cost(arch, elem_bytes, target, context) - addressing_cost(arch, elem_bytes, source, context)


def _staging_loop(row: dict) -> StagingLoop:
    return StagingLoop(**{key: row[key] for key in STAGING_KEYS})


def staging_cost(arch: str) -> StagingCost:
    """Per-element cost of staging a tile in shared memory on ``arch`` ([<family>.staging],
    after the family fallbacks and the section's own ``use``)."""
    data = _load(str(table_path()))
    fam = resolve_arch(arch)
    sec = data[fam][STAGING]
    if "use" in sec:
        fam = sec["use"]
        sec = data[fam][STAGING]
    sources = MappingProxyType({who: _staging_loop(sec[who]) for who in STAGING_SOURCES})
    return StagingCost(
        fam,
        sources,
        _staging_loop(sec[WRITEBACK]),
        sec["barrier"],
        int(sec.get(COPY_UNROLL, 1)),
        int(sec.get(COPY_TAIL, 0)),
        MappingProxyType(
            {who: CopyRows(**{k: int(row[k]) for k in COPY_ROWS_KEYS}) for who, row in sec.get(COPY_ROWS, {}).items()}
        ),
    )
