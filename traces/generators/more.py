"""Registry entries of the kernels outside ``elementwise``."""

from __future__ import annotations


def specs(_p, KernelSpec):
    from . import blocks, conv, loops, textbook

    out = [
        KernelSpec("matmul_naive", "P = M * N, one output per thread (N reads coalesced, M broadcast)",
                   "gpuperfpredict matMul_gpu (Amaris et al.)", "M, N, P: global",
                   (_p("W", 128, "matrix edge"),), (_p("tile", 16, "block edge (tile x tile threads)"),), loops.matmul_naive),
        KernelSpec("matmul_naive_uncoalesced", "P = M * N with i, j swapped (M reads and P writes strided by W)",
                   "gpuperfpredict matMul_gpu_uncoalesced (Amaris et al.)", "M, N, P: global",
                   (_p("W", 128, "matrix edge"),), (_p("tile", 16, "block edge (tile x tile threads)"),),
                   loops.matmul_naive_uncoalesced),
        KernelSpec("matrixmul", "C = A * B, tiled (BLOCK_SIZE 16), As and Bs in shared memory",
                   "CUDA SDK matrixMul; Huang & Li Table IV", "A, B, C: global; As, Bs: shared",
                   (_p("W", 128, "matrix edge (multiple of 16)", 16),), (_p("tile", 16, "BLOCK_SIZE (16 only)", 16),), blocks.matrixmul),
        KernelSpec("convolution_rows", "row pass of the separable convolution, radius 8", "CUDA SDK convolutionSeparable; Huang & Li Table IV",
                   "d_Src, d_Dst: global; c_Kernel: constant; s_Data: shared",
                   (_p("width", 256, "image width (multiple of 128)", 128), _p("height", 64, "image height (multiple of 4)", 4)), (),
                   blocks.convolution_rows),
        KernelSpec("conv2d_kt", "2D convolution, 15 x 15 filter, tile_size_y x tile_size_x outputs per thread, image read from global",
                   "Kernel Tuner benchmark_hub convolution_milo (use_shmem 0, read_only 0)",
                   "input, output: global; filter: constant (FFMA operands, no rows)",
                   (_p("width", 256, "image width (outputs per row)"), _p("height", 256, "image height")),
                   (_p("block_size_x", 32, "threads per block in x"), _p("block_size_y", 4, "threads per block in y"),
                    _p("tile_size_x", 2, "outputs per thread in x"), _p("tile_size_y", 2, "outputs per thread in y")),
                   conv.conv2d_kt),
        KernelSpec("conv1d", "out[i] = sum_j in[i + j] * mask[j], one output per thread", "textbook 1D convolution (Kirk & Hwu)",
                   "in, mask, out: global", (_p("n", 1 << 16, "outputs"), _p("mask_width", 7, "mask elements")),
                   (_p("block", 256, "threads per block"),), textbook.conv1d),
        KernelSpec("conv2d_channels", "out[y][x] = sum_c sum_i sum_j in[c][y+i][x+j] * mask[c][i][j], one output per thread",
                   "textbook multi-channel 2D convolution", "in, mask, out: global",
                   (_p("width", 128, "output width"), _p("height", 128, "output height"), _p("channels", 3, "input channels"),
                    _p("mask", 3, "mask edge K (3, 5 or 7)", 3)),
                   (_p("block_x", 16, "threads per block in x"), _p("block_y", 16, "threads per block in y")), textbook.conv2d_channels),
        KernelSpec("matvec", "y = A x, one row of A per thread (A uncoalesced, x broadcast)", "textbook matrix-vector product",
                   "A, x, y: global", (_p("rows", 1024, "rows of A"), _p("cols", 1024, "columns of A")),
                   (_p("block", 256, "threads per block"),), textbook.matvec),
        KernelSpec("histogram", "bins[data[i]] += 1 with global atomicAdd, one element per thread", "textbook histogram (Kirk & Hwu)",
                   "data: global; bins: global, written by atomics only", (_p("n", 1 << 16, "elements"), _p("bins", 256, "bins")),
                   (_p("block", 256, "threads per block"),), textbook.histogram),
        KernelSpec("matmul_tiled", "P = M * N, tiled: Mds, Nds tiles in shared memory, two __syncthreads() per tile",
                   "gpuperfpredict matMul_gpu_sharedmem (Kirk & Hwu)", "M, N, P: global; Mds, Nds: shared",
                   (_p("W", 128, "matrix edge (multiple of the tile)", 8),), (_p("tile", 16, "tile edge: 8, 16 or 32", 8),),
                   textbook.matmul_tiled),
        KernelSpec("reduction", "sum of n floats, one partial sum per block", "SHOC Reduction (reduce); Huang & Li Table IV",
                   "g_idata, g_odata: global; sdata: shared",
                   (_p("n", 1 << 17, "elements (rounded up to whole passes of 512 x blocks)"), _p("blocks", 64, "thread blocks")), (),
                   blocks.reduction),
    ]  # fmt: skip
    for k in range(1, 8):
        for s, word in (("c", "coalesced"), ("uc", "uncoalesced")):
            out.append(KernelSpec(
                f"mb{k}_{s}", f"micro-benchmark {k}: {loops.MB_LOADS[k]} loads ({word}) and {loops.MB_FP[k]} FP per iteration",
                "Hong & Kim 2009 Table 4", "a0.., out: global",
                (_p("blocks", 64, "thread blocks"), _p("iters", 64, "loop iterations")), (_p("block", 128, "threads per block", 32),),
                loops.MB_GENERATORS[f"mb{k}_{s}"]))  # fmt: skip
    return out
