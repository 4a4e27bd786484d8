"""Kernel Tuner's 2D convolution in its four placements of the input on the local GPU: G, R, S/G, S/R timed at
4096 x 4096 for the A100 suite's (block, tile) shapes (needs a CUDA GPU, nvcc and CuPy: pip install
'gpu-placement[gpu]').

The project has these measurements on an A100 only (../shared/data/kerneltuner-convolution); its registers
and MLP per architecture and per placement build (``traces/generators/registers*.toml``, ``mlp.toml``) were
checked by hand, not against a measurement on another GPU. This script takes them: each build of
``benchmarks/kernels/conv2d_kt.cu`` (plain, ``-Dread_only=1``, ``-Duse_shmem=1``, both) is compiled with
``nvcc -cubin -O3 -arch=sm_XY -Xptxas -v`` for the device's architecture (the tables' flags; ``--jobs`` at a
time), loaded with CuPy, run once to warm up and ``--repeat`` times between CUDA events (the median is the
time), and its output checked against the plain build's. The result is a JSON file with Kernel Tuner's cache
keys (``cache``: one entry per build, ``time`` in ms, ``times``, and ``registers`` from ptxas's report beside
the table's), which ``benchmarks/make_placement_suites.py --conv-cache FILE --conv-gpu NAME`` turns into a suite
that ``placement batch`` scores.

    python benchmarks/conv2d_kt_variants.py [-o conv2d_kt.json] [--repeat 7] [--jobs N] [--quick] [--only BX,BY,TX,TY]

A build the SM cannot launch (its registers times its threads over the SM's) is listed under ``not_launched`` and
skipped, as Kernel Tuner skips it; ``make_placement_suites`` then leaves its shape out. Under Nsight Compute, e.g.
``ncu --csv --page raw -k regex:conv2d_kt --section WarpStateStats python benchmarks/conv2d_kt_variants.py --repeat 1
--only 16,4,1,1``, each build's two launches (warm-up, timed) are profiled. Without a GPU it stops after the builds
with one line (exit 2).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "benchmarks" / "kernels" / "conv2d_kt.cu"
IMAGE = 4096  # the measured image, as Kernel Tuner's (outputs per side; the .cu's default)
FILTER = 15  # the .cu's FW and FH
# (read_only, use_shmem) of G, R, S/G, S/R: the suite's placements in this order
VARIANTS = ((0, 0), (1, 0), (0, 1), (1, 1))


def shapes(quick: bool = False) -> list[tuple[int, int, int, int]]:
    """(block_size_x, block_size_y, tile_size_x, tile_size_y) of the A100 suite (make_placement_suites), or with
    ``quick`` its 32- and 64-wide blocks only."""
    from make_placement_suites import SHAPE_BLOCKS_X, SHAPE_BLOCKS_Y, SHAPE_TILES

    xs = (32, 64) if quick else SHAPE_BLOCKS_X
    return [(bx, by, tx, ty) for bx, by, (tx, ty) in itertools.product(xs, SHAPE_BLOCKS_Y, SHAPE_TILES)]


def key(shape: tuple[int, int, int, int], ro: int, sh: int) -> str:
    """Kernel Tuner's cache key of one build (its tunables in order; filter 15 x 15, no padding)."""
    return ",".join(map(str, (*shape, ro, 0, sh, 1, FILTER, FILTER)))


def build(nvcc: str, arch: str, shape, ro: int, sh: int, workdir: Path) -> tuple[Path, int] | None:
    """(the cubin, ptxas's registers per thread) of one build, None where ptxas refuses it (a staged tile over
    the 48 KB of static shared memory)."""
    from arch_registers import ptxas_report

    bx, by, tx, ty = shape
    cubin = workdir / f"kt-{bx}-{by}-{tx}-{ty}-{ro}-{sh}.cubin"
    defines = (f"block_size_x={bx}", f"block_size_y={by}", f"tile_size_x={tx}", f"tile_size_y={ty}",
               f"read_only={ro}", f"use_shmem={sh}", f"image_width={IMAGE}", f"image_height={IMAGE}")  # fmt: skip
    cmd = [nvcc, "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", *(f"-D{d}" for d in defines), "-o", str(cubin),
           str(SOURCE)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return cubin, ptxas_report(r.stderr + r.stdout)["conv2d_kt"][0]


def table_registers(shape, ro: int, sh: int, arch: str) -> int | None:
    """The registers ``traces/generators/registers.toml`` (plain) or ``registers_variants.toml`` (the others)
    give this build on ``arch``, None where they have none."""
    from traces.generators import _common as C
    from traces.generators.conv import shape_registers, variant_registers

    if ro == sh == 0:
        by_arch = C.regs_by_arch(shape_registers(*shape) or {})
    else:
        by_arch = variant_registers(*shape).get(
            {(1, 0): "input=R", (0, 1): "input=S/G", (1, 1): "input=S/R"}[ro, sh], {}
        )
    return by_arch.get(arch)


def time_build(cp, cubin: Path, shape, inp, filt, repeat: int) -> tuple[list[float], object]:
    """The build's launch times (ms, ``repeat`` of them after one warm-up) and its output."""
    bx, by, tx, ty = shape
    mod = cp.RawModule(path=str(cubin))
    fn = mod.get_function("conv2d_kt")
    ptr = mod.get_global("d_filter")
    cp.ndarray(filt.shape, cp.float32, memptr=ptr)[...] = filt
    out = cp.zeros((IMAGE, IMAGE), cp.float32)
    grid = (-(-IMAGE // (bx * tx)), -(-IMAGE // (by * ty)))
    args = (out, inp)
    fn(grid, (bx, by), args)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(repeat):
        start.record()
        fn(grid, (bx, by), args)
        stop.record()
        stop.synchronize()
        times.append(float(cp.cuda.get_elapsed_time(start, stop)))
    return times, out


def _shape(text: str) -> tuple[int, ...]:
    """``--only``'s BX,BY,TX,TY as a tuple of four integers."""
    try:
        shape = tuple(int(v) for v in text.split(","))
    except ValueError:
        shape = ()
    if len(shape) != 4:
        raise argparse.ArgumentTypeError(f"expected BX,BY,TX,TY (four integers), got {text!r}")
    return shape


def main(argv: list[str] | None = None) -> int:
    from _cupy_device import cupy_device
    from sass_recipes import tool

    from traces.atomic import write_text

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="conv2d_kt.json")
    ap.add_argument("--repeat", type=int, default=7, help="timed launches per build; the median (default 7)")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="nvcc builds at a time")
    ap.add_argument("--arch", default="", help="sm_XY to build for (default: the device's)")
    ap.add_argument("--quick", action="store_true", help="the 32- and 64-wide blocks only (16 shapes)")
    ap.add_argument("--only", action="append", default=[], metavar="BX,BY,TX,TY", type=_shape,
                    help="this (block, tile) shape only (repeatable; e.g. to profile a few builds with ncu)")  # fmt: skip
    args = ap.parse_args(argv)
    device = cupy_device("conv2d_kt_variants")  # one line where there is no GPU
    if device is None and not args.arch:
        return 2
    arch = args.arch
    if device is not None:
        cp, props, name = device
        arch = arch or f"sm_{props['major']}{props['minor']}"
    nvcc = tool("nvcc")
    only = set(args.only)
    chosen = [s for s in shapes(args.quick) if not only or s in only]
    if only - set(chosen):
        print(f"conv2d_kt_variants: --only {sorted(only - set(chosen))} is not a shape of the suite "
              f"({'--quick: ' if args.quick else ''}{len(shapes(args.quick))} shapes)", file=sys.stderr)  # fmt: skip
        return 2
    todo = [(s, ro, sh) for s in chosen for ro, sh in VARIANTS]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        built = dict(zip(todo, pool.map(lambda t: build(nvcc, arch, *t, Path(tmp)), todo)))
        ok = {t: b for t, b in built.items() if b is not None}
        same = sum(b[1] == table_registers(t[0], t[1], t[2], arch) for t, b in ok.items())
        known = sum(table_registers(t[0], t[1], t[2], arch) is not None for t in ok)
        print(f"conv2d_kt_variants: {len(ok)} of {len(todo)} builds for {arch}; registers as the tables say in "
              f"{same} of the {known} they have", file=sys.stderr)  # fmt: skip
        if device is None:  # --arch without a GPU: built and checked only
            return 2
        rng = cp.random.default_rng(1)
        inp = rng.random((IMAGE + FILTER - 1) ** 2, dtype=cp.float32)
        filt = rng.random(FILTER * FILTER, dtype=cp.float32)
        cache, skipped = {}, {}
        for shape in chosen:
            ref = None
            for ro, sh in VARIANTS:
                b = built[(shape, ro, sh)]
                if b is None:
                    continue
                try:
                    times, out = time_build(cp, b[0], shape, inp, filt, args.repeat)
                except cp.cuda.driver.CUDADriverError as e:  # registers x threads over the SM's: Kernel Tuner skips
                    skipped[key(shape, ro, sh)] = f"{b[1]} registers: {e}"
                    print(f"{key(shape, ro, sh):<28} not launched ({b[1]} registers): {e}", flush=True)
                    continue
                ref = out if ref is None else ref
                err = float(cp.abs(out - ref).max() / max(float(cp.abs(ref).max()), 1e-30))
                table = table_registers(shape, ro, sh, arch)
                bx, by, tx, ty = shape
                cache[key(shape, ro, sh)] = {
                    "block_size_x": bx, "block_size_y": by, "tile_size_x": tx, "tile_size_y": ty,
                    "read_only": ro, "use_padding": 0, "use_shmem": sh, "use_cmem": 1,
                    "filter_height": FILTER, "filter_width": FILTER, "time": statistics.median(times), "times": times,
                    "registers": b[1], "registers_table": table, "max_rel_err": err,
                }  # fmt: skip
                print(f"{key(shape, ro, sh):<28} {statistics.median(times):9.4f} ms  {b[1]:3d} registers  "
                      f"err {err:.1e}", flush=True)  # fmt: skip
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    driver = cp.cuda.runtime.driverGetVersion()
    doc = {"device_name": name, "arch": arch, "clock_mhz": props["clockRate"] / 1e3, "nvcc": version,
           "driver": f"CUDA {driver // 1000}.{driver % 1000 // 10}", "date": time.strftime("%Y-%m-%d"),
           "image": IMAGE, "repeat": args.repeat, "cache": cache, "not_launched": skipped}  # fmt: skip
    write_text(Path(args.output), json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.output}: {len(cache)} builds timed on {name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
