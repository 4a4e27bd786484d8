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

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
POLL_S = 0.5

# glibc's mallopt parameters (malloc.h) and their defaults (malloc/malloc.c: DEFAULT_TRIM_THRESHOLD,
# DEFAULT_MMAP_MAX), restored when a search ends
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
GLIBC_TRIM_THRESHOLD = 128 * 1024
GLIBC_MMAP_MAX = 65536
RETAINED_TRIM_THRESHOLD = 2**31 - 1
"""Free bytes at the top of the heap glibc keeps while freed memory is retained (mallopt takes an int)."""

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


@contextlib.contextmanager
def retain_freed_memory():
    """Keep the memory a block of evaluations frees for the next one to reuse (glibc only; elsewhere nothing).

    An exact evaluation of a 1 M-row trace allocates about a gigabyte of short-lived
    arrays (the DRAM request stream and its sorts, the staged trace). glibc serves each
    array above 32 MiB with a fresh mmap and unmaps it when freed, so every evaluation
    pays the kernel's page faults and zeroing again: a third of the CPU time of
    ``benchmarks/bench_rank.py``'s evaluations went to system time. Inside this context
    large blocks come from the heap (``M_MMAP_MAX`` 0) and freed ones stay there
    (``M_TRIM_THRESHOLD`` 2 GiB), so the next evaluation reuses pages already mapped.
    Worker processes forked inside inherit the setting. On exit glibc's defaults are
    restored and the heap trimmed (``malloc_trim``): the process's resident memory
    falls back as before. Results are unchanged: only where the bytes come from.
    """
    libc = _glibc()
    if libc is None:
        yield False
        return
    libc.mallopt(M_MMAP_MAX, 0)
    libc.mallopt(M_TRIM_THRESHOLD, RETAINED_TRIM_THRESHOLD)
    log.debug("freed memory retained for reuse (glibc mallopt)")
    try:
        yield True
    finally:
        libc.mallopt(M_MMAP_MAX, GLIBC_MMAP_MAX)
        libc.mallopt(M_TRIM_THRESHOLD, GLIBC_TRIM_THRESHOLD)
        libc.malloc_trim(0)


def _glibc():
    """The C library when it is glibc (it has mallopt and malloc_trim), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
        libc.malloc_trim.argtypes = (ctypes.c_size_t,)
        return libc
    except (OSError, AttributeError):
        return None
