"""A one-pass summary of a trace: what `placement info` shows.

Streams the trace (so it works on traces larger than memory) and counts rows,
warps with at least one row, and per object the accesses by space and op and the
distinct bytes touched by active lanes. What it holds grows with the rows (the
warps seen, the touched byte ranges merged), never with the sizes the metadata
claims for the grid or the objects.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _kernels as K
from .io import iter_batches
from .schema import OP_NAMES, SPACE_NAMES, KernelInfo, ObjectInfo


@dataclass(frozen=True)
class ObjectSummary:
    info: ObjectInfo
    bytes_touched: int
    accesses: dict[str, int]
    """Warp-level accesses (rows) per space name, spaces with none left out."""
    ops: dict[str, int]
    """Rows per op name (load, store, atomic, reduction), ops with none left out."""


@dataclass(frozen=True)
class TraceSummary:
    path: str
    info: KernelInfo
    rows: int
    warps: int
    rows_per_space: dict[str, int]
    rows_per_op: dict[str, int]
    unassigned_rows: int
    """Rows with obj == -1 (stack, spills or unknown)."""
    objects: tuple[ObjectSummary, ...]


def summarize(path, batch_rows: int = 1 << 18) -> TraceSummary:
    """Summarise a trace in one streamed, validated pass."""
    info = None
    rows = 0
    seen = np.zeros(0, dtype=np.int64)  # warps with a row: cta * warps_per_block + warp, sorted
    objs = None
    by_obj_space = None
    by_obj_op = None
    spans = (np.zeros(0, np.int16), np.zeros(0, np.uint64), np.zeros(0, np.uint64))
    for t in iter_batches(path, rows=batch_rows):
        if info is None:
            info = t.info
            objs = info.objects
            n_ids = info.n_ids
            # Row 0 of the count tables is obj -1; row id+1 is object id.
            by_obj_space = np.zeros((n_ids + 1, len(SPACE_NAMES)), dtype=np.int64)
            by_obj_op = np.zeros((n_ids + 1, len(OP_NAMES)), dtype=np.int64)
        n = len(t)
        rows += n
        seen = np.union1d(seen, t.cta.astype(np.int64) * info.warps_per_block + t.warp)
        oi = t.obj.astype(np.int64) + 1
        np.add.at(by_obj_space, (oi, t.space.astype(np.int64)), 1)
        np.add.at(by_obj_op, (oi, t.op.astype(np.int64)), 1)
        spans = _merge_touched(spans, t)
    if info is None:  # an empty trace: iter_batches yields nothing, read the footer instead
        from .io import read_info

        info = read_info(path)
        return TraceSummary(str(path), info, 0, 0, {}, {}, 0, tuple(ObjectSummary(o, 0, {}, {}) for o in info.objects))

    def named(counts: np.ndarray, names) -> dict[str, int]:
        return {names[k]: int(v) for k, v in enumerate(counts) if v}

    touched = np.zeros(max(len(by_obj_space) - 1, 1), dtype=np.uint64)
    np.add.at(touched, spans[0].astype(np.int64), spans[2] - spans[1])
    objects = tuple(
        ObjectSummary(
            info=o,
            bytes_touched=int(touched[o.id]),
            accesses=named(by_obj_space[o.id + 1], SPACE_NAMES),
            ops=named(by_obj_op[o.id + 1], OP_NAMES),
        )
        for o in objs
    )
    return TraceSummary(
        path=str(path),
        info=info,
        rows=rows,
        warps=int(seen.size),
        rows_per_space=named(by_obj_space.sum(axis=0), SPACE_NAMES),
        rows_per_op=named(by_obj_op.sum(axis=0), OP_NAMES),
        unassigned_rows=int(by_obj_space[0].sum()),
        objects=objects,
    )


def _merge_touched(spans, t):
    """The byte ranges touched so far, merged with those of batch ``t``."""
    cap = max(len(t), 16)
    while True:
        o = np.empty(cap, np.int16)
        lo = np.empty(cap, np.uint64)
        hi = np.empty(cap, np.uint64)
        k = K.row_spans(t.obj, t.mask, t.addr, t.width, o, lo, hi)
        if k >= 0:
            break
        cap *= 4
    o, lo, hi = (np.concatenate([a, b[:k]]) for a, b in zip(spans, (o, lo, hi)))
    order = np.lexsort((lo, o))
    o, lo, hi = o[order], lo[order], hi[order]
    k = K.merge_spans(o, lo, hi)
    return o[:k], lo[:k], hi[:k]
