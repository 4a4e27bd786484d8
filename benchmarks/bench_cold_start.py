"""Cold start of the command: `--help`, the first and the second `rank`, and rank's workers.

Every figure is of a child process, median of ``--runs`` runs: wall time, CPU time
(user + system, this process's ``RUSAGE_CHILDREN`` delta across the child, which
counts the child's own worker processes too) and the child's peak RSS (``wait4``).
Wall time is noisy on a shared machine; CPU time is the figure to compare.

Rows:

- ``--help``: `placement --help` (imports nothing heavy);
- ``rank (cold)``, with ``--cold``: `placement rank configs/examples/vecadd.parquet --gpu k80`
  with an empty numba cache (``NUMBA_CACHE_DIR`` set to a new directory): every kernel
  compiles; the imported trace's rows are repeated cold too;
- ``rank (second run)``: the same command with numba's cache in place;
- ``rank (second run, bytecode cached)``, where ``PYTHONDONTWRITEBYTECODE`` is set (the row
  above then compiles the source tree's modules on every run): the same with Python's
  bytecode cached too (``PYTHONPYCACHEPREFIX`` a temporary folder), as an installed package has it;
- ``rank IMPORTED (default workers)`` / ``(--workers 1)``: rank of a ~264-row PORPLE trace
  (``--porple FILE``, default the particle-filter-sized mm_stride from /work/shared/data)
  imported with `placement import porple`, the two alternated, each first in turn; their ratio should not exceed 1;
- with ``--fresh-install``: in a new, empty venv under /tmp builds a wheel (``pip wheel``,
  which runs hatch_build.py in pip's isolated build environment), prints how many
  numba cache indexes it carries, installs it there and runs the first and the second rank there;
  before each run pair the wheel is reinstalled (``--force-reinstall --no-deps``), so
  every "first" run starts from the installed files alone;
- with ``--pool``: the figures ``placement.workers`` cites: the start of a pool of 2
  forked workers (no-op map, shutdown) and the CPU time of one exact evaluation of the
  single moves of vecadd and of the imported trace.

    python benchmarks/bench_cold_start.py [--runs 3] [--cold] [--fresh-install] [--pool] [--porple FILE]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VECADD = ROOT / "configs" / "examples" / "vecadd.parquet"
PORPLE = Path("/work/shared/data/traces/porple/mm_stride.txt")


def run_child(argv: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one child run; output discarded; a failure raises."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}\n{err.decode(errors='replace')}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, usage.ru_maxrss / 1024


def report(label: str, runs: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    med = tuple(statistics.median(r[i] for r in runs) for i in range(3))
    print(f"{label:<44} {med[0]:8.2f} {med[1]:8.2f} {med[2]:8.0f}  ({len(runs)} runs; CPU "
          f"{', '.join(f'{r[1]:.2f}' for r in runs)})", flush=True)  # fmt: skip
    return med


def header() -> None:
    print(f"{'':<44} {'wall s':>8} {'CPU s':>8} {'RSS MiB':>8}  (medians)")


def source_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def rank_argv(python: str, trace: Path, *more: str) -> list[str]:
    return [python, "-m", "placement.cli", "rank", str(trace), "--gpu", "k80", "--no-progress", *more]


def imported_trace(porple: Path, tmp: Path) -> Path | None:
    if not porple.exists():
        print(f"(no {porple}: the imported-trace rows are skipped; give --porple FILE)")
        return None
    out = tmp / f"{porple.stem}.parquet"
    run_child([sys.executable, "-m", "placement.cli", "import", "porple", str(porple), "-o", str(out)], source_env())
    return out


def bench_source(args, tmp: Path) -> None:
    py = sys.executable
    env = source_env()
    report("placement --help", [run_child([py, "-m", "placement.cli", "--help"], env) for _ in range(args.runs)])
    if args.cold:
        cold = []
        for i in range(args.runs):
            cold.append(run_child(rank_argv(py, VECADD), source_env(NUMBA_CACHE_DIR=str(tmp / f"numba-cold-{i}"))))
        report("rank vecadd (cold: empty numba cache)", cold)
    run_child(rank_argv(py, VECADD), env)  # fills the source tree's cache if needed
    report("rank vecadd (second run)", [run_child(rank_argv(py, VECADD), env) for _ in range(args.runs)])
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        # the row above compiled every module of the source tree from source; an installed
        # package (pip byte-compiles it) or a user's checkout reads cached bytecode
        pyc = source_env(PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
        pyc.pop("PYTHONDONTWRITEBYTECODE")
        run_child(rank_argv(py, VECADD), pyc)
        report(
            "rank vecadd (second run, bytecode cached)",
            [run_child(rank_argv(py, VECADD), pyc) for _ in range(args.runs)],
        )
    trace = imported_trace(args.porple, tmp)
    if trace is not None:
        run_child(rank_argv(py, trace, "--workers", "1"), env)  # its kernels in the cache
        modes = (("default workers", ()), ("--workers 1", ("--workers", "1")))
        runs = {label: [] for label, _ in modes}
        for i in range(args.runs):  # alternated, each first in turn, so that the machine's drift falls on both
            for label, more in modes if i % 2 == 0 else modes[::-1]:
                runs[label].append(run_child(rank_argv(py, trace, *more), env))
        both = {label: report(f"rank {trace.stem} ({label})", runs[label]) for label, _ in modes}
        d, one = both["default workers"], both["--workers 1"]
        print(f"{'  default / --workers 1':<44} {d[0] / one[0]:8.2f} {d[1] / one[1]:8.2f}")
        if not args.cold:
            return
        cold = {}
        for label, more in (("default workers", ()), ("--workers 1", ("--workers", "1"))):
            runs = [run_child(rank_argv(py, trace, *more), source_env(NUMBA_CACHE_DIR=str(tmp / f"nc-{label}-{i}")))
                    for i in range(args.runs)]  # fmt: skip
            cold[label] = report(f"rank {trace.stem} (cold, {label})", runs)
        d, one = cold["default workers"], cold["--workers 1"]
        print(f"{'  cold: default / --workers 1':<44} {d[0] / one[0]:8.2f} {d[1] / one[1]:8.2f}")


def bench_fresh_install(args, tmp: Path) -> None:
    # As a user does it: a new venv with nothing in it builds the wheel (pip's isolated
    # build environment is then the only place the dependencies are; a build from this
    # populated venv hid hatch_build.py's lost PYTHONPATH until 23 Nov 2026), then installs it.
    venv, wheels = tmp / "venv", tmp / "wheel"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([py, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)], check=True)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{'pip wheel in the new venv (hatch_build.py)':<44} {time.perf_counter() - t0:8.2f} "
          f"{c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime:8.2f}")  # fmt: skip
    (wheel,) = wheels.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        shipped = sum(name.endswith(".nbi") for name in zf.namelist())
    print(f"{'  numba cache indexes in the wheel':<44} {shipped:8d}")
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([py, "-m", "pip", "install", "-q", str(wheel)], check=True)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{'pip install WHEEL into the new venv':<44} {time.perf_counter() - t0:8.2f} "
          f"{c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime:8.2f}")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_") and k != "PYTHONPATH"}
    # not from ROOT: `python -m` puts the working folder first on sys.path, which would import
    # the source tree (its modules and its numba cache) instead of the installed package
    away = tmp / "cwd"
    away.mkdir()
    check = subprocess.run([py, "-c", "import placement; print(placement.__file__)"], env=env, cwd=away,
                           capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert Path(check).is_relative_to(venv), check
    first, second = [], []
    for i in range(args.runs):
        if i:
            subprocess.run([py, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", str(wheel)], check=True)
        first.append(run_child(rank_argv(py, VECADD), env, away))
        second.append(run_child(rank_argv(py, VECADD), env, away))
    report("fresh install: first rank vecadd", first)
    report("fresh install: second rank vecadd", second)
    report("fresh install: placement --help",
           [run_child([str(venv / "bin" / "placement"), "--help"], env, away) for _ in range(args.runs)])  # fmt: skip


POOL = r"""
import multiprocessing, os, resource, statistics, sys, time
from concurrent.futures import ProcessPoolExecutor
import traces
from placement import search
from placement.gpu import get_gpu
from placement.evaluate_whole import WholeTraceEvaluator
from placement.workers import die_with_parent

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

for path in sys.argv[2:]:
    t, g = traces.read(path), get_gpu("k80")
    ev = WholeTraceEvaluator(t, g)
    dom = search.domains(t.info, g, ev.staging)
    s = ev.sample_placement
    moves = [search._with(s, {n: x}) for n, xs in dom.items() for x in xs if x != s[n]]
    moves = [p for p in moves if search._legal(t.info, g, p, ev.staging)]
    for p in moves:
        ev.evaluate(p)  # kernels compiled or loaded
    per = []
    for _ in range(int(sys.argv[1])):
        c0 = time.process_time()
        for p in moves:
            ev.evaluate(p)
        per.append((time.process_time() - c0) / len(moves))
    print(f"one exact evaluation, {len(t.addr):,} rows ({os.path.basename(path)}): "
          f"{statistics.median(per) * 1e3:.2f} ms CPU (median of {len(per)} passes over {len(moves)} moves)")
    starts = []
    for _ in range(max(5, int(sys.argv[1]))):
        c0, w0 = cpu(), time.perf_counter()
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"), initializer=die_with_parent,
                                 initargs=(os.getpid(),)) as pool:
            list(pool.map(abs, range(2)))
        starts.append((time.perf_counter() - w0, cpu() - c0))
    print(f"pool of 2 forked workers, no-op map, shutdown (RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB): "
          f"{statistics.median(w for w, _ in starts) * 1e3:.0f} ms wall, {statistics.median(c for _, c in starts) * 1e3:.0f} ms CPU "
          f"(median of {len(starts)})")
"""


def bench_pool(args, tmp: Path) -> None:
    paths = [str(VECADD)]
    trace = imported_trace(args.porple, tmp)
    if trace is not None:
        paths.append(str(trace))
    subprocess.run([sys.executable, "-c", POOL, str(args.runs), *paths], env=source_env(), cwd=ROOT, check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs per row (medians; default 3)")
    ap.add_argument("--fresh-install", action="store_true", help="also build a wheel and time it in a new venv")
    ap.add_argument(
        "--cold",
        action="store_true",
        help="also the runs with an empty numba cache (every kernel compiles: ~30-70 s CPU each)",
    )
    ap.add_argument("--pool", action="store_true", help="only the worker-pool figures placement.workers cites")
    ap.add_argument("--porple", type=Path, default=PORPLE, help=f"PORPLE trace to import (default {PORPLE})")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-cold-start-"))
    try:
        if args.pool:
            bench_pool(args, tmp)
            return
        header()
        bench_source(args, tmp)
        if args.fresh_install:
            bench_fresh_install(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
