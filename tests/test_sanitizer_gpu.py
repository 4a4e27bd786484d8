"""`placement trace` on a real GPU: the host programs of benchmarks/trace_apps/ (vecadd, conv1d, matvec,
histogram, matmul_naive around benchmarks/kernels/*.cu) traced and compared with `placement bench gen` of the
same kernel, size and block (same rows per warp, same per-lane addresses after rebasing each object, same
objects). Runs only where a CUDA GPU, its driver, nvcc and the Compute Sanitizer API are present; elsewhere
only the host programs' builds are checked (with nvcc)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import traces
from placement.cli import main
from traces.sanitizer import build

APPS = Path(__file__).resolve().parent.parent / "benchmarks" / "trace_apps"
KERNELS = {
    # app: (generator, the kernel's parameters -> the generator's object names, grid, block)
    "vecadd": ("vecadd", {"arg0": "a", "arg1": "b", "arg2": "v"}, (256, 1, 1), (256, 1, 1)),
    "conv1d": ("conv1d", {"arg0": "in", "arg1": "mask", "arg2": "out"}, (256, 1, 1), (256, 1, 1)),
    "matvec": ("matvec", {"arg0": "A", "arg1": "x", "arg2": "y"}, (4, 1, 1), (256, 1, 1)),
    "histogram": ("histogram", {"arg0": "data", "arg1": "bins"}, (256, 1, 1), (256, 1, 1)),
    "matmul_naive": ("matmul_naive", {"arg0": "M", "arg1": "N", "arg2": "P"}, (8, 8, 1), (16, 16, 1)),
}


def _nvcc() -> Path:
    nvcc = build.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found (pip install nvidia-cuda-nvcc)")
    return nvcc


def _compile(tmp_path, app: str = "vecadd") -> Path:
    exe = tmp_path / f"{app}_app"
    src = APPS / f"{app}_app.cu"
    r = subprocess.run([str(_nvcc()), "-o", str(exe), str(src)], check=False, capture_output=True, text=True)
    if r.returncode and "cudart" in (r.stderr + r.stdout) and shutil.which("nvcc") is None:
        pytest.skip(f"this nvcc cannot link the CUDA runtime here: {r.stderr.strip()[-200:]}")
    assert r.returncode == 0, r.stderr
    return exe


@pytest.mark.parametrize("app", sorted(KERNELS))
def test_host_program_builds(tmp_path, app):
    assert _compile(tmp_path, app).stat().st_size > 0


def _rows(path: Path, rename: dict[str, str]) -> tuple[np.ndarray, ...]:
    """Rows as (cta, warp, object name, op, mask, rebased addresses), each warp's rows of one object and op as a
    multiset: sorted by their addresses. Not in program order: nvcc schedules an unrolled loop's loads out of
    it (matmul_naive's sm_90 build loads M[k + 9] before M[k + 8], an H100 trace, 26 Nov 2026), which the
    generator's recipe, one load a k, does not follow."""
    t = traces.read(path)
    names = {o.id: rename.get(o.name, o.name) for o in t.info.objects}
    bases = {o.id: o.base for o in t.info.objects}
    obj = np.array([names.get(int(i), "?") for i in t.obj])
    base = np.array([bases.get(int(i), 0) for i in t.obj], dtype=np.uint64)
    lanes = ((t.mask[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)
    rebased = np.where(lanes, t.addr - base[:, None], 0)
    keys = [rebased[:, lane] for lane in range(31, -1, -1)]
    order = np.lexsort((*keys, t.mask, t.op, obj, t.warp, t.cta))
    return t.cta[order], t.warp[order], obj[order], t.op[order], t.mask[order], rebased[order]


def _histogram_data(path: Path) -> None:
    """The generator's histogram input (traces/generators/textbook.py: uniform bins from its seed), as uint32."""
    from traces.generators.textbook import SEED

    np.random.default_rng([SEED, 256]).integers(0, 256, 65536).astype("<u4").tofile(path)


@pytest.mark.skipif(build.driver_problem() is not None, reason=f"no GPU here: {build.driver_problem()}")
@pytest.mark.parametrize("app", sorted(KERNELS))
def test_trace_equals_the_generator(tmp_path, capsys, app):
    gen, rename, grid, block = KERNELS[app]
    exe = _compile(tmp_path, app)
    args = []
    if app == "histogram":
        _histogram_data(tmp_path / "data.bin")
        args = [str(tmp_path / "data.bin")]
    traced, generated = tmp_path / "traced.parquet", tmp_path / "gen.parquet"
    assert main(["trace", "-o", str(traced), "--", str(exe), *args]) == 0, capsys.readouterr().err
    assert main(["bench", "gen", gen, "-o", str(generated)]) == 0
    info, ginfo = traces.read_info(traced), traces.read_info(generated)
    assert (info.grid, info.block) == (grid, block) == (ginfo.grid, ginfo.block)
    assert sorted(rename.get(o.name, o.name) for o in info.objects if o.space == "global") == sorted(
        o.name for o in ginfo.objects if o.space == "global"
    )
    sizes = {o.name: o.size for o in ginfo.objects}
    assert {rename[o.name]: o.size for o in info.objects if o.name in rename} == {n: sizes[n] for n in rename.values()}
    a = _rows(traced, rename)
    b = _rows(generated, {})
    for x, y, what in zip(a, b, ("cta", "warp", "object", "op", "mask", "rebased addresses")):
        assert np.array_equal(x, y), what
