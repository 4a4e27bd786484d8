"""The evaluator of a trace in memory (:class:`WholeTraceEvaluator`): ``placement.hms``'s model over the
whole trace, rewritten (and staged) once per group of placements."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cached_property, partial

import numpy as np

import traces
from traces import staging as ts
from traces.context import access_context

from . import attribution, tiles
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
    whole_memory,
)
from .occupancy import Occupancy, occupancy, regs_for
from .placements import Legality, Placement, build_key, check, is_staged, sample_placement


class WholeTraceEvaluator(Evaluator):
    """The :class:`~placement.evaluator.Evaluator` of a trace in memory.

    The sample's terms (and W_serial, which every placement shares) are computed once, when
    the evaluator is made. Beside the interface it holds the trace (``trace``), its addressing
    table (``cost``) and each row's access context (``context``), which ``placement.attribution``
    reads; worker processes forked from this one share them (``parallel``).
    """

    parallel = True

    def __init__(self, trace: traces.Trace, gpu: Gpu, options: Options = Options()):
        self.trace = trace
        self.gpu = gpu
        self.options = options
        self.info = trace.info
        self.sample_placement = sample_placement(self.info)
        self.cost = addr_cost_table(self.info, gpu)
        self.staging = stg.StagingFacts(trace)
        self.context = access_context(trace, self.staging.order)
        self.sample_legality = legal = check(self.info, gpu, self.sample_placement)
        issue = evr.sample_issue_of(self.info, gpu, options)
        target = Target(self.sample_placement, legal.occupancy, legal.smem_per_block, issue)
        self.sample = terms(self.info, whole_memory(trace, gpu, options), gpu, options, target)
        self.n_rows = len(trace)
        self.evaluations = 0
        self._staged_rows: dict[tuple, int] = {}
        """The staging kernel's rows of the last staging per (staged objects, windows, ``;unrolled``): the next
        one's ``rows_hint`` (S/G, S/T and S/R stage the same rows), sparing ``traces.staging.stage_pieces`` a
        second pass into longer buffers."""

    @cached_property
    def accesses(self) -> dict[str, attribution.ObjectAccesses]:
        """Each object's loads, stores and atomics (``placement.attribution.accesses``, counted once: its pass over
        the addresses for the divergent loads serves ``object_loads``, ``serialized_loads`` and the explanations)."""
        return attribution.accesses(self.trace)

    def addressing_of(self, placement: Placement, legal: Legality | None = None) -> dict[str, int]:
        layout = legal.layout if legal is not None else None
        return attribution.addressing(self.trace, placement, self.cost, self.context, layout=layout)

    def tile_origin(self, name: str, windows: int) -> tiles.Origin:
        return tiles.origin(self.staging, name, windows)

    def head(self, rows: int) -> WholeTraceEvaluator:
        t = self.trace
        head = traces.Trace(**{k: v[:rows] for k, v in t.columns().items()}, info=t.info)
        return WholeTraceEvaluator(head, self.gpu, self.options)

    def _targets(self, placements: list[Placement], legals: list) -> list[Terms]:
        """The targets' terms (one ``group_key``): rewritten (and staged) trace, Eq. 3's issued count, the model.

        The trace is rewritten once; per window count, staged once for the first placement and
        re-sourced (``traces.staging.restage``: the same rows, other staging loads) for the others,
        which ``stage`` would give row for row. One staged trace is alive at a time, and only when it is
        short (``traces.staging.STAGE_WHOLE_ROWS``): a longer one is staged in pieces of
        ``traces.staging.STAGE_PIECE_ROWS`` rows, fed to each placement's hierarchy one after the other
        (``_option_terms``; every count the same, the times to 1e-12 relative: the DRAM queues' moments are
        summed in another order), so that memory stays bounded by the trace, not by its staging code (a
        privatized histogram's is 24 rows a row)."""
        first = placements[0]
        staged = [self.info.object(n).id for n, s in first.spaces if is_staged(s)]
        rw = traces.rewrite(self.trace, legals[0].layout, self.cost, staged=staged, context=self.context)
        if not staged:  # the key is the placement: a group of one
            delta = int(rw.addr_inst_delta.sum(dtype=np.int64))
            memory = whole_memory(rw.trace, self.gpu, self.options)
            return [unstaged_terms(self, rw.trace.info, memory, first, legals[0], delta)]
        choice = legals[0].staging  # the window counts worth trying (the key fixes them); keep the fastest
        costs = stg.costs(self.gpu)
        tried: list[list] = [[] for _ in placements]
        for option in choice.options:
            regs = [regs_for(self.info, self.gpu, build_key(self.info, p)) for p in placements]
            occs = [occupancy(self.gpu, self.info.threads_per_block, r, option.smem_per_block) for r in regs]
            plans = [stg.plan(self.staging, self.gpu, p, option, choice.own_smem) for p in placements]
            key = (tuple(staged), option.windows, first.unrolled)
            pieces = counted(ts.stage_pieces(rw.trace, rw.addr_inst_delta, plans[0], option.windows, costs.barrier,
                                             option.smem_per_block, order=self.staging.order,
                                             whole=ts.STAGE_WHOLE_ROWS, rows_hint=self._staged_rows.get(key)),
                             partial(self._staged_rows.__setitem__, key))  # fmt: skip
            for k, t in enumerate(_option_terms(self, placements, plans, option, occs, costs, pieces)):
                tried[k].append((option, t))
        return [fastest(t) for t in tried]

    def evaluate_many(self, placements: list[Placement],
                      legal: Mapping[Placement, Legality] | None = None) -> list[Evaluation]:  # fmt: skip
        """``evaluate`` of each placement; placements of one ``group_key`` share their rewriting and staging."""
        legal = self._legalities(placements, legal)
        self.evaluations += len(placements)
        targets = {self.sample_placement: self.sample}
        for g in groups([p for p in legal if p != self.sample_placement]):
            targets.update(zip(g, self._targets(g, [legal[p] for p in g])))
        return [evaluation(self.info, self.gpu, self.options, self.sample, targets[p]) for p in placements]


def _option_terms(ev: WholeTraceEvaluator, placements: list[Placement], plans: list, option, occs: list[Occupancy],
                  costs, pieces: Iterator[ts.Staged]) -> list[Terms]:  # fmt: skip
    """The terms of one staging option of ``placements`` (one ``group_key``) from the pieces of its staged trace
    (``traces.staging.stage_pieces`` with ``plans[0]``), each re-sourced for the other plans one at a time
    (``with_sources``). A staged trace of one piece goes whole through each placement's hierarchy; the pieces
    of a longer one are fed to each placement's hierarchy and queues in turn (``MemoryRun``), their inserted
    instructions and deltas summed, one piece alive at a time. ``occs`` the placements' occupancies (each
    build's own registers, ``placement.occupancy.regs_for``)."""
    piece = next(pieces)
    if not piece.part:
        out = []
        for p, occ, st in zip(placements, occs, with_sources(piece, plans)):
            memory = whole_memory(st.trace, ev.gpu, ev.options)
            delta = int(st.addr_inst_delta.sum(dtype=np.int64))
            out.append(staged_terms(ev, p, option, occ, costs, StagedRun(st.trace.info, memory, st.inserted, delta)))
            del st, memory
        return out
    runs: list[MemoryRun | None] = [None] * len(placements)
    infos: list = [None] * len(placements)
    inserted = [np.zeros(6, np.int64) for _ in placements]
    deltas = [0] * len(placements)
    while piece is not None:
        for k, st in enumerate(with_sources(piece, plans)):
            inserted[k] += (st.inserted["loads"], st.inserted["stores"], st.int_milli, st.inserted["barriers"],
                            st.inserted["writeback_loads"], st.inserted["writeback_stores"])  # fmt: skip
            deltas[k] += int(st.addr_inst_delta.sum(dtype=np.int64))
            if runs[k] is None:
                infos[k] = st.trace.info
                runs[k] = MemoryRun(infos[k], ev.gpu, ev.options, residency(infos[k], ev.gpu, occs[k]).blocks_per_sm)
            runs[k].feed(st.trace)
            del st
        piece = None  # the next piece is made with this one gone
        piece = next(pieces, None)
    return [staged_terms(ev, p, option, occs[k], costs,
                         StagedRun(infos[k], runs[k].finish(), ts.inserted_counts(inserted[k]), deltas[k]))
            for k, p in enumerate(placements)]  # fmt: skip


def evaluate(trace: traces.Trace, gpu: Gpu, placement: Placement, options: Options = Options()) -> Evaluation:
    """Predict ``trace``'s kernel time under ``placement`` on ``gpu`` (``placement.hms``' model)."""
    return WholeTraceEvaluator(trace, gpu, options).evaluate(placement)


__all__ = ["WholeTraceEvaluator", "evaluate"]
