"""traces: the data layer of gpu-placement.

The trace schema and its file I/O (this package's ``io``: Parquet, or Arrow IPC for
fast reads), importers of real traces, generators of the benchmark kernels' traces,
and the rewriting of a trace to a target placement. Lower layers (``cachesim``, ``placement``) read traces
through the functions exported here.
"""

import importlib
import sys
import types

# The names below load their module on first use (PEP 562), so importing a light
# submodule (``traces.errors`` for the command line's `--help` and argument errors)
# does not import numba or pyarrow.
_HOME = {
    **dict.fromkeys(("InputError", "TraceError"), "errors"),
    **dict.fromkeys(("Trace", "atomic_write_table", "convert", "iter_batches", "num_rows", "read", "read_info",
                     "to_table", "validate", "write", "write_parts"), "io"),
    **dict.fromkeys(("Layout", "Rewritten", "addr_inst_delta", "rewrite", "target_layout"), "rewrite"),
    **dict.fromkeys(("COLUMNS", "INSTRUCTION_CLASSES", "OP_NAMES", "SHORT_OF_SPACE", "SPACE_CODES", "SPACE_NAMES",
                     "SPACE_SHORT", "WARP_SIZE", "Instructions", "KernelInfo", "Measured", "ObjectInfo"), "schema"),
}  # fmt: skip


def __getattr__(name: str):
    if name in _HOME:
        value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


class _Package(types.ModuleType):
    """``traces.rewrite`` is the function, as when this package imported it eagerly: importing
    the submodule of that name would otherwise set the package's attribute to the module."""

    def __setattr__(self, name: str, value) -> None:
        if name == "rewrite" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "COLUMNS",
    "INSTRUCTION_CLASSES",
    "OP_NAMES",
    "SHORT_OF_SPACE",
    "SPACE_CODES",
    "SPACE_NAMES",
    "SPACE_SHORT",
    "WARP_SIZE",
    "InputError",
    "Instructions",
    "KernelInfo",
    "Layout",
    "Measured",
    "ObjectInfo",
    "Rewritten",
    "Trace",
    "TraceError",
    "addr_inst_delta",
    "atomic_write_table",
    "convert",
    "iter_batches",
    "num_rows",
    "read",
    "read_info",
    "rewrite",
    "target_layout",
    "to_table",
    "validate",
    "write",
]
