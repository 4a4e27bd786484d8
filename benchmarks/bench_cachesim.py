"""Speed of cachesim: simulate_cache against pycachesim, and the whole hierarchy.

1. ``simulate_cache`` over 10 million random addresses (a 32 KiB 4-way LRU cache of
   128-byte lines, linear index) in accesses per second, and pycachesim (in its own
   virtual environment, see ``_pycachesim_env``) fed the same numpy array in one
   ``load`` call, timed in the same run, ``--repeat`` times (5) in turn: ours in this
   process, then theirs in a child (a fresh cache each time). The ratio is taken on CPU
   time (``process_time`` of the call on each side; the machine is shared, so wall time
   is printed beside it but not trusted); the hit counts must agree. Goal: median
   >= 3x.
2. ``simulate_hierarchy`` over a synthetic 10-million warp-instruction trace on a
   K80-like configuration (``configs/gpus/k80.toml`` through ``placement.gpu``). Per
   warp: a global load, a 1D texture load, a constant load, a shared load and a
   global store. Goal: under 10 s on one core and under 1 GiB. Compilation is excluded (warm-up
   first). The trace is fed to ``cachesim.HierarchyStream`` in groups as it is made, so it is
   never whole in memory; ``--whole`` runs ``simulate_hierarchy`` on the whole trace instead.

    python benchmarks/bench_cachesim.py [--n 10000000] [--rows 10000000] [--repeat 5] [--skip-hierarchy]
                                        [--group 262144] [--whole]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _pycachesim_env as env  # noqa: E402
from _measure import measure, peak_rss_mib, ratios_line, run_footer  # noqa: E402

import cachesim  # noqa: E402
import traces  # noqa: E402
import traces.io  # noqa: E402

SPEC = "N:64:128:4,L:R:m:N:L"

CHILD = r"""
import sys, time, numpy as np
from cachesim import Cache, CacheSimulator, MainMemory
a = np.load(sys.argv[1])
mem = MainMemory()
c = Cache("L1", 64, 4, 128, "LRU")
mem.load_to(c)
mem.store_from(c)
cs = CacheSimulator(c, mem)
t0, c0 = time.perf_counter(), time.process_time()
cs.load(a)
dt, dc = time.perf_counter() - t0, time.process_time() - c0
print(dt, dc, c.backend.HIT_count, c.backend.MISS_count)
"""


def bench_cache(n: int, repeat: int) -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 1 << 22, n).astype(np.uint64)
    cachesim.simulate_cache(SPEC, a[:1000])  # load the compiled kernel
    ratios, wall_ratios = [], []
    with env.scratch() as d:
        path = os.path.join(d, "a.npy")
        np.save(path, a)
        env.python()  # create pycachesim's environment before anything is timed
        for k in range(repeat):
            with measure("simulate_cache") as m:
                hits = cachesim.simulate_cache(SPEC, a)
            ours = m.figures
            dt, dc, h, _ = env.run(CHILD, path).split()
            theirs_wall, theirs_cpu = float(dt), float(dc)
            ratios.append(theirs_cpu / ours.cpu_s)
            wall_ratios.append(theirs_wall / ours.wall_s)
            agree = "agree" if int(h) == int(hits.sum()) else "DIFFER"
            print(
                f"run {k + 1}: simulate_cache('{SPEC}') {n:,} accesses: {ours.describe()} = "
                f"{n / ours.cpu_s / 1e6:.1f} M accesses per CPU second, {int(hits.sum()):,} hits"
            )
            print(f"       pycachesim load(array), same cache and stream: wall {theirs_wall:.2f} s, CPU {theirs_cpu:.2f} s = "
                  f"{n / theirs_cpu / 1e6:.1f} M accesses per CPU second, {int(h):,} hits ({agree}); "
                  f"ratio {ratios[-1]:.2f}x CPU, {wall_ratios[-1]:.2f}x wall")  # fmt: skip
    print(ratios_line("simulate_cache / pycachesim, CPU time (goal >= 3x)", ratios))
    print(ratios_line("simulate_cache / pycachesim, wall time (shared machine: noisy)", wall_ratios))


def mixed_trace(rows: int, lo: int = 0, hi: int | None = None) -> traces.Trace:
    """Five warp-instructions per warp: global, texture1d, constant, shared loads, a global store
    (rows ``lo`` to ``hi`` of the ``rows``-row trace)."""
    wpb = 8
    warps = -(-rows // 5)
    ctas = -(-warps // wpb)
    elems = ctas * wpb * 32
    objs = (
        traces.ObjectInfo(0, "A", "global", 1 << 32, elems * 4, 4, None, False),
        traces.ObjectInfo(1, "T", "texture1d", 2 << 32, elems * 4, 4, None, False),
        traces.ObjectInfo(2, "K", "constant", 0x1000, 4096, 4, None, False),
        traces.ObjectInfo(3, "S", "shared", 0, 1024, 4, None, False),
        traces.ObjectInfo(4, "C", "global", 3 << 32, elems * 4, 4, None, True),
    )
    info = traces.KernelInfo(kernel="mixed_bench", grid=(ctas, 1, 1), block=(32 * wpb, 1, 1), objects=objs,
                             instructions=traces.Instructions(executed=rows * 3, warps=ctas * wpb))  # fmt: skip
    r = np.arange(lo, rows if hi is None else min(hi, rows), dtype=np.int64)
    gw, k = r // 5, r % 5
    n = r.shape[0]
    lanes = np.arange(32, dtype=np.uint64) * 4
    base = np.array([1 << 32, 2 << 32, 0x1000, 0, 3 << 32], np.uint64)[k]
    step = np.where((k == 0) | (k == 1) | (k == 4), gw * 128, 0).astype(np.uint64)
    step = np.where(k == 2, ((gw % 64) * 4).astype(np.uint64), step)  # one constant address per warp
    addr = base[:, None] + step[:, None] + np.where(k[:, None] == 2, np.uint64(0), lanes[None, :])
    addr[k == 3] = (np.arange(32, dtype=np.uint64) * 8)[None, :]  # shared, stride-2 words
    return traces.Trace(
        cta=(gw // wpb).astype(np.int32), warp=(gw % wpb).astype(np.int32), seq=(k * 3).astype(np.int64),
        pc=(k * 16).astype(np.int32), op=(k == 4).astype(np.int8),
        space=np.array([0, 4, 3, 2, 0], np.int8)[k], width=np.full(n, 4, np.int8),
        mask=np.full(n, 0xFFFFFFFF, np.uint32), addr=addr, obj=k.astype(np.int16), info=info, start=lo,
    )  # fmt: skip


def k80_config() -> cachesim.HierarchyConfig:
    """The K80's HierarchyConfig as placement builds it (``placement.memory.hierarchy_config``: its global loads
    go straight to the L2, read-only ones through the texture cache, the L2 slices' interleave); this script
    used to build its own and left those out."""
    from placement.gpu import get_gpu
    from placement.memory import hierarchy_config

    return hierarchy_config(get_gpu("k80"))


def bench_hierarchy(rows: int, group: int, whole: bool) -> None:
    cfg = k80_config()
    cachesim.simulate_hierarchy(mixed_trace(1000), cfg, blocks_per_sm=8)  # load the compiled kernels
    s = cachesim.HierarchyStream(cfg, mixed_trace(1000).info, blocks_per_sm=8)
    s.feed(mixed_trace(1000))
    s.finish()
    if whole:
        t0 = time.perf_counter()
        t = mixed_trace(rows)
        print(f"built a {rows:,}-row mixed trace in {time.perf_counter() - t0:.1f} s")
        t0, c0 = time.perf_counter(), time.process_time()
        r = cachesim.simulate_hierarchy(t, cfg, blocks_per_sm=8).totals()
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        how = "simulate_hierarchy"
    else:
        # the trace is made group by group as the stream takes it (never whole); only feed() is timed
        s = cachesim.HierarchyStream(cfg, mixed_trace(rows, 0, 1).info, blocks_per_sm=8)
        dt = cpu = 0.0
        for lo in range(0, rows, group):
            g = mixed_trace(rows, lo, lo + group)
            t0, c0 = time.perf_counter(), time.process_time()
            s.feed(g)
            dt, cpu = dt + time.perf_counter() - t0, cpu + time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        r = s.finish()
        dt, cpu = dt + time.perf_counter() - t0, cpu + time.process_time() - c0
        how = f"HierarchyStream, groups of {group:,} rows"
    print(f"{how} (k80, 8 blocks/SM): {rows:,} warp-instructions in {dt:.2f} s wall, {cpu:.2f} s CPU "
          f"= {rows / dt / 1e6:.2f} M/s (goal < 10 s); peak RSS {peak_rss_mib():.0f} MiB")  # fmt: skip
    for key, v in r.summary().items():
        print(f"  {key}: {v}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000, help="addresses for simulate_cache")
    ap.add_argument("--rows", type=int, default=10_000_000, help="warp-instructions for the hierarchy")
    ap.add_argument("--repeat", type=int, default=5, help="simulate_cache / pycachesim runs (median ratio)")
    ap.add_argument("--skip-hierarchy", action="store_true", help="only the simulate_cache part")
    ap.add_argument("--group", type=int, default=traces.io.ROW_GROUP_ROWS, help="rows per group fed to the stream")
    ap.add_argument("--whole", action="store_true", help="simulate_hierarchy on the whole trace instead of the stream")
    args = ap.parse_args()
    t0, c0 = time.perf_counter(), time.process_time()
    if args.n:
        bench_cache(args.n, args.repeat)
    if not args.skip_hierarchy:
        bench_hierarchy(args.rows, args.group, args.whole)
    print(run_footer(t0, c0))


if __name__ == "__main__":
    main()
