"""Peer check: simulate_cache against pycachesim (PyPI), hit for hit.

For LRU and FIFO caches with normal lines and linear set indexing, both simulators are
fed the same address streams (random, strided, and the lane addresses of bundled
benchmark traces from ``traces.generators``) and must agree on every access.
pycachesim runs in a virtual environment of its own (see ``_pycachesim_env``); the
streams go to it through ``.npy`` files, and it reports a hit per access (its hit
counter before and after each load).

    python benchmarks/compare_pycachesim.py [--n 100000]

Exit status 0 when every case agrees, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _pycachesim_env as env  # noqa: E402
from _measure import timed_main  # noqa: E402

import cachesim  # noqa: E402
import traces.generators as gen  # noqa: E402

CHILD = r"""
import sys, numpy as np
from cachesim import Cache, CacheSimulator, MainMemory
addrs = np.load(sys.argv[1])
cases = [c.split(",") for c in sys.argv[3].split(";")]
out = []
for nsets, ways, line, repl in cases:
    mem = MainMemory()
    c = Cache("C", int(nsets), int(ways), int(line), repl)
    mem.load_to(c)
    mem.store_from(c)
    CacheSimulator(c, mem)
    b = c.backend
    load = b.load
    hits = np.zeros(len(addrs), bool)
    for i, a in enumerate(addrs.tolist()):
        h = b.HIT_count
        load(a)
        hits[i] = b.HIT_count > h
    out.append(hits)
np.save(sys.argv[2], np.array(out))
"""

GEOMETRIES = [(64, 4, 128), (16, 24, 128), (128, 1, 64), (1, 8, 32), (256, 16, 32), (32, 2, 128)]


def vecadd_like(n: int) -> np.ndarray:
    """Lane addresses of a vecadd warp stream: per warp, 32 lanes of A, then B, then C (4-byte elements)."""
    k = np.arange(n)
    lane, access, warp = k % 32, (k // 32) % 3, k // 96
    return (np.array([1 << 28, 2 << 28, 3 << 28])[access] + warp * 128 + lane * 4).astype(np.uint64)


def streams(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    s = {
        "random 1 MiB": rng.integers(0, 1 << 20, n),
        "random 64 KiB": rng.integers(0, 1 << 16, n),
        "strided 4 B": np.arange(n) * 4,
        "strided 136 B": (np.arange(n) * 136) % (1 << 22),
        "strided 4 KiB": (np.arange(n) * 4096) % (1 << 24),
        "strided 8 KiB + 4 B wrap": (np.arange(n) * 8196) % (1 << 19),
    }
    for name in ("transpose", "matmul_naive"):
        try:
            cols, info = gen.generate(name)
        except Exception as exc:  # the generators are young; fall back rather than skip the trace case
            print(
                f"note: trace generator '{name}' failed ({type(exc).__name__}: {exc}); using a synthetic vecadd-like stream"
            )
            s["synthetic vecadd-like stream (stands in for a bundled trace)"] = vecadd_like(n)
            continue
        active = ((cols["mask"][:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)
        a = cols["addr"][active]  # lane addresses in row order, lane order inside a row
        s[f"trace {name} {info.grid}x{info.block}"] = a[:n]
    return {k: np.ascontiguousarray(v, dtype=np.uint64) for k, v in s.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="addresses per stream")
    args = ap.parse_args()
    rng = np.random.default_rng(2024)
    cases = [(s, w, l, r) for (s, w, l) in GEOMETRIES for r in ("LRU", "FIFO")]
    case_arg = ";".join(f"{s},{w},{l},{r}" for s, w, l, r in cases)
    env.python()
    bad = 0
    total = 0
    t0 = time.perf_counter()
    with env.scratch() as d:
        for name, a in streams(args.n, rng).items():
            src, dst = os.path.join(d, "a.npy"), os.path.join(d, "h.npy")
            np.save(src, a)
            env.run(CHILD, src, dst, case_arg)
            theirs = np.load(dst)
            for k, (s, w, l, r) in enumerate(cases):
                spec = f"N:{s}:{l}:{w},{r[0]}:R:m:N:L"
                ours = cachesim.simulate_cache(spec, a)
                diff = int((ours != theirs[k]).sum())
                total += 1
                status = (
                    "agree" if diff == 0 else f"DIFFER at {diff} accesses (first {int(np.argmax(ours != theirs[k]))})"
                )
                print(
                    f"{name:42s} {spec:24s} {a.size:7d} accesses, hits {int(ours.sum()):7d} vs {int(theirs[k].sum()):7d}: {status}"
                )
                bad += diff != 0
    print(
        f"{total - bad} of {total} cases agree exactly ({time.perf_counter() - t0:.0f} s wall; pycachesim's CPU is the children's below)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(timed_main(main, sys.stdout))
