"""Resident blocks and warps per SM (the CUDA occupancy calculator's rules).

Occupancy sets N, the number of warps per SM that every model uses (Hong & Kim
Table 1, #Active_warps_per_SM), and placing an array in shared memory lowers it.
The rules follow NVIDIA's occupancy calculator: each of four resources bounds the
number of resident blocks, and the smallest bound wins.

- blocks: the SM's block slots (``max_blocks_per_sm``);
- warps: ``max_threads_per_sm / warp_size`` warp slots, whole blocks only;
- registers: with 'warp' granularity (compute capability >= 2.0) each warp gets
  ``regs_per_thread * warp_size`` registers rounded up to ``reg_alloc_unit`` and
  warps are allocated in groups of ``warp_alloc_granularity`` (the register file's
  sub-partitions); with 'block' granularity (1.x) the block's registers, for its
  warp count rounded up to ``warp_alloc_granularity``, round up to the unit;
- shared memory: the block's bytes plus the per-block reservation (cc >= 8.0),
  rounded up to ``smem_alloc_unit``.
"""

from __future__ import annotations

from dataclasses import dataclass

import traces
from traces.errors import InputError

from .builds import built_value
from .gpu import Gpu

RESOURCES = ("blocks", "warps", "registers", "shared memory")


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps per SM and what limits them."""

    threads_per_block: int
    warps_per_block: int
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limiter: str
    """The resource with the smallest bound (first in RESOURCES order on a tie)."""
    limits: dict[str, int]
    """Resident blocks allowed by each resource alone."""

    @property
    def occupancy(self) -> float:
        """Resident warps over the SM's warp slots."""
        return self.warps_per_sm / self.max_warps_per_sm


def occupancy(gpu: Gpu, threads_per_block: int, regs_per_thread: int = 0, smem_per_block: int = 0) -> Occupancy:
    """Resident blocks and warps per SM of a launch on ``gpu``.

    Raises InputError when the block cannot be launched at all (too many threads,
    registers or shared memory for one block).
    """
    c, m = gpu.compute, gpu.memory
    if threads_per_block < 1:
        raise InputError(f"threads per block must be >= 1, got {threads_per_block}")
    if threads_per_block > c.max_threads_per_block:
        raise InputError(
            f"{threads_per_block} threads per block exceed {gpu.name}'s limit of {c.max_threads_per_block}"
        )
    if regs_per_thread < 0 or regs_per_thread > c.max_regs_per_thread:
        raise InputError(f"{regs_per_thread} registers per thread outside {gpu.name}'s 0..{c.max_regs_per_thread}")
    if smem_per_block < 0 or smem_per_block > m.smem_per_block:
        raise InputError(
            f"{smem_per_block} bytes of shared memory per block exceed {gpu.name}'s limit of {m.smem_per_block}"
        )

    wpb = -(-threads_per_block // c.warp_size)
    max_warps = c.max_threads_per_sm // c.warp_size
    limits = {"blocks": c.max_blocks_per_sm, "warps": max_warps // wpb}

    gran = c.warp_alloc_granularity
    if regs_per_thread == 0:
        limits["registers"] = c.max_blocks_per_sm
    elif c.reg_alloc_granularity == "warp":
        regs_per_warp = _round_up(regs_per_thread * c.warp_size, c.reg_alloc_unit)
        if regs_per_warp * _round_up(wpb, gran) > c.max_regs_per_block:
            raise InputError(
                f"{regs_per_thread} registers per thread x {threads_per_block} threads exceed "
                f"{gpu.name}'s {c.max_regs_per_block} registers per block"
            )
        warps_by_regs = (c.regs_per_sm // gran // regs_per_warp) * gran
        limits["registers"] = warps_by_regs // wpb
    else:
        regs_per_block = _round_up(_round_up(wpb, gran) * c.warp_size * regs_per_thread, c.reg_alloc_unit)
        if regs_per_block > c.max_regs_per_block:
            raise InputError(
                f"{regs_per_thread} registers per thread x {threads_per_block} threads exceed "
                f"{gpu.name}'s {c.max_regs_per_block} registers per block"
            )
        limits["registers"] = c.regs_per_sm // regs_per_block

    if smem_per_block == 0:
        limits["shared memory"] = c.max_blocks_per_sm
    else:
        smem = _round_up(smem_per_block + m.smem_reserved_per_block, m.smem_alloc_unit)
        limits["shared memory"] = m.smem_per_sm // smem

    blocks = min(limits.values())
    limiter = next(r for r in RESOURCES if limits[r] == blocks)
    return Occupancy(
        threads_per_block=threads_per_block,
        warps_per_block=wpb,
        blocks_per_sm=blocks,
        warps_per_sm=blocks * wpb,
        max_warps_per_sm=max_warps,
        limiter=limiter,
        limits=limits,
    )


def regs_for(info: traces.KernelInfo, gpu: Gpu, build: str = "") -> int:
    """The registers per thread of the trace's kernel when built for ``gpu``: the trace's
    ``extra["regs_by_arch"]`` entry of the GPU's architecture, else that of the nearest lower one of the
    same major version (sm_87 reads sm_86), else ``regs_per_thread`` (the build the trace describes).

    nvcc allocates registers per architecture and occupancy follows them: Kernel Tuner's 2D convolution
    with 2 x 2 outputs a thread uses 32 registers on sm_80 and 254 on sm_90 (nvcc 13.0,
    ``traces/generators/registers.toml``), 8 blocks of 256 threads a SM against 1. The generators store
    every architecture's count (``benchmarks/arch_registers.py``); an importer that knows one build leaves
    ``regs_by_arch`` out. ``traces.schema`` has validated the map when the trace was read.

    ``build`` names a placement's build by its moved objects (``placement.placements.build_key``: "input=S/G").
    Another placement is another program, with registers of its own, and where the trace's
    ``extra["regs_by_placement"]`` has that build its count comes first, by the same architecture rule: the
    same convolution staged in shared memory takes 80 registers on sm_90 (6 resident blocks of 128 threads,
    against 3 with plain loads), and through ``__ldg`` 44-52 on sm_80 where plain loads take 32
    (``traces/generators/registers_variants.toml``)."""
    regs = built_value(info, gpu, build, "regs")
    return regs if regs is not None else info.regs_per_thread
