"""What the tests expect of a command's output, written once."""

from __future__ import annotations


def one_line(code: int, out: str, err: str, *words: str) -> str:
    """A refusal as the contract has it: exit 2, nothing on stdout, one line on stderr (no traceback, no
    warning) holding each of ``words``; returns that line."""
    assert code == 2, err
    assert out == "" and err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err and "Warning" not in err
    for w in words:
        assert w in err, (w, err)
    return err
