"""A GPU (or suite) argument is a file only when it ends in .toml or names an existing regular
file; anything else is a name (issue 34: `--gpu h200` run beside a folder `h200` read the folder)."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT

EX = ROOT / "configs" / "examples"


def test_a_folder_of_the_gpus_name_does_not_hide_the_catalog(tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h200").mkdir()
    (tmp_path / "k80").mkdir()
    code, out, err = run_cli("gpus", "h200", "--json")
    assert code == 0, err
    assert json.loads(out)["name"] == "h200"
    code, out, err = run_cli("evaluate", EX / "vecadd.parquet", "--gpu", "k80", "--json")
    assert code == 0, err
    assert json.loads(out)["gpu"] == "k80"


def test_an_existing_regular_file_is_still_a_path(tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mygpu").write_bytes((ROOT / "configs" / "gpus" / "k80.toml").read_bytes())
    code, out, err = run_cli("gpus", "mygpu", "--json")
    assert code == 0, err
    assert json.loads(out)["name"] == "k80"


@pytest.mark.parametrize("name", ["", " "])
def test_an_empty_gpu_name(run_cli, name):
    """Was: ".: is a folder, expected a file" (the empty path is the current folder)."""
    code, out, err = run_cli("evaluate", EX / "vecadd.parquet", "--gpu", name)
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert "empty GPU name" in err and "is a folder" not in err


def test_a_folder_of_the_suites_name_does_not_hide_the_bundled_suite(tmp_path, monkeypatch):
    from placement.batch.suite import resolve_suite_path
    from traces.errors import InputError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "table4").mkdir()
    assert resolve_suite_path("table4") == ROOT / "configs" / "suites" / "table4.toml"
    with pytest.raises(InputError, match="empty suite name"):
        resolve_suite_path("")


def test_gpus_with_an_empty_name_is_refused(run_cli):
    """`placement gpus ''` listed the whole catalog, as if no name had been given."""
    from expect import one_line

    one_line(*run_cli("gpus", ""), "empty GPU name")
