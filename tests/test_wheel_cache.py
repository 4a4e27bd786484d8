"""The wheel carries numba's cache of the kernels (hatch_build.py): its warm-up commands see
the build environment's packages, and an installed (non-editable) wheel holds the cache."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import types
from importlib import metadata
from pathlib import Path

import pytest

import placement

ROOT = Path(placement.__file__).resolve().parent.parent


def _hook_module(monkeypatch):
    """hatch_build.py imported without hatchling (the test environment need not have it:
    pip builds in an isolated environment), its base class stood in for by ``object``."""
    if not (ROOT / "hatch_build.py").is_file():
        pytest.skip("placement imported from an installed wheel, not the source tree")
    names = ["hatchling", "hatchling.builders", "hatchling.builders.hooks", "hatchling.builders.hooks.plugin"]
    for name in names:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    iface = types.ModuleType("hatchling.builders.hooks.plugin.interface")
    iface.BuildHookInterface = object
    monkeypatch.setitem(sys.modules, iface.__name__, iface)
    spec = importlib.util.spec_from_file_location("_hatch_build_under_test", ROOT / "hatch_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_warm_up_keeps_the_build_environment_on_the_path(monkeypatch, tmp_path):
    # pip's isolated build environment is on PYTHONPATH; replacing it (the bug of the
    # shipped cache that looked intermittent) hid numpy and numba from the warm-up.
    hb = _hook_module(monkeypatch)
    frontend = os.pathsep.join(["/tmp/pip-build-env-x/site", "/tmp/pip-build-env-x/normal"])
    env = hb._child_env(tmp_path, {"PYTHONPATH": frontend, "NUMBA_CACHE_DIR": "/elsewhere", "HOME": "/h"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tmp_path), *frontend.split(os.pathsep)]
    assert "NUMBA_CACHE_DIR" not in env and env["HOME"] == "/h" and env["CI"] == "1"
    assert hb._child_env(tmp_path, {})["PYTHONPATH"] == str(tmp_path)


def test_warm_up_covers_the_importers_and_the_generators(monkeypatch, tmp_path, run_cli):
    # the first `placement import accelsim` compiled for 32.8 s: the warm-up runs each importer
    # on inputs it writes, and `bench gen` on kernels that reach every generator kernel (and the
    # sanitizer importer every kernel of the record file's reader and decoder)
    from numba.core.dispatcher import Dispatcher

    from traces.generators import names

    hb = _hook_module(monkeypatch)
    importers = ("accelsim", "nvbit", "porple", "sanitizer")
    assert {("import", f) for f in importers} | {("bench", "gen")} <= {a[:2] for a in hb.WARM_UP}
    hb._importer_inputs(tmp_path / "warm-up")
    monkeypatch.chdir(tmp_path)
    for argv in hb.WARM_UP:
        if argv[0] == "import":  # the written inputs import (their kernels are the real files')
            code, out, err = run_cli(*argv, "--json")
            assert code == 0, err
            doc = json.loads(out)
            assert doc["rows"] == 12 and doc["warps"] == 4 and len(doc["objects"]) >= 2, argv
        elif argv[:2] == ("bench", "gen"):
            assert argv[2] in names()
            code, _, err = run_cli(*argv)
            assert code == 0, err
    import traces.generators._kern as kern
    import traces.generators.qtc as qtc
    import traces.generators.shoc as shoc
    import traces.sanitizer._kernels as records

    # sass_seq numbers a record file's rows by the SASS nvdisasm decodes from the traced program's cubin; the
    # warm-up's record file carries none (its build need not have nvdisasm), so `placement trace` compiles it
    # on first use. Run alone this test saw it uncompiled; in the whole suite an earlier test had compiled it.
    no_warm_up = {"sass_seq"}
    for mod in (kern, qtc, shoc, records):
        for name, v in vars(mod).items():
            if (
                isinstance(v, Dispatcher)
                and v.py_func.__module__ == mod.__name__
                and v.targetoptions.get("inline") != "always"
                and name not in no_warm_up
            ):
                assert v.signatures, f"{mod.__name__}.{name}: no warm-up command compiles it"


def _installed_from_wheel() -> metadata.Distribution:
    try:
        dist = metadata.distribution("gpu-placement")
    except metadata.PackageNotFoundError:
        pytest.skip("gpu-placement is not installed (run from the source tree)")
    direct = dist.read_text("direct_url.json")
    if direct and json.loads(direct).get("dir_info", {}).get("editable"):
        pytest.skip("an editable install ships no cache: the source tree's own __pycache__ is used")
    return dist


def test_installed_wheel_carries_the_numba_cache():
    # What `pip install .` on a fresh virtual environment ships (CI's install is one): the
    # warm-up's index and data files, one index per cached kernel module at least.
    if os.environ.get("PLACEMENT_WHEEL_NO_CACHE"):
        pytest.skip("PLACEMENT_WHEEL_NO_CACHE is set: the wheel was built without the cache")
    files = [str(f) for f in (_installed_from_wheel().files or [])]
    indexes = [f for f in files if f.endswith(".nbi")]
    assert indexes, "the installed wheel carries no numba cache (see the build's warm-up log)"
    for module in ("cachesim/_cache_kernels", "cachesim/_hierarchy_kernels", "traces/_staging_kernels"):
        stem = module.split("/")[-1]
        assert any(f.startswith(module.rsplit("/", 1)[0] + "/__pycache__/" + stem + ".") for f in indexes), module
    assert any(f.endswith(".nbc") for f in files)
