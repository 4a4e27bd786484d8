"""CUDA kernels seen from the tests without a GPU: a source's SASS as nvcc and nvdisasm give it, and each launch's
arguments held against the kernel's C parameters (tests/test_gpu_benchmarks.py, test_calibrate_cli.py,
test_calibrate_fake_gpu.py). Not used by the library."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from traces.sanitizer import build, sass

C_SCALARS = {"int": np.int32, "unsigned": np.uint32, "long long": np.int64, "unsigned long long": np.uint64,
             "float": np.float32, "double": np.float64}  # fmt: skip
"""The numpy scalar a launch must pass for each C parameter type: CuPy passes a scalar by its own dtype, so one of
another width reaches the GPU as other bits."""


def sass_of(tmp_path, source: str, arch: str, *flags: str) -> dict:
    """The functions of ``source`` compiled for ``arch`` (nvcc -cubin) as nvdisasm lists them; skips without
    either tool."""
    nvcc, nvdisasm = build.find_nvcc(), sass.find_nvdisasm()
    if nvcc is None or nvdisasm is None:
        pytest.skip("needs nvcc and nvdisasm (pip install nvidia-cuda-nvcc nvidia-cuda-nvdisasm)")
    src, cubin = tmp_path / "k.cu", tmp_path / "k.cubin"
    src.write_text(source)
    subprocess.run([str(nvcc), "-cubin", f"-arch={arch}", *flags, "-o", str(cubin), str(src)], check=True,
                   capture_output=True)  # fmt: skip
    return sass.disassemble(cubin, nvdisasm)


def kernel_params(source: str) -> dict[str, list[str]]:
    """Each ``extern "C"`` kernel of ``source``: its parameters' C types (``__restrict__`` left out)."""
    out = {}
    for name, params in re.findall(r'extern "C" __global__ void (\w+)\(([^)]*)\)', source):
        out[name] = [" ".join(w for w in p.split()[:-1] if w != "__restrict__") for p in params.split(",") if p.strip()]
    return out


def check_args(kernel, types: list[str], args, raw_addresses: bool = False) -> None:
    """``args`` as a kernel of parameter ``types`` takes them: their count, an array for each pointer (or, with
    ``raw_addresses``, a 64-bit device address), the texture object (a ("texture", buffer) tuple) for a texture, and
    each scalar's numpy type."""
    assert len(args) == len(types), (kernel, types, args)
    for t, a in zip(types, args, strict=True):
        if "*" in t:
            assert isinstance(a, np.ndarray) or (raw_addresses and type(a) is np.uint64), (kernel, t, a)
        elif t == "cudaTextureObject_t":
            assert isinstance(a, tuple) and a[0] == "texture", (kernel, t, a)
        else:
            assert type(a) is C_SCALARS[t], (kernel, t, type(a))
