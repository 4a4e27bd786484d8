"""What every evaluator of placements offers (:class:`Evaluator`) and what its two kinds share.

An evaluator holds one trace on one GPU with the model's options, computes the sample's terms
once, and evaluates placements with the model of ``placement.hms``:
``placement.evaluate_whole.WholeTraceEvaluator`` over a trace in memory,
``placement.evaluate_stream.StreamEvaluator`` over a trace file read in row groups, in bounded
memory (the results are the same). The API (``placement.api``), the search
(``placement.search``), batch runs and training take either through this interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from traces import staging as ts

from .builds import inst_scale, mlp_for
from .hms import (
    Evaluation,
    Options,
    Target,
    Terms,
    barrier_phases,
    mlp_scale,
    sample_issue,
    staging_detail,
    target_issue,
    terms,
    total_warps,
)
from .memory import reissued_replay_causes_of
from .placements import Placement, build_key, check, is_staged

if TYPE_CHECKING:  # pragma: no cover
    import traces

    from .attribution import ObjectAccesses
    from .gpu import Gpu
    from .occupancy import Occupancy
    from .placements import Legality
    from .staging import StagingFacts
    from .streamstaging import StreamStagingFacts
    from .tiles import Origin


class Evaluator(ABC):
    """Evaluates placements of one trace on one GPU, the sample's terms computed once.

    ``evaluate(placement)`` is a pure function of (trace, gpu, options, placement). The
    attributes below are what callers read; the two kinds differ in how they get the
    trace's facts, not in what they answer.
    """

    info: traces.KernelInfo
    gpu: Gpu
    options: Options
    sample_placement: Placement
    sample: Terms
    """The sample placement's terms (W_serial, which every placement shares, among them)."""
    sample_legality: Legality
    """The sample placement's legality, checked once when the evaluator is made."""
    staging: StagingFacts | StreamStagingFacts
    """The trace's staging facts: footprints, write overlaps, the legality rules of a staged placement."""
    n_rows: int
    """Rows of the trace."""
    evaluations: int
    """Placements evaluated so far (a caller that evaluates in worker processes adds theirs)."""
    parallel: ClassVar[bool]
    """True: worker processes forked from this one may evaluate with it (the trace is in memory and shared);
    False: ``evaluate_many`` evaluates several placements per read of the trace file, in this process."""

    def check(self, placement: Placement) -> Legality:
        """The placement's legality (``placements.check`` with this trace's footprints)."""
        return check(self.info, self.gpu, placement, self.staging)

    def evaluate(self, placement: Placement, legal: Legality | None = None) -> Evaluation:
        """``placement``'s evaluation; ``legal`` its legality when the caller has checked it already."""
        return self.evaluate_many([placement], None if legal is None else {placement: legal})[0]

    @abstractmethod
    def evaluate_many(self, placements: list[Placement],
                      legal: Mapping[Placement, Legality] | None = None) -> list[Evaluation]:  # fmt: skip
        """``evaluate`` of each placement (each checked first: ``IllegalPlacement`` for the first illegal one);
        placements of one ``group_key`` share their rewriting and staging. ``legal`` holds the legality of
        placements the caller has checked (``check``): those are not checked again, and the rewrite takes
        the layout their check made (``Legality.layout``)."""

    def _legalities(self, placements: list[Placement],
                    known: Mapping[Placement, Legality] | None) -> dict[Placement, Legality]:  # fmt: skip
        """Each placement's legality: ``known``'s or the sample's, else checked here (once per call)."""
        have = {self.sample_placement: self.sample_legality, **(known or {})}
        return {p: have[p] if p in have else self.check(p) for p in placements}

    @property
    @abstractmethod
    def accesses(self) -> dict[str, ObjectAccesses]:
        """Each object's loads, stores and atomics (``placement.attribution.accesses`` of the whole trace)."""

    @cached_property
    def object_loads(self) -> dict[str, int]:
        """Each object's loads (warp-level rows, from :attr:`accesses`), counted once."""
        return {n: a.loads for n, a in self.accesses.items()}

    @cached_property
    def serialized_loads(self) -> frozenset[str]:
        """The objects most of whose loads read several addresses (``hms.is_long_latency``'s ``serialized``)."""
        return frozenset(n for n, a in self.accesses.items() if a.serialized)

    @abstractmethod
    def addressing_of(self, placement: Placement, legal: Legality | None = None) -> dict[str, int]:
        """The addressing instructions ``placement`` adds per object (``placement.attribution.addressing``,
        with the layout of ``legal`` when given); a streamed evaluator knows them for the placements it has
        evaluated."""

    @abstractmethod
    def tile_origin(self, name: str, windows: int) -> Origin:
        """Where object ``name``'s tile starts in each block, staged in ``windows`` windows (``placement.tiles``)."""

    def head(self, rows: int) -> Evaluator | None:
        """An evaluator of the trace's first ``rows`` rows, whose evaluations load the kernels the whole trace's
        will use (the search warms them before it forks workers); None where there is none to make cheaply."""
        return None


@dataclass(frozen=True)
class StagedRun:
    """One placement's trace under one staging option, as the model takes it."""

    info: traces.KernelInfo
    """The staged trace's metadata."""
    memory: Callable[[int, float], Any]
    """Its memory function (``hms.whole_memory`` or a finished ``hms.MemoryRun``)."""
    inserted: dict[str, Any]
    """The instructions the staging code inserted (``traces.staging.Staged.inserted``)."""
    delta: int
    """Its addressing-instruction delta."""


def placement_mlp_scale(ev: Evaluator, placement: Placement, added_syncs: int = 0) -> float:
    """``hms.mlp_scale`` of a placement against the evaluator's sample, from each object's loads and the barriers
    a warp has, the sample's and the ``added_syncs`` (warp-level) of its staging code (``hms.residency`` leaves
    it out where the placement's build has an MLP of its own)."""
    warps = total_warps(ev.info)
    phases = barrier_phases(ev.info.instructions.sync / warps, added_syncs / warps) if warps else 1.0
    return mlp_scale(ev.sample_placement.as_dict(), placement.as_dict(), ev.object_loads, warps,
                     mlp_for(ev.info, ev.gpu), ev.serialized_loads, phases)  # fmt: skip


def sample_issue_of(info: traces.KernelInfo, gpu: Gpu, options: Options):
    """``hms.sample_issue`` of a trace's sample on ``gpu``, either evaluator's: the GPU's build's scale
    (``placement.builds.inst_scale``) and the replay causes the GPU issues again
    (``placement.memory.reissued_replay_causes_of``)."""
    return sample_issue(info.instructions, options, inst_scale(info, gpu), reissued_replay_causes_of(gpu))


def _issue(ev: Evaluator, delta: int, added: int = 0):
    """``hms.target_issue`` of a placement against the evaluator's sample, with the replay causes the GPU issues
    again (``placement.memory.reissued_replay_causes_of``)."""
    return target_issue(ev.sample, ev.options, delta, added, reissued_replay_causes_of(ev.gpu))


def unstaged_terms(ev: Evaluator, info: traces.KernelInfo, memory, placement: Placement, legal: Legality,
                   delta: int) -> Terms:  # fmt: skip
    """An unstaged target's terms, either evaluator's: Eq. 3's issued count with its addressing delta."""
    target = Target(placement, legal.occupancy, legal.smem_per_block, _issue(ev, delta),
                    ev.sample.w_serial, mlp_scale=placement_mlp_scale(ev, placement),
                    build=build_key(ev.info, placement))  # fmt: skip
    return terms(info, memory, ev.gpu, ev.options, target)


def _copy_words(costs) -> str:
    """How an ``;unrolled`` placement's copy loop is taken to run on the GPU (``placement.staging.Costs``'s
    ``copy_unroll``, ``copy_tail``: nvcc 13's, read off its SASS, configs/addressing.toml)."""
    if costs.copy_tail > 1:
        return f"each loop unrolled whole, its last {costs.copy_tail} copies together"
    if costs.copy_unroll > 1:
        return f"unrolled by {costs.copy_unroll}, the remainder first"
    return "one copy a round (no unrolling known for this GPU)"


def staged_terms(ev: Evaluator, placement: Placement, option, occ: Occupancy, costs, run: StagedRun) -> Terms:
    """One staging option's terms, either evaluator's: the instructions and barriers it adds on top of the
    addressing delta, its occupancy and shared memory, and its ``staging`` detail."""
    added, detail = staging_detail(option, run.inserted, costs)
    if placement.unrolled:  # said only where asked: the detail of every other placement is as it was
        detail["unrolled"] = True
        detail["copy"] = _copy_words(costs)
    target = Target(placement, occ, option.smem_per_block, _issue(ev, run.delta, added),
                    ev.sample.w_serial, extra_sync=run.inserted["barriers"], staging=detail,
                    mlp_scale=placement_mlp_scale(ev, placement, run.inserted["barriers"]),
                    build=build_key(ev.info, placement))  # fmt: skip
    return terms(run.info, run.memory, ev.gpu, ev.options, target)


def group_key(placement: Placement) -> tuple:
    """Placements with one key share their rewritten trace and their staged tiles: every object in the same
    space but for the source of a staged one (S/G, S/T, S/R), the same windows and padding asked for and the same
    ``unrolled``; the evaluators evaluate them together, staged once and re-sourced
    (``traces.staging.restage``; an ``;unrolled`` copy's tile rows, whose instructions differ by source, priced
    again from the staging kernel's record of them)."""
    return (tuple((n, "S" if is_staged(s) else s) for n, s in placement.spaces), placement.windows,
            placement.unrolled, placement.pad)  # fmt: skip


def groups(placements: list[Placement]) -> list[list[Placement]]:
    """``placements`` in groups of one :func:`group_key`, in order of first appearance."""
    out: dict[tuple, list[Placement]] = {}
    for p in placements:
        out.setdefault(group_key(p), []).append(p)
    return list(out.values())


def fastest(tried_options: Iterable[tuple[Any, Terms]]) -> Terms:
    """The terms of the fastest of the (option, terms) pairs (the first on a tie), with every option
    tried recorded in its ``staging["tried"]``; the pairs may come one at a time (a generator)."""
    best, tried = None, []
    for option, t in tried_options:
        tried.append({"windows": option.windows, "why": option.why, "time_ns": t.time_ns})
        if best is None or t.cycles < best.cycles:
            best = t
    best.staging["tried"] = tried
    return best


def with_sources(st0: ts.Staged, plans: list) -> Iterator[ts.Staged]:
    """The staged traces of ``plans`` (one ``group_key``, one window count): ``st0``, staged with ``plans[0]``,
    then ``st0`` re-sourced for each other plan (``traces.staging.restage``), one at a time."""
    yield st0
    for plan in plans[1:]:
        yield ts.restage(st0, plan)


def counted(pieces: Iterator[ts.Staged], record: Callable[[int], None]) -> Iterator[ts.Staged]:
    """``pieces`` (``traces.staging.stage_pieces``), one alive at a time, ``record`` told the staging kernel's rows so
    far (``Staged.kernel_rows``) after each: what the next staging of the same tiles takes as its ``rows_hint``."""
    n = 0
    p = next(pieces, None)
    while p is not None:
        n += p.kernel_rows
        record(n)
        yield p
        p = None  # gone before the next piece is made
        p = next(pieces, None)


__all__ = ["Evaluator", "StagedRun", "counted", "fastest", "group_key", "groups", "staged_terms", "unstaged_terms",
           "with_sources"]  # fmt: skip
