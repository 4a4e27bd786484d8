"""Machine parameters of the seed models, built from a GPU configuration.

The seed models (Hong & Kim's MWP-CWP, Sim et al.'s GPUPerf, Amaris et al.'s BSP)
each read a handful of machine numbers. :class:`Machine` gathers them in one frozen
dataclass; :func:`machine_from_gpu` fills it from a :class:`placement.gpu.Gpu`, and
the presets reproduce the papers' own machines (Hong & Kim Sec. 3.6, Sim et al.
Table 3). Numbers a GPU configuration does not hold are model constants with the
paper they come from.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..gpu import Gpu
from ..memory import fp64_per_cycle_of


def model_constants(gpu: Gpu) -> dict:
    """The seed models' per-architecture constants of ``gpu`` (``[<arch>.models]`` of
    ``configs/architectures.toml``, with its compute capability's overrides), each with its
    source there: ``ldst_units`` (load/store units per SM, from NVIDIA's whitepapers: Fermi 16,
    Kepler 32, Maxwell 32, Pascal 32 but GP100 16; none from Volta on, where a warp's
    shared-memory access is no longer paced by the unit count alone), ``l1tex_sectors_per_wavefront``
    (Volta on: the L1TEX wavefronts that take the units' place in that bound, :mod:`placement.models.ldst`) and
    ``l2_transactions_per_sm_cycle`` (the L2 throughput bound's rate: derived from the
    gpuperfpredict counters). Empty for an architecture without any."""
    from ..catalog import model_defaults

    return model_defaults(gpu.arch, tuple(gpu.compute_capability))


def ldst_units_of(gpu: Gpu) -> int | None:
    """The LD/ST units per SM of ``gpu``'s architecture, None when unknown."""
    v = model_constants(gpu).get("ldst_units")
    return int(v) if v else None


def l1tex_sectors_per_wavefront_of(gpu: Gpu) -> float | None:
    """The sectors one L1TEX wavefront carries on ``gpu``'s architecture (Volta on: 4, one line's), None before
    Volta, where the LD/ST units' count sets the bound (:func:`ldst_units_of`)."""
    v = model_constants(gpu).get("l1tex_sectors_per_wavefront")
    return float(v) if v else None


def fp64_cycles_per_warp(fp64_insts: float, m: Machine) -> float:
    """Cycles an SM's double-precision units take for a warp's ``fp64_insts`` double-precision instructions: each
    warp_size / ``m.fp64_width`` (the CUDA C++ Programming Guide's results per clock, cited in
    configs/architectures.toml: 16 cycles a warp on Turing, GA10x and Ada, 1 on GV100 and GA100, half of one on
    GH100); 0 where the machine has no rate (the papers' presets) or the kernel no doubles.

    Extension (neither MWP-CWP nor GPUPerf has it: both issue every computation instruction at the SIMD width's
    rate): the double-precision units bound the computation as the LD/ST units do (``placement.models.ldst``),
    T_comp at least the warps' double-precision cycles."""
    if not m.fp64_width or fp64_insts <= 0:
        return 0.0
    return fp64_insts * m.warp_size / m.fp64_width


def sustained_fraction_of(gpu: Gpu) -> float:
    """The share of the datasheet DRAM bandwidth the GPU sustains: its own (``memory.dram_sustained_fraction``,
    which ``placement calibrate`` measures) where it has one, else its architecture's (``dram_sustained_fraction``;
    1 when the file has none)."""
    own = gpu.memory.dram_sustained_fraction
    if own > 0:
        return float(own)
    v = model_constants(gpu).get("dram_sustained_fraction")
    return float(v) if v else 1.0


def l2_rate_of(gpu: Gpu) -> float | None:
    """L2 transactions the whole GPU serves per cycle: its SMs x the architecture's rate per SM
    (``l2_transactions_per_sm_cycle``), None when the architecture has no rate (the L2 bound
    is then off)."""
    v = model_constants(gpu).get("l2_transactions_per_sm_cycle")
    return gpu.compute.sms * float(v) if v else None


GAMMA = 64.0
"""Sim et al. Eq. 8: machine parameter of the synchronization cost, 64 for Fermi."""


@dataclass(frozen=True)
class Machine:
    """The machine side of the seed models (Hong & Kim Table 1, Sim et al. Table 2).

    Latencies and delays are in SM cycles; ``issue_cycles`` is the SM's cycles per
    warp-instruction (Hong & Kim's Issue_cycles: warp size / SIMD width).
    """

    name: str
    sms: int
    clock_mhz: float
    simd_width: int
    """Scalar processors per SM (Sim et al. SIMD width; P / #SMs in BSP)."""
    sfu_width: int
    bandwidth_gbs: float
    dram_latency: float
    """Hong & Kim Mem_LD, Sim et al. DRAM lat."""
    departure_del_coal: float
    departure_del_uncoal: float
    """Hong & Kim Departure_del_uncoal; Sim et al. use it as the transaction departure delay Delta."""
    issue_cycles: float
    fp_latency: float
    avg_inst_latency: float
    l1_latency: float
    l2_latency: float
    smem_latency: float
    warp_size: int = 32
    transaction_bytes: int = 128
    """Sim et al. Eq. A.7 transaction size (128 B on Fermi and Kepler)."""
    sector_bytes: int = 128
    """Bytes of one transaction of an uncoalesced request (Kepler L2: 32 B sectors; Fermi's L1 lines: 128 B)."""
    gamma: float | None = GAMMA
    """Sim et al.'s Gamma (Eq. 8); None: no published value for the machine, O_sync from Hong & Kim Eq. 26."""
    max_warps_per_sm: int = 64
    l1_caches_global: bool = False
    """Whether global loads are looked up in L1 (Fermi yes, Kepler no by default)."""
    gpu: Gpu | None = None
    """The configuration this came from, for occupancy; None for the papers' presets."""
    launch_overhead_s: float = 0.0
    """Fixed time per kernel launch added by MWP-CWP and GPUPerf (neither paper has one; 0 keeps them as published):
    a GPU configuration's empty kernel (``compute.launch_us``, :func:`machine_from_gpu`)."""
    launch_per_block_s: float = 0.0
    """Time the GPU takes to start each block of the launch (``compute.launch_per_block_ns``), where the kernel's own
    time does not cover it (:func:`launch_time`); 0 for the papers' presets."""
    l2_transactions_per_cycle: float | None = None
    """L2 throughput of the whole GPU in transactions (one 128-byte line's 1-4 32-byte
    sectors, nvprof's gld/gst transactions) per SM cycle, for the L2 throughput bound
    (:func:`placement.models.l2bound.t_l2`, an extension beyond the papers); None: no
    bound (the papers' presets)."""
    ldst_units: int | None = None
    """Load/store units per SM (LDST_UNITS: Kepler 32), for the LD/ST throughput bound
    (:mod:`placement.models.ldst`, an extension beyond the papers); None: no bound (the
    papers' presets)."""
    l1tex_sectors_per_wavefront: float | None = None
    """From Volta on, where no LD/ST unit count paces the SM: the sectors an L1TEX wavefront carries (one line's 4),
    for the LD/ST bound in wavefronts, one a cycle (:func:`placement.models.ldst.l1tex_wavefronts`); None: no such
    bound (the papers' presets, and Fermi to Pascal, which take ``ldst_units``)."""
    fp64_width: float | None = None
    """Double-precision results per clock per SM, for the double-precision bound (:func:`fp64_cycles_per_warp`, an
    extension beyond the papers, as ``placement.hms.t_fp64``); None or 0: no bound (the papers' presets)."""

    @property
    def freq_hz(self) -> float:
        return self.clock_mhz * 1e6

    @property
    def cores(self) -> int:
        return self.sms * self.simd_width

    def cycles_to_s(self, cycles: float) -> float:
        return cycles / self.freq_hz

    def launch_s(self, blocks: int, kernel_s: float) -> float:
        """The seconds a launch of ``blocks`` blocks adds to a kernel of ``kernel_s`` (:func:`launch_time`)."""
        return launch_time(self.launch_overhead_s, self.launch_per_block_s, blocks, kernel_s)


def launch_time(floor: float, per_block: float, blocks: int, kernel: float) -> float:
    """The time a launch adds to a kernel that runs ``kernel`` (``floor`` and ``per_block`` in its unit): the empty
    kernel's floor plus what the GPU's rate of starting blocks leaves uncovered, max(0, blocks x per_block - kernel).

    Extension (none of the papers times the launch; they measure long kernels): an empty kernel between two CUDA
    events takes 3.87 us with 1 block of 256 threads on the H100, 6.30 us with 4,096 and 43.3 us with 65,536
    (``h100-placements/variants-extra.csv``): a floor and 0.60 ns a block, which the blocks' own work hides. The HMS
    model (``placement.hms.t_launch``, in cycles) and the seed models (:meth:`Machine.launch_s`) take it alike."""
    return floor + max(0.0, blocks * per_block - kernel)


def machine_from_gpu(gpu: Gpu, **overrides) -> Machine:
    """The seed models' parameters of ``gpu``; keyword arguments override fields.

    Extension (none of the papers has it): the DRAM bandwidth the models see is the
    sustained one, the datasheet peak x the architecture's ``dram_sustained_fraction``
    (refresh, read/write turnarounds and ECC keep every GPU below its peak: mt4g measures
    74-92 % on Pascal to Hopper, the gpuperfpredict kernels peak at 73-82 % on Kepler and
    Maxwell), and the departure delays derived from the bandwidth grow by its inverse; and the launch is the
    configuration's (``compute.launch_us`` and ``launch_per_block_ns``, :func:`launch_time`), as the HMS model's.
    """
    c, m, k = gpu.compute, gpu.memory, gpu.caches
    sustained = sustained_fraction_of(gpu)
    mach = Machine(
        name=gpu.name,
        sms=c.sms,
        clock_mhz=c.clock_mhz,
        simd_width=c.cores_per_sm,
        sfu_width=c.sfus_per_sm,
        bandwidth_gbs=m.bandwidth_gbs * sustained,
        dram_latency=m.dram_latency,
        departure_del_coal=m.departure_del_coal / sustained,
        departure_del_uncoal=m.departure_del_uncoal / sustained,
        issue_cycles=c.issue_cycles,
        fp_latency=c.fp_latency,
        avg_inst_latency=c.avg_inst_latency,
        l1_latency=k.l1_latency,
        l2_latency=k.l2_latency,
        smem_latency=m.smem_latency,
        warp_size=c.warp_size,
        transaction_bytes=m.line_bytes,
        sector_bytes=m.sector_bytes,
        max_warps_per_sm=c.max_threads_per_sm // c.warp_size,
        l1_caches_global=k.global_in_l1,
        gpu=gpu,
        gamma=None,  # Gamma = 64 is Sim et al.'s Fermi value, fit by simulation; none is published for other GPUs
        l2_transactions_per_cycle=l2_rate_of(gpu),
        ldst_units=ldst_units_of(gpu),
        l1tex_sectors_per_wavefront=l1tex_sectors_per_wavefront_of(gpu),
        fp64_width=fp64_per_cycle_of(gpu) or None,
        launch_overhead_s=c.launch_us * 1e-6,
        launch_per_block_s=c.launch_per_block_ns * 1e-9,
    )
    return replace(mach, **overrides) if overrides else mach


def hong_kim_example() -> Machine:
    """The machine of Hong & Kim Sec. 3.6 / Table 2: 80 GB/s, 1 GHz, 16 SMs, Mem_LD 420.

    Departure delays are Table 6's FX5600 values (uncoalesced 10, coalesced 4);
    Issue_cycles 4 (Table 1: 8 SPs per SM, 32 threads per warp).
    """
    return Machine(
        name="hong-kim-sec3.6",
        sms=16,
        clock_mhz=1000.0,
        simd_width=8,
        sfu_width=2,
        bandwidth_gbs=80.0,
        dram_latency=420.0,
        departure_del_coal=4.0,
        departure_del_uncoal=10.0,
        issue_cycles=4.0,
        fp_latency=22.0,  # Lemeire et al. Table II, Tesla generation SP completion latency
        avg_inst_latency=22.0,
        l1_latency=0.0,
        l2_latency=0.0,
        smem_latency=4.0,
        max_warps_per_sm=24,  # compute capability 1.0: 768 threads per SM
    )


def c2050() -> Machine:
    """NVIDIA Tesla C2050 with Sim et al.'s Table 3 model parameters.

    1.15 GHz, 144 GB/s, 14 SMs of 32 SPs and 4 SFUs; FP lat 18, DRAM lat 440,
    Delta 20, L1 18 and L2 130 cycles. Shared-memory latency is not in Table 3:
    the L1 latency (same SRAM on Fermi) is used.
    """
    return Machine(
        name="c2050-sim2012",
        sms=14,
        clock_mhz=1150.0,
        simd_width=32,
        sfu_width=4,
        bandwidth_gbs=144.0,
        dram_latency=440.0,
        departure_del_coal=20.0,
        departure_del_uncoal=20.0,
        issue_cycles=1.0,
        fp_latency=18.0,
        avg_inst_latency=18.0,
        l1_latency=18.0,
        l2_latency=130.0,
        smem_latency=18.0,
        max_warps_per_sm=48,
        l1_caches_global=True,
    )
