"""benchmarks/ncu_instructions.py: the profiled H100 variants' names and launch shapes, mapped by hand to the
generators' placements and sizes (the comparison itself reads ../shared/data and is a benchmark, not a test)."""

from __future__ import annotations

from conftest import benchmark_script


def test_ncu_variant_names_map_to_placements_by_hand():
    # benchmarks/ncu_instructions.py: the profiled program's template codes (0 G, 1 R, 2 T, 3 C, 4 S/G)
    mod = benchmark_script("ncu_instructions")
    assert mod.variant("void conv1d_k<0, 0>(const float *, const float *, float *, int, int)") == (
        "conv1d_k", "conv1d", "")  # fmt: skip
    assert mod.variant("void conv2d_k<3, 1, 3>(const float *)") == ("conv2d_k", "conv2d_channels", "in=R,mask=C")
    assert mod.variant("void conv1d_k<4, 1>(const float *)") == ("conv1d_k", "conv1d", "in=S/G,mask=R")
    assert mod.variant("void matvec_k<3>(const float *)") == ("matvec_k", "matvec", "x=C")
    assert mod.variant("hist_s(const unsigned int *)") is None and mod.variant("matmul_naive") is None
    # the launch shapes: 16,384 blocks of 256 -> n = 2^22; conv2d's 4,096 blocks of 16 x 16 -> 1024^2, 3 channels
    assert mod.size_of("conv1d", 16384, (256, 1, 1), "void conv1d_k<0, 0>") == ([4194304, 7], [256])
    assert mod.size_of("conv2d_channels", 4096, (16, 16, 1), "void conv2d_k<3, 0, 0>") == ([1024, 1024, 3, 3], [16, 16])
    assert mod.size_of("matvec", 16, (256, 1, 1), "void matvec_k<0>") == ([4096, 4096], [256])
