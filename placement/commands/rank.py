"""Rank the placements of a kernel's arrays by predicted time (the main job).

Evaluates the sample placement and every single-object move exactly, lets OR-Tools
CP-SAT pick the best K placements under the surrogate they give, evaluates those
exactly and prints them ranked, with speedup over the sample, T_comp, T_mem and
T_overlap, how many placements are legal and why the others are not, what the
model's error cannot tell apart, and why the best is faster, object by object.
`--hints` prints the CUDA changes of the best placement; `--exhaustive` evaluates
every legal placement instead. A placement that stages arrays in shared memory is
weighed both as the loops `--hints` writes and as `;unrolled` (compile-time loops,
the textbook tiled kernel's kind), and ranked as the faster; `--rolled-only` ranks
the first alone.
"""

from __future__ import annotations

import contextlib
import os
import sys

from ._output import print_json
from .evaluate import add_model_arguments, model_kwargs

NAME = "rank"
HELP = "rank the placements of a trace's arrays by predicted time"


def add_arguments(p) -> None:
    p.add_argument("trace", help="trace file (Parquet or Arrow IPC) of the sample placement")
    p.add_argument("--gpu", required=True, help="GPU configuration: a name from `placement gpus` or a .toml file")
    p.add_argument("--top", type=int, default=10, metavar="K", help="placements to rank (default 10)")
    p.add_argument("--exhaustive", action="store_true", help="evaluate every legal placement (small kernels)")
    p.add_argument("--report", metavar="OUT.html", help="also write a self-contained HTML report")
    p.add_argument("--pair-budget", type=int, default=None, metavar="N",
                   help="pairs given a pairwise surrogate term (default: 2 per object)")  # fmt: skip
    p.add_argument("--polish-budget", type=int, default=None, metavar="N",
                   help="exact evaluations around the best after the candidates (default: twice the single "
                        "moves; 0: none)")  # fmt: skip
    p.add_argument("--rolled-only", action="store_true",
                   help="rank staged placements only as the loops --hints writes without ;unrolled (a bounds check in "
                        "the copy); by default each is also weighed as ;unrolled and the faster kept")  # fmt: skip
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes for the exact evaluations (default: the CPUs this process may use)")  # fmt: skip
    p.add_argument(
        "--hints", action="store_true", help="print the CUDA changes of the best placement, object by object"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_model_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _progress_bar(show: bool):
    """tqdm's bar on a terminal; otherwise none, and tqdm not imported (0.05 s of CPU)."""
    if not show:
        return contextlib.nullcontext()
    from tqdm import tqdm

    return tqdm(desc="exact evaluations", unit="eval", file=sys.stderr, leave=False)


def run(args) -> int:
    from ..api import rank

    if args.report:
        from traces.atomic import check_output_folder

        check_output_folder(args.report, (args.trace, args.overlap, args.gpu))  # before the ranking, not after it
    workers = args.workers if args.workers is not None else len(os.sched_getaffinity(0))
    show = not args.no_progress and sys.stderr.isatty() and not os.environ.get("CI")
    with _progress_bar(show) as bar:
        result = rank(args.trace, args.gpu, top=args.top, exhaustive=args.exhaustive, hints=args.hints or bool(args.report),
                      workers=workers, pair_budget=args.pair_budget, polish_budget=args.polish_budget, unrolled=not args.rolled_only, progress=None if bar is None else bar.update, **model_kwargs(args))  # fmt: skip
    if args.report:
        from traces.atomic import write_text

        from ..report import render

        write_text(args.report, render(result))
    if args.json:
        doc = result.to_dict()
        if not args.hints:
            doc.pop("hints", None)
        print_json(doc)
        return 0
    text = result.text()
    if not args.hints and result.hints is not None:  # computed for the report only
        from dataclasses import replace

        text = replace(result, hints=None).text()
    print(text)
    if args.report:
        print(f"\nreport: {args.report}")
    return 0
