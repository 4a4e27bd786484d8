"""The evaluator of a trace file read in row groups, in bounded memory (:class:`StreamEvaluator`): the same
model and results as ``placement.evaluate_whole`` without holding the trace."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

import cachesim
import traces
from traces import keytable
from traces import staging as ts
from traces.context import CONTEXTS, INDEXED, ContextStream

from . import staging as stg
from . import evaluator as evr
from .evaluator import Evaluator, StagedRun, counted, fastest, groups, staged_terms, unstaged_terms, with_sources
from .gpu import Gpu
from .hms import (
    Evaluation,
    MemoryRun,
    Options,
    Target,
    Terms,
    addr_cost_table,
    evaluation,
    residency,
    terms,
)
from .occupancy import occupancy, regs_for
from .placements import IllegalPlacement, Legality, Placement, build_key, check, is_staged, sample_placement

if TYPE_CHECKING:  # pragma: no cover
    from .attribution import ObjectAccesses
    from .tiles import Origin

log = logging.getLogger(__name__)


class StreamOrderError(traces.TraceError):
    """The trace's rows are not in block order: ``StreamEvaluator`` cannot read it (``WholeTraceEvaluator`` can)."""


STREAM_ROWS = 1 << 16
"""Rows a ``StreamEvaluator`` reads at a time. Each placement of a read rewrites (and stages) a group
at a time, so the group sets the transient memory: eight placements in one read of a 10 M-row
vecadd peak at 508 MiB with 65,536-row groups against 829 MiB with 262,144, for no more CPU
(73.1 against 79.3 s)."""


STAGE_RATE_SLACK = 1.25
"""A streamed group's staging hint is the group before's staging kernel rows a row, this much more: buffers a
quarter longer than the rate says (``traces.staging.stage_pieces`` gives the same rows for any hint; a short one
stages again), as its own guesses are."""


STREAM_PLACEMENTS_PER_READ = 8
"""Placements ``StreamEvaluator.evaluate_many`` evaluates in one read of the trace: each holds its own
hierarchy and queue state and one rewritten (and staged) group at a time, so memory grows with
them; eight share the decoding of a read (about a third of one evaluation's CPU time) and stay
within issue 18's memory bound (see benchmarks/README.md)."""


DENSE_PC_CELLS = 1 << 20
"""Cells (pcs times objects times the contexts after INDEXED) up to which ``_PcDeltas`` sums a group's rows by
pc with one ``np.bincount`` over a dense table; a trace with higher (or negative) pcs goes through ``np.unique``
instead. The generators' kernels stay under 24,000 pcs (conv2d_kt's 23,888): 143,328 cells for its 3 objects."""


class _PcDeltas:
    """An unstaged target's addressing-instruction deltas while the access contexts are not known yet.

    A row's delta is ``cost[context, obj, target] - cost[context, obj, space]`` and its context a
    function of its pc (``traces.context``), known after the whole trace. Fed each group's deltas under
    every context, this keeps each object's sum under INDEXED and, per (pc, object, other context), the sum
    of that context's deltas minus INDEXED's; ``per_object`` then adds, for each pc, those of the context it
    turns out to have. Sums of int16 deltas, exact in int64 (a group's float64 bincount is exact below 2**53)."""

    def __init__(self, n_ids: int):
        self.n_ids = max(n_ids, 1)
        self.others = len(CONTEXTS) - 1  # the contexts after INDEXED
        self.indexed = np.zeros(self.n_ids, np.int64)
        # by (pc * n_ids + object) * others + context - 1, for keys under DENSE_PC_CELLS
        self._dense = np.zeros(0, np.int64)
        self._keys = np.zeros(0, np.int64)  # the other keys, sorted, and their sums
        self._sums = np.zeros(0, np.int64)

    def feed(self, pc: np.ndarray, obj: np.ndarray, indexed: np.ndarray, others: tuple[np.ndarray, ...]) -> None:
        """A group's rows: their deltas under INDEXED and under each later context (``others``, in order)."""
        keep = obj >= 0
        o = obj[keep].astype(np.int64)
        self.indexed += np.rint(np.bincount(o, weights=indexed[keep], minlength=self.n_ids)).astype(np.int64)
        for c, other in enumerate(others):
            diff = other.astype(np.int64) - indexed
            rows = np.flatnonzero(diff)  # rows off any object have no delta in either context
            if rows.size:
                key = (pc[rows].astype(np.int64) * self.n_ids + obj[rows]) * self.others + c
                self._add(key, diff[rows].astype(np.float64))

    def _add(self, key: np.ndarray, w: np.ndarray) -> None:
        if int(key.min()) >= 0 and int(key.max()) < DENSE_PC_CELLS:
            sums = np.rint(np.bincount(key, weights=w)).astype(np.int64)
            if sums.shape[0] > self._dense.shape[0]:
                self._dense = np.concatenate([self._dense, np.zeros(sums.shape[0] - self._dense.shape[0], np.int64)])
            self._dense[: sums.shape[0]] += sums
            return
        keys, inv = np.unique(key, return_inverse=True)
        sums = np.rint(np.bincount(inv.ravel(), weights=w)).astype(np.int64)
        self._keys, (self._sums,), pos = keytable.positions(self._keys, keys, (self._sums,))
        self._sums[pos] += sums  # keys distinct: one add each

    def per_object(self, contexts: ContextStream) -> np.ndarray:
        """Each object's delta (int64 by object id) with the rows' contexts (``contexts`` finished)."""
        dense = np.flatnonzero(self._dense)
        keys = np.concatenate([dense.astype(np.int64), self._keys])
        sums = np.concatenate([self._dense[dense], self._sums])
        cell, c = np.divmod(keys, self.others)
        pc, obj = np.divmod(cell, self.n_ids)
        hit = contexts.context(pc) == c + 1
        out = self.indexed.copy()
        np.add.at(out, obj[hit], sums[hit])
        return out


class StreamEvaluator(Evaluator):
    """The :class:`~placement.evaluator.Evaluator` of a trace file read in row groups, in bounded memory.

    Making it reads the file once (validated): the access contexts
    (``traces.context.ContextStream``), the staging facts of pass A
    (``placement.streamstaging``) and the sample's hierarchy and queues. The legal
    unstaged placements of ``early`` (up to ``STREAM_PLACEMENTS_PER_READ``) are evaluated
    in that same read: an unstaged target's rewritten rows do not depend on the access
    contexts, only its addressing instructions do, and those are kept per instruction
    (``_PcDeltas``) until the contexts are known at the end of the read; ``evaluate`` then
    returns them without reading the file again. Each pass of ``evaluate_many`` over other
    placements reads it once more and evaluates several placements together: each
    group is rewritten for every target (and staged, in groups of whole blocks, for the
    staged ones: ``traces.blockgroups``) and fed to one hierarchy per target (per staging
    option) whose state persists across groups. The first staged placement costs one
    more read (the footprints and write overlaps, pass B). The results equal
    ``WholeTraceEvaluator``'s on the whole trace (every count exactly; the queues' variances are
    summed in another order, so times to 1e-12 relative), early or not. The trace must be
    in block order (the generators' order); ``even_banks`` needs the whole DRAM stream and
    is refused.

    Beside the evaluations it keeps what explaining them needs: each object's accesses
    (``accesses``) and, per evaluated placement, the addressing instructions it adds per
    object (``addressing``), the same as ``placement.attribution``'s on the whole trace.
    """

    parallel = False

    def __init__(self, path, gpu: Gpu, options: Options = Options(), rows: int | None = None,
                 early: Iterable[Placement] | Mapping[Placement, Legality] = ()):  # fmt: skip
        from .streamstaging import StreamStagingFacts

        if options.even_banks:
            raise traces.InputError("even_banks spreads the DRAM requests over the banks of the whole stream: "
                                    "use placement.evaluate_whole.WholeTraceEvaluator on the whole trace")  # fmt: skip
        self.path, self.gpu, self.options = path, gpu, options
        self.rows = rows if rows is not None else STREAM_ROWS
        self.info = traces.read_info(path)
        self.n_rows = traces.num_rows(path)
        self.sample_placement = sample_placement(self.info)
        self.cost = addr_cost_table(self.info, gpu)
        self.sample_legality = legal = check(self.info, gpu, self.sample_placement)
        self.contexts = ContextStream(self.info)
        self.staging = StreamStagingFacts(self.info, self._groups)
        run = MemoryRun(self.info, gpu, options, residency(self.info, gpu, legal.occupancy).blocks_per_sm)
        self._early_legal = self._early(early)
        jobs = [_StreamJob(self, p, lg) for p, lg in self._early_legal.items()]
        if jobs:
            log.info("streamed evaluation of %d unstaged placement(s) in the first read of %s", len(jobs), path)
        try:
            for g in self._groups(validate=True):
                self.contexts.feed(g)
                self.staging.feed(g)
                run.feed(g)
                for j in jobs:
                    j.feed(g, None)
        except traces.TraceError:
            raise
        except (ValueError, cachesim.HierarchyConfigError) as exc:  # rows out of block order
            raise StreamOrderError(
                path, f"{exc}; use placement.evaluate_whole.WholeTraceEvaluator on the whole trace"
            ) from None
        self.contexts.finish()
        issue = evr.sample_issue_of(self.info, gpu, options)
        target = Target(self.sample_placement, legal.occupancy, legal.smem_per_block, issue)
        self.sample = terms(self.info, run.finish(), gpu, options, target)
        self.held_bytes = max(run.held_peak, 1)
        """The most bytes the sample's hierarchy held back at once (a wave's rows: ``HierarchyStream.held_peak``),
        what each hierarchy state of a later read is taken to hold (``states_per_read``)."""
        self.evaluations = 0
        self._reads = 1
        self.addressing: dict[Placement, dict[str, int]] = {
            self.sample_placement: {o.name: 0 for o in self.info.objects}}  # fmt: skip
        self._first_read: dict[Placement, Terms] = {}
        for j in jobs:
            j.settle(self.contexts)
            self._first_read[j.placement] = j.finish()
            self.addressing[j.placement] = j.addressing()

    def _early(self, early) -> dict:
        """The placements of ``early`` the first read can evaluate (legal, unstaged, not the sample; the first
        ``STREAM_PLACEMENTS_PER_READ``) and their legality (``early``'s own where it maps placements to the
        legality the caller checked); the others go the way of ``evaluate_many``."""
        known = early if isinstance(early, Mapping) else {}
        out = {}
        for p in early:
            if p in out or p == self.sample_placement or any(is_staged(s) for _, s in p.spaces):
                continue
            if len(out) == STREAM_PLACEMENTS_PER_READ:
                log.info("more than %d placements to evaluate early: %s and the rest in later reads",
                         STREAM_PLACEMENTS_PER_READ, p)  # fmt: skip
                break
            try:
                # the rules of an unstaged placement need no footprints
                out[p] = known[p] if p in known else check(self.info, self.gpu, p)
            except IllegalPlacement:
                continue  # evaluate says why
        return out

    @property
    def states_per_read(self) -> int:
        """Hierarchy states one read of ``evaluate_many`` holds at most: ``STREAM_HELD_BYTES`` over the sample's
        ``held_bytes``, at least one."""
        return max(1, STREAM_HELD_BYTES // self.held_bytes)

    @property
    def passes(self) -> int:
        """Reads of the file so far (the first, the evaluations', the staging facts' pass B)."""
        return self._reads + self.staging.reads

    def _groups(self, validate: bool = False):
        """The trace in groups of whole blocks (``traces.blockgroups``)."""
        from traces.blockgroups import block_groups

        return block_groups(traces.iter_batches(self.path, self.rows, validate=validate))

    @property
    def accesses(self) -> dict[str, ObjectAccesses]:
        """Each object's loads, stores and atomics (``placement.attribution.accesses`` of the whole trace)."""
        from .attribution import ObjectAccesses

        out = {}
        for o in self.info.objects:
            a = self.staging.access(o.name)
            out[o.name] = ObjectAccesses(a.loads, a.stores, a.atomics, a.divergent_loads)
        return out

    def addressing_of(self, placement: Placement, legal: Legality | None = None) -> dict[str, int]:
        return self.addressing[placement]

    def tile_origin(self, name: str, windows: int) -> Origin:
        return self.staging.origin(name, windows)

    def evaluate_many(self, placements: list[Placement],
                      legal: Mapping[Placement, Legality] | None = None) -> list[Evaluation]:  # fmt: skip
        """Evaluations of ``placements`` (each checked first: IllegalPlacement for the first illegal one), the
        targets' in one read of the trace (none for those evaluated in the first read: ``early``)."""
        legal = self._legalities(placements, {**self._early_legal, **(legal or {})})
        self.evaluations += len(placements)
        todo = {p: lg for p, lg in legal.items() if p != self.sample_placement and p not in self._first_read}
        targets: dict[Placement, Terms] = dict(self._first_read)
        items = [(p, todo[p]) for ps in groups(list(todo)) for p in ps]  # a group's placements in one read
        for read in _reads(items, self.states_per_read):
            targets.update(self._targets(dict(read)))
        out = []
        for p in placements:
            target = self.sample if p == self.sample_placement else targets[p]
            out.append(evaluation(self.info, self.gpu, self.options, self.sample, target))
        return out

    def _targets(self, todo: dict) -> dict[Placement, Terms]:
        jobs = [_StreamJob(self, p, lg) for p, lg in todo.items()]
        staged = any(j.staged for j in jobs)
        pieces = self._groups() if staged else traces.iter_batches(self.path, self.rows, validate=False)
        log.info("streamed evaluation of %d placements in one read of %s (%s)", len(jobs), self.path,
                 "groups of whole blocks" if staged else "row groups")  # fmt: skip
        together = groups([j.placement for j in jobs])
        by_placement = {j.placement: j for j in jobs}
        for g in pieces:
            context = self.contexts.context(g.pc)
            for ps in together:
                _feed([by_placement[p] for p in ps], g, context)
        self._reads += 1
        out = {}
        for j in jobs:
            out[j.placement] = j.finish()
            self.addressing[j.placement] = j.addressing()
        return out


STREAM_HELD_BYTES = 2 << 30
"""Bytes of held-back rows the hierarchy states of one read of ``evaluate_many`` may hold together, beside its
``STREAM_PLACEMENTS_PER_READ`` placements: a staged placement holds one state per staging option it weighs
(``_runs``, 2-6), and a state holds the rows of a wave until it can walk it (``cachesim.held``), about what the
sample's held (``StreamEvaluator.held_bytes``). On matmul_naive at 512^2 (8.4 M rows, 16 x 16 blocks) on an
RTX 3090 the sample held 85 MiB, the options of ``M=S/G,N=S/G`` 32-95 MiB each: 24 states a read. A staging code
many times its rows (a privatized histogram's) holds more than the sample's estimate."""


def _runs(legal) -> int:
    """The hierarchy and queue states one placement holds during a read: one per staging option it weighs
    (``placement.staging.StagingChoice.options``), one if it stages nothing."""
    return max(len(legal.staging.options), 1) if legal.staging is not None else 1


def _reads(items: list, states: int) -> Iterator[list]:
    """``items`` ((placement, legality) pairs, in order) cut into reads of at most ``STREAM_PLACEMENTS_PER_READ``
    placements and ``states`` hierarchy states (``_runs``; a placement of more goes alone): a staged placement
    weighs each of its window counts and paddings in a state of its own (``STREAM_HELD_BYTES``)."""
    read, runs = [], 0
    for item in items:
        n = _runs(item[1])
        if read and (runs + n > states or len(read) == STREAM_PLACEMENTS_PER_READ):
            yield read
            read, runs = [], 0
        read.append(item)
        runs += n
    if read:
        yield read


class _StreamJob:
    """One target placement of a :class:`StreamEvaluator` pass: ``WholeTraceEvaluator._targets`` group by group.

    An unstaged target is fed by ``feed``, even before the access contexts are known (``context``
    None: the first read; its deltas then wait per pc, ``_PcDeltas``, until ``settle``); a staged
    one, with the others of its ``group_key``, by ``_feed``."""

    def __init__(self, ev: StreamEvaluator, placement: Placement, legal):
        self.ev, self.placement, self.legal = ev, placement, legal
        info = ev.info
        self.staged_ids = [info.object(n).id for n, s in placement.spaces if is_staged(s)]
        self.staged = bool(self.staged_ids)
        n_ids = info.n_ids
        self.per_object = np.zeros(max(n_ids, 1), np.float64)
        self.delta = 0
        self.runs: list[MemoryRun | None] = []
        self.by_pc: _PcDeltas | None = None
        if not self.staged:
            layout = legal.layout
            self.info = replace(info, objects=layout.objects, smem_per_block=layout.smem_per_block)
            bps = residency(self.info, ev.gpu, legal.occupancy).blocks_per_sm
            self.runs = [MemoryRun(self.info, ev.gpu, ev.options, bps)]
            return
        choice = legal.staging
        self.costs = stg.costs(ev.gpu)
        self.options = choice.options
        self.plans = [stg.plan(ev.staging, ev.gpu, placement, o, choice.own_smem) for o in choice.options]
        regs = regs_for(info, ev.gpu, build_key(info, placement))
        self.occ = [occupancy(ev.gpu, info.threads_per_block, regs, o.smem_per_block) for o in choice.options]
        self.runs = [None] * len(choice.options)  # made at the first group, with the staged trace's metadata
        self.infos = [None] * len(choice.options)
        self.inserted = [np.zeros(6, np.int64) for _ in choice.options]
        self.deltas = [0] * len(choice.options)
        self.pc_top = (ev.staging.pc_max + 16) if ev.n_rows else 16
        self.rates: list[float | None] = [None] * len(choice.options)
        """The staging kernel's rows a row of the last group staged with each option (``stage``'s hint)."""

    def feed(self, g: traces.Trace, context: np.ndarray | None) -> None:
        """A group of rows to an unstaged target."""
        assert not self.staged, "a staged target is fed with its group (_feed)"
        ev = self.ev
        if context is None:  # contexts not known yet: the rows under INDEXED, the deltas per pc for later
            target = self.legal.layout
            rw = traces.rewrite(g, target, ev.cost, context=np.full(len(g), INDEXED, np.int8))
            others = tuple(traces.addr_inst_delta(g, target, ev.cost, context=np.full(len(g), c, np.int8))
                           for c in range(INDEXED + 1, len(CONTEXTS)))  # fmt: skip
            if self.by_pc is None:
                self.by_pc = _PcDeltas(self.per_object.shape[0])
            self.by_pc.feed(g.pc, g.obj, rw.addr_inst_delta, others)
            self.runs[0].feed(rw.trace)
            return
        rw = self.rewrite(g, context)
        self.count(g, rw)
        self.delta += int(rw.addr_inst_delta.sum(dtype=np.int64))
        self.runs[0].feed(rw.trace)

    def rewrite(self, g: traces.Trace, context: np.ndarray):
        return traces.rewrite(g, self.legal.layout, self.ev.cost, staged=self.staged_ids, context=context)

    def count(self, g: traces.Trace, rw) -> None:
        """The addressing deltas of ``g``'s rows, rewritten to ``rw``, per object."""
        keep = g.obj >= 0
        weights = rw.addr_inst_delta[keep].astype(np.float64)
        self.per_object += np.bincount(
            g.obj[keep].astype(np.int64), weights=weights, minlength=self.per_object.shape[0]
        )

    def stage(self, rw, k: int) -> Iterator[ts.Staged]:
        """The rewritten rows ``rw`` staged with option ``k``, in pieces (``traces.staging.stage_pieces``: a
        group's staging code may be many times its rows), one alive at a time. The rows a row of the group before
        (``STAGE_RATE_SLACK`` more) are the hint: a privatized histogram's 24 staged rows a row would otherwise
        be learnt anew in every group by a staging that overflows its buffers and is thrown away."""
        option = self.options[k]
        rows = len(rw.trace)
        rate = self.rates[k]
        hint = int(rate * rows * STAGE_RATE_SLACK) if rate and rows else None
        pieces = ts.stage_pieces(rw.trace, rw.addr_inst_delta, self.plans[k], option.windows, self.costs.barrier,
                                 option.smem_per_block, pc_top=self.pc_top, rows_hint=hint)  # fmt: skip

        def record(n: int) -> None:
            if rows:
                self.rates[k] = n / rows

        return counted(pieces, record)

    def feed_staged(self, k: int, st: ts.Staged) -> None:
        """Option ``k``'s staged rows of a group: their inserted instructions, deltas and hierarchy."""
        ev = self.ev
        self.inserted[k] += (st.inserted["loads"], st.inserted["stores"], st.int_milli, st.inserted["barriers"],
                             st.inserted["writeback_loads"], st.inserted["writeback_stores"])  # fmt: skip
        self.deltas[k] += int(st.addr_inst_delta.sum(dtype=np.int64))
        if self.runs[k] is None:
            self.infos[k] = st.trace.info
            self.runs[k] = MemoryRun(st.trace.info, ev.gpu, ev.options,
                                     residency(st.trace.info, ev.gpu, self.occ[k]).blocks_per_sm)  # fmt: skip
        self.runs[k].feed(st.trace)

    def settle(self, contexts: ContextStream) -> None:
        """The deltas of rows fed without their contexts, with ``contexts`` (finished)."""
        if self.by_pc is not None:
            per = self.by_pc.per_object(contexts)
            self.per_object += per.astype(np.float64)
            self.delta += int(per.sum())
            self.by_pc = None

    def addressing(self) -> dict[str, int]:
        return {o.name: int(round(self.per_object[o.id])) for o in self.ev.info.objects}

    def finish(self) -> Terms:
        ev, placement = self.ev, self.placement
        if not self.staged:
            return unstaged_terms(ev, self.info, self.runs[0].finish(), placement, self.legal, self.delta)

        def option_terms(k: int, option) -> Terms:
            if self.runs[k] is None:  # no rows: the empty trace's metadata
                self.infos[k] = ts.stage(traces.rewrite(_empty(ev.info), self.legal.layout, ev.cost,
                                                        staged=self.staged_ids).trace, np.zeros(0, np.int16),
                                         self.plans[k], option.windows, self.costs.barrier, option.smem_per_block,
                                         pc_top=self.pc_top).trace.info  # fmt: skip
                self.runs[k] = MemoryRun(self.infos[k], ev.gpu, ev.options,
                                         residency(self.infos[k], ev.gpu, self.occ[k]).blocks_per_sm)  # fmt: skip
            run = StagedRun(self.infos[k], self.runs[k].finish(), ts.inserted_counts(self.inserted[k]), self.deltas[k])
            return staged_terms(ev, placement, option, self.occ[k], self.costs, run)

        return fastest((option, option_terms(k, option)) for k, option in enumerate(self.options))


def _feed(jobs: list[_StreamJob], g: traces.Trace, context: np.ndarray) -> None:
    """A group of rows to the jobs of one ``group_key``: rewritten once and, per window count, staged once for
    the first job and re-sourced for the others (``traces.staging.restage``), as ``WholeTraceEvaluator._targets`` does
    with a whole trace; one staged group is alive at a time."""
    first = jobs[0]
    if not first.staged:  # the key is the placement: a job of its own
        first.feed(g, context)
        return
    rw = first.rewrite(g, context)
    for j in jobs:
        j.count(g, rw)
    for k in range(len(first.options)):
        for piece in first.stage(rw, k):
            for j, st in zip(jobs, with_sources(piece, [j.plans[k] for j in jobs])):
                j.feed_staged(k, st)


def _empty(info) -> traces.Trace:
    from traces.schema import NUMPY_DTYPES

    cols = {c: np.zeros((0, 32) if c == "addr" else 0, NUMPY_DTYPES[c]) for c in NUMPY_DTYPES}
    return traces.Trace(**cols, info=info)


__all__ = [
    "DENSE_PC_CELLS",
    "STAGE_RATE_SLACK",
    "STREAM_HELD_BYTES",
    "STREAM_PLACEMENTS_PER_READ",
    "STREAM_ROWS",
    "StreamEvaluator",
    "StreamOrderError",
]
