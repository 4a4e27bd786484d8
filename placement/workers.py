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
