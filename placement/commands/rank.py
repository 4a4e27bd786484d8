"""Rank the placements of a kernel's arrays by predicted time (the main job).

Evaluates the sample placement and every single-object move exactly, lets OR-Tools
CP-SAT pick the best K placements under the surrogate they give, evaluates those
exactly and prints them ranked, with speedup over the sample, T_comp, T_mem,
T_overlap and the events that moved most. `--exhaustive` evaluates every legal
placement instead.
"""

from __future__ import annotations

import os
import sys

from tqdm import tqdm

import traces

from ..explain import describe, moved_events
from ..gpu import get_gpu
from ..hms import Evaluator
from ..search import SearchOptions, solve
from ._output import print_json, table
from .evaluate import add_model_arguments, options_from_args

NAME = "rank"
HELP = "rank the placements of a trace's arrays by predicted time"


def add_arguments(p) -> None:
    p.add_argument("trace", help="trace file (.parquet) of the sample placement")
    p.add_argument("--gpu", required=True, help="GPU configuration: a name from `placement gpus` or a .toml file")
    p.add_argument("--top", type=int, default=10, metavar="K", help="placements to rank (default 10)")
    p.add_argument("--exhaustive", action="store_true", help="evaluate every legal placement (small kernels)")
    p.add_argument("--report", metavar="OUT.html", help="also write a self-contained HTML report")
    p.add_argument("--pair-budget", type=int, default=None, metavar="N",
                   help="exact evaluations for pairwise surrogate terms (default: 2 per object)")  # fmt: skip
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes for the exact evaluations (default: the CPUs this process may use)")  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_model_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _row(e, sample_terms) -> dict:
    t = e.target
    d = {
        "placement": t.placement,
        "time_ns": t.time_ns,
        "speedup": e.speedup,
        "t_comp": t.t_comp,
        "t_mem": t.t_mem,
        "t_overlap": t.t_overlap,
        "predicted_ns": e.predicted_ns,
        "moved": moved_events(sample_terms, t),
    }
    d.update({k: v for k, v in t.as_dict().items() if k not in d and k != "placement"})
    return d


def run(args) -> int:
    gpu = get_gpu(args.gpu)
    model_opts = options_from_args(args)
    trace = traces.read(args.trace)
    workers = args.workers if args.workers is not None else len(os.sched_getaffinity(0))
    opts = SearchOptions(
        top=args.top, strategy="exhaustive" if args.exhaustive else "cpsat", workers=workers, pair_budget=args.pair_budget
    )
    ev = Evaluator(trace, gpu, model_opts)
    show = not args.no_progress and sys.stderr.isatty() and not os.environ.get("CI")
    with tqdm(desc="exact evaluations", unit="eval", disable=not show, file=sys.stderr, leave=False) as bar:
        ranking = solve(ev, options=opts, progress=bar.update)
    sample_terms = ranking.sample.sample
    if args.report:
        from ..report import render
        from traces.atomic import write_text

        write_text(args.report, render(ranking, args.trace))
    if args.json:
        print_json({
            "kernel": trace.info.kernel,
            "gpu": gpu.name,
            "sample": _row(ranking.sample, sample_terms) | {"speedup": 1.0},
            "ranking": [_row(e, sample_terms) for e in ranking.ranking],
            "evaluations": ranking.evaluations,
            "legal_placements": ranking.legal_placements,
            "strategy": ranking.strategy,
            "overlap_source": sample_terms.overlap_source,
        })  # fmt: skip
        return 0
    names = [o.name for o in trace.info.objects if o.name in sample_terms.placement]
    print(f"{trace.info.kernel} on {gpu.name}: {len(names)} objects ({', '.join(names)}); "
          f"{ranking.evaluations} exact evaluations ({ranking.strategy})")  # fmt: skip
    print(f"sample {','.join(f'{k}={v}' for k, v in sample_terms.placement.items())}: "
          f"{sample_terms.time_ns:,.0f} ns predicted; T_overlap: {sample_terms.overlap_source}")  # fmt: skip
    print()
    rows = []
    for i, e in enumerate(ranking.ranking, start=1):
        t = e.target
        moved = {k: v for k, v in t.placement.items() if sample_terms.placement.get(k) != v}
        label = ",".join(f"{k}={v}" for k, v in moved.items()) or "(sample)"
        rows.append([i, label, t.time_ns, e.speedup, t.t_comp, t.t_mem, t.t_overlap,
                     describe(moved_events(sample_terms, t))])  # fmt: skip
    print(table(rows, ["#", "moved", "time ns", "speedup", "T_comp", "T_mem", "T_overlap", "what moved most"], "rlrrrrrl"))
    if args.report:
        print(f"\nreport: {args.report}")
    return 0
