"""One number format for everything a person reads: speedups, times, counts, bytes, shares.

- a speedup (or any ratio) to 3 significant figures: ``2.92``, ``1.00``, ``0.998``, ``15.1``;
- a time in the unit that fits, 3 significant figures: ``820 ns``, ``1.97 µs``, ``15.1 µs``, ``3.21 ms``, ``5.10 s``;
- a count with thousands separators, a change with its sign: ``8,192``, ``-4,096``; a count of
  things with its noun in the right number: ``1 warp``, ``2 warps``;
- bytes in B / KiB / MiB; a share as a whole percent (2 significant figures under 10 %).

Machine-readable output (``--json``, ``to_frame``) keeps the raw numbers; these are for text.
"""

from __future__ import annotations

import math

_TIME_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def sig3(x: float) -> str:
    """``x`` to 3 significant figures, without an exponent for the values a report shows."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    digits = 3 - int(math.floor(math.log10(abs(x)))) - 1
    if abs(round(x, digits)) >= 10 ** (3 - digits):  # 0.9997 rounds to 1.000: one digit fewer
        digits -= 1
    if digits <= 0:
        return f"{round(x, digits):,.0f}"
    return f"{x:.{digits}f}"


def speedup(x: float) -> str:
    """A ratio to 3 significant figures (``2.92``, ``1.00``, ``0.998``)."""
    return sig3(x)


def time_ns(ns: float) -> str:
    """A duration given in nanoseconds, in ns, µs or ms, 3 significant figures."""
    for scale, unit in _TIME_UNITS:
        if abs(ns) >= scale * 0.9995 or scale == 1.0:  # 999.7 ns is 1.00 µs
            return f"{sig3(ns / scale)} {unit}"
    return f"{ns:.3g} ns"  # pragma: no cover - the loop always returns


def count(n: float) -> str:
    """A count with thousands separators (fractions rounded)."""
    return f"{round(n):,}"


def plural(n: int, word: str) -> str:
    """A count with its noun, plural unless the count is 1: ``1 warp``, ``0 warps``, ``8,192 warps``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def change(n: float) -> str:
    """A signed count change: ``+512``, ``-8,192``."""
    return f"{round(n):+,}"


def nbytes(n: int) -> str:
    """Bytes in the unit that fits: ``512 B``, ``4 KiB``, ``1.5 MiB``."""
    for scale, unit in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{sig3(v)} {unit}"
    return f"{n:,} B"


def share(x: float) -> str:
    """A fraction as a percent: whole percents, 2 significant figures under 10 % (``94 %``, ``0.06 %``), and
    under 100 % as many decimals as keep it under (``99.6 %``, ``99.98 %``): 3,570 hits of 3,584 is not "100 %"
    beside 13 misses."""
    p = 100.0 * x
    if abs(p) < 10 and p != 0:
        return f"{p:.2g} %"
    d = 0
    while 99 < p < 100 and float(f"{p:.{d}f}") >= 100 and d < 6:
        d += 1
    return f"{p:.{d}f} %"


__all__ = ["change", "count", "nbytes", "plural", "share", "sig3", "speedup", "time_ns"]
