"""Write the placement-accuracy suites (configs/suites/) from the measured data of ../shared/data.

Usage::

    python benchmarks/make_placement_suites.py [--data ../shared/data] [--out configs/suites]

Two suites, each entry a trace from a benchmark generator in its sample placement, the
placements that were measured, and their measured times (ns):

- ``gpuperfpredict_matmul.toml``: gpuperfpredict's naive matMul_gpu against its tiled
  matMul_gpu_sharedmem (Tile_Width = block edge) on each GPU of the data that has a
  configuration here, per matrix size and block edge: the naive kernel's trace
  (``matmul_naive``) with M and N staged in shared memory in W / Tile_Width windows
  (``M=S,N=S;windows=K;unrolled``: Tile_Width x Tile_Width tiles, the tiled kernel's, read in
  its compile-time k loop) is the tiled kernel. Measured time: the median ``Duration`` of the data's runs of that size and
  block.
- ``kerneltuner_conv_a100.toml``: Kernel Tuner's 2D convolution on an A100 (4096 x 4096
  outputs, 15 x 15 filter in constant memory) for every (block, tile) shape of ``SHAPES``
  with the four measured variants of the input image: G (read_only 0, use_shmem 0), R
  (read_only 1), S/G (use_shmem 1) and S/R (both; the staged ones in one window, as the kernel
  copies its whole tile before one barrier: ``VARIANTS``), without padding, and where Kernel
  Tuner's ``use_padding`` pads the tile's rows (:func:`kt_pad`: the 16-wide blocks) the two
  staged builds with padded rows as well (``;pad=P``). The trace is the G
  variant's (``conv2d_kt``) of an image just large enough for ``CONV_WAVES`` full waves of
  blocks (the kernel is the same per block), with the measured launch's blocks in ``launch_ctas``:
  the model scales the trace's time to the launch's (``placement.hms.blocks_scale``), so both the
  ratios between the variants and the absolute times are compared.

- ``h100_variants.toml``: the project's generator kernels measured on an H100 SXM in every
  variant the tool advises (``h100-placements/``, its README): one entry per (kernel,
  size, block), see ``h100_suite``.

The shapes are chosen by rule, not by result: block_size_x in {16, 32, 64, 128} x
block_size_y in {1, 2, 4, 8} with tiles 1x1 and 2x2, where the kernel's own restriction
(the staged tile under 12 K floats) admits the shared variants; numbers only, from the
data (the data itself is never copied here).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import statistics
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
the measured run had, at a fraction of the rows, and scales the time to the launch's blocks."""
VARIANTS = (
    ("", 0, 0),
    ("input=R", 1, 0),
    ("input=S/G;windows=1;unrolled", 0, 1),
    ("input=S/R;windows=1;unrolled", 1, 1),
)
"""The convolution's measured builds as placements: (read_only, use_shmem) = (0, 0) the sample, (1, 0) R, and the
staged builds, which copy the block's whole input tile, (block x tile + filter - 1) in each dimension, before one
``__syncthreads()`` (``benchmarks/kernels/conv2d_kt.cu``): one window, ``;windows=1``. Left to choose, the tool
splits the tile of 1- and 2-row blocks with 2 x 2 tiles into 2-4 windows to keep the occupancy, which is not the
kernel that was measured. Its copy and read loops carry ``#pragma unroll`` over compile-time sizes: ``;unrolled``
(since 30 Nov 2026, fortieth session: nvcc unrolls the copy by 4 on sm_75 to sm_90, configs/addressing.toml
``copy_unroll``)."""


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
        "# the data's runs per size and block), as the naive kernel's trace with M and N staged in shared memory in",
        "# the tiled kernel's tiles (W / Tile_Width windows of Tile_Width x Tile_Width), read in its compile-time k",
        "# loop (;unrolled: nvcc's LDS.128; nvprof's shared_load of the tiled kernel is 5/8 of its reads).",
        "# dlcm: the data holds two builds of matMul_gpu, told apart by their signature (Kernel.1). The one that",
        "# takes Tile_Width as an argument, matMul(float*, float*, float*, int, int), is the source built by",
        '# gpuperfpredict\'s src/common/Makefile.common with -Xptxas -dlcm=ca: dlcm = "ca". The other,',
        "# matMul(float*, float*, float*, int), has Tile_Width a macro, as the Makefile.common that passes",
        "# -D Tile_Width=X (and no -dlcm) builds it: the GPU's default. The GTX-980's counters agree: the first",
        "# build's unified cache misses 4-6 % of its sectors (Global.Hit.Rate 94-96 %), the second's L2 read",
        '# transactions are all of its sectors (2.62 M at 256^2; its 58.3 % "hit rate" counts 12 queries a k',
        "# step's two loads, 5 of them misses, at blocks 8 and 32 alike). The Kepler GPUs cache no global load either",
        "# way (L1.Global.Hit.Rate 0): configs/architectures.toml, global_l1_opt_in.",
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
        runs = pd.read_csv(base / f"matMul_gpu-{dn}.csv").groupby(["Input.Size", "Block.X"])
        naive, signature = runs["Duration"].median(), runs["Kernel.1"].first()
        tiled = (
            pd.read_csv(base / f"matMul_gpu_sharedmem-{dn}.csv").groupby(["Input.Size", "Block.X"])["Duration"].median()
        )
        for w in MATMUL_SIZES:
            for b in MATMUL_BLOCKS:
                t0, t1 = float(naive[(w, b)]) * 1e9, float(tiled[(w, b)]) * 1e9
                dlcm = ['dlcm = "ca"'] if signature[(w, b)].count(",") == 4 else []
                out += [
                    "[[entry]]", f'id = "matmul-{g}-W{w}-b{b}"', 'generator = "matmul_naive"', f"size = [{w}]",
                    f"block = [{b}]", *dlcm, f'gpu = "{g}"', f'placements = ["", "M=S,N=S;windows={w // b};unrolled"]',
                    f"measured_ns = [{t0:.1f}, {t1:.1f}]",
                    f'note = "{dn}: matMul_gpu and matMul_gpu_sharedmem, Input.Size {w}, block {b} x {b}"', "",
                ]  # fmt: skip
    return "\n".join(out), skipped


def conv_size(bx: int, by: int, tx: int, ty: int, gpu_name: str = "a100") -> tuple[int, int]:
    """Width and height (outputs, multiples of the block's tile) holding CONV_WAVES waves of blocks on
    ``gpu_name``."""
    from placement.gpu import get_gpu
    from placement.occupancy import occupancy
    from traces.generators._common import recipe

    gpu = get_gpu(gpu_name)
    per_sm = occupancy(gpu, bx * by, int(recipe("conv2d_kt")["regs"]), 0).blocks_per_sm
    outputs = CONV_WAVES * gpu.compute.sms * per_sm * bx * by * tx * ty
    side = math.sqrt(outputs)
    w = math.ceil(side / (bx * tx)) * bx * tx
    h = math.ceil(outputs / w / (by * ty)) * by * ty
    return w, h


def conv_suite(data: Path, cache_files: list[Path] | None = None, gpu: str = "a100") -> str:
    """The Kernel Tuner convolution's suite: the A100's measurements (``data``), or with ``cache_files`` another
    GPU's (runs of ``benchmarks/conv2d_kt_variants.py``, JSON with Kernel Tuner's cache keys) priced on ``gpu``."""
    if cache_files:
        doc = merge_conv_runs([read_conv_run(Path(f)) for f in cache_files])
        return _conv_suite_of(doc, " ".join(Path(f).name for f in cache_files), gpu)
    cache = json.load(gzip.open(data / "kerneltuner-convolution" / "A100.json.gz"))["cache"]
    times, padded = conv_times(cache), conv_times(cache, padding=1)
    out = [
        "# Kernel Tuner's 2D convolution on an NVIDIA A100-PCIE-40GB (4096 x 4096 outputs, 15 x 15 filter in",
        "# constant memory), the four measured variants of the input image per (block, tile) shape: G, R (__ldg),",
        "# S/G and S/R (staged in shared memory, from global or through the read-only path), no padding, and",
        "# where Kernel Tuner's use_padding pads the tile's rows (16-wide blocks) the staged builds padded too;",
        "# mean time of 32 runs. Written by benchmarks/make_placement_suites.py from",
        "# ../shared/data/kerneltuner-convolution/A100.json.gz (github AutoTuningAssociation/benchmark_hub,",
        "# cachefiles/convolution_milo/); do not edit by hand. The trace is the G variant (conv2d_kt) of an",
        f"# image of {CONV_WAVES} full waves of blocks at the sample's occupancy: the per-block work and the resident",
        "# warps of the measured 4096 x 4096 run, at a fraction of its rows; launch_ctas, the measured launch's",
        "# blocks, scales the model's time to the launch's.  Run:",
        "#     placement batch configs/suites/kerneltuner_conv_a100.toml -o conv.parquet",
        "#     python benchmarks/placement_accuracy.py conv.parquet",
        "",
        'name = "kerneltuner-conv-a100"',
        'description = "2D convolution: input image in G, R, S/G, S/R, measured on an A100"',
        'gpu = "a100"',
        "",
    ]
    entries, n = conv_entries(times, "a100", padded=padded)
    print(f"kerneltuner conv: {n} shapes with all four variants measured", file=sys.stderr)
    return "\n".join(out + entries)


def conv_times(cache: dict, padding: int = 0) -> dict[tuple, float]:
    """{(block_size_x, block_size_y, tile_size_x, tile_size_y, read_only, use_shmem): ms} of a Kernel Tuner
    cache's unpadded builds (``padding`` 0) or padded ones (1: ``use_padding``, see :func:`kt_pad`)."""
    times: dict[tuple, float] = {}
    for v in cache.values():
        t = v.get("time")
        if not isinstance(t, (int, float)) or v.get("use_padding", 0) != padding:
            continue
        times[
            (v["block_size_x"], v["block_size_y"], v["tile_size_x"], v["tile_size_y"], v["read_only"], v["use_shmem"])
        ] = t
    return times


class SuiteInputError(ValueError):
    """A measurement file this script cannot read: the message names the file and the entry."""


CONV_KEYS = ("block_size_x", "block_size_y", "tile_size_x", "tile_size_y", "read_only", "use_shmem", "use_padding")


def read_conv_run(path: Path) -> dict:
    """One ``conv2d_kt_variants.py`` JSON, checked: a ``cache`` object whose entries each have the integer tunable
    parameters of ``CONV_KEYS`` and, where timed, a positive ``time`` (ms). Parsed with ``json``, never evaluated."""
    try:
        doc = json.loads(path.read_text())
    except OSError as e:
        raise SuiteInputError(f"{path}: cannot read: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SuiteInputError(f"{path}: not JSON: {e}") from None
    cache = doc.get("cache") if isinstance(doc, dict) else None
    if not isinstance(cache, dict) or not cache:
        raise SuiteInputError(f'{path}: no "cache" object of timed builds (a conv2d_kt_variants.py JSON)')
    for key, v in cache.items():
        if not isinstance(v, dict):
            raise SuiteInputError(f"{path}: cache entry {key!r}: expected an object, got {type(v).__name__}")
        for k in CONV_KEYS:
            if isinstance(v.get(k), bool) or not isinstance(v.get(k), int):
                raise SuiteInputError(f"{path}: cache entry {key!r}: {k}: expected an integer, got {v.get(k)!r}")
        t = v.get("time")
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < math.inf):
            raise SuiteInputError(
                f"{path}: cache entry {key!r}: time: expected a positive finite number (ms), got {t!r}"
            )
    return doc


def merge_conv_runs(docs: list[dict]) -> dict:
    """One ``conv2d_kt_variants.py`` document of several runs on one GPU: each build that every run timed at the
    mean of their times (as the H100 suite takes the mean of its two runs), ``runs`` and the run-to-run spread
    (``spread``: the upper median and the largest relative difference of a build's time from the mean, in %)."""
    if len(docs) == 1:
        return docs[0]
    keys = [
        k for k in docs[0]["cache"] if all(isinstance(d["cache"].get(k, {}).get("time"), (int, float)) for d in docs)
    ]
    cache, diffs = {}, []
    for k in keys:
        ts = [d["cache"][k]["time"] for d in docs]
        mean = statistics.fmean(ts)
        cache[k] = {**docs[0]["cache"][k], "time": mean, "times": ts}
        diffs += [abs(t / mean - 1) * 100 for t in ts]
    not_launched = {k: v for d in docs for k, v in d.get("not_launched", {}).items()}
    return {**docs[0], "cache": cache, "not_launched": not_launched, "runs": len(docs),
            "spread": (statistics.median_high(diffs), max(diffs))}  # fmt: skip


def _conv_suite_of(doc: dict, source: str, gpu: str) -> str:
    """A suite of ``benchmarks/conv2d_kt_variants.py``'s measurements ``doc`` (from file ``source``) on ``gpu``."""
    out = [
        f"# Kernel Tuner's 2D convolution (benchmarks/kernels/conv2d_kt.cu) on {doc.get('device_name', '?')}",
        f"# ({doc.get('arch', '?')}, {doc.get('nvcc', 'nvcc ?')}): {doc.get('image', 4096)} x {doc.get('image', 4096)} "
        "outputs, the four builds",
        f"# of the input per (block, tile) shape, median of {doc.get('repeat', '?')} launches"
        + (
            f" (the mean of {doc['runs']} runs; a build's time {doc['spread'][0]:.2f} % from the mean, median, at most "
            f"{doc['spread'][1]:.2f} %)"
            if doc.get("runs")
            else ""
        )
        + ". Written by",
        f"# benchmarks/make_placement_suites.py --conv-cache {source} --conv-gpu {gpu}; the trace as the A100 suite's.",
    ]
    if doc.get("driver") or doc.get("date"):
        out.append(f"# Measured {doc.get('date', '?')}, driver {doc.get('driver', '?')}, SM clock as the driver "
                   f"reports it {doc.get('clock_mhz', '?')} MHz (not locked).")  # fmt: skip
    if doc.get("not_launched"):
        shapes = sorted({",".join(k.split(",")[:4]) for k in doc["not_launched"]})
        out.append(f"# Left out, a build the SM cannot launch (its registers x threads): {'; '.join(shapes)} "
                   "(block x, y, tile x, y).")  # fmt: skip
    out += [
        "",
        f'name = "kerneltuner-conv-{gpu}"',
        f'description = "2D convolution: input image in G, R, S/G, S/R, measured on {doc.get("device_name", gpu)}"',
        f'gpu = "{gpu}"',
        "",
    ]
    entries, n = conv_entries(conv_times(doc["cache"]), gpu, int(doc.get("image", 4096)))
    print(f"kerneltuner conv ({gpu}): {n} shapes with all four variants measured", file=sys.stderr)
    return "\n".join(out + entries)


KT_BORDER = 14
"""The convolution's filter border (15 x 15 filter: 2 x 7 columns), in Kernel Tuner's padding rule (:func:`kt_pad`)."""


def kt_pad(bx: int, tx: int, border: int = KT_BORDER) -> int:
    """The padding columns of Kernel Tuner's convolution with ``use_padding = 1`` (benchmark_hub's
    convolution_milo kernel): none where block_size_x is a multiple of 32 or the tile's width less the block's is,
    else (32 - (border + block_size_x x tile_size_x - block_size_x)) mod 32 (16-wide blocks: 18 with 1 column of
    outputs a thread, 2 with 2; their shared rows then lie 48 floats apart)."""
    width = bx * tx + border
    if bx % 32 == 0 or (width - bx) % 32 == 0:
        return 0
    return (32 - (border + bx * tx - bx)) & 31


def conv_entries(times: dict[tuple, float], gpu: str, image: int = 4096,
                 padded: dict[tuple, float] | None = None) -> tuple[list[str], int]:  # fmt: skip
    """The suite's entries (TOML lines) of the shapes whose four variants ``times`` has, and their count: each
    traced at :func:`conv_size`, with the measured ``image`` x ``image`` launch's blocks in ``launch_ctas``. With
    ``padded`` (the builds with ``use_padding = 1``), a shape whose rule pads (:func:`kt_pad`) also gets its two
    staged builds with padded rows, ``;pad=P``."""
    out, n = [], 0
    for bx in SHAPE_BLOCKS_X:
        for by in SHAPE_BLOCKS_Y:
            for tx, ty in SHAPE_TILES:
                ts = [times.get((bx, by, tx, ty, ro, sh)) for _, ro, sh in VARIANTS]
                if any(t is None for t in ts):
                    continue
                n += 1
                places = [p for p, _, _ in VARIANTS]
                what = "G, R, S/G, S/R"
                pad = kt_pad(bx, tx)
                pts = [padded.get((bx, by, tx, ty, ro, 1)) for ro in (0, 1)] if padded and pad else [None]
                if all(t is not None for t in pts):
                    places += [f"{p};pad={pad}" for p, _, sh in VARIANTS if sh]
                    ts += pts
                    what += f", and S/G, S/R with rows padded by {pad} (use_padding)"
                w, h = conv_size(bx, by, tx, ty, gpu)
                launch = launch_blocks("conv2d_kt", {"width": image, "height": image}, [bx, by, tx, ty])
                traced = launch_blocks("conv2d_kt", {"width": w, "height": h}, [bx, by, tx, ty])
                out += [
                    "[[entry]]", f'id = "conv-{bx}x{by}-t{tx}x{ty}"', 'generator = "conv2d_kt"',
                    f"size = [{w}, {h}]", f"block = [{bx}, {by}, {tx}, {ty}]", f"launch_ctas = {launch}",
                    f"placements = {_toml_list(places)}",
                    f"measured_ns = {_toml_list([round(t * 1e6, 1) for t in ts])}",
                    f'note = "block {bx} x {by}, tile {tx} x {ty}; measured_ns of {what} of {image} x {image}, '
                    f'traced at {w} x {h}: {traced:,} of its {launch:,} blocks"', "",
                ]  # fmt: skip
    return out, n


H100 = "h100-placements"
H100_RUNS = ("variants-run1.csv", "variants-run2.csv")
H100_EXTRA = "variants-extra.csv"
MAX_TRACE_ROWS = 3_000_000
"""An entry's trace holds at most this many rows (issue 33: "at the measured size where the trace holds
under ~3 M rows, else the largest size that does")."""
RATIOS_ONLY = "(ratios only)"
"""In an entry's note: its trace is smaller than the measured run, so its measured_ns are compared as ratios
to its sample's, never as absolute times (benchmarks/placement_accuracy.py reads this mark)."""

STAGING_MISMATCH = (
    "shared bytes per block measured that are none of the tiles the tool stages (the window counts "
    "it tries, at the measured size; for a size whose trace does not hold, as at the largest measured "
    "size of the kind whose trace does):"
)
# measured kernel -> (generator, the size parameter halved until the trace fits, the size parameters that
# must be equal for two sizes to share a staged variant's check: see h100_suite)
H100_KERNELS = {
    "vecadd": ("vecadd", "n", ()),
    "conv1d": ("conv1d", "n", ("mask_width",)),
    "conv2d_channels": ("conv2d_channels", "height", ("channels", "mask")),
    "matvec": ("matvec", "cols", ()),
    "histogram": ("histogram", "n", ("bins",)),
    "matmul": ("matmul_naive", "W", ()),
}


def trace_rows(generator: str, size: dict[str, int]) -> int:
    """Rows of a generator's trace (one per warp memory instruction) at a size whose threads fill whole warps."""
    s = size
    if generator == "vecadd":  # a[i], b[i], v[i]
        return 3 * s["n"] // 32
    if generator == "conv1d":  # in[i + j], mask[j] per tap; out[i]
        return (2 * s["mask_width"] + 1) * s["n"] // 32
    if generator == "conv2d_channels":  # in, mask per channel and tap; out
        return (2 * s["channels"] * s["mask"] ** 2 + 1) * s["width"] * s["height"] // 32
    if generator == "matvec":  # A[i][j], x[j] per column; y[i]
        return (2 * s["cols"] + 1) * s["rows"] // 32
    if generator == "histogram":  # data[i]; bins[data[i]]
        return 2 * s["n"] // 32
    if generator == "matmul_naive":  # M, N per k; P
        return (2 * s["W"] + 1) * s["W"] ** 2 // 32
    raise KeyError(generator)


def traced_size(kernel: str, size: dict[str, int]) -> dict[str, int]:
    """The measured size if its trace holds at most MAX_TRACE_ROWS rows, else the largest size that does with
    the kernel's scale parameter halved (the other parameters, the block and every power-of-two factor of the
    measured addresses kept)."""
    gen, param, _ = H100_KERNELS[kernel]
    out = dict(size)
    while trace_rows(gen, out) > MAX_TRACE_ROWS:
        out[param] //= 2
    return out


def launch_blocks(kernel: str, size: dict[str, int], block: list[int]) -> int | None:
    """The blocks of ``kernel``'s launch at ``size`` where its blocks do the same work at every value of its scale
    parameter (vecadd, conv1d, histogram: one block per ``block`` elements; conv2d_channels: one per block tile of
    the image, the row pitch kept; conv2d_kt: one per block x tile of outputs, ``block`` its [bx, by, tx, ty]), so
    that a trace at a smaller size is the same blocks, fewer of them; None for matvec (cols sets each block's work)
    and matmul_naive (W sets each thread's loop)."""
    if kernel in ("vecadd", "conv1d", "histogram"):
        return -(-size["n"] // block[0])
    if kernel in ("conv2d_channels", "conv2d_kt"):
        tx, ty = block[2:4] if kernel == "conv2d_kt" else (1, 1)
        return -(-size["width"] // (block[0] * tx)) * -(-size["height"] // (block[1] * ty))
    return None


def _h100_measured(data: Path) -> tuple[dict[tuple, list[dict]], list[tuple]]:
    """(kernel, size, block, variant) -> its rows of the data's runs, and the keys in the data's order."""
    rows: dict[tuple, list[dict]] = {}
    order: list[tuple] = []
    for name in (*H100_RUNS, H100_EXTRA):
        with open(data / H100 / name, newline="") as f:
            for r in csv.DictReader(f):
                if r["kernel"] not in H100_KERNELS:
                    continue  # the empty kernel: the launch floor, no placements
                if r["check"] != "ok":
                    raise ValueError(
                        f"{name}: {r['kernel']} {r['variant']} {r['size']} {r['block']}: check {r['check']!r}"
                    )
                key = (r["kernel"], r["size"], r["block"], r["variant"])
                if key not in rows:
                    order.append(key)
                rows.setdefault(key, []).append({**r, "file": name})
    return rows, order


def _size(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in (p.split("=") for p in text.split(";"))}


def _block(kernel: str, text: str) -> list[int]:
    bx, by, _ = (int(x) for x in text.split("x"))
    if kernel == "conv2d_channels":
        return [bx, by]
    if kernel == "matmul":
        assert bx == by, text
    return [bx]


def h100_placement(kernel: str, variant: str, traced: dict[str, int] | None = None, block: list[int] | None = None,
                   measured: dict[str, int] | None = None) -> tuple[str | None, str]:  # fmt: skip
    """The placement a variant code stands for ("" = the sample), or None and why the tool cannot express it. A
    staged variant measured at a window count keeps its tiles (``;windows=K``, K scaled by the traced W over the
    measured W where a smaller matrix is traced: the same tiles, fewer of them); matmul's ``tiled`` (Kirk & Hwu's
    kernel, unchanged: a TILE x TILE tile of M and of N a window, two barriers a window) is the naive kernel's M and
    N staged in W / TILE windows (``traced``: the traced size; ``block``: the tile), read in its compile-time k loop
    (``;unrolled``: nvcc makes each lane's 4 reads of an Mds row one LDS.128, Nsight Compute's shared loads of
    matmul_tiled_16 are 5/8 of the tool's staged kernel's, ``ncu-raw-variants.csv``)."""
    if variant == "tiled":
        if traced is None or block is None:
            return None, "tiled: the textbook tiling of the traced size (W / TILE windows)"
        return f"M=S/G,N=S/G;windows={traced['W'] // block[0]};unrolled", ""
    spaces = [p.split("=", 1) for p in variant.split(";")[0].split(",")]
    for _, sp in spaces:
        if sp == "R*":
            return None, ("R* (const __restrict__ pointers, plain loads) has no spelling: the tool's R is what __ldg "
                          "compiles to")  # fmt: skip
    moved = [f"{o}={'S/G' if sp == 'S/G-bbox' else sp}" for o, sp in spaces if sp != "G"]
    windows = [int(x.removeprefix("windows=")) for x in variant.split(";")[1:] if x.startswith("windows=")]
    if windows and traced is not None and measured is not None:
        windows = [w * traced["W"] // measured["W"] for w in windows]
        if min(windows) < 1:
            return None, "a staged variant whose tiles are wider than the traced matrix (W halved until it holds)"
    return ",".join(moved) + "".join(f";windows={w}" for w in windows), ""


def _staging_options(generator: str, size: dict[str, int], block: list[int], placement: str) -> tuple:
    """The staging options the tool tries on the H100 for staged ``placement`` of the generator's trace."""
    import traces
    from placement.gpu import get_gpu
    from placement.placements import check, parse_placement
    from placement.staging import StagingFacts
    from traces import generators

    cols, info = generators.generate(generator, list(size.values()), block)
    tr = traces.Trace(**cols, info=info)
    return check(info, get_gpu("h100"), parse_placement(placement, info), StagingFacts(tr)).staging.options


def _tool_pads(generator: str, size: dict[str, int], block: list[int], placement: str) -> bool:
    """Whether the tool's own choice for staged ``placement`` pads a tile's rows (``traces.staging.best_pad``). The
    H100's staged variants were written from the tool's advice of November 2026, which never padded: where the
    tool now would, their placements say ``;pad=0``, the code measured."""
    return any(t[3] for o in _staging_options(generator, size, block, placement) for t in o.tiles)


def _staged_tiles(generator: str, size: dict[str, int], block: list[int], placement: str) -> list[tuple[int, int]]:
    """(windows, bytes of the staged tiles per block) of each window count the tool tries for a staged placement."""
    return [(o.windows, sum(t[1] for t in o.tiles)) for o in _staging_options(generator, size, block, placement)]


def h100_suite(data: Path) -> str:
    """The H100 variants of ``h100-placements/`` as one entry per (kernel, size, block).

    Each entry is the generator's trace of the sample (every array global) with the placements the
    measured variant codes stand for, and as measured_ns the median of ``med_us`` over the data's
    runs (two runs: their mean; variants-extra.csv: one run). A staged variant (S/G) is kept where its
    measured shared bytes per block equal the tiles the tool stages (at one of the window counts it
    tries) at the measured size, or, for a size whose trace does not hold, as at the largest measured
    size of its kind (kernel, block, non-scaled size parameters) whose trace does (a tile can grow with
    the size: matvec's x, matmul's strips): conv2d_channels' S/G-bbox at 128^2 is the tool's one-window
    S/G, its per-channel S/G of 3 channels is none of the tool's window counts.
    """
    rows, order = _h100_measured(data)
    groups: dict[tuple, list[str]] = {}
    for kernel, size, block, variant in order:
        groups.setdefault((kernel, size, block), []).append(variant)
    verdicts: dict[tuple, tuple[bool, str]] = {}

    def check(kernel: str, at: dict[str, int], block: str, staged: str, smem: int) -> tuple[bool, str]:
        key = (kernel, tuple(at.items()), block, staged, smem)
        if key not in verdicts:
            tried = _staged_tiles(H100_KERNELS[kernel][0], at, _block(kernel, block), staged)
            where = ", ".join(f"{k}={v}" for k, v in at.items())
            tool = " or ".join(f"{w} window{'s' if w > 1 else ''} of {b} B" for w, b in tried)
            verdicts[key] = (
                any(b == smem for _, b in tried),
                f"{kernel} {staged}, block {block}, {where}: {smem} B measured; the tool stages {tool}",
            )
        return verdicts[key]

    def staged_ok(kernel: str, size: str, block: str, variant: str, placement: str) -> tuple[bool, str]:
        """At the measured size where its trace holds, else as at the largest measured size of the same kind
        (kernel, block, non-scaled parameters) whose trace holds: a tile can grow with the size (matvec's x)."""
        gen, _, shape = H100_KERNELS[kernel]
        sz = _size(size)
        head, _, opts = placement.partition(";")
        staged = ",".join(x for x in head.split(",") if "=S/" in x) + (f";{opts}" if opts else "")
        if trace_rows(gen, sz) <= MAX_TRACE_ROWS:
            return check(kernel, sz, block, staged, int(rows[(kernel, size, block, variant)][0]["smem_bytes"]))
        like = [(s, v) for (k, s, b), vs in groups.items() for v in vs
                if k == kernel and b == block and h100_placement(k, v)[0] == placement.removesuffix(";pad=0")
                and all(_size(s)[p] == sz[p] for p in shape) and trace_rows(gen, _size(s)) <= MAX_TRACE_ROWS]  # fmt: skip
        if not like:
            return check(
                kernel,
                traced_size(kernel, sz),
                block,
                staged,
                int(rows[(kernel, size, block, variant)][0]["smem_bytes"]),
            )
        s, v = max(like, key=lambda x: trace_rows(gen, _size(x[0])))
        return check(kernel, _size(s), block, staged, int(rows[(kernel, s, block, v)][0]["smem_bytes"]))

    kept = left = 0
    left_out: dict[str, set[str]] = {}
    facts: list[str] = []
    entries: list[str] = []
    for (kernel, size, block), variants in groups.items():
        gen, _, _ = H100_KERNELS[kernel]
        sz = _size(size)
        tsz = traced_size(kernel, sz)
        blk = _block(kernel, block)
        places, times, notes, used = [], [], [], []
        for v in variants:
            rs = rows[(kernel, size, block, v)]
            p, why = h100_placement(kernel, v, tsz, blk, sz)
            if p is not None and "=S/" in p and ";windows=" not in p and _tool_pads(gen, tsz, blk, p):
                p += ";pad=0"
            if p is not None and "=S/" in p:
                ok, fact = staged_ok(kernel, size, block, v, p)
                if not ok:
                    p, why = None, STAGING_MISMATCH
                    if fact not in facts:
                        facts.append(fact)
            if p is None:
                left += 1
                left_out.setdefault(why, set()).add(f"{kernel} {v}")
                continue
            if p in places:
                raise ValueError(f"h100: {kernel} {size} {block}: {v} and {used[places.index(p)]} are both {p!r}")
            kept += 1
            places.append(p)
            used.append(v)
            times.append(round(statistics.median(float(r["med_us"]) for r in rs) * 1e3, 1))
            if v == "tiled":
                notes.append(f"{p}: matmul_tiled.cu (Kirk & Hwu), the textbook tiling")
            if "S/G-bbox" in v:
                notes.append(f"{p}: the measured {v}")
        if "" not in places:
            raise ValueError(f"h100: {kernel} {size} {block}: no sample (all-G) variant measured")
        runs = sorted({r["file"] for v in used for r in rows[(kernel, size, block, v)]})
        runs_said = "the two runs" if list(runs) == sorted(H100_RUNS) else " and ".join(runs)
        tag = "-".join(str(x) for x in sz.values())
        eid = f"{kernel}-{tag}-b{'x'.join(map(str, blk))}"
        where = "; ".join(dict.fromkeys(notes))
        launch = None
        if tsz == sz:
            how = f"traced at the measured size ({trace_rows(gen, tsz):,} rows)"
        else:
            t = ";".join(f"{k}={v}" for k, v in tsz.items())
            how = f"traced at {t} ({trace_rows(gen, tsz):,} rows; the measured size has {trace_rows(gen, sz):,}), "
            launch = launch_blocks(kernel, sz, blk)
            if launch is None:
                how += f"{RATIOS_ONLY}: measured_ns are the measured size's, unscaled"
            else:
                how += f"{launch_blocks(kernel, tsz, blk):,} of the measured launch's {launch:,} blocks (launch_ctas)"
        note = f"measured {size}, block {block}; {how}; med_us of {runs_said}" + (f"; {where}" if where else "")
        entries += [
            "[[entry]]", f'id = "{eid}"', f'generator = "{gen}"', f"size = {_toml_list(list(tsz.values()))}",
            f"block = {_toml_list(blk)}", *([f"launch_ctas = {launch}"] if launch else []),
            f"placements = {_toml_list(places)}", f"measured_ns = {_toml_list(times)}", f"note = {json.dumps(note)}", "",
        ]  # fmt: skip
    head = [
        "# The project's generator kernels measured on an NVIDIA H100 SXM (sm_90, CUDA 13.0) in every variant the",
        "# tool advises: ../shared/data/h100-placements/ (its README has the codes and the method). Written by",
        "# benchmarks/make_placement_suites.py; do not edit by hand.  Run:",
        "#     placement batch configs/suites/h100_variants.toml -o h100.parquet --workers 1",
        "#     python benchmarks/placement_accuracy.py h100.parquet",
        "#",
        "# One entry per (kernel, size, block) of variants-run1.csv / variants-run2.csv and the histogram rows of",
        '# variants-extra.csv. Variant codes -> placements: G = the sample (""), R = R (__ldg), T = T, C = C,',
        "# S/G = S/G (the tool picks its windows; matmul's at the measured windows, ;windows=K, and its tiled",
        "# kernel as the textbook tiling read in its compile-time k loop, ;windows=W/TILE;unrolled,",
        "# placement.placements.parse_placement). measured_ns: the median of med_us (30 launches, each after an L2",
        "# flush) over the two runs, i.e. their mean; one run for variants-extra.csv.",
        f"# The trace is the measured size's where it holds at most {MAX_TRACE_ROWS:,} rows; else the largest size",
        "# that does with one parameter halved (vecadd, conv1d, histogram: n; conv2d_channels: height, keeping",
        "# the row pitch; matvec: cols, keeping the grid; matmul_naive: W), said in the entry's note. Where that",
        "# trace is the same blocks, fewer (vecadd, conv1d, histogram, conv2d_channels), launch_ctas holds the",
        "# measured launch's blocks and the model scales its time to them; else (matvec, matmul_naive) the note",
        f"# is marked {RATIOS_ONLY}: its measured_ns are the measured size's, unscaled, and placement_accuracy.py",
        "# compares them only as ratios to the entry's sample (no absolute time error).",
        f"# Left out ({left} measured variants; {kept} kept):",
    ]
    for why, what in left_out.items():
        head.append(f"#   {', '.join(sorted(what))}: {why}")
        if why == STAGING_MISMATCH:
            head += [f"#     {f}" for f in facts]
    head += [
        "# and the empty kernel of variants-extra.csv (the launch + event floor, 3.9-43 us: no placements).",
        "",
        'name = "h100-variants"',
        'description = "generator kernels in every advised variant, measured on an H100 SXM"',
        'gpu = "h100"',
        "",
    ]
    print(f"h100 variants: {len(groups)} entries, {kept} variants kept, {left} left out", file=sys.stderr)
    return "\n".join(head + entries)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(ROOT / "configs" / "suites"))
    ap.add_argument(
        "--conv-cache",
        default=None,
        nargs="+",
        help="only write kerneltuner_conv_GPU.toml from these benchmarks/conv2d_kt_variants.py JSONs (runs on one GPU:"
        " each build at the mean of their times)",
    )
    ap.add_argument("--conv-gpu", default="h100", help="the GPU configuration that suite prices (default h100)")
    args = ap.parse_args(argv)
    data, out = Path(args.data), Path(args.out)
    if args.conv_cache:
        sys.path.insert(0, str(ROOT))
        from traces.errors import InputError

        path = out / f"kerneltuner_conv_{args.conv_gpu}.toml"
        try:
            text = conv_suite(data, [Path(f) for f in args.conv_cache], args.conv_gpu)
        except (SuiteInputError, InputError) as e:  # the whole suite or nothing: the file is written after
            print(f"make_placement_suites: {e}", file=sys.stderr)
            return 2
        path.write_text(text)
        print(f"wrote {path}", file=sys.stderr)
        return 0
    if not data.is_dir():
        print(f"make_placement_suites: no data folder {data}", file=sys.stderr)
        return 2
    if not out.is_dir():
        print(f"make_placement_suites: no output folder {out}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    texts: dict[str, str] = {}
    try:  # every suite is made before any is written: a file missing from the data writes nothing
        texts["gpuperfpredict_matmul.toml"], skipped = matmul_suite(data)
        texts["kerneltuner_conv_a100.toml"] = conv_suite(data)
        if (data / H100).is_dir():
            texts["h100_variants.toml"] = h100_suite(data)
        else:
            print(f"h100: no folder {data / H100}: h100_variants.toml not written", file=sys.stderr)
    except OSError as e:
        print(f"make_placement_suites: {e.filename}: cannot read: {e.strerror or e}", file=sys.stderr)
        return 2
    for s in skipped:
        print(f"matmul: left out {s}", file=sys.stderr)
    for name, text in texts.items():
        (out / name).write_text(text)
    print(f"wrote {', '.join(str(out / name) for name in texts)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    import os

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _measure import timed_main

    sys.exit(timed_main(main))  # prints wall, CPU and peak RSS of the run to stderr
