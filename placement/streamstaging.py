"""``placement.staging.StagingFacts`` of a trace read in groups of whole blocks.

Every staging fact is a reduction over blocks, so it can be gathered group by group
(``traces.blockgroups``) in bounded memory, with the same values as the whole trace's:

- pass A (``feed``, during the stream evaluator's first read): per object the most
  accesses of one warp (K: a warp lies inside its block), the loads, stores and atomics
  (and the loads whose lanes read more than one address),
  the lowest and highest written element (plain stores only and all writes), and the
  trace's highest pc (the staging code's pcs go above it);
- pass B (on the first footprint or overlap asked, one more read): per object the
  largest tile rows and widest tile row of any block, for every window count up to the
  trace's largest K (``traces.staging.footprint``'s table, whose maxima over blocks are
  taken over groups: a footprint asked for fewer window counts is a prefix of it), and
  for written objects the first element two blocks both write, visited in
  ``traces.staging.write_overlap``'s order. Its int32 owner per element becomes one byte
  (``_staging_kernels.write_conflict_ordered``: unwritten, written by an earlier block, by
  the current one; blocks come in order), a quarter of the memory (427 MiB for the output
  of a 10 M-row vecadd); the earlier block of a conflict costs one more read
  (``first_writer``).

The decisions and costs side of staging, in ``placement``, beside ``placement.staging``
(whose decisions these facts feed) and ``placement.tiles`` (whose tile corners
``origin`` gathers group by group); the mechanics side is ``traces.staging`` and its
kernels, ``traces._staging_kernels``.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterator

import numpy as np

import traces
from traces import _staging_kernels as SK
from traces import staging as ts

from .staging import choose

log = logging.getLogger(__name__)

TOUCHED = 1 << 16
"""First size of the list of elements the current block has written (doubled when a block writes more)."""


class StreamStagingFacts:
    """The staging facts (``access``, ``footprint``, ``overlap``, ``writeback``) of a streamed trace.

    ``groups()`` gives the trace again in groups of whole blocks (for pass B).
    """

    def __init__(self, info: traces.KernelInfo, groups: Callable[[], Iterator[traces.Trace]]):
        self.info = info
        self._groups = groups
        self.n_ids = info.n_ids
        n = max(self.n_ids, 1)
        self._k = np.zeros(n, np.int64)
        self._ops = np.zeros((4, n), np.int64)
        self._div = np.zeros(n, np.int64)
        self._wlo = np.full((2, n), SK.BIG, np.int64)  # [plain_only]
        self._whi = np.full((2, n), -SK.BIG, np.int64)
        self.pc_max = -1
        self._bases = np.zeros(n, np.uint64)
        self._elems = np.ones(n, np.int64)
        for o in info.objects:
            self._bases[o.id], self._elems[o.id] = o.base, o.elem_bytes
        self._fp: dict[int, ts.Footprint] | None = None
        self._pads: dict[tuple[int, int, int, int], tuple[int, int, int]] = {}
        self._pad_rows: dict[int, traces.Trace] = {}  # a 2D object's first accesses (ts.PAD_SAMPLE_ROWS), for pad()
        self._asked: set[int] = set()  # window counts asked for (";windows=K") beyond those measured by default
        self._overlap: dict[tuple[int, bool], tuple[int, int, int] | None | str] = {}
        self._later: dict[tuple[int, bool], tuple[int, int]] = {}  # conflicts whose earlier block is not known yet
        self.reads = 0
        """Reads of the trace pass B made."""

    @classmethod
    def read(cls, path, rows: int) -> "StreamStagingFacts":
        """The facts of trace file ``path`` after pass A, in one validated read of ``rows`` rows at a time, for a
        caller that checks staged placements before it evaluates them (``placement batch``'s plan); a
        ``ValueError`` names the first row out of block order (``traces.blockgroups``)."""
        from traces.blockgroups import block_groups

        facts = cls(traces.read_info(path), lambda: block_groups(traces.iter_batches(path, rows, validate=False)))
        for g in block_groups(traces.iter_batches(path, rows, validate=True)):
            facts.feed(g)
        return facts

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
        SK.divergent_loads(np.arange(len(g)), g.obj, g.op, g.mask, g.addr, self._div)

    # ---- the StagingFacts interface -------------------------------------------------------------------
    def _id(self, name: str) -> int:
        return self.info.object(name).id

    def access(self, name: str) -> ts.Access:
        i = self._id(name)
        loads, stores = int(self._ops[0, i]), int(self._ops[1, i])
        return ts.Access(i, int(self._k[i]), loads, stores, int(self._ops[2, i] + self._ops[3, i]), int(self._div[i]))

    def writeback(self, name: str) -> str:
        """'none', 'store' or 'atomic' (``StagingFacts.writeback``)."""
        return self.access(name).writeback

    def choose(self, gpu, placement, own_smem: int):
        """``placement.staging.choose`` on these facts (``StagingFacts.choose``)."""
        return choose(self, gpu, placement, own_smem)

    def pad(self, name: str, pitch: int, banks: int, bank_bytes: int) -> tuple[int, int, int]:
        """``traces.staging.best_pad`` of object ``name``'s tile, on its first ``PAD_SAMPLE_ROWS`` accesses, which
        the footprints' read keeps (no read of its own; the whole trace's evaluator weighs the same rows)."""
        key = (self._id(name), pitch, banks, bank_bytes)
        if key not in self._pads:
            if self._fp is None:
                self._pass_b()
            t = self._pad_rows.get(key[0])  # none: a 1D object, or one the trace never touches
            self._pads[key] = (0, 0, 0) if t is None else ts.best_pad(t, np.arange(len(t), dtype=np.int64), key[0],
                                                                       pitch, banks, bank_bytes)  # fmt: skip
        return self._pads[key]

    def footprint(self, name: str, windows: tuple[int, ...]) -> ts.Footprint:
        if self._fp and not set(windows) <= set(next(iter(self._fp.values())).windows):
            self._asked |= set(windows)  # a count not measured yet (";windows=K"): one more read for it
            self._fp = None
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
        if key in self._later:
            b, e = self._later.pop(key)
            self._overlap[key] = (self._first_writer(key, e), b, e)
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
        return fit_origin(self.info, name, windows, uniq, row0, col0, ordinals=int(self._k[i]))

    # ---- pass B ----------------------------------------------------------------------------------------
    def _conflicts(self, g, rows, base, elem, owners, key) -> tuple[int, int] | None:
        """Feed one group's rows of an object to its overlap state; (later block, element) of a conflict."""
        state, lo, touched, carry = owners[key]
        while True:
            code, b, e = SK.write_conflict_ordered(rows, g.cta, g.op, g.mask, g.addr, g.width, base, elem, lo, state,
                                                   touched, carry, key[1])  # fmt: skip
            if code == 2:  # the block's written elements outgrew the list
                touched = np.empty(2 * touched.shape[0], np.int64)
                touched[: carry[1]] = owners[key][2][: carry[1]]
                owners[key] = (state, lo, touched, carry)
                continue
            return (int(b), int(e)) if code == 1 else None

    def _first_writer(self, key: tuple[int, bool], element: int) -> int:
        """The first block (in program order) that writes ``element`` of object ``key[0]``: one more read."""
        i, plain = key
        self.reads += 1
        for g in self._groups():
            rows = ts.object_rows(g, ts.program_order(g), i)
            base, elem, _ = ts._shape(g, i)
            a = SK.first_writer(rows, g.cta, g.op, g.mask, g.addr, g.width, base, elem, element, plain)
            if a >= 0:
                return int(a)
        raise AssertionError("an element written twice has a first writer")  # pragma: no cover

    def _owner(self, i: int, plain: bool) -> tuple[np.ndarray | None, int, str | None]:
        """One byte per element of the written range (``write_conflict_ordered``'s state), its lowest element,
        or why the range is not checked (``write_overlap``'s limit and message)."""
        lo, hi = int(self._wlo[int(plain), i]), int(self._whi[int(plain), i])
        if hi < lo:
            return None, lo, None
        if hi - lo + 1 > ts.MAX_OWNER_ELEMENTS:
            return None, lo, f"written range of {hi - lo + 1:,} elements is too large to check for overlap"
        return np.zeros(hi - lo + 1, np.uint8), lo, None

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
            state, lo, why = self._owner(*key)
            if why is not None or state is None:
                self._overlap[key] = why
            else:
                owners[key] = (state, lo, np.empty(TOUCHED, np.int64), np.array([-1, 0, 0], np.int64))
        if not want_fp and not owners:
            return
        k_all = int(self._k.max()) if self._k.shape[0] else 0
        # the counts placement.staging.choose asks for: powers of two, each 2D object's textbook K / block width, and
        # any asked for
        tile = self.info.block[0]
        wins = tuple(sorted({*ts.window_counts(k_all), *self._asked,
                             *(w for o in self.info.objects if o.shape is not None
                               for w in ts.window_counts(int(self._k[o.id]), tile))}))  # fmt: skip
        rows_max = {i: np.zeros(len(wins), np.int64) for i in objs}
        pitch_max = {i: np.zeros(len(wins), np.int64) for i in objs}
        found: dict[tuple[int, bool], tuple[int, int]] = {}  # (the later block, the element)
        log.info("staging facts: one more read of the trace (footprints %s, overlaps of %d objects)", want_fp,
                 len(owners))  # fmt: skip
        self.reads += 1
        sample: dict[int, list[traces.Trace]] = {}
        for g in self._groups():
            order = ts.program_order(g)
            for i in objs:
                if self._k[i] == 0:
                    continue
                rows = ts.object_rows(g, order, i)
                if rows.shape[0] == 0:
                    continue
                kept = sum(len(t) for t in sample.get(i, ()))
                if want_fp and self.info.object(i).shape is not None and kept < ts.PAD_SAMPLE_ROWS:
                    take = rows[: ts.PAD_SAMPLE_ROWS - kept]
                    sample.setdefault(i, []).append(traces.Trace(**{k: v[take] for k, v in g.columns().items()},
                                                                 info=g.info))  # fmt: skip
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
                        found_key = self._conflicts(g, rows, base, elem, owners, key)
                        if found_key is not None:
                            found[key] = found_key
        for key in owners:
            self._overlap[key] = None
        self._later.update(found)  # the earlier block is looked up when the overlap is asked
        if want_fp:
            for i, parts in sample.items():
                cols = {k: np.concatenate([p.columns()[k] for p in parts]) for k in parts[0].columns()}
                self._pad_rows[i] = traces.Trace(**cols, info=self.info)
            self._fp = {}
            for i in objs:
                elem = self.info.object(i).elem_bytes
                b = tuple(int(x) for x in rows_max[i] * pitch_max[i] * elem)
                self._fp[i] = ts.Footprint(i, wins, b, tuple(int(x) for x in pitch_max[i]))


__all__ = ["StreamStagingFacts"]
