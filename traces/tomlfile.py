"""Reading the project's TOML inputs (configurations, object lists, coefficients, suites)."""

from __future__ import annotations

import tomllib
from typing import Any

from .errors import InputError
from .inputfile import read_bytes


def load_toml(path, missing: str = "no such file") -> dict[str, Any]:
    """Parse a TOML file; a file that cannot be read or parsed is an InputError naming it."""
    return parse_toml(path, read_bytes(path, missing))


def parse_toml(path, data: bytes) -> dict[str, Any]:
    """Parse the bytes of the TOML file ``path``.

    Refused with the reason: bytes that are not UTF-8, malformed TOML, an integer
    of more than 4300 digits (Python's conversion limit) and arrays or tables nested
    too deeply for the parser.
    """
    p = str(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not a TOML file (byte {exc.start} is not UTF-8 text)") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{p}: not valid TOML ({exc})") from None
    except ValueError as exc:  # int() beyond its digit limit
        raise InputError(f"{p}: not valid TOML ({exc})") from None
    except RecursionError:
        raise InputError(f"{p}: not valid TOML (arrays or tables nested too deeply)") from None
