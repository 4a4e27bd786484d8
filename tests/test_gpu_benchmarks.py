"""The GPU-only benchmark scripts where no GPU is: benchmarks/atomic_contention.py's kernels compile to the
instructions it says it measures (nvcc and nvdisasm, skipped without them), and benchmarks/bench_trace.py says what
is missing in one line and exits 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from traces.sanitizer import build, sass

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def test_atomic_contention_kernels_are_red_and_atomg(tmp_path):
    import atomic_contention

    nvcc, nvdisasm = build.find_nvcc(), sass.find_nvdisasm()
    if nvcc is None or nvdisasm is None:
        pytest.skip("needs nvcc and nvdisasm (pip install nvidia-cuda-nvcc nvidia-cuda-nvdisasm)")
    src, cubin = tmp_path / "ac.cu", tmp_path / "ac.cubin"
    src.write_text(atomic_contention.SOURCE)
    subprocess.run([str(nvcc), "-cubin", "-arch=sm_90", "-o", str(cubin), str(src)], check=True, capture_output=True)
    fns = sass.disassemble(cubin, nvdisasm)
    red, atom = fns["red"].opcodes, fns["atom"].opcodes
    # the result unused: a reduction, no atomic; the result summed: an atomic, no reduction
    assert any(o.startswith("REDG.E.ADD") for o in red) and not any(o.startswith("ATOMG") for o in red)
    assert any(o.startswith("ATOMG.E.ADD") for o in atom) and not any(o.startswith("REDG") for o in atom)


@pytest.mark.skipif(build.driver_problem() is None, reason="a GPU driver is here: the script would run")
def test_bench_trace_without_a_gpu_is_one_line_exit_2():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_trace.py"), "--sizes", "10"],
                       capture_output=True, text=True, cwd=ROOT, check=False)  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("bench_trace: ")
