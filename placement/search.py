"""Search the m^n placements: a surrogate, OR-Tools CP-SAT, exact evaluation, ranking.

The exact model is too costly to run m^n times (DESIGN.md, "Search"). The search:

1. evaluates every legal single-object move from the sample exactly (n x m runs);
   the surrogate of a placement is the sample's time plus the sum of its moves'
   changes;
2. adds a pairwise term for two objects moved into the same cache (texture: T
   and 2T share it; constant: C), where the sum of single moves misses their
   competition for the cache and the change they make together to the DRAM
   request stream; the pairs whose single moves sum lowest come first, within a
   budget of exact evaluations (3 per object by default);
3. lets CP-SAT minimise the surrogate under the capacity rules (constant bank,
   shared memory per block) and return the best K distinct placements, one solve
   after another with each found solution cut off;
4. evaluates those exactly, re-checks each for legality in plain Python, and ranks
   every placement it evaluated exactly (sample, single moves, pairs, candidates).

Shared memory changes occupancy, so a placement with several S objects can
differ from the sum of its moves; the exact evaluation of the K candidates is
what ranks them. ``exhaustive`` enumerates every legal placement instead.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from typing import Callable

from ortools.sat.python import cp_model

import traces
from traces.errors import InputError
from traces.rewrite import SHARED_ALIGN

from .gpu import Gpu
from .hms import Evaluation, Evaluator, Options
from .placements import SPACES, IllegalPlacement, Placement, check, sample_placement

log = logging.getLogger(__name__)

# Spaces whose objects share one per-SM cache: moving two objects into the same
# one makes them compete for it.
SHARED_CACHE = {"T": "tex", "2T": "tex", "C": "const"}
SCALE = 1000.0  # surrogate costs go to CP-SAT as integers of picoseconds


@dataclass(frozen=True)
class SearchOptions:
    """Options of one search; unknown strategies are refused with the known ones."""

    top: int = 10
    candidates: int = 16
    """Placements CP-SAT proposes under the surrogate (at least ``top``), each then evaluated exactly."""
    strategy: str = "cpsat"
    """'cpsat' (surrogate + CP-SAT) or 'exhaustive' (every legal placement)."""
    pairwise: bool = True
    pair_budget: int | None = None
    """Exact evaluations spent on pairwise terms (default: 3 per object)."""
    time_limit_s: float = 10.0
    """CP-SAT time limit per solve."""
    max_exhaustive: int = 100_000

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise InputError(f"search strategy {self.strategy!r}; known: {', '.join(STRATEGIES)}")
        if self.top < 1:
            raise InputError(f"--top must be >= 1, got {self.top}")


@dataclass(frozen=True)
class Ranking:
    sample: Evaluation
    ranking: list[Evaluation]
    evaluations: int
    legal_placements: int | None
    """How many legal placements exist (known when enumerated or small enough to count)."""
    strategy: str
    surrogate: dict[str, float] = field(default_factory=dict)


def domains(info: traces.KernelInfo, gpu: Gpu) -> dict[str, list[str]]:
    """Spaces each object may take on its own (single-object rules)."""
    sample = sample_placement(info)
    out = {}
    for name, s0 in sample.spaces:
        ok = []
        for s in SPACES:
            p = Placement(tuple((n, s if n == name else t) for n, t in sample.spaces))
            try:
                check(info, gpu, p)
            except IllegalPlacement:
                continue
            ok.append(s)
        if s0 not in ok:  # the sample itself may be over a limit; keep it reachable
            ok.insert(0, s0)
        out[name] = ok
    return out


def _with(sample: Placement, moves: dict[str, str]) -> Placement:
    return Placement(tuple((n, moves.get(n, s)) for n, s in sample.spaces))


def _legal(info, gpu, p: Placement) -> bool:
    try:
        check(info, gpu, p)
    except IllegalPlacement:
        return False
    return True


def exhaustive(ev: Evaluator, options: SearchOptions, progress: Callable[[int], None] | None = None) -> Ranking:
    """Evaluate every legal placement exactly."""
    info, gpu = ev.info, ev.gpu
    dom = domains(info, gpu)
    names = list(dom)
    total = 1
    for v in dom.values():
        total *= len(v)
    if total > options.max_exhaustive:
        raise InputError(
            f"--exhaustive: {total:,} candidate placements exceed the limit of {options.max_exhaustive:,}; "
            "use the default search"
        )
    results = []
    for combo in itertools.product(*(dom[n] for n in names)):
        p = Placement(tuple(zip(names, combo)))
        if not _legal(info, gpu, p):
            continue
        results.append(ev.evaluate(p))
        if progress:
            progress(1)
    ranked = sorted(results, key=_key)
    return Ranking(ev.evaluate(ev.sample_placement), ranked[: options.top], ev.evaluations, len(results), "exhaustive")


def _key(e: Evaluation):
    """Rank by predicted time; ties by placement label, so the order is deterministic."""
    return (round(e.target.time_ns, 6), sorted(e.target.placement.items()))


def cpsat(ev: Evaluator, options: SearchOptions, progress: Callable[[int], None] | None = None) -> Ranking:
    """Surrogate + CP-SAT for the best K, then exact evaluation (see the module docstring)."""
    info, gpu = ev.info, ev.gpu
    sample = ev.sample_placement
    base = ev.sample.time_ns
    dom = domains(info, gpu)
    exact: dict[Placement, Evaluation] = {sample: ev.evaluate(sample)}

    def run(p: Placement) -> Evaluation:
        if p not in exact:
            exact[p] = ev.evaluate(p)
            if progress:
                progress(1)
        return exact[p]

    # 1. single moves
    single: dict[tuple[str, str], float] = {}
    for name, spaces in dom.items():
        for s in spaces:
            if s == sample[name]:
                single[(name, s)] = 0.0
                continue
            p = _with(sample, {name: s})
            single[(name, s)] = run(p).target.time_ns - base
    # 2. pairwise terms for two objects moved into one cache (T and 2T share the
    # texture cache, C the constant cache), most promising pairs first
    pair: dict[tuple[str, str, str, str], float] = {}
    if options.pairwise:
        moves = sorted((n, s) for (n, s), d in single.items() if s in SHARED_CACHE and s != sample[n])
        pairs = [
            (single[a] + single[b], a, b)
            for a, b in itertools.combinations(moves, 2)
            if a[0] != b[0] and SHARED_CACHE[a[1]] == SHARED_CACHE[b[1]]
        ]
        pairs.sort()
        budget = options.pair_budget if options.pair_budget is not None else 3 * len(dom)
        for _, (a, sa), (b, sb) in pairs:
            if len(pair) >= budget:
                break
            p = _with(sample, {a: sa, b: sb})
            if not _legal(info, gpu, p):
                continue
            pair[(a, sa, b, sb)] = run(p).target.time_ns - base - single[(a, sa)] - single[(b, sb)]
    # 3. CP-SAT for the best K under the surrogate
    candidates = _best_k(info, gpu, dom, single, pair, options)
    for p in candidates:
        if _legal(info, gpu, p):  # re-check the solver's answer before trusting it
            run(p)
        else:  # pragma: no cover - the model's constraints are the legality rules
            log.warning("solver returned an illegal placement %s; skipped", p.label(sample))
    ranked = sorted(exact.values(), key=_key)
    surrogate = {"single_moves": float(len(single)), "pair_terms": float(len(pair)), "candidates": float(len(candidates))}
    return Ranking(exact[sample], ranked[: options.top], ev.evaluations, None, "cpsat", surrogate)


def _best_k(info, gpu, dom, single, pair, options: SearchOptions) -> list[Placement]:
    """The K best distinct placements under the surrogate, by repeated CP-SAT solves."""
    sample = sample_placement(info)
    objs = {o.name: o for o in info.objects}
    m = cp_model.CpModel()
    x = {(n, s): m.NewBoolVar(f"x[{n},{s}]") for n, spaces in dom.items() for s in spaces}
    for n, spaces in dom.items():
        m.AddExactlyOne(x[(n, s)] for s in spaces)
    # constant bank (all C objects together)
    cap = gpu.memory.const_bank_bytes
    m.Add(sum(objs[n].size * x[(n, "C")] for n in dom if (n, "C") in x) <= cap)
    # shared memory per block: the kernel's own usage besides its S objects, plus
    # every object in S; an object moved in may need up to SHARED_ALIGN - 1 bytes of
    # alignment, counted in full here (exact legality is re-checked afterwards)
    in_sample_s = [n for n, s in sample.spaces if s == "S"]
    own = max(info.smem_per_block - sum(objs[n].size for n in in_sample_s), 0)
    need = {n: objs[n].size + (0 if n in in_sample_s else SHARED_ALIGN - 1) for n in dom}
    m.Add(sum(need[n] * x[(n, "S")] for n in dom if (n, "S") in x) <= gpu.memory.smem_per_block - own)
    terms = [int(round(d * SCALE)) * x[k] for k, d in single.items() if d != 0.0]
    for (a, sa, b, sb), d in pair.items():
        y = m.NewBoolVar(f"y[{a},{sa},{b},{sb}]")
        m.AddBoolAnd([x[(a, sa)], x[(b, sb)]]).OnlyEnforceIf(y)
        m.AddBoolOr([x[(a, sa)].Not(), x[(b, sb)].Not(), y])
        terms.append(int(round(d * SCALE)) * y)
    m.Minimize(sum(terms) if terms else 0)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = options.time_limit_s
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0  # deterministic
    out: list[Placement] = []
    for _ in range(max(options.top, options.candidates)):
        status = solver.Solve(m)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            break
        chosen = {n: s for (n, s), v in x.items() if solver.BooleanValue(v)}
        out.append(Placement(tuple((n, chosen[n]) for n, _ in sample.spaces)))
        m.AddBoolOr([x[(n, s)].Not() for n, s in chosen.items()])  # cut this one off
    return out


STRATEGIES: dict[str, Callable[..., Ranking]] = {"cpsat": cpsat, "exhaustive": exhaustive}


def solve(evaluator: Evaluator, *, options: SearchOptions = SearchOptions(), progress=None) -> Ranking:
    """Rank placements of the evaluator's trace with the chosen strategy."""
    return STRATEGIES[options.strategy](evaluator, options, progress)


def rank(trace: traces.Trace, gpu: Gpu, options: SearchOptions = SearchOptions(), model_options: Options = Options(),
         progress=None) -> Ranking:  # fmt: skip
    """Rank the placements of a trace's kernel on a GPU."""
    return solve(Evaluator(trace, gpu, model_options), options=options, progress=progress)


def count_legal(info: traces.KernelInfo, gpu: Gpu, limit: int = 1_000_000) -> int | None:
    """Number of legal placements, or None when the candidate space exceeds ``limit``."""
    dom = domains(info, gpu)
    total = 1
    for v in dom.values():
        total *= len(v)
    if total > limit:
        return None
    names = list(dom)
    return sum(_legal(info, gpu, Placement(tuple(zip(names, c)))) for c in itertools.product(*(dom[n] for n in names)))


__all__ = ["Ranking", "SearchOptions", "count_legal", "cpsat", "domains", "exhaustive", "rank", "solve"]
