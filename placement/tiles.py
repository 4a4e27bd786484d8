"""Where each block's tile of a staged object starts, as a formula a developer can paste.

The staging model (``traces.staging``) sizes a tile by the largest bounding box any block
touches in a window; the staging code also needs the box's first row and column for
block (blockIdx.x, blockIdx.y, blockIdx.z) and window j. This module reads them off the
trace and fits ``a*blockIdx.x + b*blockIdx.y + c*blockIdx.z + d*j + e`` with integer
coefficients. A fit that holds for every block and window is exact; one that holds for
at least ``EDGE_SHARE`` of them is given with the count of the others (edge blocks whose
box is clipped by the array's border, or a halo clamped at 0); otherwise there is none.
Where the windows' origins are not a multiple of j (a multi-channel convolution whose
window j is channel j // 9, row j // 3 % 3 and column j % 3 of the mask), the origin is
``a*blockIdx.x + b*blockIdx.y + c*blockIdx.z + table[j]``, a table of one offset per
window (``Origin.row_table``, ``col_table``), when that fits more blocks and windows.

The decisions and costs side of staging, in ``placement``, with ``placement.staging``
(the staging plan whose tiles these origins place) and ``placement.streamstaging`` (its
``origin`` gathers the corners of a streamed trace); the mechanics side is
``traces.staging`` and ``traces._staging_kernels``.
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
    row_table: tuple[int, ...] = ()
    """Per window j, the offset added to ``row`` (empty: ``row`` alone is the origin)."""
    col_table: tuple[int, ...] = ()
    """Per window j, the offset added to ``col`` (empty: ``col`` alone is the origin)."""
    windows: int = 0
    """The windows that hold an access (the last window with one, plus 1; 0: not known)."""
    length: int = 0
    """Accesses of each warp to the object per window, L = ceil(K / W) (``traces.staging``): window j holds its
    accesses j L .. j L + L - 1 (0: not known)."""


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


def _fit_table(x: np.ndarray, win: np.ndarray, used: int, y: np.ndarray) -> tuple[str | None, tuple[int, ...], int]:
    """Integer fit of ``y`` on the block columns of ``x`` plus one offset per window (``win`` in 0..used-1):
    (expression of the blocks, the offsets, points it misses) or (None, (), n)."""
    onehot = (win[:, None] == np.arange(used)[None, :]).astype(np.float64)
    a = np.concatenate([x[:, :3].astype(np.float64), onehot], axis=1)
    coef, *_ = np.linalg.lstsq(a, y.astype(np.float64), rcond=None)
    coef = np.round(coef).astype(np.int64)
    miss = int((a.astype(np.int64) @ coef != y).sum())
    if miss > (1.0 - EDGE_SHARE) * len(y):
        return None, (), len(y)
    blocks = _expr(np.r_[coef[:3], 0, 0])
    return blocks, tuple(int(v) for v in coef[3:]), miss


def _best(x: np.ndarray, win: np.ndarray, used: int, y: np.ndarray) -> tuple[str | None, tuple[int, ...], int]:
    """The linear fit, or the per-window table's where that misses fewer points."""
    e, miss = _fit(x, y)
    if miss and used > 1:
        te, table, tmiss = _fit_table(x, win, used, y)
        if tmiss < miss:
            return te, table, tmiss
    return e, (), miss


def origin(facts: StagingFacts, name: str, windows: int) -> Origin:
    """The tile origin of ``name`` per block and window when staged in ``windows`` windows."""
    trace, info = facts.trace, facts.info
    rows = facts.rows(name)
    if rows.shape[0] == 0:
        return Origin(None, None, 0, 0)
    k = facts.access(name).ordinals
    return fit_origin(info, name, windows, *corners(trace, rows, name, k, windows), ordinals=k)


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
    elem = (trace.addr[rows].astype(np.int64) - o.base) // o.elem_bytes
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


def fit_origin(info, name: str, windows: int, uniq: np.ndarray, row0: np.ndarray, col0: np.ndarray,
               ordinals: int = 0) -> Origin:  # fmt: skip
    """The formulas of ``corners``' points (of every block: a streamed trace's groups concatenated); ``ordinals``
    the object's K, for ``Origin.length``."""
    o = info.object(name)
    cols = o.shape[1] if o.shape else 0
    g_cta, g_win = uniq // (windows + 1), uniq % (windows + 1)
    gx, gy, _ = info.grid
    x = np.stack([g_cta % gx, (g_cta // gx) % gy, g_cta // (gx * gy), g_win, np.ones_like(g_cta)], axis=1)
    used = int(g_win.max()) + 1 if len(uniq) else 0
    row_e, row_t, row_miss = _best(x, g_win, used, row0) if cols else ("0", (), 0)
    col_e, col_t, col_miss = _best(x, g_win, used, col0)
    length = -(-ordinals // max(windows, 1)) if ordinals else 0
    return Origin(row_e, col_e, max(row_miss, col_miss), len(uniq), row_t, col_t, used, length)


__all__ = ["EDGE_SHARE", "Origin", "corners", "fit_origin", "origin"]
