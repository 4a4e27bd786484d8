"""Generated warp-instructions (trace rows) per second per kernel, at a realistic size.

Usage: python benchmarks/bench_generators.py [NAME ...] [--repeat 3]

Each kernel is generated once to warm numba's cache, then timed (best of
``--repeat``) at the size below; writing the Parquet file is not included.
``seconds`` is wall-clock; ``cpu s`` is the process's CPU time (user + system, so
the kernel's page faults on the fresh output arrays count) and ``cpu rows/s`` the
rate by it: on a shared machine the wall-clock also holds the time spent waiting
for a core.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from traces import generators as G

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import peak_rss_mib, run_footer  # noqa: E402

SIZES: dict[str, tuple[list[int] | None, list[int] | None]] = {
    "vecadd": ([1 << 24], None),
    "triad": ([1 << 24], None),
    "matrix_sum_normal": ([4096], None),
    "matrix_sum_coalesced": ([4096], None),
    "transpose": ([4096, 4096], None),
    "matmul_naive": ([512], None),
    "matmul_naive_uncoalesced": ([512], None),
    "matrixmul": ([512], None),
    "convolution_rows": ([1024, 512], None),
    "reduction": ([1 << 24, 64], None),
    "scan": ([1 << 24, 64], None),
    "stencil2d": ([1024, 1024], None),
    "spmv": ([16384], None),  # SHOC size 4: 16384 rows, 1 % dense
    "md": ([73728], None),  # SHOC size 4
    "bfs": ([1 << 20, 8], None),
    "sort": ([1 << 22], None),
    "fft": ([8192], None),
    "neuralnet": ([1024, 4096], None),
    "cfd": ([97152], None),  # Rodinia fvcorr.domn.097K
    "md5hash": ([7, 10, 256], None),
    "s3d": ([1 << 18], None),
    "qtc": ([4096], None),  # SHOC size 1
}
for k in range(1, 8):
    for s in ("c", "uc"):
        SIZES[f"mb{k}_{s}"] = ([240, 256], None)  # 240 blocks of 128 threads, 256 iterations


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    names = args.names or [n for n in G.names() if n in SIZES]
    print(f"# {os.cpu_count()} CPUs, numba threads {os.environ.get('NUMBA_NUM_THREADS', 'default')}")
    print(f"{'kernel':28s} {'size':>14s} {'rows':>12s} {'seconds':>8s} {'rows/s':>12s} {'cpu s':>8s} {'cpu rows/s':>12s} "
          f"{'peak RSS':>10s}")  # fmt: skip
    t_start, c_start = time.perf_counter(), time.process_time()
    for name in names:
        size, block = SIZES.get(name, (None, None))
        G.generate(name)  # warm numba (compiled once, then cached on disk)
        best = best_cpu = float("inf")
        rows = 0
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            cols, info = G.generate(name, size, block)
            best = min(best, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
            rows = len(cols["cta"])
            del cols
        sz = "x".join(map(str, size or []))
        cpu = max(best_cpu, 1e-9)
        print(
            f"{name:28s} {sz:>14s} {rows:12,d} {best:8.3f} {rows / best / 1e6:10.1f} M {best_cpu:8.3f} {rows / cpu / 1e6:10.1f} M "
            f"{peak_rss_mib():6,.0f} MiB"
        )  # peak RSS: the process's high-water mark so far
        sys.stdout.flush()
    print(run_footer(t_start, c_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
