"""Hong & Kim's MWP-CWP model (ISCA 2009, Eq. 1-27).

Memory warp parallelism (MWP) is how many warps per SM can wait on memory at once;
computation warp parallelism (CWP) is how many warps can compute during one
memory waiting period, plus one. Their relation picks one of three execution-time
equations (Eq. 22-24). Eq. 1 and Eq. 23 lost a factor in print: the corrected
form, which reproduces the paper's Table 2, is

    Exec_cycles_app = (Mem_cycles * N / MWP + Comp_cycles / #Mem_insts * (MWP - 1)) * #Rep

(DESIGN.md, "The other seed models").

Extensions, each inert with its default (Table 2 is reproduced unchanged):

- memory-level parallelism (``KernelParams.mlp``, Sim et al. Sec. 5.3: the average
  number of a warp's memory requests in flight before the first use). A warp then
  waits Mem_cycles / MLP (Sim et al. Eq. A.4), and MWP, which Eq. 5-17 count in
  requests, holds MWP / MLP warps. When bandwidth binds (Eq. 23) the product
  Mem_cycles x N / MWP, hence the bandwidth term, is unchanged; when warps are
  few (Eq. 22) the independent loads overlap.
- stores are not waited on: when warps are too few (Eq. 22) a warp's own memory
  waiting counts its loads only (``KernelParams.store_insts``; no instruction uses a
  store's value, so the warp issues on). Stores still take bandwidth: Eq. 23 and
  MWP keep every memory instruction. Without a store count (parameter files such
  as Table 2's) every memory instruction is waited on, as Hong & Kim count them.
- the launch (``Machine.launch_s``, ``placement.models.params.launch_time``): a GPU configuration's empty
  kernel and what its rate of starting blocks leaves uncovered, added to the time (none for the papers' machines).
- an L2 throughput bound (``placement.models.l2bound``, inert without transaction
  counts or a machine L2 rate): the memory term of Eq. 22-23 (Mem_cycles x #Rep,
  Mem_cycles x N / MWP x #Rep) is at least T_L2, the cycles the L2 needs for all
  the kernel's transactions; in Eq. 24 (compute bound, memory hidden but for the
  last warp's Mem_L x #Rep) the whole time is at least T_L2.
- cached departures (:func:`departure_delay_cached`, inert without hit ratios and
  an L2 rate): Eq. 15's delay for the requests that miss, the L2's spacing for
  those that hit.
- sectors (inert without sector counts): Eq. 15's #Uncoal_per_mw counts the 32-byte
  sectors of an uncoalesced request (:func:`departure_delay`), the unit of
  Departure_del_uncoal in a GPU configuration;
- #Rep by the busiest SM (``placement.models.kernel.launch``, a GPU configuration's
  machine only) and the sustained DRAM bandwidth (``placement.models.params.machine_from_gpu``);
- a load/store-unit throughput bound (``placement.models.ldst``, inert without a
  machine LD/ST unit count): Comp_cycles (Eq. 19) is max(Issue_cycles x
  #Total_insts, LDST_cycles), LDST_cycles = (global transactions + shared memory
  instructions + shared replays) x warp size / LD/ST units per SM, so CWP and Eq. 22-24 see the
  LD/ST pipe when it, not the cores, paces the warps (shared-memory tiled kernels
  on Kepler: 32 LD/ST units against 192 cores); and likewise the double-precision units
  (``placement.models.params.fp64_cycles_per_warp``, inert without a machine rate or a kernel's
  ``fp64_insts``): Comp_cycles at least #FP64_insts x warp size / their results per clock (16
  cycles a warp-instruction on Turing, GA10x and Ada).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .kernel import KernelParams, launch
from .l2bound import t_l2
from .ldst import ldst_cycles_per_warp
from .params import Machine, fp64_cycles_per_warp


def mem_ld_effective(k: KernelParams, m: Machine) -> float:
    """Mem_LD, or with cache hit ratios known (counters) the average access latency
    miss x Mem_LD + L2 hits x L2 latency + L1 hits x L1 latency.

    An extension: Hong & Kim model no cache (Sec. 3.5 leaves it to future work);
    this is GPUPerf's AMAT idea (Sim et al. Sec. 2.2, Eq. 12). Without hit ratios
    (a parameter file such as Table 2's) it is Mem_LD unchanged.
    """
    if k.l1_hit_ratio <= 0 and k.l2_hit_ratio <= 0:
        return m.dram_latency
    return k.miss_ratio * m.dram_latency + k.l2_hit_ratio * m.l2_latency + k.l1_hit_ratio * m.l1_latency


def mem_l_uncoal(mem_ld: float, uncoal_per_mw: float, departure_del_uncoal: float) -> float:
    """Eq. 10: Mem_L_Uncoal = Mem_LD + (#Uncoal_per_mw - 1) * Departure_del_uncoal."""
    return mem_ld + (uncoal_per_mw - 1.0) * departure_del_uncoal


def weights(coal_insts: float, uncoal_insts: float) -> tuple[float, float]:
    """Eq. 13-14: (Weight_uncoal, Weight_coal); (0, 1) for a kernel without memory instructions."""
    total = coal_insts + uncoal_insts
    if total <= 0:
        return 0.0, 1.0
    return uncoal_insts / total, coal_insts / total


def departure_delay(k: KernelParams, m: Machine) -> float:
    """Eq. 15: Departure_delay = Departure_del_uncoal * #Uncoal_per_mw * Weight_uncoal + Departure_del_coal * Weight_coal.

    Departure_del_uncoal of a GPU configuration is one 32-byte sector's time on the bus, so
    #Uncoal_per_mw counts the request's sectors when the counters give them
    (``KernelParams.uncoal_sectors``: 4 for two lines of two sectors, where Kepler counts 2
    transactions); without them, one per transaction as Hong & Kim count."""
    w_unc, w_coal = weights(k.coal_mem_insts, k.uncoal_mem_insts)
    return m.departure_del_uncoal * k.uncoal_sectors * w_unc + m.departure_del_coal * w_coal


def departure_delay_cached(k: KernelParams, m: Machine, active_sms: int) -> float:
    """Eq. 15 with caches (an extension, the departure-side twin of
    :func:`mem_ld_effective`): only the requests that miss every cache leave at
    DRAM's spacing (Eq. 15); an L2 hit leaves at the L2's, active_sms /
    L2_transactions_per_cycle per transaction, and an L1 hit does not leave the SM.
    Without an L2 rate (Volta and later: no measured rate) the L2 hits leave at Eq. 15's
    spacing with the misses, and the L1 hits still do not: a request served inside the
    SM takes no slot on the way to memory. Without hit ratios it is Eq. 15 unchanged.
    """
    dep = departure_delay(k, m)
    rate = m.l2_transactions_per_cycle
    if k.l1_hit_ratio <= 0 and k.l2_hit_ratio <= 0:
        return dep
    if not rate or rate <= 0:
        return (1.0 - min(max(k.l1_hit_ratio, 0.0), 1.0)) * dep
    trans = k.global_transactions / k.mem_insts if k.mem_insts > 0 else k.coal_per_mw  # per request (Eq. 13-14 weights)
    return k.miss_ratio * dep + k.l2_hit_ratio * trans * active_sms / rate


def bw_per_warp(freq_hz: float, load_bytes_per_warp: float, mem_l_cycles: float) -> float:
    """Eq. 7: BW_per_warp = Freq * Load_bytes_per_warp / Mem_L, in bytes per second."""
    return freq_hz * load_bytes_per_warp / mem_l_cycles


def mwp_peak_bw(bandwidth_gbs: float, bw_warp: float, active_sms: int) -> float:
    """Eq. 6: MWP_peak_BW = Mem_Bandwidth / (BW_per_warp * #ActiveSM)."""
    return bandwidth_gbs * 1e9 / (bw_warp * active_sms)


def mwp(mwp_without_bw_full: float, peak_bw: float, n: int) -> float:
    """Eq. 5 with Eq. 17: MWP = MIN(MWP_Without_BW, MWP_peak_BW, N)."""
    return min(mwp_without_bw_full, peak_bw, float(n))


def cwp(mem_cycles: float, comp_cycles: float, n: int) -> tuple[float, float]:
    """Eq. 8-9: (CWP_full, CWP) with CWP = MIN(CWP_full, N)."""
    full = (mem_cycles + comp_cycles) / comp_cycles if comp_cycles > 0 else float("inf")
    return full, min(full, float(n))


def synch_cost(
    departure_delay_: float, mwp_: float, warps_per_block: int, synch_insts: float, active_blocks: int, rep: float
) -> float:
    """Eq. 26: Departure_delay x (MWP - 1) x #Synch_insts x #Active_blocks_per_SM x #Rep.

    Hong & Kim Sec. 3.4.6: the delay per barrier "in one block" is Departure_delay x
    (MWP - 1), the spread of the in-flight warps' memory arrivals. A barrier waits
    only for its own block's warps, so at most warps_per_block of them: MWP is taken
    as min(MWP, warps per block). Table 2 (4 warps per block, MWP 2.28) is unchanged;
    without the cap a 2-warp block would wait on 25 warps' departures.
    """
    return departure_delay_ * (max(min(mwp_, float(warps_per_block)), 1.0) - 1.0) * synch_insts * active_blocks * rep


@dataclass(frozen=True)
class MwpCwpResult:
    """Every intermediate of Hong & Kim's Table 2, the case taken and the time."""

    mem_l_uncoal: float
    mem_l_coal: float
    mem_l: float
    weight_uncoal: float
    weight_coal: float
    departure_delay: float
    mwp_without_bw_full: float
    mwp_without_bw: float
    bw_per_warp_gbs: float
    mwp_peak_bw: float
    mwp: float
    comp_cycles: float
    mem_cycles: float
    cwp_full: float
    cwp: float
    n: int
    active_blocks_per_sm: int
    active_sms: int
    rep: float
    case: str
    """'eq22' (MWP = CWP = N, not enough warps), 'eq23' (memory bound), 'eq24' (compute bound), 'compute-only'."""
    exec_cycles_app: float
    synch_cost: float
    exec_cycles: float
    cpi: float
    time_s: float
    t_l2: float = 0.0
    """Cycles the L2 needs for the kernel's transactions (the extension; 0: off)."""
    issue_cycles_comp: float = 0.0
    """Eq. 19's Issue_cycles x #Total_insts, before the LD/ST bound."""
    ldst_cycles: float = 0.0
    """Cycles per warp the LD/ST units need (the extension; 0: off); comp_cycles is the larger of the two."""
    fp64_cycles: float = 0.0
    """Cycles per warp the double-precision units need (the extension; 0: off); comp_cycles is at least this too."""

    def as_dict(self) -> dict:
        """The fields; an unbounded one (MWP_Without_BW_full = Mem_L / Departure_delay where the delay is 0, a
        request of no transactions) is None, JSON's null, as the --json contract has it."""
        return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in asdict(self).items()}


def predict(k: KernelParams, m: Machine) -> MwpCwpResult:
    """Execution cycles of ``k`` on ``m`` (Eq. 1-27, Eq. 23 corrected)."""
    ln = launch(k, m)
    n = ln.n
    w_unc, w_coal = weights(k.coal_mem_insts, k.uncoal_mem_insts)
    mem_ld = mem_ld_effective(k, m)
    l_unc = mem_l_uncoal(mem_ld, k.uncoal_per_mw, m.departure_del_uncoal)
    l_coal = mem_ld  # Eq. 11
    ml = l_unc * w_unc + l_coal * w_coal  # Eq. 12
    dep = departure_delay_cached(k, m, ln.active_sms)  # Eq. 15 (with caches: the extension)
    full = ml / dep if dep > 0 else float("inf")  # Eq. 16
    without_bw = min(full, float(n))  # Eq. 17
    # Eq. 7; with hit ratios known only the misses load DRAM (the cache extension above).
    dram_bytes = k.load_bytes_per_warp * (k.miss_ratio if (k.l1_hit_ratio > 0 or k.l2_hit_ratio > 0) else 1.0)
    bw_warp = bw_per_warp(m.freq_hz, max(dram_bytes, 1e-9), ml)
    peak = mwp_peak_bw(m.bandwidth_gbs, bw_warp, ln.active_sms)  # Eq. 6
    mlp = max(k.mlp, 1.0)
    # Eq. 5 in requests, over MLP requests per warp (the MLP extension; MLP 1 is Hong & Kim's).
    mw = min(full / mlp, peak / mlp, float(n))
    mw = max(mw, 1.0)
    mem_cycles = (l_unc * k.uncoal_mem_insts + l_coal * k.coal_mem_insts) / mlp  # Eq. 18 (over MLP: Sim et al. Eq. A.4)
    issue_comp = m.issue_cycles * k.total_insts  # Eq. 19
    ldst_warp = ldst_cycles_per_warp(k, m)  # the LD/ST extension; 0 when off
    fp64_warp = fp64_cycles_per_warp(k.fp64_insts, m)  # the double-precision extension; 0 when off
    comp_cycles = max(issue_comp, ldst_warp, fp64_warp)
    cw_full, cw = cwp(mem_cycles, comp_cycles, n)  # Eq. 8-9
    mem_insts = k.mem_insts
    tl2 = t_l2(k, m)  # the L2 throughput extension; 0 when off
    # Comp_p (Eq. 22-23): the computation between two memory periods, Comp_cycles / #Mem_insts. With fewer
    # than one memory instruction per warp (an average over warps) a period holds at most the warp's whole
    # computation, not more: 1e-320 memory instructions per warp made it infinite (fuzz input kernel 32638).
    comp_period = comp_cycles / max(mem_insts, 1.0)
    if mem_insts <= 0:
        case = "compute-only"
        app = comp_cycles * n * ln.rep
    elif mw == n and cw == n:
        case = "eq22"
        # Too few warps: each warp's own waiting, on its loads only (stores are not waited on).
        waited = mem_cycles * (1.0 - min(max(k.store_insts, 0.0), mem_insts) / mem_insts)
        app = max(waited * ln.rep, tl2) + (comp_cycles + comp_period * (mw - 1)) * ln.rep
    elif cw >= mw or comp_cycles > mem_cycles:
        case = "eq23"
        app = max(mem_cycles * n / mw * ln.rep, tl2) + comp_period * (mw - 1) * ln.rep
    else:
        case = "eq24"
        # Compute bound: memory hides under computation except the last warp's Mem_L,
        # so the L2 bound caps the whole time, not the exposed latency tail.
        app = max(ml * ln.rep + comp_cycles * n * ln.rep, tl2)
    synch = synch_cost(dep, mw, k.warps_per_block, k.synch_insts, ln.active_blocks_per_sm, ln.rep)  # Eq. 26
    total = app + synch  # Eq. 27
    kernel_s = m.cycles_to_s(total)
    insts = k.total_insts * k.warps_per_block * k.blocks / ln.active_sms  # Eq. 25 denominator
    return MwpCwpResult(
        mem_l_uncoal=l_unc,
        mem_l_coal=l_coal,
        mem_l=ml,
        weight_uncoal=w_unc,
        weight_coal=w_coal,
        departure_delay=dep,
        mwp_without_bw_full=full,
        mwp_without_bw=without_bw,
        bw_per_warp_gbs=bw_warp / 1e9,
        mwp_peak_bw=peak,
        mwp=mw,
        comp_cycles=comp_cycles,
        mem_cycles=mem_cycles,
        cwp_full=cw_full,
        cwp=cw,
        n=n,
        active_blocks_per_sm=ln.active_blocks_per_sm,
        active_sms=ln.active_sms,
        rep=ln.rep,
        case=case,
        exec_cycles_app=app,
        synch_cost=synch,
        exec_cycles=total,
        cpi=total / insts if insts > 0 else 0.0,
        time_s=kernel_s + m.launch_s(k.blocks, kernel_s),
        t_l2=tl2,
        issue_cycles_comp=issue_comp,
        ldst_cycles=ldst_warp,
        fp64_cycles=fp64_warp,
    )
