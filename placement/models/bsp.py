"""Amaris et al.'s BSP-based GPU model (Eq. 3-5).

T_k = t x (Comp + Comm_GM + Comm_SM) / (R x P x lambda)            (Eq. 3)
Comm_SM = (ld0 + st0) x g_SM                                         (Eq. 4)
Comm_GM = (ld1 + st1 - L1 - L2) x g_GM + L1 x g_L1 + L2 x g_L2      (Eq. 5)

Counts are per thread: ld0/st0 shared and ld1/st1 global loads and stores, L1 and
L2 the global accesses served by each cache. lambda absorbs everything the model
leaves out (divergence, coalescing, bank conflicts, latency hiding): fitted from
one measured run and reused across input sizes and GPUs of one architecture.

ld1 + st1 from counters: Sec. IV defines Comm_GM as "the sum of load and write
transactions over the global memory". When the counters give the 32-byte L2 sectors
the global accesses query (``KernelParams.l2_sectors``), ld1 + st1 is those sectors
in units of one coalesced access per thread: sectors x 32 B / (32 threads x 4-byte
word). A coalesced kernel keeps its per-thread count (a warp's 32 words = 4 sectors);
an uncoalesced one pays for every sector it touches (a column walk: 32 sectors a
request, 8 x the count), which a single lambda per (GPU, app) could not absorb
across block sizes, since the sectors per request change with the block's width.
The 4-byte word is an assumption (every gpuperfpredict kernel is float). Without
sector counts (a parameter file, a trace) it is the requests per thread, as before.

Double precision (an extension; Amaris et al. count every floating-point operation
alike): Eq. 3 divides Comp by the GPU's P cores, the FP32 lanes. A double-precision
instruction occupies an SM for simd_width / fp64_width of them (the CUDA C++
Programming Guide's results per clock, ``placement.models.params.fp64_cycles_per_warp``):
64 single-precision slots on GA10x, 2 on GA100. Lambda, fitted per architecture, cannot
absorb it where one architecture's parts differ 16-fold (Ampere's GA100 and GA10x), so
Comp counts each of them at that weight where the machine has a rate (none on the
papers' presets: Comp as published).
"""

from __future__ import annotations


from dataclasses import asdict, dataclass

from traces.errors import InputError

from .kernel import KernelParams
from .params import Machine


@dataclass(frozen=True)
class BspLatencies:
    """Communication latencies in cycles (Amaris et al. Sec. V/VI: 5, 500, 5 and 250)."""

    g_sm: float = 5.0
    g_gm: float = 500.0
    g_l1: float = 5.0
    g_l2: float = 250.0


@dataclass(frozen=True)
class BspResult:
    threads: int
    comp: float
    comm_gm: float
    comm_sm: float
    lam: float
    cycles_per_thread: float
    time_s: float

    def as_dict(self) -> dict:
        return asdict(self)


def comm_sm(ld0: float, st0: float, g_sm: float) -> float:
    """Eq. 4."""
    return (ld0 + st0) * g_sm


def comm_gm(ld1: float, st1: float, l1: float, l2: float, g: BspLatencies) -> float:
    """Eq. 5."""
    return (ld1 + st1 - l1 - l2) * g.g_gm + l1 * g.g_l1 + l2 * g.g_l2


def fp64_weight(m: Machine) -> float:
    """The FP32 lanes' slots one double-precision instruction takes: simd_width / fp64_width (1 without a rate)."""
    return m.simd_width / m.fp64_width if m.fp64_width else 1.0


def comp_per_thread(k: KernelParams, m: Machine | None = None) -> float:
    """Comp: the floating-point operations of a thread when known (Sec. V-A), else its computation instructions;
    with a machine, its double-precision ones (part of either) at :func:`fp64_weight`."""
    comp = k.fp_insts if k.fp_insts is not None and k.fp_insts > 0 else k.comp_insts
    if m is None or k.fp64_insts <= 0:
        return comp
    return comp + min(k.fp64_insts, comp) * (fp64_weight(m) - 1.0)


WORD_BYTES = 4
"""The word one thread accesses (float) for ld1 + st1 from sectors."""


def global_accesses(k: KernelParams, m: Machine) -> float:
    """ld1 + st1 per thread: L2 sectors in coalesced-word units when counted, else the requests."""
    if k.l2_sectors > 0:
        return k.l2_sectors * m.sector_bytes / (m.warp_size * WORD_BYTES)
    return k.mem_insts


LAMBDA_MIN, LAMBDA_MAX = 1e-6, 1e6
"""The lambdas ``predict`` takes: Amaris et al.'s fitted ones lie in 0.52-96 (their Table II); six orders of magnitude
either side of 1 leave room for any GPU and keep the times finite (``--lambda 1e-308`` printed 3.9e+305 s)."""


def predict(k: KernelParams, m: Machine, lam: float = 1.0, g: BspLatencies = BspLatencies()) -> BspResult:
    """Eq. 3: the kernel time with lambda ``lam``."""
    if not (LAMBDA_MIN <= lam <= LAMBDA_MAX):  # nan compares false both ways
        raise InputError(f"lambda must be a number from {LAMBDA_MIN:g} to {LAMBDA_MAX:g}, got {lam:g}")
    threads = k.blocks * k.threads_per_block
    mem = global_accesses(k, m)
    l1 = k.l1_hit_ratio * mem
    l2 = k.l2_hit_ratio * mem
    comp = comp_per_thread(k, m)
    gm = comm_gm(mem, 0.0, l1, l2, g)
    sm = comm_sm(k.shared_insts, 0.0, g.g_sm)
    cycles = comp + gm + sm
    t = threads * cycles / (m.freq_hz * m.cores * lam)
    return BspResult(threads=threads, comp=comp, comm_gm=gm, comm_sm=sm, lam=lam, cycles_per_thread=cycles, time_s=t)


def fit_lambda(k: KernelParams, m: Machine, measured_s: float, g: BspLatencies = BspLatencies()) -> float:
    """lambda = T_k(lambda = 1) / T_measured (Sec. IV: the ratio of prediction to measurement)."""
    if not measured_s > 0:
        raise InputError(f"a measured time > 0 is needed to fit lambda, got {measured_s}")
    return predict(k, m, 1.0, g).time_s / measured_s
