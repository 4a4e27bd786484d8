"""Registry entries of the kernels outside ``elementwise``."""

from __future__ import annotations


def specs(_p, KernelSpec):
    from . import loops

    out = [
        KernelSpec("matmul_naive", "P = M * N, one output per thread (N reads coalesced, M broadcast)",
                   "gpuperfpredict matMul_gpu (Amaris et al.)", "M, N, P: global",
                   (_p("W", 128, "matrix edge"),), (_p("tile", 16, "block edge (tile x tile threads)"),), loops.matmul_naive),
        KernelSpec("matmul_naive_uncoalesced", "P = M * N with i, j swapped (M reads and P writes strided by W)",
                   "gpuperfpredict matMul_gpu_uncoalesced (Amaris et al.)", "M, N, P: global",
                   (_p("W", 128, "matrix edge"),), (_p("tile", 16, "block edge (tile x tile threads)"),),
                   loops.matmul_naive_uncoalesced),
    ]  # fmt: skip
    for k in range(1, 8):
        for s, word in (("c", "coalesced"), ("uc", "uncoalesced")):
            out.append(KernelSpec(
                f"mb{k}_{s}", f"micro-benchmark {k}: {loops.MB_LOADS[k]} loads ({word}) and {loops.MB_FP[k]} FP per iteration",
                "Hong & Kim 2009 Table 4", "a0.., out: global",
                (_p("blocks", 64, "thread blocks"), _p("iters", 64, "loop iterations")), (_p("block", 128, "threads per block", 32),),
                loops.MB_GENERATORS[f"mb{k}_{s}"]))  # fmt: skip
    return out
