"""Where each block's tile of a staged object starts, as a formula a developer can paste.

The staging model (``traces.staging``) sizes a tile by the largest bounding box any block
touches in a window; the staging code also needs the box's first row and column for
block (blockIdx.x, blockIdx.y, blockIdx.z) and window j. This module reads them off the
trace and fits ``a*blockIdx.x + b*blockIdx.y + c*blockIdx.z + d*j + e`` with integer
coefficients. A fit that holds for every block and window is exact; one that holds for
at least ``EDGE_SHARE`` of them is given with the count of the others (edge blocks whose
box is clipped by the array's border, or a halo clamped at 0); otherwise there is none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .staging import StagingFacts

EDGE_SHARE = 0.9
_VARS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "j")


@dataclass(frozen=True)
class Origin:
    """The first row and column of a block's tile in window j (C expressions), or None where no formula fits."""

    row: str | None
    col: str | None
    misses: int
    """Blocks x windows the formulas do not match (0: exact)."""
    points: int


def _expr(coef: np.ndarray) -> str:
    terms = []
    for c, v in zip(coef[:-1], _VARS):
        c = int(c)
        if c:
            terms.append(v if c == 1 else f"{c} * {v}")
    k = int(coef[-1])
    if k or not terms:
        terms.append(str(k))
    return " + ".join(terms).replace("+ -", "- ")


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[str | None, int]:
    """Integer linear fit of ``y`` on the columns of ``x``; (expression, points it misses) or (None, n)."""
    coef, *_ = np.linalg.lstsq(x.astype(np.float64), y.astype(np.float64), rcond=None)
    coef = np.round(coef).astype(np.int64)
    miss = int((x @ coef != y).sum())
    if miss > (1.0 - EDGE_SHARE) * len(y):
        return None, len(y)
    return _expr(coef), miss


def origin(facts: StagingFacts, name: str, windows: int) -> Origin:
    """The tile origin of ``name`` per block and window when staged in ``windows`` windows."""
    trace, info = facts.trace, facts.info
    rows = facts.rows(name)
    if rows.shape[0] == 0:
        return Origin(None, None, 0, 0)
    return fit_origin(info, name, windows, *corners(trace, rows, name, facts.access(name).ordinals, windows))


def corners(trace, rows: np.ndarray, name: str, ordinals: int, windows: int) -> tuple[np.ndarray, ...]:
    """(block x (windows + 1) + window, first row, first column) of each block and window the object's ``rows``
    (in program order; whole blocks) touch, sorted by the first; ``ordinals`` the whole trace's K."""
    info = trace.info
    o = info.object(name)
    length = -(-max(ordinals, 1) // max(windows, 1))
    cta = trace.cta[rows].astype(np.int64)
    warp = trace.warp[rows].astype(np.int64)
    key = cta * info.warps_per_block + warp
    # ordinal of each access within its warp (rows are in program order, warps contiguous)
    start = np.r_[True, key[1:] != key[:-1]]
    first = np.maximum.accumulate(np.where(start, np.arange(len(key)), 0))
    window = (np.arange(len(key)) - first) // length
    lanes = ((trace.mask[rows][:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)
    elem = ((trace.addr[rows].astype(np.int64) - o.base) // o.elem_bytes)
    cols = o.shape[1] if o.shape else 0
    r = elem // cols if cols else np.zeros_like(elem)
    c = elem % cols if cols else elem
    big = np.iinfo(np.int64).max
    rmin = np.where(lanes, r, big).min(axis=1)
    cmin = np.where(lanes, c, big).min(axis=1)
    active = lanes.any(axis=1)
    group = cta[active] * (windows + 1) + window[active]
    uniq, inv = np.unique(group, return_inverse=True)
    row0 = np.full(len(uniq), big)
    col0 = np.full(len(uniq), big)
    np.minimum.at(row0, inv, rmin[active])
    np.minimum.at(col0, inv, cmin[active])
    return uniq, row0, col0


def fit_origin(info, name: str, windows: int, uniq: np.ndarray, row0: np.ndarray, col0: np.ndarray) -> Origin:
    """The formulas of ``corners``' points (of every block: a streamed trace's groups concatenated)."""
    o = info.object(name)
    cols = o.shape[1] if o.shape else 0
    g_cta, g_win = uniq // (windows + 1), uniq % (windows + 1)
    gx, gy, _ = info.grid
    x = np.stack([g_cta % gx, (g_cta // gx) % gy, g_cta // (gx * gy), g_win, np.ones_like(g_cta)], axis=1)
    row_e, row_miss = _fit(x, row0) if cols else ("0", 0)
    col_e, col_miss = _fit(x, col0)
    return Origin(row_e, col_e, max(row_miss, col_miss), len(uniq))


__all__ = ["EDGE_SHARE", "Origin", "corners", "fit_origin", "origin"]
