"""The model's issued instructions per placement against Nsight Compute's, on the H100's placement variants.

Usage::

    python benchmarks/ncu_instructions.py [--csv ../shared/data/h100-placements/ncu-raw-variants.csv] [--json]

``ncu-raw-variants.csv`` (README of ``../shared/data/h100-placements``) profiles the generator kernels'
placement variants on an H100 (``smsp__inst_executed.sum``: warp-level instructions executed). For each
launch this script generates the generator's trace of the same launch shape, evaluates the variant's
placement on the ``h100`` configuration (``placement.evaluate``: the sample's instructions, plus the
addressing delta of ``configs/addressing.toml``, the staging code and the replays) and prints, per variant,
the measured and predicted instructions and their ratio to the sample placement's (the all-global variant).
The ratio is what a placement's T_comp follows; the summary is the median and largest error of the
predicted ratio against the measured one, per kernel and in all.

The variants' template arguments name the placement of each array (the profiled program's codes): 0 global,
1 read-only (``__ldg``), 2 1D texture, 3 constant, 4 staged in shared memory from global. Launches without a
placement code (histogram, matmul) are left out: their variants are different kernels, not placements of one.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CSV = ROOT.parent / "shared" / "data" / "h100-placements" / "ncu-raw-variants.csv"
CODE = {0: "G", 1: "R", 2: "T", 3: "C", 4: "S/G"}
# kernel -> (generator, the arrays its template arguments place, in order; size from the launch)
KERNELS = {
    "conv1d_k": ("conv1d", ("in", "mask")),
    "conv2d_k": ("conv2d_channels", ("in", "mask")),
    "matvec_k": ("matvec", ("x",)),
    "vecadd_k": ("vecadd", ("a", "b")),
}


def variant(kernel: str) -> tuple[str, str, str] | None:
    """(kernel family, generator, placement) of a profiled ``void conv1d_k<1, 3>(...)``, None for others."""
    m = re.match(r"(?:void )?(\w+)<([\d, ]+)>", kernel)
    if not m or m.group(1) not in KERNELS:
        return None
    gen, arrays = KERNELS[m.group(1)]
    args = [int(a) for a in m.group(2).split(",")]
    codes = args[-len(arrays) :]  # conv2d_k<channels, in, mask>: the last ones place the arrays
    spaces = [CODE[c] for c in codes]
    return m.group(1), gen, ",".join(f"{a}={s}" for a, s in zip(arrays, spaces) if s != "G")


def size_of(gen: str, blocks: int, block: tuple[int, int, int], kernel: str) -> tuple[list, list]:
    """The generator's size and block parameters of a launch of ``blocks`` blocks (the profiled program's
    shapes: one output per thread; conv2d's grid square)."""
    n = blocks * block[0]
    if gen == "conv1d":
        return [n, 7], [block[0]]
    if gen == "conv2d_channels":  # conv2d_k<3, ...>: 3 channels of a 3 x 3 mask (27 taps: 54 loads a warp)
        channels = int(re.match(r"(?:void )?\w+<(\d+)", kernel).group(1))
        side = math.isqrt(blocks)
        return [side * block[0], side * block[1], channels, 3], [block[0], block[1]]
    if gen == "matvec":
        return [n, n], [block[0]]
    return [n], [block[0]]


def rows(csv_path: Path) -> list[dict]:
    import placement
    import traces
    from placement.models.ncu import read_ncu
    from traces import generators

    launches = read_ncu(csv_path)
    out, traces_cache = [], {}
    for r in launches:
        v = variant(r.kernel)
        if v is None or r.params is None:  # not a placement variant, or its counters are missing
            continue
        fam, gen, place = v
        size, block = size_of(gen, int(r.params.blocks), r.block, r.kernel)
        key = (gen, tuple(size), tuple(block))
        if key not in traces_cache:
            cols, info = generators.generate(gen, size, block)
            traces_cache[key] = traces.Trace(**cols, info=info)
        d = placement.evaluate(traces_cache[key], "h100", place).to_dict()
        out.append({"kernel": fam, "generator": gen, "size": size, "block": block, "placement": place or "(sample)",
                    "measured": r.raw["inst_executed"], "predicted": d["issued_instructions"]})  # fmt: skip
    for fam in {o["kernel"] for o in out}:
        mine = [o for o in out if o["kernel"] == fam]
        base = next(o for o in mine if o["placement"] == "(sample)")
        for o in mine:
            o["measured_ratio"] = o["measured"] / base["measured"]
            o["predicted_ratio"] = o["predicted"] / base["predicted"]
            o["error"] = abs(o["predicted_ratio"] / o["measured_ratio"] - 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=str(DEFAULT_CSV))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not Path(args.csv).exists():
        sys.exit(f"ncu_instructions: {args.csv} not found (../shared/data/h100-placements)")
    out = rows(Path(args.csv))
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{'kernel':10s} {'placement':16s} {'measured':>12s} {'predicted':>12s} {'ratio meas':>10s} "
          f"{'ratio pred':>10s} {'error':>7s}")  # fmt: skip
    for o in out:
        print(f"{o['kernel']:10s} {o['placement']:16s} {o['measured']:12,.0f} {o['predicted']:12,.0f} "
              f"{o['measured_ratio']:10.3f} {o['predicted_ratio']:10.3f} {100 * o['error']:6.1f} %")  # fmt: skip
    placed = [o for o in out if o["placement"] != "(sample)"]
    for fam in sorted({o["kernel"] for o in placed}):
        e = [o["error"] for o in placed if o["kernel"] == fam]
        print(f"{fam}: {len(e)} placements, ratio error median {100 * statistics.median(e):.1f} %, "
              f"largest {100 * max(e):.1f} %")  # fmt: skip
    e = [o["error"] for o in placed]
    print(f"all: {len(e)} placements, ratio error median {100 * statistics.median(e):.1f} %, largest {100 * max(e):.1f} %; "
          f"sample instructions predicted / measured: "
          + ", ".join(f"{o['kernel']} {o['predicted'] / o['measured']:.3f}" for o in out if o["placement"] == "(sample)"))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _measure import timed_main

    sys.exit(timed_main(main))
