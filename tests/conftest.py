import functools
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(Path(__file__).resolve().parent))


@functools.lru_cache(maxsize=None)
def benchmark_script(name: str):
    """benchmarks/<name>.py as a module, loaded once a test process (registered in sys.modules: dataclasses look
    their module up there), with benchmarks/ on the import path for the helpers a script imports (``_measure``,
    ...)."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def shared_data():
    """The shared real-data folder (../shared/data); skip when a fresh clone lacks it."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (a fresh clone has no ../shared)")
    return SHARED_DATA


@pytest.fixture
def run_cli(capsys):
    """Run `placement ...` in-process; return (exit code, stdout, stderr)."""
    from placement.cli import main

    def run(*argv):
        code = main([str(a) for a in argv])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def pytest_collection_modifyitems(config, items):
    """The tests marked slow first, the rest in their order: pytest-xdist hands tests out in this order, and a
    minutes-long test handed out last kept one worker busy alone (.ci/run on 2 cores at c51fee9: 17 min 48 s of
    pytest for 26 min 11 s of CPU, the last 5 minutes on one core)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
