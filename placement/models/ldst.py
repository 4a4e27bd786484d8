"""A throughput bound on the SM's load/store units, shared by MWP-CWP and GPUPerf (an extension).

Hong & Kim price every non-global instruction, shared-memory accesses included, at
Issue_cycles (warp size / SIMD width: 1/6 cycle per warp-instruction on a Kepler
SMX of 192 cores), and Sim et al. likewise at avg_inst_lat / ITILP with ITILP_max =
avg_inst_lat / (warp size / SIMD width). On GPUs whose SM has fewer load/store
units than cores that is too cheap for memory instructions: every shared, global
and local load and store goes through the SM's LD/ST units, and a warp-wide one
occupies them warp_size / LDST_units cycles, once more for every replay (a bank
conflict, or more words than one pass carries). NVIDIA's whitepapers give the
units per SM (``[<arch>.models] ldst_units`` of configs/architectures.toml): Fermi GF100 16 ("Fermi" whitepaper, 2009:
16 load/store units per SM), Kepler GK104 and GK110 32 (GeForce GTX 680
whitepaper, 2012, and "Kepler GK110" whitepaper, 2012: each SMX has 192
single-precision cores, 32 special-function units and 32 load/store units),
Maxwell GM107/GM204 32 (8 per SMM processing block), Pascal GP104 32 and GP100 16
(8 per processing block). The Kepler value agrees with its shared memory: 32 banks
serve one 32-bit word per lane of a warp per clock (CUDA C Programming Guide,
compute capability 3.x), one warp-instruction per cycle, as 32 / 32 units says. Hence
per warp

    LDST_cycles = (#global_transactions + #shared_insts + #shared_replays) x warp_size / LDST_units

and the SM needs LDST_cycles x (warps per SM) cycles however well the cores
overlap: the models take max() of their computation term with it (MWP-CWP's
Comp_cycles, GPUPerf's T_comp). Shared-memory replays come from nvprof's
shared_load_replay and shared_store_replay (``KernelParams.bank_conflict_insts``). A
global request is replayed once per transaction after its first (nvprof's
global_replay_overhead counts these issues: "replays for non-coalesced global memory
accesses"), so a global memory instruction holds the units for its transactions per
request (``coal_per_mw``, ``uncoal_per_mw``): the 32 transactions of a strided
request are 32 passes. With no unit count
(the papers' presets, ``Machine.ldst_units`` None) the bound is off and the models
are as published.

From Volta on no unit count paces the SM: a memory instruction is one request to L1TEX, which
processes it in wavefronts, one a cycle, each a line's sectors (``[<arch>.models]
l1tex_sectors_per_wavefront``, 4; [NCU-L1] and [NVF-LSU] of configs/architectures.toml), and a
shared-memory access in one wavefront per bank-conflict degree. There the bound is
:func:`l1tex_wavefronts` a warp, at one a cycle. On the H100's Nsight Compute exports it binds the
shared-memory kernels at 1024^2 only (the staged and the tiled matmul: 428 and 194 us of wavefronts,
measured 499 and 278, where GPUPerf gave 239 and 107 without it).
"""

from __future__ import annotations

from .kernel import KernelParams
from .params import Machine


def ldst_insts(k: KernelParams) -> float:
    """Warp-instruction passes per warp through the LD/ST units: global loads and
    stores with their replays (one pass per transaction), shared loads and stores,
    and the shared-memory replays."""
    global_passes = k.coal_mem_insts * max(k.coal_per_mw, 1.0) + k.uncoal_mem_insts * max(k.uncoal_per_mw, 1.0)
    return global_passes + k.shared_insts + k.bank_conflict_insts


def l1tex_wavefronts(k: KernelParams, sectors_per_wavefront: float) -> float:
    """L1TEX wavefronts per warp (Volta on): a coalesced global request's one line; an uncoalesced one's sectors
    over ``sectors_per_wavefront`` (at least one) where they were counted (``uncoal_sectors_per_mw``: Nsight
    Compute's sectors a request), else its lines (``uncoal_per_mw`` of a trace), a wavefront each; each shared
    access one, and one more for each bank conflict."""
    sectors = k.uncoal_sectors_per_mw
    per_uncoal = max(sectors / sectors_per_wavefront, 1.0) if sectors > 0 else max(k.uncoal_per_mw, 1.0)
    return k.coal_mem_insts + k.uncoal_mem_insts * per_uncoal + k.shared_insts + k.bank_conflict_insts


def ldst_cycles_per_warp(k: KernelParams, m: Machine) -> float:
    """Cycles one warp's memory instructions hold the SM's LD/ST units (Fermi to Pascal) or its L1TEX, a wavefront
    a cycle (Volta on); 0 when the bound is off."""
    units = m.ldst_units
    if units and units > 0:
        return ldst_insts(k) * m.warp_size / units
    if m.l1tex_sectors_per_wavefront:
        return l1tex_wavefronts(k, m.l1tex_sectors_per_wavefront)
    return 0.0
