"""The seed analytical models (DESIGN.md, "The other seed models").

- :mod:`.mwp_cwp`: Hong & Kim 2009, MWP-CWP (Eq. 1-27, Eq. 23 corrected).
- :mod:`.gpuperf`: Sim et al. 2012, GPUPerf (Eq. 1-23, Appendix A) and its benefit metrics.
- :mod:`.bsp`: Amaris et al., the BSP-based model (Eq. 3-5) with its lambda.
- :mod:`.lemeire`: Lemeire et al., CPI_warp, issue and completion latencies, the
  occupancy roofline, and cache levels from a varying-size random walk (Eq. 6).

Inputs: :class:`.kernel.KernelParams` (a parameter file, nvprof counters in
:mod:`.counters`, or a trace) and :class:`.params.Machine` (from a GPU config).
"""

from .kernel import KernelParams, Launch, kernel_from_trace, launch, load_kernel_file
from .params import Machine, c2050, hong_kim_example, machine_from_gpu

__all__ = [
    "KernelParams",
    "Launch",
    "Machine",
    "c2050",
    "hong_kim_example",
    "kernel_from_trace",
    "launch",
    "load_kernel_file",
    "machine_from_gpu",
]
