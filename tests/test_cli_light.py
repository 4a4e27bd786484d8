"""`placement --help` and argument errors import nothing heavy (a property of the imports,
checked in a fresh interpreter through sys.modules; no timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import placement
from placement.cli import COMMANDS

HEAVY = ("numba", "llvmlite", "numpy", "pandas", "pyarrow", "ortools", "scipy", "matplotlib", "tqdm")
ROOT = str(Path(placement.__file__).resolve().parent.parent)

CHECK = """
import json, sys
from placement.cli import main
code = main(json.loads(sys.argv[1]))
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[2])))
print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
"""


def _fresh(code: str, *args: str, env: dict[str, str | None] | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a new interpreter; ``env`` entries override the environment (None: removed)."""
    full = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=full, timeout=120)


def _names() -> list[str]:
    import importlib

    return [importlib.import_module(f"placement.commands.{m}").NAME for m in COMMANDS]


@pytest.mark.parametrize(
    "argv, code",
    [(["--help"], 0), (["--version"], 0), ([], 2), (["nosuch"], 2), (["rank"], 2), (["rank", "t.parquet"], 2),
     (["rank", "t.parquet", "--gpu", "k80", "--top", "x"], 2), (["evaluate", "--queue", "nosuch"], 2)]
    + [([name, "--help"], 0) for name in _names()],
)  # fmt: skip
def test_help_and_usage_errors_import_nothing_heavy(argv, code):
    r = _fresh(CHECK, json.dumps(argv), json.dumps(HEAVY))
    result = json.loads(r.stderr.strip().splitlines()[-1])
    assert result == {"code": code, "heavy": []}, r.stderr


def test_traces_rewrite_stays_the_function_when_its_module_is_imported():
    # traces/__init__ loads its names lazily; importing the submodule traces.rewrite must not
    # replace the package's function of that name (as the eager import never did).
    r = _fresh(
        "import traces, types\n"
        "from traces.rewrite import SHARED_ALIGN\n"
        "import traces.rewrite\n"
        "from traces.rewrite import rewrite\n"
        "assert traces.rewrite is rewrite and not isinstance(traces.rewrite, types.ModuleType)\n"
        "assert traces.read is __import__('traces.io').io.read\n"
        "print('ok')"
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_wheel_warm_up_commands_parse_and_their_files_exist():
    # hatch_build.py (the wheel's numba cache) runs these; a renamed example or option would
    # only warn at build time and ship a wheel that compiles on first use.
    import ast

    from placement.cli import build_parser

    root = Path(ROOT)
    if not (root / "hatch_build.py").is_file():
        pytest.skip("placement imported from an installed wheel, not the source tree")
    tree = ast.parse((root / "hatch_build.py").read_text(encoding="utf-8"))
    (warm,) = [ast.literal_eval(n.value) for n in tree.body
               if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "WARM_UP" for t in n.targets)]  # fmt: skip
    assert {argv[0] for argv in warm} >= {"rank", "import", "bench"}
    for argv in warm:
        args = build_parser().parse_args(list(argv))
        if hasattr(args, "trace"):  # the importers' inputs the hook writes (tests/test_wheel_cache.py)
            assert (root / args.trace).is_file()


def test_a_small_rank_imports_no_solver_and_no_pandas():
    # the Quick start's rank: conv1d's 84 placements are enumerated under the surrogate
    # (search._best_k_enumerated), so OR-Tools (and the pandas it imports) stays unloaded; the trace's
    # columns come through DLPack, not Arrow's pandas conversion; no terminal, so no progress bar (tqdm).
    trace = Path(ROOT) / "configs" / "examples" / "conv1d.parquet"
    if not trace.is_file():
        pytest.skip("placement imported from an installed wheel, not the source tree")
    r = _fresh(CHECK, json.dumps(["rank", str(trace), "--gpu", "k80", "--json"]), json.dumps(HEAVY))
    result = json.loads(r.stderr.strip().splitlines()[-1])
    assert result["code"] == 0, r.stderr
    assert set(result["heavy"]) & {"ortools", "pandas", "tqdm", "matplotlib"} == set(), result
    assert {"numba", "numpy", "pyarrow"} <= set(result["heavy"])  # the check sees what the command does load
    assert json.loads(r.stdout)["ranking"]


@pytest.mark.parametrize("argv, code", [(["--version"], 0), (["nosuch"], 2)])
def test_console_exits_with_mains_code_and_objects_frozen(argv, code):
    # the console script collects less often and freezes the collector's objects before the
    # interpreter's shutdown (placement.cli.console); main alone leaves the caller's collector alone
    r = _fresh(
        "import atexit, gc, sys\n"
        "from placement.cli import console, main\n"
        "before = gc.get_threshold()\n"
        "main(['--version'])\n"
        "assert gc.get_freeze_count() == 0 and gc.get_threshold() == before\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0, gc.get_threshold()[0]))\n"
        "sys.argv = ['placement', *sys.argv[1:]]\n"
        "console()",
        *argv,
    )
    assert r.returncode == code, r.stderr
    from placement.cli import GC_YOUNG_THRESHOLD

    assert r.stdout.strip().splitlines()[-1] == f"frozen True {GC_YOUNG_THRESHOLD}"


@pytest.mark.parametrize("preset, expected", [(None, "1"), ("3", "3")])
def test_console_gives_openblas_one_thread_unless_the_user_chose(preset, expected):
    # placement.cli.BLAS_THREADS: set before numpy loads (not loaded by --version), a user's choice kept
    code = (
        "import os, sys\n"
        "from placement.cli import console\n"
        "import atexit\n"
        "atexit.register(lambda: print('blas', os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules))\n"
        "sys.argv = ['placement', '--version']\n"
        "console()"
    )
    r = _fresh(code, env={"OPENBLAS_NUM_THREADS": preset})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == f"blas {expected} False"
