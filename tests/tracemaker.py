"""Small hand-built traces for the tests (a vecadd-shaped kernel).

Kept as plain numpy so that every expected value in the tests can be worked out
by hand: warp w of block c reads A and B at element (c * warps + w) * 32 + lane and
writes C there; seq of the three accesses is 0, 4, 8.
"""

from __future__ import annotations

import numpy as np

import traces

BASES = {"A": 0x10000, "B": 0x20000, "C": 0x30000}


def vecadd(ctas: int = 2, warps_per_block: int = 2, mask: int = 0xFFFFFFFF):
    """Columns and KernelInfo of a tiny vecadd: 3 rows per warp, 4-byte lanes."""
    n_warps = ctas * warps_per_block
    elems = n_warps * 32
    objects = tuple(
        traces.ObjectInfo(i, name, "global", BASES[name], elems * 4, 4, None, name == "C")
        for i, name in enumerate("ABC")
    )
    info = traces.KernelInfo(
        kernel="vecadd",
        grid=(ctas, 1, 1),
        block=(32 * warps_per_block, 1, 1),
        objects=objects,
        instructions=traces.Instructions(executed=10 * n_warps, warps=n_warps, fp32=n_warps, ldst=3 * n_warps),
        regs_per_thread=8,
        source={"format": "test"},
    )
    gw = np.repeat(np.arange(n_warps), 3)
    k = np.tile(np.arange(3), n_warps)
    lanes = np.arange(32, dtype=np.uint64)
    active = ((mask >> np.arange(32)) & 1).astype(bool)
    base = np.array([BASES["A"], BASES["B"], BASES["C"]], dtype=np.uint64)[k]
    addr = base[:, None] + (gw.astype(np.uint64) * 32)[:, None] * 4 + lanes[None, :] * 4
    addr[:, ~active] = 0
    n = len(gw)
    cols = {
        "cta": (gw // warps_per_block).astype(np.int32),
        "warp": (gw % warps_per_block).astype(np.int32),
        "seq": (k * 4).astype(np.int64),
        "pc": (k * 16).astype(np.int32),
        "op": (k == 2).astype(np.int8),
        "space": np.zeros(n, np.int8),
        "width": np.full(n, 4, np.int8),
        "mask": np.full(n, mask, np.uint32),
        "addr": addr,
        "obj": k.astype(np.int16),
    }
    return cols, info


def warp_rows(info, rows) -> traces.Trace:
    """A validated trace of whole-warp rows of 4-byte lanes in global space (all 32 lanes active): ``rows`` are
    (cta, warp, seq, pc, op, addresses (32,), object id)."""
    n = len(rows)
    col = lambda k, dt: np.array([r[k] for r in rows], dt)  # noqa: E731
    cols = {
        "cta": col(0, np.int32), "warp": col(1, np.int32), "seq": col(2, np.int64), "pc": col(3, np.int32),
        "op": col(4, np.int8), "space": np.zeros(n, np.int8), "width": np.full(n, 4, np.int8),
        "mask": np.full(n, 0xFFFFFFFF, np.uint32), "addr": np.stack([r[5] for r in rows]).astype(np.uint64),
        "obj": col(6, np.int16),
    }  # fmt: skip
    t = traces.Trace(**cols, info=info)
    traces.validate(t)
    return t
