"""Opening and reading input files, with one message per way it can fail.

A reader names the file and why it cannot be read -- missing, a folder, no
permission, an I/O error, a name too long or holding a NUL byte -- as an
:class:`InputError`, never as an ``OSError`` or ``ValueError`` from the platform.
"""

from __future__ import annotations

from .errors import InputError


def read_error(path, exc: BaseException, missing: str = "no such file") -> InputError:
    """The InputError for ``exc``, raised while opening or reading ``path``."""
    p = str(path)
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{p}: {missing}")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{p}: is a folder, expected a file")
    reason = getattr(exc, "strerror", None) or str(exc)  # ValueError: a NUL byte in the name
    return InputError(f"{p}: cannot be read ({reason})")


def read_bytes(path, missing: str = "no such file") -> bytes:
    """The whole file."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except (OSError, ValueError) as exc:
        raise read_error(path, exc, missing) from None


def read_text(path, missing: str = "no such file") -> str:
    """The whole file as UTF-8 text."""
    data = read_bytes(path, missing)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a text file (byte {exc.start} is not UTF-8)") from None



def numbered_lines(path, missing: str = "no such file"):
    """(line number, line) of a text file, undecodable bytes replaced; an I/O error names the file."""
    try:
        f = open(path, "r", encoding="utf-8", errors="replace")
    except (OSError, ValueError) as exc:
        raise read_error(path, exc, missing) from None
    with f:
        try:
            yield from enumerate(f, start=1)
        except OSError as exc:
            raise read_error(path, exc, missing) from None
