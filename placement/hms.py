"""The data-placement model of Huang & Li (HMS), with the corrections of DESIGN.md.

T = T_comp + T_mem - T_overlap (Eq. 1), each term in cycles of one SM, computed for
the sample placement and for the target from the same trace:

1. the trace is rewritten to the target (``traces.rewrite``): spaces, addresses,
   addressing-instruction deltas (Sec. III-B);
2. the rewritten accesses run through the memory hierarchy (``cachesim``):
   coalescing, replays of causes 1-4, caches, the DRAM request stream and its
   row-buffer outcomes (Sec. III-C2, IV);
3. T_comp (GPUPerf Eq. 2-3, which the HMS paper's garbled Eq. 2 means):
   (#inst x #total_warps / #active_SMs) x avg_inst_lat / ITILP + W_serial, with
   #inst the *issued* warp-instructions: the sample's, plus the addressing delta,
   plus the change in replays of causes 1-4 (Eq. 3). W_serial (Eq. 16) is the
   sample's for every placement, as the paper assumes, plus the synchronisation cost
   of the barriers a staged placement adds. Extension beyond the papers: the SMs'
   load/store data path bounds the parallel part, T_comp = max(W_parallel, T_LSU) +
   W_serial, where T_LSU is the cycles per SM the path spends on the placement's
   accesses (``cachesim``: a shared-memory wavefront, a constant address, or a cache
   access's bytes over the path's width, one cycle at least). It is what separates an
   L1-hit-bound stencil from its shared-memory version: W_parallel counts both alike,
   but a warp's unaligned 128-byte load through the L1 moves 5 sectors where the
   shared load moves 4 (the seed models' LD/ST bound, ``placement.models.ldst``, is the
   same idea in units of instructions);
4. T_mem = effective memory requests per SM x AMAT (Eq. 4, 17-19), with
   AMAT (Eq. 5) weighted over the requests of every space: first-level cache hits
   at their own hit latency, L2 hits at the L2's, L2 misses at DRAM_lat and shared
   requests at the shared latency. (The printed Eq. 5 adds hit_lat to shared
   requests too and uses one hit latency for every cache; the weighted form is
   what its own text describes.) DRAM_lat is the per-bank queuing latency of
   Eq. 6-10 (``placement.queuing``) over the DRAM request stream. Eq. 17's ITMLP
   is taken per class of request: the requests that leave the SM (L2 hits, DRAM)
   with GPUPerf's MWP from DRAM's latency and bandwidth, the requests served inside
   the SM (first-level hits, shared-memory wavefronts) with an MWP of their own
   latency over the cycles between two of them (the load/store path's cycles per
   request, T_LSU's), up to N, and that many requests in flight as the bound of
   ITMLP (MWP_peak_bw's role): pipelined, their memory time is the path's time.
   GPUPerf prices every request with DRAM's MWP, which makes an L1-hit-bound
   stencil (a convolution on Ampere: 15 to 20 resident warps' worth of 35-cycle
   hits) look five times slower than its issue and data-path time. T_mem is at
   least T_L2, the L2's time for the requests that reach it (one per line a warp
   access touches) at the architecture's transactions per cycle
   (``placement.models.l2bound``'s rate, where configs/architectures.toml has one:
   Kepler and Maxwell; it was measured in nvprof's line transactions, so lines are
   counted here too, not 32-byte sectors); a naive matrix multiply on Kepler, whose
   loads all go to the L2, runs near that rate;
5. T_overlap from trained Eq. 11 coefficients, else GPUPerf's
   min(T_comp x F_overlap, T_mem).

Request arrival instants come from the hierarchy's issue model: each SM issues
one warp-instruction per ``issue_cycles`` round-robin over its resident warps, so a
request's cycle is its issue slot times ``issue_cycles`` plus the hit latencies of
the levels it passed (the paper's "number of instructions between them", turned
into cycles). With a measured sample time in the trace the target's prediction is
also given as measured x T(target) / T(sample).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

import cachesim
import traces
import traces.io
from traces import SPACE_CODES, SPACE_NAMES, SPACE_SHORT
from traces import keytable
from traces import staging as ts
from traces.context import CONTEXTS, INDEXED, OFFSET, ContextStream, access_context

from . import _dram_kernels, addressing, queuing
from . import staging as stg
from .gpu import Gpu
from .memory import hierarchy_config
from .models import gpuperf
from .models.params import l2_rate_of
from .occupancy import Occupancy, occupancy
from .overlap import FEATURES, OverlapModel
from .placements import IllegalPlacement, Placement, check, is_staged, sample_placement, unstaged

log = logging.getLogger(__name__)

OFFCHIP = ("global", "local", "constant", "texture1d", "texture2d", "readonly")
MIN_DEPARTURE = 1e-3
"""Floor of the cycles between two requests served inside an SM (a guard against dividing by 0)."""


def first_levels(gpu: Gpu) -> dict[str, str | None]:
    """The per-SM cache level each off-chip space meets first (None: straight to the L2), from ``[caches]``."""
    k = gpu.caches
    return {
        "global": "l1" if k.global_in_l1 else None,
        "local": "l1",
        "constant": "const",
        "texture1d": "tex",
        "texture2d": "tex",
        "readonly": None if k.readonly_cache == "none" else k.readonly_cache,
    }


@dataclass(frozen=True)
class Options:
    """How to evaluate; the ablations of Huang & Li Figs. 7-9 are switches here."""

    queue: str = "kingman"
    """'kingman' (corrected, default), 'kingman-paper' (Eq. 9 as printed) or 'exact' (Lindley)."""
    instruction_counting: bool = True
    """False: #inst is the sample's executed count for every placement (Fig. 7 baseline)."""
    queuing: bool = True
    """False: DRAM_lat is the mean row-buffer service time, no queuing delay (Figs. 8-9)."""
    even_banks: bool = False
    """True: DRAM requests spread round-robin over the banks instead of by address (Fig. 8)."""
    overlap: OverlapModel | None = None

    def __post_init__(self):
        if self.queue not in queuing.MODES:
            raise traces.InputError(f"--queue {self.queue!r}: expected one of {', '.join(queuing.MODES)}")


@dataclass(frozen=True)
class Terms:
    """One placement's prediction and every intermediate (cycles are SM cycles)."""

    placement: dict[str, str]
    time_ns: float
    cycles: float
    t_comp: float
    t_mem: float
    t_overlap: float
    overlap_source: str
    t_lsu: float
    """Cycles per SM of the load/store data path (see the module docstring, 3)."""
    t_l2: float
    """Cycles the L2 needs for the requests that reach it, at the architecture's rate (0: no rate known)."""
    issued_instructions: float
    executed_instructions: float
    addressing_delta: int
    replays: dict[str, int]
    inst_per_warp: float
    w_parallel: float
    w_serial: float
    mem_requests: int
    effective_mem_requests_per_sm: float
    amat: float
    miss_ratio: float
    shmem_ratio: float
    dram_lat: float
    dram_requests: int
    mean_queuing_delay: float
    mean_service: float
    saturated_banks: int
    banks: int
    row_buffer: dict[str, int]
    caches: dict[str, dict[str, int]]
    mwp: float
    cwp: float
    itilp: float
    itmlp: float
    n: int
    blocks_per_sm: int
    active_sms: int
    smem_per_block: int
    events: dict[str, float]
    staging: dict[str, Any] = field(default_factory=dict)
    """For staged placements: the windows, each object's tile, the instructions the staging
    code adds, and the window counts tried with their times."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Evaluation:
    """A target placement's terms beside the sample's."""

    gpu: str
    kernel: str
    sample: Terms
    target: Terms
    speedup: float
    """T(sample) / T(target): above 1 the target is faster."""
    measured_sample_ns: float | None
    predicted_ns: float | None
    """measured_sample x T(target) / T(sample), when the trace carries a measured time."""
    options: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        d = {
            "gpu": self.gpu,
            "kernel": self.kernel,
            "placement": self.target.placement,
            "time_ns": self.target.time_ns,
            "speedup": self.speedup,
            "measured_sample_ns": self.measured_sample_ns,
            "predicted_ns": self.predicted_ns,
            "options": self.options,
        }
        d.update({k: v for k, v in self.target.as_dict().items() if k not in ("placement", "time_ns")})
        d["sample"] = self.sample.as_dict()
        return d


# The addressing table each access context of ``traces.context`` reads (configs/addressing.toml). An
# OFFSET access reads the "offset_leading" table: nvcc folds a constant offset into the instruction
# for plain, shared and constant loads whatever the index expression, but for __ldg (inline asm on
# a pointer) only when the pointer itself is offset (``&a[i] + k``); a stencil's int index
# expression, ``in[(y + i) * W + x + j]``, is widened per access and pays the 64-bit address each
# time. Measured here on a 15 x 15 convolution written as Kernel Tuner's (sm_80, nvcc 13.0):
# 928 SASS instructions with __ldg against 480 with plain loads, 2 per access, the
# "offset_leading" count; the "offset" table (0) is the pointer-offset form.
CONTEXT_TABLES = {"indexed": "indexed", "offset": "offset_leading"}


def addr_cost_table(info: traces.KernelInfo, gpu: Gpu) -> np.ndarray:
    """(contexts, objects, spaces) addressing instructions per access (configs/addressing.toml), one table per
    access context of ``traces.context`` (an indexed access, a constant offset from the previous one)."""
    n_ids = max((o.id for o in info.objects), default=-1) + 1
    table = np.zeros((len(CONTEXTS), max(n_ids, 1), len(SPACE_NAMES)), dtype=np.int16)
    for c, context in enumerate(CONTEXTS):
        for o in info.objects:
            for s, space in SPACE_SHORT.items():
                # the offset tables do not measure 2D textures: their indexed count (the coordinates'
                # conversions) stands in every context
                ctx = "indexed" if s == "2T" else CONTEXT_TABLES[context]
                table[c, o.id, SPACE_CODES[space]] = addressing.addressing_cost(gpu.arch, o.elem_bytes, s, ctx)
    return table


@dataclass(frozen=True)
class _Memory:
    """What the hierarchy and the DRAM queues say about one placement."""

    hier: cachesim.HierarchyTotals
    queue: queuing.Queuing
    dram_lat: float
    requests: int
    amat: float
    miss_ratio: float
    shmem_ratio: float
    avg_trans_warp: float
    transaction_bytes: float
    events: dict[str, float]
    caches: dict[str, dict[str, int]]
    on_chip_requests: int
    """Requests served inside the SM: first-level cache hits and shared-memory wavefronts."""
    on_chip_amat: float
    off_chip_requests: int
    """Requests that leave the SM: L2 hits and DRAM accesses."""
    off_chip_amat: float


def dram_stream(h: cachesim.HierarchyResult, gpu: Gpu) -> tuple[np.ndarray, ...]:
    """The DRAM requests as the bank queues see them: (bank, arrival, busy, latency), in cycles.

    - latency: the unloaded access latency of the request's row-buffer outcome
      (Eq. 8: hit, miss or conflict, as measured on the GPU);
    - busy: how long the request keeps its bank busy. The paper puts the access
      latency here, but a load-to-use latency is not a bank's occupancy: at 742 ns a
      request, a K80 bank would serve 1.35 M requests/s and the whole GPU would move
      under a tenth of its 240 GB/s. We take the request's transfer time on its
      channel (bytes over bandwidth / channels), scaled for a row miss or conflict by
      the ratio of their measured latencies to the hit's;
    - arrival: the hierarchy's estimated cycle (the issue model), held back so that
      requests leave for DRAM no faster than the peak bandwidth carries them (a
      departure delay of bytes / bandwidth between consecutive requests, as Hong &
      Kim's Departure_delay spaces a warp's transactions): an open-loop issue model
      would otherwise send every warp's requests at once.
    """
    d = h.dram
    arrival, busy, latency, _, _ = _dram_piece(gpu, h.dram_bytes, d.arrival, d.service_ns, 0.0, -np.inf, order=d.order)
    return d.bank.astype(np.int64), arrival, busy, latency


def _dram_piece(gpu: Gpu, nbytes: np.ndarray, cycle: np.ndarray, service_ns: np.ndarray, g0: float, m0: float,
                order: np.ndarray | None = None):  # fmt: skip
    """``dram_stream``'s arrival, busy and latency for consecutive requests, carrying the departure delays
    so far (``g0``) and the running maximum of arrival - delay (``m0``) from the requests before them;
    returns both updated. The whole stream is one piece from (0, -inf). Request k has ``nbytes[order[k]]``
    bytes (``nbytes[k]`` without ``order``).

    With gap_k = bytes_k / (bytes per cycle) and G_k = g0 + gap_0 + ... + gap_(k-1) (summed in that order):
    arrival_k = max(m0, cycle_0 - G_0, ..., cycle_k - G_k) + G_k, busy_k = gap_k x channels x
    (service_k / row-hit time), latency_k = service_k x MHz / 1e3 (``_dram_kernels.dram_piece``, one pass)."""
    mhz = gpu.compute.clock_mhz
    bytes_per_cycle = gpu.memory.bandwidth_gbs * 1e3 / mhz  # GB/s over MHz: bytes per cycle
    n = cycle.shape[0]
    if order is None:
        order = np.arange(n, dtype=np.int64)
    arrival, busy, latency = np.empty(n), np.empty(n), np.empty(n)
    g, m = _dram_kernels.dram_piece(
        nbytes, order, np.ascontiguousarray(cycle, np.float64), np.ascontiguousarray(service_ns, np.float64),
        float(bytes_per_cycle), float(gpu.dram.channels), float(gpu.dram.row_hit_ns), float(mhz), float(g0), float(m0),
        arrival, busy, latency,
    )  # fmt: skip
    return arrival, busy, latency, float(g), float(m)


def _memory(trace: traces.Trace, gpu: Gpu, blocks_per_sm: int, opts: Options, in_flight: float) -> _Memory:
    """Hierarchy, DRAM queues and AMAT of one placement.

    ``in_flight`` bounds the requests outstanding at once (the closed-system cap of
    ``queuing.dram_latency``): every resident warp of every active SM with MLP
    requests each.
    """
    cfg = hierarchy_config(gpu)
    h = cachesim.simulate_hierarchy(trace, cfg, blocks_per_sm)
    # DRAM latency from the request stream (Eq. 6-10); see dram_stream().
    d = h.dram
    bank, arrival, busy, latency = dram_stream(h, gpu)
    if opts.even_banks and d.n_banks:
        bank = np.arange(bank.shape[0], dtype=np.int64) % d.n_banks
    q = queuing.dram_latency(
        bank, arrival, busy, opts.queue if opts.queuing else "exact", latency=latency, population=in_flight
    )
    tb = float(h.dram_bytes.mean()) if h.dram_bytes.shape[0] else float(gpu.memory.line_bytes)
    return _reduce(h.totals(), q, tb, gpu, cfg, opts)


def _reduce(h: cachesim.HierarchyTotals, q: queuing.Queuing, tb: float, gpu: Gpu, cfg: cachesim.HierarchyConfig,
            opts: Options) -> _Memory:  # fmt: skip
    """AMAT, events and the request classes of one placement from its hierarchy counts and DRAM queues
    (``tb``: the DRAM requests' mean bytes)."""
    k = gpu.caches
    hit_latency = {"l1": k.l1_latency, "tex": k.tex_latency, "const": k.const_latency, "l2": k.l2_latency}
    present = {lvl: cfg.specs[lvl] is not None for lvl in cachesim.LEVELS}
    first_level = first_levels(gpu)
    li = {lvl: i for i, lvl in enumerate(cachesim.LEVELS)}

    dram_lat = q.dram_lat if opts.queuing else q.mean_service
    if h.dram_requests == 0:
        dram_lat = gpu.memory.dram_latency

    latency_sum = 0.0
    requests = 0
    dram_bound = 0
    on_chip = 0  # requests served inside the SM: first-level cache hits (shared memory is added below)
    on_chip_lat = 0.0
    caches: dict[str, dict[str, int]] = {}
    events = dict.fromkeys(("global", "constant", "texture", "shared"), 0.0)
    for space in OFFCHIP:
        j = SPACE_CODES[space]
        if h.instructions[j] == 0:
            continue
        chain = [lvl for lvl in (first_level[space], "l2") if lvl is not None and present[lvl]]
        first = chain[0] if chain else None
        n_req = int(h.requests[li[first], j]) if first else int(h.transactions[j])
        requests += n_req
        for lvl in chain:
            hits = int(h.hits[li[lvl], j])
            latency_sum += hits * hit_latency[lvl]
            if lvl != "l2":
                on_chip += hits
                on_chip_lat += hits * hit_latency[lvl]
            caches[f"{lvl}.{space}"] = {
                "requests": int(h.requests[li[lvl], j]), "hits": hits, "misses": int(h.misses[li[lvl], j]),
            }  # fmt: skip
        misses = int(h.misses[li[chain[-1]], j]) if chain else n_req
        dram_bound += misses
        if space in ("global", "readonly"):
            events["global"] += n_req + (int(h.misses[li["l2"], j]) if present["l2"] else misses)
        elif space == "constant":
            events["constant"] += n_req + (int(h.misses[li["const"], j]) if present["const"] else 0)
        elif space.startswith("texture"):
            events["texture"] += n_req + (int(h.misses[li["tex"], j]) if present["tex"] else 0)
    shared = int(h.transactions[SPACE_CODES["shared"]])
    events["shared"] = shared + int(h.replays[4])
    requests += shared
    if requests:
        amat = (latency_sum + dram_bound * dram_lat + shared * gpu.memory.smem_latency) / requests
        miss_ratio = dram_bound / requests
        shmem_ratio = shared / requests
    else:
        amat = miss_ratio = shmem_ratio = 0.0
    g = SPACE_CODES["global"]
    avg_trans = float(h.transactions[g] / h.instructions[g]) if h.instructions[g] else 1.0
    rb = h.row_buffer
    events["row"] = rb.get("miss", 0) + rb.get("conflict", 0)
    norm = {f"e_{k}": v / requests if requests else 0.0 for k, v in events.items()}
    on_chip += shared
    on_chip_lat += shared * gpu.memory.smem_latency
    off = requests - on_chip
    off_lat = latency_sum + dram_bound * dram_lat + shared * gpu.memory.smem_latency - on_chip_lat
    return _Memory(h, q, dram_lat, requests, amat, miss_ratio, shmem_ratio, avg_trans, tb, norm, caches,
                   on_chip, on_chip_lat / on_chip if on_chip else 0.0, off, off_lat / off if off else 0.0)


def _whole(trace: traces.Trace, gpu: Gpu, opts: Options):
    """``terms``' memory function of a whole trace in memory."""
    return lambda blocks_per_sm, in_flight: _memory(trace, gpu, blocks_per_sm, opts, in_flight)


@dataclass(frozen=True)
class Issue:
    """Eq. 3's instruction counts of one placement, before the replays its hierarchy finds."""

    base: float
    """Issued warp-instructions without the placement's own replays of causes 1-4."""
    add_replays: bool
    """Whether the replays of causes 1-4 the hierarchy finds go on top of ``base``."""
    executed: float
    addressing_delta: int


@dataclass(frozen=True)
class Target:
    """One placement as :func:`terms` takes it beside its memory: occupancy, Eq. 3's counts, W_serial's start."""

    placement: Placement
    occ: Occupancy
    smem_per_block: int
    issue: Issue
    w_serial: float | None = None
    """None: W_serial computed for this placement (the sample); else the sample's, which every placement shares."""
    extra_sync: float = 0.0
    """Barrier warp-instructions the placement's staging code adds: their O_sync goes on top of ``w_serial``."""
    staging: dict[str, Any] | None = None
    """A staged placement's ``Terms.staging`` detail."""


def sample_issue(ins: traces.Instructions, options: Options) -> Issue:
    """The sample's counts: the trace's issued count when it has one, else executed plus the replays of causes
    1-4 the hierarchy finds (causes 5-10 are unknown); without instruction counting, executed."""
    counting = options.instruction_counting
    known = ins.issued is not None or not counting
    base = float(ins.issued) if ins.issued is not None and counting else float(ins.executed)
    return Issue(base, not known, float(ins.executed), 0)


def target_issue(sample: Terms, options: Options, delta: int, added: int = 0) -> Issue:
    """Eq. 3: a target keeps the sample's issued count with its replays of causes 1-4 swapped for its own (added by
    :func:`issued`), plus the addressing delta (Sec. III-B) and the instructions ``added`` by staging code;
    without instruction counting, the executed count."""
    executed = sample.executed_instructions
    if not options.instruction_counting:
        base = executed
    else:
        base = sample.issued_instructions - float(sum(sample.replays.values())) + delta + added
    return Issue(base, options.instruction_counting, executed + delta + added, delta)


def issued(issue: Issue, mem: _Memory) -> float:
    """#inst of Eq. 2, the issued warp-instructions (Eq. 3): ``issue.base`` plus the replays of causes 1-4."""
    return issue.base + (float(mem.hier.replays[1:5].sum()) if issue.add_replays else 0.0)


@dataclass(frozen=True)
class Residency:
    """GPUPerf's #total_warps, #active_SMs and N of one placement, with the trace's ILP and MLP."""

    total_warps: int
    active_sms: int
    blocks_per_sm: int
    """Resident blocks: the occupancy limit, or fewer when the grid cannot fill the SMs."""
    n: int
    """N: resident warps per SM."""
    ilp: float
    mlp: float

    @property
    def in_flight(self) -> float:
        """Requests outstanding at once (``queuing.dram_latency``'s closed-system cap): every resident warp of
        every active SM with MLP requests each."""
        return self.active_sms * self.n * self.mlp


def residency(info: traces.KernelInfo, gpu: Gpu, occ: Occupancy) -> Residency:
    """The warps that run at once under ``occ`` (GPUPerf Sec. 4)."""
    total_warps = info.instructions.warps or info.ctas * info.warps_per_block
    active_sms = min(gpu.compute.sms, info.ctas)
    blocks_per_sm = min(occ.blocks_per_sm, -(-info.ctas // active_sms))
    n = blocks_per_sm * occ.warps_per_block
    mlp = float(info.extra.get("mlp", 1.0) or 1.0)
    ilp = float(info.extra.get("ilp", 1.0) or 1.0)
    return Residency(total_warps, active_sms, blocks_per_sm, n, ilp, mlp)


@dataclass(frozen=True)
class Parallelism:
    """GPUPerf's warp parallelism of one placement: ITILP and W_parallel (Eq. 3-4), MWP and CWP (Eq. 12-14)."""

    inst_per_warp: float
    itilp: float
    w_parallel: float
    mwp: float
    cwp: float
    mwp_peak_bw: float


def parallelism(inst: float, mem: _Memory, res: Residency, gpu: Gpu) -> Parallelism:
    """ITILP, W_parallel = #inst x #total_warps / #active_SMs x avg_inst_lat / ITILP, MWP (from DRAM's latency
    and bandwidth) and CWP of ``inst`` issued warp-instructions (GPUPerf Eq. 3-4, 12-14)."""
    c = gpu.compute
    inst_per_warp = inst / res.total_warps
    lat = c.avg_inst_latency
    imax = gpuperf.itilp_max(lat, c.warp_size, c.cores_per_sm)
    itilp = gpuperf.itilp(res.ilp, res.n, imax)
    w_par = gpuperf.w_parallel(inst_per_warp, res.total_warps, res.active_sms, lat, itilp)

    delta = gpu.memory.departure_del_coal
    avg_dram = gpuperf.avg_dram_lat(mem.dram_lat, mem.avg_trans_warp, delta)
    peak = gpuperf.mwp_peak_bw(gpu.memory.bandwidth_gbs, gpu.clock_hz, mem.transaction_bytes, max(avg_dram, 1e-9),
                               res.active_sms)  # fmt: skip
    mwp = max(1.0, gpuperf.mwp(max(avg_dram, 1e-9), delta, peak, res.n))
    mem_per_warp = mem.requests / res.total_warps
    comp_cycles = inst_per_warp * lat / itilp
    mem_cycles = mem_per_warp * mem.amat / res.mlp
    cwp = gpuperf.cwp(mem_cycles, comp_cycles, res.n)
    return Parallelism(inst_per_warp, itilp, w_par, mwp, cwp, peak)


def w_serial(info: traces.KernelInfo, gpu: Gpu, mem: _Memory, res: Residency, mwp: float,
             inst_per_warp: float) -> float:  # fmt: skip
    """W_serial = O_sync + O_SFU (Eq. 16), the sample's, shared by every placement.

    O_sync is Hong & Kim's Eq. 26 (:func:`o_sync`). GPUPerf's Eq. 7-8 as printed charges
    Gamma x avg_DRAM_lat x mem_ratio per barrier *per warp* (tens of thousands of
    cycles per barrier), far more than the spread of warp progress a barrier can
    cost, and makes a tiled matrixMul of 128 x 128 take milliseconds.
    O_SFU is GPUPerf's Eq. 9-10. O_CFdiv is left out (the trace holds no branch
    divergence), O_bank too: bank conflicts are replays in #inst (Eq. 3).
    """
    c = gpu.compute
    ins = info.instructions
    per_sm = res.total_warps / res.active_sms
    sync = o_sync(info, gpu, mem, res, mwp, ins.sync)
    fs = gpuperf.f_sfu(ins.sfu / res.total_warps, inst_per_warp, c.sfus_per_sm, c.cores_per_sm)
    o_sfu = ins.sfu / res.total_warps * per_sm * (c.warp_size / c.sfus_per_sm) * fs
    return sync + o_sfu


def o_sync(info: traces.KernelInfo, gpu: Gpu, mem: _Memory, res: Residency, mwp: float, sync: float) -> float:
    """O_sync of ``sync`` barrier warp-instructions, Hong & Kim's Eq. 26: Departure_delay x (MWP - 1) x
    #synch_insts x #Active_blocks_per_SM x #Rep, with Eq. 15's Departure_delay from the global
    accesses' transactions per request (Departure_del_coal when coalesced, else
    Departure_del_uncoal x transactions), and MWP capped at the block's warps: a
    barrier waits only for the warps of its own block (Hong & Kim: the delay is
    "in one block"), which leaves their Table 2 (4 warps, MWP 2.28) unchanged."""
    m = gpu.memory
    if mem.avg_trans_warp <= 1.0:
        departure = m.departure_del_coal
    else:
        departure = m.departure_del_uncoal * mem.avg_trans_warp
    rep = info.ctas / (res.active_sms * res.blocks_per_sm)
    waiting = min(mwp, info.warps_per_block) - 1.0
    return departure * max(waiting, 0.0) * (sync / res.total_warps) * res.blocks_per_sm * rep


def target_w_serial(info: traces.KernelInfo, gpu: Gpu, mem: _Memory, res: Residency, par: Parallelism,
                    target: Target) -> float:  # fmt: skip
    """The placement's W_serial: the sample's own (:func:`w_serial`), or the sample's for a target plus the
    O_sync of the barriers its staging code adds."""
    if target.w_serial is None:
        return w_serial(info, gpu, mem, res, par.mwp, par.inst_per_warp)
    if target.extra_sync:
        return target.w_serial + o_sync(info, gpu, mem, res, par.mwp, target.extra_sync)
    return target.w_serial


def t_lsu(mem: _Memory, res: Residency) -> float:
    """T_LSU: the cycles per SM the load/store data path spends on the placement's accesses (module docstring, 3)."""
    return float(mem.hier.lsu_cycles.sum()) / res.active_sms


def t_comp(par: Parallelism, lsu: float, serial: float) -> float:
    """T_comp (GPUPerf Eq. 2, the form the HMS paper's garbled Eq. 2 means), with the load/store path's bound:
    max(W_parallel, T_LSU) + W_serial."""
    return gpuperf.t_comp(max(par.w_parallel, lsu), serial)


def t_l2(mem: _Memory, gpu: Gpu) -> float:
    """T_L2: every request that reaches the L2 at the architecture's measured transactions per cycle (the seed
    models' bound, ``placement.models.l2bound``); 0 where no rate is known."""
    l2_rate = l2_rate_of(gpu)
    return float(mem.hier.requests[cachesim.LEVELS.index("l2")].sum()) / l2_rate if l2_rate else 0.0


@dataclass(frozen=True)
class MemoryTime:
    """T_mem and its parts: Eq. 17's ITMLP of the requests that leave the SM and the effective requests per SM."""

    t_mem: float
    t_l2: float
    itmlp: float
    effective_requests_per_sm: float


def t_mem(mem: _Memory, res: Residency, par: Parallelism, lsu: float, gpu: Gpu) -> MemoryTime:
    """T_mem = effective memory requests per SM x AMAT (Eq. 4, 17), per class of request, at least T_L2.

    The requests that leave the SM queue for the L2 and DRAM, with an ITMLP from GPUPerf's MWP (DRAM's latency
    and bandwidth); those served inside the SM leave at the load/store path's pace (T_LSU's cycles per request),
    so their MWP is their latency over those cycles, up to N, and no DRAM bandwidth bounds it."""
    mlp, active_sms = res.mlp, res.active_sms
    itmlp = max(1e-9, gpuperf.itmlp(mlp, par.mwp, par.cwp, par.mwp_peak_bw))
    # the load/store path's cycles per request: a request served inside the SM leaves no sooner
    departure_on = max(lsu * active_sms / mem.requests, MIN_DEPARTURE) if mem.requests else 1.0
    peak_on = max(1.0, mem.on_chip_amat / departure_on)  # requests in flight the path sustains
    mwp_on = min(peak_on, float(res.n))
    itmlp_on = max(1e-9, gpuperf.itmlp(mlp, mwp_on, par.cwp, peak_on))
    eff = mem.off_chip_requests / (active_sms * itmlp) + mem.on_chip_requests / (active_sms * itmlp_on)
    t = (mem.off_chip_requests * mem.off_chip_amat / itmlp
         + mem.on_chip_requests * mem.on_chip_amat / itmlp_on) / active_sms  # fmt: skip
    l2 = t_l2(mem, gpu)
    return MemoryTime(max(t, l2), l2, itmlp, eff)


def overlap_features(mem: _Memory, res: Residency) -> np.ndarray:
    """Eq. 11's events per memory request (``overlap.FEATURES``), N and the constant term."""
    e = mem.events
    return np.array([e["e_global"], e["e_constant"], e["e_texture"], e["e_shared"], e["e_row"], float(res.n), 1.0])


def t_overlap(model: OverlapModel | None, features: np.ndarray, comp: float, memory: float, n: int,
              par: Parallelism) -> tuple[float, str]:  # fmt: skip
    """T_overlap and where it came from: Eq. 11's trained coefficients (``model``), else GPUPerf's
    min(T_comp x F_overlap, T_mem)."""
    if model is not None:
        return model.t_overlap(features, comp, memory), f"trained coefficients ({model.source or 'given'})"
    return (gpuperf.t_overlap(comp, memory, gpuperf.f_overlap(n, par.cwp, par.mwp)),
            "GPUPerf fallback min(T_comp x F_overlap, T_mem) (no trained coefficients)")  # fmt: skip


def t_kernel(comp: float, memory: float, overlap: float) -> float:
    """T = T_comp + T_mem - T_overlap (Eq. 1), in cycles of one SM."""
    return comp + memory - overlap


def terms(info: traces.KernelInfo, memory, gpu: Gpu, opts: Options, target: Target) -> Terms:
    """The terms of one placement: T (Eq. 1) of its T_comp, T_mem and T_overlap, with every intermediate.

    ``memory(blocks_per_sm, in_flight)`` gives the placement's :class:`_Memory` (``_memory`` over
    its trace, or a streamed run).
    """
    res = residency(info, gpu, target.occ)
    mem = memory(res.blocks_per_sm, res.in_flight)
    inst = issued(target.issue, mem)
    par = parallelism(inst, mem, res, gpu)
    serial = target_w_serial(info, gpu, mem, res, par, target)
    lsu = t_lsu(mem, res)
    comp = t_comp(par, lsu, serial)
    mt = t_mem(mem, res, par, lsu, gpu)
    features = overlap_features(mem, res)
    overlap, source = t_overlap(opts.overlap, features, comp, mt.t_mem, res.n, par)
    cycles = t_kernel(comp, mt.t_mem, overlap)
    h = mem.hier
    return Terms(
        placement=target.placement.as_dict(),
        time_ns=gpu.cycles_to_ns(cycles),
        cycles=cycles,
        t_comp=comp,
        t_mem=mt.t_mem,
        t_overlap=overlap,
        overlap_source=source,
        t_lsu=lsu,
        t_l2=mt.t_l2,
        issued_instructions=inst,
        executed_instructions=target.issue.executed,
        addressing_delta=target.issue.addressing_delta,
        replays={cachesim.REPLAY_CAUSES[i]: int(h.replays[i]) for i in (1, 2, 3, 4)},
        inst_per_warp=par.inst_per_warp,
        w_parallel=par.w_parallel,
        w_serial=serial,
        mem_requests=mem.requests,
        effective_mem_requests_per_sm=mt.effective_requests_per_sm,
        amat=mem.amat,
        miss_ratio=mem.miss_ratio,
        shmem_ratio=mem.shmem_ratio,
        dram_lat=mem.dram_lat,
        dram_requests=h.dram_requests,
        mean_queuing_delay=mem.queue.mean_queuing_delay if opts.queuing else 0.0,
        mean_service=mem.queue.mean_service,
        saturated_banks=mem.queue.saturated_banks,
        banks=h.n_banks,
        row_buffer=dict(h.row_buffer),
        caches=mem.caches,
        mwp=par.mwp,
        cwp=par.cwp,
        itilp=par.itilp,
        itmlp=mt.itmlp,
        n=res.n,
        blocks_per_sm=res.blocks_per_sm,
        active_sms=res.active_sms,
        smem_per_block=target.smem_per_block,
        events={f: float(v) for f, v in zip(FEATURES, features)},
        staging=target.staging or {},
    )


def group_key(placement: Placement) -> tuple[tuple[str, str], ...]:
    """Placements with one key share their rewritten trace and their staged tiles: every object in the same
    space but for the source of a staged one (S/G, S/T, S/R); the evaluators evaluate them together."""
    return tuple((n, "S" if is_staged(s) else s) for n, s in placement.spaces)


def groups(placements: list[Placement]) -> list[list[Placement]]:
    """``placements`` in groups of one :func:`group_key`, in order of first appearance."""
    out: dict[tuple, list[Placement]] = {}
    for p in placements:
        out.setdefault(group_key(p), []).append(p)
    return list(out.values())


class Evaluator:
    """Evaluates placements of one trace on one GPU, computing the sample once.

    ``evaluate(placement)`` is a pure function of (trace, gpu, options, placement);
    the sample's terms (and W_serial, which every placement shares) are computed
    once, when the evaluator is made.
    """

    def __init__(self, trace: traces.Trace, gpu: Gpu, options: Options = Options()):
        self.trace = trace
        self.gpu = gpu
        self.options = options
        self.info = trace.info
        self.sample_placement = sample_placement(self.info)
        self.cost = addr_cost_table(self.info, gpu)
        self.staging = stg.StagingFacts(trace)
        self.context = access_context(trace, self.staging.order)
        legal = check(self.info, gpu, self.sample_placement)
        target = Target(self.sample_placement, legal.occupancy, legal.smem_per_block,
                        sample_issue(self.info.instructions, options))  # fmt: skip
        self.sample = terms(self.info, _whole(trace, gpu, options), gpu, options, target)
        self.evaluations = 0

    def check(self, placement: Placement):
        """The placement's legality (``placements.check`` with this trace's footprints)."""
        return check(self.info, self.gpu, placement, self.staging)

    def _targets(self, placements: list[Placement], legals: list) -> list[Terms]:
        """The targets' terms (one ``group_key``): rewritten (and staged) trace, Eq. 3's issued count, the model.

        The trace is rewritten once; per window count, staged once for the first placement and
        re-sourced (``traces.staging.restage``: the same rows, other staging loads) for the others,
        which ``stage`` would give row for row. One staged trace is alive at a time, and only when it is
        short: a longer one is staged in pieces of ``traces.staging.STAGE_PIECE_ROWS`` rows, fed to each
        placement's hierarchy one after the other (``_option_terms``; every count the same, the times to
        1e-12 relative: the DRAM queues' moments are summed in another order), so that memory stays bounded
        by the trace, not by its staging code (a privatized histogram's is 24 rows a row)."""
        first = placements[0]
        staged = [self.info.object(n).id for n, s in first.spaces if is_staged(s)]
        rw = traces.rewrite(self.trace, unstaged(first), self.cost, staged=staged, context=self.context)
        if not staged:  # the key is the placement: a group of one
            delta = int(rw.addr_inst_delta.sum(dtype=np.int64))
            return [_unstaged_terms(self, rw.trace.info, _whole(rw.trace, self.gpu, self.options), first, legals[0],
                                    delta)]  # fmt: skip
        choice = legals[0].staging  # the window counts worth trying (the key fixes them); keep the fastest
        costs = stg.costs(self.gpu)
        tried: list[list] = [[] for _ in placements]
        for option in choice.options:
            occ = occupancy(self.gpu, self.info.threads_per_block, self.info.regs_per_thread, option.smem_per_block)
            plans = [stg.plan(self.staging, self.gpu, p, option, choice.own_smem) for p in placements]
            pieces = ts.stage_pieces(rw.trace, rw.addr_inst_delta, plans[0], option.windows, costs.barrier,
                                     option.smem_per_block, order=self.staging.order)  # fmt: skip
            for k, t in enumerate(_option_terms(self, placements, plans, option, occ, costs, pieces)):
                tried[k].append((option, t))
        return [_fastest(t) for t in tried]

    def evaluate(self, placement: Placement) -> Evaluation:
        return self.evaluate_group([placement])[0]

    def evaluate_group(self, placements: list[Placement]) -> list[Evaluation]:
        """``evaluate`` of each placement; placements of one ``group_key`` share their rewriting and staging."""
        legal = {p: self.check(p) for p in placements}
        self.evaluations += len(placements)
        targets = {self.sample_placement: self.sample}
        for g in groups([p for p in legal if p != self.sample_placement]):
            targets.update(zip(g, self._targets(g, [legal[p] for p in g])))
        return [_evaluation(self.info, self.gpu, self.options, self.sample, targets[p]) for p in placements]


def _evaluation(info, gpu: Gpu, options: Options, sample: Terms, target: Terms) -> Evaluation:
    measured = info.measured.time_ns if info.measured else None
    speedup = sample.cycles / target.cycles if target.cycles > 0 else float("inf")
    return Evaluation(
        gpu=gpu.name,
        kernel=info.kernel,
        sample=sample,
        target=target,
        speedup=speedup,
        measured_sample_ns=measured,
        predicted_ns=measured * target.cycles / sample.cycles if measured and sample.cycles else None,
        options={
            "queue": options.queue,
            "instruction_counting": options.instruction_counting,
            "queuing": options.queuing,
            "even_banks": options.even_banks,
        },
    )


class _StreamRun:
    """One placement's hierarchy and DRAM queues fed a group of (rewritten) rows at a time:
    ``_memory`` in bounded memory. The DRAM stream's arrivals and busy times are
    ``dram_stream``'s, computed piece by piece with its running sums carried (the same
    sums in the same order)."""

    def __init__(self, info, gpu: Gpu, opts: Options, blocks_per_sm: int):
        self.gpu, self.opts = gpu, opts
        self.cfg = hierarchy_config(gpu)
        self.queue = queuing.QueueStream()
        self.hier = cachesim.HierarchyStream(self.cfg, info, blocks_per_sm, on_dram=self._dram)
        self._g = 0.0  # departure delays so far
        self._m = -np.inf  # running maximum of arrival - delay

    def feed(self, group: traces.Trace) -> None:
        self.hier.feed(group)

    def _dram(self, piece: cachesim.DramPiece) -> None:
        arrival, busy, latency, self._g, self._m = _dram_piece(
            self.gpu, piece.nbytes, piece.cycle, piece.service_ns, self._g, self._m)
        self.queue.feed(piece.bank, arrival, busy, latency)

    def finish(self):
        """``terms``' memory function of the run."""
        h = self.hier.finish()
        tb = h.dram_bytes / h.dram_requests if h.dram_requests else float(self.gpu.memory.line_bytes)
        opts = self.opts
        mode = opts.queue if opts.queuing else "exact"

        def memory(blocks_per_sm: int, in_flight: float) -> _Memory:
            assert blocks_per_sm == self.hier.blocks_per_sm
            return _reduce(h, self.queue.result(mode, population=in_flight), tb, self.gpu, self.cfg, opts)

        return memory


def _staging_detail(option, ins: dict, costs) -> tuple[float, dict]:
    """The instructions one staging option adds (its copy loop, barriers and write-back) and
    the ``staging`` detail an evaluation reports, for the whole-trace and streamed evaluators."""
    added = (ins["loads"] + ins["stores"] + ins["int"] + ins["barriers"] * costs.barrier
             + ins["writeback_loads"] + ins["writeback_stores"])  # fmt: skip
    detail = {
        "windows": option.windows,
        "why": option.why,
        "tiles": {n: {"bytes": b, "pitch": p} for n, b, p in option.tiles},
        "inserted": dict(ins),
        "added_instructions": added,
    }
    return added, detail


def _unstaged_terms(ev: "Evaluator | StreamEvaluator", info, memory, placement: Placement, legal,
                    delta: int) -> Terms:  # fmt: skip
    """An unstaged target's terms, either evaluator's: Eq. 3's issued count with its addressing delta."""
    target = Target(placement, legal.occupancy, legal.smem_per_block, target_issue(ev.sample, ev.options, delta),
                    ev.sample.w_serial)  # fmt: skip
    return terms(info, memory, ev.gpu, ev.options, target)


def _staged_terms(ev: "Evaluator | StreamEvaluator", info, memory, placement: Placement, option, occ: Occupancy,
                  ins: dict, costs, delta: int) -> Terms:  # fmt: skip
    """One staging option's terms, either evaluator's: the instructions and barriers it adds on top of the
    addressing delta, its occupancy and shared memory, and its ``staging`` detail."""
    added, detail = _staging_detail(option, ins, costs)
    target = Target(placement, occ, option.smem_per_block, target_issue(ev.sample, ev.options, delta, added),
                    ev.sample.w_serial, extra_sync=ins["barriers"], staging=detail)  # fmt: skip
    return terms(info, memory, ev.gpu, ev.options, target)


def _option_terms(ev: Evaluator, placements: list[Placement], plans: list, option, occ: Occupancy, costs,
                  pieces: Iterator[ts.Staged]) -> list[Terms]:  # fmt: skip
    """The terms of one staging option of ``placements`` (one ``group_key``) from the pieces of its staged trace
    (``traces.staging.stage_pieces`` with ``plans[0]``), each re-sourced for the other plans one at a time
    (``_with_sources``). A staged trace of one piece goes whole through each placement's hierarchy; the pieces
    of a longer one are fed to each placement's hierarchy and queues in turn (``_StreamRun``), their inserted
    instructions and deltas summed, one piece alive at a time."""
    piece = next(pieces)
    if not piece.part:
        out = []
        for p, st in zip(placements, _with_sources(piece, plans)):
            out.append(_staged_terms(ev, st.trace.info, _whole(st.trace, ev.gpu, ev.options), p, option, occ,
                                     st.inserted, costs, int(st.addr_inst_delta.sum(dtype=np.int64))))  # fmt: skip
            del st
        return out
    runs: list[_StreamRun | None] = [None] * len(placements)
    infos: list = [None] * len(placements)
    inserted = [np.zeros(6, np.int64) for _ in placements]
    deltas = [0] * len(placements)
    while piece is not None:
        for k, st in enumerate(_with_sources(piece, plans)):
            inserted[k] += (st.inserted["loads"], st.inserted["stores"], st.int_milli, st.inserted["barriers"],
                            st.inserted["writeback_loads"], st.inserted["writeback_stores"])  # fmt: skip
            deltas[k] += int(st.addr_inst_delta.sum(dtype=np.int64))
            if runs[k] is None:
                infos[k] = st.trace.info
                runs[k] = _StreamRun(infos[k], ev.gpu, ev.options, residency(infos[k], ev.gpu, occ).blocks_per_sm)
            runs[k].feed(st.trace)
            del st
        piece = None  # the next piece is made with this one gone
        piece = next(pieces, None)
    return [_staged_terms(ev, infos[k], runs[k].finish(), p, option, occ, ts.inserted_counts(inserted[k]), costs,
                          deltas[k]) for k, p in enumerate(placements)]  # fmt: skip


def _fastest(tried_options) -> Terms:
    """The terms of the fastest of the (option, terms) pairs (the first on a tie), with every option
    tried recorded in its ``staging["tried"]``; the pairs may come one at a time (a generator)."""
    best, tried = None, []
    for option, t in tried_options:
        tried.append({"windows": option.windows, "why": option.why, "time_ns": t.time_ns})
        if best is None or t.cycles < best.cycles:
            best = t
    best.staging["tried"] = tried
    return best


class StreamOrderError(traces.TraceError):
    """The trace's rows are not in block order: ``StreamEvaluator`` cannot read it (``Evaluator`` can)."""


STREAM_ROWS = 1 << 16
"""Rows a ``StreamEvaluator`` reads at a time. Each placement of a read rewrites (and stages) a group
at a time, so the group sets the transient memory: eight placements in one read of a 10 M-row
vecadd peak at 508 MiB with 65,536-row groups against 829 MiB with 262,144, for no more CPU
(73.1 against 79.3 s)."""

STREAM_PLACEMENTS_PER_READ = 8
"""Placements ``StreamEvaluator.evaluate_many`` evaluates in one read of the trace: each holds its own
hierarchy and queue state and one rewritten (and staged) group at a time, so memory grows with
them; eight share the decoding of a read (about a third of one evaluation's CPU time) and stay
within issue 18's memory bound (see benchmarks/README.md)."""


DENSE_PC_CELLS = 1 << 20
"""Cells (pcs times objects) up to which ``_PcDeltas`` sums a group's rows by pc with one ``np.bincount``
over a dense table; a trace with higher (or negative) pcs goes through ``np.unique`` instead. The
generators' kernels stay under 24,000 pcs (conv2d_kt's 23,888): 72,000 cells for its 3 objects."""


class _PcDeltas:
    """An unstaged target's addressing-instruction deltas while the access contexts are not known yet.

    A row's delta is ``cost[context, obj, target] - cost[context, obj, space]`` and its context a
    function of its pc (``traces.context``), known after the whole trace. Fed each group's deltas under
    both contexts, this keeps each object's sum under INDEXED and, per (pc, object), the sum of OFFSET
    minus INDEXED; ``per_object`` then adds the latter for the pcs that turn out OFFSET. Sums of int16
    deltas, exact in int64 (a group's float64 bincount is exact below 2**53)."""

    def __init__(self, n_ids: int):
        self.n_ids = max(n_ids, 1)
        self.indexed = np.zeros(self.n_ids, np.int64)
        self._dense = np.zeros(0, np.int64)  # by pc * n_ids + object, for keys under DENSE_PC_CELLS
        self._keys = np.zeros(0, np.int64)  # the other keys, sorted, and their sums
        self._sums = np.zeros(0, np.int64)

    def feed(self, pc: np.ndarray, obj: np.ndarray, indexed: np.ndarray, offset: np.ndarray) -> None:
        keep = obj >= 0
        o = obj[keep].astype(np.int64)
        self.indexed += np.rint(np.bincount(o, weights=indexed[keep], minlength=self.n_ids)).astype(np.int64)
        diff = offset.astype(np.int64) - indexed
        rows = np.flatnonzero(diff)  # rows off any object have no delta in either context
        if not rows.size:
            return
        key = pc[rows].astype(np.int64) * self.n_ids + obj[rows]
        w = diff[rows].astype(np.float64)
        if int(key.min()) >= 0 and int(key.max()) < DENSE_PC_CELLS:
            sums = np.rint(np.bincount(key, weights=w)).astype(np.int64)
            if sums.shape[0] > self._dense.shape[0]:
                self._dense = np.concatenate([self._dense, np.zeros(sums.shape[0] - self._dense.shape[0], np.int64)])
            self._dense[: sums.shape[0]] += sums
            return
        keys, inv = np.unique(key, return_inverse=True)
        sums = np.rint(np.bincount(inv.ravel(), weights=w)).astype(np.int64)
        self._keys, (self._sums,), pos = keytable.positions(self._keys, keys, (self._sums,))
        self._sums[pos] += sums  # keys distinct: one add each

    def per_object(self, contexts: ContextStream) -> np.ndarray:
        """Each object's delta (int64 by object id) with the rows' contexts (``contexts`` finished)."""
        dense = np.flatnonzero(self._dense)
        keys = np.concatenate([dense.astype(np.int64), self._keys])
        sums = np.concatenate([self._dense[dense], self._sums])
        pc, obj = np.divmod(keys, self.n_ids)
        off = contexts.context(pc) == OFFSET
        out = self.indexed.copy()
        np.add.at(out, obj[off], sums[off])
        return out


class StreamEvaluator:
    """The :class:`Evaluator` of a trace file read in row groups, in bounded memory.

    Making it reads the file once (validated): the access contexts
    (``traces.context.ContextStream``), the staging facts of pass A
    (``placement.streamstaging``) and the sample's hierarchy and queues. The legal
    unstaged placements of ``early`` (up to ``STREAM_PLACEMENTS_PER_READ``) are evaluated
    in that same read: an unstaged target's rewritten rows do not depend on the access
    contexts, only its addressing instructions do, and those are kept per instruction
    (``_PcDeltas``) until the contexts are known at the end of the read; ``evaluate`` then
    returns them without reading the file again. Each pass of ``evaluate_many`` over other
    placements reads it once more and evaluates several placements together: each
    group is rewritten for every target (and staged, in groups of whole blocks, for the
    staged ones: ``traces.blockgroups``) and fed to one hierarchy per target (per staging
    option) whose state persists across groups. The first staged placement costs one
    more read (the footprints and write overlaps, pass B). The results equal
    ``Evaluator``'s on the whole trace (every count exactly; the queues' variances are
    summed in another order, so times to 1e-12 relative), early or not. The trace must be
    in block order (the generators' order); ``even_banks`` needs the whole DRAM stream and
    is refused.

    Beside the evaluations it keeps what explaining them needs: each object's accesses
    (``accesses``) and, per evaluated placement, the addressing instructions it adds per
    object (``addressing``), the same as ``placement.attribution``'s on the whole trace.
    """

    def __init__(self, path, gpu: Gpu, options: Options = Options(), rows: int | None = None,
                 early: Iterable[Placement] = ()):  # fmt: skip
        from .streamstaging import StreamStagingFacts

        if options.even_banks:
            raise traces.InputError("even_banks spreads the DRAM requests over the banks of the whole stream: "
                                    "use placement.hms.Evaluator on the whole trace")  # fmt: skip
        self.path, self.gpu, self.options = path, gpu, options
        self.rows = rows if rows is not None else STREAM_ROWS
        self.info = traces.read_info(path)
        self.n_rows = traces.num_rows(path)
        self.sample_placement = sample_placement(self.info)
        self.cost = addr_cost_table(self.info, gpu)
        legal = check(self.info, gpu, self.sample_placement)
        self.contexts = ContextStream(self.info)
        self.staging = StreamStagingFacts(self.info, self._groups)
        run = _StreamRun(self.info, gpu, options, residency(self.info, gpu, legal.occupancy).blocks_per_sm)
        jobs = [_StreamJob(self, p, lg) for p, lg in self._early(early).items()]
        if jobs:
            log.info("streamed evaluation of %d unstaged placement(s) in the first read of %s", len(jobs), path)
        try:
            for g in self._groups(validate=True):
                self.contexts.feed(g)
                self.staging.feed(g)
                run.feed(g)
                for j in jobs:
                    j.feed(g, None)
        except traces.TraceError:
            raise
        except (ValueError, cachesim.HierarchyConfigError) as exc:  # rows out of block order
            raise StreamOrderError(path, f"{exc}; use placement.hms.Evaluator on the whole trace") from None
        self.contexts.finish()
        target = Target(self.sample_placement, legal.occupancy, legal.smem_per_block,
                        sample_issue(self.info.instructions, options))  # fmt: skip
        self.sample = terms(self.info, run.finish(), gpu, options, target)
        self.evaluations = 0
        self._reads = 1
        self.addressing: dict[Placement, dict[str, int]] = {
            self.sample_placement: {o.name: 0 for o in self.info.objects}}  # fmt: skip
        self._first_read: dict[Placement, Terms] = {}
        for j in jobs:
            j.settle(self.contexts)
            self._first_read[j.placement] = j.finish()
            self.addressing[j.placement] = j.addressing()

    def _early(self, early) -> dict:
        """The placements of ``early`` the first read can evaluate (legal, unstaged, not the sample; the first
        ``STREAM_PLACEMENTS_PER_READ``) and their legality; the others go the way of ``evaluate_many``."""
        out = {}
        for p in early:
            if p in out or p == self.sample_placement or any(is_staged(s) for _, s in p.spaces):
                continue
            if len(out) == STREAM_PLACEMENTS_PER_READ:
                log.info("more than %d placements to evaluate early: %s and the rest in later reads",
                         STREAM_PLACEMENTS_PER_READ, p)  # fmt: skip
                break
            try:
                out[p] = check(self.info, self.gpu, p)  # the rules of an unstaged placement need no footprints
            except IllegalPlacement:
                continue  # evaluate says why
        return out

    @property
    def passes(self) -> int:
        """Reads of the file so far (the first, the evaluations', the staging facts' pass B)."""
        return self._reads + self.staging.reads

    def _groups(self, validate: bool = False):
        """The trace in groups of whole blocks (``traces.blockgroups``)."""
        from traces.blockgroups import block_groups

        return block_groups(traces.iter_batches(self.path, self.rows, validate=validate))

    @property
    def accesses(self):
        """Each object's loads, stores and atomics (``placement.attribution.accesses`` of the whole trace)."""
        from .attribution import ObjectAccesses

        out = {}
        for o in self.info.objects:
            a = self.staging.access(o.name)
            out[o.name] = ObjectAccesses(a.loads, a.stores, a.atomics)
        return out

    def check(self, placement: Placement):
        """The placement's legality (``placements.check`` with this trace's footprints)."""
        return check(self.info, self.gpu, placement, self.staging)

    def evaluate(self, placement: Placement) -> Evaluation:
        return self.evaluate_many([placement])[0]

    def evaluate_many(self, placements: list[Placement]) -> list[Evaluation]:
        """Evaluations of ``placements`` (each checked first: IllegalPlacement for the first illegal one), the
        targets' in one read of the trace (none for those evaluated in the first read: ``early``)."""
        legal = [self.check(p) for p in placements]
        self.evaluations += len(placements)
        todo = {p: lg for p, lg in zip(placements, legal) if p != self.sample_placement and p not in self._first_read}
        targets: dict[Placement, Terms] = dict(self._first_read)
        items = [(p, todo[p]) for ps in groups(list(todo)) for p in ps]  # a group's placements in one read
        for lo in range(0, len(items), STREAM_PLACEMENTS_PER_READ):
            targets.update(self._targets(dict(items[lo : lo + STREAM_PLACEMENTS_PER_READ])))
        out = []
        for p in placements:
            target = self.sample if p == self.sample_placement else targets[p]
            out.append(_evaluation(self.info, self.gpu, self.options, self.sample, target))
        return out

    def _targets(self, todo: dict) -> dict[Placement, Terms]:
        jobs = [_StreamJob(self, p, lg) for p, lg in todo.items()]
        staged = any(j.staged for j in jobs)
        pieces = self._groups() if staged else traces.iter_batches(self.path, self.rows, validate=False)
        log.info("streamed evaluation of %d placements in one read of %s (%s)", len(jobs), self.path,
                 "groups of whole blocks" if staged else "row groups")  # fmt: skip
        together = groups([j.placement for j in jobs])
        by_placement = {j.placement: j for j in jobs}
        for g in pieces:
            context = self.contexts.context(g.pc)
            for ps in together:
                _feed([by_placement[p] for p in ps], g, context)
        self._reads += 1
        out = {}
        for j in jobs:
            out[j.placement] = j.finish()
            self.addressing[j.placement] = j.addressing()
        return out


class _StreamJob:
    """One target placement of a :class:`StreamEvaluator` pass: ``Evaluator._targets`` group by group.

    An unstaged target is fed by ``feed``, even before the access contexts are known (``context``
    None: the first read; its deltas then wait per pc, ``_PcDeltas``, until ``settle``); a staged
    one, with the others of its ``group_key``, by ``_feed``."""

    def __init__(self, ev: StreamEvaluator, placement: Placement, legal):
        self.ev, self.placement, self.legal = ev, placement, legal
        info = ev.info
        self.staged_ids = [info.object(n).id for n, s in placement.spaces if is_staged(s)]
        self.staged = bool(self.staged_ids)
        n_ids = max((o.id for o in info.objects), default=-1) + 1
        self.per_object = np.zeros(max(n_ids, 1), np.float64)
        self.delta = 0
        self.runs: list[_StreamRun | None] = []
        self.by_pc: _PcDeltas | None = None
        if not self.staged:
            layout = traces.target_layout(info, unstaged(placement))
            self.info = replace(info, objects=layout.objects, smem_per_block=layout.smem_per_block)
            bps = residency(self.info, ev.gpu, legal.occupancy).blocks_per_sm
            self.runs = [_StreamRun(self.info, ev.gpu, ev.options, bps)]
            return
        choice = legal.staging
        self.costs = stg.costs(ev.gpu)
        self.options = choice.options
        self.plans = [stg.plan(ev.staging, ev.gpu, placement, o, choice.own_smem) for o in choice.options]
        self.occ = [occupancy(ev.gpu, info.threads_per_block, info.regs_per_thread, o.smem_per_block)
                    for o in choice.options]  # fmt: skip
        self.runs = [None] * len(choice.options)  # made at the first group, with the staged trace's metadata
        self.infos = [None] * len(choice.options)
        self.inserted = [np.zeros(6, np.int64) for _ in choice.options]
        self.deltas = [0] * len(choice.options)
        self.pc_top = (ev.staging.pc_max + 16) if ev.n_rows else 16

    def feed(self, g: traces.Trace, context: np.ndarray | None) -> None:
        """A group of rows to an unstaged target."""
        assert not self.staged, "a staged target is fed with its group (_feed)"
        ev = self.ev
        if context is None:  # contexts not known yet: the rows under INDEXED, the deltas per pc for later
            target = unstaged(self.placement)
            rw = traces.rewrite(g, target, ev.cost, context=np.full(len(g), INDEXED, np.int8))
            offset = traces.addr_inst_delta(g, target, ev.cost, context=np.full(len(g), OFFSET, np.int8))
            if self.by_pc is None:
                self.by_pc = _PcDeltas(self.per_object.shape[0])
            self.by_pc.feed(g.pc, g.obj, rw.addr_inst_delta, offset)
            self.runs[0].feed(rw.trace)
            return
        rw = self.rewrite(g, context)
        self.count(g, rw)
        self.delta += int(rw.addr_inst_delta.sum(dtype=np.int64))
        self.runs[0].feed(rw.trace)

    def rewrite(self, g: traces.Trace, context: np.ndarray):
        return traces.rewrite(g, unstaged(self.placement), self.ev.cost, staged=self.staged_ids, context=context)

    def count(self, g: traces.Trace, rw) -> None:
        """The addressing deltas of ``g``'s rows, rewritten to ``rw``, per object."""
        keep = g.obj >= 0
        weights = rw.addr_inst_delta[keep].astype(np.float64)
        self.per_object += np.bincount(g.obj[keep].astype(np.int64), weights=weights, minlength=self.per_object.shape[0])

    def stage(self, rw, k: int) -> Iterator[ts.Staged]:
        """The rewritten rows ``rw`` staged with option ``k``, in pieces (``traces.staging.stage_pieces``: a
        group's staging code may be many times its rows)."""
        option = self.options[k]
        return ts.stage_pieces(rw.trace, rw.addr_inst_delta, self.plans[k], option.windows, self.costs.barrier,
                               option.smem_per_block, pc_top=self.pc_top)  # fmt: skip

    def feed_staged(self, k: int, st: ts.Staged) -> None:
        """Option ``k``'s staged rows of a group: their inserted instructions, deltas and hierarchy."""
        ev = self.ev
        self.inserted[k] += (st.inserted["loads"], st.inserted["stores"], st.int_milli, st.inserted["barriers"],
                             st.inserted["writeback_loads"], st.inserted["writeback_stores"])  # fmt: skip
        self.deltas[k] += int(st.addr_inst_delta.sum(dtype=np.int64))
        if self.runs[k] is None:
            self.infos[k] = st.trace.info
            self.runs[k] = _StreamRun(st.trace.info, ev.gpu, ev.options,
                                      residency(st.trace.info, ev.gpu, self.occ[k]).blocks_per_sm)  # fmt: skip
        self.runs[k].feed(st.trace)

    def settle(self, contexts: ContextStream) -> None:
        """The deltas of rows fed without their contexts, with ``contexts`` (finished)."""
        if self.by_pc is not None:
            per = self.by_pc.per_object(contexts)
            self.per_object += per.astype(np.float64)
            self.delta += int(per.sum())
            self.by_pc = None

    def addressing(self) -> dict[str, int]:
        return {o.name: int(round(self.per_object[o.id])) for o in self.ev.info.objects}

    def finish(self) -> Terms:
        ev, placement = self.ev, self.placement
        if not self.staged:
            return _unstaged_terms(ev, self.info, self.runs[0].finish(), placement, self.legal, self.delta)

        def option_terms(k: int, option) -> Terms:
            if self.runs[k] is None:  # no rows: the empty trace's metadata
                self.infos[k] = ts.stage(traces.rewrite(_empty(ev.info), unstaged(placement), ev.cost,
                                                        staged=self.staged_ids).trace, np.zeros(0, np.int16),
                                         self.plans[k], option.windows, self.costs.barrier, option.smem_per_block,
                                         pc_top=self.pc_top).trace.info  # fmt: skip
                self.runs[k] = _StreamRun(self.infos[k], ev.gpu, ev.options,
                                          residency(self.infos[k], ev.gpu, self.occ[k]).blocks_per_sm)  # fmt: skip
            return _staged_terms(ev, self.infos[k], self.runs[k].finish(), placement, option, self.occ[k],
                                 ts.inserted_counts(self.inserted[k]), self.costs, self.deltas[k])  # fmt: skip

        return _fastest((option, option_terms(k, option)) for k, option in enumerate(self.options))


def _feed(jobs: list[_StreamJob], g: traces.Trace, context: np.ndarray) -> None:
    """A group of rows to the jobs of one ``group_key``: rewritten once and, per window count, staged once for
    the first job and re-sourced for the others (``traces.staging.restage``), as ``Evaluator._targets`` does
    with a whole trace; one staged group is alive at a time."""
    first = jobs[0]
    if not first.staged:  # the key is the placement: a job of its own
        first.feed(g, context)
        return
    rw = first.rewrite(g, context)
    for j in jobs:
        j.count(g, rw)
    for k in range(len(first.options)):
        for piece in first.stage(rw, k):
            for j, st in zip(jobs, _with_sources(piece, [j.plans[k] for j in jobs])):
                j.feed_staged(k, st)


def _with_sources(st0: ts.Staged, plans: list) -> Iterator[ts.Staged]:
    """The staged traces of ``plans`` (one ``group_key``, one window count): ``st0``, staged with ``plans[0]``,
    then ``st0`` re-sourced for each other plan (``traces.staging.restage``), one at a time."""
    yield st0
    for plan in plans[1:]:
        yield ts.restage(st0, plan)


def _empty(info) -> traces.Trace:
    from traces.schema import NUMPY_DTYPES

    cols = {c: np.zeros((0, 32) if c == "addr" else 0, NUMPY_DTYPES[c]) for c in NUMPY_DTYPES}
    return traces.Trace(**cols, info=info)


def evaluate(trace: traces.Trace, gpu: Gpu, placement: Placement, options: Options = Options()) -> Evaluation:
    """Predict ``trace``'s kernel time under ``placement`` on ``gpu`` (see the module docstring)."""
    return Evaluator(trace, gpu, options).evaluate(placement)


__all__ = ["STREAM_PLACEMENTS_PER_READ", "STREAM_ROWS", "Evaluation", "Evaluator", "Options", "StreamEvaluator",
           "StreamOrderError", "Terms", "addr_cost_table", "evaluate"]
