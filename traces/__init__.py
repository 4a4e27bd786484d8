"""traces: the data layer of gpu-placement.

The trace schema and its Parquet I/O (this package's ``io``), importers of real
traces, generators of the benchmark kernels' traces, and the rewriting of a trace
to a target placement. Lower layers (``cachesim``, ``placement``) read traces
through the functions exported here.
"""

from .errors import InputError, TraceError
from .io import Trace, atomic_write_table, iter_batches, read, read_info, to_table, validate, write
from .rewrite import Rewritten, rewrite, target_layout
from .schema import (
    COLUMNS,
    INSTRUCTION_CLASSES,
    OP_NAMES,
    SHORT_OF_SPACE,
    SPACE_CODES,
    SPACE_NAMES,
    SPACE_SHORT,
    WARP_SIZE,
    Instructions,
    KernelInfo,
    Measured,
    ObjectInfo,
)

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
    "Measured",
    "ObjectInfo",
    "Rewritten",
    "Trace",
    "TraceError",
    "atomic_write_table",
    "iter_batches",
    "read",
    "read_info",
    "rewrite",
    "target_layout",
    "to_table",
    "validate",
    "write",
]
