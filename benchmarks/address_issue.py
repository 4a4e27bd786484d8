"""What a load's own address arithmetic costs, and what the read-only path costs, at each occupancy (needs a CUDA
GPU and CuPy: pip install 'gpu-placement[gpu]').

The Kernel Tuner convolution's ``__ldg`` builds with 2 x 2 tiles run 1.47-1.92x as long as its plain builds on an
H200 (``configs/suites/kerneltuner_conv_h200.toml``) where the model predicts 1.00-1.61: nvcc gives each
``__ldg(&in[index + c])`` its own ``IADD3`` and ``IMAD.WIDE`` (the addressing table's +2 a load, which the model
charges) where a plain ``in[index + c]`` folds ``c`` into the load, and the model issues those instructions under
the plain build's load time. Nsight Compute found the ``__ldg`` build's warps waiting at its ``IMAD.WIDE``\\ s with no
pipe saturated (benchmarks/ACCURACY.md, last part). This script separates the two causes, on L1-resident data so
that neither DRAM nor the L2 is in the way:

- ``plain``: ``p[c]`` with ``p = in + row`` (``LDG.E``, ``c`` folded into the load);
- ``ldg_pointer``: ``__ldg(p + c)`` (``LDG.E.CONSTANT``, folded): the read-only path alone;
- ``ldg_index``: ``__ldg(&in[row + c])``, the convolution's form (``IADD3`` + ``IMAD.WIDE`` + ``LDG.E.CONSTANT``);
- ``asm_index``: the same address through a plain ``ld.global`` (``IADD3`` + ``IMAD.WIDE`` + ``LDG.E``): the
  address instructions alone.

Each lane reads, ``--iters`` times, ``TAPS`` floats at the convolution's kind of offsets (``c = k * ROW + 1``: rows of
an image, one float right of the row's start, so each warp-load touches two lines as most of the convolution's
do) into four ``FFMA`` chains (a 2 x 2 tile's four sums), with 1, 2, 4 and 8 warps on each of the SM's four
schedulers (blocks of 128 threads, that many blocks an SM). The launch is timed with CUDA events (median of
``--repeat``); the figures are SM cycles per warp-load at the clock the driver reports, each kernel's over
``plain``'s at the same occupancy, and the instructions a cycle and SM that its loop issues (``LOOP_SASS``: the
loop's instructions, ``LOOP_INSTRUCTIONS``, checked against nvcc's SASS in ``tests/test_gpu_benchmarks.py``). If
``asm_index`` takes its extra instructions' time (1.61x ``plain``'s where the loop is issue-bound) the model's
issue term must count them there; if only ``ldg_index`` is slow, it is the read-only path's with computed
addresses; if neither is, the convolution's cost lies elsewhere (its registers, its occupancy).

    python benchmarks/address_issue.py [--iters 1024] [--repeat 5] [--json OUT.json]
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _cupy_device import cupy_device, median_launch_ms, microbenchmark_args

TAPS = 8
ROW = 1040
"""Floats between two taps of a lane (4,160 bytes: a row of an image); the taps span 29 KiB, L1-resident on every
GPU from Volta on."""
MASK = 1023
"""The lanes' starting float moves by ``step`` (32) a loop and wraps at this mask: 4 KiB of rows."""
WARPS_PER_SCHEDULER = (1, 2, 4, 8)
KINDS = ("plain", "ldg_pointer", "ldg_index", "asm_index")

SOURCE = rf"""
#define TAPS {TAPS}
#define ROW {ROW}
template <int KIND>
__device__ __forceinline__ void body(const float* in, int iters, int step, int mask, float w, float* sink) {{
  int row = threadIdx.x & 31;
  float acc[4] = {{0.f, 0.f, 0.f, 0.f}};
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {{
    const float* p = in + row;
#pragma unroll
    for (int k = 0; k < TAPS; ++k) {{
      float v;
      if (KIND == 0) v = p[k * ROW + 1];
      else if (KIND == 1) v = __ldg(p + (k * ROW + 1));
      else if (KIND == 2) v = __ldg(&in[row + k * ROW + 1]);
      else asm volatile("ld.global.f32 %0, [%1];" : "=f"(v) : "l"(&in[row + k * ROW + 1]));
      acc[k & 3] = fmaf(v, w, acc[k & 3]);
    }}
    row = (row + step) & mask;
  }}
  const float s = acc[0] + acc[1] + acc[2] + acc[3];
  if (s == -1.f) sink[0] = s;
}}
extern "C" __global__ void plain(const float* in, int n, int st, int m, float w, float* s) {{ body<0>(in, n, st, m, w, s); }}
extern "C" __global__ void ldg_pointer(const float* in, int n, int st, int m, float w, float* s) {{ body<1>(in, n, st, m, w, s); }}
extern "C" __global__ void ldg_index(const float* in, int n, int st, int m, float w, float* s) {{ body<2>(in, n, st, m, w, s); }}
extern "C" __global__ void asm_index(const float* in, int n, int st, int m, float w, float* s) {{ body<3>(in, n, st, m, w, s); }}
"""  # noqa: E501

LOOP_INSTRUCTIONS = {
    "sm_80": {"plain": 23, "ldg_pointer": 23, "ldg_index": 38, "asm_index": 38},
    "sm_90": {"plain": 23, "ldg_pointer": 23, "ldg_index": 37, "asm_index": 37},
}
"""The loop's warp-instructions per iteration (``TAPS`` loads), nvcc 13's SASS (``tests/test_gpu_benchmarks.py``
checks them): the pointer forms 8 loads, 8 ``FFMA``, the pointer's ``IMAD.WIDE`` and the row, counter and branch;
the index forms 7 more ``IMAD.WIDE`` and 8 more ``IADD3`` (a load's own address, the addressing table's +2 a
load), 37 / 23 = 1.61x the instructions, where the convolution's 16 x 1 blocks with 2 x 2 tiles execute 1.66x
(Nsight Compute on the H200) and take 1.62x the time."""


def instructions_per_load(kind: str, sm: str = "sm_90") -> float:
    """Warp-instructions the loop issues per warp-load of ``kind`` (GPUs before Hopper: the sm_80 build's)."""
    return LOOP_INSTRUCTIONS[sm][kind] / TAPS


def main() -> int:
    json_out = None
    if "--json" in sys.argv[1:]:
        i = sys.argv.index("--json")
        if i + 1 >= len(sys.argv):
            print("address_issue: --json needs a file name", file=sys.stderr)
            return 2
        json_out = sys.argv[i + 1]
        del sys.argv[i : i + 2]
    args = microbenchmark_args(__doc__, 1024, "iterations of the loop (TAPS loads a lane each)")
    device = cupy_device("address_issue")
    if device is None:
        return 2
    cp, props, name = device
    sms = props["multiProcessorCount"]
    sm = "sm_90" if props["major"] >= 9 else "sm_80"
    clock_ghz = props["clockRate"] / 1e6
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",))
    buf = cp.ones(TAPS * ROW + MASK + 64, cp.float32)
    sink = cp.zeros(1, cp.float32)
    print(f"{name}, {sms} SMs at {clock_ghz * 1e3:.0f} MHz (the driver's clock): blocks of 128 threads, {args.iters} x "
          f"{TAPS} loads a lane, medians of {args.repeat}")  # fmt: skip
    print(f"{'kind':<12} {'warps/sched':>11} {'inst/load':>9} {'cycles/load':>11} {'vs plain':>8} {'IPC/SM':>7}")
    rows = []
    for wps in WARPS_PER_SCHEDULER:
        base = None
        for kind in KINDS:
            fn = mod.get_function(kind)
            grid = sms * wps
            a = (buf, cp.int32(args.iters), cp.int32(32), cp.int32(MASK), cp.float32(0.5), sink)
            ms = median_launch_ms(cp, fn, grid, 128, a, args.repeat)  # its warm-up: the taps into every SM's L1
            loads_per_sm = grid * 4 * args.iters * TAPS / sms
            cycles = ms * 1e6 * clock_ghz / loads_per_sm
            base = base or cycles
            ipl = instructions_per_load(kind, sm)
            rows.append({"kind": kind, "warps_per_scheduler": wps, "cycles_per_load": cycles,
                         "vs_plain": cycles / base, "instructions_per_load": ipl, "ipc_per_sm": ipl / cycles})  # fmt: skip
            print(f"{kind:<12} {wps:>11} {ipl:>9.3f} {cycles:>11.3f} {cycles / base:>8.3f} {ipl / cycles:>7.2f}",
                  flush=True)  # fmt: skip
    if json_out:
        with open(json_out, "w") as fh:
            json.dump({"device_name": name, "sms": sms, "clock_mhz": clock_ghz * 1e3, "iters": args.iters,
                       "repeat": args.repeat, "rows": rows}, fh, indent=1)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
