"""Worker processes that end with the process that started them.

A process pool's workers outlive a parent killed with SIGKILL: nothing runs in the
parent to stop them, and they are left to init, holding memory and CPU. Every pool
of this package (``placement.search`` for ``rank --workers``, ``placement.batch``)
passes :func:`die_with_parent` as its initializer:

- on Linux the worker asks the kernel for SIGKILL when its parent dies
  (``prctl(PR_SET_PDEATHSIG)``, through ctypes), then checks that the parent is
  still the one that started it, in case it died before the request was made;
- elsewhere a daemon thread watches the parent's id and ends the worker once it
  changes (the worker was re-parented).

Workers compute and return results; they write no files, so ending them
abruptly loses nothing the parent had not already lost.

Processes are started only when they pay for themselves (:func:`worth_processes`),
from an estimate of the work (:func:`evaluation_cost_s`) against what starting them
costs; the figures are measured by ``benchmarks/bench_cold_start.py --pool``.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
POLL_S = 0.5

FORK_START_S = 0.075
"""Wall seconds one forked worker costs before it does any work: starting it, its
initializer, the first result's way back and its shutdown. Measured by
``benchmarks/bench_cold_start.py --pool`` (a pool of 2 forked from a process that has
read a trace and built its evaluator, ~350 MiB RSS, a no-op map, shut down) on the 2-core
machine shared with other jobs: 130-180 ms wall for the two (31-41 ms CPU), median
of 5, so 75 ms each. A spawned worker would also import numpy, numba and pyarrow
(about 1 s CPU, the same script's `--help`/rank figures), which is why pools fork."""

EVAL_FIXED_S = 0.002
"""CPU seconds of one exact evaluation apart from its trace rows (rewrite set-up, the
model's terms, the result): 2.1 ms per evaluation of a 265-row PORPLE trace (spmv_prof,
K80), ``benchmarks/bench_cold_start.py --pool``, median of 3 passes over the single moves."""

EVAL_ROW_S = 1.4e-6
"""CPU seconds per trace row of one exact evaluation (rewrite, coalescing, the hierarchy's
walk, DRAM): (10.5 ms - EVAL_FIXED_S) / 6,144 rows for configs/examples/vecadd.parquet on
the K80, the same script and runs."""


def evaluation_cost_s(rows: int) -> float:
    """Estimated CPU seconds of one exact evaluation of a ``rows``-row trace."""
    return EVAL_FIXED_S + EVAL_ROW_S * rows


def worth_processes(work_s: float, workers: int) -> bool:
    """Whether ``workers`` forked processes finish ``work_s`` seconds of independent work
    sooner than this process alone: the time they take off it, ``(1 - 1/workers) * work_s``,
    must exceed what starting them costs, ``workers * FORK_START_S``."""
    return workers > 1 and (1.0 - 1.0 / workers) * work_s > workers * FORK_START_S


def die_with_parent(parent_pid: int) -> None:
    """Pool initializer: end this worker when process ``parent_pid`` (its parent) dies."""
    if sys.platform.startswith("linux") and _set_pdeathsig():
        if os.getppid() != parent_pid:  # the parent died before the request took effect
            os._exit(1)
        return
    threading.Thread(target=_watch, args=(parent_pid,), name="die-with-parent", daemon=True).start()


def _set_pdeathsig() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(POLL_S)
    os._exit(1)
