"""`placement evaluate` and `placement rank` on a big trace, streamed (issue 18: peak memory under
1 GiB at 10 M rows, under 2 GiB at 100 M rows, time linear in rows).

Writes a vecadd-shaped trace of ``--rows`` rows chunk by chunk (``bench_read.make_trace``: a
100 M-row trace does not fit in memory, so ``placement bench gen`` cannot write one here), then
runs each command ``--runs`` times as a child process (``python -m placement.cli``, streamed by
its size: ``--stream auto``) and prints each run's wall time, CPU time (user + system) and peak
RSS from ``os.wait4``'s resource usage of that child, and their medians. This script imports no
numpy, pyarrow or numba itself, so the children's ``ru_maxrss`` (which counts the pages a
fork + exec child inherited before its exec) is the command's own.

    python benchmarks/bench_stream.py [--rows 10000000] [--runs 3] [--commands evaluate,rank] [--trace T.parquet]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ARGS = {
    "evaluate": ["--place", "A=R,B=R"],  # legal at 100 M rows (A=T is over the 1D texture limit)
    "rank": ["--no-progress"],
}


def child(cmd: list[str]) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MiB, exit code) of one child process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    t0 = time.perf_counter()
    with open(os.devnull, "w") as out:
        p = subprocess.Popen(cmd, stdout=out, env=env)
        _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, p.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--gpu", default="k80")
    ap.add_argument("--commands", default="evaluate,rank")
    ap.add_argument("--trace", metavar="PATH", help="use this trace instead of writing one")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
        path = args.trace
        if path is not None:  # its rows, from a child (this process imports no pyarrow: see the docstring)
            count = f"import pyarrow.parquet as pq; print(pq.ParquetFile({path!r}).metadata.num_rows)"
            args.rows = int(subprocess.run([sys.executable, "-c", count], capture_output=True, text=True,
                                           check=True).stdout)  # fmt: skip
        else:
            path = os.path.join(d, "vecadd.parquet")
            make = (f"import sys; sys.path.insert(0, {HERE!r}); from bench_read import make_trace; "
                    f"make_trace({path!r}, {args.rows})")  # fmt: skip
            wall, cpu, rss, code = child([sys.executable, "-c", make])
            assert code == 0
            mib = os.path.getsize(path) / 2**20
            print(f"wrote {args.rows:,} rows ({mib:,.0f} MiB) in {wall:.1f} s ({cpu:.1f} s CPU)")
        for command in args.commands.split(","):
            runs = []
            for i in range(args.runs):
                cmd = [sys.executable, "-m", "placement.cli", command, path, "--gpu", args.gpu, *ARGS[command],
                       "--json"]  # fmt: skip
                wall, cpu, rss, code = child(cmd)
                if code != 0:
                    sys.exit(f"{' '.join(cmd)} exited with {code}")
                runs.append((wall, cpu, rss))
                print(f"{command} run {i + 1}: wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {rss:,.0f} MiB",
                      flush=True)  # fmt: skip
            med = [statistics.median(r[k] for r in runs) for k in range(3)]
            print(f"{command}, {args.rows:,} rows, median of {len(runs)}: wall {med[0]:.1f} s, CPU {med[1]:.1f} s "
                  f"({med[1] / args.rows * 1e6:.2f} us a row), peak RSS {med[2]:,.0f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
