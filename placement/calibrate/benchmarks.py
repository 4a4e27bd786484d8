"""The microbenchmarks of ``placement calibrate``: what each launches and how its result is read.

Each benchmark is a function ``(device, context) -> Result`` over the device interface of
:class:`.runner.CupyDevice` (compile, allocate, lay out, launch, time; no GPU library is
imported here) and the analysis of :mod:`.analysis`. The kernels are in ``kernels/*.cu``.
Cycles are the SM's ``clock64()``; the SM clock itself is measured first (``clock``), so a
latency in cycles and a time in ns convert at the clock the GPU really ran.

Budgets (seconds of repetitions, quick / full; laying out a walk and compiling come on
top): clock 2/4, latency 6/12, walk 15/120, walk_paths 4/30, stride 3/20, bandwidth 4/20,
bank_conflicts 1/3, syncthreads 1/5, atomics 2/6, texture 1/3, launch 1/5, issue 2/20, dram_bits 5/60:
47 s quick, 308 s full, under the one minute and ten minutes the command promises with
room for compiling (NVRTC, about 5 s on the first run, cached after it) and the walks'
layouts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .analysis import (
    L2_DRIVER_TOLERANCE,
    AddressBits,
    Stat,
    classify_address_bits,
    find_levels,
    granularity_from_stride_curve,
    l2_capacity,
    line_from_capacities,
    name_levels,  # fmt: skip
    refine_footprints,
    summarize,
)
from .measurements import Curve, Measured

KIB = 1024
MIB = 1024 * KIB

NODE_BYTES = 128
"""Walk nodes 128 B apart: one node per L1/L2 line of every NVIDIA GPU since Fermi, so each
pass touches each line once and an LRU cache's step is sharp (gpu-benches uses 64 B)."""
CONST_NODE_BYTES = 64
"""Constant-cache nodes 64 B apart: the constant L1's line (mt4g: 64 B on Pascal to Hopper)."""
WARM_THREADS = 1024
"""Threads of the walk's block: they read the footprint once (the warm pass) before thread 0 walks."""
SETTLE_HOPS = 256
"""Untimed hops before the timed ones (the TLB and the first misses of a cold walk)."""
HOPS = (2048, 8192)
"""Timed hops per launch of the walks, quick / full."""
POINT_HOPS = (8192, 32768)
"""Timed hops of the fixed-footprint latencies, quick / full."""
REPS = (3, 7)
"""Repetitions (launches) of each point, quick / full: the median and spread are over them."""
WALK_STEP = (1.15, 1.07)
"""Footprint ratio between consecutive points of the walk, quick / full (gpu-benches: 1.1)."""
REFINE_POINTS = (4, 8)
"""Points a second walk puts inside each capacity bracket of the first, quick / full."""
WALK_MIN_BYTES = 2 * KIB
L1_POINT_BYTES = 16 * KIB
"""The L1 hit footprint (microbenchmarks.csv: 16 KiB, 128 nodes)."""
L2_POINT_BYTES = 8 * MIB
"""The L2 hit footprint (microbenchmarks.csv: 8 MiB), at most a quarter of the L2 (within its near half)."""
DRAM_POINT_BYTES = 1024 * MIB
"""The DRAM footprint: random lines over 1 GiB (microbenchmarks.csv), at most a quarter of the free memory."""
CONST_L1_BYTES = 1 * KIB
CONST_L15_BYTES = 32 * KIB
CONST_BANK_BYTES = 64 * KIB


@dataclass
class Result:
    measured: dict[str, Measured] = field(default_factory=dict)
    curves: dict[str, Curve] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    address_bits: AddressBits | None = None
    """Huang & Li's classification, where Algorithm 1 found one."""

    def add(self, key: str, values, unit: str, benchmark: str) -> Stat:
        s = values if isinstance(values, Stat) else summarize(values)
        self.measured[key] = Measured(key, s, unit, benchmark)
        return s


@dataclass(frozen=True)
class Benchmark:
    name: str
    what: str
    budget: tuple[float, float]
    """Seconds of repetitions, quick and full."""
    run: Callable


def _pick(ctx, pair):
    return pair[0] if ctx.quick else pair[1]


def _rates(dev, ctx, fn, grid, block, args, count, reps) -> list[float]:
    """``count`` things (bytes, texels, warp-instructions) per ns of each of ``reps``' timed launches, after one
    untimed launch: G per second."""
    dev.launch(fn, grid, block, args)
    return [count / (dev.time_ms(fn, grid, block, args) * 1e6) for _ in ctx.repetitions(reps)]


def _per_sm_cycle(s: Stat, sms: int, clock_mhz: float) -> Stat:
    """A rate in G per second (``s``) over the SMs and the clock: per SM per cycle."""
    return Stat(s.median * 1e3 / (sms * clock_mhz), s.spread * 1e3 / (sms * clock_mhz), s.n)


def _add_per_sm_cycle(r: Result, dev, ctx, s: Stat, key: str, unit: str, benchmark: str) -> None:
    """Add the rate ``s`` (G per second) per SM per cycle as ``key``, at the measured SM clock (the driver's where the
    clock benchmark did not run)."""
    clock = ctx.value("sm_clock_mhz") or dev.info.clock_mhz
    r.add(key, _per_sm_cycle(s, dev.info.sms, clock), unit, benchmark)


def random_cycle(rng: np.random.Generator, n: int) -> np.ndarray:
    """next[i] of a random cyclic permutation of 0..n-1 (one cycle through every node:
    Sattolo's property, which Lemeire et al. require so the walk covers the whole array)."""
    p = rng.permutation(n)
    nxt = np.empty(n, dtype=np.int64)
    nxt[p] = np.roll(p, -1)
    return nxt


def walk_footprints(lo: float, hi: float, step: float, node: int) -> np.ndarray:
    """Geometric footprints from lo to hi (bytes), whole nodes, each once."""
    n = max(2, math.ceil(math.log(hi / lo) / math.log(step)) + 1)
    f = np.unique((np.geomspace(lo, hi, n) // node).astype(np.int64) * node)
    return f[f >= 2 * node]


# --- pointer chases ---------------------------------------------------------------------


class Walker:
    """Lays out and times dependent walks of one kind of load (``ld``, ``ldg``, ``ldcg``,
    ``tex``, ``const``) over a buffer of up to ``max_bytes``."""

    def __init__(self, dev, ctx, kind: str, max_bytes: int, buf=None):
        self.dev, self.ctx, self.kind = dev, ctx, kind
        self.fn = dev.function("pchase", f"chase_{kind}", max_l1=True)
        self.out = dev.zeros(4, np.int64)
        if kind == "const":
            self.words = CONST_BANK_BYTES // 4
            self.buf = None
        else:
            self.words = int(max_bytes) // 4
            self.buf = dev.zeros(self.words, np.uint32) if buf is None else buf
        self.tex = dev.texture_u32(self.buf) if kind == "tex" else None
        self.n, self.step, self.offset = 0, 1, 0

    def same_nodes(self, other: Walker) -> None:
        """Walk the nodes ``other`` laid out last (in the same buffer)."""
        self.n, self.step, self.offset = other.n, other.step, other.offset

    def lay(self, footprint: int, node_bytes: int, ordered: bool = False, offset_words: int = 0) -> int:
        """Nodes ``node_bytes`` apart over ``footprint`` bytes, in a random cycle (or in order)."""
        step = node_bytes // 4
        n = max(2, int(footprint) // node_bytes)
        nxt = (np.arange(1, n + 1) % n) if ordered else random_cycle(self.ctx.rng, n)
        values = (nxt * step + offset_words).astype(np.uint32)
        if self.kind == "const":
            host = np.zeros(self.words, np.uint32)
            host[offset_words : offset_words + n * step : step] = values
            self.dev.set_constant("pchase", "const_nodes", host)
        else:
            self.dev.write_strided(self.buf, step, values, offset_words)
        self.n, self.step, self.offset = n, step, offset_words
        return n

    def time(self, warm: bool, hops: int, settle: int = SETTLE_HOPS, start_node: int | None = None) -> float:
        """Cycles per hop of one launch."""
        start = self.offset + (int(self.ctx.rng.integers(self.n)) if start_node is None else start_node) * self.step
        warm_words = self.offset + self.n * self.step if warm else 0
        tail = (np.uint32(warm_words), np.uint32(start), np.int32(settle), np.int32(hops), self.out)
        if self.kind == "const":
            args = tail
        elif self.kind == "tex":
            args = (self.tex, *tail)
        else:
            args = (self.buf, *tail)
        self.dev.launch(self.fn, 1, WARM_THREADS, args)
        return float(self.dev.download(self.out)[0]) / hops


def _l2_bytes(dev, ctx) -> int:
    return int(dev.info.l2_bytes or ctx.base.caches.l2_slices * 1024 * 1024)


def _walk(walker: Walker, ctx, footprints, node: int, warm_limit: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(footprints, median cycles per hop, spread) of a walk; warm passes up to ``warm_limit`` bytes."""
    hops, reps = _pick(ctx, HOPS), _pick(ctx, REPS)
    fs, med, mad = [], [], []
    for f in footprints:
        n = walker.lay(int(f), node)
        vals = [walker.time(warm=f <= warm_limit, hops=hops, settle=min(SETTLE_HOPS, n)) for _ in ctx.repetitions(reps)]
        s = summarize(vals)
        fs.append(n * node)
        med.append(s.median)
        mad.append(s.spread)
    return np.array(fs, float), np.array(med), np.array(mad)


def _curve(name: str, x, y, spread, x_name="footprint_bytes", y_name="cycles") -> Curve:
    return Curve(
        name, x_name, y_name, tuple(float(v) for v in x), tuple(float(v) for v in y), tuple(float(v) for v in spread)
    )


def _capacity_stat(level) -> Stat:
    """A capacity as a Stat: the bracket's geometric midpoint, spread half the bracket."""
    return Stat(level.capacity_bytes, (level.leaves_at_bytes - level.last_bytes) / 2, level.points)


# --- the benchmarks -----------------------------------------------------------------------


def bench_clock(dev, ctx) -> Result:
    """SM clock: every SM spins a fixed number of clock64() cycles, timed with events."""
    fn = dev.function("clock", "spin")
    sms = dev.info.sms
    cycles = 20_000_000 if ctx.quick else 40_000_000
    out = dev.zeros(sms, np.int64)
    dev.launch(fn, sms, 32, (np.int64(cycles), out))  # the GPU boosts first
    vals = []
    for _ in ctx.repetitions(_pick(ctx, (3, 5))):
        ms = dev.time_ms(fn, sms, 32, (np.int64(cycles), out))
        vals.append(float(np.median(dev.download(out))) / (ms * 1e3))
    r = Result()
    r.add("sm_clock_mhz", vals, "MHz", f"clock: spin {cycles} cycles on all {sms} SMs, events")
    return r


def bench_latency(dev, ctx) -> Result:
    """Hit latencies: dependent loads, one thread, at footprints inside each level."""
    r = Result()
    hops, reps = _pick(ctx, POINT_HOPS), _pick(ctx, REPS)
    l2 = _l2_bytes(dev, ctx)
    l2_point = min(L2_POINT_BYTES, l2 // 4)
    dram_point = int(min(DRAM_POINT_BYTES, dev.free_bytes() // 4)) // NODE_BYTES * NODE_BYTES
    cases = [
        ("l1_latency", "ld", L1_POINT_BYTES, True, "L1 hit (ld, 16 KiB)"),
        ("ldg_latency", "ldg", L1_POINT_BYTES, True, "L1 hit (__ldg, 16 KiB)"),
        ("tex_latency", "tex", L1_POINT_BYTES, True, "texture hit (tex1Dfetch, 16 KiB)"),
        ("l2_latency", "ld", l2_point, True, f"L2 hit (ld, {l2_point // MIB} MiB)"),
        ("l2_latency_ldcg", "ldcg", l2_point, True, f"L2 hit (__ldcg, {l2_point // MIB} MiB)"),
        ("dram_latency", "ld", dram_point, False, f"DRAM (ld, {dram_point // MIB} MiB random)"),
        ("dram_latency_ldcg", "ldcg", dram_point, False, f"DRAM (__ldcg, {dram_point // MIB} MiB random)"),
        ("const_latency", "const", CONST_L1_BYTES, True, "constant cache hit (1 KiB)"),
        ("const_l15_latency", "const", CONST_L15_BYTES, True, "constant L1.5 (32 KiB)"),
    ]  # fmt: skip
    walkers: dict[str, Walker] = {}
    for key, kind, footprint, warm, what in cases:
        node = CONST_NODE_BYTES if kind == "const" else NODE_BYTES
        size = dram_point if kind in ("ld", "ldcg") else max(footprint, L1_POINT_BYTES)
        w = walkers.get(kind) or walkers.setdefault(kind, Walker(dev, ctx, kind, size))
        w.lay(footprint, node)
        vals = [w.time(warm=warm, hops=hops) for _ in ctx.repetitions(reps)]
        r.add(key, vals, "cycles", f"pchase {what}")
    walkers.clear()
    # shared memory: 16 KiB of consecutive words in a random cycle (LDS)
    n = L1_POINT_BYTES // 4
    words = random_cycle(ctx.rng, n).astype(np.uint32)
    src = dev.upload(words)
    out = dev.zeros(4, np.int64)
    fn = dev.function("pchase", "chase_shared", dynamic_shared=L1_POINT_BYTES)
    vals = []
    for _ in ctx.repetitions(reps):
        start = np.uint32(ctx.rng.integers(n))
        dev.launch(
            fn,
            1,
            WARM_THREADS,
            (src, np.uint32(n), start, np.int32(SETTLE_HOPS), np.int32(hops), out),
            shared=L1_POINT_BYTES,
        )
        vals.append(float(dev.download(out)[0]) / hops)
    r.add("smem_latency", vals, "cycles", "pchase shared memory (LDS, 16 KiB)")
    # 64-bit pointers: the load-to-use latency without index arithmetic
    nodes = L1_POINT_BYTES // NODE_BYTES
    buf = dev.zeros(L1_POINT_BYTES // 8, np.uint64)
    base = dev.pointer(buf)
    nxt = random_cycle(ctx.rng, nodes)
    dev.write_strided(buf, NODE_BYTES // 8, (base + nxt * NODE_BYTES).astype(np.uint64))
    fn = dev.function("pchase", "chase_ptr64", max_l1=True)
    vals = []
    for _ in ctx.repetitions(reps):
        dev.launch(
            fn,
            1,
            WARM_THREADS,
            (np.uint64(base), np.uint64(nodes * NODE_BYTES // 8), np.int32(SETTLE_HOPS), np.int32(hops), out),
        )
        vals.append(float(dev.download(out)[0]) / hops)
    r.add("l1_latency_ptr64", vals, "cycles", "pchase L1 hit (ld, 64-bit pointers, 16 KiB)")
    return r


def bench_walk(dev, ctx) -> Result:
    """The varying-size random walk with global loads (Lemeire Eq. 6): L1 and L2 capacities
    and their latencies, from 2 KiB to four times the L2, then a finer walk inside each
    capacity bracket."""
    r = Result()
    l2 = _l2_bytes(dev, ctx)
    top = int(min(4 * l2, dev.free_bytes() // 4, 1024 * MIB))
    w = Walker(dev, ctx, "ld", top)
    warm_limit = 2 * l2
    f, y, s = _walk(
        w, ctx, walk_footprints(WALK_MIN_BYTES, top, _pick(ctx, WALK_STEP), NODE_BYTES), NODE_BYTES, warm_limit
    )
    gi = bool(ctx.base.caches.global_in_l1)
    reported = dev.info.l2_bytes or None
    named = name_levels(find_levels(f, y), gi, ctx.value("dram_latency"), reported)
    extra = [
        refine_footprints(lv, _pick(ctx, REFINE_POINTS)) for lv in ([named.l1] if named.l1 else []) + list(named.l2)
    ]
    if extra:
        f2, y2, s2 = _walk(w, ctx, np.unique(np.concatenate(extra) // NODE_BYTES * NODE_BYTES), NODE_BYTES, warm_limit)
        f, y, s = np.concatenate([f, f2]), np.concatenate([y, y2]), np.concatenate([s, s2])
        o = np.argsort(f, kind="stable")
        f, y, s = f[o], y[o], s[o]
        named = name_levels(find_levels(f, y), gi, ctx.value("dram_latency"), reported)
    r.curves["walk_ld"] = _curve("walk_ld", f, y, s)
    bench = "walk (varying-size random walk, ld)"
    if named.l1 is not None:
        r.add("walk_l1_cycles", named.l1.latency, "cycles", bench)
        if named.l1.leaves_at_bytes is not None:
            r.add("l1_bytes", _capacity_stat(named.l1), "bytes", f"{bench}: the L1 plateau ends between "
                  f"{named.l1.last_bytes:.0f} and {named.l1.leaves_at_bytes:.0f} B")  # fmt: skip
    for i, lv in enumerate(named.l2):  # the near half (or the whole L2), then the far half where it is split
        r.add(
            ("walk_l2_cycles", "walk_l2_far_cycles")[i] if i < 2 else f"walk_l2_{i}_cycles", lv.latency, "cycles", bench
        )
    size = l2_capacity(named, reported)
    if size is not None and size[1]:
        ends = ", ".join(f"{lv.capacity_bytes:.0f}" for lv in named.l2 if lv.capacity_bytes) or "nowhere"
        r.add("l2_bytes", Stat(size[0], 0.0, 1), "bytes", f"the driver's L2 size (cudaDevAttrL2CacheSize; the "
              f"walk's L2 levels end at {ends} B, none within {L2_DRIVER_TOLERANCE:.0%} of it)")  # fmt: skip
    elif size is not None:
        last = named.l2[-1]
        r.add("l2_bytes", _capacity_stat(last), "bytes", f"{bench}: the last L2 plateau ends between "
              f"{last.last_bytes:.0f} and {last.leaves_at_bytes:.0f} B")  # fmt: skip
    if named.l2 and named.l2[-1].leaves_at_bytes is not None:
        if len(named.l2) > 1 and named.l2[0].leaves_at_bytes is not None:
            r.add("l2_near_bytes", _capacity_stat(named.l2[0]), "bytes", f"{bench}: the near L2 half")
    for i, lv in enumerate(named.past_l2):
        r.add(f"walk_past_l2_{i}_cycles", lv.latency, "cycles", bench)
    if named.past_l2:
        r.notes.append(
            f"{bench}: the L2 ends with the level nearest the driver's L2 size ({reported:.0f} B); after it the "
            f"latency climbs in {len(named.past_l2)} more steps, the last ending at "
            f"{named.past_l2[-1].capacity_bytes or 0:.0f} B (a hashed L2's ramp, then the TLB's reach): not the L2's"
        )
    if named.dram:
        r.add("walk_dram_cycles", named.dram[0].latency, "cycles", bench)
    return r


def bench_walk_paths(dev, ctx) -> Result:
    """The walk through the read-only path (__ldg), the texture path and the constant cache:
    their capacities (Lemeire Eq. 6 on each path)."""
    r = Result()
    top = 1 * MIB
    for kind, key in (("ldg", "ro"), ("tex", "tex")):
        w = Walker(dev, ctx, kind, top)
        f, y, s = _walk(
            w, ctx, walk_footprints(WALK_MIN_BYTES, top, _pick(ctx, WALK_STEP), NODE_BYTES), NODE_BYTES, top
        )
        r.curves[f"walk_{kind}"] = _curve(f"walk_{kind}", f, y, s)
        levels = find_levels(f, y)
        if levels and levels[0].leaves_at_bytes is not None:
            r.add(f"{key}_bytes", _capacity_stat(levels[0]), "bytes", f"walk ({kind}): the first plateau ends between "
                  f"{levels[0].last_bytes:.0f} and {levels[0].leaves_at_bytes:.0f} B")  # fmt: skip
    w = Walker(dev, ctx, "const", CONST_BANK_BYTES)
    f, y, s = _walk(
        w,
        ctx,
        walk_footprints(256, CONST_BANK_BYTES, _pick(ctx, WALK_STEP), CONST_NODE_BYTES),
        CONST_NODE_BYTES,
        CONST_BANK_BYTES,
    )
    r.curves["walk_const"] = _curve("walk_const", f, y, s)
    levels = find_levels(f, y)
    if levels and levels[0].leaves_at_bytes is not None:
        r.add("const_bytes", _capacity_stat(levels[0]), "bytes", f"walk (constant): the constant L1 plateau ends between "
              f"{levels[0].last_bytes:.0f} and {levels[0].leaves_at_bytes:.0f} B")  # fmt: skip
    if len(levels) > 1:
        if levels[1].leaves_at_bytes is not None:
            r.add("const_l15_bytes", _capacity_stat(levels[1]), "bytes", "walk (constant): the L1.5 plateau")
        else:
            r.notes.append("constant L1.5: no step within the 64 KiB constant bank (the L1.5 holds all of it)")
    return r


def bench_stride(dev, ctx) -> Result:
    """Line and sector size. Sector (fetch granularity): one cold pass through nodes in order,
    ``stride`` bytes apart, over data in the L2 but not in the L1. Line (tag size): the L1
    capacity the walk finds with nodes 32..512 B apart."""
    r = Result()
    reps = _pick(ctx, REPS)
    strides = [4, 8, 16, 32, 64, 128, 256]
    nodes = 512
    span = nodes * max(strides) + 4 * KIB
    w = Walker(dev, ctx, "ld", span * (reps + 1) * len(strides))
    warm_l2 = Walker(dev, ctx, "ldcg", w.words * 4, buf=w.buf)
    med, mad = [], []
    region = 0
    for s in strides:
        vals = []
        for _ in ctx.repetitions(reps):
            off = region * span // 4
            region += 1
            w.lay(nodes * s, s, ordered=True, offset_words=off)
            warm_l2.same_nodes(w)
            warm_l2.time(warm=True, hops=1, settle=0, start_node=0)  # into the L2, not the L1
            vals.append(w.time(warm=False, hops=w.n - 1, settle=0, start_node=0))
        st = summarize(vals)
        med.append(st.median)
        mad.append(st.spread)
    r.curves["stride_cold_ld"] = _curve("stride_cold_ld", strides, med, mad, x_name="stride_bytes")
    g = granularity_from_stride_curve(strides, med)
    r.add("sector_bytes", Stat(float(g), 0.0, reps), "bytes", "stride: first pass of ld through nodes in order, "
          "data in the L2 only; the knee of cycles per hop against the stride")  # fmt: skip
    # line: L1 capacity against the node stride
    c = ctx.value("l1_bytes") or _config_bytes(ctx.base.caches.l1) or 128 * KIB
    line_strides = [32, 64, 128, 256] + ([] if ctx.quick else [512])
    top = 1.6 * c * max(line_strides) / 32
    w = Walker(dev, ctx, "ld", int(top) + KIB)
    caps = []
    for s in line_strides:
        hi = 1.6 * c * s / 32
        f, y, sp = _walk(w, ctx, walk_footprints(c / 2, hi, _pick(ctx, (1.1, 1.05)), s), s, hi)
        r.curves[f"line_walk_{s}"] = _curve(f"line_walk_{s}", f, y, sp)
        lv = find_levels(f, y)
        if not lv or lv[0].leaves_at_bytes is None:
            raise RuntimeError(f"the walk with nodes {s} B apart did not leave its first plateau below {hi:.0f} B")
        caps.append(lv[0].capacity_bytes)
    r.curves["line_capacity"] = _curve(
        "line_capacity", line_strides, caps, [0] * len(caps), x_name="stride_bytes", y_name="capacity_bytes"
    )
    line = line_from_capacities(line_strides, caps)
    what = "stride: the L1 capacity the walk finds with nodes 32-512 B apart stays put up to the line size"
    base_line = ctx.base.memory.line_bytes
    if line > base_line:
        # nodes farther apart than a line fold into fewer sets where the set index takes the line's low bits, so the
        # capacity stays put past the line (an H200's L1 of 4 sets: 224-240 KB at 32-256 B, 30 Nov 2026)
        r.add("line_bytes_walk", Stat(float(line), 0.0, reps), "bytes", what)
        r.notes.append(f"line: the L1 capacity stays put up to nodes {line} B apart, past the base's {base_line} B "
                       f"line: the set index folds such strides into fewer sets, so the line is kept")  # fmt: skip
    else:
        r.add("line_bytes", Stat(float(line), 0.0, reps), "bytes", what)
    return r


def _config_bytes(cache: str) -> int | None:
    """Bytes of a GPGPU-Sim cache string (per copy), None for "" or a malformed one."""
    try:
        geom = cache.split(",")[0].split(":")
        return int(geom[1]) * int(geom[2]) * int(geom[3])
    except (IndexError, ValueError):
        return None


def bench_bandwidth(dev, ctx) -> Result:
    """Achieved bandwidths: DRAM read, write and copy; L2 read; shared memory."""
    r = Result()
    reps = _pick(ctx, (5, 20))
    sms = dev.info.sms
    total = int(min(_pick(ctx, (256 * MIB, 1024 * MIB)), dev.free_bytes() // 4)) // 16 * 16
    n = total // 16
    a = dev.zeros(n * 4, np.float32)
    b = dev.zeros(n * 4, np.float32)
    sink = dev.zeros(1, np.float32)
    grid, block = sms * 16, 256
    cases = [
        ("dram_read_gbs", dev.function("bandwidth", "bw_read"), (a, np.uint64(n), sink), total, "read kernel float4"),
        ("dram_write_gbs", dev.function("bandwidth", "bw_write"), (a, np.uint64(n), np.float32(1)), total, "write kernel float4"),
        ("dram_copy_gbs", dev.function("bandwidth", "bw_copy"), (a, b, np.uint64(n)), 2 * total, "copy kernel float4 (read + write)"),
    ]  # fmt: skip
    for key, fn, args, nbytes, what in cases:
        vals = _rates(dev, ctx, fn, grid, block, args, nbytes, reps)
        r.add(key, vals, "GB/s", f"bandwidth {what}, {total // MIB} MiB")
    del a, b
    l2n = max(_l2_bytes(dev, ctx) // 8, 1 * MIB) // 16
    buf = dev.zeros(l2n * 4, np.float32)
    passes = _pick(ctx, (16, 64))
    fn = dev.function("bandwidth", "bw_l2_read")
    args = (buf, np.uint64(l2n), np.int32(passes), sink)
    vals = _rates(dev, ctx, fn, grid, block, args, l2n * 16 * passes, reps)
    r.add("l2_read_gbs", vals, "GB/s", f"bandwidth L2 read (__ldcg, {l2n * 16 // KIB} KiB x {passes} passes)")
    fn = dev.function("smem", "smem_bandwidth")
    iters = 4096
    g = sms * 2
    args = (np.int32(iters), sink)
    vals = _rates(dev, ctx, fn, g, 1024, args, g * 1024 * iters * 16, reps)
    s = r.add(
        "smem_gbs", vals, "GB/s", "bandwidth shared memory (float4, no conflict, 2 blocks of 1024 threads per SM)"
    )
    clock = ctx.value("sm_clock_mhz")
    if clock:
        r.add("smem_bytes_per_cycle_per_sm", _per_sm_cycle(s, sms, clock), "B/cycle/SM",
              "bandwidth shared memory, over the SMs and the measured clock")  # fmt: skip
    return r


def bench_bank_conflicts(dev, ctx) -> Result:
    """The cost of an n-way shared-memory bank conflict (one warp, lanes n words apart)."""
    r = Result()
    fn = dev.function("smem", "smem_conflict")
    out = dev.zeros(4, np.int64)
    iters = 4096
    ways = [1, 2, 4, 8, 16, 32]
    med, mad = [], []
    for n in ways:
        vals = []
        for _ in ctx.repetitions(_pick(ctx, REPS)):
            dev.launch(fn, 1, 32, (np.int32(n), np.int32(iters), out))
            vals.append(float(dev.download(out)[0]) / iters)
        s = r.add(
            f"smem_{n}way_cycles", vals, "cycles", f"bank_conflicts: dependent warp-wide LDS, lanes {n} words apart"
        )
        med.append(s.median)
        mad.append(s.spread)
    r.curves["smem_conflict"] = _curve("smem_conflict", ways, med, mad, x_name="ways", y_name="cycles")
    r.add("smem_conflict_cycles_per_way", Stat((med[-1] - med[0]) / (ways[-1] - 1), 0.0, len(ways)), "cycles",
          "bank_conflicts: (32-way - 1-way) / 31")  # fmt: skip
    return r


def bench_syncthreads(dev, ctx) -> Result:
    """__syncthreads() with 1..32 warps in the block."""
    r = Result()
    fn = dev.function("sync", "syncthreads_cost")
    out = dev.zeros(1, np.int64)
    iters = 4096
    warps = [1, 2, 4, 8, 16, 32] if ctx.quick else list(range(1, 33))
    med, mad = [], []
    for w in warps:
        vals = []
        for _ in ctx.repetitions(_pick(ctx, REPS)):
            dev.launch(fn, 1, 32 * w, (np.int32(iters), out))
            vals.append(float(dev.download(out)[0]) / iters)
        s = summarize(vals)
        med.append(s.median)
        mad.append(s.spread)
        if w in (1, 32):
            r.add(f"syncthreads_{w}warp{'s' if w > 1 else ''}_cycles", s, "cycles",
                  f"syncthreads: {w} warp{'s' if w > 1 else ''}, {iters} barriers")  # fmt: skip
    r.curves["syncthreads"] = _curve("syncthreads", warps, med, mad, x_name="warps", y_name="cycles")
    return r


def bench_atomics(dev, ctx) -> Result:
    """Atomics, global and shared, each lane on its own address or all on one: cycles per
    dependent warp-wide atomic (one warp), and the whole GPU's rate; and global reductions with every warp's lanes on
    one word or spread over ``SPREAD_SECTORS`` sectors (the L2's atomic units)."""
    r = Result()
    sms = dev.info.sms
    big_grid, big_block, big_iters = sms * 4, 256, 64
    counters = dev.zeros(big_grid * big_block + 32, np.uint32)
    out = dev.zeros(big_grid, np.int64)
    sink = dev.zeros(big_grid, np.uint32)
    iters = 1024
    for space in ("global", "shared"):
        fn = dev.function("atomics", f"atomic_{space}")
        for same, label in ((0, "distinct"), (1, "same")):

            def args(it, _same=same, _space=space):
                if _space == "global":
                    return (counters, np.int32(_same), np.int32(it), out)
                return (np.int32(_same), np.int32(it), out, sink)

            vals, rates = [], []
            for _ in ctx.repetitions(_pick(ctx, REPS)):
                counters.fill(0)
                dev.launch(fn, 1, 32, args(iters))
                vals.append(float(dev.download(out)[0]) / iters)
                counters.fill(0)
                ms = dev.time_ms(fn, big_grid, big_block, args(big_iters))
                rates.append(big_grid * big_block * big_iters / (ms * 1e6))
            r.add(
                f"atomic_{space}_{label}_cycles",
                vals,
                "cycles",
                f"atomics: {space} atomicAdd, one warp, {label} address{'es' if same == 0 else ''}, dependent",
            )
            r.add(
                f"atomic_{space}_{label}_gops",
                rates,
                "G/s",
                f"atomics: {space} atomicAdd, {big_grid} x {big_block} threads, {label} address{'es' if same == 0 else ''}",
            )
    spread = dev.function("atomics", "atomic_global_spread")
    for sectors, label in ((1, "one_word"), (SPREAD_SECTORS, f"{SPREAD_SECTORS}_sectors")):
        rates = []
        for _ in ctx.repetitions(_pick(ctx, REPS)):
            counters.fill(0)
            ms = dev.time_ms(spread, big_grid, big_block, (counters, np.int32(sectors), np.int32(big_iters)))
            rates.append(big_grid * big_block * big_iters / (ms * 1e6))
        r.add(
            f"atomic_global_{label}_gops",
            rates,
            "G/s",
            f"atomics: global atomicAdd (result unused), {big_grid} x {big_block} threads, every warp's lanes on "
            + ("one word" if sectors == 1 else f"word 0 of {sectors} sectors ({sectors * 32} B)"),
        )
    return r


SPREAD_SECTORS = 32
"""The sectors (1 KiB) ``bench_atomics`` spreads a warp's lanes over to find how many of the L2's atomic units share
them (``placement.calibrate.writer``: ``memory.l2_atomic_unit_bytes``)."""

TEX_WORDS = 4096
"""The throughput benchmark's texture: 4,096 32-bit texels (16 KiB), resident in the texture / L1 cache of every
NVIDIA GPU since Fermi, so neither the L2 nor DRAM bounds the fetches."""


def bench_texture(dev, ctx) -> Result:
    """The texture units' throughput: 8 blocks of 256 threads per SM, each thread fetching 4 independent texels
    of a 16 KiB 1D texture per iteration (``tex1Dfetch``, the warp's lanes on consecutive texels), timed with
    events: texels per second, and per SM per cycle at the measured clock (``compute.texels_per_cycle``,
    ``placement.hms.t_tex``)."""
    r = Result()
    sms = dev.info.sms
    buf = dev.zeros(TEX_WORDS, np.uint32)
    tex = dev.texture_u32(buf)
    sink = dev.zeros(1, np.uint32)
    fn = dev.function("texture", "tex_throughput")
    grid, block, iters = sms * 8, 256, _pick(ctx, (256, 1024))
    args = (tex, np.int32(iters), np.uint32(TEX_WORDS - 1), sink)
    texels = grid * block * iters * 4
    vals = _rates(dev, ctx, fn, grid, block, args, texels, _pick(ctx, REPS))
    s = r.add("tex_gtexels", vals, "G texels/s", f"texture: tex1Dfetch, {grid} x {block} threads x {iters * 4} texels")
    _add_per_sm_cycle(r, dev, ctx, s, "tex_texels_per_cycle_per_sm", "texels/cycle/SM",
                      "texture: tex1Dfetch throughput over the SMs and the clock")  # fmt: skip
    return r


LDS_BLOCKS_PER_SM = 2
"""Blocks of 1,024 threads per SM for ``bench_lsu``: 32 to 64 resident warps, each with 32 loads in flight."""


def bench_lsu(dev, ctx) -> Result:
    """The load/store pipe's issue rate: every thread of 2 blocks of 1,024 per SM issues 4 independent conflict-free
    LDS.32 an iteration (one wavefront each, so the data path is not the bound where it moves one a cycle), timed
    with events: warp-instructions per second, and per SM per cycle at the measured clock
    (``compute.lsu_instructions_per_cycle``, ``placement.hms.t_lsu``: 1 on GV100, GA100 and GH100, 0.5 on GA10x)."""
    r = Result()
    sms = dev.info.sms
    sink = dev.zeros(1, np.uint32)
    fn = dev.function("smem", "smem_lds32")
    grid, block, iters = sms * LDS_BLOCKS_PER_SM, 1024, _pick(ctx, (1024, 4096))
    args = (np.int32(iters), sink)
    insts = grid * block * iters * 4 / 32
    vals = _rates(dev, ctx, fn, grid, block, args, insts, _pick(ctx, REPS))
    s = r.add(
        "lsu_ginst", vals, "G warp-inst/s", f"lsu: LDS.32 without conflicts, {grid} x {block} threads x {iters * 4}"
    )
    _add_per_sm_cycle(r, dev, ctx, s, "lsu_inst_per_cycle_per_sm", "warp-inst/cycle/SM",
                      "lsu: LDS.32 warp-instructions over the SMs and the clock")  # fmt: skip
    return r


L1_QUARTERS = (("same", 32), ("apart", 40))
"""``bench_loads``' plain loads whose lanes read 8 words a quarter of the warp, quarter j this many words x j after
the first: the same 8 words of 4 lines (a 4-way bank conflict where the L1's data is the shared memory's 32 banks of
4 bytes) and word 8j of line j (no conflict), four lines and four sectors each (``ldg_quarters`` in
kernels/readonly.cu). A 4-way conflict, not a 2-way one, so that where the load/store pipe takes a load every 2
cycles (GA10x) the rule still shows."""


def bench_loads(dev, ctx) -> Result:
    """Global loads that hit in the L1, by path and by lines: every thread of 2 blocks of 1,024 per SM issues 4
    independent loads an iteration from a 16 KiB array the L1 holds, each warp-load on one line (one wavefront) or,
    shifted by a word, on two (5 sectors, as a stencil's taps), through ``__ldg`` (LDG.E.CONSTANT) and with plain
    loads, timed with events: warp-instructions per second, and per SM per cycle at the measured clock. The
    read-only one-line rate is ``compute.readonly_instructions_per_cycle`` (``placement.hms.t_lsu``: each read-only
    load's share of the load/store pipe, which the model otherwise takes to be the pipe's own rate); the others stay
    in ``[calibration.measured]``, what a GPU's loads cost by the lines they touch, for the model to be held
    against. Then plain loads in four 8-lane quarters on four lines (:data:`L1_QUARTERS`), in the same banks and in
    others: the first's time over the second's is ``memory.l1_bank_ratio`` (4 where the L1 reads a line's data
    through the shared memory's banks, 2 where a half-rate pipe hides part of it, 1 where it does not), which decides
    ``l1_data_banks`` for the GPU (``placement.memory.l1_data_banks_of``)."""
    r = Result()
    sms = dev.info.sms
    buf = dev.zeros(TEX_WORDS + 128, np.uint32)  # the shifted and quartered warp-loads read up to 95 words past it
    sink = dev.zeros(1, np.uint32)
    grid, block, iters = sms * LDS_BLOCKS_PER_SM, 1024, _pick(ctx, (1024, 4096))
    insts = grid * block * iters * 4 / 32
    kinds = (("ro", dev.function("readonly", "ldg_nc32"), "__ldg"), ("ldg", dev.function("readonly", "ldg32"), "plain"))
    runs = [(f"{prefix}{lines}", fn, shift, f"{how} loads of {shift + 1} line{'s' if shift else ''} a warp")
            for prefix, fn, how in kinds for shift, lines in ((0, ""), (1, "_split"))]  # fmt: skip
    quarters = dev.function("readonly", "ldg_quarters")
    runs += [(f"ldg_quarters_{banks}", quarters, step,
              f"plain loads in four quarters on four lines, {'the same' if banks == 'same' else 'other'} banks")
             for banks, step in L1_QUARTERS]  # fmt: skip
    for key, fn, shift, what in runs:
        args = (buf, np.int32(iters), np.uint32(TEX_WORDS - 1), np.uint32(shift), sink)
        vals = _rates(dev, ctx, fn, grid, block, args, insts, _pick(ctx, REPS))
        s = r.add(f"{key}_ginst", vals, "G warp-inst/s", f"loads: {what}, {grid} x {block} x {iters * 4}")
        _add_per_sm_cycle(r, dev, ctx, s, f"{key}_inst_per_cycle_per_sm", "warp-inst/cycle/SM",
                          f"loads: {what}, warp-instructions over the SMs and the clock")  # fmt: skip
    return r


def bench_launch(dev, ctx) -> Result:
    """Launch cost of an empty kernel: one launch between events (1, 4,096 and 65,536 blocks
    of 256 threads, as variants-extra.csv), and back to back."""
    r = Result()
    fn = dev.function("clock", "empty_kernel")
    reps = _pick(ctx, (20, 100))
    for blocks in (1, 4096, 65536):
        dev.launch(fn, blocks, 256, ())
        vals = [dev.time_ms(fn, blocks, 256, ()) * 1e3 for _ in ctx.repetitions(reps)]
        r.add(
            f"launch_{blocks}_block{'s' if blocks > 1 else ''}_us",
            vals,
            "us",
            f"launch: empty kernel, {blocks} x 256 threads, one launch between events",
        )
    n = 200
    vals = [dev.time_ms(fn, 1, 256, (), launches=n) * 1e3 / n for _ in ctx.repetitions(_pick(ctx, (3, 10)))]
    r.add("launch_back_to_back_us", vals, "us", f"launch: empty kernel, 1 block, {n} launches back to back")
    return r


def bench_issue(dev, ctx) -> Result:
    """The issue model (Lemeire's CPI with occupancy): FP32 FMA and INT multiply-add chains,
    1 or 4 independent per thread, one block of 1..32 warps per SM. Cycles per
    warp-instruction per SM: with one warp and one chain the pipeline latency; its
    minimum over warps with four chains the issue cost (Hong & Kim's Issue_cycles)."""
    r = Result()
    sms = dev.info.sms
    iters = 4096
    warps = [1, 2, 4, 8, 16, 32] if ctx.quick else [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
    out = dev.zeros(sms, np.int64)
    sink = dev.zeros(1, np.float32)
    usink = dev.zeros(1, np.uint32)
    for op in ("fp32", "int"):
        a, b = (np.float32(0.999), np.float32(0.001)) if op == "fp32" else (np.uint32(3), np.uint32(7))
        for ilp in (1, 4):
            fn = dev.function("issue", f"issue_{op}_ilp{ilp}")
            med, mad = [], []
            for w in warps:
                vals = []
                for _ in ctx.repetitions(_pick(ctx, REPS)):
                    dev.launch(fn, sms, 32 * w, (np.int32(iters), a, b, sink if op == "fp32" else usink, out))
                    vals.append(float(np.median(dev.download(out))) / (w * iters * ilp))
                s = summarize(vals)
                med.append(s.median)
                mad.append(s.spread)
                if ilp == 1 and w == 1:
                    r.add(f"{op}_latency", s, "cycles", f"issue: dependent {op.upper()} chain, one warp")
            r.curves[f"issue_{op}_ilp{ilp}"] = _curve(
                f"issue_{op}_ilp{ilp}", warps, med, mad, x_name="warps", y_name="cycles_per_warp_instruction"
            )
            if ilp == 4:
                k = int(np.argmin(med))
                r.add(f"{op}_issue_cycles", Stat(med[k], mad[k], _pick(ctx, REPS)), "cycles",
                      f"issue: {op.upper()} cycles per warp-instruction per SM at {warps[k]} warps x 4 chains (the minimum)")  # fmt: skip
    return r


FP64_CHAINS = 8
"""Independent DFMA chains a thread of ``dfma_throughput`` runs (``kernels/issue.cu``, its ``FP64_CHAINS``)."""

FP64_BLOCKS_PER_SM = 8
"""Blocks of 256 threads per SM for ``bench_fp64``: up to 64 warps, each with 8 DFMAs in flight."""


def bench_fp64(dev, ctx) -> Result:
    """The double-precision units' throughput: 8 blocks of 256 threads per SM, each thread running 8 independent
    chains of dependent DFMAs, timed with events: double-precision results per second, and per SM per cycle at the
    measured clock (``compute.fp64_per_cycle``, ``placement.hms.t_fp64``: the CUDA C++ Programming Guide's 2 on
    Turing, GA10x and Ada, 32 on GV100 and GA100, 64 on GH100)."""
    r = Result()
    sms = dev.info.sms
    sink = dev.zeros(1, np.float64)
    fn = dev.function("issue", "dfma_throughput")
    grid, block, iters = sms * FP64_BLOCKS_PER_SM, 256, _pick(ctx, (256, 1024))
    args = (np.int32(iters), np.float64(0.999), np.float64(0.001), sink)
    results = grid * block * iters * FP64_CHAINS
    vals = _rates(dev, ctx, fn, grid, block, args, results, _pick(ctx, REPS))
    s = r.add("fp64_gdfma", vals, "G DFMA/s", f"fp64: DFMA chains, {grid} x {block} threads x {iters * FP64_CHAINS}")
    _add_per_sm_cycle(r, dev, ctx, s, "fp64_results_per_cycle_per_sm", "results/cycle/SM",
                      "fp64: DFMA results over the SMs and the clock")  # fmt: skip
    return r


def bench_dram_bits(dev, ctx) -> Result:
    """Huang & Li Algorithm 1: per address bit, two uncached loads that differ in it."""
    r = Result()
    free = dev.free_bytes()
    size = int(min(_pick(ctx, (1024 * MIB, 8192 * MIB)), free // 2))
    hi = int(math.log2(size)) - 1
    lo = 5  # below: the same 32-byte sector, one fetch serves both loads
    buf = dev.zeros(size // 4, np.uint32)
    out = dev.zeros(4, np.int64)
    fn = dev.function("dram_bits", "address_bit_pair")
    bits = list(range(lo, hi + 1))
    firsts, seconds = [], []
    med2 = []
    for x in bits:
        pair = []
        for _ in ctx.repetitions(_pick(ctx, (3, 7))):
            a = int(ctx.rng.integers(0, size // 2)) & ~((1 << (x + 1)) - 1) & ~0x3  # bit x and below clear
            a_words, b_words = a // 4, (a | (1 << x)) // 4
            dev.flush_l2()
            dev.launch(fn, 1, 1, (buf, np.uint64(a_words), np.uint64(b_words), out))
            o = dev.download(out)
            firsts.append(float(o[0]))
            pair.append(float(o[1]))
        med2.append(float(np.median(pair)))
        seconds.append(pair)
    r.curves["dram_bits"] = _curve(
        "dram_bits", bits, med2, [summarize(p).spread for p in seconds], x_name="bit", y_name="second_load_cycles"
    )
    first_med = [float(np.median(firsts))] * len(bits)
    res = classify_address_bits(bits, first_med, med2)
    r.add(
        "dram_row_miss_cycles", firsts, "cycles", "dram_bits (Huang & Li Algorithm 1): the first of two uncached loads"
    )
    clock = ctx.value("sm_clock_mhz") or dev.info.clock_mhz
    if not res.found:
        r.notes.append(
            f"Huang & Li Algorithm 1, bits {lo}-{hi}: {res.reason}; the base configuration's DRAM mapping is kept"
        )
        return r
    r.add(
        "dram_row_hit_ns",
        Stat(res.row_hit * 1e3 / clock, 0.0, len(res.column_bits)),
        "ns",
        "dram_bits: second load, a column bit (row hit)",
    )
    r.add(
        "dram_row_miss_ns", Stat(res.row_miss * 1e3 / clock, 0.0, len(firsts)), "ns", "dram_bits: first load (row miss)"
    )
    r.add(
        "dram_row_conflict_ns",
        Stat(res.row_conflict * 1e3 / clock, 0.0, len(res.row_bits)),
        "ns",
        "dram_bits: second load, a row bit (row conflict)",
    )
    r.notes.append(
        f"Huang & Li Algorithm 1, bits {lo}-{hi}: column bits {list(res.column_bits)}, row bits {list(res.row_bits)}"
    )
    r.address_bits = res
    return r


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("clock", "SM clock under load", (2, 4), bench_clock),
    Benchmark(
        "latency", "L1, read-only, texture, L2, DRAM, shared, constant and L1.5 hit latencies", (5.5, 12), bench_latency
    ),
    Benchmark("walk", "varying-size random walk (ld): L1 and L2 capacities", (15, 120), bench_walk),
    Benchmark("walk_paths", "walks through __ldg, texture and constant: their capacities", (4, 30), bench_walk_paths),
    Benchmark("stride", "sector and line size", (3, 20), bench_stride),
    Benchmark("bandwidth", "DRAM read / write / copy, L2 and shared bandwidth", (4, 20), bench_bandwidth),
    Benchmark("bank_conflicts", "n-way shared-memory bank conflicts", (1, 3), bench_bank_conflicts),
    Benchmark("syncthreads", "__syncthreads() with 1..32 warps", (1, 5), bench_syncthreads),
    Benchmark(
        "atomics", "global and shared atomics, distinct and same address; the L2's atomic units", (2, 6), bench_atomics
    ),
    Benchmark("texture", "texture units' texels per cycle (tex1Dfetch)", (1, 3), bench_texture),
    Benchmark("lsu", "load/store pipe's warp-instructions per cycle (LDS.32)", (1, 3), bench_lsu),
    Benchmark(
        "loads", "L1-hit global loads' warp-instructions per cycle, __ldg and plain, 1 and 2 lines", (2, 8), bench_loads
    ),
    Benchmark("launch", "empty-kernel launch cost", (1, 5), bench_launch),
    Benchmark("issue", "FP32 / INT latency and issue rate against warps", (2, 20), bench_issue),
    Benchmark("fp64", "double-precision units' results per cycle (DFMA)", (0.5, 2), bench_fp64),
    Benchmark("dram_bits", "DRAM row and column bits (Huang & Li Algorithm 1)", (5, 60), bench_dram_bits),
)
