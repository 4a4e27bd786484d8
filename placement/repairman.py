"""The machine-repairman model of an SM's resident blocks (T_block's steady windows, :func:`placement.hms.t_block`).

B blocks stay resident on an SM; each window a block first waits out its copy (k cycles, every block on its own:
an infinite-server delay station) and then does its work (c cycles if it had the SM to itself, the SM shared
among the blocks working at that moment: one processor-sharing server). That is the closed network of the
finite-source ("machine-repairman") queue, whose mean throughput X(B) the exact mean value analysis gives
(Reiser & Lavenberg 1980; Lazowska et al., *Quantitative System Performance*, 1984, Sec. 6.3):

    Q(0) = 0;  R(n) = c (1 + Q(n - 1));  X(n) = n / (k + R(n));  Q(n) = X(n) R(n).

A product-form result: exact for a processor-sharing server and a delay station whatever the distributions of k
and c (BCMP, Baskett et al. 1975), so a window's fixed copy latency does not break it. X(B) lies under both of
its asymptotes, 1 / c (the SM busy) and B / (k + c) (no block ever waits for another), and furthest under them
where they meet, B = (k + c) / c: there the blocks' copies and work fall in and out of step and the SM idles at
times though on average it could be kept busy.
"""

from __future__ import annotations

import math


def mva(n: int, think: float, service: float) -> list[float]:
    """X(1), ..., X(n): the exact MVA recursion above (``think`` = k, ``service`` = c, in any one time unit)."""
    if n < 1 or think < 0.0 or service < 0.0 or think + service <= 0.0:
        raise ValueError(f"repairman model of {n} customers, delay {think}, service {service}")
    out, q = [], 0.0
    for i in range(1, n + 1):
        r = service * (1.0 + q)
        x = i / (think + r)
        q = x * r
        out.append(x)
    return out


def throughput(n: float, think: float, service: float) -> float:
    """X(n) of the recursion, per time unit; a fractional n (an SM's share of a launch's blocks) takes the line
    between X(floor n) and X(ceil n)."""
    if n < 1.0:
        raise ValueError(f"repairman model of {n} customers: at least 1")
    x = mva(math.ceil(n), think, service)
    lo = int(math.floor(n))
    return x[lo - 1] + (n - lo) * (x[-1] - x[lo - 1])


def cycle(n: float, think: float, service: float) -> float:
    """n / X(n): the time in which n customers each go once round, k + R(n); at least max(n c, k + c)."""
    return n / throughput(n, think, service)
