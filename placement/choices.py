"""Names the command line offers as choices, in a module that imports nothing heavy, so that
`placement --help` and argument errors are answered without numba, pandas or pyarrow."""

from __future__ import annotations

QUEUE_MODES = ("kingman", "kingman-paper", "exact")
"""DRAM queuing modes of ``placement.queuing`` (its module docstring says what each computes)."""

STREAM_MODES = ("auto", "yes", "no")
"""How ``evaluate`` and ``rank`` read a trace file: streamed when too big to hold whole ('auto',
``placement.api.WHOLE_TRACE_BUDGET``), or forced either way."""

DLCM = ("ca", "cg")
"""The build's ``-Xptxas -dlcm`` values ``evaluate`` and ``rank`` take (``--dlcm``): ``traces.schema.DLCM``, repeated
here so that the command line imports no trace reader (tests/test_hms.py holds them equal)."""
