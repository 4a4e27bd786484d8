"""Sim et al.'s GPUPerf model (PPoPP 2012, Eq. 1-23 and Appendix A).

T_exec = T_comp + T_mem - T_overlap (Eq. 1), with T_comp = W_parallel + W_serial
(Eq. 2-10), T_mem from AMAT and inter-thread MLP (Eq. 11-15) and T_overlap from
F_overlap (Eq. 16-17); all costs are in cycles per SM. The benefit metrics
B_itilp, B_serial, B_fp and B_memlp (Eq. 18-23) say what an optimization could
gain. The pieces are plain functions so that the data-placement model (Huang &
Li) can reuse them.

Extensions, all off for the paper's C2050 preset (Table 3 machine, no GPU configuration):

- two throughput bounds: T_mem is at least T_L2 (``placement.models.l2bound``), and the
  parallel work is at least the cycles the SM's load/store units need
  (``placement.models.ldst``) and its double-precision units need
  (``placement.models.params.fp64_cycles_per_warp``, the kernel's ``fp64_insts``):
  T_comp = max(W_parallel + O_bank, T_LDST, T_FP64) + O_sync + O_SFU + O_CFdiv;
- a GPU configuration's latencies are load-to-use totals (:func:`amat_total`);
- with hit ratios, MWP_peak_bw counts the DRAM bytes of a request (:func:`dram_share`)
  and a request moves its counted sectors (:func:`request_bytes`);
- Eq. 11 split into a loads-only latency term and a bandwidth term at avg_DRAM_lat
  (stores are not waited on; L2 hits do not shorten DRAM time);
- O_sync without Gamma is Hong & Kim's Eq. 26 with MWP-CWP's cached departure delay;
- T_exec is at least T_comp + AMAT x #Rep (each repetition's first loads are exposed,
  Hong & Kim Eq. 24).
- the launch (``Machine.launch_s``, ``placement.models.params.launch_time``): a GPU configuration's empty
  kernel and what its rate of starting blocks leaves uncovered, added to the time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .kernel import KernelParams, launch
from .l2bound import t_l2
from .ldst import ldst_cycles_per_warp
from .params import Machine, fp64_cycles_per_warp


def itilp_max(avg_inst_lat: float, warp_size: int, simd_width: int) -> float:
    """Eq. 5: ITILP_max = avg_inst_lat / (warp_size / SIMD_width)."""
    return avg_inst_lat / (warp_size / simd_width)


def itilp(ilp: float, n: int, itilp_max_: float) -> float:
    """Eq. 4: ITILP = min(ILP x N, ITILP_max)."""
    return min(ilp * n, itilp_max_)


def avg_dram_lat(dram_lat: float, avg_trans_warp: float, delta: float) -> float:
    """Eq. 13: avg_DRAM_lat = DRAM_lat + (avg_trans_warp - 1) x Delta."""
    return dram_lat + max(avg_trans_warp - 1.0, 0.0) * delta


def amat(avg_dram_lat_: float, miss_ratio: float, hit_lat: float) -> float:
    """Eq. 12: AMAT = avg_DRAM_lat x miss_ratio + hit_lat."""
    return avg_dram_lat_ * miss_ratio + hit_lat


def amat_total(k: KernelParams, m: Machine, avg_dram_lat_: float) -> float:
    """Eq. 12 when the machine's latencies are load-to-use totals, as a GPU configuration's are
    (mt4g's and the pointer-chase latencies of configs/architectures.toml time a load from issue to
    use, through every level it passes): each request pays the latency of the level that serves
    it, AMAT = miss_ratio x avg_DRAM_lat + L2 hits x L2 lat + L1 hits x L1 lat. Eq. 12's
    avg_DRAM_lat x miss_ratio + hit_lat (the papers' presets) would count the L2 lookup twice on
    a miss and price a streaming kernel's bandwidth 1.2 (Kepler) to 1.8 (Maxwell) times too slow."""
    return k.miss_ratio * avg_dram_lat_ + k.l2_hit_ratio * m.l2_latency + k.l1_hit_ratio * m.l1_latency


def mwp_peak_bw(
    mem_peak_bandwidth_gbs: float, freq_hz: float, transaction_size: float, avg_dram_lat_: float, active_sms: int
) -> float:
    """Eq. A.6-A.7: MWP_peak_bw = mem_peak_bandwidth / (BW_per_warp x #active_SMs), BW_per_warp = freq x transaction_size / avg_DRAM_lat."""
    bw_per_warp = freq_hz * transaction_size / avg_dram_lat_
    return mem_peak_bandwidth_gbs * 1e9 / (bw_per_warp * active_sms)


def mwp(avg_dram_lat_: float, delta: float, peak_bw: float, n: int) -> float:
    """Eq. A.5: MWP = min(avg_DRAM_lat / Delta, MWP_peak_bw, N)."""
    by_delay = avg_dram_lat_ / delta if delta > 0 else float("inf")
    return min(by_delay, peak_bw, float(n))


def cwp(mem_cycles: float, comp_cycles: float, n: int) -> float:
    """Eq. A.1-A.2: CWP = min((mem_cycles + comp_cycles) / comp_cycles, N)."""
    if comp_cycles <= 0:
        return float(n)
    return min((mem_cycles + comp_cycles) / comp_cycles, float(n))


def itmlp(mlp: float, mwp_: float, cwp_: float, peak_bw: float) -> float:
    """Eq. 14-15: ITMLP = min(MLP x MWP_cp, MWP_peak_bw), MWP_cp = min(max(1, CWP - 1), MWP)."""
    mwp_cp = min(max(1.0, cwp_ - 1.0), mwp_)
    return min(mlp * mwp_cp, peak_bw)


def t_comp(w_parallel: float, w_serial: float) -> float:
    """Eq. 2: T_comp = W_parallel + W_serial."""
    return w_parallel + w_serial


def w_parallel(insts: float, total_warps: int, active_sms: int, avg_inst_lat: float, itilp_: float) -> float:
    """Eq. 3: W_parallel = (#insts x #total_warps / #active_SMs) x avg_inst_lat / ITILP."""
    return insts * total_warps / active_sms * avg_inst_lat / itilp_


def f_sfu(sfu_insts: float, insts: float, sfu_width: int, simd_width: int) -> float:
    """Eq. 10: F_SFU = min(max(#SFU_insts / #insts - SFU_width / SIMD_width, 0), 1)."""
    if insts <= 0:
        return 0.0
    return min(max(sfu_insts / insts - sfu_width / simd_width, 0.0), 1.0)


def f_overlap(n: int, cwp_: float, mwp_: float) -> float:
    """Eq. 17: F_overlap = (N - zeta) / N, zeta = 1 if CWP <= MWP else 0."""
    zeta = 1.0 if cwp_ <= mwp_ else 0.0
    return (n - zeta) / n


def t_overlap(t_comp_: float, t_mem_: float, f_overlap_: float) -> float:
    """Eq. 16: T_overlap = min(T_comp x F_overlap, T_mem)."""
    return min(t_comp_ * f_overlap_, t_mem_)


def transaction_delta(k: KernelParams, m: Machine, avg_trans_warp: float) -> float:
    """Delta, the departure delay per transaction: Hong & Kim's Eq. 15 Departure_delay over the
    average transactions per request (Departure_del_coal for coalesced requests,
    Departure_del_uncoal for uncoalesced ones; both are 20 on Sim et al.'s C2050)."""
    from .mwp_cwp import departure_delay

    return departure_delay(k, m) / max(avg_trans_warp, 1.0)


def request_bytes(k: KernelParams, m: Machine) -> float:
    """Bytes one memory request of a warp moves, Eq. A.7's transaction_size: a line for a
    coalesced request, #sectors x the sector size for an uncoalesced one (the counters' sectors
    per request, ``KernelParams.uncoal_sectors``; one per transaction without them). Sim et al. price
    uncoalescing only as latency (Eq. 13); without this the 32 sectors of a strided
    request would cost the bandwidth of one line."""
    mem = k.mem_insts
    if mem <= 0:
        return float(m.transaction_bytes)
    unc = max(k.uncoal_sectors * m.sector_bytes, float(m.sector_bytes))
    return (k.coal_mem_insts * m.transaction_bytes + k.uncoal_mem_insts * unc) / mem


def dram_share(k: KernelParams) -> float:
    """The fraction of a request's bytes that DRAM serves: the miss ratio when the counters give
    hit ratios, else 1 (Sim et al.: every request to DRAM)."""
    return k.miss_ratio if (k.l1_hit_ratio > 0 or k.l2_hit_ratio > 0) else 1.0


@dataclass(frozen=True)
class GpuPerfResult:
    """GPUPerf's costs (cycles per SM), intermediates, benefits and the bound."""

    t_exec: float
    t_comp: float
    t_mem: float
    t_overlap: float
    t_mem_prime: float
    w_parallel: float
    w_serial: float
    o_sync: float
    o_sfu: float
    o_cfdiv: float
    o_bank: float
    t_fp: float
    t_mem_min: float
    b_itilp: float
    b_serial: float
    b_fp: float
    b_memlp: float
    itilp: float
    itilp_max: float
    itmlp: float
    mwp: float
    mwp_peak_bw: float
    cwp: float
    n: int
    avg_dram_lat: float
    amat: float
    f_sfu: float
    f_overlap: float
    case: str
    """'memory' (MWP < CWP), 'compute' (MWP >= CWP) or 'not enough warps' (MWP = CWP = N)."""
    bound: str
    """'memory' when T_mem > T_comp, else 'compute'."""
    time_s: float
    t_l2: float = 0.0
    """Cycles the L2 needs for the kernel's transactions (the extension; 0: off)."""
    t_mem_latency: float = 0.0
    """Eq. 11's T_mem before the L2 bound."""
    t_ldst: float = 0.0
    """Cycles per SM the LD/ST units need (the extension; 0: off): T_comp = max(W_parallel + O_bank, t_ldst) + the other W_serial terms."""
    t_fp64: float = 0.0
    """Cycles per SM the double-precision units need (the extension; 0: off), a third term of that max."""

    def as_dict(self) -> dict:
        return asdict(self)


def predict(k: KernelParams, m: Machine) -> GpuPerfResult:
    """GPUPerf's T_exec and benefit metrics for ``k`` on ``m``."""
    ln = launch(k, m)
    n, sms, warps = ln.n, ln.active_sms, ln.total_warps
    insts = k.comp_insts + k.mem_insts  # per warp, SFU excluded (Table 2)
    mem_insts = k.mem_insts
    lat = m.avg_inst_latency
    imax = itilp_max(lat, m.warp_size, m.simd_width)
    il = itilp(k.ilp, n, imax)
    wp = w_parallel(insts, warps, sms, lat, il)

    trans = k.global_transactions / mem_insts if mem_insts else 1.0
    delta = transaction_delta(k, m, trans)
    dram = avg_dram_lat(m.dram_latency, trans, delta)
    # Eq. 12 expanded to two cache levels: every request pays the first level's
    # hit latency; those that miss L1 pay L2's; those that miss both pay DRAM's.
    if m.gpu is None:
        hit_lat = (m.l1_latency if m.l1_caches_global else 0.0) + (1.0 - k.l1_hit_ratio) * m.l2_latency
        am = amat(dram, k.miss_ratio, hit_lat)
    else:
        am = amat_total(k, m, dram)

    per_sm = warps / sms
    if m.gamma is not None:
        o_sync = k.synch_insts * per_sm * (m.gamma * dram * (mem_insts / insts if insts else 0.0))  # Eq. 7-8
    else:
        # No Gamma for this machine (Sim et al. fit 64 to Fermi by simulation): Hong & Kim's
        # Eq. 26, as the HMS model does (placement/hms.py), with MWP-CWP's departure delay of
        # one request (Eq. 15, cached departures: L2 hits leave at the L2's spacing) and MWP
        # capped by the block's warps.
        from .mwp_cwp import departure_delay_cached, synch_cost

        mwp_sync = min(dram / delta if delta > 0 else float(n), float(n))
        dep = departure_delay_cached(k, m, sms)
        o_sync = synch_cost(dep, mwp_sync, k.warps_per_block, k.synch_insts, ln.active_blocks_per_sm, ln.rep)
    fs = f_sfu(k.sfu_insts, insts, m.sfu_width, m.simd_width)
    o_sfu = k.sfu_insts * per_sm * (m.warp_size / m.sfu_width) * fs  # Eq. 9
    o_cfdiv = k.divergent_insts * per_sm * lat / il
    o_bank = k.bank_conflict_insts * per_sm * lat / il
    ws = o_sync + o_sfu + o_cfdiv + o_bank  # Eq. 6
    # Extension (placement.models.ldst): the LD/ST units need t_ldst cycles for the
    # SM's memory instructions and shared-memory replays, whatever the cores' ILP.
    # They overlap the issue of the warps' instructions, W_parallel + O_bank (the
    # replays as Sim et al. price them), so T_comp takes the larger of the two; the
    # other serial overheads (barriers, SFU, divergence) add as in Eq. 2 and 6.
    t_ldst = ldst_cycles_per_warp(k, m) * per_sm
    # Extension (as placement.hms.t_fp64): the double-precision units bound the parallel part likewise.
    t_fp64 = fp64_cycles_per_warp(k.fp64_insts, m) * per_sm
    tc = t_comp(max(wp + o_bank, t_ldst, t_fp64), ws - o_bank)

    # Extension (as MWP-CWP's Eq. 7 here): with hit ratios known, only the misses load DRAM,
    # so the bandwidth bound on MWP counts the DRAM bytes of a request, not those the L2 serves.
    peak = mwp_peak_bw(m.bandwidth_gbs, m.freq_hz, max(request_bytes(k, m) * dram_share(k), 1e-9), dram, sms)
    mw = max(1.0, mwp(dram, delta, peak, n))
    comp_cycles = insts * lat / il  # Eq. A.3
    mem_cycles = mem_insts * am / k.mlp  # Eq. A.4
    cw = cwp(mem_cycles, comp_cycles, n)
    itm = max(1e-9, itmlp(k.mlp, mw, cw, peak))
    tm_lat = mem_insts * per_sm / itm * am  # Eq. 11
    if m.gpu is not None and mem_insts > 0:
        # Eq. 11 split at its min (extensions, for a GPU configuration's machine; the papers'
        # presets keep Eq. 11): ITMLP = min(MLP x MWP_cp, MWP_peak_bw) is either the requests
        # the warps keep in flight (each waits AMAT) or the bandwidth's (each holding DRAM for
        # avg_DRAM_lat, the latency MWP_peak_bw was derived with, Eq. A.6-A.7). The latency
        # term counts loads only, as MWP-CWP's: a warp does not wait on its stores; the
        # bandwidth term counts every request, at avg_DRAM_lat, so L2 hits lowering AMAT do
        # not lower the DRAM time of the misses. Without stores and hits it is Eq. 11.
        mwp_cp = min(max(1.0, cw - 1.0), mw)
        loads = mem_insts - min(max(k.store_insts, 0.0), mem_insts)
        latency_bound = loads / max(1e-9, k.mlp * mwp_cp) * am
        bandwidth_bound = mem_insts / max(1e-9, peak) * dram
        tm_lat = max(latency_bound, bandwidth_bound) * per_sm
    # Extension (placement.models.l2bound): T_mem is at least the cycles the L2 needs
    # for all the kernel's transactions; Sim et al. price L2 hits by latency only.
    tl2 = t_l2(k, m)
    tm = max(tm_lat, tl2)
    fo = f_overlap(n, cw, mw)
    to = t_overlap(tc, tm, fo)
    te = tc + tm - to  # Eq. 1
    if m.gpu is not None and mem_insts > 0:
        # Extension (a GPU configuration's machine; the papers' presets keep Eq. 1): F_overlap lets
        # T_comp hide all of T_mem, but each repetition of blocks starts with its loads before any
        # of its warps can compute, so one AMAT per #Rep stays exposed, as Hong & Kim's Eq. 24
        # counts Mem_L x #Rep in the compute-bound case. Short warps of many repetitions
        # (gpuperfpredict's dotProd: 2 loads, a reduction, 3456 repetitions) need it.
        te = max(te, tc + am * ln.rep)

    fp = k.comp_insts if k.fp_insts is None else k.fp_insts
    t_fp = fp * warps * m.fp_latency / (sms * il)  # Eq. 18
    # Eq. 19 with "size of data" as the minimum DRAM transactions per SM.
    size = k.data_bytes / m.transaction_bytes / sms
    t_mem_min = size * dram / peak
    b_itilp = wp - insts * warps * lat / (sms * imax)  # Eq. 20
    b_serial = ws  # Eq. 21
    b_fp = tc - t_fp - b_itilp - b_serial  # Eq. 22
    b_memlp = max(tm - to - t_mem_min, 0.0)  # Eq. 23
    kernel_s = m.cycles_to_s(te)
    if mw >= n and cw >= n:
        case = "not enough warps"
    elif mw < cw:
        case = "memory"
    else:
        case = "compute"
    return GpuPerfResult(
        t_exec=te, t_comp=tc, t_mem=tm, t_overlap=to, t_mem_prime=tm - to,
        w_parallel=wp, w_serial=ws, o_sync=o_sync, o_sfu=o_sfu, o_cfdiv=o_cfdiv, o_bank=o_bank,
        t_fp=t_fp, t_mem_min=t_mem_min, b_itilp=b_itilp, b_serial=b_serial, b_fp=b_fp, b_memlp=b_memlp,
        itilp=il, itilp_max=imax, itmlp=itm, mwp=mw, mwp_peak_bw=peak, cwp=cw, n=n,
        avg_dram_lat=dram, amat=am, f_sfu=fs, f_overlap=fo, case=case,
        bound="memory" if tm > tc else "compute", time_s=kernel_s + m.launch_s(k.blocks, kernel_s),
        t_l2=tl2, t_mem_latency=tm_lat, t_ldst=t_ldst, t_fp64=t_fp64,
    )  # fmt: skip
