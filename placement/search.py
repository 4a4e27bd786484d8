"""Search the m^n placements: a surrogate, OR-Tools CP-SAT, exact evaluation, ranking.

The exact model is too costly to run m^n times (DESIGN.md, "Search"). The search:

1. evaluates every legal single-object move from the sample exactly (n x m runs);
   the surrogate of a placement is the sample's time plus the sum of its moves'
   changes;
2. adds a pairwise term for two objects moved into the same cache (texture: T
   and 2T share it, and R too where the read-only path is the texture cache or
   the L1 is unified with it; constant: C) or both staged into shared memory (their
   tiles share the block's shared memory, its windows and its occupancy), where the
   sum of single moves misses their competition and the change they make together
   to the DRAM request stream; the pairs whose single moves sum lowest come first,
   within a budget (2 per object by default). The first pair of each ``signature``
   (the objects in each shared resource: the nine source combinations of two staged
   objects, the R/T choices of two inputs in the texture cache) is evaluated exactly
   (``_calibrate``) and its term given to the others of the signature, whose
   differences are those of their single moves; the others wait for step 4, where
   they compete with the candidates (bench_rank: the 18 pairs of a lookup table and
   an image, staged, evaluated at 4.18-4.20 ms while the best placements are under
   3 ms, had been a fifth of its evaluations);
3. lets CP-SAT minimise the surrogate under the capacity rules (constant bank,
   shared memory per block, a staged object counted at its smallest tile) and
   return the best K distinct placements, one solve after another with each found
   solution cut off; a space of at most ``COUNT_LIMIT`` placements is enumerated
   under the same model instead wherever that determines the same K (``_best_k``),
   so a small rank does not load OR-Tools;
4. re-checks each candidate for legality in plain Python and evaluates the candidates
   and the waiting pairs exactly, ``ROUND_SIZE`` at a time, lowest estimate first; one
   is skipped where the error the surrogate made on evaluated placements of its
   ``signature`` puts it at or above the ``top``-th best exact time so far
   (``_evaluate_in_rounds``);
5. evaluates the legal single-object changes of the best exact placement, and again from
   a better one, and from the runners-up where the best's are all evaluated, until its budget
   (twice the single moves) is spent (``_polish``: the model is not additive); and ranks
   every placement it evaluated exactly (sample, single moves, pairs, candidates, those).

Every exact evaluation of a placement that stages objects in the tool's windows is made twice: as the loops
``--hints`` writes (a bounds check inside the copy, one load at a time) and as its ``;unrolled`` twin (loops of
compile-time steps and bounds, which nvcc unrolls: the textbook tiled kernels, and what ``--hints`` writes for an
``;unrolled`` placement), and the faster is kept under its own label (``_Runner.many``; ``SearchOptions.unrolled``,
``rank --rolled-only`` turns it off). The surrogate and the pairs see the kept one.

Shared memory changes occupancy, so a placement with several S objects can
differ from the sum of its moves; the exact evaluation of the K candidates is
what ranks them. ``exhaustive`` enumerates every legal placement instead.
"""

from __future__ import annotations

import itertools
import logging
import os
from dataclasses import dataclass, field, replace
from typing import Callable

import traces
import traces.staging
from traces.errors import InputError
from traces.launch import SHARED_ALIGN

from .gpu import Gpu
from .evaluate_whole import WholeTraceEvaluator
from .evaluator import Evaluator, group_key, groups
from .hms import Evaluation, Options
from .placements import SPACES, STAGED, IllegalPlacement, Placement, check, is_staged, sample_placement
from .staging import StagingFacts
from .workers import die_with_parent, evaluation_cost_s, retain_freed_memory, worth_processes

log = logging.getLogger(__name__)

SCALE = 1000.0  # surrogate costs go to CP-SAT as integers of picoseconds
WARM_ROWS = 4096
"""Rows of the trace's head on which a new set of spaces is evaluated before a batch goes to the workers."""
ROUND_SIZE = 4
"""Pairs and CP-SAT's candidates are evaluated this many at a time, the surrogate's errors learnt between rounds
(``_evaluate_in_rounds``): a fixed number, so that which are skipped does not depend on the workers."""
TIE_RTOL = 1e-12
"""A corrected estimate within this fraction of the bar ties with it: the mean of a signature's errors rounds, and
bench_rank's tied candidates came out 5e-10 ns under their own exact time."""
COUNT_LIMIT = 20_000
"""Legal placements are counted one by one when the candidate space is at most this large."""


def shared_resource(gpu: Gpu) -> dict[str, str]:
    """Spaces whose objects compete for one per-SM resource on ``gpu``: moving two objects
    into the same one makes the sum of their single moves miss their competition."""
    k = gpu.caches
    tex = "l1" if k.l1_tex_unified else "tex"
    out = {"T": tex, "2T": tex, "C": "const"}
    if k.readonly_cache != "none":
        out["R"] = "l1" if k.readonly_cache == "l1" or k.l1_tex_unified else "tex"
    for s in STAGED:
        out[s] = "shared"
    return out


@dataclass(frozen=True)
class SearchOptions:
    """Options of one search; unknown strategies are refused with the known ones."""

    top: int = 10
    candidates: int = 16
    """Placements CP-SAT proposes under the surrogate (at least ``top``), each then evaluated exactly unless the
    surrogate's measured error on its signature rules it out of the ``top`` (see ``_evaluate_in_rounds``)."""
    strategy: str = "cpsat"
    """'cpsat' (surrogate + CP-SAT) or 'exhaustive' (every legal placement)."""
    pairwise: bool = True
    pair_budget: int | None = None
    """Pairs given a pairwise term (default: 2 per object); one per signature is evaluated to measure it, the
    others only if they could enter the ``top``."""
    polish_budget: int | None = None
    """Exact evaluations the polish (step 5) may spend around the best (default: twice the single moves, since
    T_round made the model less additive: matvec's best on the K80 is two changes from the surrogate's, through
    a worse one); 0 turns it off."""
    time_limit_s: float = 10.0
    """CP-SAT time limit per solve."""
    max_exhaustive: int = 100_000
    workers: int = 1
    """Processes for the exact evaluations (forked; results do not depend on it)."""
    unrolled: bool = True
    """Weigh each placement that stages an object in shared memory also as ``;unrolled`` (its copy and reads in
    loops nvcc unrolls: compile-time steps and bounds, as the textbook tiled kernels and ``--hints`` of an
    ``;unrolled`` placement write them) and rank the faster of the two under its own label; False ranks the loops
    ``--hints`` writes without it (a bounds check inside the copy, one load at a time) alone."""

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise InputError(f"search strategy {self.strategy!r}; known: {', '.join(STRATEGIES)}")
        if self.top < 1:
            raise InputError(f"--top must be >= 1, got {self.top}")
        if self.workers < 1:
            raise InputError(f"--workers must be >= 1, got {self.workers}")
        if self.pair_budget is not None and self.pair_budget < 0:
            raise InputError(f"--pair-budget must be >= 0, got {self.pair_budget}")
        if self.polish_budget is not None and self.polish_budget < 0:
            raise InputError(f"--polish-budget must be >= 0, got {self.polish_budget}")
        if self.strategy == "exhaustive":  # both budgets belong to the default search; they were ignored
            given = [o for o, v in (("--pair-budget", self.pair_budget), ("--polish-budget", self.polish_budget))
                     if v is not None]  # fmt: skip
            if given:
                raise InputError(f"{' and '.join(given)} belong{'s' if len(given) == 1 else ''} to the default search; "
                                 "--exhaustive evaluates every legal placement")  # fmt: skip


@dataclass(frozen=True)
class Ranking:
    sample: Evaluation
    ranking: list[Evaluation]
    evaluations: int
    legal_placements: int | None
    """How many legal placements exist (known when enumerated or small enough to count)."""
    strategy: str
    surrogate: dict[str, int] = field(default_factory=dict)
    candidates: int = 0
    """Placements the single-object rules allow (the product of the domains): an upper bound on the legal ones."""
    excluded: dict[str, dict[str, str]] = field(default_factory=dict)
    """Object -> space -> why that single move is illegal (the rule and its message)."""


def object_spaces(o: traces.ObjectInfo) -> tuple[str, ...]:
    """The spaces an object may be tried in: its own shared array stays "S" (or leaves for off-chip
    spaces); any other object may go anywhere, shared memory by staging."""
    if o.space == "shared":
        return ("S",) + tuple(s for s in SPACES if not is_staged(s))
    return SPACES


def domains(info: traces.KernelInfo, gpu: Gpu, staging: StagingFacts | None = None,
            why: dict[str, dict[str, str]] | None = None) -> dict[str, list[str]]:  # fmt: skip
    """Spaces each object may take on its own (single-object rules); ``why`` collects the reasons of the others."""
    sample = sample_placement(info)
    objs = {o.name: o for o in info.objects}
    out = {}
    for name, s0 in sample.spaces:
        if staging is not None and staging.access(name).rows == 0:
            # never accessed by a memory instruction of the trace (a filter read as instruction operands,
            # an argument the kernel does not touch): where it lives changes nothing the model sees
            out[name] = [s0]
            if why is not None:
                why.setdefault(name, {})["*"] = "no memory instruction of the trace accesses it; it stays where it is"
            continue
        ok = []
        for s in object_spaces(objs[name]):
            p = Placement(tuple((n, s if n == name else t) for n, t in sample.spaces))
            try:
                check(info, gpu, p, staging)
            except IllegalPlacement as exc:
                if why is not None and s != s0:
                    why.setdefault(name, {})[s] = str(exc).removeprefix("illegal placement ")
                continue
            ok.append(s)
        if s0 not in ok:  # the sample itself may be over a limit; keep it reachable
            ok.insert(0, s0)
        out[name] = ok
    return out


def _with(sample: Placement, moves: dict[str, str]) -> Placement:
    return Placement(tuple((n, moves.get(n, s)) for n, s in sample.spaces))


def _legal(info, gpu, p: Placement, staging: StagingFacts | None = None) -> bool:
    try:
        check(info, gpu, p, staging)
    except IllegalPlacement:
        return False
    return True


def _product(dom: dict[str, list[str]]) -> int:
    total = 1
    for v in dom.values():
        total *= len(v)
    return total


_WORKER_EVALUATOR: Evaluator | None = None


def _evaluate_in_worker(group: list[Placement]) -> list[Evaluation]:
    assert _WORKER_EVALUATOR is not None
    return _WORKER_EVALUATOR.evaluate_many(group)


class _Runner:
    """Exact evaluations, each placement once, in parallel processes where they pay.

    A batch of evaluations goes to worker processes only when its estimated work
    (``workers.evaluation_cost_s`` per placement) outweighs starting them
    (``workers.worth_processes``); smaller batches run in this process, and the
    decision is logged. The pool is forked once, at the first batch worth it, after
    this process has evaluated one placement of every set of spaces in that batch on
    the trace's first ``WARM_ROWS`` rows (an evaluator of its own; the whole trace when
    it is that short, and then the results are kept): the workers inherit the evaluator
    (its trace and the sample's terms, not copied or pickled) and every kernel compiled
    or loaded from numba's cache, so none of them compiles, and every placement of the
    batch is left to them. A later batch's new sets of spaces are warmed here first too,
    so their kernels are in numba's on-disk cache when a worker needs them (loaded, not
    compiled). An evaluation is a pure function, so the results do not depend on the
    workers. Freed memory is kept for reuse while the runner is open
    (``workers.retain_freed_memory``). Placements that differ only in a staged object's
    source (S/G, S/T, S/R) go to one process together, which stages their tiles once
    (``Evaluator.evaluate_many``).
    """

    def __init__(self, ev: Evaluator, workers: int, progress: Callable[[int], None] | None, unrolled: bool = False):
        self.ev = ev
        self.exact: dict[Placement, Evaluation] = {}
        self.unrolled = unrolled
        self.twins: set[Placement] = set()
        """The ``;unrolled`` twins evaluated (``many``): evaluations beside the placements ranked."""
        self.progress = progress
        self.pool = None
        # forked workers need os.fork; multiprocessing and the pool are imported only for a
        # pool (17 ms of CPU a small rank does not need)
        self.workers = workers if hasattr(os, "fork") else 1
        self.rows = ev.n_rows
        self._warm: set[frozenset[str]] = set()
        self._head: Evaluator | None = None

    def __enter__(self) -> "_Runner":
        self._memory = retain_freed_memory()
        self._memory.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.pool is not None:
                self.pool.shutdown(cancel_futures=True)
        finally:
            self._memory.__exit__(None, None, None)

    def many(self, placements: list[Placement]) -> list[Evaluation]:
        """The exact evaluations of ``placements``. With ``unrolled``, a placement that stages an object in the
        tool's windows is evaluated with its ``;unrolled`` twin (the same spaces, its staged tiles copied and read in
        loops nvcc unrolls: ``Placement.unrolled``) and keeps the faster of the two, the rolled one on a tie; the
        kept evaluation's ``staging["unrolled"]`` says which, and ``api._Context.placed`` labels it so."""
        if not self.unrolled:
            return self._many(placements)
        twins = {p: replace(p, unrolled=True) for p in dict.fromkeys(placements)
                 if p not in self.exact and not p.unrolled and p.windows is None
                 and any(is_staged(s) for _, s in p.spaces)}  # fmt: skip
        self.twins.update(twins.values())
        self._many([*placements, *twins.values()])
        for p, q in twins.items():
            e = self.exact.pop(q)
            if e.target.cycles < self.exact[p].target.cycles:
                self.exact[p] = e
        return [self.exact[p] for p in placements]

    def _many(self, placements: list[Placement]) -> list[Evaluation]:
        todo = [p for p in dict.fromkeys(placements) if p not in self.exact]
        if not self.ev.parallel:  # a streamed trace: several placements per read, in this process
            if todo:
                log.info("%d exact evaluations of a streamed trace of %d rows: in this process, several per read of "
                         "the file (no worker processes)", len(todo), self.rows)  # fmt: skip
            self._run(todo, self.ev.evaluate_many(todo) if todo else [])
            return [self.exact[p] for p in placements]
        parallel = self._parallel(todo)
        if parallel:
            # one placement per new set of spaces first, here, so the workers forked below
            # inherit every kernel the rest use
            kinds: dict[frozenset[str], Placement] = {}
            for p in todo:
                kind = frozenset(s for _, s in p.spaces)
                if kind not in self._warm:
                    kinds.setdefault(kind, p)
            self._warm.update(kinds)
            first = [p for p in kinds.values() if not self._warm_on_head(p, todo)]
            self._run(first, (self.ev.evaluate(p) for p in first))
            todo = [p for p in todo if p not in self.exact]
            if self.pool is None:
                global _WORKER_EVALUATOR
                _WORKER_EVALUATOR = self.ev
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                self.pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"),
                                                initializer=die_with_parent, initargs=(os.getpid(),))  # fmt: skip
        batches = groups(todo)
        if parallel:
            results = (e for es in self.pool.map(_evaluate_in_worker, batches) for e in es)
            self.ev.evaluations += len(todo)
        else:
            results = (e for g in batches for e in self.ev.evaluate_many(g))
        self._run([p for g in batches for p in g], results)
        return [self.exact[p] for p in placements]

    def _warm_on_head(self, p: Placement, todo: list[Placement]) -> bool:
        """Evaluate ``p`` with its group in ``todo`` (``evaluator.groups``: the re-sourcing of staged tiles too) on
        the trace's first ``WARM_ROWS`` rows (``Evaluator.head``), loading their kernels; False when the trace is
        no longer than that, the evaluator makes no head, or one of them is not legal there (the caller evaluates
        ``p`` on the whole trace)."""
        if self.rows <= WARM_ROWS:
            return False
        if self._head is None:
            self._head = self.ev.head(WARM_ROWS)
            if self._head is None:
                return False
        key = group_key(p)
        try:
            self._head.evaluate_many([q for q in todo if group_key(q) == key])
        except InputError as exc:  # e.g. a staged tile that the head's footprints make illegal
            log.debug(
                "%s not evaluated on the trace's head (%s); evaluated here", p.label(self.ev.sample_placement), exc
            )
            return False
        return True

    def _parallel(self, todo: list[Placement]) -> bool:
        """Whether this batch goes to worker processes (see the class docstring); logged."""
        if self.workers <= 1 or len(todo) <= 1:
            return False
        work = len(todo) * evaluation_cost_s(self.rows)
        go = self.pool is not None or worth_processes(work, self.workers)
        log.info("%d exact evaluations of %d rows, about %.2f s of CPU: %s", len(todo), self.rows, work,
                 f"{self.workers} worker processes" if go else
                 f"in this process (starting {self.workers} workers would cost more than they save)")  # fmt: skip
        return go

    def _run(self, todo: list[Placement], results) -> None:
        for p, r in zip(todo, results):
            self.exact[p] = r
            if self.progress and p not in self.twins:
                self.progress(1)

    def one(self, p: Placement) -> Evaluation:
        return self.many([p])[0]


def exhaustive(ev: Evaluator, options: SearchOptions, progress: Callable[[int], None] | None = None) -> Ranking:
    """Evaluate every legal placement exactly."""
    info, gpu = ev.info, ev.gpu
    why: dict[str, dict[str, str]] = {}
    dom = domains(info, gpu, ev.staging, why)
    names = list(dom)
    total = _product(dom)
    if total > options.max_exhaustive:
        raise InputError(
            f"--exhaustive: {total:,} candidate placements exceed the limit of {options.max_exhaustive:,}; "
            "use the default search"
        )
    legal = [
        p for p in (Placement(tuple(zip(names, combo))) for combo in itertools.product(*(dom[n] for n in names)))
        if _legal(info, gpu, p, ev.staging)
    ]  # fmt: skip
    with _Runner(ev, options.workers, progress, options.unrolled) as runner:
        results = runner.many(legal)
    ranked = sorted(results, key=_key)
    return Ranking(ev.evaluate(ev.sample_placement), ranked[: options.top], ev.evaluations, len(results), "exhaustive",
                   {"unrolled_twins": len(runner.twins)}, candidates=total, excluded=why)  # fmt: skip


def _key(e: Evaluation):
    """Rank by predicted time; ties by placement label, so the order is deterministic."""
    return (round(e.target.time_ns, 6), sorted(e.target.placement.items()))


def cpsat(ev: Evaluator, options: SearchOptions, progress: Callable[[int], None] | None = None) -> Ranking:
    """Surrogate + CP-SAT for the best K, then exact evaluation (see the module docstring)."""
    info, gpu = ev.info, ev.gpu
    sample = ev.sample_placement
    base = ev.sample.time_ns
    why: dict[str, dict[str, str]] = {}
    dom = domains(info, gpu, ev.staging, why)
    resource = shared_resource(gpu)
    with _Runner(ev, options.workers, progress, options.unrolled) as runner:
        runner.exact[sample] = ev.evaluate(sample)
        # 1. single moves
        singles = [(n, s) for n, spaces in dom.items() for s in spaces if s != sample[n]]
        done = runner.many([_with(sample, {n: s}) for n, s in singles])
        single: dict[tuple[str, str], float] = {(n, sample[n]): 0.0 for n in dom}
        single.update({k: e.target.time_ns - base for k, e in zip(singles, done)})
        # 2. pairwise terms for two objects moved into one cache (T and 2T share the
        # texture cache, C the constant cache), most promising pairs first
        pair: dict[tuple[str, str, str, str], float] = {}
        placed: list[Placement] = []
        deferred: list[Placement] = []

        def sig(p: Placement) -> tuple:
            return signature(p, resource)

        if options.pairwise:
            moves = sorted((n, s) for (n, s) in single if s in resource and s != sample[n])
            pairs = sorted(
                (single[a] + single[b], a, b)
                for a, b in itertools.combinations(moves, 2)
                if a[0] != b[0] and resource[a[1]] == resource[b[1]]
            )
            budget = options.pair_budget if options.pair_budget is not None else 2 * len(dom)
            chosen = []
            for _, a, b in pairs:
                if len(chosen) >= budget:
                    break
                if _legal(info, gpu, _with(sample, {a[0]: a[1], b[0]: b[1]}), ev.staging):
                    chosen.append((a, b))
            # one pair per signature measures its objects' term; the others take it (their sources' and
            # spaces' differences are in the single moves) and wait for the candidates' rounds
            placed = [_with(sample, {a[0]: a[1], b[0]: b[1]}) for a, b in chosen]
            terms = dict(zip(placed, chosen))
            deferred, errors = _calibrate(runner, placed, lambda p: base + single[terms[p][0]] + single[terms[p][1]],
                                          sig)  # fmt: skip
            for p, (a, b) in zip(placed, chosen):
                e = runner.exact.get(p)
                err = errors[sig(p)]
                pair[(a[0], a[1], b[0], b[1])] = (
                    e.target.time_ns - base - single[a] - single[b] if e is not None else sum(err) / len(err)
                )
        # 3. CP-SAT for the best K under the surrogate
        candidates = _best_k(info, gpu, dom, single, pair, options, ev.staging,
                             settled=lambda p: p in runner.exact and _legal(info, gpu, p, ev.staging))  # fmt: skip
        legal = []
        for p in candidates:
            if _legal(info, gpu, p, ev.staging):  # re-check the solver's answer before trusting it
                legal.append(p)
            else:  # pragma: no cover - the model's constraints are the legality rules
                log.warning("solver returned an illegal placement %s; skipped", p.label(sample))

        def estimate(p: Placement) -> float:
            return base + sum(single[(n, p[n])] for n in dom) + sum(
                v for (a, sa, b, sb), v in pair.items() if p[a] == sa and p[b] == sb)  # fmt: skip

        # the deferred pairs compete with the candidates; the measured ones give their errors
        _evaluate_in_rounds(runner, list(dict.fromkeys(legal + placed)), estimate, sig, options.top)
        skipped = sum(p not in runner.exact for p in legal)
        skipped_pairs = sum(p not in runner.exact for p in deferred if p not in legal)
        budget = options.polish_budget if options.polish_budget is not None else 2 * len(singles)
        polished = _polish(runner, dom, lambda p: _legal(info, gpu, p, ev.staging), estimate, budget)
        exact = runner.exact
    ranked = sorted(exact.values(), key=_key)
    surrogate = {"single_moves": len(singles), "pair_terms": len(pair), "candidates": len(candidates),
                 "candidates_skipped": int(skipped), "pairs_skipped": int(skipped_pairs),
                 "polished": int(polished), "unrolled_twins": len(runner.twins)}  # fmt: skip
    total = _product(dom)
    n_legal = count_legal(info, gpu, COUNT_LIMIT, ev.staging) if total <= COUNT_LIMIT else None
    return Ranking(exact[sample], ranked[: options.top], ev.evaluations, n_legal, "cpsat", surrogate, total, why)


def _polish(runner: "_Runner", dom: dict[str, list[str]], legal: Callable[[Placement], bool],
            estimate: Callable[[Placement], float], budget: int) -> int:  # fmt: skip
    """Step 5: evaluate exactly the legal single-object changes of the best placement evaluated so far, lowest
    surrogate estimate first, and again from a better one found; where the best's changes are all evaluated (a
    local best), from the best placement whose changes are not, until ``budget`` evaluations are spent or every
    evaluated placement's are; returns how many it evaluated. The surrogate adds up single moves and pair terms,
    but T = T_comp + T_mem - T_overlap is not additive (each term's bound, the overlap's min, barriers that stay
    serial), so the best can differ from a candidate in one object (transpose on the K80: idata in 2T is
    slower than the sample alone and the best with odata staged; bench_rank's 12 objects at 300,000 rows:
    371 us without the polish, 331 us after 56 evaluations, its default budget, 308 us after 200). Going on from
    the runners-up finds a best two changes away through a worse one: matvec on the K80, A in 2D texture memory
    and x in constant memory, where A alone in 2D texture memory is slower than the sample and the surrogate's
    best, x through the read-only path, is a local best 12 % slower."""
    evaluated = 0
    tried: set[Placement] = set()
    while evaluated < budget:
        untried = [p for p in runner.exact if p not in tried]
        if not untried:
            break
        best = min(untried, key=lambda p: _key(runner.exact[p]))  # ties by label: the same whatever the order
        tried.add(best)
        around = [q for n, spaces in dom.items() for sp in spaces if sp != best[n]
                  for q in (_with(best, {n: sp}),) if q not in runner.exact and legal(q)]  # fmt: skip
        around = sorted(around, key=lambda q: (estimate(q), q.label(best)))[: budget - evaluated]
        runner.many(around)
        evaluated += len(around)
    return evaluated


def signature(p: Placement, resource: dict[str, str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The objects in each shared per-SM resource under ``p`` (``shared_resource``): what the surrogate's
    sum of single moves and pair terms misses is their competition there, so two placements of one signature
    differ mostly by what the surrogate does see."""
    out: dict[str, list[str]] = {}
    for n, s in p.spaces:
        if s in resource:
            out.setdefault(resource[s], []).append(n)
    return tuple(sorted((r, tuple(sorted(ns))) for r, ns in out.items()))


def _calibrate(
    runner: "_Runner",
    placements: list[Placement],
    estimate: Callable[[Placement], float],
    signature: Callable[[Placement], tuple],
) -> tuple[list[Placement], dict[tuple, list[float]]]:
    """Evaluate the first of ``placements`` of each signature exactly (one batch); returns the others not yet
    exact, in their order, and the surrogate's errors (``exact - estimate``) per signature, from every one of
    ``placements`` that is exact."""
    first: dict[tuple, Placement] = {}
    for p in placements:
        first.setdefault(signature(p), p)
    runner.many(list(first.values()))
    errors: dict[tuple, list[float]] = {}
    deferred = []
    for p in placements:
        e = runner.exact.get(p)
        if e is None:
            deferred.append(p)
        else:
            _learn(errors, signature, estimate, p, e)
    return deferred, errors


def _learn(errors: dict[tuple, list[float]], signature: Callable[[Placement], tuple],
           estimate: Callable[[Placement], float], p: Placement, e: Evaluation) -> None:  # fmt: skip
    """Add the surrogate's error on ``p`` (``exact - estimate``) to its signature's in ``errors``."""
    errors.setdefault(signature(p), []).append(e.target.time_ns - estimate(p))


def _evaluate_in_rounds(
    runner: "_Runner",
    candidates: list[Placement],
    estimate: Callable[[Placement], float],
    signature: Callable[[Placement], tuple],
    top: int,
    batch: int = ROUND_SIZE,
) -> int:
    """Evaluate the ``candidates`` that could enter the ranking's ``top`` exactly, ``batch`` at a time, best first;
    returns how many were skipped.

    Each exact evaluation measures the surrogate's error (``exact - estimate``) on its
    ``signature``; candidates exact already give theirs for free. Before each round, a candidate
    of a measured signature is re-estimated with the mean of its errors, and skipped when that
    corrected estimate is at or above the ``top``-th best exact time so far (within
    ``TIE_RTOL``): it would not improve the ``top``. The round takes the lowest estimates
    (corrected where measured) and at most one candidate of each signature not yet measured, so
    that its error is known before the others of the signature are weighed (bench_rank: the 16
    candidates CP-SAT proposes stage the same four objects and differ only in R and T of six
    inputs, which tie in the surrogate; the first one evaluated is 50 % slower than the
    surrogate said, and so are the others). A candidate that the round's measured placements, at
    their corrected estimates, would push out of the ``top`` waits for the next round, where it
    is weighed against their exact times: it is skipped only by exact times, never by estimates.
    """
    errors: dict[tuple, list[float]] = {}
    todo = []
    for p in candidates:
        if p in runner.exact:
            _learn(errors, signature, estimate, p, runner.exact[p])
        else:
            todo.append(p)
    skipped = 0
    while todo:
        times = sorted(e.target.time_ns for e in runner.exact.values())
        bar = times[top - 1] if len(times) >= top else float("inf")
        ranked = []
        for p in todo:
            err = errors.get(signature(p))
            surrogate = estimate(p)
            corrected = surrogate + sum(err) / len(err) if err else None
            if corrected is not None and corrected >= bar * (1.0 - TIE_RTOL):
                log.debug("%s skipped: %.1f ns by the surrogate corrected by its signature's error, "
                          "not under the top-%d time %.1f ns", p, corrected, top, bar)  # fmt: skip
                skipped += 1
            else:
                ranked.append((surrogate if corrected is None else corrected, p))
        ranked.sort(key=lambda c: c[0])  # stable: ties keep the candidates' order
        now: list[Placement] = []
        unmeasured: set[tuple] = set()
        expected = times  # the exact times and, at their corrected estimates, the round's measured placements
        for value, p in ranked:
            if len(now) == batch:
                break
            sig = signature(p)
            if sig not in errors:
                if sig in unmeasured:
                    continue
                unmeasured.add(sig)
            elif len(expected) >= top and value >= expected[top - 1] * (1.0 - TIE_RTOL):
                continue  # the round's placements would push it out of the top: it waits for their exact times
            else:
                expected = sorted(expected + [value])
            now.append(p)
        if not now:
            break
        taken = set(now)
        todo = [p for _, p in ranked if p not in taken]
        for p, e in zip(now, runner.many(now)):
            _learn(errors, signature, estimate, p, e)
    if skipped:
        log.info("%d of %d placements skipped: their surrogate, corrected by the error measured on placements of "
                 "the same objects per shared resource, is not under the top-%d time", skipped, len(candidates), top)  # fmt: skip
    return skipped


@dataclass(frozen=True)
class _SurrogateModel:
    """The integer program `_best_k` solves: one space per object, two capacity rows, a sum of terms.

    ``single`` and ``pair`` are the objective's integer coefficients (picoseconds): a
    single term counts when its object takes that space, a pair term when both do;
    ``rows`` are the capacity rules, each a (coefficients of (object, space), limit).
    """

    dom: dict[str, list[str]]
    single: dict[tuple[str, str], int]
    pair: dict[tuple[str, str, str, str], int]
    rows: tuple[tuple[dict[tuple[str, str], int], int], ...]


def _surrogate_model(info, gpu, dom, single, pair, staging: StagingFacts | None) -> _SurrogateModel:
    sample = sample_placement(info)
    objs = {o.name: o for o in info.objects}
    keys = [(n, s) for n, spaces in dom.items() for s in spaces]
    # constant bank (all C objects together)
    const = {(n, "C"): objs[n].size for n in dom if "C" in dom[n]}
    # shared memory per block: the kernel's own usage besides its S arrays, plus each
    # S array kept and each staged object's smallest tile (its finest windows) with
    # SHARED_ALIGN - 1 bytes of alignment counted in full (exact legality, windows
    # included, is re-checked afterwards)
    in_sample_s = [n for n, s in sample.spaces if s == "S"]
    own = max(info.smem_per_block - sum(objs[n].size for n in in_sample_s), 0)
    need = {}
    for n, s in keys:
        if s == "S":
            need[(n, s)] = objs[n].size
        elif is_staged(s) and staging is not None:
            k = staging.access(n).ordinals
            wins = traces.staging.window_counts(k)
            need[(n, s)] = staging.footprint(n, wins).bytes[-1] + SHARED_ALIGN - 1
    rows = ((const, gpu.memory.const_bank_bytes), (need, gpu.memory.smem_per_block - own))
    return _SurrogateModel(
        dom,
        {k: int(round(d * SCALE)) for k, d in single.items() if d != 0.0},
        {k: int(round(d * SCALE)) for k, d in pair.items()},
        rows,
    )


def _best_k(info, gpu, dom, single, pair, options: SearchOptions, staging: StagingFacts | None,
            settled: Callable[[Placement], bool] = lambda p: False) -> list[Placement]:  # fmt: skip
    """The K best distinct placements under the surrogate.

    A space of at most ``COUNT_LIMIT`` placements is enumerated, and its K best are the
    answer when the set is determined: no tie across the K-th place (then every exact
    solver returns that set), or a tie among placements that are all ``settled``
    (legal and already evaluated exactly: which of them a solver picks changes no
    evaluation, no ranking and no count). Otherwise, and for larger spaces, repeated
    CP-SAT solves.
    """
    model = _surrogate_model(info, gpu, dom, single, pair, staging)
    k = max(options.top, options.candidates)
    sample = sample_placement(info)

    def placement(chosen: dict[str, str]) -> Placement:
        return Placement(tuple((n, chosen[n]) for n, _ in sample.spaces))

    if _product(dom) <= COUNT_LIMIT:
        best = _best_k_enumerated(model, k, lambda chosen: settled(placement(chosen)))
        if best is not None:
            return [placement(chosen) for chosen in best]
    return [placement(chosen) for chosen in _best_k_cpsat(model, k, options)]


def _best_k_enumerated(
    model: _SurrogateModel, k: int, settled: Callable[[dict[str, str]], bool]
) -> list[dict[str, str]] | None:
    """Every placement's surrogate and capacity use at once (numpy over the product of the
    domains); the K best feasible ones, or None where CP-SAT must decide (a tie across the
    K-th place with a placement not ``settled``, a limit below zero, coefficients that
    could overflow int64)."""
    import numpy as np

    names = list(model.dom)
    coeffs = [*model.single.values(), *model.pair.values(), *(v for row, _ in model.rows for v in row.values())]
    if not names or any(limit < 0 for _, limit in model.rows) or sum(abs(v) for v in coeffs) >= 2**62:
        return None
    shape = tuple(len(model.dom[n]) for n in names)
    choice = dict(zip(names, np.indices(shape).reshape(len(names), -1)))  # object -> its space index, per placement
    index = {(n, s): i for n in names for i, s in enumerate(model.dom[n])}

    def linear(terms: dict[tuple[str, str], int]) -> np.ndarray:
        total = np.zeros(int(np.prod(shape)), dtype=np.int64)
        for (n, s), v in terms.items():
            total += np.where(choice[n] == index[(n, s)], np.int64(v), np.int64(0))
        return total

    cost = linear(model.single)
    for (a, sa, b, sb), v in model.pair.items():
        cost += np.where((choice[a] == index[(a, sa)]) & (choice[b] == index[(b, sb)]), np.int64(v), np.int64(0))
    feasible = np.ones(cost.shape, dtype=bool)
    for row, limit in model.rows:
        feasible &= linear(row) <= limit
    (ids,) = np.nonzero(feasible)
    ids = ids[np.argsort(cost[ids], kind="stable")]

    def chosen(i) -> dict[str, str]:
        return {n: model.dom[n][int(choice[n][i])] for n in names}

    if len(ids) > k and cost[ids[k - 1]] == cost[ids[k]]:
        if not all(settled(chosen(i)) for i in ids[cost[ids] == cost[ids[k - 1]]]):
            return None
    return [chosen(i) for i in ids[:k]]


def _best_k_cpsat(model: _SurrogateModel, k: int, options: SearchOptions) -> list[dict[str, str]]:
    """Repeated CP-SAT solves, each found solution cut off. OR-Tools (and the pandas it
    imports) loads here, not with this module: most of a small rank's start-up time."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    x = {(n, s): m.NewBoolVar(f"x[{n},{s}]") for n, spaces in model.dom.items() for s in spaces}
    for n, spaces in model.dom.items():
        m.AddExactlyOne(x[(n, s)] for s in spaces)
    for row, limit in model.rows:
        m.Add(sum(v * x[key] for key, v in row.items()) <= limit)
    terms = [c * x[key] for key, c in model.single.items()]
    for (a, sa, b, sb), c in model.pair.items():
        y = m.NewBoolVar(f"y[{a},{sa},{b},{sb}]")
        m.AddBoolAnd([x[(a, sa)], x[(b, sb)]]).OnlyEnforceIf(y)
        m.AddBoolOr([x[(a, sa)].Not(), x[(b, sb)].Not(), y])
        terms.append(c * y)
    m.Minimize(sum(terms) if terms else 0)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = options.time_limit_s
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0  # deterministic
    out: list[dict[str, str]] = []
    for _ in range(k):
        status = solver.Solve(m)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            break
        chosen = {n: s for (n, s), v in x.items() if solver.BooleanValue(v)}
        out.append(chosen)
        m.AddBoolOr([x[(n, s)].Not() for n, s in chosen.items()])  # cut this one off
    return out


STRATEGIES: dict[str, Callable[..., Ranking]] = {"cpsat": cpsat, "exhaustive": exhaustive}


def solve(evaluator: Evaluator, *, options: SearchOptions = SearchOptions(), progress=None) -> Ranking:
    """Rank placements of the evaluator's trace with the chosen strategy."""
    return STRATEGIES[options.strategy](evaluator, options, progress)


def rank(trace: traces.Trace, gpu: Gpu, options: SearchOptions = SearchOptions(), model_options: Options = Options(),
         progress=None) -> Ranking:  # fmt: skip
    """Rank the placements of a trace's kernel on a GPU."""
    return solve(WholeTraceEvaluator(trace, gpu, model_options), options=options, progress=progress)


def count_legal(
    info: traces.KernelInfo, gpu: Gpu, limit: int = 1_000_000, staging: StagingFacts | None = None
) -> int | None:
    """Number of legal placements, or None when the candidate space exceeds ``limit``."""
    dom = domains(info, gpu, staging)
    if _product(dom) > limit:
        return None
    names = list(dom)
    return sum(
        _legal(info, gpu, Placement(tuple(zip(names, c))), staging) for c in itertools.product(*(dom[n] for n in names))
    )


__all__ = ["Ranking", "SearchOptions", "count_legal", "cpsat", "domains", "exhaustive", "rank", "solve"]
