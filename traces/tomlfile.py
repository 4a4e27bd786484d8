"""Reading the project's TOML inputs (configurations, object lists, coefficients)."""

from __future__ import annotations

import tomllib
from typing import Any

from .errors import InputError


def load_toml(path, missing: str = "no such file") -> dict[str, Any]:
    """Parse a TOML file; a missing or malformed file is an InputError naming it."""
    p = str(path)
    try:
        with open(p, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise InputError(f"{p}: {missing}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{p}: not valid TOML ({exc})") from None
