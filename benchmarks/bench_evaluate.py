"""Speed of one evaluation of Huang & Li's model (placement evaluate) on a big trace.

Generates a vecadd trace of about 10 million warp-instructions (goal: reading it and
one evaluation under 15 s on one core, under 1 GiB), then, in a fresh process (so that
its peak memory is the evaluation's alone), times: building the evaluator (reading the
trace, the sample placement's hierarchy run and terms) and evaluating one target
placement (rewrite, hierarchy, queues, terms). By default the trace is streamed in row
groups (``placement.hms.StreamEvaluator``); ``--whole`` reads it whole
(``traces.read``) into ``placement.hms.Evaluator``. ``--trace`` evaluates an existing file.

    python benchmarks/bench_evaluate.py [--rows 10000000] [--gpu k80] [--whole] [--trace T.parquet]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numba

import traces
import traces.io
from placement.gpu import get_gpu
from placement.hms import Evaluator, StreamEvaluator
from placement.placements import parse_placement
from traces.generators import write

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import peak_rss_mib, run_footer  # noqa: E402


def timed(f):
    t0, c0 = time.perf_counter(), time.process_time()
    r = f()
    return r, time.perf_counter() - t0, time.process_time() - c0


def run(path: str, gpu_name: str, place: str, whole: bool) -> None:
    t_start, c_start = time.perf_counter(), time.process_time()
    numba.set_num_threads(1)
    gpu = get_gpu(gpu_name)
    info = traces.read_info(path)
    p = parse_placement(place, info)
    # warm the numba kernels on a small trace so compilation is not timed
    small = next(traces.iter_batches(path, rows=3000))
    Evaluator(small, gpu).evaluate(p)
    if whole:
        trace, dt, read_cpu = timed(lambda: traces.read(path))
        print(f"read {len(trace):,} rows in {dt:.1f} s ({read_cpu:.1f} s CPU)")
        ev, dt, cpu = timed(lambda: Evaluator(trace, gpu))
        print(f"sample placement (hierarchy + terms): {dt:.1f} s ({cpu:.1f} s CPU)")
        sample_cpu = read_cpu + cpu
    else:
        ev, dt, sample_cpu = timed(lambda: StreamEvaluator(path, gpu))
        print(f"streamed: read (validated) + contexts + sample placement: {dt:.1f} s ({sample_cpu:.1f} s CPU)")
    res, dt, cpu = timed(lambda: ev.evaluate(p))
    rows = traces.io.pq.ParquetFile(path).metadata.num_rows
    print(f"one evaluation of {place} on {gpu.name}: {dt:.1f} s ({cpu:.1f} s CPU) "
          f"= {rows / dt / 1e6:.2f} M warp-instructions/s (goal: under 15 s)")  # fmt: skip
    print(f"  predicted {res.target.time_ns:,.0f} ns vs sample {res.sample.time_ns:,.0f} ns; "
          f"{res.target.dram_requests:,} DRAM requests")  # fmt: skip
    print(f"{'whole' if whole else 'streamed'}: read + sample + one evaluation {sample_cpu + cpu:.1f} s CPU; "
          f"peak RSS {peak_rss_mib():.0f} MiB")  # fmt: skip
    print(run_footer(t_start, c_start))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--gpu", default="k80")
    ap.add_argument("--place", default="a=T,b=T")
    ap.add_argument("--whole", action="store_true", help="read the whole trace into Evaluator")
    ap.add_argument("--trace", metavar="PATH", help="evaluate this trace instead of generating one")
    args = ap.parse_args()
    if args.trace:
        run(args.trace, args.gpu, args.place, args.whole)
        return
    n = args.rows // 3 * 32  # vecadd: 3 warp-instructions per 32 elements
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "vecadd.parquet")
        t0 = time.perf_counter()
        write("vecadd", path, [n], None)
        print(f"generated vecadd n={n:,} in {time.perf_counter() - t0:.1f} s")
        cmd = [sys.executable, __file__, "--trace", path, "--gpu", args.gpu, "--place", args.place]
        subprocess.run(cmd + (["--whole"] if args.whole else []), check=True)


if __name__ == "__main__":
    main()
