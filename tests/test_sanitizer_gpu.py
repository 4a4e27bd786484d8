"""`placement trace` on a real GPU: benchmarks/trace_apps/vecadd_app.cu traced and compared with
`placement bench gen vecadd` of the same size and block (same rows per warp, same per-lane addresses after
rebasing each object, same objects). Runs only where a CUDA GPU, its driver, nvcc and the Compute Sanitizer
API are present; elsewhere only the host program's build is checked (with nvcc)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import traces
from placement.cli import main
from traces.sanitizer import build

APP = Path(__file__).resolve().parent.parent / "benchmarks" / "trace_apps" / "vecadd_app.cu"


def _nvcc() -> Path:
    nvcc = build.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found (pip install nvidia-cuda-nvcc)")
    return nvcc


def _compile(tmp_path) -> Path:
    exe = tmp_path / "vecadd_app"
    r = subprocess.run([str(_nvcc()), "-o", str(exe), str(APP)], check=False, capture_output=True, text=True)
    if r.returncode and "cudart" in (r.stderr + r.stdout) and shutil.which("nvcc") is None:
        pytest.skip(f"this nvcc cannot link the CUDA runtime here: {r.stderr.strip()[-200:]}")
    assert r.returncode == 0, r.stderr
    return exe


def test_host_program_builds(tmp_path):
    assert _compile(tmp_path).stat().st_size > 0


def _rows(path: Path, rename: dict[str, str]) -> tuple[np.ndarray, ...]:
    """Rows as (cta, warp, object name, op, mask, rebased addresses), sorted by all but the addresses."""
    t = traces.read(path)
    names = {o.id: rename.get(o.name, o.name) for o in t.info.objects}
    bases = {o.id: o.base for o in t.info.objects}
    obj = np.array([names.get(int(i), "?") for i in t.obj])
    base = np.array([bases.get(int(i), 0) for i in t.obj], dtype=np.uint64)
    lanes = ((t.mask[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool)
    rebased = np.where(lanes, t.addr - base[:, None], 0)
    order = np.lexsort((t.op, obj, t.warp, t.cta))
    return t.cta[order], t.warp[order], obj[order], t.op[order], t.mask[order], rebased[order]


@pytest.mark.skipif(build.driver_problem() is not None, reason=f"no GPU here: {build.driver_problem()}")
def test_vecadd_trace_equals_the_generator(tmp_path, capsys):
    exe = _compile(tmp_path)
    traced, generated = tmp_path / "traced.parquet", tmp_path / "gen.parquet"
    assert main(["trace", "-o", str(traced), "--", str(exe)]) == 0, capsys.readouterr().err
    assert main(["bench", "gen", "vecadd", "-o", str(generated)]) == 0
    info = traces.read_info(traced)
    assert (info.grid, info.block) == ((256, 1, 1), (256, 1, 1))
    assert sorted(o.name for o in info.objects) == ["arg0", "arg1", "arg2"]
    assert {o.name: o.size for o in info.objects} == {"arg0": 262144, "arg1": 262144, "arg2": 262144}
    a = _rows(traced, {"arg0": "a", "arg1": "b", "arg2": "v"})
    b = _rows(generated, {})
    for x, y, what in zip(a, b, ("cta", "warp", "object", "op", "mask", "rebased addresses")):
        assert np.array_equal(x, y), what
