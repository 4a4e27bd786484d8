"""Import the record file of ``placement trace``'s injection library (``traces.sanitizer``).

The format is in ``traces/sanitizer/records.py``, the decoding in ``traces/sanitizer/decode.py``;
this module is the importers' entry (``placement import sanitizer RECORDS -o T.parquet``).
"""

from __future__ import annotations

from ..sanitizer.decode import import_sanitizer

__all__ = ["import_sanitizer"]
