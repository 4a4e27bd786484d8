"""Importers of real traces: Accel-Sim, NVBit mem_trace and PORPLE (DESIGN.md, "Importers").

Each importer returns trace columns and a :class:`~traces.schema.KernelInfo`
ready for :func:`traces.write`; object inference (``objects.py``) is shared.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from ..schema import KernelInfo

FORMATS = ("accelsim", "nvbit", "porple", "sanitizer")


def import_trace(fmt: str, path, **options: Any) -> tuple[dict[str, np.ndarray], KernelInfo]:
    """Import ``path`` in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "accelsim":
        from .accelsim import import_accelsim

        return import_accelsim(path, **options)
    if fmt == "nvbit":
        from .nvbit import import_nvbit

        return import_nvbit(path, **options)
    if fmt == "porple":
        from .porple import import_porple

        return import_porple(path, **options)
    if fmt == "sanitizer":
        from .sanitizer import import_sanitizer

        return import_sanitizer(path, **options)
    raise InputError(f"unknown trace format '{fmt}' (expected one of {', '.join(FORMATS)})")
