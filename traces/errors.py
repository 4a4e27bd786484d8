"""Errors raised on bad input.

Every layer raises a subclass of :class:`InputError` for input a user can fix
(a malformed trace, an impossible configuration, an unknown name); the command
turns it into exit code 2 and a one-line message. Anything else is a bug.
"""

from __future__ import annotations

import re

_LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)`` for a message, cut to about ``limit`` characters; an integer too long
    to print (Python refuses more than 4300 digits) is described by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        return f"an integer of {value.bit_length()} bits"
    try:
        r = repr(value)
    except ValueError:  # a list or table holding such an integer
        return f"a {type(value).__name__} holding an integer too long to print"
    return r if len(r) <= limit else f"{r[: limit - 20]}... ({len(r)} characters)"


def one_line(value: object) -> str:
    """``str(value)`` (a message, an exception, a tool's output) on one line: every run of whitespace, line breaks
    included, becomes one space, and the ends are stripped."""
    return " ".join(str(value).split())


class InputError(ValueError):
    """Bad input a user can fix; the message names the file, row or field.

    The message is one line whatever it quotes (a parser's message, a line of the
    input, a file name): runs of whitespace that hold a line break become a space.
    """

    def __init__(self, message: object = "", *args: object):
        text = str(message)
        if "\n" in text or "\r" in text:
            text = _LINE_BREAKS.sub(" ", text).strip()
        super().__init__(text, *args)


class TraceError(InputError):
    """A trace file that does not meet the trace contract (DESIGN.md, "The trace")."""

    def __init__(self, path, message: str, *, row: int | None = None, field: str | None = None):
        self.path = str(path)
        self.row = row
        self.field = field
        where = self.path
        if row is not None:
            where += f" row {row}"
        if field is not None:
            where += f": {field}"
        super().__init__(f"{where}: {message}")
