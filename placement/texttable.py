"""A plain text table: the layout of every table the commands and ``placement.textout`` print.

Library code (``placement.textout``) and the subcommands (``placement.commands``, through
``placement.commands._output``) both use it, so it lives below both.
"""

from __future__ import annotations

from typing import Any, Sequence


def table(rows: Sequence[Sequence[Any]], header: Sequence[str], align: str | None = None) -> str:
    """A plain text table; ``align`` is one 'l' or 'r' per column (numbers right by default)."""
    cells = [[str(h) for h in header]] + [[_fmt(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    if align is None:
        align = "".join("r" if rows and isinstance(rows[0][i], (int, float)) else "l" for i in range(len(header)))
    lines = []
    for k, r in enumerate(cells):
        parts = [c.rjust(w) if a == "r" else c.ljust(w) for c, w, a in zip(r, widths, align)]
        lines.append("  ".join(parts).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


__all__ = ["table"]
