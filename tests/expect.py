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


def close(a, b, path: str = "", rel: float = 1e-12, nan_ok: bool = False) -> None:
    """``a`` equals ``b`` (nested dicts, lists and tuples), floats to ``rel`` relative: the same sums taken in
    another order (streamed against whole, pieces against one staging) differ in their last bits only. ``nan_ok``:
    a NaN equals a NaN (results tables, whose absent values are NaN)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            close(a[k], b[k], f"{path}.{k}", rel, nan_ok)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            close(x, y, f"{path}[{i}]", rel, nan_ok)
    elif isinstance(a, float) and not isinstance(b, bool):
        both_nan = nan_ok and isinstance(b, float) and a != a and b != b
        assert both_nan or abs(a - b) <= rel * max(abs(a), abs(b)) or a == b, (path, a, b)
    else:
        assert a == b, (path, a, b)
