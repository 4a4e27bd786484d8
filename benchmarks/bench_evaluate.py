"""Speed of one evaluation of Huang & Li's model (placement evaluate) on a big trace.

Generates a vecadd trace of about 10 million warp-instructions (goal: reading it and
one evaluation under 15 s on one core, under 1 GiB), then, in a fresh process (so that
its peak memory is the evaluation's alone), times: building the evaluator (reading the
trace, the sample placement's hierarchy run and terms) and evaluating one target
placement (rewrite, hierarchy, queues, terms). By default the trace is streamed in row
groups (``placement.evaluate_stream.StreamEvaluator``) and the target, unstaged, is evaluated in the
same read as the sample (``early``, as ``placement evaluate`` does): one read of the file;
``--two-reads`` evaluates it in a second read, as before. ``--whole`` reads the trace
whole (``traces.read``) into ``placement.evaluate_whole.WholeTraceEvaluator``. ``--trace`` evaluates an
existing file.

    python benchmarks/bench_evaluate.py [--rows 10000000] [--gpu k80] [--whole | --two-reads] [--trace T.parquet]
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
from placement.evaluate_stream import StreamEvaluator
from placement.evaluate_whole import WholeTraceEvaluator
from placement.placements import parse_placement
from traces.generators import write

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import peak_rss_mib, run_footer  # noqa: E402


def timed(f):
    t0, c0 = time.perf_counter(), time.process_time()
    r = f()
    return r, time.perf_counter() - t0, time.process_time() - c0


def run(path: str, gpu_name: str, place: str, whole: bool, two_reads: bool = False) -> None:
    t_start, c_start = time.perf_counter(), time.process_time()
    numba.set_num_threads(1)
    gpu = get_gpu(gpu_name)
    info = traces.read_info(path)
    p = parse_placement(place, info)
    # warm the numba kernels on a small trace so compilation is not timed
    small = next(traces.iter_batches(path, rows=3000))
    WholeTraceEvaluator(small, gpu).evaluate(p)
    if whole:
        trace, dt, read_cpu = timed(lambda: traces.read(path))
        print(f"read {len(trace):,} rows in {dt:.1f} s ({read_cpu:.1f} s CPU)")
        ev, dt, cpu = timed(lambda: WholeTraceEvaluator(trace, gpu))
        print(f"sample placement (hierarchy + terms): {dt:.1f} s ({cpu:.1f} s CPU)")
        sample_cpu = read_cpu + cpu
    else:
        early = () if two_reads else (p,)
        ev, dt, sample_cpu = timed(lambda: StreamEvaluator(path, gpu, early=early))
        print(f"streamed: read (validated) + contexts + sample placement{'' if two_reads else ' + ' + place}: "
              f"{dt:.1f} s ({sample_cpu:.1f} s CPU)")  # fmt: skip
    res, dt, cpu = timed(lambda: ev.evaluate(p))
    rows = traces.io.pq.ParquetFile(path).metadata.num_rows
    if whole or two_reads:
        print(f"one evaluation of {place} on {gpu.name}: {dt:.1f} s ({cpu:.1f} s CPU) "
              f"= {rows / dt / 1e6:.2f} M warp-instructions/s")  # fmt: skip
    else:
        print(f"one evaluation of {place} on {gpu.name}: made in the first read ({cpu:.3f} s CPU to return it)")
    print(f"  predicted {res.target.time_ns:,.0f} ns vs sample {res.sample.time_ns:,.0f} ns; "
          f"{res.target.dram_requests:,} DRAM requests")  # fmt: skip
    reads = "" if whole else f" in {ev.passes} read{'s' if ev.passes > 1 else ''} of the file"
    print(f"{'whole' if whole else 'streamed'}: read + sample + one evaluation{reads} {sample_cpu + cpu:.1f} s CPU "
          f"(goal at 10 M rows: under 15 s); peak RSS {peak_rss_mib():.0f} MiB ({rows:,} rows)")  # fmt: skip
    print(run_footer(t_start, c_start))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--gpu", default="k80")
    ap.add_argument("--place", default="a=T,b=T")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--whole", action="store_true", help="read the whole trace into WholeTraceEvaluator")
    mode.add_argument("--two-reads", action="store_true",
                      help="streamed, evaluate the target in a second read of the file (not with the sample's)")  # fmt: skip
    ap.add_argument("--trace", metavar="PATH", help="evaluate this trace instead of generating one")
    args = ap.parse_args()
    if args.trace:
        run(args.trace, args.gpu, args.place, args.whole, args.two_reads)
        return
    n = args.rows // 3 * 32  # vecadd: 3 warp-instructions per 32 elements
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "vecadd.parquet")
        t0 = time.perf_counter()
        write("vecadd", path, [n], None)
        print(f"generated vecadd n={n:,} in {time.perf_counter() - t0:.1f} s")
        cmd = [sys.executable, __file__, "--trace", path, "--gpu", args.gpu, "--place", args.place]
        subprocess.run(cmd + (["--whole"] if args.whole else []) + (["--two-reads"] if args.two_reads else []),
                       check=True)  # fmt: skip


if __name__ == "__main__":
    main()
