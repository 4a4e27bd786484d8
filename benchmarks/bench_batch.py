"""Wall time of `placement batch` on the Table IV suite with 1 and 2 local workers.

Each run is a fresh `placement batch SUITE -o OUT --workers N` process writing to a
new folder, so the time is what a user waits: start-up, trace generation (in the
parent, once), every evaluation, and the results file. Numba's on-disk cache is
warmed by one untimed run first. Prints one line per worker count (the best of
``--repeat`` runs) and the speedup over 1 worker, and checks that every run wrote
the same rows. The CPU time (the command and its workers) shows the parallel
overhead even when other processes share the CPUs and the wall time is noisy.

    python benchmarks/bench_batch.py [--suite table4] [--workers 1 2] [--repeat 2] [--stream auto|yes|no]

``--stream`` is the command's (its trace files read in row groups or whole); a suite's figures with ``no`` and
``yes`` show what streaming costs in CPU and saves in memory.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

from placement.choices import STREAM_MODES

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import Figures, measure  # noqa: E402


def run_once(suite: str, out: Path, workers: int, stream: str = "auto") -> Figures:
    """Wall, CPU (the command and its worker processes, as children of this one) and peak RSS of one run."""
    cmd = [sys.executable, "-m", "placement.cli", "batch", suite, "-o", str(out), "--workers", str(workers),
           "--stream", stream, "--no-progress", "--json"]  # fmt: skip
    with measure("batch") as m:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return m.figures


def rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="table4")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--stream", choices=STREAM_MODES, default="auto")
    args = ap.parse_args()
    print(f"CPUs available: {len(os.sched_getaffinity(0))}; load average {os.getloadavg()[0]:.1f}; "
          f"suite {args.suite}; --stream {args.stream}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        warm = run_once(args.suite, tmp / "warm.parquet", max(args.workers), args.stream)
        print(f"warm-up run (numba cache): {warm.describe()}")
        reference = rows(tmp / "warm.parquet")
        best: dict[int, float] = {}
        for w in args.workers:
            times, cpus = [], []
            for r in range(args.repeat):
                out = tmp / f"w{w}-{r}.parquet"
                f = run_once(args.suite, out, w, args.stream)
                times.append(f.wall_s)
                cpus.append(f.children_cpu_s)
                assert rows(out) == reference, f"{out}: rows differ from the warm-up run's"
            best[w] = min(times)
            print(f"workers {w}: {best[w]:6.1f} s wall (best of {args.repeat}: {', '.join(f'{t:.1f}' for t in times)}); "
                  f"CPU {min(cpus):.1f} s (command and workers); peak RSS of the largest process so far "
                  f"{f.children_peak_rss_mib:,.0f} MiB; {len(reference)} rows")  # fmt: skip
        base = best.get(1)
        if base:
            for w, t in best.items():
                if w != 1:
                    print(f"speedup with {w} workers: {base / t:.2f}x")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (other processes on these CPUs slow the runs down)")


if __name__ == "__main__":
    main()
