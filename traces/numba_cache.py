"""Whether numba's on-disk cache holds a module's kernels for this machine, or their first
call will compile them (tens of seconds on two cores: `placement import accelsim` took
32.8 s wall the first time after an install without the cache, 1.3 s afterwards).

A ``numba.njit(cache=True)`` function keeps one index file per function (``NAME-LINE.pyXY.nbi``,
in the module's ``__pycache__``, ``NUMBA_CACHE_DIR`` or the user's cache folder, wherever numba's
own locator puts it), valid for one numba version and one content of the source file, whose
entries are keyed on the signature, the CPU (``codegen.magic_tuple()``: triple, CPU name and
features) and the function's bytecode. :func:`cold_modules` asks each function's own cache for
its index (numba's ``_load_index``, which returns nothing for a missing, stale or
other-version index) and looks for an entry of this CPU and bytecode: no file is written and
nothing is compiled; the modules are imported (the command that asks imports them anyway).

A module is cold when none of its cached functions has such an entry (a fresh install
without the wheel's cache, another CPU than the wheel was built on, an edited source): that
is the case worth a word. A module of which some functions are cached and others not (a
command that uses kernels no earlier one did) reads as warm: those compile silently, as
they always did. The check relies on numba internals (``Dispatcher._cache``); anything
unexpected makes a module read as warm, never fail the command.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
from collections.abc import Iterable

log = logging.getLogger(__name__)


def _usable(dispatcher) -> bool | None:
    """Whether ``dispatcher``'s cache has an entry for this CPU and its bytecode; None when it
    is not a cached function (no opinion)."""
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is None:  # cache=False: numba's NullCache
        return None
    overloads = cache_file._load_index()
    if not overloads:
        return False
    magic = dispatcher.targetctx.codegen().magic_tuple()
    code = hashlib.sha256(dispatcher.py_func.__code__.co_code).hexdigest()
    return any(len(key) == 3 and key[1] == magic and key[2][0] == code for key in overloads)


def cold_modules(names: Iterable[str]) -> list[str]:
    """The modules among ``names`` (dotted names) whose cached kernels have no usable entry in
    numba's cache: their first call compiles them. Empty when numba is not there or jitting is
    off (``NUMBA_DISABLE_JIT``)."""
    try:
        from numba.core.dispatcher import Dispatcher
    except ImportError:  # pragma: no cover - numba is a dependency
        return []
    cold = []
    for name in names:
        try:
            mod = importlib.import_module(name)
            verdicts = [_usable(v) for v in vars(mod).values()
                        if isinstance(v, Dispatcher) and getattr(v.py_func, "__module__", None) == name]  # fmt: skip
        except Exception as exc:  # numba internals changed: no opinion
            log.debug("numba cache of %s not inspected: %r", name, exc)
            continue
        verdicts = [v for v in verdicts if v is not None]
        if verdicts and not any(verdicts):
            cold.append(name)
    log.debug("numba cache cold for %s", cold or "none of the modules")
    return cold
