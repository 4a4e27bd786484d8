"""The GPU side of ``placement calibrate``: the device, through CuPy, and the run of the benchmarks.

GPU access goes through one library, CuPy (``RawModule``: NVRTC compiles the sources in
``kernels/``), installed by the optional extra ``gpu`` (``pip install 'gpu-placement[gpu]'``,
from a source tree ``pip install '.[gpu]'``: CuPy for CUDA 12, with NVRTC and the CUDA
runtime from PyPI; a CUDA 13 driver runs it too). Why CuPy and not CUDA Python
(``cuda-core`` / ``cuda-bindings``): the benchmarks need, besides compiling and launching,
device arrays filled from numpy, strided writes into them, event timing, ``__constant__``
symbols (``RawModule.get_global``) and texture objects over linear memory
(``cupy.cuda.texture``). CuPy has had all of them, under a stable API, for years;
``cuda.core`` covers compiling, launching and events, but textures and constant symbols would
need raw driver calls through ``cuda.bindings`` (what the issue asks not to hand-roll), and
copies between host and device go through extra layers. CuPy caches compiled kernels on disk
(``~/.cupy/kernel_cache``), so a second run starts faster.

The library is imported only when a calibration runs (:func:`open_device`): without it,
without a driver or without a GPU the command exits 2 with one line that says which is
missing and how to install it (:class:`GpuUnavailable`).

:func:`calibrate` runs the benchmarks of :mod:`.benchmarks` in order under a progress bar
(tqdm, on stderr) that names the one running. A benchmark that fails on this GPU (a kernel
that does not compile or launch, a result the analysis cannot read) is logged and listed in
the result's ``skipped``; its values are not written (the configuration keeps the base's),
never guessed. Each benchmark has a time budget (``Benchmark.budget``, quick and full): its
repetitions stop early once the budget is spent, keeping at least ``MIN_REPS``.
"""

from __future__ import annotations

import datetime
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from traces.errors import InputError, one_line

from .measurements import Calibration, Curve, Device, Measured, Skipped

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'gpu-placement[gpu]' (from a source tree: pip install '.[gpu]')"
KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
MIN_REPS = 3
"""Repetitions a benchmark keeps even past its budget (a median and a spread need 3)."""


class GpuUnavailable(InputError):
    """No GPU to calibrate: the optional extra, the driver, NVRTC or the device is missing."""


# --- the library, the driver, the device -------------------------------------------------


def _import_cupy():
    try:
        import cupy
    except ImportError as exc:
        text = str(exc)
        if "libcuda" in text:
            raise GpuUnavailable(
                f"no NVIDIA driver (libcuda cannot be loaded: {text}); install the NVIDIA driver for the GPU"
            ) from None
        raise GpuUnavailable(f"the optional extra 'gpu' is not installed (CuPy: {text}); {INSTALL_HINT}") from None
    return cupy


def _driver_version() -> str:
    """The NVIDIA kernel driver's version (Linux), or ''."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return ""
    for word in text.split():
        if word[:1].isdigit() and word.count(".") >= 1:
            return word
    return ""


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def _libcuda_loadable() -> bool:
    """Whether the driver library (libcuda, nvcuda.dll) loads: without it the CUDA runtime
    reports cudaErrorInsufficientDriver, as for a driver that is too old."""
    import ctypes

    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll", "libcuda.dylib"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def _device_count(cp) -> int:
    rt = cp.cuda.runtime
    try:
        return int(rt.getDeviceCount())
    except Exception as exc:  # noqa: BLE001  (CuPy's CUDARuntimeError: no driver, an old driver, no device)
        text = f"{type(exc).__name__}: {exc}"
        status = getattr(exc, "status", None)
        if not _libcuda_loadable():
            raise GpuUnavailable(
                "no NVIDIA driver (libcuda cannot be loaded); install the NVIDIA driver for the GPU"
            ) from None
        if status == 35 or "InsufficientDriver" in text:
            raise GpuUnavailable(f"the NVIDIA driver is too old for this CuPy ({text}); update the driver, or install a CuPy "
                                 "for an older CUDA (pip install cupy-cuda11x)") from None  # fmt: skip
        if status == 100 or "NoDevice" in text:
            return 0
        raise GpuUnavailable(f"no NVIDIA driver ({text}); install the NVIDIA driver for the GPU") from None


def open_device(index: int = 0) -> CupyDevice:
    """The GPU ``index``, ready to run kernels; a GpuUnavailable (exit 2) naming what is missing."""
    cp = _import_cupy()
    if getattr(cp.cuda.runtime, "is_hip", False):
        raise GpuUnavailable("this CuPy is built for ROCm: placement calibrate measures NVIDIA GPUs only")
    n = _device_count(cp)
    if n == 0:
        hidden = " (CUDA_VISIBLE_DEVICES hides every GPU)" if environment_says_no_gpu() else ""
        raise GpuUnavailable(f"no CUDA GPU found{hidden}: the driver sees none; run on a machine with an NVIDIA GPU")
    if not 0 <= index < n:
        raise GpuUnavailable(f"--device {index}: there {'is 1 GPU (0)' if n == 1 else f'are {n} GPUs (0..{n - 1})'}")
    dev = CupyDevice(cp, index)
    dev.check_compiler()
    return dev


class CupyDevice:
    """One GPU through CuPy: what the benchmarks need of it, and nothing else."""

    def __init__(self, cp, index: int):
        self.cp = cp
        self.index = index
        cp.cuda.Device(index).use()
        rt = cp.cuda.runtime
        p = rt.getDeviceProperties(index)
        name = p.get("name", b"")
        name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        clock_khz = p.get("clockRate") or self._attribute(13)  # cudaDevAttrClockRate
        self.info = Device(
            name=name, index=index, cc=(int(p["major"]), int(p["minor"])), sms=int(p["multiProcessorCount"]),
            driver=_driver_version() or f"CUDA driver API {_cuda_version(rt.driverGetVersion())}",
            runtime=_cuda_version(rt.runtimeGetVersion()), l2_bytes=int(p.get("l2CacheSize", 0)),
            memory_bytes=int(p.get("totalGlobalMem", 0)), clock_mhz=float(clock_khz or 0) / 1000.0,
        )  # fmt: skip
        self.smem_per_block_optin = int(p.get("sharedMemPerBlockOptin", 0) or 49152)
        self._modules: dict[str, Any] = {}
        self._scratch = None

    def _attribute(self, attr: int) -> int:
        try:
            return int(self.cp.cuda.runtime.deviceGetAttribute(attr, self.index))
        except Exception:  # noqa: BLE001  (an attribute this CUDA does not know: reported as 0)
            return 0

    # compiling
    def check_compiler(self) -> None:
        """Compile the smallest module now: a missing NVRTC is one line, before any benchmark."""
        try:
            self.function("clock", "empty_kernel")
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            if "nvrtc" in text.lower():
                raise GpuUnavailable(
                    f"NVRTC (the CUDA runtime compiler) is missing ({one_line(text)[:200]}); {INSTALL_HINT}"
                ) from None
            raise

    def module(self, name: str):
        m = self._modules.get(name)
        if m is None:
            m = self.cp.RawModule(code=kernel_source(name), options=("-std=c++17",))
            self._modules[name] = m
        return m

    def function(self, module: str, kernel: str, *, max_l1: bool = False, dynamic_shared: int = 0):
        fn = self.module(module).get_function(kernel)
        if max_l1:
            fn.preferred_shared_memory_carveout = 0  # the largest L1 the kernel's shared memory allows
        if dynamic_shared > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = dynamic_shared
        return fn

    # memory
    def empty(self, n: int, dtype) -> Any:
        return self.cp.empty(int(n), dtype=dtype)

    def zeros(self, n: int, dtype) -> Any:
        return self.cp.zeros(int(n), dtype=dtype)

    def upload(self, a: np.ndarray) -> Any:
        return self.cp.asarray(a)

    def download(self, d) -> np.ndarray:
        return self.cp.asnumpy(d)

    def write_strided(self, buf, step: int, values: np.ndarray, offset: int = 0) -> None:
        """buf[offset + i * step] = values[i] (the nodes of a walk, ``step`` words apart)."""
        n = values.size
        buf[offset : offset + n * step : step] = self.cp.asarray(values)

    def pointer(self, d) -> int:
        return int(d.data.ptr)

    def free_bytes(self) -> int:
        return int(self.cp.cuda.runtime.memGetInfo()[0])

    def set_constant(self, module: str, symbol: str, values: np.ndarray) -> None:
        ptr = self.module(module).get_global(symbol)
        view = self.cp.ndarray(values.shape, values.dtype, ptr)
        view[...] = self.cp.asarray(values)

    def texture_u32(self, d):
        """A texture object over the uint32 device array ``d`` (tex1Dfetch<unsigned>)."""
        tex = self.cp.cuda.texture
        rt = self.cp.cuda.runtime
        ch = tex.ChannelFormatDescriptor(32, 0, 0, 0, rt.cudaChannelFormatKindUnsigned)
        res = tex.ResourceDescriptor(rt.cudaResourceTypeLinear, arr=d, chDesc=ch, sizeInBytes=int(d.nbytes))
        td = tex.TextureDescriptor(readMode=rt.cudaReadModeElementType)
        return tex.TextureObject(res, td)

    # running
    def launch(self, fn, grid, block, args, shared: int = 0) -> None:
        fn(_dim(grid), _dim(block), args, shared_mem=shared)
        self.cp.cuda.Device(self.index).synchronize()

    def time_ms(self, fn, grid, block, args, shared: int = 0, launches: int = 1) -> float:
        """Milliseconds between events around ``launches`` back-to-back launches."""
        start, end = self.cp.cuda.Event(), self.cp.cuda.Event()
        start.record()
        for _ in range(launches):
            fn(_dim(grid), _dim(block), args, shared_mem=shared)
        end.record()
        end.synchronize()
        return float(self.cp.cuda.get_elapsed_time(start, end))

    def flush_l2(self) -> None:
        """Evict the L2 by reading a clean buffer of twice its size (no dirty lines left to write back)."""
        if self._scratch is None:
            n = max(2 * self.info.l2_bytes, 64 << 20) // 16
            self._scratch = (self.zeros(n * 4, np.float32), n, self.zeros(1, np.float32))
        buf, n, sink = self._scratch
        fn = self.function("bandwidth", "bw_read")
        self.launch(fn, self.info.sms * 8, 512, (buf, np.uint64(n), sink))

    def release(self) -> None:
        self._scratch = None
        self.cp.get_default_memory_pool().free_all_blocks()


def kernel_source(name: str) -> str:
    """The source of ``kernels/NAME.cu`` with ``common.cuh`` written in where it is included:
    one self-contained text, so CuPy's on-disk kernel cache (keyed by the text) sees a change
    of the header too."""
    code = (KERNEL_DIR / f"{name}.cu").read_text()
    return code.replace('#include "common.cuh"', (KERNEL_DIR / "common.cuh").read_text())


def _dim(d) -> tuple[int, ...]:
    return tuple(int(x) for x in d) if isinstance(d, (tuple, list)) else (int(d),)


# --- running the benchmarks ---------------------------------------------------------------


@dataclass
class Context:
    """What a benchmark gets besides the device: the base configuration, the mode, the
    values measured so far, a random generator and its time budget."""

    base: Any
    """The base configuration (placement.gpu.Gpu) the values replace."""
    quick: bool
    measured: dict[str, Measured] = field(default_factory=dict)
    curves: dict[str, Curve] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(20261125))
    deadline: float = float("inf")
    address_bits: Any = None

    def time_left(self) -> float:
        return self.deadline - time.monotonic()

    def repetitions(self, n: int) -> Iterator[int]:
        """0..n-1, stopping early (after MIN_REPS) once the benchmark's budget is spent."""
        for r in range(n):
            if r >= MIN_REPS and self.time_left() <= 0:
                log.info("budget spent after %d of %d repetitions", r, n)
                return
            yield r

    def value(self, key: str) -> float | None:
        m = self.measured.get(key)
        return None if m is None else m.value


def calibrate(dev, base, quick: bool = False, progress: bool = True, benchmarks=None,
              today: Callable[[], str] | None = None) -> Calibration:  # fmt: skip
    """Run the benchmarks (default: :data:`.benchmarks.BENCHMARKS`) on ``dev`` and collect
    what they measured. A benchmark that raises is skipped with its reason."""
    from tqdm import tqdm

    from .benchmarks import BENCHMARKS

    todo = list(BENCHMARKS if benchmarks is None else benchmarks)
    ctx = Context(base=base, quick=quick)
    skipped: list[Skipped] = []
    bar = tqdm(
        todo, desc="calibrate", unit="benchmark", file=sys.stderr, disable=None if progress else True, leave=False
    )
    for b in bar:
        bar.set_description(f"calibrate: {b.name}")
        budget = b.budget[0 if quick else 1]
        start = time.monotonic()
        ctx.deadline = start + budget
        try:
            result = b.run(dev, ctx)
        except GpuUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001  (this GPU cannot run it: say so, measure the rest)
            reason = one_line(f"{type(exc).__name__}: {exc}")[:300]
            log.warning("benchmark %s skipped: %s", b.name, reason)
            skipped.append(Skipped(b.name, reason))
            continue
        spent = time.monotonic() - start
        if spent > 1.5 * budget:
            log.warning("benchmark %s took %.1f s, over its %.0f s budget", b.name, spent, budget)
        ctx.measured.update(result.measured)
        ctx.curves.update(result.curves)
        ctx.notes.extend(result.notes)
        if getattr(result, "address_bits", None) is not None:
            ctx.address_bits = result.address_bits
    bar.close()
    release = getattr(dev, "release", None)
    if release:
        release()
    date = today() if today else datetime.date.today().isoformat()
    return Calibration(dev.info, date, quick, dict(ctx.measured), dict(ctx.curves), tuple(skipped), tuple(ctx.notes),
                       ctx.address_bits)  # fmt: skip


def environment_says_no_gpu() -> bool:
    """CUDA_VISIBLE_DEVICES set to nothing or -1 hides every GPU (said in the error)."""
    v = os.environ.get("CUDA_VISIBLE_DEVICES")
    return v is not None and v.strip() in ("", "-1")
