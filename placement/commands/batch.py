"""Evaluate a suite of (kernel, GPU, placement) predictions into one Parquet file.

  placement batch SUITE.toml -o RESULTS.parquet [--gpu GPU] [--executor local|dask://HOST:PORT] [--workers N]
                  [--stream auto|yes|no] [--json]

SUITE is a suite file or the name of a bundled suite (`table4`); the format is
described in `placement/batch/__init__.py` and at the top of `configs/suites/table4.toml`.
One row per (entry, GPU, placement) with the prediction, its terms and events,
and, where the suite gives measured times, the error and the per-kernel rank
agreement (Kendall tau, top-1 hit). Completed tasks are kept in RESULTS.parts/
as they finish, so a run killed part way resumes where it stopped; resuming with
a changed suite is refused. --gpu GPU prices every entry on that GPU (a name from
`placement gpus`, or a configuration file such as `placement calibrate` writes)
instead of the suite's own, and leaves the suite's measured times out: they were
measured on its GPUs. So a suite's rankings can be read for the GPU you have.
"""

from __future__ import annotations

import os
import sys

from ..choices import STREAM_MODES
from .. import units
from ._output import print_json, table

NAME = "batch"
HELP = "evaluate a suite of kernels, GPUs and placements into a results file"


def add_arguments(p) -> None:
    p.add_argument("suite", help="suite file (.toml), or a bundled suite's name (table4)")
    p.add_argument("-o", "--output", required=True, metavar="RESULTS.parquet", help="results file (resumed if present)")
    p.add_argument("--gpu", default=None, metavar="GPU",
                   help="price every entry on this GPU (name or .toml) instead of the suite's; measured times are "
                   "left out")  # fmt: skip
    p.add_argument("--executor", default="local", metavar="local|dask://HOST:PORT",
                   help="local processes (default), or a Dask distributed scheduler")  # fmt: skip
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="local processes (default: the CPUs this process may use)")  # fmt: skip
    p.add_argument("--stream", choices=STREAM_MODES, default="auto",
                   help="auto streams a trace too big to evaluate whole (as `placement evaluate` does; a generator's "
                   "of 4 waves or more, from a temporary file); yes, no: every one, none")  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _f(v, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def _u(v, fmt) -> str:
    """``v`` in the units module's format ``fmt`` (speedups to 3 figures, shares as ``4.1 %``), or '-'."""
    return "-" if v is None else fmt(v)


def run(args) -> int:
    from tqdm import tqdm

    from .. import batch

    workers = args.workers if args.workers is not None else len(os.sched_getaffinity(0))
    show = not args.no_progress and sys.stderr.isatty() and not os.environ.get("CI")
    with tqdm(desc="placement batch", unit="task", disable=not show, file=sys.stderr, leave=False) as bar:

        def progress(done: int, total: int) -> None:
            if bar.total != total:
                bar.reset(total=total)
            bar.n = done
            bar.refresh()

        res = batch.run(args.suite, args.output, executor=args.executor, workers=workers, progress=progress,
                        gpu=args.gpu, stream=args.stream)  # fmt: skip
    if args.json:
        print_json({
            "output": res.output,
            "suite": res.experiment["suite"],
            "gpus": res.experiment["gpus"],
            "gpu_override": res.experiment["gpu_override"] or None,
            "version": res.experiment["version"],
            "rows": res.rows,
            "tasks_run": res.computed,
            "tasks_resumed": res.skipped,
            "entries": res.summary,
            "overall": res.overall,
        })  # fmt: skip
        return 0
    s = res.experiment["suite"]
    print(f"suite {s['name']} ({s['path']}, sha256 {s['sha256'][:12]}): {res.rows} rows -> {res.output}"
          f" ({res.computed} tasks run, {res.skipped} resumed)")  # fmt: skip
    if res.experiment["gpu_override"]:
        print(f"every entry priced on {res.experiment['gpus'][0]} (--gpu), without the suite's measured times")
    print()
    rows = [[e["entry"], e["gpu"], e["rows"], e["best"], _u(e["best_speedup"], units.speedup), e["n_measured"],
             _u(e["mean_abs_error"], units.share), _f(e["kendall_tau"], ".2f"),
             "-" if e["top1_hit"] is None else ("yes" if e["top1_hit"] else "no")]
            for e in res.summary]  # fmt: skip
    print(table(rows, ["entry", "gpu", "rows", "best predicted", "speedup", "measured (n)", "|error|", "tau", "top-1"],
                "llrlrrrrl"))  # fmt: skip
    o = res.overall
    if o["measured"]:
        anchored = o["measured"] - o["scored"]
        scaled = (f" over {o['scored']} (left out: {anchored} sample row{'s' if anchored > 1 else ''}, whose measured "
                  "time the predictions are scaled to)")  # fmt: skip
        hits = f"{o['top1_hits']}/{o['ranked_groups']}" if o["ranked_groups"] else "-"
        print(f"\nmeasured placements: {o['measured']}; mean |error| {_u(o['mean_abs_error'], units.share)}"
              f"{scaled if anchored else ''}; mean Kendall tau {_f(o['mean_kendall_tau'], '.2f')}; "
              f"top-1 hits {hits}")  # fmt: skip
    return 0
