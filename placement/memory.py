"""The GPU's memory hierarchy in cachesim's terms.

cachesim never imports placement (data flows traces -> cachesim -> placement), so
the hierarchy takes its own configuration; this module builds it from a
:class:`placement.gpu.Gpu`. ``placement.gpu`` calls it to check a configuration as the
simulation reads it, so it names ``Gpu`` for the type checker only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import cachesim

from .catalog import model_defaults

if TYPE_CHECKING:  # pragma: no cover
    from .gpu import Gpu


def _arch_models(gpu: Gpu) -> dict:
    """The ``[<arch>.models]`` constants of the GPU's architecture and compute capability (what
    ``placement.models.params.model_constants`` gives the seed models; that package is not imported here, the
    evaluation's import path stays light)."""
    return model_defaults(gpu.arch, tuple(gpu.compute_capability))


def l1_tags_per_cycle_of(gpu: Gpu) -> int:
    """Lines the per-SM cache's tag stage resolves per cycle, one per set of its own hash (``l1_tags_per_cycle`` of the
    architecture's ``[<arch>.models]`` in configs/architectures.toml: 4 from Volta on, cited there); 0 where it has
    none (no tag-stage bound in ``cachesim``)."""
    v = _arch_models(gpu).get("l1_tags_per_cycle")
    return int(v) if v else 0


L1_BANK_RULE_RATIO = 1.5
"""The measured ``memory.l1_bank_ratio`` from which a GPU's L1 takes the bank rule: above 1 (the quarters' loads as
fast in the same banks as in others) and below 2, the least a 4-way conflict read in four passes takes over the
conflict-free load where the load/store pipe takes one every 2 cycles (GA10x; 4 where it takes one a cycle)."""


def l1_data_banks_of(gpu: Gpu) -> bool:
    """Whether the GPU's per-SM cache reads its data through the shared memory's banks: where ``placement calibrate``
    measured it (``memory.l1_bank_ratio`` > 0), whether the same-bank loads took at least
    :data:`L1_BANK_RULE_RATIO` the time of the others; else ``l1_data_banks`` of the architecture's
    ``[<arch>.models]`` (Volta on, cited in configs/architectures.toml)."""
    if gpu.memory.l1_bank_ratio > 0:
        return gpu.memory.l1_bank_ratio >= L1_BANK_RULE_RATIO
    return bool(_arch_models(gpu).get("l1_data_banks", False))


def reissued_replay_causes_of(gpu: Gpu) -> tuple[int, ...]:
    """The replay causes (``cachesim.REPLAY_CAUSES``) whose replays the GPU's warp scheduler issues again, taking
    issue slots (Huang & Li's Eq. 3): all four up to Pascal; from Volta on, where the architecture's
    ``[<arch>.models]`` says ``memory_replays_reissued = false`` (cited in configs/architectures.toml), only the
    constant cache's (misses and divergence): an L1TEX instruction issues once, and the further lines of a global
    access (cause 1) and a shared access's bank conflicts (cause 4) are further wavefronts of its one request,
    priced in the load/store data path's cycles (``cachesim``'s ``lsu_cycles``, T_LSU)."""
    if _arch_models(gpu).get("memory_replays_reissued", True):
        return tuple(cachesim.REPLAY_CAUSES)
    return tuple(c for c in cachesim.REPLAY_CAUSES if c not in (cachesim.REPLAY_WORDS, cachesim.REPLAY_BANK_CONFLICT))


def global_l1_opt_in_of(gpu: Gpu) -> bool:
    """Whether a build with ``-Xptxas -dlcm=ca`` caches the GPU's global loads in its per-SM L1 where its default does
    not (``global_l1_opt_in`` of the architecture's ``[<arch>.models]``: Maxwell cc 5.2 and Pascal, cited in
    configs/architectures.toml)."""
    return bool(_arch_models(gpu).get("global_l1_opt_in", False))


def build_hierarchy_config(gpu: Gpu, extra: Mapping[str, Any], dlcm: str | None = None) -> cachesim.HierarchyConfig:
    """:func:`hierarchy_config` for one build: its ``-Xptxas -dlcm`` (``dlcm``, the command line's ``--dlcm``, else
    the trace's ``extra["dlcm"]``, checked by ``traces.schema``) routes its global loads. ``"cg"`` keeps them out of
    the L1 on every GPU (``ld.global.cg``: the L2 only); ``"ca"`` sends them through it on a GPU that caches them by
    default (Fermi, Volta on) and on one whose architecture takes the opt-in (:func:`global_l1_opt_in_of`) and has an
    L1 in its configuration. Elsewhere (Kepler, Maxwell cc 5.0) they stay in the L2: the Kepler configurations have
    no L1 for global data, and the K40's nvprof counters of gpuperfpredict's runs of its ``-dlcm=ca`` build (the
    one that takes Tile_Width as an argument) show no L1 global hits or misses, though NVIDIA's Maxwell tuning
    guide gives GK110B the same opt-in. No ``dlcm``: the GPU's default."""
    cfg = hierarchy_config(gpu)
    dlcm = dlcm or extra.get("dlcm")
    if dlcm is None:
        return cfg
    cached = dlcm == "ca" and (cfg.global_in_l1 or (global_l1_opt_in_of(gpu) and bool(cfg.l1.strip())))
    return cfg if cached == cfg.global_in_l1 else dataclasses.replace(cfg, global_in_l1=cached)


def constant_on_path_of(gpu: Gpu) -> bool:
    """Whether the GPU's constant accesses take load/store data-path cycles: not where its architecture's
    ``[<arch>.models]`` says ``constant_own_pipe`` (Volta on, cited in configs/architectures.toml)."""
    return not _arch_models(gpu).get("constant_own_pipe", False)


def uniform_constant_pairs_of(gpu: Gpu) -> bool:
    """Whether nvcc reads two warp-uniform 4-byte constants of an 8-byte aligned pair with one uniform-datapath load
    on this GPU (``ULDC.64``, ``LDCU.64``): where its architecture's ``[<arch>.models]`` says
    ``uniform_constant_pairs`` (Turing on, cited in configs/architectures.toml)."""
    return bool(_arch_models(gpu).get("uniform_constant_pairs", False))


def _own_or_arch_rate(gpu: Gpu, key: str) -> float:
    """The configuration's ``compute.<key>`` (measured by ``placement calibrate``, or the GPU's own) where it is above
    0, else ``<key>`` of the architecture's ``[<arch>.models]`` in configs/architectures.toml; 0 where neither is
    known."""
    own = getattr(gpu.compute, key)
    if own > 0:
        return own
    v = _arch_models(gpu).get(key)
    return float(v) if v else 0.0


def texels_per_cycle_of(gpu: Gpu) -> float:
    """Texels an SM's texture units fetch per cycle: the configuration's measured ``compute.texels_per_cycle``
    (``placement calibrate``) where it has one, else ``texels_per_cycle`` of the architecture's ``[<arch>.models]``
    in configs/architectures.toml (its texture units per SM, one texel each per clock, cited there); 0 where
    neither is known (no texture-unit bound in ``placement.hms.t_tex``)."""
    return _own_or_arch_rate(gpu, "texels_per_cycle")


def fp64_per_cycle_of(gpu: Gpu) -> float:
    """Double-precision results (add, multiply, FMA) an SM completes per cycle: the configuration's
    ``compute.fp64_per_cycle`` where it has one, else ``fp64_per_cycle`` of the architecture's ``[<arch>.models]``
    in configs/architectures.toml (the CUDA C++ Programming Guide's throughput table, cited there: 2 on Turing,
    GA10x, Ada and GeForce Blackwell, 32 on GV100 and GA100, 64 on GH100); 0 where neither is known (no
    double-precision bound in ``placement.hms.t_fp64``)."""
    return _own_or_arch_rate(gpu, "fp64_per_cycle")


def lsu_instructions_per_cycle_of(gpu: Gpu) -> float:
    """Warp-instructions an SM's load/store pipe accepts per cycle: the configuration's measured
    ``compute.lsu_instructions_per_cycle`` (``placement calibrate``) where it has one, else
    ``lsu_instructions_per_cycle`` of the architecture's ``[<arch>.models]`` (Volta on: 1 on GV100, GA100 and
    GH100, 0.5 on GA10x, cited in configs/architectures.toml), else its ``ldst_units`` over the warp size (Fermi to
    Pascal, from the whitepapers' load/store units per SM); 0 where none is known (no issue bound in
    ``placement.hms.t_lsu``)."""
    rate = _own_or_arch_rate(gpu, "lsu_instructions_per_cycle")
    if rate:
        return rate
    units = _arch_models(gpu).get("ldst_units")
    return float(units) / gpu.compute.warp_size if units else 0.0


def readonly_instructions_per_cycle_of(gpu: Gpu) -> float:
    """Read-only loads (``__ldg``, LDG.E.CONSTANT) an SM issues per cycle: the configuration's measured
    ``compute.readonly_instructions_per_cycle`` (``placement calibrate``'s ``loads``) where it has one, else,
    where the L1 serves them (``caches.readonly_cache = "l1"``, Volta on), the load/store pipe's rate
    (:func:`lsu_instructions_per_cycle_of`: they are global loads, the pipe's instructions by [NVF-LSU] of
    configs/architectures.toml); 0 where they go through a texture cache (Kepler to Pascal: the texture pipe's, no
    rate known) and none was measured."""
    if gpu.compute.readonly_instructions_per_cycle > 0:
        return gpu.compute.readonly_instructions_per_cycle
    return lsu_instructions_per_cycle_of(gpu) if gpu.caches.readonly_cache == "l1" else 0.0


def readonly_split_instructions_per_cycle_of(gpu: Gpu) -> float:
    """Read-only loads an SM issues per cycle where a warp's lanes touch more than one line: the configuration's
    measured ``compute.readonly_split_instructions_per_cycle`` (``placement calibrate``'s ``loads``: ``__ldg`` of
    warp-loads shifted by a word, 5 sectors on two lines, as a stencil's taps) where it has one, else the one-line
    rate (:func:`readonly_instructions_per_cycle_of`). No source gives it; the A100's Kernel Tuner convolution
    (``shared/data/kerneltuner-convolution``) takes 3.5-3.9 cycles an SM per such ``__ldg`` where its plain loads
    of the same lines take 2.3-2.8, while gpu-benches' aligned ``const __restrict__`` loads run at a line a cycle:
    what a GPU charges for the second line is for ``placement calibrate`` to measure."""
    if gpu.compute.readonly_split_instructions_per_cycle > 0:
        return gpu.compute.readonly_split_instructions_per_cycle
    return readonly_instructions_per_cycle_of(gpu)


def global_split_instructions_per_cycle_of(gpu: Gpu) -> float:
    """Plain global loads that hit in the L1 with a warp's lanes on more than one line, per cycle an SM: the
    configuration's measured ``compute.global_split_instructions_per_cycle`` (``placement calibrate``'s ``loads``,
    the plain loads shifted by a word) where it has one, else the load/store pipe's rate
    (:func:`lsu_instructions_per_cycle_of`), so that the data path's sectors bound them as before. The A100's plain
    taps of the Kernel Tuner convolution take 2.3-2.8 cycles an SM where that path prices them at 1.25 (5 sectors
    at 128 bytes a cycle): the measured rate, not a fit, is what should price them. Only where the GPU caches
    global loads in the L1 by default (``caches.global_in_l1``, Volta on): calibrate's plain loads are built
    without ``-dlcm=ca``, so on Maxwell and Pascal they measure the L2's path, not the L1 a ``dlcm = "ca"`` build
    takes."""
    if gpu.compute.global_split_instructions_per_cycle > 0 and gpu.caches.global_in_l1:
        return gpu.compute.global_split_instructions_per_cycle
    return lsu_instructions_per_cycle_of(gpu)


def dram_config(gpu: Gpu) -> cachesim.DramConfig:
    d = gpu.dram
    return cachesim.DramConfig(
        row_hit_ns=d.row_hit_ns,
        row_miss_ns=d.row_miss_ns,
        row_conflict_ns=d.row_conflict_ns,
        mapping=d.mapping,
        channels=d.channels,
        row_bits=d.row_bits,
        column_bits=d.column_bits,
        byte_bits=d.byte_bits,
    )


@lru_cache(maxsize=32)
def hierarchy_config(gpu: Gpu) -> cachesim.HierarchyConfig:
    """cachesim's HierarchyConfig of a GPU (cached: a Gpu is frozen and hashable)."""
    c, m, k = gpu.compute, gpu.memory, gpu.caches
    return cachesim.HierarchyConfig(
        sms=c.sms,
        l2=k.l2,
        l2_slices=k.l2_slices,
        l2_slice_bytes=k.l2_slice_bytes,
        dram=dram_config(gpu),
        l1=k.l1,
        tex=k.tex,
        const=k.const,
        l1_latency=k.l1_latency,
        tex_latency=k.tex_latency,
        const_latency=k.const_latency,
        l2_latency=k.l2_latency,
        sector_bytes=m.sector_bytes,
        line_bytes=m.line_bytes,
        transaction_bytes=m.line_bytes,
        smem_banks=m.smem_banks,
        smem_bank_bytes=m.smem_bank_bytes,
        issue_cycles=c.issue_cycles,
        global_in_l1=k.global_in_l1,
        readonly={"tex": "tex", "l1": "l1", "none": "l2"}[k.readonly_cache],
        tex_in_l1=k.l1_tex_unified,
        l1_tags_per_cycle=l1_tags_per_cycle_of(gpu),
        l1_data_banks=l1_data_banks_of(gpu),
        const_on_path=constant_on_path_of(gpu),
        atomic_unit_bytes=m.l2_atomic_unit_bytes,
        atomic_units=max(1, k.l2_slices * k.l2_slice_bytes // m.l2_atomic_unit_bytes) if m.l2_atomic_unit_bytes else 1,
        smem_atomic_cycles=m.smem_atomic_cycles,
        smem_atomic_lane_cycles=m.smem_atomic_lane_cycles,
    )
