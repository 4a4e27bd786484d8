"""L1 hits of a warp's load: how many cycles of the SM's L1 data path each access pattern takes, plain loads and
__ldg (needs a CUDA GPU and CuPy: pip install 'gpu-placement[gpu]').

``cachesim``'s walk charges a warp-instruction that an SM's cache serves its sectors' bytes over the data path's
width (``smem_banks x smem_bank_bytes``, 128 B a cycle), but at least its tag stage's cycles (4 lines a cycle, one
a set: configs/architectures.toml [NV-T]): an unaligned 128-byte access (5 sectors) 1.25 cycles, two 64-byte
halves in two lines 1 cycle, 32 lanes on 32 lines 8 cycles. Where the L1's data lives in the 32 banks it shares
with shared memory (``l1_data_banks``, Volta on), a word of one line and the word at the same place in another
are in one bank, and the walk takes at least as many cycles as the most distinct words one bank serves
(``cachesim``'s ``bank_conflict_degree``: 1 for the unaligned access, 2 for halves at the same place in their
lines, 32 for 32 lines read at the same place). The
Kernel Tuner convolution on an A100 (../shared/data/kerneltuner-convolution) reads the image in two 64-byte halves
a warp with blocks 16 wide, and there staging and __ldg are measured faster than plain loads where the model
predicts them slower; this script measures which rule the GPU follows.

Every warp of 32 warps an SM loads, ``--iters`` times, 8 independent words a lane from an L1-resident buffer at the
pattern's byte offsets (lane l at ``offset(l)``, moved by a multiple of 128 bytes per load so the 8 loads take 8
different sets), as plain loads (``LDG``) and through the read-only path (``__ldg``: ``LDG.E.CONSTANT``). The
launch is timed with CUDA events (median of ``--repeat``); the figure is SM cycles per warp-load at the clock the
driver reports, and relative to the aligned 128-byte pattern (1 cycle on the rule above). Each pattern's line says
what both rules predict. The loop issues its 8 loads in 19 instructions (nvcc 13, sm_80 and sm_90;
tests/test_gpu_benchmarks.py reads the SASS), so the schedulers' issue bound is 0.6 cycles a load and SM; the
header prints it, and a figure under 1.25 times it is marked ``*`` (the loop's, perhaps, not the L1's).

Until 1 Dec 2026 the loop read lines ``(i + k) & 7`` into one float sum: nvcc unrolled it by two and, both
iterations reading the same 8 lines, issued 8 loads for the 16 this script counted, in 67 instructions (2.1
cycles a load issued and SM at the 4 schedulers' issue bound). The H200's figures of 30 Nov (benchmarks/README.md,
"On a GPU") are in those counted loads: twice as many cycles per load issued, and for every pattern that took up
to about 1.6 cycles a load counted (about 3 a load issued: aligned, unaligned, the convolution's own, 8 lines over
the four sector positions) the loop's issue, not the L1's.

    python benchmarks/l1_wavefronts.py [--iters 256] [--repeat 5] [--conv]

``--conv`` adds the Kernel Tuner convolution's own warp-loads at each alignment of its window (16-wide blocks' two
rows and 32-wide blocks' one; ``conv_patterns``).
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cupy_device import cupy_device, median_launch_ms, microbenchmark_args

SOURCE = r"""
#define LOADS 8
#define MOVE (37 * 128)  // bytes between a lane's 8 loads: whole lines, 8 different sets
template <bool RO>
__device__ __forceinline__ unsigned ld(const char* q) {
  return RO ? __ldg((const unsigned*)q) : *(const unsigned*)q;
}
// The loop is not unrolled and its loads move by `step`, which is 0 at run time: every iteration reads the
// same 8 lines, which nvcc cannot know, so it neither merges one iteration's loads into the next's nor hoists
// them. The 8 loads share one address (immediate offsets) and are summed in pairs (IADD3): 19 instructions
// an iteration on sm_80 and sm_90, 2.4 a load, so the 4 schedulers' issue bound (0.6 cycles a load and SM)
// is under what one L1 wavefront takes.
template <bool RO>
__device__ __forceinline__ void body(const char* buf, const int* __restrict__ offs, int iters, long long step,
                                     unsigned* sink) {
  const char* q = buf + offs[threadIdx.x & 31];
  unsigned a = 0, b = 0, c = 0, d = 0;
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {
    a += ld<RO>(q) + ld<RO>(q + MOVE);
    b += ld<RO>(q + 2 * MOVE) + ld<RO>(q + 3 * MOVE);
    c += ld<RO>(q + 4 * MOVE) + ld<RO>(q + 5 * MOVE);
    d += ld<RO>(q + 6 * MOVE) + ld<RO>(q + 7 * MOVE);
    q += step;
  }
  if ((a ^ b ^ c ^ d) == 0xFFFFFFFFu) sink[0] = a;
}
extern "C" __global__ void plain(const char* buf, const int* offs, int iters, long long step, unsigned* sink) {
  body<false>(buf, offs, iters, step, sink);
}
extern "C" __global__ void readonly(const char* buf, const int* offs, int iters, long long step, unsigned* sink) {
  body<true>(buf, offs, iters, step, sink);
}
"""
LOADS = 8
"""Loads a lane an iteration (``#define LOADS`` in SOURCE)."""
LOOP_INSTRUCTIONS = 19
"""The loop's instructions an iteration as nvcc 13 builds it for sm_80 and sm_90 (tests/test_gpu_benchmarks.py)."""
SCHEDULERS = 4
"""Warp schedulers an SM, one instruction a cycle each (Maxwell on)."""
ISSUE_BOUND = LOOP_INSTRUCTIONS / LOADS / SCHEDULERS
"""The fewest SM cycles a load the loop's own issue allows (0.59): a figure near it is the loop's, not the L1's."""
NEAR_ISSUE = 1.25
"""A pattern under this many times :data:`ISSUE_BOUND` is marked as possibly the loop's issue."""

LINE, SECTOR, BANKS = 128, 32, 32
KT_PITCH = (4096 + 15 - 1) * 4  # the Kernel Tuner convolution's input row: 4110 floats


def _halves(second: int) -> list[int]:
    """Lanes 0-15 on the first 64 bytes of a line, lanes 16-31 on 64 bytes from ``second``."""
    return [4 * lane if lane < 16 else second + 4 * (lane - 16) for lane in range(32)]


# name: 32 byte offsets, one a lane
PATTERNS = {
    "aligned 128 B": [4 * lane for lane in range(32)],
    "128 B from +4 B": [4 + 4 * lane for lane in range(32)],
    "128 B from +32 B": [32 + 4 * lane for lane in range(32)],
    "128 B from +56 B": [56 + 4 * lane for lane in range(32)],
    "halves, 2nd in the next line, same sectors": _halves(LINE),
    "halves, 2nd in the next line, other sectors": _halves(LINE + 64),
    "halves, 2nd one Kernel Tuner row on": _halves(KT_PITCH),
    "halves, 2nd one row on, from +8 B": [8 + o for o in _halves(KT_PITCH)],
    "8 lines, sector 0 of each": [LINE * (lane % 8) + 4 * (lane // 8) for lane in range(32)],
    "8 lines, sectors 0-3 in turn": [LINE * (lane % 8) + SECTOR * (lane % 4) + 4 * (lane // 8) for lane in range(32)],
    "32 lines, sector 0 of each": [LINE * lane for lane in range(32)],
    "32 lines, sectors 0-3 in turn": [LINE * lane + SECTOR * (lane % 4) for lane in range(32)],
}


def conv_patterns() -> dict[str, list[int]]:
    """The Kernel Tuner convolution's warp-loads at every 4-byte alignment ``a`` of its window's start: blocks 16
    wide (two image rows a warp, lanes 16-31 one row, ``KT_PITCH``, on) and 32 wide (one row). Its windows start
    at every such alignment (the filter's 15 columns move it by 4 bytes, the rows by KT_PITCH mod 128 = 56)."""
    out = {}
    for a in range(0, LINE, 4):
        out[f"16 wide, two rows, from +{a} B"] = [a + o for o in _halves(KT_PITCH)]
    for a in range(0, LINE, 4):
        out[f"32 wide, one row, from +{a} B"] = [a + 4 * lane for lane in range(32)]
    return out


class Prediction(NamedTuple):
    """What a warp-load of a pattern should cost by each rule, and how many lines it touches."""

    walk: float
    """The walk's cycles: sectors' bytes over 128 B or the tag stage's lines at 4 a cycle, whichever is more,
    taking distinct sets."""
    banks: int
    """The most distinct 4-byte words one of the 32 banks serves (the data banks' rule, ``l1_data_banks``)."""
    lines: int
    """The distinct 128-byte lines the 32 lanes touch."""


def predicted(offsets: list[int]) -> Prediction:
    """The walk's and the banks' cycles of one warp-load of 4-byte words at ``offsets`` (bytes from a line's start),
    and its lines."""
    sectors = {o // SECTOR for o in offsets}
    lines = {o // LINE for o in offsets}
    walk = max(len(sectors) * SECTOR / LINE, -(-len(lines) // 4), 1)
    per_bank = Counter(w % BANKS for w in {o // 4 for o in offsets})
    return Prediction(float(walk), max(per_bank.values()), len(lines))


def main() -> int:
    conv = "--conv" in sys.argv[1:]
    if conv:
        sys.argv.remove("--conv")
    args = microbenchmark_args(__doc__, 256, "iterations of 8 loads a lane")
    patterns = {**PATTERNS, **conv_patterns()} if conv else PATTERNS
    device = cupy_device("l1_wavefronts")
    if device is None:
        return 2
    cp, props, name = device
    sms = props["multiProcessorCount"]
    clock_ghz = props["clockRate"] / 1e6
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",))
    grid, block = 4 * sms, 256  # 32 warps an SM
    warps = grid * block // 32
    buf = cp.ones(64 * 1024, cp.uint32)  # 256 KiB; a pattern spans at most 8 x 37 lines + 16.5 KiB
    sink = cp.zeros(1, cp.uint32)
    print(f"{name}, {sms} SMs at {clock_ghz * 1e3:.0f} MHz (the driver's clock): {grid} x {block} threads, "
          f"{args.iters} x {LOADS} loads a lane, medians of {args.repeat}; the loop's issue bound {ISSUE_BOUND:.2f} "
          f"cycles a load ({LOOP_INSTRUCTIONS} instructions for {LOADS} loads on {SCHEDULERS} schedulers), '*' "
          f"under {NEAR_ISSUE} x it")  # fmt: skip
    print(f"{'pattern':<46} {'walk':>5} {'banks':>5} {'lines':>5}  {'plain':>7} {'rel':>5}  {'__ldg':>7} {'rel':>5}")
    base: dict[str, float] = {}
    for pat, offsets in patterns.items():
        offs = cp.asarray(offsets, dtype=cp.int32)
        cycles = {}
        for kind in ("plain", "readonly"):
            fn = mod.get_function(kind)
            a = (buf, offs, cp.int32(args.iters), cp.int64(0), sink)  # step 0: the same 8 lines every iteration
            ms = median_launch_ms(cp, fn, grid, block, a, args.repeat)  # its warm-up: the buffer into every SM's L1
            loads_per_sm = warps * args.iters * LOADS / sms
            cycles[kind] = ms * 1e6 * clock_ghz / loads_per_sm
            base.setdefault(kind, cycles[kind])
        walk, banks, lines = predicted(offsets)
        mark = {k: "*" if v < NEAR_ISSUE * ISSUE_BOUND else " " for k, v in cycles.items()}
        print(f"{pat:<46} {walk:>5.2f} {banks:>5} {lines:>5}  {cycles['plain']:>7.2f}{mark['plain']}"
              f"{cycles['plain'] / base['plain']:>5.2f}  {cycles['readonly']:>7.2f}{mark['readonly']}"
              f"{cycles['readonly'] / base['readonly']:>5.2f}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
