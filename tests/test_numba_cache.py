"""The cold-cache detector (traces.numba_cache) on modules of its own in a temporary folder,
the console's one-line notice when a command starts compiling them
(placement.cli.first_use_cold, traces.numba_cache.on_first_compile), and the kernel modules' digests of their imports."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from placement import cli
from traces.errors import InputError
from traces import numba_cache
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


def test_said_once_at_the_first_compile_of_the_packages_kernels(kernels):
    # numba fires "numba:compile" on a cache miss only: twice compiles (said), thrice too (not
    # said again); a kernel of a module outside the packages says nothing, and nothing is said
    # once the block is left
    name, _ = kernels
    mod = _fresh(name)
    said = []
    with numba_cache.on_first_compile(["_nbc_other_package"], lambda: said.append(1)):
        assert mod.twice(2) == 4
    assert said == []
    with numba_cache.on_first_compile([name], lambda: said.append(1)):
        assert mod.thrice(2) == 6
        assert mod.twice(2.5) == 5.0  # another signature: compiles again, said once all the same
    assert said == [1]
    with numba_cache.on_first_compile([name], lambda: said.append(2)):
        assert mod.twice(3) == 6  # compiled already: no event
    assert said == [1]
    mod.twice(True)  # a compile outside any block
    assert said == [1]


def _command_that_compiles(name, fail_first=False):
    """`placement info`'s run replaced by one that calls a kernel of ``name`` (or fails on its
    input first, as a typo in a trace's path does)."""

    def run(args):
        if fail_first:
            raise InputError(f"{args.trace}: no such file")
        _fresh(name).twice(1)
        return 0

    return run


@pytest.mark.skipif(bool(__import__("numba").config.CACHE_DIR), reason="NUMBA_CACHE_DIR is set for this run")
def test_console_says_so_when_it_compiles_and_only_then(kernels, monkeypatch, capsys):
    name, _ = kernels
    monkeypatch.setitem(cli.FIRST_USE_KERNELS, ("info", None), (name,))
    monkeypatch.setattr(numba_cache, "PACKAGES", (name,))
    monkeypatch.setattr("placement.commands.info.run", _command_that_compiles(name, fail_first=True))
    assert cli.main(["info", "no-such.parquet"], notice=True) == 2  # cold, but the input fails first
    assert capsys.readouterr().err.splitlines() == ["placement info: error: no-such.parquet: no such file"]
    monkeypatch.setattr("placement.commands.info.run", _command_that_compiles(name))
    assert cli.main(["info", "t.parquet"]) == 0  # main without the console's notice: silent
    assert capsys.readouterr().err == ""
    _fresh(name)  # a new process: twice(int64) cached by the run above, so warm now
    assert cli.main(["info", "t.parquet"], notice=True) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.skipif(bool(__import__("numba").config.CACHE_DIR), reason="NUMBA_CACHE_DIR is set for this run")
def test_console_says_so_on_a_cold_run(kernels, monkeypatch, capsys):
    name, _ = kernels
    monkeypatch.setitem(cli.FIRST_USE_KERNELS, ("info", None), (name,))
    monkeypatch.setattr(numba_cache, "PACKAGES", (name,))
    monkeypatch.setattr("placement.commands.info.run", _command_that_compiles(name))
    assert cli.main(["info", "t.parquet"], notice=True) == 0
    assert capsys.readouterr().err.splitlines() == [cli.FIRST_USE_NOTICE]


def test_first_use_cold_by_command(monkeypatch):
    parser = cli.build_parser()
    seen = []
    monkeypatch.setattr("traces.numba_cache.cold_modules", lambda mods: seen.append(tuple(mods)) or list(mods))
    args = parser.parse_args(["import", "accelsim", "x", "-o", "t.parquet"])
    assert cli.first_use_cold(args) == list(cli.FIRST_USE_KERNELS[("import", "accelsim")])
    assert seen[-1] == cli.FIRST_USE_KERNELS[("import", "accelsim")]
    assert cli.first_use_cold(parser.parse_args(["rank", "t.parquet", "--gpu", "k80"])) == list(cli._EVALUATOR)
    assert cli.first_use_cold(parser.parse_args(["import", "porple", "x", "-o", "t.parquet"])) == []
    assert cli.first_use_cold(parser.parse_args(["gpus"])) == []


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


# The digests of kernel modules' imports (traces.numba_cache.DIGEST_NAME): numba's cache sees one file.

KERNEL = """import numba

from traces.codes import K


@numba.njit(cache=True)
def k():
    return K
"""


def _package(root: Path, k: int = 1) -> None:
    """A project of one kernel module (traces.kern) that reads a constant of another (traces.codes)."""
    (root / "traces").mkdir(exist_ok=True)
    (root / "traces" / "__init__.py").write_text("")
    (root / "traces" / "codes.py").write_text(f"K = {k}\n")
    (root / "traces" / "kern.py").write_text(KERNEL)


def test_every_kernel_module_carries_its_imports_digest():
    stale = numba_cache.stale_digests(ROOT)
    assert stale == [], f"{stale}: run python -m traces.numba_cache --write"
    modules = numba_cache.kernel_modules(ROOT)
    # kernels that call other modules' kernels or read their constants
    assert {"cachesim._hierarchy_kernels", "traces._staging_kernels", "cachesim.atomics"} <= set(modules)
    # cached kernels that import nothing of the project need none
    assert "placement._dram_kernels" not in modules and "traces.importers._object_kernels" not in modules
    assert numba_cache.dependencies(ROOT, "cachesim._hierarchy_kernels") == [
        "cachesim._cache_kernels", "cachesim._coalesce_kernels", "traces._numba", "traces.codes"]  # fmt: skip


def test_digest_follows_a_dependency_and_is_written_once(tmp_path):
    _package(tmp_path)
    # keywords passed on to another decorator than numba's do not make a kernel module
    (tmp_path / "traces" / "plain.py").write_text(
        "import functools\n\nfrom traces.codes import K\n\n\n@functools.lru_cache(**{})\ndef f():\n    return K\n"
    )
    assert numba_cache.kernel_modules(tmp_path) == ["traces.kern"]
    assert numba_cache.dependencies(tmp_path, "traces.kern") == ["traces.codes"]
    assert numba_cache.written_digest(tmp_path, "traces.kern") is None
    assert numba_cache.stale_digests(tmp_path) == ["traces.kern"]
    assert numba_cache.main(["--write", str(tmp_path)]) == 0
    first = numba_cache.written_digest(tmp_path, "traces.kern")
    assert first == numba_cache.deps_digest(tmp_path, "traces.kern") and len(first) == 16
    assert numba_cache.main([str(tmp_path)]) == 0 and numba_cache.write_digests(tmp_path) == []
    (tmp_path / "traces" / "codes.py").write_text("K = 2\n")
    assert numba_cache.stale_digests(tmp_path) == ["traces.kern"]
    assert numba_cache.main([str(tmp_path)]) == 1
    assert numba_cache.write_digests(tmp_path) == ["traces.kern"]
    assert numba_cache.written_digest(tmp_path, "traces.kern") not in (None, first)
    text = (tmp_path / "traces" / "kern.py").read_text()
    assert text.count(numba_cache.DIGEST_NAME) == 1  # rewritten in place, not added again
    compile(text, "kern.py", "exec")


def test_bad_root_or_module_is_one_line_exit_2(tmp_path, capsys):
    assert numba_cache.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().endswith("not the project's root")
    _package(tmp_path)
    (tmp_path / "traces" / "codes.py").write_text("K = (\n")
    assert numba_cache.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{tmp_path / 'traces' / 'codes.py'} line ")
    assert not (tmp_path / "traces" / "kern.py").read_text().count(numba_cache.DIGEST_NAME)


def test_modules_that_import_each_other_settle(tmp_path):
    # each digest leaves out the digest lines it reads, or two kernel modules would chase each other's
    _package(tmp_path)
    (tmp_path / "traces" / "codes.py").write_text("from traces import kern\n\nK = 1\n")
    (tmp_path / "traces" / "other.py").write_text(KERNEL.replace("traces.codes import K", "traces.kern import k"))
    (tmp_path / "traces" / "kern.py").write_text(KERNEL + "\nfrom traces import other  # noqa\n")
    assert numba_cache.write_digests(tmp_path) == ["traces.kern", "traces.other"]
    assert numba_cache.stale_digests(tmp_path) == []


@pytest.mark.skipif(bool(__import__("numba").config.CACHE_DIR), reason="NUMBA_CACHE_DIR is set for this run")
def test_the_digest_line_makes_numba_compile_anew(tmp_path):
    # what the digests are for, in new processes as a user runs them: numba's cache serves the constant of
    # the first build after its module changed, until the kernel module's digest line changes
    _package(tmp_path)
    run = lambda: subprocess.run(  # noqa: E731
        [sys.executable, "-c", "from traces import kern; print(kern.k())"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)}, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert run() == "1"
    (tmp_path / "traces" / "codes.py").write_text("K = 2\n")
    assert run() == "1"  # numba's limitation: the cached build of the old constant
    numba_cache.write_digests(tmp_path)
    assert run() == "2"
