"""Speed of `placement rank`: 12 objects over 5 spaces on a 1-million warp-instruction trace.

Builds a synthetic kernel whose 12 arrays cover the cases the search must weigh:
six large inputs read coalesced, two small lookup tables read nearly as a
broadcast (constant or shared candidates), two 2D images read down their columns
(2D texture candidates) and two written outputs. Ranks the top 10 placements with
the default search (surrogate + CP-SAT) and prints the wall time (goal: under 60 s),
CPU time (this process and its worker processes), peak RSS and the number of exact
evaluations against the 5^12 placements. ``--json`` writes the ranking (placements
and predicted times, full precision) to compare two versions' results.

    python benchmarks/bench_rank.py [--rows 1000000] [--gpu k80] [--top 10] [--workers 2] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

import traces
from placement.gpu import get_gpu
from placement.evaluate_whole import WholeTraceEvaluator
from placement.search import SearchOptions, solve

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import measure, run_footer  # noqa: E402

WARPS_PER_BLOCK = 8


def build(rows: int) -> traces.Trace:
    per_iter = 12
    blocks = 256
    warps = blocks * WARPS_PER_BLOCK
    iters = max(1, rows // (warps * per_iter))
    n_elem = warps * 32 * 4  # each big input: 4 passes of the grid before wrapping
    img_rows, img_cols = warps * 32 // 8, 64
    specs = (
        [(f"in{j}", n_elem * 4, None, False) for j in range(6)]
        + [(f"tab{j}", 4096, None, False) for j in range(2)]
        + [(f"img{j}", img_rows * img_cols * 4, (img_rows, img_cols), False) for j in range(2)]
        + [(f"out{j}", n_elem * 4, None, True) for j in range(2)]
    )
    objs, base = [], 1 << 32
    for i, (name, size, shape, written) in enumerate(specs):
        objs.append(traces.ObjectInfo(i, name, "global", base, size, 4, shape, written))
        base += -(-size // 512) * 512 + 512
    gw = np.repeat(np.arange(warps, dtype=np.int64), iters * per_iter)
    k = np.tile(np.repeat(np.arange(iters, dtype=np.int64), per_iter), warps)
    j = np.tile(np.arange(per_iter, dtype=np.int64), warps * iters)
    lane = np.arange(32, dtype=np.int64)
    tid = gw[:, None] * 32 + lane[None, :]
    idx = np.empty((len(gw), 32), dtype=np.int64)
    big = (j < 6) | (j >= 10)
    idx[big] = (k[big, None] * warps * 32 + tid[big]) % n_elem
    tab = (j == 6) | (j == 7)
    idx[tab] = (gw[tab, None] * 7 + k[tab, None] * 13 + lane[None, :] // 8) % 1024
    img = (j == 8) | (j == 9)
    idx[img] = (tid[img] % img_rows) * img_cols + (k[img, None] % img_cols)
    bases = np.array([o.base for o in objs], dtype=np.uint64)
    addr = bases[j][:, None] + idx.astype(np.uint64) * np.uint64(4)
    n = len(gw)
    cols = {
        "cta": (gw // WARPS_PER_BLOCK).astype(np.int32), "warp": (gw % WARPS_PER_BLOCK).astype(np.int32),
        "seq": (k * 20 + j).astype(np.int64), "pc": (j * 16).astype(np.int32), "op": (j >= 10).astype(np.int8),
        "space": np.zeros(n, np.int8), "width": np.full(n, 4, np.int8), "mask": np.full(n, 0xFFFFFFFF, np.uint32),
        "addr": addr, "obj": j.astype(np.int16),
    }  # fmt: skip
    info = traces.KernelInfo(
        "twelve_arrays", (blocks, 1, 1), (32 * WARPS_PER_BLOCK, 1, 1), tuple(objs),
        traces.Instructions(executed=warps * iters * 20, warps=warps, int=warps * iters * 6, fp32=warps * iters * 2,
                            ldst=n),
        regs_per_thread=32,
    )  # fmt: skip
    t = traces.Trace(**cols, info=info)
    traces.validate(t)
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--gpu", default="k80")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--pair-budget", type=int, default=None)
    ap.add_argument("--json", default=None, help="write the ranking here (placement, time_ns) for comparisons")
    args = ap.parse_args()
    t_start, c_start = time.perf_counter(), time.process_time()
    gpu = get_gpu(args.gpu)
    with measure("build") as m:
        trace = build(args.rows)
    print(f"built {len(trace):,} warp-instructions over {len(trace.info.objects)} objects: {m.figures.describe()}")
    # warm the numba kernels on a slice so compilation is not timed
    small = traces.Trace(**{k: v[:5000] for k, v in trace.columns().items()}, info=trace.info)
    solve(WholeTraceEvaluator(small, gpu), options=SearchOptions(top=2, pair_budget=2))
    with measure("rank") as m:
        r = solve(
            WholeTraceEvaluator(trace, gpu),
            options=SearchOptions(top=args.top, workers=args.workers, pair_budget=args.pair_budget),
        )
    f = m.figures
    print(f"rank top {args.top} on {gpu.name} with {args.workers} worker(s): {f.describe()} (goal: under 60 s wall); "
          f"{r.evaluations} exact evaluations of 5^12 = {5**12:,} placements, {f.total_cpu_s / max(r.evaluations, 1):.2f} s CPU each "
          f"({r.surrogate})")  # fmt: skip
    sample_ns = r.sample.sample.time_ns
    for i, e in enumerate(r.ranking, start=1):
        moved = {k: v for k, v in e.target.placement.items() if r.sample.sample.placement[k] != v}
        print(
            f"  {i:2d}. {e.target.time_ns:12,.0f} ns  x{sample_ns / e.target.time_ns:5.3f}  "
            + (",".join(f"{k}={v}" for k, v in moved.items()) or "(sample)")
        )
    if args.json:
        out = {"evaluations": r.evaluations, "sample_ns": sample_ns,
               "ranking": [{"placement": e.target.placement, "time_ns": e.target.time_ns} for e in r.ranking]}  # fmt: skip
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, sort_keys=True)
    print(run_footer(t_start, c_start))


if __name__ == "__main__":
    main()
