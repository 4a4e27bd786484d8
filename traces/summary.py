"""A one-pass summary of a trace: what `placement info` shows.

Streams the trace (so it works on traces larger than memory) and counts rows,
warps with at least one row, and per object the accesses by space and op and the
distinct bytes touched by active lanes.
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
    seen = None
    objs = None
    by_obj_space = None
    by_obj_op = None
    bits = offsets = bases = None
    for t in iter_batches(path, rows=batch_rows):
        if info is None:
            info = t.info
            seen = np.zeros(info.ctas * info.warps_per_block, dtype=bool)
            objs = info.objects
            n_ids = max((o.id for o in objs), default=-1) + 1
            # Row 0 of the count tables is obj -1; row id+1 is object id.
            by_obj_space = np.zeros((n_ids + 1, len(SPACE_NAMES)), dtype=np.int64)
            by_obj_op = np.zeros((n_ids + 1, len(OP_NAMES)), dtype=np.int64)
            offsets = np.zeros(max(n_ids, 1), dtype=np.int64)
            bases = np.zeros(max(n_ids, 1), dtype=np.int64)
            total = 0
            for o in objs:
                offsets[o.id] = total
                bases[o.id] = o.base
                total += o.size
            bits = np.zeros(total // 8 + 1, dtype=np.uint8)
        n = len(t)
        rows += n
        seen[t.cta.astype(np.int64) * info.warps_per_block + t.warp] = True
        oi = t.obj.astype(np.int64) + 1
        np.add.at(by_obj_space, (oi, t.space.astype(np.int64)), 1)
        np.add.at(by_obj_op, (oi, t.op.astype(np.int64)), 1)
        if objs:
            K.mark_touched(t.obj, t.mask, t.addr, t.width, bases, offsets, bits)
    if info is None:  # an empty trace: iter_batches yields nothing, read the footer instead
        from .io import read_info

        info = read_info(path)
        return TraceSummary(str(path), info, 0, 0, {}, {}, 0, tuple(ObjectSummary(o, 0, {}, {}) for o in info.objects))

    def named(counts: np.ndarray, names) -> dict[str, int]:
        return {names[k]: int(v) for k, v in enumerate(counts) if v}

    objects = tuple(
        ObjectSummary(
            info=o,
            bytes_touched=int(K.count_bits(bits, offsets[o.id], offsets[o.id] + o.size)),
            accesses=named(by_obj_space[o.id + 1], SPACE_NAMES),
            ops=named(by_obj_op[o.id + 1], OP_NAMES),
        )
        for o in objs
    )
    return TraceSummary(
        path=str(path),
        info=info,
        rows=rows,
        warps=int(seen.sum()),
        rows_per_space=named(by_obj_space.sum(axis=0), SPACE_NAMES),
        rows_per_op=named(by_obj_op.sum(axis=0), OP_NAMES),
        unassigned_rows=int(by_obj_space[0].sum()),
        objects=objects,
    )
