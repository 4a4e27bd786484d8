"""Global atomics under contention: what one warp-instruction costs the L2 when the grid's warps all update the same
few words (needs a CUDA GPU and CuPy: pip install 'gpu-placement[gpu]').

``placement.hms.t_atomic`` bounds a kernel by the most updates of one L2 atomic unit times the GPU's interval between two
(``memory.l2_atomic_interval_ns``), and ``cachesim.atomics`` decides what one warp-instruction counts as. This
script measures that rule: every warp of a grid of 4 blocks per SM x 256 threads runs ``--iters`` ``atomicAdd``
of 1 on the same addresses, lane l of a warp on sector ``l % S`` (32-byte sectors from one 256-byte aligned base)
and word ``(l // S) % W`` of it, with the first ``K`` lanes active, either as a reduction (result unused:
``REDG``) or as an atomic whose result is read (``ATOMG``). The launch is timed with CUDA events (median of
``--repeat``) and the figure is nanoseconds per warp-instruction of the grid: the interval of the chain every
warp joins. A last pattern gives each warp a sector of its own (no chain across warps): the GPU's atomic
throughput without contention.

    python benchmarks/atomic_contention.py [--iters 16] [--repeat 5]

Figures measured on an H100 (26 Nov 2026) are in ``cachesim/atomics.py``'s docstring; ``configs/gpus/h100.toml``
takes ``l2_atomic_unit_bytes`` from them (``placement calibrate`` measures the same on any GPU).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cupy_device import cupy_device, median_launch_ms, microbenchmark_args

SOURCE = r"""
extern "C" __global__ void red(unsigned* p, int sectors, int words, int active, int iters, int own) {
  const unsigned lane = threadIdx.x & 31;
  if (lane >= (unsigned)active) return;
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  unsigned* a = p + (own ? warp * 64u : 0u) + (lane % sectors) * 8u + (lane / sectors) % words;
  for (int i = 0; i < iters; ++i) atomicAdd(a, 1u);
}
extern "C" __global__ void atom(unsigned* p, int sectors, int words, int active, int iters, int own, unsigned* sink) {
  const unsigned lane = threadIdx.x & 31;
  if (lane >= (unsigned)active) return;
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  unsigned* a = p + (own ? warp * 64u : 0u) + (lane % sectors) * 8u + (lane / sectors) % words;
  unsigned v = 0;
  for (int i = 0; i < iters; ++i) v += atomicAdd(a, 1u);
  if (v == 0xFFFFFFFFu) sink[0] = v;
}
"""

# (sectors S, words W, active lanes K, own sector per warp)
PATTERNS = (
    [(1, 1, k, 0) for k in (1, 2, 4, 8, 16, 32)]
    + [(1, w, 32, 0) for w in (2, 4, 8)]
    + [(s, w, 32, 0) for s in (2, 4, 8, 32) for w in (1, 8)]
    + [(1, 8, 8, 0), (1, 8, 32, 1), (1, 1, 32, 1)]
)


def main() -> int:
    args = microbenchmark_args(__doc__, 16, "atomics per thread")
    device = cupy_device("atomic_contention")
    if device is None:
        return 2
    cp, props, name = device
    sms = props["multiProcessorCount"]
    mod = cp.RawModule(code=SOURCE)  # NVRTC optimizes by default (it takes no -O3)
    grid, block = 4 * sms, 256
    warps = grid * block // 32
    p = cp.zeros(warps * 64 + 1024, cp.uint32)
    sink = cp.zeros(1, cp.uint32)
    print(f"{name}, {sms} SMs: {grid} x {block} threads, {args.iters} atomics a thread, medians of {args.repeat}")
    print("kind  S  W  K  own  lanes/word  ns/warp-instruction  G lane-updates/s")
    for kind in ("red", "atom"):
        fn = mod.get_function(kind)
        for s, w, k, own in PATTERNS:
            a = (p, cp.int32(s), cp.int32(w), cp.int32(k), cp.int32(args.iters), cp.int32(own))
            a = a + ((sink,) if kind == "atom" else ())
            ms = median_launch_ms(cp, fn, grid, block, a, args.repeat, before=lambda: p.fill(0))
            per_word = -(-k // (s * w)) if s * w < k else 1
            ns = ms * 1e6 / (warps * args.iters)
            rate = warps * args.iters * k / (ms * 1e6)
            print(f"{kind:<5} {s:>2} {w:>2} {k:>2}  {own:>3}  {per_word:>10}  {ns:>19.2f}  {rate:>16.3f}", flush=True)
    total = int(p.sum())
    print(f"(last pattern's counters sum to {total:,}: {warps * args.iters * 32:,} expected)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
