"""Speed of one evaluation of Huang & Li's model (placement evaluate) on a big trace.

Generates a vecadd trace of about 10 million warp-instructions (goal: one
evaluation under 15 s on one core), then times: reading it, building the
evaluator (the sample placement's hierarchy run and terms) and evaluating one
target placement (rewrite, hierarchy, queues, terms).

    python benchmarks/bench_evaluate.py [--rows 10000000] [--gpu k80]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numba

import traces
from placement.gpu import get_gpu
from placement.hms import Evaluator
from placement.placements import parse_placement
from traces.generators import write

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import measure, run_footer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--gpu", default="k80")
    ap.add_argument("--place", default="a=T,b=T")
    args = ap.parse_args()
    numba.set_num_threads(1)
    t_start, c_start = time.perf_counter(), time.process_time()
    n = args.rows // 3 * 32  # vecadd: 3 warp-instructions per 32 elements
    gpu = get_gpu(args.gpu)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "vecadd.parquet")
        t0 = time.perf_counter()
        write("vecadd", path, [n], None)
        print(f"generated vecadd n={n:,} in {time.perf_counter() - t0:.1f} s")
        with measure("read") as m_read:
            trace = traces.read(path)
        print(f"read {len(trace):,} rows: {m_read.figures.describe()}")
        # warm the numba kernels on a small trace so compilation is not timed
        small = traces.Trace(**{k: v[:3000] for k, v in trace.columns().items()}, info=trace.info)
        Evaluator(small, gpu).evaluate(parse_placement(args.place, trace.info))
        with measure("sample") as m_sample:
            ev = Evaluator(trace, gpu)
        with measure("evaluate") as m_eval:
            res = ev.evaluate(parse_placement(args.place, trace.info))
    f = m_eval.figures
    print(f"sample placement (hierarchy + terms): {m_sample.figures.describe()}")
    print(f"one evaluation of {args.place} on {gpu.name}: {f.describe()} "
          f"= {len(trace) / f.cpu_s / 1e6:.2f} M warp-instructions per CPU second")  # fmt: skip
    print(f"read + sample + evaluate: {m_read.figures.cpu_s + m_sample.figures.cpu_s + f.cpu_s:.1f} s CPU "
          "(goal: read + evaluate < 15 s CPU, < 1 GiB)")
    print(f"  predicted {res.target.time_ns:,.0f} ns vs sample {res.sample.time_ns:,.0f} ns; "
          f"{res.target.dram_requests:,} DRAM requests")  # fmt: skip
    print(run_footer(t_start, c_start))


if __name__ == "__main__":
    main()
