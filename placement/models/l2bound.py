"""A throughput bound on L2 transactions, shared by MWP-CWP and GPUPerf (an extension).

Neither Hong & Kim nor Sim et al. bound a kernel by L2 throughput: both price a
memory request by latency (Mem_LD, AMAT) and by DRAM bandwidth (MWP_peak_BW), so a
kernel whose requests hit L2 is as fast as its latency allows however many
transactions it sends. On Kepler, global loads skip L1 and each warp request is
split into one L2 transaction per 128-byte line it touches (1-4 sectors of 32
bytes; nvprof's gld/gst_transactions_per_request). An uncoalesced request of a
strided column walk is 32 transactions, mostly L2 hits, and such kernels run at a
fixed number of transactions per cycle per L2 slice, far below DRAM peak
(matrix_sum_normal, matMul_gpu_uncoalesced in the gpuperfpredict data). Hence

    T_L2 = #L2_transactions_per_warp x #total_warps / L2_transactions_per_cycle   (cycles)

a lower bound on the time of the memory phase; the models take max(T_mem, T_L2).
With either input unknown (0 transactions, no machine rate: the papers' presets and
parameter files) the bound is off and the models are as published.
"""

from __future__ import annotations

from .kernel import KernelParams
from .params import Machine


def t_l2(k: KernelParams, m: Machine) -> float:
    """Cycles the L2 needs to serve every transaction of ``k``; 0 when the bound is off."""
    rate = m.l2_transactions_per_cycle
    if not rate or rate <= 0 or k.l2_transactions <= 0:
        return 0.0
    return k.l2_transactions * k.total_warps / rate


def rate_from_counters(rows, clock_mhz: float, channels: int) -> float:
    """L2 transactions per SM cycle per memory channel that a GPU was seen to sustain:
    the largest (transactions per warp x warps) / (Duration x clock x channels) over
    ``rows`` (CounterRows with parameters and a measured time), the achieved peak as a
    microbenchmark would report it. Give it calibration rows only. 0 when no row has
    transaction counts."""
    best = 0.0
    for r in rows:
        k = r.params
        if k is None or not (r.measured_s > 0) or k.l2_transactions <= 0:
            continue
        best = max(best, k.l2_transactions * k.total_warps / (r.measured_s * clock_mhz * 1e6 * channels))
    return best
