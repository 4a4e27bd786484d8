"""Errors of the cachesim package.

Every one is a :class:`traces.errors.InputError` (bad input a user can fix); the
message is one line and names the field at fault.
"""

from __future__ import annotations

from traces.errors import InputError


class CachesimError(InputError):
    """Bad input to cachesim: the message names the field and what was expected."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class SpecError(CachesimError):
    """An impossible GPGPU-Sim cache string."""


class MappingError(CachesimError):
    """An impossible DRAM address mapping."""


class HierarchyConfigError(CachesimError):
    """An impossible hierarchy configuration or argument."""
