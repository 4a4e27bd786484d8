"""Name numba's compiled functions for Linux ``perf``: write ``/tmp/perf-<pid>.map`` from inside the process.

``perf report`` shows JIT code as bare addresses; it reads symbol names for them from
``/tmp/perf-<pid>.map`` (start, size, name per line). numba keeps each compiled
overload's LLVM library, which gives the address of every function in it, and its
runtime's (``NRT_incref``, ``NRT_decref``...). Call :func:`write_perf_map` at the end of
the run to profile (after the kernels ran, so that they are compiled or loaded), then
report. Functions loaded from numba's on-disk cache have no LLVM module to list: profile
with an empty cache (``NUMBA_CACHE_DIR`` set to a new folder). This is how the reference
counting around the hierarchy walk's calls was found (benchmarks/README.md, 24 Nov).

    NUMBA_CACHE_DIR=$(mktemp -d) perf record -o /tmp/perf.data python my_script.py   # my_script ends with:
        #   from _perf_map import write_perf_map; write_perf_map([cachesim._hierarchy_kernels, ...])
    perf report -i /tmp/perf.data --no-children --sort sym
"""

from __future__ import annotations

import os
import re
from types import ModuleType


def _functions(library) -> list[tuple[int, str]]:
    out = []
    module = getattr(library, "_final_module", None)
    if module is None:  # loaded from numba's cache: no module to list
        return out
    for f in module.functions:
        if f.is_declaration:
            continue
        address = library.get_pointer_to_function(f.name)
        if address:
            out.append((address, f.name))
    return out


def write_perf_map(modules: list[ModuleType], path: str | None = None) -> int:
    """Write the perf map of every compiled overload of the numba functions in ``modules`` and of numba's
    runtime; returns the number of functions named. A function's size is taken up to the next one's start."""
    from numba.core.runtime import nrt

    entries = _functions(nrt.rtsys._library)
    for mod in modules:
        for name in dir(mod):
            dispatcher = getattr(mod, name)
            for cres in getattr(dispatcher, "overloads", {}).values():
                entries += _functions(cres.library)
    entries.sort()
    path = path or f"/tmp/perf-{os.getpid()}.map"
    with open(path, "w") as fh:
        for (start, name), following in zip(entries, entries[1:] + [(entries[-1][0] + 65536, "")] if entries else []):
            short = re.split(r"B\d+v\d+", name)[0]  # numba's mangled name up to its version suffix
            fh.write(f"{start:x} {max(following[0] - start, 1):x} {short}\n")
    return len(entries)
