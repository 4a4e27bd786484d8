"""The cold-cache detector (traces.numba_cache) on modules of its own in a temporary folder,
and the console's one-line notice before a command whose kernels will compile
(placement.cli.first_use_notice)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from placement import cli
from traces.numba_cache import cold_modules

ROOT = Path(__file__).resolve().parents[1]
SOURCE = """
import numba


@numba.njit(cache=True)
def twice(x):
    return 2 * x


@numba.njit(cache=True)
def thrice(x):
    return 3 * x


@numba.njit
def uncached(x):
    return x
"""


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    """A module ``_nbc_<n>`` of cached kernels in a folder of its own (its __pycache__ is numba's
    cache, empty at first); returns (name, path)."""
    name = f"_nbc_{tmp_path.name}".replace("-", "_")
    path = tmp_path / f"{name}.py"
    path.write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    yield name, path
    sys.modules.pop(name, None)


def _fresh(name):
    """The module imported anew (a new process's view of it)."""
    sys.modules.pop(name, None)
    importlib.invalidate_caches()
    return importlib.import_module(name)


@pytest.mark.skipif(bool(__import__("numba").config.CACHE_DIR), reason="NUMBA_CACHE_DIR is set for this run")
def test_cold_then_warm_then_stale(kernels, capsys):
    name, path = kernels
    assert cold_modules([name]) == [name]  # nothing cached yet
    assert not list((path.parent / "__pycache__").glob("*.nbi"))  # the check wrote nothing
    mod = _fresh(name)
    assert mod.twice(3) == 6  # compiles and caches twice(int64)
    assert list((path.parent / "__pycache__").glob(f"{name}.twice-*.nbi"))
    assert cold_modules([name]) == []  # one of its kernels cached: warm (thrice compiles silently)
    _fresh(name)
    assert cold_modules([name]) == []  # as a new process sees it
    path.write_text(SOURCE + "\n# edited\n")  # another content: the index is stale
    _fresh(name)
    assert cold_modules([name]) == [name]
    assert capsys.readouterr().out == ""  # library code prints nothing


@pytest.mark.skipif(bool(__import__("numba").config.CACHE_DIR), reason="NUMBA_CACHE_DIR is set for this run")
def test_an_index_of_another_cpu_is_cold(kernels, monkeypatch):
    # a wheel built on another CPU: the index is valid (same numba, same source) but its
    # entries are keyed on the build machine's CPU, so the kernels compile
    name, _ = kernels
    mod = _fresh(name)
    mod.twice(2)
    assert cold_modules([name]) == []
    codegen = type(mod.twice.targetctx.codegen())
    monkeypatch.setattr(codegen, "magic_tuple", lambda self: ("x86_64-unknown-linux-gnu", "other-cpu", ""))
    assert cold_modules([name]) == [name]


def test_a_module_without_cached_kernels_is_never_cold(tmp_path, monkeypatch):
    (tmp_path / "_nbc_plain.py").write_text("import numba\n\n\n@numba.njit\ndef f(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert cold_modules(["_nbc_plain"]) == []
        assert cold_modules(["_nbc_no_such_module"]) == []  # no opinion, no error
    finally:
        sys.modules.pop("_nbc_plain", None)


@pytest.mark.skipif(bool(__import__("numba").config.CACHE_DIR), reason="NUMBA_CACHE_DIR is set for this run")
def test_console_says_so_only_when_cold(kernels, monkeypatch, capsys):
    name, _ = kernels
    monkeypatch.setitem(cli.FIRST_USE_KERNELS, ("info", None), (name,))
    trace = ROOT / "configs" / "examples" / "vecadd.parquet"
    assert cli.main(["info", str(trace)], notice=True) == 0
    err = capsys.readouterr().err
    assert err.splitlines() == [cli.FIRST_USE_NOTICE]
    assert cli.main(["info", str(trace)]) == 0  # main without the console's notice: silent
    assert capsys.readouterr().err == ""
    _fresh(name).twice(1)
    assert cli.main(["info", str(trace)], notice=True) == 0
    assert capsys.readouterr().err == ""


def test_first_use_notice_by_command(monkeypatch):
    parser = cli.build_parser()
    seen = []
    monkeypatch.setattr("traces.numba_cache.cold_modules", lambda mods: seen.append(tuple(mods)) or list(mods))
    args = parser.parse_args(["import", "accelsim", "x", "-o", "t.parquet"])
    assert cli.first_use_notice(args) == cli.FIRST_USE_NOTICE
    assert seen[-1] == cli.FIRST_USE_KERNELS[("import", "accelsim")]
    assert cli.first_use_notice(parser.parse_args(["rank", "t.parquet", "--gpu", "k80"])) == cli.FIRST_USE_NOTICE
    assert cli.first_use_notice(parser.parse_args(["import", "porple", "x", "-o", "t.parquet"])) is None
    assert cli.first_use_notice(parser.parse_args(["gpus"])) is None


def test_first_use_modules_hold_cached_kernels():
    # a renamed or moved kernel module would silence the notice: each named module is there
    # and has numba.njit(cache=True) functions
    from numba.core.dispatcher import Dispatcher

    for modules in cli.FIRST_USE_KERNELS.values():
        for name in modules:
            mod = importlib.import_module(name)
            cached = [v for v in vars(mod).values() if isinstance(v, Dispatcher)
                      and getattr(v._cache, "_cache_file", None) is not None]  # fmt: skip
            assert cached, name
