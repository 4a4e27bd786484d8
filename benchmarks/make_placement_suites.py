"""Write the placement-accuracy suites (configs/suites/) from the measured data of ../shared/data.

Usage::

    python benchmarks/make_placement_suites.py [--data ../shared/data] [--out configs/suites]

Two suites, each entry a trace from a benchmark generator in its sample placement, the
placements that were measured, and their measured times (ns):

- ``gpuperfpredict_matmul.toml``: gpuperfpredict's naive matMul_gpu against its tiled
  matMul_gpu_sharedmem (Tile_Width = block edge) on each GPU of the data that has a
  configuration here, per matrix size and block edge: the naive kernel's trace
  (``matmul_naive``) with M and N staged in shared memory (``M=S,N=S``) is the tiled
  kernel. Measured time: the median ``Duration`` of the data's runs of that size and
  block.
- ``kerneltuner_conv_a100.toml``: Kernel Tuner's 2D convolution on an A100 (4096 x 4096
  outputs, 15 x 15 filter in constant memory) for every (block, tile) shape of ``SHAPES``
  with the four measured variants of the input image: G (read_only 0, use_shmem 0), R
  (read_only 1), S/G (use_shmem 1) and S/R (both), without padding. The trace is the G
  variant's (``conv2d_kt``) of an image just large enough for ``CONV_WAVES`` full waves of
  blocks (the kernel is the same per block; the model's ratios between the variants are
  what is compared).

The shapes are chosen by rule, not by result: block_size_x in {16, 32, 64, 128} x
block_size_y in {1, 2, 4, 8} with tiles 1x1 and 2x2, where the kernel's own restriction
(the staged tile under 12 K floats) admits the shared variants; numbers only, from the
data (the data itself is never copied here).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# gpuperfpredict GPU names -> configurations here (a GPU without one is left out, and said so)
MATMUL_GPUS = {"GTX-680": "gtx680", "Tesla-K40": "k40", "GTX-980": "gtx980"}
MATMUL_SIZES = (256, 512)
MATMUL_BLOCKS = (8, 16, 32)

SHAPE_BLOCKS_X = (16, 32, 64, 128)
SHAPE_BLOCKS_Y = (1, 2, 4, 8)
SHAPE_TILES = ((1, 1), (2, 2))
CONV_WAVES = 2
"""The traced image holds this many full waves of blocks at the sample's occupancy on the A100 (the
measured kernel computes 4096 x 4096 outputs, dozens of waves): the model sees the resident warps
the measured run had, at a fraction of the rows."""
VARIANTS = (("", 0, 0), ("input=R", 1, 0), ("input=S/G", 0, 1), ("input=S/R", 1, 1))


def _toml_list(xs) -> str:
    return "[" + ", ".join(json.dumps(x) if isinstance(x, str) else repr(x) for x in xs) + "]"


def _known(gpu: str) -> bool:
    from placement.gpu import get_gpu
    from traces.errors import InputError

    try:
        get_gpu(gpu)
    except InputError:
        return False
    return True


def matmul_suite(data: Path) -> tuple[str, list[str]]:
    import pandas as pd

    base = data / "gpuperfpredict" / "Apps-Gpus"
    out = [
        "# gpuperfpredict's naive matMul_gpu against its tiled matMul_gpu_sharedmem, measured (median Duration of",
        "# the data's runs per size and block), as the naive kernel's trace with M and N staged in shared memory.",
        "# Written by benchmarks/make_placement_suites.py from ../shared/data/gpuperfpredict (github",
        "# marcosamaris/gpuperfpredict, Datasets/); do not edit by hand.  Run:",
        "#     placement batch configs/suites/gpuperfpredict_matmul.toml -o matmul.parquet --workers 1",
        "#     python benchmarks/placement_accuracy.py matmul.parquet",
        "",
        'name = "gpuperfpredict-matmul"',
        'description = "naive vs tiled matrix multiply (M, N staged in shared memory), measured on Kepler and Maxwell"',
        "",
    ]
    skipped = []
    for dn, g in MATMUL_GPUS.items():
        if not _known(g):
            skipped.append(f"{dn} (no configuration '{g}')")
            continue
        naive = pd.read_csv(base / f"matMul_gpu-{dn}.csv").groupby(["Input.Size", "Block.X"])["Duration"].median()
        tiled = pd.read_csv(base / f"matMul_gpu_sharedmem-{dn}.csv").groupby(["Input.Size", "Block.X"])["Duration"].median()
        for w in MATMUL_SIZES:
            for b in MATMUL_BLOCKS:
                t0, t1 = float(naive[(w, b)]) * 1e9, float(tiled[(w, b)]) * 1e9
                out += [
                    "[[entry]]", f'id = "matmul-{g}-W{w}-b{b}"', 'generator = "matmul_naive"', f"size = [{w}]",
                    f"block = [{b}]", f'gpu = "{g}"', 'placements = ["", "M=S,N=S"]',
                    f"measured_ns = [{t0:.1f}, {t1:.1f}]",
                    f'note = "{dn}: matMul_gpu and matMul_gpu_sharedmem, Input.Size {w}, block {b} x {b}"', "",
                ]  # fmt: skip
    return "\n".join(out), skipped


def conv_size(bx: int, by: int, tx: int, ty: int) -> tuple[int, int]:
    """Width and height (outputs, multiples of the block's tile) holding CONV_WAVES waves of blocks."""
    from placement.gpu import get_gpu
    from placement.occupancy import occupancy
    from traces.generators._common import recipe

    gpu = get_gpu("a100")
    per_sm = occupancy(gpu, bx * by, int(recipe("conv2d_kt")["regs"]), 0).blocks_per_sm
    outputs = CONV_WAVES * gpu.compute.sms * per_sm * bx * by * tx * ty
    side = math.sqrt(outputs)
    w = math.ceil(side / (bx * tx)) * bx * tx
    h = math.ceil(outputs / w / (by * ty)) * by * ty
    return w, h


def conv_suite(data: Path) -> str:
    cache = json.load(gzip.open(data / "kerneltuner-convolution" / "A100.json.gz"))["cache"]
    times: dict[tuple, float] = {}
    for v in cache.values():
        t = v.get("time")
        if not isinstance(t, (int, float)) or v["use_padding"] != 0:
            continue
        times[(v["block_size_x"], v["block_size_y"], v["tile_size_x"], v["tile_size_y"], v["read_only"], v["use_shmem"])] = t
    out = [
        "# Kernel Tuner's 2D convolution on an NVIDIA A100-PCIE-40GB (4096 x 4096 outputs, 15 x 15 filter in",
        "# constant memory), the four measured variants of the input image per (block, tile) shape: G, R (__ldg),",
        "# S/G and S/R (staged in shared memory, from global or through the read-only path), no padding; mean",
        "# time of 32 runs. Written by benchmarks/make_placement_suites.py from",
        "# ../shared/data/kerneltuner-convolution/A100.json.gz (github AutoTuningAssociation/benchmark_hub,",
        "# cachefiles/convolution_milo/); do not edit by hand. The trace is the G variant (conv2d_kt) of an",
        f"# image of {CONV_WAVES} full waves of blocks at the sample's occupancy: the per-block work and the resident",
        "# warps of the measured 4096 x 4096 run, at a fraction of its rows.  Run:",
        "#     placement batch configs/suites/kerneltuner_conv_a100.toml -o conv.parquet",
        "#     python benchmarks/placement_accuracy.py conv.parquet",
        "",
        'name = "kerneltuner-conv-a100"',
        'description = "2D convolution: input image in G, R, S/G, S/R, measured on an A100"',
        'gpu = "a100"',
        "",
    ]
    n = 0
    for bx in SHAPE_BLOCKS_X:
        for by in SHAPE_BLOCKS_Y:
            for tx, ty in SHAPE_TILES:
                ts = [times.get((bx, by, tx, ty, ro, sh)) for _, ro, sh in VARIANTS]
                if any(t is None for t in ts):
                    continue
                n += 1
                w, h = conv_size(bx, by, tx, ty)
                out += [
                    "[[entry]]", f'id = "conv-{bx}x{by}-t{tx}x{ty}"', 'generator = "conv2d_kt"',
                    f"size = [{w}, {h}]", f"block = [{bx}, {by}, {tx}, {ty}]",
                    f"placements = {_toml_list([p for p, _, _ in VARIANTS])}",
                    f"measured_ns = {_toml_list([round(t * 1e6, 1) for t in ts])}",
                    f'note = "block {bx} x {by}, tile {tx} x {ty}; measured_ns of G, R, S/G, S/R"', "",
                ]  # fmt: skip
    print(f"kerneltuner conv: {n} shapes with all four variants measured", file=sys.stderr)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(ROOT / "configs" / "suites"))
    args = ap.parse_args(argv)
    data, out = Path(args.data), Path(args.out)
    if not data.is_dir():
        print(f"make_placement_suites: no data folder {data}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    text, skipped = matmul_suite(data)
    (out / "gpuperfpredict_matmul.toml").write_text(text)
    for s in skipped:
        print(f"matmul: left out {s}", file=sys.stderr)
    (out / "kerneltuner_conv_a100.toml").write_text(conv_suite(data))
    print(f"wrote {out}/gpuperfpredict_matmul.toml and {out}/kerneltuner_conv_a100.toml", file=sys.stderr)
    return 0


if __name__ == "__main__":
    import os

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _measure import timed_main

    sys.exit(timed_main(main))  # prints wall, CPU and peak RSS of the run to stderr
