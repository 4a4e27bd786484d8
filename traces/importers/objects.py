"""Data objects of an imported trace: explicit, from host copies, or inferred.

Real traces carry addresses, not arrays. The placement model moves *objects*
(Huang & Li, Sec. II-A), so every importer ends here, with one rule set:

1. ``--objects FILE.toml`` names and bounds objects explicitly; they win over
   everything else (their rows are theirs, nothing inferred may overlap them).
2. ``MemcpyHtoD,<base>,<bytes>`` lines give the extents of the arrays the host
   copied in (overlapping copies are merged); copies the kernel never touches are
   left out and counted.
3. The remaining addresses are grouped by the instruction (PC) that touches them:
   per PC, the rows' address intervals are sorted and cut where a gap is larger
   than both a floor (64 KiB for off-chip spaces, 256 B on chip) and 16 times that
   PC's median gap (overlaps count as 0), so a strided or gathered walk over one array stays one range
   while one PC reaching two distant arrays becomes two. Ranges of different PCs
   that overlap are one object; ranges never cross an explicit or copied object.
   Adjacent arrays touched by the same PC cannot be told apart this way: name them
   with ``--objects``.

Each address space is inferred on its own: the off-chip data spaces (global and
texture share addresses), constant, shared (offsets in the block's window) and
local (one object for the stack and spills). A row whose lanes fall in two objects,
or straddle an object's edge, gets ``obj`` -1 and is counted.

An object's space is the space most of its rows use, its ``elem_bytes`` the most
common access width, ``written`` whether any row stores to it.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from ..errors import InputError, shown
from ..launch import ADDRESS_LIMIT, MAX_OBJECT_BYTES
from ..schema import (
    CONSTANT,
    GLOBAL,
    LOAD,
    LOCAL,
    SHARED,
    SPACE_CODES,
    SPACE_NAMES,
    TEXTURE1D,
    TEXTURE2D,
    WIDTHS,
    ObjectInfo,
    name_problem,
)
from ..tomlfile import load_toml
from . import _object_kernels as K

log = logging.getLogger(__name__)

OFFCHIP_GAP = 1 << 16
ONCHIP_GAP = 256
GAP_FACTOR = 16.0

# Address families: spaces that share one address space.
_FAMILIES = (
    ("offchip", (GLOBAL, TEXTURE1D, TEXTURE2D), OFFCHIP_GAP),
    ("constant", (CONSTANT,), ONCHIP_GAP),
    ("shared", (SHARED,), ONCHIP_GAP),
    ("local", (LOCAL,), None),  # None: one object for the whole family
)
_PREFIX = {GLOBAL: "global", TEXTURE1D: "tex", TEXTURE2D: "tex2d", CONSTANT: "const", SHARED: "shared", LOCAL: "local"}


@dataclass(frozen=True)
class ObjectSpec:
    """An object named and bounded by the user (``--objects FILE.toml``)."""

    name: str
    base: int
    size: int
    space: str | None = None
    elem_bytes: int | None = None
    shape: tuple[int, int] | None = None


@dataclass(frozen=True)
class Extent:
    """An address range known from the host side (a ``MemcpyHtoD`` line)."""

    base: int
    size: int
    origin: str


@dataclass(frozen=True)
class Objects:
    """The result: an object id per row, the objects, and what was found out how."""

    obj: np.ndarray
    objects: tuple[ObjectInfo, ...]
    report: dict[str, Any]


def load_objects_toml(path) -> tuple[ObjectSpec, ...]:
    """Read ``[[object]]`` tables: ``name``, ``base``, ``size`` and optional ``space``, ``elem_bytes``, ``shape``.

    Example::

        [[object]]
        name = "A"
        base = 0x7fb0fc400000
        size = 200000
        elem_bytes = 4
    """
    p = str(path)
    doc = load_toml(p)
    tables = doc.get("object", doc.get("objects"))
    if not isinstance(tables, list) or not tables:
        raise InputError(f"{p}: expected one or more [[object]] tables with name, base and size")
    allowed = {"name", "base", "size", "space", "elem_bytes", "shape"}
    specs: list[ObjectSpec] = []
    names: set[str] = set()
    for i, t in enumerate(tables):
        where = f"{p}: object {i + 1}"
        if not isinstance(t, dict):
            raise InputError(f"{where}: expected a table")
        unknown = sorted(set(t) - allowed)
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")
        name, base, size = t.get("name"), t.get("base"), t.get("size")
        if not isinstance(name, str) or not name:
            raise InputError(f"{where}: 'name' must be a non-empty string")
        if name_problem(name):
            raise InputError(f"{where}: name {name[:40]!r} {name_problem(name)}")
        if name in names:
            raise InputError(f"{where}: name '{name}' used twice")
        names.add(name)
        for k, v in (("base", base), ("size", size)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0 or (k == "size" and v == 0) or v > ADDRESS_LIMIT:
                raise InputError(f"{where} ('{name}'): '{k}' must be a {'positive' if k == 'size' else 'non-negative'} "
                                 f"integer below 2^64, got {shown(v)}")  # fmt: skip
        if base + size > ADDRESS_LIMIT:
            raise InputError(f"{where} ('{name}'): base {base:#x} + size {size} ends beyond the 64-bit address space")
        if size > MAX_OBJECT_BYTES:
            raise InputError(f"{where} ('{name}'): size {size} is beyond 2^49 bytes, a GPU's virtual address space")
        space = t.get("space")
        if space is not None:
            from ..schema import SPACE_SHORT

            space = SPACE_SHORT.get(space, space) if isinstance(space, str) else None
            if space not in SPACE_CODES:
                raise InputError(
                    f"{where} ('{name}'): space {shown(t['space'])} is not one of {', '.join(SPACE_NAMES)}"
                )
        elem = t.get("elem_bytes")
        if elem is not None and (isinstance(elem, bool) or elem not in WIDTHS):
            raise InputError(f"{where} ('{name}'): elem_bytes must be one of {WIDTHS}, got {shown(elem)}")
        shape = t.get("shape")
        if shape is not None:
            if not (isinstance(shape, list) and len(shape) == 2
                    and all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in shape)):  # fmt: skip
                raise InputError(f"{where} ('{name}'): shape must be [rows, cols], got {shown(shape)}")
            shape = (shape[0], shape[1])
            if shape[0] * shape[1] * (elem or 4) > size:
                raise InputError(f"{where} ('{name}'): shape {shown(shape)} x {elem or 4} B exceeds size {size}")
        specs.append(ObjectSpec(name, base, size, space, elem, shape))
    # two tables of one family over the same bytes: said here, with the file (``infer_objects`` refuses them too)
    by_family = sorted(range(len(specs)), key=lambda i: (_family_of(specs[i].space), specs[i].base))
    for i, j in zip(by_family, by_family[1:]):
        a, b = specs[i], specs[j]
        if _family_of(a.space) == _family_of(b.space) and b.base < a.base + a.size:
            raise InputError(f"{p}: object {j + 1} ('{b.name}') overlaps object {i + 1} ('{a.name}'): "
                             f"[{b.base:#x}, +{b.size}) and [{a.base:#x}, +{a.size})")  # fmt: skip
    return tuple(specs)


def _family_of(space_name: str | None) -> str:
    code = SPACE_CODES.get(space_name or "global", GLOBAL)
    for fam, codes, _ in _FAMILIES:
        if code in codes:
            return fam
    raise AssertionError(space_name)  # pragma: no cover


def _merge_extents(extents: Iterable[Extent]) -> list[tuple[int, int, list[str]]]:
    out: list[tuple[int, int, list[str]]] = []
    for e in sorted(extents, key=lambda e: (e.base, e.size)):
        lo, hi = e.base, e.base + e.size
        if out and lo < out[-1][1]:
            plo, phi, origins = out[-1]
            out[-1] = (plo, max(phi, hi), origins + [e.origin])
        else:
            out.append((lo, hi, [e.origin]))
    return out


def _on_seeds(rlo, rhi, s_lo, s_hi) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows [``rlo``, ``rhi``) against disjoint seed objects sorted by base [``s_lo``, ``s_hi``): each row's slot (the
    seeds starting at or below its lo), whether it lies inside the seed of its slot, whether it reaches over a
    seed's edge, and the index of its slot's seed (0 where none)."""
    slot = np.searchsorted(s_lo, rlo, side="right")  # seeds with base <= lo
    inside = np.zeros(rlo.size, dtype=bool)
    span = np.zeros(rlo.size, dtype=bool)
    jj = np.zeros(rlo.size, dtype=np.int64)
    k = s_lo.size
    if k:
        j = slot - 1
        has = j >= 0
        jj = np.where(has, j, 0)
        inside = has & (rlo >= s_lo[jj]) & (rhi <= s_hi[jj])
        span = has & (rlo < s_hi[jj]) & (rhi > s_hi[jj])
        nxt = np.where(slot < k, slot, k - 1)
        span |= (slot < k) & (rhi > s_lo[nxt])
    return slot, inside, span, jj


def assign_objects(space: np.ndarray, lo: np.ndarray, hi: np.ndarray, found: Objects,
                   explicit: Iterable[ObjectSpec] = ()) -> np.ndarray:  # fmt: skip
    """The object of each row (int16, -1 for none) by the objects that :func:`infer_from_bounds` found (``found``,
    from ``explicit`` and no extents) for rows that include these: a row inside an explicit object is that
    object's; one that reaches over an explicit object's edge is on none; any other lies inside the inferred
    object of its family that holds it (its rows were among those inferred from). So rows seen once to infer the
    objects can be assigned later in parts (``traces.sanitizer.decode`` streams a trace)."""
    if found.report.get("memcpy_ranges"):
        raise ValueError("assign_objects: objects inferred with host-copy extents")
    names = {s.name for s in explicit}
    obj = np.full(space.shape[0], -1, np.int16)
    for fam, codes, _ in _FAMILIES:
        rows = np.flatnonzero(np.isin(space, codes) & (hi > 0))
        if not rows.size:
            continue
        mine = sorted((o for o in found.objects if _family_of(o.space) == fam), key=lambda o: o.base)
        seeds = [o for o in mine if o.name in names]
        rest = [o for o in mine if o.name not in names]
        rlo, rhi = lo[rows], hi[rows]
        s_lo = np.array([o.base for o in seeds], np.uint64)
        _, inside, span, jj = _on_seeds(rlo, rhi, s_lo, np.array([o.end for o in seeds], np.uint64))
        obj[rows[inside]] = np.array([o.id for o in seeds], np.int16)[jj[inside]] if seeds else -1
        free = ~inside & ~span
        c_lo = np.array([o.base for o in rest], np.uint64)
        c_hi = np.array([o.end for o in rest], np.uint64)
        ci = np.searchsorted(c_lo, rlo[free], side="right") - 1
        ok = (ci >= 0) & (rhi[free] <= c_hi[np.maximum(ci, 0)]) if rest else np.zeros(ci.size, bool)
        obj[rows[free][ok]] = np.array([o.id for o in rest], np.int16)[ci[ok]]
    return obj


def infer_objects(
    space: np.ndarray,
    pc: np.ndarray,
    op: np.ndarray,
    width: np.ndarray,
    mask: np.ndarray,
    addr: np.ndarray,
    *,
    explicit: Iterable[ObjectSpec] = (),
    extents: Iterable[Extent] = (),
) -> Objects:
    """Assign every row an object (or -1) and describe the objects (module docstring)."""
    n = space.shape[0]
    lo = np.zeros(n, dtype=np.uint64)
    hi = np.zeros(n, dtype=np.uint64)
    if n:
        K.row_bounds(mask, addr, width, lo, hi)
    return infer_from_bounds(space, pc, op, width, lo, hi, explicit=explicit, extents=extents)


def infer_from_bounds(
    space: np.ndarray,
    pc: np.ndarray,
    op: np.ndarray,
    width: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    *,
    weight: np.ndarray | None = None,
    explicit: Iterable[ObjectSpec] = (),
    extents: Iterable[Extent] = (),
) -> Objects:
    """:func:`infer_objects` of rows given by their bounds (``lo``, the lowest active address; ``hi``, one past
    the highest active byte; 0, 0 for a row without active lanes). ``weight``: how many identical rows each
    row stands for (default 1 each): the objects are those of the rows repeated so (``_object_kernels.pc_ranges``'
    median gap counts the copies, and the tallies of space, width, writes and rows on two objects count them),
    so a decoder that streams a trace may pass its rows' distinct (space, pc, op, width, lo, hi) once each,
    counted (``traces.sanitizer.decode``)."""
    n = space.shape[0]
    weight = np.ones(n, np.int64) if weight is None else np.asarray(weight, np.int64)
    obj_key = np.full(n, -1, dtype=np.int64)  # provisional key per row: index into `cands`
    cands: list[dict[str, Any]] = []  # candidate objects, in id order once filtered
    explicit = tuple(explicit)
    report: dict[str, Any] = {"rows_on_two_objects": 0}

    # Explicit objects first, then copies, then inference, per address family.
    ex_by_fam: dict[str, list[ObjectSpec]] = {}
    for s in explicit:
        ex_by_fam.setdefault(_family_of(s.space), []).append(s)
    merged = _merge_extents(extents)
    report["memcpy_ranges"] = len(merged)

    for fam, codes, gap_floor in _FAMILIES:
        rows = np.flatnonzero(np.isin(space, codes) & (hi > 0))
        seeds: list[tuple[int, int, int]] = []  # (lo, hi, cand index)
        for s in ex_by_fam.get(fam, []):
            cands.append({"kind": "explicit", "name": s.name, "spec": s, "lo": s.base, "hi": s.base + s.size})
            seeds.append((s.base, s.base + s.size, len(cands) - 1))
        seeds.sort()
        for a, b in zip(seeds, seeds[1:]):
            if b[0] < a[1]:
                raise InputError(f"objects '{cands[a[2]]['name']}' and '{cands[b[2]]['name']}' overlap")
        if fam == "offchip":
            for mlo, mhi, origins in merged:
                if any(mlo < s_hi and s_lo < mhi for s_lo, s_hi, _ in seeds if cands[_]["kind"] == "explicit"):
                    report["memcpy_overridden"] = report.get("memcpy_overridden", 0) + 1
                    continue
                cands.append({"kind": "memcpy", "lo": mlo, "hi": mhi, "origin": origins})
                seeds.append((mlo, mhi, len(cands) - 1))
            seeds.sort()
        if rows.size == 0:
            continue
        rlo, rhi = lo[rows], hi[rows]
        s_lo = np.array([s[0] for s in seeds], dtype=np.uint64)
        s_hi = np.array([s[1] for s in seeds], dtype=np.uint64)
        s_id = np.array([s[2] for s in seeds], dtype=np.int64)
        slot, inside, span, jj = _on_seeds(rlo, rhi, s_lo, s_hi)
        obj_key[rows[inside]] = s_id[jj[inside]]
        report["rows_on_two_objects"] += int(weight[rows][span].sum())
        free = ~inside & ~span
        if not free.any():
            continue
        f_rows, f_lo, f_hi, f_slot = rows[free], rlo[free], rhi[free], slot[free]
        if gap_floor is None:  # one object for the family
            cands.append({"kind": "inferred", "lo": int(f_lo.min()), "hi": int(f_hi.max())})
            obj_key[f_rows] = len(cands) - 1
            continue
        # Per (slot, pc) ranges, then the union of overlapping ranges.
        key = f_slot.astype(np.int64) * (1 << 32) + pc[f_rows].astype(np.int64)
        order = np.lexsort((f_lo, key))
        o_lo = np.empty(order.size, dtype=np.uint64)
        o_hi = np.empty(order.size, dtype=np.uint64)
        k = K.pc_ranges(key[order], f_lo[order], f_hi[order], weight[f_rows][order], gap_floor, GAP_FACTOR, o_lo, o_hi)
        o = np.argsort(o_lo[:k], kind="stable")
        c_lo = np.empty(k, dtype=np.uint64)
        c_hi = np.empty(k, dtype=np.uint64)
        m = K.merge_overlapping(o_lo[:k][o], o_hi[:k][o], c_lo, c_hi)
        c_lo, c_hi = c_lo[:m], c_hi[:m]
        first = len(cands)
        for a, b in zip(c_lo.tolist(), c_hi.tolist()):
            cands.append({"kind": "inferred", "lo": a, "hi": b})
        ci = np.searchsorted(c_lo, f_lo, side="right") - 1
        assert np.all(ci >= 0) and np.all(f_hi <= c_hi[ci])
        obj_key[f_rows] = first + ci

    # Describe the candidates that have rows (explicit ones always), number them.
    used = np.bincount(obj_key[obj_key >= 0], minlength=len(cands)) if cands else np.zeros(0, np.int64)
    ids = np.full(len(cands), -1, dtype=np.int64)
    objects: list[ObjectInfo] = []
    origins: dict[str, str] = {}
    names_taken = {s.name for s in explicit}
    counters: Counter[str] = Counter()
    memcpy_untouched = 0
    order_kinds = {"explicit": 0, "memcpy": 1, "inferred": 2}
    nc = max(len(cands), 1)
    keyed = obj_key >= 0
    kk, wk = obj_key[keyed], weight[keyed]
    sp_table = np.bincount(kk * 8 + space[keyed].astype(np.int64), weights=wk, minlength=nc * 8).reshape(nc, 8)
    w_table = np.bincount(kk * 17 + width[keyed].astype(np.int64), weights=wk, minlength=nc * 17).reshape(nc, 17)
    wr_table = np.bincount(kk, weights=(op[keyed] != LOAD), minlength=nc)
    for ci in sorted(
        range(len(cands)),
        key=lambda c: (order_kinds[cands[c]["kind"]], c if cands[c]["kind"] == "explicit" else 0, cands[c]["lo"]),
    ):
        c = cands[ci]
        if c["kind"] != "explicit" and used[ci] == 0:
            memcpy_untouched += c["kind"] == "memcpy"
            continue
        sp_counts = sp_table[ci]
        w_counts = w_table[ci]
        written = bool(wr_table[ci] > 0)
        major = int(np.argmax(sp_counts)) if sp_counts.sum() else None
        if c["kind"] == "explicit":
            s: ObjectSpec = c["spec"]
            name = s.name
            sp = s.space or (SPACE_NAMES[major] if major is not None else "global")
            elem = s.elem_bytes or (int(np.argmax(w_counts)) if w_counts.sum() else 4)
            shape = s.shape
            origin = "explicit (--objects)"
        else:
            sp = SPACE_NAMES[major]
            elem = int(np.argmax(w_counts))
            shape = None
            prefix = "htod" if c["kind"] == "memcpy" else _PREFIX[major]
            while True:
                name = f"{prefix}{counters[prefix]}"
                counters[prefix] += 1
                if name not in names_taken:
                    break
            origin = ("MemcpyHtoD " + "; ".join(c["origin"])) if c["kind"] == "memcpy" else "inferred from addresses"
        names_taken.add(name)
        oid = len(objects)
        ids[ci] = oid
        objects.append(ObjectInfo(oid, name, sp, int(c["lo"]), int(c["hi"] - c["lo"]), elem, shape, written))
        origins[name] = origin
    if len(objects) > 32767:
        raise InputError(f"{len(objects)} objects inferred; the trace holds at most 32767 (name them with --objects)")
    obj = np.where(obj_key >= 0, ids[np.maximum(obj_key, 0)], -1).astype(np.int16)
    report["memcpy_untouched"] = memcpy_untouched
    report["objects"] = origins
    if report["rows_on_two_objects"]:
        log.warning("%d rows reach into two objects or over an object's edge; they are on no object (obj -1)",
                    report["rows_on_two_objects"])  # fmt: skip
    return Objects(obj, tuple(objects), report)
