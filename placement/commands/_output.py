"""Helpers the subcommands share: JSON output and plain text tables (``placement.texttable``)."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..texttable import table


def print_json(doc: Any) -> None:
    """Print one JSON document and nothing else (the --json contract).

    The document is RFC 8259 JSON: a number is finite, a value that is undefined is null
    (mapped where it is made, e.g. ``explain.moved_events``' change from 0). A NaN or an
    infinity here is a bug: a ValueError naming its key, and nothing printed.
    """
    try:
        text = json.dumps(doc, indent=2, sort_keys=False, default=_default, allow_nan=False)
    except ValueError:
        raise ValueError(f"--json: {_non_finite(doc) or 'a value'} is not a finite number (JSON has no NaN or "
                         "Infinity)") from None  # fmt: skip
    sys.stdout.write(text + "\n")


def _non_finite(doc: Any, where: str = "") -> str | None:
    """Where the first NaN or infinity of ``doc`` lies (``ranking[0].moved[0].change``), or None."""
    import math
    import numbers

    if isinstance(doc, numbers.Real):  # numpy's scalars too
        return None if math.isfinite(doc) else where or "the document"
    if hasattr(doc, "tolist"):  # a numpy array
        doc = doc.tolist()
    if isinstance(doc, dict):
        items = ((f"{where}.{k}" if where else str(k), v) for k, v in doc.items())
    elif isinstance(doc, (list, tuple)):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(doc))
    else:
        return None
    for w, v in items:
        found = _non_finite(v, w)
        if found:
            return found
    return None


def _default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


__all__ = ["print_json", "table"]
