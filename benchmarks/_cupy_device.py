"""The command line, the device and the launch timing of the GPU microbenchmarks (atomic_contention.py,
l1_wavefronts.py, address_issue.py), through CuPy."""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Callable


def microbenchmark_args(doc: str, iters: int, iters_help: str) -> argparse.Namespace:
    """``--iters`` (default ``iters``) and ``--repeat`` (timed launches per pattern, default 5), parsed."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--iters", type=int, default=iters, help=f"{iters_help} (default {iters})")
    ap.add_argument("--repeat", type=int, default=5, help="timed launches per pattern; medians (default 5)")
    return ap.parse_args()


def cupy_device(script: str):
    """(the cupy module, the device's properties, its name) of device 0; where CuPy, a driver or a GPU is missing,
    None after one line on stderr naming ``script`` (the caller exits 2)."""
    try:
        import cupy as cp

        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device(0).id)
    except Exception as exc:  # noqa: BLE001 - no CuPy, no driver, no GPU (CuPy raises several kinds): one line
        print(f"{script}: no CUDA GPU through CuPy ({type(exc).__name__}: {exc})", file=sys.stderr)
        return None
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return cp, props, name


def median_launch_ms(cp, fn, grid: int, block: int, args: tuple, repeat: int,
                     before: Callable[[], object] | None = None) -> float:  # fmt: skip
    """The median of ``repeat`` launches of ``fn`` (``grid`` x ``block`` threads, arguments ``args``) timed with CUDA
    events, in ms, after one untimed warm-up launch (the kernel loaded, the data in the caches); ``before`` runs
    ahead of each timed launch, outside its events (a counter reset)."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    fn((grid,), (block,), args)
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        start.record()
        fn((grid,), (block,), args)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)
