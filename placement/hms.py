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
   access's bytes over the path's width, one cycle at least), or the load/store pipe's
   issue of their warp-instructions where that is slower (:func:`t_lsu`: half a
   warp-instruction a cycle on GA10x). It is what separates an
   L1-hit-bound stencil from its shared-memory version: W_parallel counts both alike,
   but a warp's unaligned 128-byte load through the L1 moves 5 sectors where the
   shared load moves 4 (the seed models' LD/ST bound, ``placement.models.ldst``, is the
   same idea in units of instructions). The texture units bound it too: T_TEX, the texture
   rows' texels at the architecture's (or the calibrated) texels per cycle (:func:`t_tex`), and the
   double-precision units: T_FP64, the kernel's double-precision instructions at the GPU's results per
   clock (:func:`t_fp64`; 2 an SM on Turing, GA10x and Ada, 32 on GV100 and GA100, 64 on GH100);
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
   Extension: T is at least T_round (:func:`t_round`), Hong & Kim's time for warps that wait on memory after
   their own work, each warp's rounds of MLP long-latency loads as long as their slowest load (the hierarchy
   counts the rounds that wait on the L2, a hit on a line still in flight for the same round included);
   and at least T_block (:func:`t_block`), where barriers put each window's copy before the block's work;
5. T_overlap from trained Eq. 11 coefficients, else GPUPerf's
   min(T_comp x F_overlap, T_mem), T_comp without W_serial in both (:func:`t_overlap`: Hong &
   Kim add the synchronisation cost after the overlap);
6. extension: the predicted time is T plus the launch (:func:`t_launch`: the empty kernel's
   floor, and the blocks' dispatch where it outlasts T), where the configuration knows it;
   DRAM requests are spaced at the sustained bandwidth, not the peak (:func:`dram_bandwidth_gbs`).

Request arrival instants come from the hierarchy's issue model: each SM issues
one warp-instruction per ``issue_cycles`` round-robin over its resident warps, so a
request's cycle is its issue slot times ``issue_cycles`` plus the hit latencies of
the levels it passed (the paper's "number of instructions between them", turned
into cycles). With a measured sample time in the trace the target's prediction is
also given as measured x T(target) / T(sample).

This module is the model: :func:`terms` of one placement from its trace's memory function
(:func:`whole_memory` of a trace in memory, a :class:`MemoryRun` fed in pieces) and its
:class:`Target`. The evaluators that apply it to placements of a trace are
``placement.evaluate_whole`` and ``placement.evaluate_stream`` (``placement.evaluator``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

import cachesim
import traces
from traces import SPACE_CODES, SPACE_NAMES, SPACE_SHORT
from traces.context import CONTEXTS

from . import _dram_kernels, addressing, catalog, queuing, repairman
from .builds import inst_scale, mlp_for, own_mlp
from .gpu import Gpu
from .memory import (
    build_hierarchy_config,
    fp64_per_cycle_of,
    lsu_instructions_per_cycle_of,
    readonly_instructions_per_cycle_of,
    readonly_split_instructions_per_cycle_of,
    global_split_instructions_per_cycle_of,
    texels_per_cycle_of,
    uniform_constant_pairs_of,
)
from .models import gpuperf
from .models.params import l2_rate_of, launch_time, sustained_fraction_of
from .occupancy import Occupancy
from .overlap import FEATURES, OverlapModel
from .placements import Placement

OFFCHIP = ("global", "local", "constant", "texture1d", "texture2d", "readonly")


def dram_bandwidth_gbs(gpu: Gpu) -> float:
    """The DRAM bandwidth the model spaces requests by: the datasheet peak x the sustained share, the GPU's own
    where its configuration has one (``memory.dram_sustained_fraction``, which ``placement calibrate`` measures
    with a copy kernel: the bundled H100's 0.83, its 2.79 TB/s of 3.35 in ``h100-placements/microbenchmarks.csv``;
    an H200's 0.75; a catalog row's ``dram_share``, the catalog's H200 0.764), else the architecture's
    ``dram_sustained_fraction`` (``configs/architectures.toml``, each cited: mt4g's read and write streams, 74-92 %
    of the peak on Pascal to Hopper). The seed models take the same
    figure (``placement.models.params.machine_from_gpu``); Huang & Li and GPUPerf use the peak, which
    no GPU reaches (refresh, read/write turnarounds, ECC)."""
    return gpu.memory.bandwidth_gbs * sustained_fraction_of(gpu)


def departure_delays(gpu: Gpu) -> tuple[float, float]:
    """Hong & Kim's Departure_del_coal and Departure_del_uncoal at the sustained bandwidth
    (:func:`dram_bandwidth_gbs`): the configuration's, derived from the peak, over the sustained fraction."""
    f = sustained_fraction_of(gpu)
    return gpu.memory.departure_del_coal / f, gpu.memory.departure_del_uncoal / f


MIN_DEPARTURE = 1e-3
"""Floor of the cycles between two requests served inside an SM (a guard against dividing by 0)."""


def first_levels(gpu: Gpu, cfg: cachesim.HierarchyConfig) -> dict[str, str | None]:
    """The per-SM cache level each off-chip space meets first (None: straight to the L2), from ``[caches]`` and, for
    global memory, the build's hierarchy (``cfg``: ``placement.memory.build_hierarchy_config``)."""
    k = gpu.caches
    return {
        "global": "l1" if cfg.global_in_l1 else None,
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
    dlcm: str | None = None
    """The build's ``-Xptxas -dlcm`` ('ca' or 'cg'; ``placement.memory.build_hierarchy_config``) over the trace's
    ``extra.dlcm``; None: the trace's, else the GPU's default."""

    def __post_init__(self):
        if self.queue not in queuing.MODES:
            raise traces.InputError(f"--queue {self.queue!r}: expected one of {', '.join(queuing.MODES)}")
        if self.dlcm is not None and self.dlcm not in traces.schema.DLCM:
            raise traces.InputError(f"--dlcm {self.dlcm!r}: expected one of {', '.join(traces.schema.DLCM)}")


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
    t_launch: float
    """Cycles of the launch in ``cycles`` (:func:`t_launch`; 0 where the configuration does not know its cost)."""
    t_lsu: float
    """Cycles per SM of the load/store path: its data path's, or its pipe's issue where slower (:func:`t_lsu`)."""
    t_l2: float
    """Cycles the L2 needs for the requests that reach it, at the architecture's rate (0: no rate known)."""
    t_atomic: float
    """Cycles of the longest chain of global atomic updates by one of the L2's atomic units (:func:`t_atomic`; 0: none, or the
    configuration does not know the interval)."""
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
    object_caches: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    """Per object, per cache level its requests reached: {"requests", "hits", "misses"} (``cachesim`` counts them
    per object as well as per space; ``caches`` has the per-space counts). For the explanations; not in
    :meth:`as_dict` (the ranking JSON keeps its fields)."""
    t_tex: float = 0.0
    """Cycles per SM the texture units take for the texture rows' texels (:func:`t_tex`; 0: none, or the
    architecture's rate is not known)."""
    t_fp64: float = 0.0
    """Cycles per SM the double-precision units take for the kernel's double-precision instructions
    (:func:`t_fp64`; 0: none, or the GPU's rate is not known)."""
    t_round: float = 0.0
    """Cycles per SM of the warps' rounds of long-latency loads, each as long as its slowest load, and their own
    work (:func:`t_round`; 0 where the trace has no MLP): T is at least this."""
    t_block: float = 0.0
    """Cycles per SM of blocks whose barriers put each window's copy before its work (:func:`t_block`; 0 without
    copy rounds or barriers): T is at least this."""
    rounds: int = 0
    """The warps' rounds of long-latency loads (``cachesim.HierarchyTotals.rounds``)."""
    slow_rounds: int = 0
    """Those that waited on the L2 or DRAM."""
    copy_rounds: int = 0
    """Those slow rounds a staging copy's barrier waits for (``cachesim.HierarchyTotals.copy_rounds``)."""
    l1_bank_conflicts: int = 0
    """Bank conflicts of the accesses the L1 served, from Volta on (``cachesim.HierarchyTotals.l1_bank_conflicts``)."""
    mlp: float = 1.0
    """GPUPerf's MLP the placement ran with (:func:`residency`)."""
    blocks_scale: float = 1.0
    """The launch's blocks on its busiest SM over the trace's per SM (:func:`blocks_scale`): ``cycles`` is T of the
    trace's blocks (from ``t_comp``, ``t_mem``, ``t_overlap``, ``t_round``, ``t_block``, which are theirs) times
    this, plus ``t_launch``."""

    @property
    def ns_per_cycle(self) -> float:
        """The clock's ns per cycle (``time_ns`` over ``cycles``; 0 without cycles)."""
        return self.time_ns / self.cycles if self.cycles else 0.0

    @property
    def term_ns_per_cycle(self) -> float:
        """ns of the launch's time per cycle of a term (``t_comp``, ``t_mem``, ...: the trace's blocks'):
        :attr:`ns_per_cycle` times ``blocks_scale``."""
        return self.ns_per_cycle * self.blocks_scale

    @property
    def bound(self) -> str:
        """Which of :func:`t_kernel`'s terms is T: 'atomic' (T_atomic), 'block' (T_block), 'round' (T_round) or
        'eq1' (Eq. 1)."""
        eq1 = self.t_comp + self.t_mem - self.t_overlap
        if self.t_atomic > max(eq1, self.t_round, self.t_block):
            return "atomic"
        if self.t_block > max(eq1, self.t_round):
            return "block"
        return "round" if self.t_round > eq1 else "eq1"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["object_caches"]
        return d


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
        d["bound"] = self.target.bound  # which term is T, as `rank --json`'s rows have it
        d["sample"] = self.sample.as_dict() | {"bound": self.sample.bound}
        return d


# The addressing table each access context of ``traces.context`` reads (configs/addressing.toml). An
# OFFSET access reads the "offset_leading" table: nvcc folds a constant offset into the instruction
# for plain, shared and constant loads whatever the index expression, but for __ldg (inline asm on
# a pointer) only when the pointer itself is offset (``&a[i] + k``); a stencil's int index
# expression, ``in[(y + i) * W + x + j]``, is widened per access and pays the 64-bit address each
# time. Measured on the 15 x 15 convolution written as Kernel Tuner's (benchmarks/kernels/conv2d_kt.cu,
# sm_80, nvcc 13.0, SASS instructions less NOPs, 26 Nov 2026): 2,667 with __ldg against 1,496 with plain
# loads for 2 x 2 tiles of 32 x 4 blocks (570 loads: 2 per access, the "offset_leading" count), but 497
# against 469 for 1 x 1 tiles of 16 x 1 blocks (225 loads: nvcc widens once per filter row and folds the
# columns), which this table over-charges; the "offset" table (0) is the pointer-offset form. Any tile
# wider or taller than 1 x 1 pays it (32 x 4 blocks, nvcc 13.0 -O3, SASS less NOPs, __ldg against plain: sm_80
# 1 x 1 497/469, 2 x 1 1,820/922, 1 x 2 1,358/757 (285 loads: nvcc merges the rows two tiles share), 2 x 2
# 2,667/1,496, 4 x 1 3,624/1,826, i.e. 0.12 and 2.0-2.1 per load; sm_90 the same differences, 30 Nov 2026): its
# PTX is base + constant for the 1 x 1 build and add.s32 + mul.wide.s32 + add.s64 per load for the tiled ones,
# where every load is a constant offset of its row's first too. The trace cannot tell the two forms apart.
CONTEXT_TABLES = {"indexed": "indexed", "offset": "offset_leading", "paired": "offset_leading"}
PAIRED_CONSTANT = -1
"""A PAIRED access in constant memory beyond the offset table, where the GPU pairs uniform constants
(``placement.memory.uniform_constant_pairs_of``): its load is the pair's first one's (``ULDC.64``)."""
CONST_OPERAND = -1
"""An access in constant memory of an object the trace's build reads as instruction operands (``extra.const_operands``:
``FFMA R, R, c[0x3][imm]``): neither address instructions nor a load, one instruction less than a load with none."""


def addr_cost_table(info: traces.KernelInfo, gpu: Gpu) -> np.ndarray:
    """(contexts, objects, spaces) addressing instructions per access (configs/addressing.toml), one table per
    access context of ``traces.context`` (an indexed access, a constant offset from the previous one, the second
    of a uniform pair).

    Extension (Huang & Li count address instructions alone): from Turing on nvcc reads an 8-byte aligned pair of
    warp-uniform 4-byte constants, the ``x[j]``, ``x[j + 1]`` of an unrolled loop, with one ``ULDC.64`` where
    global memory takes an ``LDG`` each, so the pair's second access costs one instruction less in constant
    memory (``PAIRED_CONSTANT``) than the offset table says. nvcc 13 builds matvec's 16-column step in 48
    instructions with x constant against 59 with x global (sm_90), Nsight Compute counts 0.811 of the
    instructions on the H100 (configs/architectures.toml [SASS-U]); the model gave 1.002. Only traces whose
    instructions have their own pcs show the pairs (``placement trace``, Accel-Sim; NVBit's mem_trace has no pc):
    a generator's rolled loop gives its loads one pc, which ``traces.context`` calls indexed.

    An object the trace's build reads as instruction operands (``extra.const_operands``, which the generators
    take from their SASS recipes: convolution_rows' ``c_Kernel``, cfd's ``ff_variable``) costs ``CONST_OPERAND``
    in constant memory in every context: moved to another space, each of its accesses becomes a load of its own
    (before the thirty-eighth session the model added its addressing alone)."""
    table = np.zeros((len(CONTEXTS), max(info.n_ids, 1), len(SPACE_NAMES)), dtype=np.int16)
    pairs = uniform_constant_pairs_of(gpu)
    operands = set(info.extra.get("const_operands") or ())
    for c, context in enumerate(CONTEXTS):
        for o in info.objects:
            for s, space in SPACE_SHORT.items():
                # the offset tables do not measure 2D textures: their indexed count (the coordinates'
                # conversions) stands in every context
                ctx = "indexed" if s == "2T" else CONTEXT_TABLES[context]
                cost = addressing.addressing_cost(gpu.arch, o.elem_bytes, s, ctx)
                if s == "C" and o.name in operands and o.space == "constant":
                    cost = CONST_OPERAND
                elif context == "paired" and s == "C" and pairs:
                    cost += PAIRED_CONSTANT
                table[c, o.id, SPACE_CODES[space]] = cost
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
    """Lines per global warp-instruction (GPUPerf Eq. 13's avg_trans_warp). The read-only path's (``__ldg``) are
    not among them: counting them (a what-if of the thirty-fifth session, benchmarks/ACCURACY.md) moved the
    ``R`` placements by GPUPerf's avg_DRAM_lat and MWP, and by :func:`o_sync`'s departure, whose uncoalesced form
    (a 32-byte sector's delay per line) is discontinuous at one line."""
    transaction_bytes: float
    events: dict[str, float]
    caches: dict[str, dict[str, int]]
    on_chip_requests: int
    """Requests served inside the SM: first-level cache hits and shared-memory wavefronts."""
    on_chip_amat: float
    off_chip_requests: int
    """Requests that leave the SM: L2 hits and DRAM accesses."""
    off_chip_amat: float
    instructions: int = 0
    """Warp-instructions of the spaces whose requests these are (Eq. 17's #mem_instrs)."""
    first_hit_amat: float = 0.0
    """The mean latency of the first-level cache hits (L1, texture, constant; 0 where there are none)."""
    atomic_max_updates: int = 0
    """The most global atomic updates by one atomic unit of the L2 (``cachesim.AtomicContention.max_updates``)."""
    lines_per_request: float = 1.0
    """Lines per warp-instruction of every space whose loads leave the SM by lines (global, local, texture and
    read-only: :data:`LINE_SPACES`): the Departure_delay of :func:`o_sync`, whose barrier waits for the block's
    requests whichever path they take."""

    @property
    def requests_per_instruction(self) -> float:
        """Requests of one memory warp-instruction on average (1 when there are none)."""
        return self.requests / self.instructions if self.instructions and self.requests else 1.0


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
      requests leave for DRAM no faster than the sustained bandwidth carries them (a
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
    bytes_per_cycle = dram_bandwidth_gbs(gpu) * 1e3 / mhz  # GB/s over MHz: bytes per cycle
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
    cfg = build_hierarchy_config(gpu, trace.info.extra, opts.dlcm)
    h = cachesim.simulate_hierarchy(trace, cfg, blocks_per_sm, mlp=mlp_for(trace.info, gpu))
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
    first_level = first_levels(gpu, cfg)
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
    events["shared"] = shared + int(h.replays[cachesim.REPLAY_BANK_CONFLICT])
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
    first_hit = on_chip_lat / on_chip if on_chip else 0.0
    on_chip += shared
    on_chip_lat += shared * gpu.memory.smem_latency
    instructions = int(h.instructions.sum())  # every space's: OFFCHIP's and shared memory's
    off = requests - on_chip
    off_lat = latency_sum + dram_bound * dram_lat + shared * gpu.memory.smem_latency - on_chip_lat
    return _Memory(
        h,
        q,
        dram_lat,
        requests,
        amat,
        miss_ratio,
        shmem_ratio,
        avg_trans,
        tb,
        norm,
        caches,
        on_chip,
        on_chip_lat / on_chip if on_chip else 0.0,
        off,
        off_lat / off if off else 0.0,
        instructions,
        first_hit,
        h.atomics.max_updates,
        lines_per_request(h),
    )


LINE_SPACES = tuple(SPACE_CODES[s] for s in ("global", "local", "texture1d", "texture2d", "readonly"))
"""The spaces whose ``HierarchyTotals.transactions`` are lines (constant memory's are distinct addresses and
shared memory's a bank-conflict degree)."""


def lines_per_request(h: cachesim.HierarchyTotals) -> float:
    """Lines per warp-instruction over :data:`LINE_SPACES` (1 where there are none)."""
    inst = float(h.instructions[list(LINE_SPACES)].sum())
    return float(h.transactions[list(LINE_SPACES)].sum()) / inst if inst else 1.0


def whole_memory(trace: traces.Trace, gpu: Gpu, opts: Options):
    """:func:`terms`' memory function of a whole trace in memory."""
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
    causes: tuple[int, ...] = tuple(cachesim.REPLAY_CAUSES)
    """The replay causes whose replays take issue slots on the GPU (``placement.memory.reissued_replay_causes_of``:
    the constant cache's only from Volta on, all four before)."""


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
    mlp_scale: float = 1.0
    """The placement's MLP over the sample's (:func:`mlp_scale`; :func:`residency` leaves it out where the
    placement's build has an MLP of its own)."""
    build: str = ""
    """The placement's build (``placement.placements.build_key``): its own MLP where the trace has it."""


def sample_issue(ins: traces.Instructions, options: Options, scale: float = 1.0,
                 causes: tuple[int, ...] = tuple(cachesim.REPLAY_CAUSES)) -> Issue:  # fmt: skip
    """The sample's counts: the trace's issued count when it has one, else executed plus the replays of causes
    1-4 the hierarchy finds (causes 5-10 are unknown) among ``causes``, those the GPU issues again
    (``placement.memory.reissued_replay_causes_of``); without instruction counting, executed. ``scale`` is the
    build's for the GPU priced over the trace's (``placement.builds.inst_scale``); the replays the hierarchy finds
    go on top unscaled."""
    counting = options.instruction_counting
    known = ins.issued is not None or not counting
    base = float(ins.issued) if ins.issued is not None and counting else float(ins.executed)
    return Issue(base * scale, not known, float(ins.executed) * scale, 0, tuple(causes))


def target_issue(sample: Terms, options: Options, delta: int, added: int = 0,
                 causes: tuple[int, ...] = tuple(cachesim.REPLAY_CAUSES)) -> Issue:  # fmt: skip
    """Eq. 3: a target keeps the sample's issued count with its replays of ``causes`` (those the GPU issues again,
    ``placement.memory.reissued_replay_causes_of``) swapped for its own (added by :func:`issued`), plus the
    addressing delta (Sec. III-B) and the instructions ``added`` by staging code; without instruction counting, the
    executed count."""
    executed = sample.executed_instructions
    if not options.instruction_counting:
        base = executed
    else:
        replays = sum(sample.replays.get(cachesim.REPLAY_CAUSES[c], 0) for c in causes)
        base = sample.issued_instructions - float(replays) + delta + added
    return Issue(base, options.instruction_counting, executed + delta + added, delta, tuple(causes))


def issued(issue: Issue, mem: _Memory) -> float:
    """#inst of Eq. 2, the issued warp-instructions (Eq. 3): ``issue.base`` plus the replays of causes 1-4 that the
    GPU issues again (``issue.causes``; from Volta on the constant cache's only, the others being L1TEX wavefronts
    that T_LSU prices)."""
    return issue.base + (float(mem.hier.replays[list(issue.causes)].sum()) if issue.add_replays else 0.0)


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


def is_long_latency(short: str, serialized: bool = False) -> bool:
    """Whether a placement space's loads are GPUPerf's long-latency ones (Sim et al. Sec. 5.3: loads served
    through the L1/texture path from the L2 and DRAM): G, R, T, 2T; not a staged S (shared memory), nor C (the
    constant cache) unless ``serialized``: an object whose warps read several addresses a load, which in
    constant memory is an ``LDC`` of a register address, a load the warp waits on like a global one (its
    addresses one after another, and a constant-cache miss goes to the L2), not an operand of the instruction
    that uses it."""
    if short == "C":
        return serialized
    return not short.startswith("S")


def mlp_scale(sample: Mapping[str, str], target: Mapping[str, str], loads: Mapping[str, int], warps: int = 0,
              mlp: float = 1.0, serialized: Collection[str] = frozenset(), phases: float = 1.0) -> float:  # fmt: skip
    """A placement's MLP over the sample's: the sample's long-latency loads over the placement's (warp-level
    loads of each object, ``placement.attribution``; 1 where either has none), at most what the placement's
    long-latency loads per warp and barrier phase (over ``warps`` and ``phases``, :func:`barrier_phases`) allow
    the sample's ``mlp`` to become, and never below 1.

    GPUPerf's MLP (Sim et al. Sec. 5.3) is the long-latency loads a warp has in flight before it first waits;
    the trace's comes from the sample's SASS (``mlp``, the generators' recipes). The compiler issues a loop
    body's loads up to the first use of one: nvcc 13 for sm_90 puts 16 loads ahead of the first FFMA in
    matvec's unrolled body, 8 of A and 8 of x with x in global memory, 16 of A with x in constant or shared
    memory (``nvdisasm`` of the three; tests/fixtures/matvec.sm_90.sass is the first). A placement that
    moves loads off the long-latency path leaves their slots to the others, so the MLP scales by the ratio of
    long-latency loads. On the H100, x in constant memory is measured 29 % faster than in global memory with
    4 warps per SM, 12 % with 8 and 4 % with 16 (h100-placements, matvec 4096): the shorter the occupancy, the
    more the MLP of A decides. The staging copy's own loads (a separate loop) are not counted. A placement
    that puts an object's loads on the long-latency path (from C or shared memory) keeps the sample's MLP:
    where the compiler would schedule loads that were not there is not known (a reduction's shared array
    moved to global memory, its loads after a barrier each, would otherwise inherit the input's slots). A
    warp cannot have more loads in flight than it issues: vecadd's b, one load a warp, gains nothing when a
    goes to shared memory (straight-line code has no further iterations to fill the slots), nor across a
    barrier: a warp waits at ``__syncthreads()`` for its loads, so a placement that stages M of a tiled matrix
    multiply leaves N the loads of one tile's k loop, not of the whole kernel. Objects in
    ``serialized`` (most of their loads read several addresses) keep their slots in constant memory
    (:func:`is_long_latency`): the tiled matrix multiply's M, 32 addresses a warp-load, would otherwise
    double its N's MLP in constant memory and rank first there."""

    def long(n: str, sp: str) -> bool:
        return is_long_latency(sp, n in serialized)

    if any(long(n, sp) and not long(n, sample.get(n, sp)) for n, sp in target.items() if loads.get(n)):
        return 1.0
    before = sum(loads.get(n, 0) for n, sp in sample.items() if long(n, sp))
    after = sum(loads.get(n, 0) for n, sp in target.items() if long(n, sp))
    if not (before and after):
        return 1.0
    # the most the loads a warp has between two barriers allow
    room = after / (warps * max(phases, 1.0) * mlp) if warps and mlp > 0 else float("inf")
    return max(1.0, min(before / after, room))


def barrier_phases(syncs: float, added_syncs: float = 0.0) -> float:
    """The stretches between barriers a warp's own loads fall in: its ``syncs`` barrier instructions cut the
    kernel in syncs + 1, and a staging code's ``added_syncs`` (2 W - 1 for W windows: a copy, a barrier, the
    window's work, a barrier) add W - 1 more, their copy phases holding the copy's loads only (per warp, averaged
    over the warps)."""
    windows = max(1, math.floor((added_syncs + 1.0) / 2.0))
    return syncs + windows


def total_warps(info: traces.KernelInfo) -> int:
    """GPUPerf's #total_warps: the trace's warps, else its blocks'."""
    return info.instructions.warps or info.traced_ctas * info.warps_per_block


def blocks_scale(info: traces.KernelInfo, gpu: Gpu) -> float:
    """The busiest SM's blocks of the launch over the trace's blocks per SM: what T (Eq. 1) of the trace's blocks is
    multiplied by to give the launch's. It is above 1 where the trace holds some of its blocks (``placement trace
    --ctas``) or a smaller grid of the same blocks (``KernelInfo.launch_ctas``), and where the launch's blocks do
    not spread evenly over the SMs; 1 otherwise.

    Extension (the papers trace whole launches): every term of T is the trace's work spread over the SMs, so a
    trace of whole waves of a launch whose blocks do alike gives each wave's time, and the launch takes as many
    more as it has blocks per SM. A subset of less than one wave is priced as its blocks alone on their SMs
    (fewer warps per SM than the launch has), which is why ``--ctas waves=W`` is the subset to take. The kernel
    ends with its busiest SM, which runs ceil(blocks / SMs) of them: Lemeire et al. count a compute unit's runs
    with that ceiling (runsCU), where Hong & Kim's #Rep (Eq. 21) divides evenly; and N (``residency``) already
    is the busiest SM's. Evenly spread, 289 blocks of the naive matmul (W = 272, 16 x 16) on the H100's 132
    SMs came out faster than 256 (W = 256): 2.19 blocks' rounds over the 3 blocks' warps, against 1.94 over 2."""
    launched, traced = info.launch_ctas, info.traced_ctas
    sms = gpu.compute.sms
    return math.ceil(launched / min(sms, launched)) / (traced / min(sms, traced))


def residency(info: traces.KernelInfo, gpu: Gpu, occ: Occupancy, mlp_scale: float = 1.0,
              build: str = "") -> Residency:  # fmt: skip
    """The warps that run at once under ``occ`` (GPUPerf Sec. 4), and their MLP: that of placement build ``build``
    where the trace has it (``placement.builds.own_mlp``: that build's own schedule, not scaled), else the trace's
    built for ``gpu`` (``placement.builds.mlp_for``) times ``mlp_scale``."""
    active_sms = min(gpu.compute.sms, info.traced_ctas)
    blocks_per_sm = min(occ.blocks_per_sm, -(-info.traced_ctas // active_sms))
    n = blocks_per_sm * occ.warps_per_block
    own = own_mlp(info, gpu, build)
    mlp = own if own is not None else mlp_for(info, gpu) * mlp_scale
    ilp = float(info.extra.get("ilp", 1.0) or 1.0)
    return Residency(total_warps(info), active_sms, blocks_per_sm, n, ilp, mlp)


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

    delta = departure_delays(gpu)[0]
    avg_dram = gpuperf.avg_dram_lat(mem.dram_lat, mem.avg_trans_warp, delta)
    peak = gpuperf.mwp_peak_bw(dram_bandwidth_gbs(gpu), gpu.clock_hz, mem.transaction_bytes, max(avg_dram, 1e-9),
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


def dram_share(mem: _Memory) -> float:
    """The share of the requests reaching the L2 that go on to DRAM (1 where none reach it), of every space: a
    read-only (``__ldg``), texture or local load leaves the SM for the same L2 and DRAM as a plain global one.

    (Global requests alone until the thirty-fifth session: a staging copy through the read-only path, whose
    loads are the ``readonly`` space, then took the share of the kernel's output stores alone, all misses, and
    its barriers DRAM's whole departure: the A100 convolution's S/R builds up to 1,936 cycles of O_sync an SM
    where their S/G twins, the same copy by plain loads that hit the L2, had at most 501.)"""
    counts = [mem.hier.stat("l2", space) for space in cachesim.SPACES]
    requests, misses = sum(c[0] for c in counts), sum(c[2] for c in counts)
    return misses / requests if requests else 1.0


def o_sync(info: traces.KernelInfo, gpu: Gpu, mem: _Memory, res: Residency, mwp: float, sync: float) -> float:
    """O_sync of ``sync`` barrier warp-instructions, Hong & Kim's Eq. 26: Departure_delay x (MWP - 1) x
    #synch_insts x #Active_blocks_per_SM x #Rep, with Eq. 15's Departure_delay from the lines per request of
    every path that leaves the SM by lines (``_Memory.lines_per_request``: global, local, texture, read-only;
    global alone until the thirty-fifth session): Departure_del_coal when coalesced, else
    Departure_del_uncoal x lines; and MWP capped at the block's warps: a
    barrier waits only for the warps of its own block (Hong & Kim: the delay is
    "in one block"), which leaves their Table 2 (4 warps, MWP 2.28) unchanged.

    Departure: Hong & Kim's Departure_delay is DRAM's (their GPU has no L2), and this model's is DRAM's
    bandwidth per SM (:func:`departure_delays`); a block's requests that the L2 serves do not queue behind
    DRAM, so the delay is taken at the share of the requests reaching the L2 (of every space) that go on to DRAM
    (:func:`dram_share`). The textbook tiled matmul's copies hit the L2 (every block reads the same rows
    and columns): at W = 512 on the H100, two blocks an SM, Eq. 26 at DRAM's departure was 21.4 k of its
    83 k cycles and put it at 1.044 of the naive kernel's time where it measures 0.737 (now 0.819); 16 x
    16 0.838, measured 0.747, now 0.693; the RTX A6000's SGEMM_CUDA entry 0.920 -> 0.776, measured 0.667.
    conv1d's staged input streams from DRAM (share 0.94), and keeps the term that makes it 14-19 % slower
    on the H100. At W = 256, one block an SM, the H100's 32 x 32 moves from 0.770 to 0.699 (measured
    0.760) and Kepler's and Maxwell's tiled matmuls are predicted faster than before (the gpuperfpredict
    suite's median 14.2 -> 16.0 %, its mean 20.9 -> 16.8 %).

    Known defect, left: where the configuration derives the delays from the bandwidth (every GPU but the papers'
    own), Departure_del_uncoal is a 32-byte sector's and Departure_del_coal a 128-byte line's, so a request of
    1.01 lines departs in a quarter of a coalesced one's delay. Taking at least Departure_del_coal (the
    thirty-fifth session's what-if, benchmarks/ACCURACY.md) moved the gpuperfpredict matmul 19.0 -> 17.5 %
    but the H100 suite 3.2 -> 3.5 % and the A100 convolution 11.4 -> 11.5 %: the staged halo copies, whose rows start
    off a line's start, fit the smaller delay."""
    coal, uncoal = departure_delays(gpu)
    departure = coal if mem.lines_per_request <= 1.0 else uncoal * mem.lines_per_request
    departure *= dram_share(mem)
    rep = info.traced_ctas / (res.active_sms * res.blocks_per_sm)
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


LSU_PIPE_SPACES = tuple(cachesim.SPACES.index(s) for s in ("global", "local", "shared"))
"""The spaces whose warp-instructions the load/store pipe issues (LDG, LDL, LDS and their stores and atomics), and
the read-only loads (LDG.CONSTANT) where the L1 serves them (Volta on, ``caches.readonly_cache = "l1"``; Kepler's
to Pascal's go through the texture pipe): texture fetches go to the texture pipe, and a constant operand or LDC to
the constant cache."""
READONLY_SPACE = cachesim.SPACES.index("readonly")


def t_lsu(mem: _Memory, res: Residency, gpu: Gpu) -> float:
    """T_LSU: the cycles per SM the load/store path spends on the placement's accesses (module docstring, 3): the
    data path's cycles, or the pipe's issue of their warp-instructions where that is slower.

    Extension (the papers price a shared or cached access by its latency; ``placement.models.ldst`` gives the seed
    models the same bound): the pipe accepts ``lsu_instructions_per_cycle`` warp-instructions an SM and cycle
    (:func:`placement.memory.lsu_instructions_per_cycle_of`), one on GV100, GA100 and GH100 but a half on GA10x
    (NVIDIA's Nsight Compute peak ``sm__inst_executed_pipe_lsu.avg.peak_sustained``, cited in
    configs/architectures.toml), while their data path moves one wavefront a cycle on all of them. On a GA10x a
    conflict-free LDS then takes two cycles, as long as a plain load of two wavefronts, so a staged tile saves
    nothing there over loads that hit in the L1 in up to two wavefronts. A read-only load (LDG.E.CONSTANT) takes
    the pipe at ``readonly_instructions_per_cycle`` (:func:`placement.memory.readonly_instructions_per_cycle_of`):
    the pipe's own rate unless ``placement calibrate`` measured the GPU's. No source gives one, and the GPUs
    differ: the A100's Kernel Tuner convolution (1 x 1 tiles, blocks 32 wide and wider; nvcc 13 builds it in 497
    SASS instructions a thread with ``__ldg``, 469 without) reads as 3.5-3.8 cycles an SM per ``__ldg`` where its
    plain loads take 2.3-2.8 (at 1,410 MHz), while the H100's ``__ldg`` runs at the speed of its plain loads
    (conv2d_channels in=R, h100-placements). Those taps' warp-loads straddle two lines; aligned ones do not pay so:
    gpu-benches' cuda-cache (github te42kyfo/gpu-benches, cuda-cache/a100_80.txt) reads ``const __restrict__``
    doubles from the A100-80GB's L1 at 19.1 TB/s, 125 bytes a cycle an SM at 1,410 MHz: a line a cycle. So
    ``placement calibrate`` times ``__ldg`` of one line and of two, and plain loads alike: a read-only load whose
    lanes touch more than one line (``cachesim.HierarchyTotals.readonly_split``) takes the pipe at the two-line
    rate (:func:`placement.memory.readonly_split_instructions_per_cycle_of`; the one-line rate where none was
    measured), the others at the one-line rate. Plain global loads of two lines or more that the L1 serves
    (``cachesim.HierarchyTotals.global_split``) take the pipe at their measured rate where ``placement calibrate``
    gave one (:func:`placement.memory.global_split_instructions_per_cycle_of`), else at the pipe's."""
    h = mem.hier
    path = float(h.lsu_cycles.sum())
    rate, ro_rate = lsu_instructions_per_cycle_of(gpu), readonly_instructions_per_cycle_of(gpu)
    split_rate = readonly_split_instructions_per_cycle_of(gpu)
    g_split, g_rate = float(h.global_split), global_split_instructions_per_cycle_of(gpu)
    pipe = float(h.instructions[list(LSU_PIPE_SPACES)].sum())
    issue = (pipe - g_split) / rate + g_split / g_rate if rate else 0.0
    split = float(h.readonly_split)
    ro = (float(h.instructions[READONLY_SPACE]) - split) / ro_rate + split / split_rate if ro_rate else 0.0
    # Through the L1 the read-only loads are the pipe's, each taking 1 / ro_rate of it; through a texture cache
    # (Kepler to Pascal) their own pipe's, a bound apart where a rate was measured.
    issue = issue + ro if gpu.caches.readonly_cache == "l1" else max(issue, ro)
    return max(path, issue) / res.active_sms


def t_tex(mem: _Memory, res: Residency, gpu: Gpu) -> float:
    """T_TEX: the cycles per SM the texture units take to fetch the texture rows' texels (0 where the
    architecture's rate is not known).

    Extension (none of the papers has it; GPUPerf and Huang & Li price a texture load by its cache's latency):
    an SM's texture units fetch ``texels_per_cycle`` texels a cycle (4 units from Volta on, one texel each, cited
    in configs/architectures.toml), so a warp's 32-lane ``tex1Dfetch`` holds them 8 cycles where its 128 bytes
    take the L1's data path one. Like T_LSU it bounds the parallel part of T_comp (:func:`t_comp`); the texture
    hits' memory time stays paced by the data path (:func:`t_mem`), which they pass as well. conv1d with its
    input in a texture (7 fetches per output) was measured 13-25 % slower than with plain loads on the H100 and
    predicted 6-9 % slower without this bound."""
    rate = texels_per_cycle_of(gpu)
    return mem.hier.texels / rate / res.active_sms if rate else 0.0


def t_fp64(info: traces.KernelInfo, res: Residency, gpu: Gpu) -> float:
    """T_FP64: the cycles per SM the double-precision units take for the kernel's double-precision warp-instructions
    (the trace's ``fp64`` class, as the GPU's build issues them: ``placement.builds.inst_scale``), at the GPU's
    results per clock (``placement.memory.fp64_per_cycle_of``); 0 where the kernel has none or the rate is not
    known.

    Extension (none of the papers has it): GPUPerf's W_parallel issues every instruction at the FP32 cores' rate
    (ITILP_max from the SIMD width) and prices only the SFUs apart (O_SFU, Eq. 9-10). A warp's double-precision
    add, multiply or FMA takes warp_size / rate cycles of its SM's double-precision units: half a cycle on GH100
    (64 a clock), 1 on GV100 and GA100 (32), 16 on Turing, GA10x and Ada (2; the CUDA C++ Programming Guide's
    throughput table, cited in configs/architectures.toml), so a kernel of doubles that the model issued at the FP32
    rate takes 16 times as long on a GA10x as on a GA100 of as many SMs at the same clock. Like T_LSU and T_TEX it
    bounds the parallel part of T_comp (:func:`t_comp`); a placement moves no arithmetic, so it is the sample's for
    every placement, and where it binds the placements' memory effects shrink under it."""
    rate = fp64_per_cycle_of(gpu)
    fp64 = info.instructions.fp64
    if not rate or not fp64:
        return 0.0
    return fp64 * inst_scale(info, gpu) / res.active_sms * gpu.compute.warp_size / rate


def t_comp(par: Parallelism, lsu: float, serial: float, tex: float = 0.0, fp64: float = 0.0) -> float:
    """T_comp (GPUPerf Eq. 2, the form the HMS paper's garbled Eq. 2 means), with the load/store path's, the
    texture units' and the double-precision units' bounds: max(W_parallel, T_LSU, T_TEX, T_FP64) + W_serial."""
    return gpuperf.t_comp(max(par.w_parallel, lsu, tex, fp64), serial)


def t_l2(mem: _Memory, gpu: Gpu) -> float:
    """T_L2: every request that reaches the L2 at the architecture's measured transactions per cycle (the seed
    models' bound, ``placement.models.l2bound``); 0 where no rate is known."""
    l2_rate = l2_rate_of(gpu)
    return float(mem.hier.requests[cachesim.LEVELS.index("l2")].sum()) / l2_rate if l2_rate else 0.0


def t_atomic(mem: _Memory, gpu: Gpu) -> float:
    """T_atomic: the most global atomic updates by one of the L2's atomic units, one after the other at the GPU's
    interval (``memory.l2_atomic_interval_ns``); 0 where the interval is not known. T is at least T_atomic
    (:func:`t_kernel`).

    Extension (none of the papers has atomics; GPUPerf and Huang & Li price an atomic as a store): the L2's atomic
    units each serve an interleave of the address space (``memory.l2_atomic_unit_bytes``) and do its
    read-modify-writes one after another, a warp's lanes on one word one at a time (``cachesim.atomics``), so a
    kernel whose atomics crowd on a few units lasts at least the longest chain, however many SMs issue them. On
    the H100 (0.733 ns an update, 512-B units, both from microbenchmarks) a histogram of 2^24 values into 256 bins
    with global atomics is bound at 4,280 us and took 4,329; privatized bins add each block's tile back to the same
    units, once a block, which is why smaller blocks make the privatized histogram slower.

    A floor under T, as T_round and T_block are, not a part of T_mem: the units work through their chains while the
    SMs issue (a reduction, ``atomicAdd`` whose value is not used, is ``RED``: no warp waits for it; a warp that
    uses an atomic's value waits its latency, which Eq. 17's off-chip requests count). Until 3 Dec 2026 T_mem was at
    least T_atomic and Eq. 1 added T_comp's part that T_overlap left: the H100's privatized histograms (bins=S/G,
    18 entries, their blocks' tiles added back once a block) came out 1.22-1.33x their measured time, now
    1.16-1.24x (the rest is the interval: 0.733 ns an update measured on one word, where their warps' 32 bins in
    4 sectors go at about 0.6); their ratio error 25.8 -> 20.8 % (median), the global histograms unchanged."""
    interval = gpu.memory.l2_atomic_interval_ns
    return mem.atomic_max_updates * gpu.ns_to_cycles(interval) if interval else 0.0


@dataclass(frozen=True)
class MemoryTime:
    """T_mem and its parts: Eq. 17's ITMLP of the requests that leave the SM and the effective requests per SM."""

    t_mem: float
    t_l2: float
    t_atomic: float
    itmlp: float
    effective_requests_per_sm: float
    t_round: float = 0.0


def t_round(mem: _Memory, res: Residency, par: Parallelism, gpu: Gpu) -> float:
    """T_round: Hong & Kim's time for warps that wait on memory one after their own work (their Eq. for
    MWP = N: (Mem_cycles + Comp_cycles) x #Rep, without the pipeline's start), where a warp's Mem_cycles are its
    rounds of long-latency loads, each as long as its slowest load, and its Comp_cycles its instructions one
    after the other (#inst per warp x avg_inst_lat / ILP, GPUPerf's one-warp form): rounds / (#active_SMs x N) x
    E_round + #Rep x Comp_cycles, #Rep = #total_warps / (#active_SMs x N). E_round is the first-level hit
    latency for a round served inside the SM and the L2's hit latency for a slow one
    (``cachesim.HierarchyTotals.slow_rounds``: a request of the round missed, or hit a line still in flight), the
    least such a round waits: T_round is a floor under T, and DRAM's latency, queues and bandwidth are T_mem's.
    (Priced at the off-chip requests' mean latency instead, a placement that turns the L2 hits into cache hits
    leaves its slow rounds to DRAM's latency, while a line another warp of the round is bringing from DRAM is
    an L2 hit to the caches: conv1d's input in a texture on the K80 came out 2x slower than in global memory.)

    Extension. Hong & Kim's Mem_cycles (their N <= MWP case) charge each memory instruction its full latency;
    GPUPerf's MLP divides AMAT, the mean over requests, by the loads a warp has in flight. But a warp waits for
    the slowest of them, and a hit on a line that a request of the same round is still bringing in waits as
    long as that request (the caches here fill at once; ``cachesim.simulate_hierarchy``). A naive matrix
    multiply's warps read each line of N in the same round as the block's other warps: the L1 counts seven
    hits of eight, and each round waits on the L2. On the H100 at 256^2 (16 warps per SM) it runs 15.4 us
    after the launch (h100-placements, variants-run1/2), 14.0 here, 8.2 by the mean latency; its tiled kernel,
    whose rounds are the copy's, 10.5 (8.3 here, where T_round does not bind).

    A staging copy's slow rounds (``copy_rounds``: its loads a shared store kept, the block's barrier waiting
    for the slowest of its warps) are priced at the GPU's measured DRAM latency (``memory.dram_latency``): a
    window's tile is new to the block, and blocks that start together copy it at once, so one of them brings
    it from DRAM while the L2 counts the others' requests as hits. From the H100's measurements: the tiled
    kernel's 16 tiles take 20.7k cycles at 256^2 in 16 x 16 blocks and the one-window variant's 32 copy rounds
    36.6k, some 760-1,000 cycles a copy round once the shared-memory work is taken off."""
    h = mem.hier
    if not h.rounds:
        return 0.0
    waits = (h.copy_rounds * gpu.memory.dram_latency + (h.slow_rounds - h.copy_rounds) * gpu.caches.l2_latency
             + (h.rounds - h.slow_rounds) * mem.first_hit_amat)  # fmt: skip
    rep = res.total_warps / (res.active_sms * res.n)
    comp = par.inst_per_warp * gpu.compute.avg_inst_latency / max(res.ilp, 1.0)
    return waits / (res.active_sms * res.n) + rep * comp


def t_mem(mem: _Memory, res: Residency, par: Parallelism, lsu: float, gpu: Gpu) -> MemoryTime:
    """T_mem = effective memory requests per SM x AMAT (Eq. 4, 17), per class of request, at least T_L2; with
    T_atomic (:func:`t_atomic`, a floor under T) and T_round beside it.

    Eq. 17 counts memory *instructions* (#mem_instrs), and so does this: a warp-instruction's requests (the
    lines of an uncoalesced load, the wavefronts of a bank conflict) are in flight together, so a warp with
    MLP instructions outstanding has MLP x r requests outstanding (r: requests per instruction). Each class's
    requests R_c are taken as R_c / r instructions, T_c = (R_c / r) x AMAT_c / ITMLP_c, with ITMLP_c's peak
    (requests in flight the class's resource sustains) over r, in instructions as Eq. 18's MWP_peak_bw is.
    Counting each request at its full latency (as this model did before) made matvec, whose warps read 32
    lines an instruction, 1.6-4.1x slower than measured on the H100, and matrix_sum's column walk 1.9x (RTX
    2080 Ti) and 3.9x (A100) slower than its row walk, now 1.2x and 1.8x (issue 33: uncoalesced reads measure
    1.2-1.7x on Turing and Ampere GPUs).

    The requests that leave the SM queue for the L2 and DRAM, with an ITMLP from GPUPerf's MWP (DRAM's latency
    and bandwidth); those served inside the SM leave at the load/store path's pace (T_LSU's cycles per request),
    so their MWP is their latency over those cycles, up to N, and no DRAM bandwidth bounds it."""
    mlp, active_sms = res.mlp, res.active_sms
    r = mem.requests_per_instruction
    itmlp = max(1e-9, gpuperf.itmlp(mlp, par.mwp, par.cwp, max(par.mwp_peak_bw / r, 1.0)))
    # the load/store path's cycles per request: a request served inside the SM leaves no sooner
    departure_on = max(lsu * active_sms / mem.requests, MIN_DEPARTURE) if mem.requests else 1.0
    peak_on = max(1.0, mem.on_chip_amat / (departure_on * r))  # instructions in flight the path sustains
    mwp_on = min(peak_on, float(res.n))
    itmlp_on = max(1e-9, gpuperf.itmlp(mlp, mwp_on, par.cwp, peak_on))
    inst_off, inst_on = mem.off_chip_requests / r, mem.on_chip_requests / r
    eff = inst_off / (active_sms * itmlp) + inst_on / (active_sms * itmlp_on)
    t = (inst_off * mem.off_chip_amat / itmlp + inst_on * mem.on_chip_amat / itmlp_on) / active_sms
    l2 = t_l2(mem, gpu)
    atom = t_atomic(mem, gpu)
    rnd = t_round(mem, res, par, gpu)
    return MemoryTime(max(t, l2), l2, atom, itmlp, eff, rnd)


def overlap_features(mem: _Memory, res: Residency) -> np.ndarray:
    """Eq. 11's events per memory request (``overlap.FEATURES``), N and the constant term."""
    e = mem.events
    return np.array([e["e_global"], e["e_constant"], e["e_texture"], e["e_shared"], e["e_row"], float(res.n), 1.0])


def t_overlap(model: OverlapModel | None, features: np.ndarray, parallel: float, memory: float, n: int,
              par: Parallelism) -> tuple[float, str]:  # fmt: skip
    """T_overlap and where it came from: Eq. 11's trained coefficients (``model``), else GPUPerf's
    min(T_comp x F_overlap, T_mem), with ``parallel`` = T_comp - W_serial for T_comp.

    W_serial does not overlap T_mem here: its O_sync is time the warps of a block spend waiting at a barrier
    for each other's memory requests, already memory time, and Hong & Kim add the synchronisation cost after
    the overlap (their Eq. 27, Exec_cycles_app + Synch_cost), where GPUPerf's Eq. 16 lets all of T_comp
    overlap. With GPUPerf's form the barriers a staged placement adds vanish under T_mem: conv1d with its
    input staged was predicted 1-2 % slower on the H100, measured 14-29 % (h100-placements), now 13-24 %."""
    if model is not None:
        return model.t_overlap(features, parallel, memory), f"trained coefficients ({model.source or 'given'})"
    return (gpuperf.t_overlap(parallel, memory, gpuperf.f_overlap(n, par.cwp, par.mwp)),
            "GPUPerf fallback min((T_comp - W_serial) x F_overlap, T_mem) (no trained coefficients)")  # fmt: skip


def t_block(info: traces.KernelInfo, mem: _Memory, res: Residency, parallel: float, gpu: Gpu,
            extra_sync: float = 0.0) -> float:  # fmt: skip
    """T_block: blocks whose warps meet at barriers, each window's copy and then its work one after the other
    within a block (0 where the trace has no copy rounds or no barriers); T is at least T_block.

    A block runs W windows, W = (barriers per warp + 1) / 2 (the textbook tiling's two barriers a tile, the
    staging code's 2W - 1; ``extra_sync`` are the placement's). A window is its copy, k = the copy rounds of the
    block's slowest warp (``cachesim.HierarchyTotals.block_copy_rounds`` / the trace's blocks / W), each at the
    GPU's measured DRAM latency (as in :func:`t_round`), for the barrier waits for the block's slowest warp,
    then the block's share of the SM's work, c = (T_comp -
    W_serial) / (the kernel's blocks per active SM x W). B blocks are resident at once
    (``Residency.blocks_per_sm``, at most the kernel's blocks per active SM). The SM's first window is a
    pipeline's start: its B blocks start together and copy side by side with nothing else to issue, then
    share the SM for their work, k + B c. Every later window overlaps: while a block copies, the others
    issue. Its asymptotes are B c (the SM's issue) and k + c (one block's own chain); between them the B
    blocks are a closed network of a delay (the copy) and a shared server (the SM), and a window of all B takes
    B / X(B), X the machine-repairman model's exact throughput (:mod:`placement.repairman`):
    T_block = k + B c + (blocks per SM / B x W - 1) x B / X(B). Where the asymptotes meet (B about (k + c) /
    c) the blocks fall in and out of step and B / X(B) is well over both (25 % for B = 2 and k = c, 17 % for B
    = 16 and k = 15 c); far from it, it is the larger.

    Extension. Hong & Kim's O_sync (Eq. 26, in W_serial) charges a barrier for its block's requests'
    departures (DRAM's bandwidth); no term of the papers has the copy's latency that a barrier exposes when
    few blocks share an SM, and Eq. 1's overlap hides it behind work that waits at the same barrier. On the
    H100 (h100-placements, variants-run1/2), the one-window staged matmul in 16 x 16 blocks (2 blocks an SM
    at 256^2, 31 copy rounds a warp) is measured 1.16-1.31x the naive kernel's time and was predicted 0.98,
    now 1.21; in 32 x 32 blocks (one an SM, 2 windows) measured 0.95-1.01, predicted 0.79, now 0.96, behind
    its textbook tiling (measured 0.68-0.78, predicted 0.91). Taking every window side by side instead (k +
    B c each) put 8 x 8 tiles (16 blocks an SM, 32 windows) at 1.21 where they measure 0.64-1.03. The hard
    max(B c, k + c) that B / X(B) replaced (30 Nov 2026) put Kernel Tuner's staged convolution with 2 x 2
    tiles in one- and two-row blocks under its measured cost, these blocks' copies and work being of a size:
    A100 128 x 1 0.97 (measured 1.08-1.12), H200 128 x 2 0.95 (1.17-1.24); now 1.02-1.04 and 1.06.

    k was the mean of the warps' copy rounds until 3 Dec 2026; in Kernel Tuner's convolution in 128 x 1 blocks a
    tile row is 142 floats, so warp 0 copies two a row and waits 30 rounds where the others wait 15 (18.75 on
    average), and the staging code's flattened copy gives its first warps the remainder (stencil2d's 2,064 elements
    over 256 threads: 3 rounds for warp 0, 2 for the rest).

    The start (k + B c) is paid once a trace's worth of blocks, which for a trace of 2 waves of a long launch (the
    A100 and H200 convolution suites) is once every 2 waves. Paid once a launch instead (T_block of the launch's
    blocks per SM, over ``blocks_scale``; tried 3 Dec 2026, not kept), the convolution's staged builds in one-row
    and two-row blocks of 32-256 threads came out 0.92-1.00 of the plain build where they measure 1.08-1.43 on
    the A100 and 1.10-1.24 on the H200 (8 signs wrong), while the one-warp 16 x 1 blocks came nearer (1.90 -> 1.59,
    measured 0.93-1.19): identical blocks that start together finish together, and the waves after the first
    stay partly in step, which the steady repairman windows leave out (``benchmarks/ACCURACY.md``)."""
    h = mem.hier
    syncs = (info.instructions.sync + extra_sync) / res.total_warps
    if not h.copy_rounds or syncs <= 0.0:
        return 0.0
    per_sm = info.traced_ctas / res.active_sms
    b = max(1.0, min(float(res.blocks_per_sm), per_sm))
    w = max(1.0, (syncs + 1.0) / 2.0)
    k = h.block_copy_rounds / info.traced_ctas * gpu.memory.dram_latency / w
    c = parallel / (per_sm * w)
    return k + b * c + (per_sm / b * w - 1.0) * repairman.cycle(b, k, c)


def t_kernel(comp: float, memory: float, overlap: float, rounds: float = 0.0, block: float = 0.0,
             atomic: float = 0.0) -> float:  # fmt: skip
    """T = T_comp + T_mem - T_overlap (Eq. 1), in cycles of one SM, at least T_round (:func:`t_round`) and T_block
    (:func:`t_block`): GPUPerf's overlap lets the other warps' work hide a warp's waits, which holds while they
    are not waiting too; and at least T_atomic (:func:`t_atomic`), the L2's busiest atomic unit's chain."""
    return max(comp + memory - overlap, rounds, block, atomic)


def t_launch(gpu: Gpu, ctas: int, kernel: float) -> float:
    """The cycles the launch adds to a kernel of ``kernel`` cycles (Eq. 1's T) and ``ctas`` blocks: the empty
    kernel's floor (``compute.launch_us``) plus what the GPU's rate of starting blocks leaves uncovered,
    max(0, ctas x ``compute.launch_per_block_ns`` - T) (``placement.models.params.launch_time``, which the seed
    models take too).

    Extension (none of the papers times the launch; they measure long kernels): an empty kernel between two
    CUDA events takes 3.87 us with 1 block of 256 threads on the H100, 6.30 us with 4,096 and 43.3 us with
    65,536 (``h100-placements/variants-extra.csv``), a floor and 0.60 ns per block: the kernels of a few
    microseconds the tool ranks are mostly launch, and their placements' differences shrink by as much. The
    floor adds; the per-block part is a rate the blocks' own work hides (vecadd of 2^24 floats starts 65,536
    blocks, 39 us of empty-kernel dispatch, and runs in 82 us, not 82 + 39)."""
    c = gpu.compute
    return launch_time(gpu.ns_to_cycles(c.launch_us * 1e3), gpu.ns_to_cycles(c.launch_per_block_ns), ctas, kernel)


def terms(info: traces.KernelInfo, memory, gpu: Gpu, opts: Options, target: Target) -> Terms:
    """The terms of one placement: T (Eq. 1) of its T_comp, T_mem and T_overlap, with every intermediate.

    ``memory(blocks_per_sm, in_flight)`` gives the placement's :class:`_Memory` (``_memory`` over
    its trace, or a streamed run).
    """
    res = residency(info, gpu, target.occ, target.mlp_scale, target.build)
    mem = memory(res.blocks_per_sm, res.in_flight)
    inst = issued(target.issue, mem)
    par = parallelism(inst, mem, res, gpu)
    serial = target_w_serial(info, gpu, mem, res, par, target)
    lsu = t_lsu(mem, res, gpu)
    tex = t_tex(mem, res, gpu)
    fp64 = t_fp64(info, res, gpu)
    comp = t_comp(par, lsu, serial, tex, fp64)
    mt = t_mem(mem, res, par, lsu, gpu)
    features = overlap_features(mem, res)
    overlap, source = t_overlap(opts.overlap, features, comp - serial, mt.t_mem, res.n, par)
    block = t_block(info, mem, res, comp - serial, gpu, target.extra_sync)
    scale = blocks_scale(info, gpu)
    kernel = t_kernel(comp, mt.t_mem, overlap, mt.t_round, block, mt.t_atomic) * scale
    launch = t_launch(gpu, info.launch_ctas, kernel)
    cycles = kernel + launch
    h = mem.hier
    return Terms(
        placement=target.placement.as_dict(),
        time_ns=gpu.cycles_to_ns(cycles),
        cycles=cycles,
        t_comp=comp,
        t_mem=mt.t_mem,
        t_overlap=overlap,
        overlap_source=source,
        t_launch=launch,
        t_lsu=lsu,
        t_l2=mt.t_l2,
        t_atomic=mt.t_atomic,
        issued_instructions=inst,
        executed_instructions=target.issue.executed,
        addressing_delta=target.issue.addressing_delta,
        replays={name: int(h.replays[i]) for i, name in cachesim.REPLAY_CAUSES.items()},
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
        object_caches=object_caches(info, h),
        t_tex=tex,
        t_fp64=fp64,
        t_round=mt.t_round,
        t_block=block,
        rounds=h.rounds,
        slow_rounds=h.slow_rounds,
        copy_rounds=h.copy_rounds,
        l1_bank_conflicts=h.l1_bank_conflicts,
        mlp=res.mlp,
        blocks_scale=scale,
    )


def object_caches(info: traces.KernelInfo, h: cachesim.HierarchyTotals) -> dict[str, dict[str, dict[str, int]]]:
    """:attr:`Terms.object_caches` from the hierarchy's per-object counts (levels an object's requests reached)."""
    out = {}
    for o in info.objects:
        out[o.name] = {
            lvl: {"requests": int(h.obj_requests[i, o.id]), "hits": int(h.obj_hits[i, o.id]),
                  "misses": int(h.obj_misses[i, o.id])}
            for i, lvl in enumerate(cachesim.LEVELS) if h.obj_requests[i, o.id]
        }  # fmt: skip
    return out


def measured_applies(info: traces.KernelInfo, gpu: Gpu) -> bool:
    """Whether the trace's measured sample time is this GPU's (``catalog.same_gpu``), so that the predictions are
    measured x T(target) / T(sample). Before, a time measured on an H100 scaled a K80's predictions, unsaid."""
    return info.measured is not None and catalog.same_gpu(info.measured.gpu, gpu.name)


def evaluation(info: traces.KernelInfo, gpu: Gpu, options: Options, sample: Terms, target: Terms) -> Evaluation:
    """A target's terms beside the sample's: the speedup and, with a sample time measured on this GPU, the
    prediction (a time measured on another GPU scales nothing: ``measured_applies``)."""
    measured = info.measured.time_ns if measured_applies(info, gpu) else None
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
            "dlcm": options.dlcm,
        },
    )


class MemoryRun:
    """One placement's hierarchy and DRAM queues fed a group of (rewritten) rows at a time:
    :func:`whole_memory` in bounded memory. The DRAM stream's arrivals and busy times are
    ``dram_stream``'s, computed piece by piece with its running sums carried (the same
    sums in the same order)."""

    def __init__(self, info, gpu: Gpu, opts: Options, blocks_per_sm: int):
        self.gpu, self.opts = gpu, opts
        self.cfg = build_hierarchy_config(gpu, info.extra, opts.dlcm)
        self.queue = queuing.QueueStream()
        self.hier = cachesim.HierarchyStream(self.cfg, info, blocks_per_sm, on_dram=self._dram, mlp=mlp_for(info, gpu))
        self.held_peak = 0
        """The hierarchy's ``held_peak``, kept when ``finish`` lets the hierarchy go."""
        self._g = 0.0  # departure delays so far
        self._m = -np.inf  # running maximum of arrival - delay

    def feed(self, group: traces.Trace) -> None:
        self.hier.feed(group)

    def _dram(self, piece: cachesim.DramPiece) -> None:
        arrival, busy, latency, self._g, self._m = _dram_piece(
            self.gpu, piece.nbytes, piece.cycle, piece.service_ns, self._g, self._m
        )
        self.queue.feed(piece.bank, arrival, busy, latency)

    def finish(self):
        """:func:`terms`' memory function of the run. The hierarchy goes: its last rows and buffers are freed now,
        not when the garbage collector finds the cycle its ``on_dram`` makes (a batch of many tasks grew by them)."""
        h = self.hier.finish()
        blocks = self.hier.blocks_per_sm
        self.held_peak = self.hier.held_peak
        self.hier = None
        tb = h.dram_bytes / h.dram_requests if h.dram_requests else float(self.gpu.memory.line_bytes)
        opts = self.opts
        mode = opts.queue if opts.queuing else "exact"

        def memory(blocks_per_sm: int, in_flight: float) -> _Memory:
            assert blocks_per_sm == blocks
            return _reduce(h, self.queue.result(mode, population=in_flight), tb, self.gpu, self.cfg, opts)

        return memory


def staging_detail(option, ins: dict, costs) -> tuple[float, dict]:
    """The instructions one staging option adds (its copy loop, barriers and write-back) and
    the ``staging`` detail an evaluation reports, for the whole-trace and streamed evaluators."""
    added = (ins["loads"] + ins["stores"] + ins["int"] + ins["barriers"] * costs.barrier
             + ins["writeback_loads"] + ins["writeback_stores"])  # fmt: skip
    detail = {
        "windows": option.windows,
        "why": option.why,
        "tiles": {n: {"bytes": b, "pitch": p, "pad": q} for n, b, p, q in option.tiles},
        "inserted": dict(ins),
        "added_instructions": added,
    }
    return added, detail


__all__ = [
    "Evaluation",
    "Issue",
    "MemoryRun",
    "Options",
    "Residency",
    "Target",
    "Terms",
    "addr_cost_table",
    "dram_stream",
    "evaluation",
    "parallelism",
    "residency",
    "t_comp",
    "t_kernel",
    "t_mem",
    "t_overlap",
    "terms",
    "w_serial",
    "whole_memory",
]
