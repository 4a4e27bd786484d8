"""The model's cost of uncoalesced loads against gpuperfpredict's measurements: the naive matrix multiply with
its indices swapped (``matMul_gpu_uncoalesced``: each lane reads a row of M of its own) over the coalesced
one (``matMul_gpu``), both measured with nvprof on a GTX-680, a Tesla K40 and a GTX-980, sizes 256 and 512,
blocks 8, 16 and 32 (``../shared/data/gpuperfpredict``, github marcosamaris/gpuperfpredict, Datasets/).

Usage::

    python benchmarks/coalescing_accuracy.py [--data DIR] [--sizes 256,512] [--blocks 8,16,32]

Both kernels are this repository's generators (``matmul_naive``, ``matmul_naive_uncoalesced``), evaluated
with the programs' ``-Xptxas -dlcm=ca`` (their ``src/common/Makefile.common``) on the catalog's GPUs. Prints,
per (GPU, size, block), the measured time ratio uncoalesced / coalesced (medians of the runs), the predicted
one, the ratio error, and model / measured of each kernel; then the median ratio error and the signs. This is
not a placement, so it is not a ``placement batch`` suite: the two kernels are two programs. Each line also
gives nvprof's global load transactions per request of both kernels, the counter the GTX-980's times follow.

``--published`` holds the same two kernels against published measurements on Volta and Ampere instead
(:data:`PUBLISHED`: each README's GFLOP/s of its naive and coalesced kernels at 4092-4096, 32 x 32 blocks, on an
RTX A6000, a V100 and an RTX 4090),
traced at W = 512 (8.4 M rows; the measured sizes would take about 4 G), so ratios only; it needs no
``../shared/data``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "gpuperfpredict" / "Apps-Gpus"
GPUS = {"gtx680": "GTX-680", "k40": "Tesla-K40", "gtx980": "GTX-980"}
KERNELS = {"matmul_naive": "matMul_gpu", "matmul_naive_uncoalesced": "matMul_gpu_uncoalesced"}


class Published(NamedTuple):
    """One published pair: GFLOP/s of the uncoalesced naive SGEMM (a lane per row of A: each lane walks a row of
    its own, B's element broadcast) and of the coalesced one (a lane per column), both 32 x 32 blocks."""

    gpu: str
    size: int
    uncoalesced_gflops: float
    coalesced_gflops: float
    source: str

    @property
    def ratio(self) -> float:
        """Measured time of the uncoalesced kernel over the coalesced one's."""
        return self.coalesced_gflops / self.uncoalesced_gflops


PUBLISHED = (
    Published(
        "rtxa6000",
        4092,
        309.0,
        1986.5,
        "github siboehm/SGEMM_CUDA README.md (commit 06d2cf5), RTX A6000: kernel 1 (Naive, src/kernels/1_naive.cuh, "
        "blockDim(32, 32)) 309.0, kernel 2 (GMEM Coalescing) 1986.5 GFLOP/s",
    ),
    Published(
        "v100-sxm2",
        4096,
        245.7,
        2311.7,
        "github jhlee508/matmul-cuda README.md (commit 2307f68), Tesla V100 32GB (15,700 GFLOP/s peak: SXM2): kernel "
        "1 (Naive, kernels/naive_kernel.cu) 245.7, kernel 2 (GMEM Coalescing) 2311.7 GFLOP/s, both 32 x 32 blocks "
        "(src/matmul.cu, commit 4d88799)",
    ),
    Published(
        "rtx4090",
        4096,
        635.3,
        4887.4,
        "github annanyapr/Fast-CUDA-Kernels README.md (commit 60912a0), GeForce RTX 4090: Naive (GEMM/gemm_naive.cu, "
        "dim3(32, 32)) 635.3, Memory Coalesce (GEMM/gemm_memory_coalesce.cu) 4887.4 GFLOP/s, each one timed launch "
        "(repeat_times = 1, no warm-up launch)",
    ),
)
TRACED_SIZE = 512
"""W of the published pairs' traces: 256 blocks of 32 x 32, every SM of the A6000, V100 and RTX 4090 busy."""


def measured(data: Path, program: str, gpu: str, size: int, block: int) -> tuple[float, float]:
    """(median Duration in ns, median Global.Load.Transactions.Per.Request) of one program's runs."""
    import pandas as pd

    d = pd.read_csv(data / f"{program}-{GPUS[gpu]}.csv")
    d = d[(d["Input.Size"] == size) & (d["Block.X"] == block)]
    if d.empty:
        raise ValueError(f"{program}-{GPUS[gpu]}.csv: no runs of size {size}, block {block}")
    return float(d["Duration"].median()) * 1e9, float(d["Global.Load.Transactions.Per.Request"].median())


def _write_traces(folder: str, size: int, block: int) -> dict[str, str]:
    """Both kernels' traces at ``size`` and ``block`` in ``folder``: {kernel: path}."""
    from traces import generators

    paths = {k: os.path.join(folder, f"{k}.parquet") for k in KERNELS}
    for k, path in paths.items():
        generators.write(k, path, (size,), (block,))
    return paths


def _print_costs(t0: float, c0: float) -> None:
    """The run's wall and CPU time since ``t0``, ``c0`` and its peak RSS."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"wall {time.perf_counter() - t0:.1f} s, CPU {time.process_time() - c0:.1f} s, peak RSS {peak:.0f} MiB")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--sizes", default="256,512")
    ap.add_argument("--blocks", default="8,16,32")
    ap.add_argument("--published", action="store_true", help="the published Volta, Ampere and Ada pairs (PUBLISHED)")
    args = ap.parse_args(argv)
    if args.published:
        return published()
    if not args.data.is_dir():
        print(f"coalescing_accuracy: {args.data}: no such folder (../shared/data/gpuperfpredict)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    import placement

    t0, c0 = time.perf_counter(), time.process_time()
    errors, signs = [], 0
    print("gpu     size block  measured  predicted  error    model/measured (coalesced, uncoalesced)  nvprof tx/req")
    with tempfile.TemporaryDirectory() as tmp:
        for size in map(int, args.sizes.split(",")):
            for block in map(int, args.blocks.split(",")):
                paths = _write_traces(tmp, size, block)
                for gpu in GPUS:
                    try:
                        m = {k: measured(args.data, p, gpu, size, block) for k, p in KERNELS.items()}
                    except ValueError as e:
                        print(f"coalescing_accuracy: {e}", file=sys.stderr)
                        return 2
                    t = {k: placement.evaluate(paths[k], gpu, dlcm="ca").time_ns for k in KERNELS}
                    mr = m["matmul_naive_uncoalesced"][0] / m["matmul_naive"][0]
                    pr = t["matmul_naive_uncoalesced"] / t["matmul_naive"]
                    errors.append(abs(pr / mr - 1.0))
                    signs += (pr - 1.0) * (mr - 1.0) > 0
                    print(
                        f"{gpu:7s} {size:4d} {block:5d}  {mr:8.2f}  {pr:9.2f}  {100 * errors[-1]:5.1f} %  "
                        f"{t['matmul_naive'] / m['matmul_naive'][0]:5.2f}  "
                        f"{t['matmul_naive_uncoalesced'] / m['matmul_naive_uncoalesced'][0]:5.2f}"
                        f"{'':29s}{m['matmul_naive'][1]:5.1f} {m['matmul_naive_uncoalesced'][1]:5.1f}"
                    )
    print(f"median ratio error {100 * statistics.median(errors):.1f} % (mean {100 * statistics.fmean(errors):.1f} %), "
          f"sign right {signs} / {len(errors)}")  # fmt: skip
    _print_costs(t0, c0)
    return 0


def published() -> int:
    """The model's ratio of each :data:`PUBLISHED` pair against the README's, from traces at W = 512."""
    sys.path.insert(0, str(ROOT))
    import placement

    t0, c0 = time.perf_counter(), time.process_time()
    errors = []
    print("gpu        size  measured  predicted  error    predicted times at W = 512 (coalesced, uncoalesced)")
    with tempfile.TemporaryDirectory() as tmp:
        paths = _write_traces(tmp, TRACED_SIZE, 32)
        for p in PUBLISHED:
            t = {k: placement.evaluate(paths[k], p.gpu).time_ns for k in KERNELS}
            pr = t["matmul_naive_uncoalesced"] / t["matmul_naive"]
            errors.append(abs(pr / p.ratio - 1.0))
            print(f"{p.gpu:10s} {p.size:4d}  {p.ratio:8.2f}  {pr:9.2f}  {100 * errors[-1]:5.1f} %  "
                  f"{t['matmul_naive'] / 1e3:8.1f} us  {t['matmul_naive_uncoalesced'] / 1e3:8.1f} us")  # fmt: skip
    print(f"median ratio error {100 * statistics.median(errors):.1f} % over {len(errors)}")
    for p in PUBLISHED:
        print(f"  {p.gpu}: {p.source}")
    _print_costs(t0, c0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
