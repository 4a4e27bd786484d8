"""Opening and reading input files, with one message per way it can fail.

A reader names the file and why it cannot be read -- missing, a folder, no
permission, an I/O error, a name too long or holding a NUL byte -- as an
:class:`InputError`, never as an ``OSError`` or ``ValueError`` from the platform.
"""

from __future__ import annotations

import os

from .errors import InputError

# The first bytes of files a text reader is often handed by mistake, and what to call them.
MAGIC = (
    (b"PAR1", "a Parquet file"),
    (b"ARROW1", "an Arrow IPC file"),
    (b"\xff\xff\xff\xff", "an Arrow IPC stream"),
    (b"FEA1", "a Feather v1 file"),
    (b"\xfd7zXZ\x00", "an xz-compressed file"),
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"PK\x03\x04", "a zip file"),
    (b"\x7fELF", "an executable"),
)
TRACE_KINDS = ("a Parquet file", "an Arrow IPC file")
"""Kinds ``binary_kind`` names that may be a placement trace already (``placement info`` reads them)."""


def read_error(path, exc: BaseException, missing: str = "no such file") -> InputError:
    """The InputError for ``exc``, raised while opening or reading ``path``."""
    p = str(path)
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{p}: {missing}")
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{p}: is a folder, expected a file")
    reason = getattr(exc, "strerror", None) or str(exc)  # ValueError: a NUL byte in the name
    return InputError(f"{p}: cannot be read ({reason})")


def require_file(path, missing: str = "no such file") -> None:
    """Refuse ``path`` unless it is a regular file: missing, a folder or something else, named."""
    p = str(path)
    if "\0" in p:
        raise InputError(f"{p!r}: cannot be read (a NUL byte in the name)")
    if os.path.isfile(p):
        return
    if os.path.isdir(p):
        raise InputError(f"{p}: is a folder, expected a file")
    if os.path.exists(p):
        raise InputError(f"{p}: not a regular file")
    raise InputError(f"{p}: {missing}")


def binary_kind(path) -> str | None:
    """What ``path`` is when it is not text, by its first bytes ("a Parquet file", "binary data"),
    or None for text (or a file that cannot be read: its reader names that)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except (OSError, ValueError):
        return None
    for magic, what in MAGIC:
        if head.startswith(magic):
            return what
    return "binary data" if b"\0" in head else None


def refuse_binary(path, what: str) -> None:
    """Refuse a file that is not text for a reader of ``what`` (a text format), saying what it is."""
    kind = binary_kind(path)
    if kind is None:
        return
    hint = f"; `placement info {path}` reads a trace" if kind in TRACE_KINDS else ""
    raise InputError(f"{path}: is {kind}, not {what}{hint}")


def refuse_repeated_column(path, header, among=None) -> None:
    """An ``InputError`` naming ``path`` where a column of a CSV ``header`` (one of ``among``, the columns the reader
    takes, where given) is named twice: ``csv.DictReader`` keeps the last of them and pandas renames the second."""
    twice = sorted({c for c in header if (among is None or c in among) and header.count(c) > 1})
    if twice:
        raise InputError(f"{path}: column {twice[0][:40]!r} named twice in the header")


def quote_line(line: str, limit: int = 60) -> str:
    """A line of input for a message: its first ``limit`` characters quoted, or "binary data" for
    a line that is not text (NUL or other control bytes, bytes that are not UTF-8), which quoted
    would be hundreds of escapes."""
    if any((c < " " and c not in "\t\r\n") or c == "\ufffd" or c == "\x7f" for c in line[:limit]):
        return "binary data (not a text line)"
    return repr(line[:limit])


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
