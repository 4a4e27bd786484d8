"""What nvcc built for the GPU being priced: a trace's per-architecture and per-placement build facts.

A trace describes one build of its kernel (``regs_per_thread``, ``extra["mlp"]``), but nvcc builds every
architecture apart, and another placement of an array is another program. The generators store what each
build has (``benchmarks/arch_registers.py``, ``benchmarks/arch_mlp.py``) in the trace's metadata as maps of
``{"sm_XY": value}``: ``extra["regs_by_arch"]`` / ``extra["mlp_by_arch"]`` for the trace's own code, and
``extra["regs_by_placement"]`` / ``extra["mlp_by_placement"]`` keyed by a placement's build
(``placement.placements.build_key``: "input=R"). This module picks the value of the GPU's architecture,
the placement build's first (:func:`built_value`); ``placement.occupancy.regs_for`` and :func:`mlp_for` use it.
The instructions go the same way, as a scale of the trace's counts (``extra["inst_by_arch"]``, :func:`inst_scale`).
"""

from __future__ import annotations

from collections.abc import Mapping

import traces

from .gpu import Gpu


def arch_value(by_arch: Mapping[str, float], compute_capability: tuple[int, int]):
    """The value of ``by_arch`` ({sm_XY: value}) for a GPU of ``compute_capability``: its architecture's entry,
    else that of the nearest lower one of the same major version (sm_87 reads sm_86), else None. Another major
    version is another family (sm_100 does not read sm_90)."""
    major, minor = compute_capability
    # sm_XY -> (X, Y): sm_86 is 8.6, sm_100 is 10.0
    built = {divmod(int(k[3:]), 10): v for k, v in by_arch.items()}
    lower = [(cc, v) for cc, v in built.items() if cc[0] == major and cc[1] <= minor]
    return max(lower)[1] if lower else None


def own_value(info: traces.KernelInfo, gpu: Gpu, build: str, kind: str):
    """The ``kind`` ("regs" or "mlp") of placement build ``build`` on ``gpu`` where the trace has it
    (``extra["<kind>_by_placement"]``, by :func:`arch_value`), else None."""
    by_arch = (info.extra.get(f"{kind}_by_placement") or {}).get(build) if build else None
    return arch_value(by_arch, gpu.compute_capability) if by_arch else None


def built_value(info: traces.KernelInfo, gpu: Gpu, build: str, kind: str):
    """The ``kind`` ("regs" or "mlp") of the trace's kernel built for ``gpu``: placement build ``build``'s
    (:func:`own_value`), else the trace's code built for the GPU's architecture (``extra["<kind>_by_arch"]``),
    else None (the build the trace itself describes)."""
    own = own_value(info, gpu, build, kind)
    return own if own is not None else arch_value(info.extra.get(f"{kind}_by_arch") or {}, gpu.compute_capability)


def own_mlp(info: traces.KernelInfo, gpu: Gpu, build: str) -> float | None:
    """The MLP of placement build ``build`` on ``gpu`` where the trace has it (``extra["mlp_by_placement"]``),
    else None."""
    v = own_value(info, gpu, build, "mlp")
    return None if v is None else float(v)


def mlp_for(info: traces.KernelInfo, gpu: Gpu | None = None, build: str = "") -> float:
    """GPUPerf's MLP (Sim et al. 2012, Sec. 5.3) of the trace's kernel built for ``gpu``: the build of placement
    ``build`` where the trace has its MLP (:func:`own_mlp`), else the trace's code built for the GPU's
    architecture (``extra["mlp_by_arch"]``, by :func:`arch_value`), else the trace's ``mlp`` (the build it
    describes), else 1.

    nvcc schedules loads per architecture: Kernel Tuner's 2D convolution with 2 x 2 outputs a thread and 32 x 4
    blocks issues 16.1 loads on average before it waits on one on sm_80 and 87.2 on sm_90, where ptxas hoists
    nearly every load of the unrolled filter ahead of the first FFMA (254 registers); through ``__ldg`` the
    same shape has 10.5 and 93.8 (nvcc 13.0, ``traces/generators/mlp.toml``)."""
    v = built_value(info, gpu, build, "mlp") if gpu is not None else None
    return float(v) if v is not None else float(info.extra.get("mlp", 1.0) or 1.0)


def inst_scale(info: traces.KernelInfo, gpu: Gpu | None = None) -> float:
    """The warp-instructions of the trace's kernel built for ``gpu`` over the trace's own counts: the trace's
    ``extra["inst_by_arch"]`` entry of the GPU's architecture (by :func:`arch_value`), else 1 (the build the trace
    describes). Eq. 3's issued count (``placement.hms.sample_issue``) and the seed models' instructions take it.

    nvcc emits other code per architecture: Kernel Tuner's 2D convolution reads its 15 x 15 filter as FFMA operands
    on sm_80 and brings it two floats at a time with ``ULDC.64`` on sm_90, 582 warp-instructions a warp against 468
    with 1 x 1 tiles (Nsight Compute's ``smsp__inst_executed`` on an H200; ``benchmarks/arch_instructions.py``,
    ``traces/generators/instructions.toml``). A staged or ``__ldg`` placement of that kernel keeps the FFMAs and
    their constants, so its counts, derived from the sample's, scale with it."""
    if gpu is None:
        return 1.0
    v = arch_value(info.extra.get("inst_by_arch") or {}, gpu.compute_capability)
    return float(v) if v is not None else 1.0
