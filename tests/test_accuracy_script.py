"""benchmarks/accuracy_seed_models.py takes its GPUs from the data and refuses a GPU without usable rows."""

import shutil
from pathlib import Path

import pytest
from conftest import benchmark_script

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".." / "shared" / "data" / "gpuperfpredict" / "Apps-Gpus"


def _script():
    return benchmark_script("accuracy_seed_models")


def test_gpus_come_from_the_file_names(tmp_path):
    for name in ("vectorAdd-GTX-680.csv", "matMul_gpu-Tesla-K40.csv", "dotProd-RTX-9999.csv"):
        (tmp_path / name).write_text("x\n")
    found = _script().discover(tmp_path)
    assert sorted(found) == ["GTX-680", "RTX-9999", "Tesla-K40"]
    assert found["Tesla-K40"] == [("matMul_gpu", tmp_path / "matMul_gpu-Tesla-K40.csv")]


def test_a_gpu_without_usable_rows_is_refused(tmp_path, capsys):
    src = DATA / "vectorAdd-GTX-680.csv"
    if not src.exists():
        pytest.skip(f"{src} is absent (real data lives in ../shared/data)")
    shutil.copy(src, tmp_path / src.name)
    header = src.read_text().splitlines()[0]
    (tmp_path / "vectorAdd-GTX-999.csv").write_text(header + "\n")
    assert _script().main(["--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no usable row" in err and "GTX-999" in err


def test_empty_folder_is_refused(tmp_path, capsys):
    assert _script().main(["--data", str(tmp_path)]) == 2
    assert "holds no" in capsys.readouterr().err
