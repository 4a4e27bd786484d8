"""Microbenchmark curves -> cache levels, sizes, latencies and spreads (plain numpy, no GPU).

Everything ``placement calibrate`` concludes from a measurement is decided here, so it is
tested on recorded curves (``../shared/data/gpu-benches-latency``, mt4g, the H100's
``microbenchmarks.csv``) without a GPU.

The varying-size random walk (Lemeire et al. Sec. VI-C, Eq. 6) gives a curve of
cycles per dependent load against the footprint of the walk: flat while the footprint
fits a cache level (a *plateau*), then a rise to the next level's plateau (a *step*; the
points of the rise are the *ramp*). Eq. 6 models the ramp of a randomly replaced cache,
``CPMR = L1 + (L2 - L1) (1 - size / footprint)``; the NVIDIA caches measured here
replace close to LRU and their ramps are one or two points wide, so the rule below does
not fit Eq. 6: it finds where the latency leaves each plateau.

The rule (:func:`find_levels`), on the points in footprint order:

1. **Plateaus.** From each point, grow a run while every point of the run lies within
   ``PLATEAU_BAND`` of the run's median; a run of at least ``MIN_PLATEAU_POINTS`` points
   is a plateau and the next run starts after it, a shorter one is skipped (a ramp point).
2. **Merges.** Two consecutive plateaus whose medians differ by less than
   ``MERGE_RATIO``, with at most ``MERGE_GAP_POINTS`` points between them, are one
   level (a plateau that drifts slowly, or is broken by one noisy point).
3. **Each level**: its latency is the median of its points (spread: their median
   absolute deviation); its capacity lies between the last footprint on it and the
   first footprint after it (``leaves_at``), the step where the walk leaves the plateau.
   The capacity written into a configuration is the geometric midpoint of that bracket
   (half a step from either end). ``half_rise`` is where the curve, past the level, first
   crosses half-way (in cycles) to the next level's latency, interpolated in log
   footprint: on a gradual ramp (MI210's L2) it is the better size estimate.

A stride sweep gives two more curves (:func:`granularity_from_stride_curve`,
:func:`line_from_capacities`): the fetch granularity (sector) from the average latency
of one cold pass against the stride, and the line (tag) size from the capacity a
stride leaves.

Huang & Li's Algorithm 1 (:func:`classify_address_bits`) classifies DRAM address bits
by the latency of a second access that differs from a first one in that bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from traces.errors import InputError

PLATEAU_BAND = 0.05
"""A point is on a plateau while it lies within 5 % of the plateau's median. The widest
flat plateau of the recorded curves is MI210's L2 (233-249 cycles around 240: +-3.8 %);
the smallest rise at a real cache boundary is 7.6 % on the first point past it (L40's
L2, 276.5 -> 297.4 cycles at 97477 KiB; MI210's DRAM page walk, 573 -> 629, is 9.6 %)."""

MIN_PLATEAU_POINTS = 3
"""A plateau has at least 3 points: two can be a ramp that flattens for a step
(RX 6900 XT between its L1 and L2), while the shortest real level of the recorded curves
(A100's far L2 half, 29-38 MiB at 1.1x steps) has 4."""

MERGE_RATIO = 1.12
"""Consecutive plateaus less than 12 % apart are one level: the largest rise inside one
level of the recorded curves is RX 6900 XT's L1 (98 -> 108 -> 111 cycles between 20 and
118 KiB, +10 % at most between its pieces); the smallest rise between two levels is
MI210's DRAM without and with page walks (573 -> 656, +14 %)."""

MERGE_GAP_POINTS = 2
"""At most 2 points between two plateaus that merge (one noisy point, or a short
flattening of a slow ramp); a real step has a ramp and a rise of more than MERGE_RATIO."""

KNEE_TOLERANCE = 0.10
"""A stride is past the knee of a cold-pass stride curve when it and every larger stride
lie within 10 % of the curve's top plateau: at half the granularity the average is
half-way between hit and miss, far below 90 % of the miss latency."""

CAPACITY_TOLERANCE = 0.15
"""Capacities (bytes) of a line-size sweep within 15 % (about one 1.1x step of the walk
either side) count as the same."""

ADDRESS_BIT_SEPARATION = 0.10
"""Huang & Li's three groups must be at least 10 % of the row-miss latency apart: the row
hit of the K80 is 53 % below the miss and the conflict 36 % above (352 / 742 / 1008 ns)."""


@dataclass(frozen=True)
class Stat:
    """The median of repeated measurements and their spread (median absolute deviation)."""

    median: float
    spread: float
    n: int

    @property
    def rel_spread(self) -> float:
        return self.spread / abs(self.median) if self.median else 0.0

    def describe(self, unit: str = "") -> str:
        u = f" {unit}" if unit else ""
        if self.n <= 1:
            return "one measurement"
        return f"median of {self.n}, spread {self.spread:.3g}{u} ({100 * self.rel_spread:.2g} %, median absolute deviation)"


def summarize(values) -> Stat:
    """Median and median absolute deviation of the finite values (an error if none is)."""
    a = np.asarray(values, dtype=float).ravel()
    a = a[np.isfinite(a)]
    if a.size == 0:
        raise InputError("no finite measurement to summarize")
    med = float(np.median(a))
    return Stat(med, float(np.median(np.abs(a - med))), int(a.size))


# --- the varying-size random walk -------------------------------------------------------


@dataclass(frozen=True)
class Level:
    """One plateau of a latency-versus-footprint curve: a cache level (or DRAM)."""

    latency: Stat
    """Cycles per load: median and spread of the plateau's points."""
    first_bytes: float
    """The first footprint on the plateau."""
    last_bytes: float
    """The last footprint on the plateau: the largest measured to fit."""
    leaves_at_bytes: float | None
    """The first footprint after the plateau (None: the curve ends on it)."""
    half_rise_bytes: float | None
    """Where the curve first crosses half-way to the next level's latency (None for the last level)."""
    points: int

    @property
    def capacity_bytes(self) -> float | None:
        """The size of the level: the geometric midpoint of (last_bytes, leaves_at_bytes]."""
        if self.leaves_at_bytes is None:
            return None
        return math.sqrt(self.last_bytes * self.leaves_at_bytes)

    @property
    def step(self) -> float | None:
        """The walk's step where it leaves the level (ratio of the bracket's ends)."""
        return None if self.leaves_at_bytes is None else self.leaves_at_bytes / self.last_bytes


def _curve(footprints, latencies) -> tuple[np.ndarray, np.ndarray]:
    f = np.asarray(footprints, dtype=float).ravel()
    y = np.asarray(latencies, dtype=float).ravel()
    if f.shape != y.shape:
        raise InputError(f"a curve needs one latency per footprint, got {f.size} footprints and {y.size} latencies")
    if f.size == 0:
        raise InputError("an empty curve")
    if not (np.all(np.isfinite(f)) and np.all(np.isfinite(y))) or np.any(f <= 0) or np.any(y <= 0):
        raise InputError("a curve's footprints and latencies must be finite and > 0")
    order = np.argsort(f, kind="stable")
    return f[order], y[order]


def _fits(seg: np.ndarray) -> bool:
    med = np.median(seg)
    return bool(np.all(np.abs(seg / med - 1.0) <= PLATEAU_BAND))


def _runs(y: np.ndarray) -> list[list[int]]:
    """Plateaus as [start, stop) index ranges (step 1 of the rule)."""
    n = y.size
    runs: list[list[int]] = []
    i = 0
    while i < n:
        j = i + 1
        while j < n and _fits(y[i : j + 1]):
            j += 1
        if j - i >= MIN_PLATEAU_POINTS:
            runs.append([i, j])
            i = j
        else:
            i += 1
    return runs


def _merge(runs: list[list[int]], y: np.ndarray) -> list[list[int]]:
    """Step 2 of the rule: consecutive plateaus close in latency and position become one."""
    out: list[list[int]] = []
    for r in runs:
        if out:
            a, b = out[-1]
            m1, m2 = np.median(y[a:b]), np.median(y[r[0] : r[1]])
            if r[0] - b <= MERGE_GAP_POINTS and max(m1, m2) / min(m1, m2) < MERGE_RATIO:
                out[-1] = [a, r[1]]
                continue
        out.append(list(r))
    return out


def _half_rise(f: np.ndarray, y: np.ndarray, start: int, stop: int, target: float) -> float | None:
    """The first footprint from index ``start`` (below ``stop``) where y reaches ``target``,
    interpolated linearly in log footprint between the two points around the crossing."""
    for k in range(max(start, 1), min(stop, y.size)):
        if y[k] >= target:
            if y[k - 1] >= target:
                return float(f[k - 1])
            t = (target - y[k - 1]) / (y[k] - y[k - 1])
            return float(math.exp(math.log(f[k - 1]) + t * (math.log(f[k]) - math.log(f[k - 1]))))
    return None


def find_levels(footprints, latencies) -> tuple[Level, ...]:
    """The levels of a latency-versus-footprint curve, smallest footprint first (the rule
    in the module docstring). Footprints in bytes, latencies in cycles (any positive units
    work: the rule is relative)."""
    f, y = _curve(footprints, latencies)
    runs = _merge(_runs(y), y)
    meds = [float(np.median(y[a:b])) for a, b in runs]
    levels = []
    for i, (a, b) in enumerate(runs):
        leaves = float(f[b]) if b < f.size else None
        half = None
        if i + 1 < len(runs):
            half = _half_rise(f, y, b, runs[i + 1][1], (meds[i] + meds[i + 1]) / 2)
        levels.append(Level(summarize(y[a:b]), float(f[a]), float(f[b - 1]), leaves, half, b - a))
    return tuple(levels)


DRAM_FRACTION = 0.85
"""A level is DRAM when its latency is at least 85 % of the DRAM latency measured on its
own (a random walk over far more than the L2): the far L2 halves of A100 and H100 sit at
74 % of their DRAM plateau (426 of 573, 475 of 650 cycles), DRAM with page walks above 100 %."""


@dataclass(frozen=True)
class NamedLevels:
    """The levels of a global-load walk by name: the L1 (None where global loads skip it),
    the L2 levels (near and far halves where the L2 is split, as on A100 and H100) and DRAM."""

    l1: Level | None
    l2: tuple[Level, ...]
    dram: tuple[Level, ...]
    past_l2: tuple[Level, ...] = ()
    """Levels between the L2 and DRAM that end well past the driver's L2 size (``name_levels``' ``l2_bytes``)."""

    @property
    def l2_capacity_bytes(self) -> float | None:
        """The whole L2: where the walk leaves the last L2 level."""
        return self.l2[-1].capacity_bytes if self.l2 else None

    @property
    def l2_latency(self) -> Stat | None:
        """An L2 hit: the first (near) L2 level."""
        return self.l2[0].latency if self.l2 else None


def name_levels(
    levels, global_in_l1: bool, dram_latency: float | None = None, l2_bytes: float | None = None
) -> NamedLevels:
    """Name the levels of a walk with global loads: the first is the L1 when global loads
    are cached there, DRAM are the levels at or above ``DRAM_FRACTION`` of ``dram_latency``
    (without one: the last level), the L2 the levels between. Where the driver reports the
    L2's size (``l2_bytes``), the L2 ends with the level whose capacity is nearest it (in ratio)
    and the levels after it are ``past_l2``: on an H200 (30 Nov 2026) the walk's latency climbs
    from 286 to 555 cycles between 30 and 120 MiB, as a hashed L2 of 60 MiB lets it, in steps the
    rule reads as levels (388 cycles ending at 60 MiB, 439 at 73 MiB, 529 at 121 MiB, where the
    TLB's reach ends), so the last of them is not the L2's end."""
    levels = list(levels)
    if not levels:
        raise InputError("the curve has no plateau")
    l1 = levels.pop(0) if global_in_l1 and len(levels) > 1 else None
    if dram_latency is not None:
        dram = [lv for lv in levels if lv.latency.median >= DRAM_FRACTION * dram_latency]
        l2 = [lv for lv in levels if lv.latency.median < DRAM_FRACTION * dram_latency]
    else:
        l2, dram = levels[:-1], levels[-1:]
    past: list[Level] = []
    ends = [i for i, lv in enumerate(l2) if lv.capacity_bytes]
    if l2_bytes and l2_bytes > 0 and ends:
        near = min(ends, key=lambda i: abs(math.log(l2[i].capacity_bytes / l2_bytes)))
        l2, past = l2[: near + 1], l2[near + 1 :]
    return NamedLevels(l1, tuple(l2), tuple(dram), tuple(past))


L2_DRIVER_TOLERANCE = 0.25
"""How far (as a ratio) the walk's L2 end may be from the driver's L2 size before the driver's is taken: an H200's
walk (30 Nov 2026) ended its L2 levels at 34 MB in one run and 60 MiB in another, its latency climbing smoothly from
30 to 120 MiB; the driver says 62,914,560 B."""


def l2_capacity(named: NamedLevels, driver_bytes: float | None) -> tuple[float, bool] | None:
    """The L2's size in bytes and whether it is the driver's: the walk's (the last L2 level's end) where no driver
    size is known or it is within ``L2_DRIVER_TOLERANCE`` of it, else the driver's; None where the walk found no
    L2 end and the driver gives no size."""
    end = named.l2_capacity_bytes
    if driver_bytes and driver_bytes > 0:
        if end is None or abs(math.log(end / driver_bytes)) > math.log1p(L2_DRIVER_TOLERANCE):
            return float(driver_bytes), True
    return (float(end), False) if end is not None else None


def refine_footprints(level: Level, points: int = 8) -> np.ndarray:
    """Footprints that split a level's bracket (last_bytes, leaves_at_bytes] in ``points``
    geometric steps: a second, finer walk there narrows the capacity to that step."""
    if level.leaves_at_bytes is None:
        return np.empty(0)
    return np.geomspace(level.last_bytes, level.leaves_at_bytes, points + 2)[1:-1]


# --- stride sweeps ----------------------------------------------------------------------


def _ordered(xs, ys, what: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(xs, dtype=float).ravel()
    y = np.asarray(ys, dtype=float).ravel()
    if x.size != y.size or x.size < 2:
        raise InputError(f"a {what} needs at least two (stride, value) points, got {x.size} and {y.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))) or np.any(x <= 0) or np.any(y <= 0):
        raise InputError(f"a {what}'s strides and values must be finite and > 0")
    o = np.argsort(x, kind="stable")
    return x[o], y[o]


def granularity_from_stride_curve(strides, latencies) -> int:
    """The fetch granularity (bytes) from one cold pass of dependent loads at each stride.

    Nodes ``stride`` bytes apart, each visited once: a miss fetches ``g`` bytes, so the
    ``g / stride`` nodes that follow in the same fetch hit. The average is
    ``hit + (miss - hit) * min(1, stride / g)``: it rises with the stride up to ``g`` and
    is flat beyond. ``g`` is the smallest stride from which every larger stride lies within
    ``KNEE_TOLERANCE`` of the median of the largest half of the strides.
    """
    x, y = _ordered(strides, latencies, "stride curve")
    top = float(np.median(y[x.size // 2 :]))
    ok = np.abs(y / top - 1.0) <= KNEE_TOLERANCE
    k = x.size - 1
    while k > 0 and ok[k - 1]:
        k -= 1
    return int(x[k])


def line_from_capacities(strides, capacities_bytes) -> int:
    """The line (tag) size from the capacity a walk finds at each node stride.

    A node ``stride`` bytes from the next occupies its own line once ``stride`` reaches
    the line size ``L``: below it the cache holds ``capacity`` bytes of footprint, above it
    ``capacity x stride / L``. ``L`` is the largest stride whose capacity is within
    ``CAPACITY_TOLERANCE`` of the smallest stride's.
    """
    x, c = _ordered(strides, capacities_bytes, "line-size sweep")
    same = np.abs(c / c[0] - 1.0) <= CAPACITY_TOLERANCE
    k = 0
    while k + 1 < x.size and same[k + 1]:
        k += 1
    return int(x[k])


# --- Huang & Li, Algorithm 1 -----------------------------------------------------------


@dataclass(frozen=True)
class AddressBits:
    """Huang & Li's classification of DRAM address bits (Algorithm 1), or why there is none."""

    found: bool
    column_bits: tuple[int, ...] = ()
    row_bits: tuple[int, ...] = ()
    other_bits: tuple[int, ...] = ()
    row_hit: float | None = None
    """The second access's latency when the bit is a column bit (cycles)."""
    row_miss: float | None = None
    """The first access's latency: a row miss."""
    row_conflict: float | None = None
    """The second access's latency when the bit is a row bit."""
    reason: str = ""


def classify_address_bits(bits, first_latency, second_latency) -> AddressBits:
    """Classify address bits by the latency of the second of two accesses that differ in
    that bit (Huang & Li Algorithm 1, lines 7-12): below the row miss (the first access)
    a column bit (row-buffer hit), above it a row bit (row conflict), else a bank or
    channel bit. ``first_latency`` and ``second_latency`` hold, per bit, the median over
    repetitions. The groups must be ``ADDRESS_BIT_SEPARATION`` apart; otherwise (a GPU
    that hashes addresses across channels and banks, or a memory controller that hides
    row-buffer state) the result says it cannot be found, with the latencies seen.
    """
    b = [int(v) for v in np.asarray(bits).ravel()]
    first = np.asarray(first_latency, dtype=float).ravel()
    second = np.asarray(second_latency, dtype=float).ravel()
    if not (len(b) == first.size == second.size) or not b:
        raise InputError("Algorithm 1 needs one (first, second) latency pair per address bit")
    miss = float(np.median(first))
    lo, hi = miss * (1 - ADDRESS_BIT_SEPARATION), miss * (1 + ADDRESS_BIT_SEPARATION)
    col = tuple(x for x, s in zip(b, second, strict=True) if s < lo)
    row = tuple(x for x, s in zip(b, second, strict=True) if s > hi)
    other = tuple(x for x in b if x not in col and x not in row)
    hit = float(np.median(second[second < lo])) if col else None
    conflict = float(np.median(second[second > hi])) if row else None
    if not col or not row:
        seen = f"second access {float(np.min(second)):.0f}-{float(np.max(second)):.0f} cycles against a row miss of {miss:.0f}"
        missing = "column (row-hit)" if not col else "row (row-conflict)"
        return AddressBits(False, col, row, other, hit, miss, conflict,
                           f"no {missing} bits stand out ({seen}): the GPU hides its DRAM row and bank bits")  # fmt: skip
    return AddressBits(True, col, row, other, hit, miss, conflict)
