"""Address instructions per element access (Huang & Li, Sec. III-B), from configs/addressing.toml.

``addressing_cost(arch, elem_bytes, space)`` is the number of instructions a thread
executes to address one element of a ``elem_bytes``-byte array placed in ``space`` on
``arch``. The difference between two placements' costs is the per-access change in
executed (and issued) instructions the model charges when an array moves (Sec. III-B).

``arch`` is a family name as in ``configs/gpus/*.toml`` (``kepler``, ``ampere``,
``hopper``, ...), an architecture (``sm_37``, ``compute_80``, ``"8.6"``, ``"86"``) or a
family the table maps to another one (``[fallback.*]``: fermi, maxwell, pascal and
tesla -> kepler, volta -> turing, sm_87 -> ampere). ``space`` is a placement letter
(``G T 2T C R S``, and ``2G 2C 2S R_restrict`` where measured) or a trace space name
(``global texture1d texture2d constant readonly shared``). Anything the table does not have is a
:class:`traces.errors.InputError` naming the missing key.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from placement.resources import config_dir
from traces.errors import InputError
from traces.schema import SHORT_OF_SPACE, SPACE_SHORT
from traces.tomlfile import load_toml

TABLE_NAME = "addressing.toml"
_RESERVED = {"schema", "spaces", "fallback"}
# measured-only columns (benchmarks/addressing_modes.py): 2D kernels of G, C, S and const __restrict__
COMPARISON_COLUMNS = ("2G", "2C", "2S", "R_restrict")


def table_path() -> Path:
    return config_dir() / TABLE_NAME


@lru_cache(maxsize=4)
def _load(path: str) -> dict:
    p = Path(path)
    data = load_toml(p, missing="the addressing-mode table is missing")
    _validate(p, data)
    return data


def _validate(p: Path, data: dict) -> None:
    spaces = data.get("spaces")
    if not isinstance(spaces, list) or not spaces:
        raise InputError(f"{p}: 'spaces' must list the placement columns")
    fams = families(data)
    if not fams:
        raise InputError(f"{p}: no architecture section")
    for fam in fams:
        sec = data[fam]
        if not isinstance(sec.get("sm"), list):
            raise InputError(f"{p}: [{fam}] needs an 'sm' list")
        rows = sec.get("bytes")
        if not isinstance(rows, dict) or not rows:
            raise InputError(f"{p}: [{fam}.bytes] is missing")
        for key, row in rows.items():
            if not key.isdigit() or int(key) <= 0:
                raise InputError(f"{p}: [{fam}.bytes] key {key!r} is not an element size in bytes")
            for s in spaces:
                if s not in row:
                    raise InputError(f"{p}: [{fam}.bytes] \"{key}\" has no {s!r} entry")
            for s, v in row.items():
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    raise InputError(f"{p}: [{fam}.bytes] \"{key}\".{s} = {v!r} is not a non-negative integer")
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
    raise InputError(f"{table_path()}: no addressing-mode entry for architecture {arch!r} (known: {known}, "
                     "or an sm_XX they list)")


def _space_key(space: str) -> str:
    """A placement letter (any case) or a trace space name -> the table's column name."""
    s = str(space).strip()
    for key in (*SPACE_SHORT, *COMPARISON_COLUMNS):
        if s.lower() == key.lower():
            return key
    if s.lower() in SHORT_OF_SPACE:
        return SHORT_OF_SPACE[s.lower()]
    raise InputError(f"unknown memory space {space!r} (use {', '.join(SPACE_SHORT)} or "
                     f"{', '.join(SHORT_OF_SPACE)})")


def addressing_cost(arch: str, elem_bytes: int, space: str) -> int:
    """Instructions to address one ``elem_bytes``-byte element in ``space`` on ``arch``."""
    data = _load(str(table_path()))
    fam = resolve_arch(arch)
    if isinstance(elem_bytes, bool) or not isinstance(elem_bytes, int) or elem_bytes <= 0:
        raise InputError(f"element size {elem_bytes!r} is not a positive number of bytes")
    rows = data[fam]["bytes"]
    row = rows.get(str(elem_bytes))
    if row is None:
        raise InputError(f"{table_path()}: [{fam}.bytes] has no \"{elem_bytes}\" row "
                         f"(element sizes: {', '.join(sorted(rows, key=int))})")
    key = _space_key(space)
    if key not in row:
        raise InputError(f"{table_path()}: [{fam}.bytes] \"{elem_bytes}\" has no {key!r} entry "
                         f"(spaces: {', '.join(row)})")
    return row[key]


def addressing_delta(arch: str, elem_bytes: int, source: str, target: str) -> int:
    """Change in address instructions per access when an array moves from ``source`` to ``target``."""
    return addressing_cost(arch, elem_bytes, target) - addressing_cost(arch, elem_bytes, source)
