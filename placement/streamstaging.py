"""``placement.staging.StagingFacts`` of a trace read in groups of whole blocks.

Every staging fact is a reduction over blocks, so it can be gathered group by group
(``traces.blockgroups``) in bounded memory, with the same values as the whole trace's:

- pass A (``feed``, during the stream evaluator's first read): per object the most
  accesses of one warp (K: a warp lies inside its block), the loads, stores and atomics,
  the lowest and highest written element (plain stores only and all writes), and the
  trace's highest pc (the staging code's pcs go above it);
- pass B (on the first footprint or overlap asked, one more read): per object the
  largest tile rows and widest tile row of any block, for every window count up to the
  trace's largest K (``traces.staging.footprint``'s table, whose maxima over blocks are
  taken over groups: a footprint asked for fewer window counts is a prefix of it), and
  for written objects the first element two blocks both write (the owner array of
  ``traces.staging.write_overlap`` kept across groups, visited in the same order).
"""

from __future__ import annotations

import logging
from typing import Callable, Iterator

import numpy as np

import traces
from traces import _staging_kernels as SK
from traces import staging as ts

log = logging.getLogger(__name__)


class StreamStagingFacts:
    """The staging facts (``access``, ``footprint``, ``overlap``, ``writeback``) of a streamed trace.

    ``groups()`` gives the trace again in groups of whole blocks (for pass B).
    """

    def __init__(self, info: traces.KernelInfo, groups: Callable[[], Iterator[traces.Trace]]):
        self.info = info
        self._groups = groups
        self.n_ids = max((o.id for o in info.objects), default=-1) + 1
        n = max(self.n_ids, 1)
        self._k = np.zeros(n, np.int64)
        self._ops = np.zeros((4, n), np.int64)
        self._wlo = np.full((2, n), SK.BIG, np.int64)  # [plain_only]
        self._whi = np.full((2, n), -SK.BIG, np.int64)
        self.pc_max = -1
        self._bases = np.zeros(n, np.uint64)
        self._elems = np.ones(n, np.int64)
        for o in info.objects:
            self._bases[o.id], self._elems[o.id] = o.base, o.elem_bytes
        self._fp: dict[int, ts.Footprint] | None = None
        self._overlap: dict[tuple[int, bool], tuple[int, int, int] | None | str] = {}
        self.reads = 0
        """Reads of the trace pass B made."""

    # ---- pass A ----------------------------------------------------------------------------------------
    def feed(self, g: traces.Trace) -> None:
        """Pass A over one group of whole blocks."""
        if len(g) == 0:
            return
        self.pc_max = max(self.pc_max, int(g.pc.max()))
        obj = g.obj.astype(np.int64)
        keep = obj >= 0
        if not keep.any():
            return
        n = self._k.shape[0]
        o = obj[keep]
        self._ops += np.bincount(g.op[keep].astype(np.int64) * n + o, minlength=4 * n).reshape(4, n)
        wpb = self.info.warps_per_block
        cta = g.cta[keep].astype(np.int64)
        warp_key = (cta - int(cta.min())) * wpb + g.warp[keep]
        per = np.bincount(warp_key * n + o, minlength=n)
        per = np.pad(per, (0, -per.shape[0] % n)).reshape(-1, n)
        np.maximum(self._k, per.max(axis=0), out=self._k)
        SK.write_ranges(g.obj, g.op, g.mask, g.addr, g.width, self._bases, self._elems, self._wlo, self._whi)

    # ---- the StagingFacts interface -------------------------------------------------------------------
    def _id(self, name: str) -> int:
        return self.info.object(name).id

    def access(self, name: str) -> ts.Access:
        i = self._id(name)
        loads, stores = int(self._ops[0, i]), int(self._ops[1, i])
        return ts.Access(i, int(self._k[i]), loads, stores, int(self._ops[2, i] + self._ops[3, i]))

    def writeback(self, name: str) -> str:
        """'none', 'store' or 'atomic' (``StagingFacts.writeback``)."""
        a = self.access(name)
        if not a.written:
            return "none"
        if a.stores == 0 and a.loads == 0:
            return "atomic"
        return "store"

    def footprint(self, name: str, windows: tuple[int, ...]) -> ts.Footprint:
        if self._fp is None:
            self._pass_b()
        fp = self._fp[self._id(name)]
        idx = [fp.windows.index(w) for w in windows]
        return ts.Footprint(fp.obj, tuple(windows), tuple(fp.bytes[i] for i in idx), tuple(fp.pitch[i] for i in idx))

    def overlap(self, name: str, plain_only: bool) -> tuple[int, int, int] | None | str:
        key = (self._id(name), plain_only)
        if key not in self._overlap:
            # with the overlaps staging checks (every stored-back object's), in one read
            stored = [(o.id, False) for o in self.info.objects if self.writeback(o.name) == "store"]
            self._pass_b(overlap=list(dict.fromkeys(stored + [key])))
        return self._overlap[key]

    def origin(self, name: str, windows: int):
        """``placement.tiles.origin`` of the streamed trace (one more read: every block's tile corners)."""
        from .tiles import Origin, corners, fit_origin

        i = self._id(name)
        if self._ops[:, i].sum() == 0:
            return Origin(None, None, 0, 0)
        self.reads += 1
        parts = []
        for g in self._groups():
            rows = ts.object_rows(g, ts.program_order(g), i)
            if rows.shape[0]:
                parts.append(corners(g, rows, name, int(self._k[i]), windows))
        uniq, row0, col0 = (np.concatenate(c) for c in zip(*parts))
        return fit_origin(self.info, name, windows, uniq, row0, col0)

    # ---- pass B ----------------------------------------------------------------------------------------
    def _owner(self, i: int, plain: bool) -> tuple[np.ndarray | None, int, str | None]:
        lo, hi = int(self._wlo[int(plain), i]), int(self._whi[int(plain), i])
        if hi < lo:
            return None, lo, None
        if hi - lo + 1 > ts.MAX_OWNER_ELEMENTS:
            return None, lo, f"written range of {hi - lo + 1:,} elements is too large to check for overlap"
        return np.full(hi - lo + 1, -1, np.int32), lo, None

    def _pass_b(self, overlap: list[tuple[int, bool]] | None = None) -> None:
        """Footprints of every object (when not yet known) and the overlaps asked (default: every written object's
        with all writes, the one staging checks), in one read of the trace."""
        objs = [o.id for o in self.info.objects]
        want_fp = self._fp is None
        if overlap is None:
            overlap = [(o.id, False) for o in self.info.objects if self.writeback(o.name) == "store"]
        overlap = [key for key in overlap if key not in self._overlap]
        owners = {}
        for key in overlap:
            owner, lo, why = self._owner(*key)
            if why is not None or owner is None:
                self._overlap[key] = why
            else:
                owners[key] = (owner, lo)
        if not want_fp and not owners:
            return
        k_all = int(self._k.max()) if self._k.shape[0] else 0
        wins = ts.window_counts(k_all)
        rows_max = {i: np.zeros(len(wins), np.int64) for i in objs}
        pitch_max = {i: np.zeros(len(wins), np.int64) for i in objs}
        found: dict[tuple[int, bool], tuple[int, int, int]] = {}
        log.info("staging facts: one more read of the trace (footprints %s, overlaps of %d objects)", want_fp,
                 len(owners))  # fmt: skip
        self.reads += 1
        for g in self._groups():
            order = ts.program_order(g)
            for i in objs:
                if self._k[i] == 0:
                    continue
                rows = ts.object_rows(g, order, i)
                if rows.shape[0] == 0:
                    continue
                base, elem, _ = ts._shape(g, i)
                if want_fp:
                    acc = self.access(self.info.object(i).name)
                    fp = ts.footprint(g, rows, acc, wins)
                    p = np.array(fp.pitch, np.int64)
                    r = np.where(p > 0, np.array(fp.bytes, np.int64) // np.maximum(p * elem, 1), 0)
                    np.maximum(rows_max[i], r, out=rows_max[i])
                    np.maximum(pitch_max[i], p, out=pitch_max[i])
                for plain in (False, True):
                    key = (i, plain)
                    if key in owners and key not in found:
                        owner, lo = owners[key]
                        a, b, e = SK.write_conflict(rows, g.cta, g.op, g.mask, g.addr, g.width, base, elem, lo, owner,
                                                    plain)  # fmt: skip
                        if a >= 0:
                            found[key] = (int(a), int(b), int(e))
        for key in owners:
            self._overlap[key] = found.get(key)
        if want_fp:
            self._fp = {}
            for i in objs:
                elem = self.info.object(i).elem_bytes
                b = tuple(int(x) for x in rows_max[i] * pitch_max[i] * elem)
                self._fp[i] = ts.Footprint(i, wins, b, tuple(int(x) for x in pitch_max[i]))


__all__ = ["StreamStagingFacts"]
