"""The Python API: ``placement.rank`` and ``placement.evaluate``.

Both take a trace (a path or a ``traces.Trace``) and a GPU (a name from ``placement
gpus``, a ``.toml`` path or a ``placement.gpu.Gpu``) and return frozen results
(``placement.results``) whose ``to_dict()`` is the command's ``--json`` document and
``to_frame()`` a pandas DataFrame. This module imports nothing heavy at import time
(numba, OR-Tools and pandas load inside the functions), so ``import placement`` stays light.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .choices import STREAM_MODES

if TYPE_CHECKING:  # pragma: no cover
    import traces
    from .gpu import Gpu
    from .evaluator import Evaluator
    from .hms import Evaluation, Options
    from .overlap import OverlapModel
    from .placements import Legality, Placement
    from .results import EvaluationResult, Placed, RankResult

log = logging.getLogger(__name__)

WHOLE_BYTES_PER_ROW = 512
"""Peak memory of the whole-trace path per trace row: 5.0 GiB for bench_evaluate's 10 M rows (a decoded
row is 285 bytes; the rewritten trace and the hierarchy's buffers add about as much again)."""
WHOLE_TRACE_BUDGET = 1 << 30
"""A trace file whose whole-trace evaluation would take more memory than this is streamed
(``placement.evaluate_stream.StreamEvaluator``): issue 18's bound for a 10 M-row trace. At 512 bytes a row,
traces above 2 Mi rows stream; below, the whole path holds the trace once and rank's worker
processes share it."""
HINTS_CHECKED = 3
"""``rank(hints=True)`` checks that the code changes of this many best placements can be pasted as is."""


def too_big_to_evaluate_whole(rows: int) -> bool:
    """Whether a trace file of ``rows`` rows would take more than ``WHOLE_TRACE_BUDGET`` evaluated whole: 'auto'
    streams it (``placement evaluate``, ``rank`` and ``batch`` alike)."""
    return rows * WHOLE_BYTES_PER_ROW > WHOLE_TRACE_BUDGET


def _trace(trace_or_path: "str | os.PathLike | traces.Trace") -> "traces.Trace":
    import traces

    if isinstance(trace_or_path, traces.Trace):
        return trace_or_path
    if isinstance(trace_or_path, (str, os.PathLike)):
        return traces.read(trace_or_path)
    raise TypeError(f"trace: expected a path or a traces.Trace, got {type(trace_or_path).__name__}")


def _gpu(gpu: "str | os.PathLike | Gpu") -> "Gpu":
    from .gpu import Gpu, get_gpu

    if isinstance(gpu, Gpu):
        return gpu
    if isinstance(gpu, (str, os.PathLike)):
        return get_gpu(os.fspath(gpu))
    raise TypeError(f"gpu: expected a name, a .toml path or a placement.gpu.Gpu, got {type(gpu).__name__}")


def model_options(queue: str = "kingman", overlap: "str | os.PathLike | OverlapModel | None" = None,
                  instruction_counting: bool = True, queuing: bool = True, even_banks: bool = False,
                  dlcm: str | None = None) -> "Options":  # fmt: skip
    """The model's options (``placement.hms.Options``); ``overlap`` a COEFFS.toml of ``placement train`` or a model;
    ``dlcm`` the build's ``-Xptxas -dlcm`` ('ca' or 'cg') over the trace's ``extra.dlcm``."""
    from .hms import Options
    from .overlap import load

    if isinstance(overlap, (str, os.PathLike)):
        overlap = load(os.fspath(overlap))
    return Options(queue=queue, instruction_counting=instruction_counting, queuing=queuing, even_banks=even_banks,
                   overlap=overlap, dlcm=dlcm)  # fmt: skip


def _evaluator(trace_or_path, gpu: "Gpu", opts: "Options", stream: str,
               early: "tuple[Placement, ...] | Mapping[Placement, Legality]" = ()) -> "Evaluator":  # fmt: skip
    """The ``WholeTraceEvaluator`` or, for a big trace file, the ``StreamEvaluator`` (``stream``: 'auto' by
    size, 'yes' or 'no' to force); the choice and its reason are logged (-v). A streamed one evaluates the
    unstaged placements of ``early`` in its first read of the file (``StreamEvaluator``'s ``early``).

    A sample placement that ``gpu`` cannot launch (the traced build's registers or shared memory beyond it: a
    kernel built for sm_80 with 72 registers a thread on a Fermi GPU) is ``placements.UnlaunchableBuild``, which
    names the trace and says that the build, not a placement, is what does not fit."""
    from . import units
    from .hms import measured_applies
    from .placements import IllegalPlacement, UnlaunchableBuild

    ov = opts.overlap
    if ov is not None and ov.gpu and ov.gpu != gpu.name:
        log.warning("%s: T_overlap coefficients trained on %s, applied to %s: Eq. 11's fit holds on the GPU it was "
                    "trained on; train them on %s's measurements (placement train --gpu %s)", ov.source or "--overlap",
                    ov.gpu, gpu.name, gpu.name, gpu.name)  # fmt: skip
    try:
        ev = _make_evaluator(trace_or_path, gpu, opts, stream, early)
    except IllegalPlacement as exc:  # the evaluators check the sample placement alone when they are made
        raise UnlaunchableBuild(exc.rule, exc.reason, _where(trace_or_path), gpu.name) from None
    if opts.dlcm == "ca":
        from .memory import build_hierarchy_config

        if not build_hierarchy_config(gpu, {}, "ca").global_in_l1:  # accepted, but nothing to change
            log.warning("--dlcm ca: %s (%s) caches no global load in its L1 whatever the build (memory."
                        "build_hierarchy_config); the predictions are the L2's, as with cg", gpu.name, gpu.arch)  # fmt: skip
    m = ev.info.measured
    if m is not None and not measured_applies(ev.info, gpu):
        log.warning("%s: the sample's measured time (%s) is %s's, not %s's: predictions are not scaled by it",
                    _where(trace_or_path), units.time_ns(m.time_ns), m.gpu, gpu.name)  # fmt: skip
    return ev


def _where(trace_or_path) -> str:
    """The trace's file, or its kernel's name for a trace in memory, as error messages name it."""
    import traces

    return f"kernel {trace_or_path.info.kernel!r}" if isinstance(trace_or_path, traces.Trace) else _path(trace_or_path)


def _sample_must_launch(info: "traces.KernelInfo", gpu: "Gpu", where: str) -> None:
    """Refuse a trace whose sample placement ``gpu`` cannot launch: ``UnlaunchableBuild`` (an ``IllegalPlacement``)
    naming ``where`` and saying that the traced build, not a placement, is what does not fit (72 registers a
    thread on a Fermi GPU)."""
    from .placements import IllegalPlacement, UnlaunchableBuild, check, sample_placement

    try:
        check(info, gpu, sample_placement(info))
    except IllegalPlacement as exc:
        raise UnlaunchableBuild(exc.rule, exc.reason, where, gpu.name) from None


def _make_evaluator(trace_or_path, gpu: "Gpu", opts: "Options", stream: str,
                    early: "tuple[Placement, ...] | Mapping[Placement, Legality]" = ()) -> "Evaluator":  # fmt: skip
    """:func:`_evaluator`'s choice of evaluator."""
    import traces
    import traces.io

    from .evaluate_stream import StreamEvaluator, StreamOrderError
    from .evaluate_whole import WholeTraceEvaluator

    if stream not in STREAM_MODES:
        raise traces.InputError(f"stream {stream!r}: expected one of {', '.join(STREAM_MODES)}")
    if isinstance(trace_or_path, traces.Trace) or stream == "no":
        if stream == "yes":
            raise traces.InputError("streaming reads a trace file; a traces.Trace in memory is evaluated whole")
        t = _trace(trace_or_path)
        require_rows(_where(trace_or_path), len(t))
        log.info("whole-trace evaluation (%s)", "asked" if stream == "no" else "a trace in memory")
        return WholeTraceEvaluator(t, gpu, opts)
    path = _path(trace_or_path)
    info = traces.read_info(path)
    rows = traces.num_rows(path)
    require_rows(path, rows)
    need = rows * WHOLE_BYTES_PER_ROW
    if stream == "auto":
        if not too_big_to_evaluate_whole(rows):
            log.info("whole-trace evaluation: %d rows need about %.0f MiB whole (streaming above %.0f MiB)", rows,
                     need / 2**20, WHOLE_TRACE_BUDGET / 2**20)  # fmt: skip
            return WholeTraceEvaluator(traces.read(path), gpu, opts)
        if opts.even_banks:
            log.info("whole-trace evaluation of %d rows: --even-banks needs the whole DRAM stream", rows)
            return WholeTraceEvaluator(traces.read(path), gpu, opts)
    log.info("streamed evaluation of %s (%d rows, about %.0f MiB whole; %s)", info.kernel, rows, need / 2**20,
             "asked" if stream == "yes" else f"above {WHOLE_TRACE_BUDGET / 2**20:.0f} MiB")  # fmt: skip
    try:
        return StreamEvaluator(path, gpu, opts, early=early)
    except StreamOrderError as exc:
        if stream == "yes":
            raise
        log.warning("%s: evaluating the whole trace instead", exc)
        return WholeTraceEvaluator(traces.read(path), gpu, opts)


def require_rows(where: str, rows: int) -> None:
    """Refuse a trace with no rows: nothing to place (its time would be the compute alone, every
    placement alike; numpy would warn over empty means). A ``traces.TraceError`` naming ``where``."""
    import traces

    if rows == 0:
        raise traces.TraceError(where, "no rows: the trace holds no memory instruction, so there is nothing to place")


def _path(trace_or_path) -> str:
    if isinstance(trace_or_path, (str, os.PathLike)):
        return os.fspath(trace_or_path)
    raise TypeError(f"trace: expected a path or a traces.Trace, got {type(trace_or_path).__name__}")


class _Context:
    """What explaining and hinting need of one (trace, evaluator): per-object accesses, writes, tile origins
    (``Evaluator.accesses``, ``.addressing_of``, ``.tile_origin``)."""

    def __init__(self, ev: "Evaluator"):
        self.ev = ev
        self.accesses = ev.accesses

    def writeback(self) -> dict[str, str]:
        return {o.name: self.ev.staging.writeback(o.name) for o in self.ev.info.objects
                if self.accesses[o.name].total}  # fmt: skip

    def placed(self, e: "Evaluation", rank: int | None, placement: "Placement | None" = None,
               legal: "Legality | None" = None) -> "Placed":  # fmt: skip
        """``e`` explained; ``placement`` and ``legal`` the target's, where the caller has them (parsed and
        checked once: the addressing's rewrite takes ``legal``'s layout), else rebuilt from ``e``."""
        from .explain import explain
        from .placements import Placement
        from .results import Placed

        p = placement
        if p is None:  # a ranked one: the search's ;unrolled twin where it kept that (search._Runner.many)
            unrolled = bool(e.target.staging and e.target.staging.get("unrolled"))
            p = Placement(tuple(e.target.placement.items()), unrolled=unrolled)
        addressing = self.ev.addressing_of(p, legal)
        from .memory import reissued_replay_causes_of, uniform_constant_pairs_of

        why = explain(self.ev.info, e.sample, e.target, self.accesses, addressing, self.writeback(),
                      pairs=uniform_constant_pairs_of(self.ev.gpu),
                      reissued=reissued_replay_causes_of(self.ev.gpu))  # fmt: skip
        return Placed(rank, p.label(self.ev.sample_placement), e, why)

    def hints(self, e: "Evaluation") -> tuple:
        from .hints import hints
        from .placements import is_staged

        t = e.target
        windows = int(t.staging.get("windows", 1)) if t.staging else 1
        staged = [n for n, s in t.placement.items() if is_staged(s) and self.accesses[n].total]
        origins = {n: self.ev.tile_origin(n, windows) for n in staged}
        loads = {n: a.loads > 0 for n, a in self.accesses.items()}
        divergent = t.replays.get("constant address divergence", 0)
        return hints(self.ev.info, self.ev.gpu, e.sample.placement, t.placement, t.staging, origins, self.writeback(),
                     loads, divergent)  # fmt: skip


def evaluate(trace: "str | os.PathLike | traces.Trace", gpu: "str | os.PathLike | Gpu",
             placement: str | Mapping[str, str] = "", *, hints: bool = False, stream: str = "auto",
             **options: Any) -> "EvaluationResult":  # fmt: skip
    """Predict the kernel's time under one placement.

    ``placement`` is ``"M=C,N=R"`` or ``{"M": "C", "N": "R"}``; objects it does not name stay
    where the sample has them. ``hints=True`` adds the CUDA changes. ``options`` are
    ``model_options``' (``queue``, ``overlap``, ``instruction_counting``, ``queuing``, ``even_banks``).
    ``stream`` 'auto' streams a trace file too big to evaluate whole (``WHOLE_TRACE_BUDGET``), 'yes' and
    'no' force either way; the results are the same. Streamed, an unstaged placement is evaluated in the
    read of the file that gives the sample (one read in all); a staged one (S/G, S/T, S/R) takes two more,
    the footprints' and its own. Raises ``traces.InputError`` (``IllegalPlacement``
    for a placement that breaks a rule).
    """
    import traces

    from .placements import IllegalPlacement, check, is_staged, parse_placement
    from .results import EvaluationResult

    g = _gpu(gpu)
    opts = model_options(**options)
    info = trace.info if isinstance(trace, traces.Trace) else traces.read_info(_path(trace))
    # parsed, checked and converted (Legality.layout) once each, the rewrites take the checked layout
    p = parse_placement(placement, info)  # before reading the trace
    legal = None
    if not any(is_staged(s) for _, s in p.spaces):  # the rules that need no footprints, before reading it too
        try:
            legal = check(info, g, p)
        except IllegalPlacement:
            _sample_must_launch(info, g, _where(trace))  # the build itself, whatever the placement
            raise
    ev = _evaluator(trace, g, opts, stream, early=(p,) if legal is None else {p: legal})
    if legal is None:  # a staged placement: its rules need the trace's footprints
        legal = ev.check(p)
    ctx = _Context(ev)
    e = ev.evaluate(p, legal)
    sample = ev.evaluate(ev.sample_placement)
    return EvaluationResult(
        kernel=ev.info.kernel, gpu=g.name, target=ctx.placed(e, None, p, legal),
        sample=ctx.placed(sample, None, ev.sample_placement, ev.sample_legality),
        overlap_trained=opts.overlap is not None, hints=ctx.hints(e) if hints else None, gpu_config=g,
        blocks=(ev.info.launch_ctas, ev.info.traced_ctas),
    )  # fmt: skip


def _incomplete(hs) -> str:
    """Why a placement's hints cannot be pasted as is ("" where they can)."""
    return "; ".join(h.incomplete for h in hs if h.incomplete)


def _first_pasteable(ctx: "_Context", evaluations, ranked, incomplete: dict[str, str]) -> str | None:
    """The label of the best ranked placement, faster than the sample, whose hints can be pasted as is (None if
    none): the ranking is walked down from #2 to the sample, reusing what the top HINTS_CHECKED gave."""
    for e, p in list(zip(evaluations, ranked))[1:]:
        if p.label == "sample":
            return None
        if p.label in incomplete:
            continue
        if p.rank <= HINTS_CHECKED or not _incomplete(ctx.hints(e)):
            return p.label
    return None


def rank(trace: "str | os.PathLike | traces.Trace", gpu: "str | os.PathLike | Gpu", *, top: int = 10,
         exhaustive: bool = False, hints: bool = False, workers: int = 1, pair_budget: int | None = None,
         polish_budget: int | None = None, progress: Callable[[int], None] | None = None, stream: str = "auto",
         unrolled: bool = True, **options: Any) -> "RankResult":  # fmt: skip
    """Rank the legal placements of the trace's arrays by predicted time.

    The default search evaluates the sample and every single-object move exactly, lets
    CP-SAT pick candidates under the surrogate they give and evaluates those exactly, then up to
    ``polish_budget`` single-object changes of the best and the runners-up (default: twice the single moves);
    ``exhaustive=True`` evaluates every legal placement. ``top`` placements are kept;
    ``hints=True`` adds the CUDA changes of the best, names those of the top ``HINTS_CHECKED`` that cannot be
    pasted as is (``RankResult.hints_incomplete``) and, where the best's cannot, the best ranked placement whose
    can (``RankResult.hints_pasteable``); ``workers`` processes evaluate in
    parallel; ``progress`` is called with 1 after each exact evaluation. ``unrolled`` weighs each placement that
    stages an object also as ``;unrolled`` and ranks the faster under its own label (``SearchOptions.unrolled``).
    ``options`` and ``stream`` as for ``evaluate``; a streamed trace evaluates up to
    ``evaluate_stream.STREAM_PLACEMENTS_PER_READ`` placements per read of the file, in this process.
    """
    import traces

    from .results import RankResult
    from .search import SearchOptions, solve

    path = None if isinstance(trace, traces.Trace) else _path(trace)
    g = _gpu(gpu)
    opts = model_options(**options)
    search = SearchOptions(top=top, strategy="exhaustive" if exhaustive else "cpsat", workers=workers,
                           pair_budget=pair_budget, polish_budget=polish_budget, unrolled=unrolled)  # fmt: skip
    ev = _evaluator(trace, g, opts, stream)
    r = solve(ev, options=search, progress=progress)
    ctx = _Context(ev)
    ranked = tuple(ctx.placed(e, i) for i, e in enumerate(r.ranking, start=1))
    best_hints, incomplete, pasteable = None, {}, None
    if hints and r.ranking:
        # the best's hints, and whether those of the top HINTS_CHECKED can be pasted as is
        for i, (e, p) in enumerate(zip(r.ranking[:HINTS_CHECKED], ranked)):
            hs = ctx.hints(e)
            best_hints = hs if i == 0 else best_hints
            why = _incomplete(hs)
            if why:
                incomplete[p.label] = why
        if ranked[0].label in incomplete:
            pasteable = _first_pasteable(ctx, r.ranking, ranked, incomplete)
    return RankResult(
        kernel=ev.info.kernel, gpu=g.name, trace=path, strategy=r.strategy, sample=ctx.placed(r.sample, None),
        ranking=ranked, evaluations=r.evaluations, legal_placements=r.legal_placements, candidates=r.candidates,
        excluded=r.excluded, surrogate=dict(r.surrogate), overlap_trained=opts.overlap is not None,
        overlap_source=r.sample.sample.overlap_source,
        hints=best_hints, hints_incomplete=incomplete, hints_pasteable=pasteable,
        accesses={n: a.total for n, a in ctx.accesses.items()}, gpu_config=g,
        blocks=(ev.info.launch_ctas, ev.info.traced_ctas),
    )  # fmt: skip


__all__ = [
    "HINTS_CHECKED",
    "STREAM_MODES",
    "WHOLE_BYTES_PER_ROW",
    "WHOLE_TRACE_BUDGET",
    "evaluate",
    "model_options",
    "rank",
]
