"""Finding the tools `placement trace` needs, and building the injection library on first use.

The library (``inject.cpp``) and its device callbacks (``patches.cu``, a fatbin for every GPU
architecture the nvcc at hand compiles for) are built with nvcc from PATH (or ``$CUDA_HOME/bin``)
or the pip package ``nvidia-cuda-nvcc``, against the headers and ``libsanitizer-public.so`` of
the pip package ``nvidia-cuda-sanitizer-api`` (or a CUDA toolkit's ``compute-sanitizer``), into
a per-user cache keyed by the sources' hash and the CUDA version
(``~/.cache/gpu-placement/sanitizer/<hash>-cuda<version>/``, ``$XDG_CACHE_HOME`` respected),
written to a temporary folder and renamed, so a killed build leaves nothing half-built.

Anything missing is an :class:`InputError` saying which and how to get it (``pip install
'gpu-placement[trace]'``); a missing driver or GPU likewise.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, one_line

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
SOURCES = ("inject.cpp", "patches.cu", "trace_state.h")
PIP_HINT = "pip install 'gpu-placement[trace]' (or pip install nvidia-cuda-sanitizer-api nvidia-cuda-nvcc)"
# Architectures the device callbacks are built for, where the nvcc at hand knows them (CUDA 13: Turing on).
ARCHS = ("75", "80", "86", "87", "89", "90", "100", "103", "110", "120", "121")


class MissingTool(InputError):
    """A tool, library or device `placement trace` needs is absent (the message says how to get it)."""


@dataclass(frozen=True)
class Toolchain:
    nvcc: Path
    sanitizer_include: Path
    sanitizer_lib: Path  # the folder holding libsanitizer-public.so
    cuda_include: Path
    cuda_version: str


def _pip_roots() -> list[Path]:
    roots = []
    for base in {Path(p) for p in sys.path if p}:
        for sub in ("cu13", "cu12", "cuda_nvcc", "cuda_sanitizer_api"):
            d = base / "nvidia" / sub
            if d.is_dir():
                roots.append(d)
    return sorted(roots)


def find_nvcc() -> Path | None:
    exe = shutil.which("nvcc")
    if exe:
        return Path(exe)
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "nvcc").is_file():
        return Path(home) / "bin" / "nvcc"
    for r in _pip_roots():
        if (r / "bin" / "nvcc").is_file():
            return r / "bin" / "nvcc"
    return None


def toolkit_roots(nvcc: Path) -> list[Path]:
    """The CUDA toolkit folders ``nvcc`` may belong to: the one above its resolved path, and where that is not a
    toolkit (a wrapper script such as ``exec /usr/local/cuda-13.0/bin/nvcc "$@"`` in /usr/local/bin), the ``TOP``
    that nvcc's own ``--dryrun`` names."""
    roots = [nvcc.resolve().parent.parent]
    if not (roots[0] / "include" / "cuda.h").is_file():
        try:
            out = subprocess.run([str(nvcc), "--dryrun", "-c", "placement-probe.cu"], check=False,
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return roots
        m = re.search(r"^#\$ TOP=(.+)$", out.stdout + out.stderr, re.MULTILINE)
        if m:
            roots.append(Path(m.group(1).strip()).resolve())
    return roots


def find_sanitizer(nvcc: Path | None = None) -> tuple[Path, Path] | None:
    """(include folder, library folder) of the Compute Sanitizer API."""
    cands = [r / "compute-sanitizer" for r in _pip_roots()]
    if nvcc is not None:
        cands += [r / "compute-sanitizer" for r in toolkit_roots(nvcc)]
    for c in cands:
        if (c / "include" / "sanitizer.h").is_file() and (c / "libsanitizer-public.so").is_file():
            return c / "include", c
    return None


def cuda_version(nvcc: Path) -> str:
    try:
        out = subprocess.run([str(nvcc), "--version"], check=False, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise MissingTool(f"nvcc at {nvcc} does not run ({exc}); {PIP_HINT}") from None
    m = re.search(r"release (\d+\.\d+)", out)
    if not m:
        raise MissingTool(f"nvcc at {nvcc} printed no CUDA release; {PIP_HINT}")
    return m.group(1)


def find_toolchain() -> Toolchain:
    """nvcc, the sanitizer API and cuda.h, or a :class:`MissingTool` naming what is missing."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise MissingTool(
            f"nvcc not found (not on PATH, in $CUDA_HOME/bin or the pip package nvidia-cuda-nvcc); {PIP_HINT}"
        )
    san = find_sanitizer(nvcc)
    if san is None:
        raise MissingTool(f"the Compute Sanitizer API (sanitizer.h, libsanitizer-public.so) not found; {PIP_HINT}")
    cuda_h = [r / "include" for r in toolkit_roots(nvcc) + _pip_roots()]
    inc = next((c for c in cuda_h if (c / "cuda.h").is_file()), None)
    if inc is None:
        raise MissingTool(f"cuda.h not found beside nvcc ({nvcc}); {PIP_HINT}")
    return Toolchain(nvcc, san[0], san[1], inc, cuda_version(nvcc))


def sources_hash() -> str:
    h = hashlib.sha256()
    for name in SOURCES:
        h.update(name.encode() + b"\0" + (HERE / name).read_bytes())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpu-placement" / "sanitizer"


def _archs(nvcc: Path) -> list[str]:
    try:
        out = subprocess.run(
            [str(nvcc), "--list-gpu-code"], check=False, capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    known = set(re.findall(r"sm_(\d+)\b", out))
    return [a for a in ARCHS if a in known] or ["75"]


def _run(cmd: list[str]) -> None:
    log.info("%s", " ".join(cmd))
    r = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if r.returncode != 0:
        tail = one_line(r.stderr or r.stdout)[-400:]
        raise MissingTool(f"building the trace library failed ({Path(cmd[0]).name} exit {r.returncode}): {tail}")


def build(tc: Toolchain | None = None) -> tuple[Path, Path]:
    """The injection library and the device callbacks' fatbin, built once per sources and CUDA version."""
    tc = tc or find_toolchain()
    target = cache_root() / f"{sources_hash()}-cuda{tc.cuda_version}"
    lib, fatbin = target / "libplacement_trace.so", target / "patches.fatbin"
    if lib.is_file() and fatbin.is_file():
        return lib, fatbin
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        inc = ["-I", str(tc.sanitizer_include), "-I", str(tc.cuda_include), "-I", str(HERE)]
        _run([str(tc.nvcc), "-std=c++17", "-O2", "-shared", "-Xcompiler", "-fPIC", *inc, "-o", str(tmp / lib.name),
              str(HERE / "inject.cpp"), "-L", str(tc.sanitizer_lib), "-lsanitizer-public", "-ldl",
              f"-Xlinker=-rpath={tc.sanitizer_lib}"])  # fmt: skip
        gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in _archs(tc.nvcc)]
        _run([str(tc.nvcc), "--fatbin", "--keep-device-functions", "-Xptxas", "--compile-as-tools-patch", *inc,
              *gencode, "-o", str(tmp / fatbin.name), str(HERE / "patches.cu")])  # fmt: skip
        try:
            tmp.rename(target)
        except OSError:  # built meanwhile by another run
            if not (lib.is_file() and fatbin.is_file()):
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return lib, fatbin


def driver_problem() -> str | None:
    """Why no CUDA GPU can be used here (no driver, cuInit fails, no device), or None."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no NVIDIA driver (libcuda.so.1 not found): placement trace runs the program on a CUDA GPU; install the driver or run it on a GPU machine"  # fmt: skip
    rc = cuda.cuInit(0)
    if rc != 0:
        return f"the NVIDIA driver does not start (cuInit error {rc}): no usable GPU here"
    n = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0:
        return "no CUDA GPU found (cuDeviceGetCount is 0)"
    return None
