"""`placement calibrate` without a GPU: the missing pieces are one line and exit 2; the
runner reports and skips a benchmark that fails; the CUDA sources compile with nvcc.

What awaits a GPU (the benchmarks themselves) is not run here: no machine of this
project's tests has one.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import numpy as np
import pytest

from placement.calibrate import benchmarks, runner
from placement.calibrate.analysis import Stat
from placement.calibrate.benchmarks import (
    BENCHMARKS,
    Benchmark,
    Result,
    random_cycle,
    walk_footprints,
)
from placement.calibrate.measurements import Device
from placement.gpu import get_gpu

KERNELS = Path(runner.__file__).resolve().parent / "kernels"


def one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, err
    return err


def test_without_the_extra(tmp_path, run_cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # as where the extra is not installed (this machine's case too)
    code, out, err = run_cli("calibrate", "-o", tmp_path / "gpu.toml")
    assert code == 2 and out == ""
    line = one_line(err)
    assert line.startswith("placement calibrate: error: the optional extra 'gpu' is not installed")
    assert "pip install 'gpu-placement[gpu]'" in line and "pip install '.[gpu]'" in line
    assert not (tmp_path / "gpu.toml").exists()


class FakeCudaError(RuntimeError):
    def __init__(self, status, text):
        super().__init__(text)
        self.status = status


def fake_cupy(count=None, error=None, hip=False):
    """A stand-in for CuPy: the library is there, the driver or the GPU is not."""

    def get_device_count():
        if error is not None:
            raise error
        return count

    rt = types.SimpleNamespace(getDeviceCount=get_device_count, is_hip=hip)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=rt))


@pytest.mark.parametrize("cupy, libcuda, message", [
    (fake_cupy(count=0), True, "no CUDA GPU found"),
    (fake_cupy(error=FakeCudaError(100, "cudaErrorNoDevice: no CUDA-capable device is detected")), True, "no CUDA GPU found"),
    (fake_cupy(error=FakeCudaError(35, "cudaErrorInsufficientDriver: CUDA driver version is insufficient")), False,
     "no NVIDIA driver (libcuda cannot be loaded); install the NVIDIA driver"),
    (fake_cupy(error=FakeCudaError(35, "cudaErrorInsufficientDriver: CUDA driver version is insufficient")), True,
     "the NVIDIA driver is too old"),
    (fake_cupy(count=1, hip=True), True, "built for ROCm"),
])  # fmt: skip
def test_library_present_but_no_gpu(tmp_path, run_cli, monkeypatch, cupy, libcuda, message):
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(runner, "_libcuda_loadable", lambda: libcuda)
    code, out, err = run_cli("calibrate", "-o", tmp_path / "gpu.toml", "--quick")
    assert code == 2 and out == ""
    assert message in one_line(err)


def test_device_index_out_of_range(tmp_path, run_cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(count=1))
    code, _, err = run_cli("calibrate", "-o", tmp_path / "gpu.toml", "--device", "3")
    assert code == 2 and "--device 3: there is 1 GPU (0)" in one_line(err)


def test_bad_output_or_base_before_the_gpu(tmp_path, run_cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    code, _, err = run_cli("calibrate", "-o", tmp_path / "no" / "gpu.toml")
    assert code == 2 and "does not exist" in one_line(err)
    code, _, err = run_cli("calibrate", "-o", tmp_path / "gpu.toml", "--base", "no-such-gpu")
    assert code == 2 and "unknown GPU 'no-such-gpu'" in one_line(err)


# --- the runner with a fake device ---------------------------------------------------------


class FakeDevice:
    info = Device("NVIDIA H100 80GB HBM3", 0, (9, 0), 132, "580.159.04", "13.0", 52428800)
    released = False

    def release(self):
        self.released = True


def good(dev, ctx):
    r = Result()
    r.add("l2_latency", [290.0, 291.0, 289.5], "cycles", "fake: L2 hit")
    return r


def broken(dev, ctx):
    raise RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")


def test_a_failing_benchmark_is_reported_and_skipped(tmp_path, run_cli, monkeypatch):
    dev = FakeDevice()
    monkeypatch.setattr(runner, "open_device", lambda index: dev)
    monkeypatch.setattr(benchmarks, "BENCHMARKS", (Benchmark("good", "a fake", (1, 1), good),
                                                   Benchmark("broken", "a fake that fails", (1, 1), broken)))  # fmt: skip
    out = tmp_path / "gpu.toml"
    code, stdout, err = run_cli("calibrate", "-o", out, "--json")
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["skipped"] == [
        {
            "benchmark": "broken",
            "reason": "RuntimeError: cudaErrorIllegalAddress: an illegal memory access was encountered",
        }
    ]
    assert doc["measured"]["l2_latency"]["value"] == 290.0 and doc["measured"]["l2_latency"]["n"] == 3
    assert dev.released
    data = tomllib.loads(out.read_text())
    base = get_gpu("h100")  # the detected name's catalog entry: the bundled h100.toml
    assert data["caches"]["l2_latency"] == 290.0
    assert data["caches"]["l1_latency"] == base.caches.l1_latency  # not measured: the base's, not a guess
    assert data["calibration"]["skipped"] == [
        "broken: RuntimeError: cudaErrorIllegalAddress: an illegal memory access was encountered"
    ]
    # the text summary names the skip too
    code, stdout, err = run_cli("calibrate", "-o", out)
    assert code == 0 and "skipped broken: RuntimeError" in stdout and f"wrote {out}" in stdout


def test_a_device_outside_the_catalog_needs_a_base(tmp_path, run_cli, monkeypatch):
    dev = FakeDevice()
    dev.info = Device("Some Future GPU", 0, (12, 0), 10)
    monkeypatch.setattr(runner, "open_device", lambda index: dev)
    monkeypatch.setattr(benchmarks, "BENCHMARKS", (Benchmark("good", "a fake", (1, 1), good),))
    code, _, err = run_cli("calibrate", "-o", tmp_path / "gpu.toml")
    assert code == 2 and "'Some Future GPU' is not in the GPU catalog; give --base NAME" in one_line(err)
    code, _, err = run_cli("calibrate", "-o", tmp_path / "gpu.toml", "--base", "rtx5090")
    assert code == 0, err
    assert tomllib.loads((tmp_path / "gpu.toml").read_text())["calibration"]["base"] == "rtx5090"


def test_repetitions_stop_at_the_budget_but_keep_three():
    ctx = runner.Context(base=None, quick=True, deadline=0.0)  # the budget is already spent
    assert list(ctx.repetitions(10)) == [0, 1, 2]
    ctx.deadline = float("inf")
    assert list(ctx.repetitions(5)) == [0, 1, 2, 3, 4]


def test_budgets_fit_the_promises():
    # the command promises under a minute with --quick and under ten without (issue 31)
    quick = sum(b.budget[0] for b in BENCHMARKS)
    full = sum(b.budget[1] for b in BENCHMARKS)
    assert quick <= 50 and full <= 480, (quick, full)
    assert len({b.name for b in BENCHMARKS}) == len(BENCHMARKS)


def test_walk_helpers():
    nxt = random_cycle(__import__("numpy").random.default_rng(3), 1000)
    seen, j = set(), 0
    for _ in range(1000):
        seen.add(j)
        j = int(nxt[j])
    assert j == 0 and len(seen) == 1000  # one cycle through every node
    f = walk_footprints(2048, 1 << 20, 1.15, 128)
    assert f[0] == 2048 and f[-1] == 1 << 20 and all(f % 128 == 0) and all(f[1:] > f[:-1])
    assert all(f[1:] <= f[:-1] * 1.15 + 128)  # the step, give or take the rounding to whole nodes


def test_stat_describe():
    assert Stat(39.6, 0.0, 1).describe("cycles") == "one measurement"


# --- the CUDA sources --------------------------------------------------------------------


def test_kernels_compile_with_nvcc(tmp_path):
    """Every kernel source compiles for sm_90 (NVRTC compiles them on the GPU's machine; nvcc
    here catches syntax errors), and every kernel the benchmarks ask for is in its module."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed (the CUDA toolkit): the kernel sources are not compiled here")
    sources = sorted(KERNELS.glob("*.cu"))
    one = tmp_path / "all.cu"
    one.write_text("".join(f'#include "{p}"\n' for p in sources))
    ptx = tmp_path / "all.ptx"
    r = subprocess.run([nvcc, "-arch=sm_90", "--ptx", "-std=c++17", f"-I{KERNELS}", "-o", str(ptx), str(one)],
                       capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    entries = set(re.findall(r"\.entry\s+(\w+)", ptx.read_text()))
    asked = re.findall(r'function\("(\w+)", (?:f")?"?([\w{}]+)', Path(benchmarks.__file__).read_text())
    for module, kernel in asked:
        assert (KERNELS / f"{module}.cu").exists(), module
        if "{" in kernel:  # f"chase_{kind}", f"issue_{op}_ilp{ilp}", f"atomic_{space}"
            pattern = re.sub(r"\{\w+\}", r"\\w+", kernel)
            assert any(re.fullmatch(pattern, e) for e in entries), kernel
        else:
            assert kernel in entries, kernel
    for kind in ("ld", "ldg", "ldcg", "tex", "const", "shared", "ptr64"):
        assert f"chase_{kind}" in entries
    assert {"empty_kernel", "spin", "address_bit_pair", "syncthreads_cost", "smem_conflict"} <= entries


def test_dfma_kernel_times_dfma_chains_as_the_benchmark_counts_them(tmp_path):
    """bench_fp64 counts FP64_CHAINS results a thread an iteration: the kernel's chains are that many, and its SASS
    (sm_86, where the units give 2 results a clock) issues them as DFMA, a whole number of chains at a time."""
    source = (KERNELS / "issue.cu").read_text()
    assert int(re.search(r"#define FP64_CHAINS (\d+)", source).group(1)) == benchmarks.FP64_CHAINS == 8
    nvcc, cuobjdump = shutil.which("nvcc"), shutil.which("cuobjdump")
    if nvcc is None or cuobjdump is None:
        pytest.skip("nvcc or cuobjdump is not installed (the CUDA toolkit): the SASS is not read here")
    cubin = tmp_path / "issue.cubin"
    r = subprocess.run([nvcc, "-arch=sm_86", "-cubin", f"-I{KERNELS}", "-o", str(cubin), str(KERNELS / "issue.cu")],
                       capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    sass = subprocess.run([cuobjdump, "-sass", "-fun", "dfma_throughput", str(cubin)],
                          capture_output=True, text=True, timeout=120, check=True).stdout  # fmt: skip
    ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", sass)
    dfma = ops.count("DFMA")
    assert dfma >= 4 * benchmarks.FP64_CHAINS and dfma % benchmarks.FP64_CHAINS == 0, dfma
    # the only other double-precision work is the final sum of the chains, outside the timed loop's count
    assert {o for o in ops if o.startswith("D")} <= {"DFMA", "DADD", "DSETP"}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_loads_kernels_issue_the_loads_counted_under_the_l1s_rate(tmp_path, arch):
    """bench_loads counts 4 loads a thread an iteration (each kernel: one and two lines, and the quarters): nvcc's
    remainder loop (one iteration) issues 4, its unrolled loop 16 at distinct addresses, and the unrolled loop's
    instructions over its loads and the 4 schedulers give an issue bound under 0.75 cycles a load and SM (44
    instructions for 16 loads on sm_80 and sm_90), below the 1.15 cycles that the H200 measured, so the figure is the
    L1's rate and not the loop's issue."""
    from _kernel_launches import sass_of

    fns = sass_of(tmp_path, (KERNELS / "readonly.cu").read_text(), arch)  # no #include
    for kernel, timed in (("ldg32", "LDG.E"), ("ldg_nc32", "LDG.E.CONSTANT"), ("ldg_quarters", "LDG.E")):
        f = fns[kernel]
        blocks: dict[int, list[int]] = {}
        for i, o in enumerate(f.opcodes):
            if o.startswith("LDG"):
                assert o == timed, (kernel, o)
                blocks.setdefault(int(f.block[i]), []).append(i)
        assert sorted(len(v) for v in blocks.values()) == [4, 16], (kernel, blocks)
        unrolled = next(v for v in blocks.values() if len(v) == 16)
        assert len({f.operands[i].split(",", 1)[1].strip() for i in unrolled}) == 16, kernel  # no load twice
        body = int(np.count_nonzero(f.block == f.block[unrolled[0]]))
        assert body / 16 / 4 < 0.75, (kernel, body)


def test_ldg_quarters_differ_in_the_banks_alone():
    """bench_loads' two ldg_quarters runs (L1_QUARTERS): each 8 lanes read 8 words, quarter j `step` x j words after
    the first (the kernel's lane word, read from its source). At 32 they read the same 8 words of 4 lines, at 40 word
    8j of line j: four lines and four sectors each, bank-conflict degree 4 and 1 by cachesim's rule."""
    from cachesim._coalesce_kernels import bank_conflict_degree, lines_touched

    source = (KERNELS / "readonly.cu").read_text()
    assert "LINES_BODY(PLAIN_LOAD, (lane & 7u) + (lane >> 3) * shift)" in source
    assert dict(benchmarks.L1_QUARTERS) == {"same": 32, "apart": 40}
    words, counts = np.empty(32 * 16, np.uint64), np.empty(32, np.int64)
    lines, smasks = np.empty(64, np.uint64), np.empty(64, np.uint64)
    full, seen = np.uint32(0xFFFFFFFF), {}
    for name, step in benchmarks.L1_QUARTERS:
        row = np.array([4 * ((lane & 7) + (lane >> 3) * step) for lane in range(32)], np.uint64) + np.uint64(4096)
        k = lines_touched(full, row, 4, 7, 5, lines, smasks)
        sectors = sum(bin(int(m)).count("1") for m in smasks[:k])
        seen[name] = (k, sectors, bank_conflict_degree(full, row, 4, 32, 4, words, counts))
    assert seen == {"same": (4, 4, 4), "apart": (4, 4, 1)}
    # the last word a quarter-load reads, (the mask's last line) + 96 + 7 + 3 x 40, is inside the host's buffer
    assert "dev.zeros(TEX_WORDS + 128, np.uint32)" in Path(benchmarks.__file__).read_text()
    assert (benchmarks.TEX_WORDS - 128) + 96 + 7 + 3 * 40 < benchmarks.TEX_WORDS + 128


def test_kernels_compile_with_nvrtc_as_the_runner_gives_them():
    """Where the extra is installed, NVRTC (what CuPy compiles with) takes each self-contained
    source the runner builds (common.cuh written in); no GPU is needed to compile."""
    nvrtc = pytest.importorskip(
        "cupy_backends.cuda.libs.nvrtc", reason="the optional extra 'gpu' (CuPy) is not installed"
    )
    for path in sorted(KERNELS.glob("*.cu")):
        source = runner.kernel_source(path.stem)
        assert '#include "common.cuh"' not in source
        prog = nvrtc.createProgram(source, path.name, (), ())
        try:
            nvrtc.compileProgram(prog, ["-std=c++17", "--gpu-architecture=compute_90"])
        except Exception as exc:  # noqa: BLE001  (any NVRTC error: the log says where)
            pytest.fail(f"{path.name}: {exc}\n{nvrtc.getProgramLog(prog)}")


def test_an_output_onto_the_bundled_base_is_refused(capsys):
    """``-o configs/gpus/k80.toml --base k80`` was not refused: --base was compared as the name, not its file."""
    from placement.cli import main
    from placement.gpu import gpu_dir

    target = gpu_dir() / "k80.toml"
    before = target.read_bytes()
    assert main(["calibrate", "-o", str(target), "--base", "k80"]) == 2
    assert "is an input of this run" in capsys.readouterr().err and target.read_bytes() == before
