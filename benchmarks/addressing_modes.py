"""Count the address instructions of each memory space in nvcc's SASS (Huang & Li, Sec. III-B).

Usage::

    python benchmarks/addressing_modes.py [--arch sm_75,sm_80,...] [--types float,int,...]
                                          [--verbose] [--toml]

For every element type the script writes one ``.cu`` file of vector-add kernels
in the style of the paper's Fig. 2 (``v[id] = a[id] + b[id]``, ``v`` always in
global memory, ``a`` and ``b`` moved together), compiles it with
``nvcc -cubin -O3 -arch=sm_XX``, disassembles it with ``cuobjdump -sass`` and
counts, for the load of ``a``, the instructions that compute the element's address
from the element index. The placements (the table's columns):

``G``   ``const T* a`` kernel parameter, ``a[id]``                         (1D, id = blockIdx.x*blockDim.x+threadIdx.x)
``T``   1D texture object, ``tex1Dfetch<T>(ta, id)``
``C``   ``__constant__ T c_a[N]``, ``c_a[id]``
``S``   ``__shared__ T s_a[N]``, ``s_a[threadIdx.x]`` (filled from global, then ``__syncthreads()``)
``2T``  2D texture object, ``tex2D<T>(ta, x, y)`` with x, y from the 2D thread index of a 2D launch
``2G``  the same 2D kernel with ``a[y*w + x]`` (``w`` a kernel parameter)       -- for comparison
``2C``  the same 2D kernel with ``__constant__ T c_a[32][32]``, ``c_a[y][x]``    -- for comparison
``2S``  the same 2D kernel with ``__shared__ T s_a[32][32]``, ``s_a[threadIdx.y][threadIdx.x]`` -- for comparison
``R``   the read-only data path: ``const T* a`` kernel parameter, ``__ldg(&a[id])`` (CUDA 13's
        sm_32_intrinsics.hpp: inline ``asm volatile("ld.global.nc...")``; an ``LDG.E.CONSTANT``)
``R_restrict``  ``const T* __restrict__ a`` (and ``v`` ``__restrict__``), ``a[id]``: the other way to
        reach the read-only path, which nvcc takes when it can prove ``a`` is not written -- for comparison

Texture objects cannot hold ``double``: the 8-byte texture kernels fetch ``int2`` and
rebuild the double with ``__hiloint2double`` (the usual idiom; the fetch is the same).

The counting rule (mechanical; ``--verbose`` prints what it counted):

1. The kernels are straight-line code (the only branch allowed is nvcc's trailing
   ``BRA`` to itself; a predicated ``EXIT`` does not end the data flow), so each
   register read has one reaching definition: the last earlier instruction that wrote
   that register (register pairs and quads of ``.64``/``.128``/``.WIDE``/``F64`` operands,
   predicates and uniform registers included).
2. *Index values* are (a) the values compared in the kernel's bound check -- the
   register operands of the ``ISETP`` chain that computes the predicate of ``@P EXIT``
   (``id`` in 1D kernels, ``x`` and ``y`` in 2D ones) -- and (b) every ``S2R``/``S2UR``
   result (``threadIdx``/``blockIdx``, the index of the shared-memory kernels).
3. The *address operands* of a load are the registers inside its address: ``[R2.64]``,
   ``[R7.X4+0x1000]``, ``[R9+UR4]``, ``c[0x3][R4+0x10]`` (the ``desc[URx]`` memory
   descriptor is not an address operand); for ``TEX``/``TLD`` the coordinate and LOD
   registers (a 2D coordinate operand is the pair x, y) and the handle's uniform register.
4. The *slice* of a load is the backward closure of the reaching definitions of its
   address operands; it stops at index values (rule 2), which are not part of it.
   Constant-bank operands (``c[0x0][0x160]``), immediates and ``RZ``/``URZ``/``PT``
   are leaves.
5. Counted: every slice instruction that depends (transitively) on an index value,
   except register-to-register copies (``MOV Rd, Rs`` / ``IMAD.MOV.U32 Rd, RZ, RZ, Rs``
   / ``UMOV``), which move an address without computing one. Not counted: slice
   instructions that do not depend on the index (``MOV R5, 0x4``, ``HFMA2.MMA R8, -RZ,
   RZ, ...``, ``LDC.64 R2, c[0x0][0x210]``, ``ULDC``, ``S2UR SR_CgaCtaId``+``ULEA``):
   they only bring an element size, a base address, a texture handle or a LOD into a
   register and are loop-invariant. This reproduces the paper's Kepler counts from
   its Fig. 2 SASS: global ``IMAD`` + ``IMAD.HI.X`` = 2 (``MOV32I R5, 0x4`` not counted),
   texture 0, constant ``SHL`` = 1, shared ``SHL`` = 1.
   An instruction shared with another access (the store of ``v``, the load of ``b``)
   is counted: the element's address needs it (the paper counts the constant kernel's
   ``SHL``, which also serves ``b``, the same way).
6. ``a`` and ``b`` are placed and addressed alike; the script counts the slice of
   every load of the placed space (both arrays, and every piece of a wide element),
   and the entry is their common count. If they disagree the entry is the largest and
   the table marks it with ``*`` (``--toml`` refuses to write such a table).

Offset accesses (``[<family>.offset]``, ``[<family>.offset_leading]``): an *offset access*
reads ``a`` at another access's index plus a compile-time constant (unrolled loops, stencils).
For every column of ``OFFSET_ALL`` (G T C R S, and R_restrict for comparison) the translation
unit has two kernels that sum eight accesses of one array at the constants of ``OFFSETS``:

``offset_<space>``          ``a[i] + a[i+1] + ... + a[i+7]``   (the base access ``a[i]`` first in source order)
``offset_leading_<space>``  ``a[i-7] + ... + a[i-1] + a[i]``   (the base access last: the left half of a
                            stencil window written in ascending order)

with ``i = id`` (for S, ``threadIdx.x + PAD`` into a padded ``__shared__`` array that each thread
first fills with its own element; T reads ``tex1Dfetch``, C the ``__constant__`` array ``c_a``).

7. Rules 1-5 give each access's counted slice. The *base* access is the one with the
   smallest counted slice (the first such in program order). The count per offset access
   is the number of counted instructions in the union of all the accesses' slices that are
   not in the base's slice, divided by the number of other accesses (7), rounded to the
   nearest integer (halves up); ``--verbose`` and the printed table give the exact fraction.
   (The pieces of a wide element all go into the union.)

Why two orders: G, C and S fold the constant into the load's immediate in either order
(``LDG.E R0, [R2.64+0x4]``, ``LDC R0, c[0x3][R4+0x4]``, ``LDS R2, [R15.X4+0x20]``), and T needs
one ``IADD3`` for the fetch index in either order. ``__ldg`` is inline ``asm volatile`` on a
computed pointer (sm_32_intrinsics.hpp), so its address is whatever PTX the compiler built for
the pointer: ``add.s64 %rd, %rd_base, 4`` (folded by ptxas) when ``&a[i]`` was computed for an
earlier access, but for sm_75..sm_90 a fresh ``add.s32`` + ``mul.wide.s32`` per access that
comes before it (``IADD3`` + ``IMAD.WIDE``: 2); for sm_100 and later the PTX is ``base +
constant`` in both orders. ``const __restrict__`` loads are not asm and fold like G.

Staging loops (``[<family>.staging]``): a block copies its tile of an array into
``__shared__`` memory, ``__syncthreads()``, then reads it there (and may copy a tile back).
One more translation unit (``float`` elements, ``STAGING_TYPE``) holds, for each source
``G`` (``src[i]``), ``T`` (``tex1Dfetch<float>(src, i)``) and ``R`` (``__ldg(&src[i])``), and for
the write-back (``dst[i] = s[...]``, ``dst`` global), these forms of the copy:

``loop_1d``      ``for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = src[base + i];``
                 (``n`` a kernel parameter, ``#pragma unroll 1``; nvcc cannot unroll a
                 ``blockDim.x`` stride anyway)
``loop_2d``      ``for (int i = ty; i < TH; i += BY) for (int j = tx; j < TW; j += BX)
                 s[i][j] = src[(by + i) * w + bx + j];`` (TH, TW, BX, BY compile-time, the
                 row width ``w`` a kernel parameter, ``#pragma unroll 1`` on both loops)
``unrolled_1d``  ``#pragma unroll for (int k = 0; k < K; ++k) s[t + k*B1] = src[base + t + k*B1];``
                 (``blockDim.x == B1``, K compile-time: fully unrolled)
``unrolled_2d``  the same with ``KY x KX`` elements per thread, ``s[ty + ki*BY][tx + kj*BX] =
                 src[(by + ty + ki*BY) * w + bx + tx + kj*BX]``
``unrolled_flat`` a 2D tile copied by the flattened loop of a 1D block (``traces.staging.copy_columns``),
                 unrolled: ``q = t + k*B1; s[q / TWF][q % TWF] = src[(by + q / TWF) * w + bx + q % TWF]``
                 (``TWF`` compile-time, not a divisor of ``B1``); counted as ``unrolled_1d`` (rule 9, K = 2, 3, 4
                 must agree)

and kernels with 0, 1 and 2 ``__syncthreads()`` between a shared store and load.

8. A loop (a ``BRA`` back to an earlier pc) costs, per element, every instruction of the
   innermost loop except the copy's load (``LDG``/``TLD``/``LDS``) and store (``STS``/``STG``),
   divided by the elements one iteration copies (1): the loop increment, compare and
   branch, the address arithmetic of source and destination, and whatever else nvcc puts
   there (a constant re-materialised because the load overwrote its register, register
   copies of a 64-bit pointer). ``loop_2d_row``: the outer loop's instructions outside the
   inner loop (the row's setup, the inner loop's entry test, ``BSSY``/``BSYNC``, the outer
   increment, compare and branch), per row. The code before the loop (once per thread) is
   not counted.
9. An unrolled copy is straight-line: rules 2-5 (index values: the ``S2R`` results only,
   there is no bound check) give the counted slice of every load and store of the copy
   (before the barrier; for the write-back, after it). Per element: the size of the union
   of those slices minus that of a one-element copy (K = 1, or 1 x 1), divided by the
   elements added (the first element's address is once per thread, like the indexed
   count). 1D and flattened: K = 2, 3, 4 must agree. 2D: the value depends on the shape (nvcc builds a
   new row's address from the index for 2 rows, from the previous row's pointer for more;
   ``__ldg`` columns may each need their own index add): the table gives ``TILE_2D`` (2 x 2
   elements per thread, e.g. a 32 x 32 tile copied by a 16 x 16 block), ``--verbose`` the
   3 x 3 and 4 x 4 values.
10. ``barrier``: the instructions one more ``__syncthreads()`` adds to the kernel (its
   length with 2 calls minus with 1; it must equal 1 minus 0).
11. ``copy_unroll``: Kernel Tuner's convolution's copy loop (16 x 1 threads, a 16 x 46 tile; ``copy_unroll_kernel``), its
   global loads (L) and shared stores (S) in code order up to the barrier: ``LS`` ``L``*(u-2) ``S``*(u-2)
   ``L``*u ``S``*u is nvcc's runtime unrolling by u, the remainder first (``copy_unroll = u`` in the family's
   staging section; nvcc 13 on sm_75 to sm_90: u = 4); any other pattern writes nothing (1, the rolled loop's
   rounds: sm_100 and sm_120 unroll the row loop and batch a row's last two iterations instead).
12. ``copy_tail``: the same copy of a 16 x 78 tile (5 iterations a row for most lanes; ``COPY_TAIL_SHAPE``), read
   the same way: n = 5 iterations a row unrolled whole, ``LS``*(n - t) ``L``*t ``S``*t row after row, is
   ``copy_tail = t`` (nvcc 13 on sm_100 and sm_120: t = 2; a row of 3 then reads ``LS LLSS``, which rule 11's
   16 x 46 tile cannot tell from runtime unrolling by 2); any other pattern writes nothing.
13. ``copy_rows``: what a warp issues for one tile row of rule 11's copy loop (the outer loop's trip, the inner
   loop's runtime-unrolled trips), from ``benchmarks/sass_exec.py`` running the warp through nvcc's SASS (the
   count Nsight Compute's ``smsp__inst_executed`` gives: ``tests/test_sass_exec.py``). The kernels copy 1 and 2
   rows of 32 n columns by 32 x 1 threads (``copy_rows_kernel``; every lane n iterations a row, n = 1-9); a
   row's count is c(n) = the 2-row kernel's minus the 1-row kernel's, which must be ``head`` + ``first`` [n mod
   4 >= 1] + ``rest`` [n mod 4 >= 2] + (``entry`` + ``body`` (n div 4)) [n >= 4] for every n: ``head`` the
   outer loop's trip and the inner loop's setup, ``first`` the remainder's first iteration, ``rest`` its
   others (predicated together), ``entry`` the unrolled body's setup, ``body`` one pass of it (u iterations).
   ``split``: what one more side of a divergent branch adds (48 columns, half the lanes 2 iterations and half
   1, against 64); ``prologue``: the 1-row, n = 1 kernel less c(1) less the same kernel without the copy.
   Every count includes the copy's loads and stores. Written for ``G``, ``R`` and ``T`` where the family
   unrolls by rule 11 and the counts fit the form; otherwise nothing (the model then prices the copy by
   ``unrolled_2d`` per element). A family's members may differ by ``COPY_ROWS_SLACK`` instructions a row
   (sm_80 and sm_86 ``__ldg``: 59 against 59 at n = 4, 69 against 71 at n = 5): the first member's values
   are written, the others' in a comment; more refuses.

nvcc 13 compiles for sm_75 and later only (``nvcc --list-gpu-arch``): sm_70 (Volta)
and everything older (Kepler's sm_35/sm_37 included) cannot be compiled here, so the
Kepler rows of configs/addressing.toml are the paper's, not this script's.

``cuobjdump`` comes from PyPI ``nvidia-cuda-cuobjdump`` (found on PATH, else under
site-packages/nvidia/cu13/bin).
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

# sm_87 (Orin) is left out: its SASS opens with a branchy barrier-register prologue
# (@P0 BRA over BMOV.32.CLEAR ...), which the straight-line rule refuses.
ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_103", "sm_110", "sm_120", "sm_121")
# section of configs/addressing.toml each arch's counts go to
FAMILY = {
    "sm_75": "turing",
    "sm_80": "ampere",
    "sm_86": "ampere",
    "sm_89": "ada",
    "sm_90": "hopper",
    "sm_100": "blackwell",
    "sm_103": "blackwell",
    "sm_110": "blackwell",
    "sm_120": "blackwell_rtx",
    "sm_121": "blackwell_rtx",
}
SPACES = ("G", "T", "2T", "C", "R", "S")  # the table's columns
COMPARE = ("2G", "2C", "2S", "R_restrict")  # 2D kernels of the other spaces, const __restrict__, for comparison
ALL_SPACES = SPACES + COMPARE
# the kind of load each column's kernel addresses (R and R_restrict load with LDG.E.CONSTANT)
LOAD_KIND = {
    "G": "G",
    "2G": "G",
    "R": "G",
    "R_restrict": "G",
    "T": "T",
    "2T": "T",
    "C": "C",
    "2C": "C",
    "S": "S",
    "2S": "S",
}

N1 = 1024  # elements of the 1D constant / shared arrays
W2 = 32  # the 2D constant / shared arrays are W2 x W2

# The "offset" contexts: eight accesses of one array `a` whose indices differ by compile-time
# constants. Context -> the constants, in source order.
OFFSETS = {
    "offset": tuple(range(0, 8)),  # a[i], a[i+1], ..., a[i+7]: the base access first
    "offset_leading": tuple(range(-7, 1)),  # a[i-7], ..., a[i-1], a[i]: the base access last
}
OFFSET_SPACES = ("G", "T", "C", "R", "S")  # the offset tables' columns
OFFSET_COMPARE = ("R_restrict",)
OFFSET_ALL = OFFSET_SPACES + OFFSET_COMPARE
PAD = max(abs(k) for ks in OFFSETS.values() for k in ks)  # the shared array's margin
HALF = Fraction(1, 2)  # rounding to the nearest integer, halves up
# the parameters of each column's offset kernel and how it reads element `i` of `a`
OFFSET_READ = {
    "G": ("const T* a, T* v, int n", "a[{i}]"),
    "R": ("const T* a, T* v, int n", "__ldg(&a[{i}])"),
    "R_restrict": ("const T* __restrict__ a, T* __restrict__ v, int n", "a[{i}]"),
    "T": ("cudaTextureObject_t ta, T* v, int n", "tex1(ta, {i})"),
    "C": ("T* v, int n", "c_a[{i}]"),
    "S": ("const T* a, T* v, int n", "s_o[{i}]"),
}


@dataclass(frozen=True)
class ElemType:
    name: str
    bytes: int
    tex: str  # type fetched from the texture object
    from_tex: str  # expression turning the fetched value `t` into a T


TYPES = {
    "char": ElemType("char", 1, "char", "t"),
    "short": ElemType("short", 2, "short", "t"),
    "int": ElemType("int", 4, "int", "t"),
    "float": ElemType("float", 4, "float", "t"),
    "double": ElemType("double", 8, "int2", "__hiloint2double(t.y, t.x)"),
    "float4": ElemType("float4", 16, "float4", "t"),
}
DEFAULT_TYPES = ("char", "short", "int", "float", "double", "float4")


# ----------------------------------------------------------------------------- kernels


def kernel_source(t: ElemType) -> str:
    """One translation unit with the kernels ``k_<space>`` (every column of ``ALL_SPACES``) for element type ``t``."""
    T, X = t.name, t.tex
    conv = t.from_tex
    return f"""// generated by benchmarks/addressing_modes.py -- element type {T} ({t.bytes} bytes)
#include <cuda_runtime.h>
#define N {N1}
#define W {W2}
#define PAD {PAD}
typedef {T} T;
__device__ __forceinline__ char   add(char x, char y)     {{ return (char)(x + y); }}
__device__ __forceinline__ short  add(short x, short y)   {{ return (short)(x + y); }}
__device__ __forceinline__ int    add(int x, int y)       {{ return x + y; }}
__device__ __forceinline__ float  add(float x, float y)   {{ return x + y; }}
__device__ __forceinline__ double add(double x, double y) {{ return x + y; }}
__device__ __forceinline__ float4 add(float4 x, float4 y) {{
    return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w); }}
__device__ __forceinline__ T tex1(cudaTextureObject_t o, int i) {{ {X} t = tex1Dfetch<{X}>(o, i); return {conv}; }}
__device__ __forceinline__ T tex2(cudaTextureObject_t o, int x, int y) {{ {X} t = tex2D<{X}>(o, x, y); return {conv}; }}

__constant__ T c_a[N], c_b[N];
__constant__ T c2_a[W][W], c2_b[W][W];

extern "C" __global__ void k_G(const T* a, const T* b, T* v, int n) {{
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id < n) v[id] = add(a[id], b[id]);
}}
extern "C" __global__ void k_R(const T* a, const T* b, T* v, int n) {{
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id < n) v[id] = add(__ldg(&a[id]), __ldg(&b[id]));
}}
extern "C" __global__ void k_R_restrict(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ v, int n) {{
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id < n) v[id] = add(a[id], b[id]);
}}
extern "C" __global__ void k_T(cudaTextureObject_t ta, cudaTextureObject_t tb, T* v, int n) {{
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id < n) v[id] = add(tex1(ta, id), tex1(tb, id));
}}
extern "C" __global__ void k_C(T* v, int n) {{
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id < n) v[id] = add(c_a[id], c_b[id]);
}}
extern "C" __global__ void k_S(const T* a, const T* b, T* v, int n) {{
    __shared__ T s_a[N], s_b[N];
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    s_a[threadIdx.x] = a[id];
    s_b[threadIdx.x] = b[id];
    __syncthreads();
    if (id < n) v[id] = add(s_a[threadIdx.x], s_b[threadIdx.x]);
}}
extern "C" __global__ void k_2T(cudaTextureObject_t ta, cudaTextureObject_t tb, T* v, int w, int h) {{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) v[y * w + x] = add(tex2(ta, x, y), tex2(tb, x, y));
}}
extern "C" __global__ void k_2G(const T* a, const T* b, T* v, int w, int h) {{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) v[y * w + x] = add(a[y * w + x], b[y * w + x]);
}}
extern "C" __global__ void k_2C(T* v, int w, int h) {{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) v[y * w + x] = add(c2_a[y][x], c2_b[y][x]);
}}
extern "C" __global__ void k_2S(const T* a, const T* b, T* v, int w, int h) {{
    __shared__ T s_a[W][W], s_b[W][W];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    s_a[threadIdx.y][threadIdx.x] = a[y * w + x];
    s_b[threadIdx.y][threadIdx.x] = b[y * w + x];
    __syncthreads();
    if (x < w && y < h) v[y * w + x] = add(s_a[threadIdx.y][threadIdx.x], s_b[threadIdx.y][threadIdx.x]);
}}
""" + "".join(offset_kernel(c, s) for c in OFFSETS for s in OFFSET_ALL)


def offset_kernel(context: str, space: str) -> str:
    """Kernel ``<context>_<space>``: ``v[id]`` = the sum of ``a`` at the context's eight offsets.

    The shared kernel reads ``s_o[t + k]`` with ``t = threadIdx.x + PAD`` (each thread first
    stores its own element there); the others read at ``id + k``.
    """
    params, read = OFFSET_READ[space]
    index = "t" if space == "S" else "id"
    terms = [read.format(i=f"{index} + ({k})") for k in OFFSETS[context]]
    expr = terms[0]
    for term in terms[1:]:
        expr = f"add({expr}, {term})"
    fill = ""
    if space == "S":
        fill = (
            "    __shared__ T s_o[N + 2 * PAD];\n"
            "    int t = threadIdx.x + PAD;\n"
            "    s_o[t] = a[id];\n"
            "    __syncthreads();\n"
        )
    return (
        f'extern "C" __global__ void {context}_{space}({params}) {{\n'
        f"    int id = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"{fill}"
        f"    if (id < n) v[id] = {expr};\n"
        f"}}\n"
    )


# ----------------------------------------------------------------------------- staging kernels

STAGING_TYPE = "float"  # the staging loops are measured for 4-byte float elements
NS = 4096  # elements of the 1D loop forms' shared array
B1 = 128  # the unrolled 1D forms assume blockDim.x == B1
BX, BY = 16, 8  # the 2D forms' block (blockDim.x, blockDim.y)
TH, TW = 20, 48  # the 2D loop form's tile: a halo tile, TH not a multiple of BY
TWF = 40  # the flattened 2D form's tile width (rows straddle warps: not a divisor of B1)
KMAX = 4  # the unrolled forms' arrays hold KMAX elements per thread and dimension
UNROLL_1D = (1, 2, 3, 4)  # elements per thread of the unrolled 1D kernels (all must agree)
UNROLL_2D = ((1, 1), (2, 2), (3, 3), (4, 4))  # (rows, columns) per thread of the unrolled 2D kernels
TILE_2D = (2, 2)  # the unrolled 2D shape the table gives (the others: --verbose)
STAGING_SOURCES = ("G", "T", "R")
WRITEBACK = "writeback"  # the write-back loops (destination in global memory)
BARRIERS = (0, 1, 2)  # __syncthreads() calls of the barrier kernels
COPY_UNROLL_KERNEL = "copy_unroll"  # rule 11's kernel
COPY_UNROLL_SHAPE = (16, 46, 16, 1, 4110)  # its tile's rows and columns, block x and y, the source's row pitch
COPY_TAIL_KERNEL = "copy_tail"  # rule 12's kernel
COPY_TAIL_SHAPE = (16, 78, 16, 1, 4110)  # Kernel Tuner's 16 x 1 threads with 4 x 1 tiles: 78 = 16 x 4 + 14 columns
COPY_ROWS_N = range(1, 10)  # rule 13's iterations a row: every remainder, with and without the unrolled body
COPY_ROWS_KEYS = ("head", "first", "rest", "entry", "body", "split", "prologue")
COPY_ROWS_SLACK = 2  # a family's members may differ by this many instructions a row (the first member's are written)
# the source parameter of a staging kernel and how it reads element `i`
STAGING_READ = {
    "G": ("const T* src", "src[{i}]"),
    "R": ("const T* src", "__ldg(&src[{i}])"),
    "T": ("cudaTextureObject_t src", "tex1Dfetch<T>(src, {i})"),
}


@dataclass(frozen=True)
class Form:
    """A staging loop nest: its shared array, loops, the copied element's shared and global index."""

    array: str  # the shared array's dimensions
    setup: str  # per-thread values the loop uses
    loops: str  # the loop headers, `{ky}` / `{kx}` / `{k}` for the unrolled trip counts
    shared: str  # the element's shared-memory reference
    glob: str  # the element's index in the global array
    size: str  # the kernel's int parameter (a runtime trip count or row width)
    mine: str  # the calling thread's own element of the shared array
    other: str  # an element another thread stored (read after the barrier)
    out: str  # the calling thread's index in the global output


_SETUP_2D = "int tx = threadIdx.x, ty = threadIdx.y; int bx = blockIdx.x * {bw}, by = blockIdx.y * {bh};"
FORMS = {
    "loop_1d": Form(
        "[NS]",
        "int base = blockIdx.x * n;",
        "#pragma unroll 1\n    for (int i = threadIdx.x; i < n; i += blockDim.x)",
        "s[i]",
        "base + i",
        "n",
        "s[threadIdx.x]",
        "s[threadIdx.x ^ 1]",
        "blockIdx.x * blockDim.x + threadIdx.x",
    ),
    "loop_2d": Form(
        "[TH][TW]",
        _SETUP_2D.format(bw="BX", bh="BY"),
        "#pragma unroll 1\n    for (int i = ty; i < TH; i += BY)\n"
        "#pragma unroll 1\n    for (int j = tx; j < TW; j += BX)",
        "s[i][j]",
        "(by + i) * w + bx + j",
        "w",
        "s[ty][tx]",
        "s[ty ^ 1][tx]",
        "(by + ty) * w + bx + tx",
    ),
    "unrolled_1d": Form(
        "[B1 * KMAX]",
        "int t = threadIdx.x, base = blockIdx.x * (B1 * KMAX);",
        "#pragma unroll\n    for (int k = 0; k < {k}; ++k)",
        "s[t + k * B1]",
        "base + t + k * B1",
        "n",
        "s[t]",
        "s[t ^ 1]",
        "blockIdx.x * B1 + t",
    ),
    "unrolled_flat": Form(
        "[(B1 * KMAX + TWF - 1) / TWF][TWF]",
        "int t = threadIdx.x; int bx = blockIdx.x * TWF, by = blockIdx.y * ((B1 * KMAX) / TWF);",
        "#pragma unroll\n    for (int k = 0; k < {k}; ++k)",
        "s[(t + k * B1) / TWF][(t + k * B1) % TWF]",
        "(by + (t + k * B1) / TWF) * w + bx + (t + k * B1) % TWF",
        "w",
        "s[t / TWF][t % TWF]",
        "s[(t ^ 1) / TWF][(t ^ 1) % TWF]",
        "blockIdx.x * B1 + t",
    ),
    "unrolled_2d": Form(
        "[BY * KMAX][BX * KMAX]",
        _SETUP_2D.format(bw="(BX * KMAX)", bh="(BY * KMAX)"),
        "#pragma unroll\n    for (int ki = 0; ki < {ky}; ++ki)\n#pragma unroll\n    for (int kj = 0; kj < {kx}; ++kj)",
        "s[ty + ki * BY][tx + kj * BX]",
        "(by + ty + ki * BY) * w + bx + tx + kj * BX",
        "w",
        "s[ty][tx]",
        "s[ty ^ 1][tx]",
        "(by + ty) * w + bx + tx",
    ),
}


def form_sizes(form: str) -> list[dict[str, int]]:
    """The trip counts a form is compiled with: one kernel for a loop, several for the unrolled forms."""
    if form in ("unrolled_1d", "unrolled_flat"):
        return [{"k": k} for k in UNROLL_1D]
    if form == "unrolled_2d":
        return [{"ky": ky, "kx": kx} for ky, kx in UNROLL_2D]
    return [{}]


def staging_name(who: str, form: str, size: dict[str, int]) -> str:
    return "_".join(["stage", who, form, *(str(v) for v in size.values())])


def staging_kernel(who: str, form: str, size: dict[str, int]) -> str:
    """One staging kernel: ``who`` a source space (copy into shared memory, barrier, read
    another thread's element) or WRITEBACK (fill, barrier, copy shared -> global ``dst``)."""
    f = FORMS[form]
    loops = f.loops.format(**size)
    if who == WRITEBACK:
        params = f"const T* in, T* dst, int {f.size}"
        body = f"    {f.mine} = in[{f.out}];\n    __syncthreads();\n    {loops}\n        dst[{f.glob}] = {f.shared};\n"
    else:
        param, read = STAGING_READ[who]
        params = f"{param}, T* out, int {f.size}"
        body = (
            f"    {loops}\n        {f.shared} = {read.format(i=f.glob)};\n"
            f"    __syncthreads();\n    out[{f.out}] = {f.other};\n"
        )
    return (
        f'extern "C" __global__ void {staging_name(who, form, size)}({params}) {{\n'
        f"    __shared__ T s{f.array};\n    {f.setup}\n{body}}}\n"
    )


def barrier_kernel(count: int) -> str:
    syncs = "    __syncthreads();\n" * count
    return (
        f'extern "C" __global__ void barrier_{count}(const T* in, T* out) {{\n'
        "    __shared__ T s[NS];\n    int t = threadIdx.x;\n"
        "    s[t] = in[blockIdx.x * blockDim.x + t];\n"
        f"{syncs}    out[blockIdx.x * blockDim.x + t] = s[t ^ 1];\n}}\n"
    )


def copy_unroll_kernel(name: str = COPY_UNROLL_KERNEL, shape: tuple[int, ...] = COPY_UNROLL_SHAPE) -> str:
    """Kernel Tuner's convolution's copy loop (benchmarks/kernels/conv2d_kt.cu, 16 x 1 threads and 2 x 2 tiles:
    a 16 x 46 tile of rows 4,110 floats apart; compile-time step and bound, no bounds check, ``#pragma unroll`` on
    both loops, whose trip counts start from the thread's index): rule 11 reads how nvcc unrolls it, rule 12 the
    same loop over ``COPY_TAIL_SHAPE``'s wider tile."""
    rows, cols, bx, by, pitch = shape
    return (
        f'extern "C" __global__ void {name}(const T* src, T* out) {{\n'
        f"    __shared__ T s[{rows}][{cols}];\n"
        "    int tx = threadIdx.x, ty = threadIdx.y;\n"
        f"    int x0 = blockIdx.x * {bx * 2}, y0 = blockIdx.y * {by * 2};\n"
        "#pragma unroll\n"
        f"    for (int i = ty; i < {rows}; i += {by})\n"
        "#pragma unroll\n"
        f"        for (int j = tx; j < {cols}; j += {bx}) s[i][j] = src[(y0 + i) * {pitch} + x0 + j];\n"
        "    __syncthreads();\n"
        f"    out[(y0 + ty) * {pitch} + x0 + tx] = s[ty + 1][tx + 1];\n}}\n"
    )


def copy_rows_name(src: str, rows: int, cols: int) -> str:
    return f"copy_rows_{src}_{rows}_{cols}"


def copy_rows_kernel(src: str, rows: int, cols: int) -> str:
    """Rule 13's kernel: rule 11's copy loop over a ``rows`` x ``cols`` tile by 32 x 1 threads, the elements read
    from ``src``'s space (``STAGING_READ``); ``rows`` = 0: the same kernel without the copy."""
    param, read = STAGING_READ[src]
    copy = (
        "#pragma unroll\n"
        f"    for (int i = ty; i < {rows}; i += 1)\n"
        "#pragma unroll\n"
        f"        for (int j = tx; j < {cols}; j += 32) s[i][j] = {read.format(i='(y0 + i) * 4110 + x0 + j')};\n"
        if rows
        else ""
    )
    return (
        f'extern "C" __global__ void {copy_rows_name(src, rows, cols)}({param}, T* out) {{\n'
        f"    __shared__ T s[{max(rows, 1)}][{cols}];\n"
        "    int tx = threadIdx.x, ty = threadIdx.y;\n"
        "    int x0 = blockIdx.x * 64, y0 = blockIdx.y * 2;\n"
        f"{copy}"
        "    __syncthreads();\n"
        "    out[(y0 + ty) * 4110 + x0 + tx] = s[0][tx];\n}\n"
    )


def copy_rows_kernels() -> list[tuple[str, int, int]]:
    """(source, rows, columns) of rule 13's kernels."""
    out = [(src, 0, 32) for src in STAGING_SOURCES]
    for src in STAGING_SOURCES:
        out += [(src, rows, 32 * n) for n in COPY_ROWS_N for rows in (1, 2)] + [(src, 1, 48)]
    return out


def copy_rows_of(sass: dict[str, list[str]], src: str) -> dict[str, int] | None:
    """Rule 13 on one source's kernels: the row costs, or None where the counts do not fit the form."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import sass_exec  # here: it imports this module's parser

    launch = sass_exec.Launch(block=(32, 1, 1), block_idx=(1, 1, 0), grid=(4, 4, 1), params=sass_exec.PARAMS)
    try:  # each of the source's kernels once: (rows, columns) -> the warp's instructions up to the barrier
        n_of = {(r, c): sass_exec.run_warp(sass[copy_rows_name(s, r, c)], launch, 0, until_barrier=True)
                for s, r, c in copy_rows_kernels() if s == src}  # fmt: skip
    except sass_exec.Unknown:
        return None
    c = {n: n_of[2, 32 * n] - n_of[1, 32 * n] for n in COPY_ROWS_N}
    rest, body = c[2] - c[1], c[8] - c[4]
    first = c[5] - c[4]
    head = c[1] - first
    entry = c[4] - head - body
    got = {"head": head, "first": first, "rest": rest, "entry": entry, "body": body,
           "split": n_of[1, 48] - n_of[1, 64], "prologue": n_of[1, 32] - c[1] - n_of[0, 32]}  # fmt: skip

    if any(copy_row_count(got, n) != c[n] for n in COPY_ROWS_N) or min(got.values()) < 0:
        return None
    return got


def copy_row_count(rows: dict[str, int], n: int, unroll: int = 4) -> int:
    """Rule 13's form: a warp's instructions for one tile row of ``n`` iterations in every lane."""
    r, m = n % unroll, n // unroll
    return (
        rows["head"]
        + rows["first"] * (r >= 1)
        + rows["rest"] * (r >= 2)
        + (rows["entry"] + rows["body"] * m) * (m >= 1)
    )


def _copy_ops(lines: list[str]) -> str:
    """A copy kernel's global loads (L) and shared stores (S) in code order up to its barrier."""
    ops = []
    for line in lines:
        base = parse(line).base
        if base == "BAR":
            break
        if base in ("LDG", "STS"):
            ops.append("L" if base == "LDG" else "S")
    return "".join(ops)


def copy_unroll_of(lines: list[str]) -> int:
    """Rule 11: the copy's global loads (L) and shared stores (S) in code order up to the barrier. nvcc's runtime
    unrolling by u with the remainder first reads ``LS`` (the remainder's first iteration), ``L``*(u - 2)
    ``S``*(u - 2) (its others), then ``L``*u ``S``*u (the body): u. Any other pattern: 1 (the model's rolled
    loop: one load a round)."""
    m = re.fullmatch(r"LS(L+)(S+)(L+)(S+)", _copy_ops(lines))
    if not m:
        return 1
    rest, body = len(m[1]), len(m[3])
    return body if len(m[2]) == rest and len(m[4]) == body and rest == body - 2 else 1


def copy_tail_of(lines: list[str], n: int = -(-COPY_TAIL_SHAPE[1] // COPY_TAIL_SHAPE[2])) -> int:
    """Rule 12: the copy's global loads (L) and shared stores (S) in code order up to the barrier, a tile row of
    ``n`` iterations unrolled whole with its last t together, row after row: ``LS``*(n - t) ``L``*t ``S``*t
    repeated, t >= 2: t. Any other pattern: 0."""
    got = _copy_ops(lines)
    for t in range(2, n + 1):
        row = "LS" * (n - t) + "L" * t + "S" * t
        if got and len(got) % len(row) == 0 and got == row * (len(got) // len(row)):
            return t
    return 0


def staging_source() -> str:
    """The translation unit of the staging, write-back and barrier kernels (STAGING_TYPE elements)."""
    head = (
        f"// generated by benchmarks/addressing_modes.py -- staging loops, element type {STAGING_TYPE}\n"
        "#include <cuda_runtime.h>\n"
        + "".join(
            f"#define {k} {v}\n"
            for k, v in {"NS": NS, "B1": B1, "BX": BX, "BY": BY, "TH": TH, "TW": TW, "TWF": TWF, "KMAX": KMAX}.items()
        )
        + f"typedef {STAGING_TYPE} T;\n"
    )
    kernels = [
        staging_kernel(who, form, size)
        for who in (*STAGING_SOURCES, WRITEBACK)
        for form in FORMS
        for size in form_sizes(form)
    ]
    return (head + "".join(kernels) + "".join(barrier_kernel(m) for m in BARRIERS) + copy_unroll_kernel()
            + copy_unroll_kernel(COPY_TAIL_KERNEL, COPY_TAIL_SHAPE)
            + "".join(copy_rows_kernel(*k) for k in copy_rows_kernels()))  # fmt: skip


# ----------------------------------------------------------------------------- tools


def tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for base in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        for sub in ("cu13", "cu12", "cuda_cuobjdump", "cuda_nvcc"):
            cand = Path(base) / "nvidia" / sub / "bin" / name
            if cand.exists():
                return str(cand)
    return None


def tool_version(path: str) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    lines = [ln for ln in out.splitlines() if "release" in ln or ln.startswith("Build")]
    return "; ".join(lines) or out.strip().splitlines()[-1]


def compile_cubin(src: str, arch: str, workdir: Path, stem: str, nvcc: str) -> Path:
    cu = workdir / f"{stem}.cu"
    cu.write_text(src)
    cubin = workdir / f"{stem}.{arch}.cubin"
    res = subprocess.run(
        [nvcc, "-cubin", "-O3", f"-arch={arch}", "-o", str(cubin), str(cu)], capture_output=True, text=True
    )
    if res.returncode != 0:
        raise RuntimeError(f"nvcc -arch={arch} failed on {cu}:\n{res.stderr}")
    return cubin


def disassemble(cubin: Path, cuobjdump: str) -> dict[str, list[str]]:
    """``cuobjdump -sass`` of a cubin: kernel name -> its SASS lines (``/*pc*/ text ;``)."""
    out = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    kernels: dict[str, list[str]] = {}
    cur = None
    for line in out.splitlines():
        m = re.search(r"Function\s*:\s*(\S+)", line)
        if m:
            cur = m.group(1)
            kernels[cur] = []
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;", line)
        if m and cur is not None:
            kernels[cur].append(f"/*{m.group(1)}*/ {m.group(2)}")
    return kernels


# ----------------------------------------------------------------------------- SASS parsing

REG = re.compile(r"(?<![\w.])(-|!|~|\|)?(URZ|UR\d+|UPT|UP\d|RZ|R\d+|PT|P\d)((?:\.\w+)*)")
ZERO = {"RZ", "URZ", "PT", "UPT"}
TEX_OPS = ("TEX", "TLD", "TLD4", "TXD", "TMML", "TXQ")


@dataclass
class Inst:
    pc: int
    text: str
    guard: str | None
    opcode: str  # with modifiers, e.g. IMAD.WIDE.U32
    operands: list[str]
    dests: list[str] = field(default_factory=list)
    srcs: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]


def split_operands(s: str) -> list[str]:
    ops, depth, cur = [], 0, ""
    for ch in s:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            ops.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        ops.append(cur.strip())
    return ops


def _expand(name: str, width: int) -> list[str]:
    if name in ZERO or width == 1:
        return [name]
    m = re.match(r"(U?R)(\d+)$", name)
    if not m:
        return [name]
    return [f"{m.group(1)}{int(m.group(2)) + k}" for k in range(width)]


def _regs(operand: str, width: int = 1) -> list[str]:
    """Registers an operand reads (``.64`` marks a pair); ``desc[URx]`` is skipped."""
    operand = re.sub(r"desc\[[^\]]*\]", "", operand)
    out = []
    for m in REG.finditer(operand):
        name, mods = m.group(2), m.group(3) or ""
        w = 2 if ".64" in mods else width
        out += _expand(name, w)
    return out


def _dest_width(opcode: str) -> int:
    mods = opcode.split(".")
    if "128" in mods:
        return 4
    if "64" in mods or "WIDE" in mods or "F64" in mods or opcode.startswith(("D", "I2F.F64", "F2F.F64")):
        return 2
    return 1


def is_memref(operand: str) -> bool:
    return "[" in operand


def parse(line: str) -> Inst:
    m = re.match(r"/\*([0-9a-f]+)\*/\s*(@!?U?P\w+\s+)?(\S+)\s*(.*)$", line)
    if not m:
        raise ValueError(f"cannot parse SASS line {line!r}")
    pc = int(m.group(1), 16)
    guard = m.group(2).strip() if m.group(2) else None
    opcode = m.group(3)
    operands = split_operands(m.group(4))
    inst = Inst(pc, line, guard, opcode, operands)
    base = inst.base
    dw = _dest_width(opcode)
    if base.startswith(TEX_OPS) or base in TEX_OPS:
        # sm_75+: TEX/TLD Rd0, Rd1, Ra, Rb, [URh], imm..., dim, mask (two destinations);
        # Kepler (the paper's Fig. 2): TLD Rd, Ra, imm, dim, mask (one destination)
        dims = next((o for o in operands if re.fullmatch(r"(ARRAY_)?[123]D|CUBE", o)), "1D")
        ndim = 2 if "2D" in dims else 3 if "3D" in dims else 1
        lead = 0
        while lead < len(operands) and re.fullmatch(r"R\d+|RZ", operands[lead].split(".")[0]):
            lead += 1
        nd = 2 if lead >= 3 else 1
        inst.dests = [r for o in operands[:nd] for r in _regs(o, 2 if dw == 2 else 1)]
        regs_src = [o for o in operands[nd:] if REG.fullmatch(o.split(".reuse")[0].strip("-!"))]
        for k, o in enumerate(regs_src):
            inst.srcs += _regs(o, ndim if k == 0 else 1)
        if inst.guard:
            inst.srcs += _regs(inst.guard)
        return inst
    first_is_dest = (
        bool(operands)
        and not is_memref(operands[0])
        and base not in {"EXIT", "BRA", "BAR", "RET", "NOP", "BSYNC", "WARPSYNC", "CALL", "JMP", "BSSY"}
        and not base.startswith(("ST", "RED", "MEMBAR"))
    )
    rest = operands
    if first_is_dest:
        inst.dests = _regs(operands[0], dw)
        k = 1
        while k < len(operands) and re.fullmatch(r"U?P\d|U?PT", operands[k]):
            inst.dests.append(operands[k])
            k += 1
        rest = operands[k:]
    mods = opcode.split(".")[1:]
    wide = "WIDE" in mods
    alu64 = "64" in mods and not base.startswith(("LD", "ST", "ATOM", "RED"))
    for k, o in enumerate(rest):
        w = 1
        if wide and k == 2:  # IMAD.WIDE Rd, Ra, Rb, Rc(64-bit)
            w = 2
        if alu64:  # IADD.64 Rd, Ra, Rb: 64-bit sources
            w = 2
        if (
            is_memref(o)
            and base in ("LDG", "STG", "LD", "ST", "ATOM", "ATOMG", "RED")
            and ".E" in "." + ".".join(opcode.split(".")[1:])
            and "U" not in o.split("[")[-1][:2]
        ):
            w = 2  # sm_75 prints [R2] for a 64-bit .E address
        inst.srcs += _regs(o, w)
    if inst.guard:
        inst.srcs += _regs(inst.guard)
    inst.srcs = [r for r in inst.srcs if r not in ZERO]
    inst.dests = [r for r in inst.dests if r not in ZERO]
    return inst


def address_regs(inst: Inst) -> list[str]:
    """The registers of a load's address (rule 3)."""
    base = inst.base
    if base.startswith(TEX_OPS) or base in TEX_OPS:
        return [r for r in inst.srcs if not re.fullmatch(r"U?P\w+", r)]
    ref = next(o for o in inst.operands if is_memref(o))
    ref = re.sub(r"desc\[[^\]]*\]", "", ref)
    if ref.startswith("c["):  # c[bank][Rx+imm]: the index register only
        ref = ref[ref.index("]") + 1 :]
    w = 2
    if base in ("LDS", "LDC") or (".64" not in ref and ".E" not in "." + ".".join(inst.opcode.split(".")[1:])):
        w = 1
    regs = []
    for m in REG.finditer(ref):
        name, mods = m.group(2), m.group(3) or ""
        width = 2 if ".64" in mods else (w if name.startswith("R") else 1)
        regs += _expand(name, width)
    return [r for r in regs if r not in ZERO]


def is_copy(inst: Inst) -> bool:
    if (
        inst.base in ("MOV", "UMOV")
        and len(inst.operands) >= 2
        and re.fullmatch(r"U?R\d+", inst.operands[1].split(".")[0])
    ):
        return True
    if (
        inst.opcode.startswith("IMAD.MOV")
        and len(inst.operands) == 4
        and inst.operands[1] == "RZ"
        and inst.operands[2] == "RZ"
        and re.fullmatch(r"R\d+", inst.operands[3])
    ):
        return True
    return False


def is_space_load(inst: Inst, space: str) -> bool:
    kind = LOAD_KIND[space]
    b = inst.base
    if kind == "G":
        return b in ("LDG", "LD")
    if kind == "S":
        return b == "LDS"
    if kind == "T":
        return b in TEX_OPS
    if kind == "C":  # LDC c[bank!=0][R...]: a user constant array
        ref = next((o for o in inst.operands if o.startswith("c[")), "")
        return b == "LDC" and not ref.startswith("c[0x0]") and bool(re.search(r"\]\[.*R\d", ref))
    raise ValueError(space)


@dataclass
class LoadCount:
    load: Inst
    counted: list[Inst]
    skipped: list[tuple[Inst, str]]


@dataclass
class KernelCount:
    kernel: str
    arch: str
    space: str
    elem: str
    count: int
    agree: bool
    loads: list[LoadCount]
    sass: list[Inst]


def code(lines: list[str]) -> list[Inst]:
    """A kernel's instructions up to its last EXIT (the padding after it never runs)."""
    insts = [parse(ln) for ln in lines]
    last_exit = max(i for i, x in enumerate(insts) if x.base == "EXIT")
    return insts[: last_exit + 1]


def straight_line(lines: list[str], kernel: str = "", arch: str = "") -> list[Inst]:
    """Rule 1: a kernel's instructions up to its last EXIT, refused if it branches."""
    body = code(lines)
    for x in body:
        if x.base in ("BRA", "BRX", "JMP", "CALL", "RET"):
            raise ValueError(f"{kernel}/{arch}: not straight-line code ({x.text})")
    return body


def reaching(body: list[Inst], i: int, reg: str) -> int | None:
    """The instruction whose write of ``reg`` instruction ``i`` reads (straight-line code)."""
    for j in range(i - 1, -1, -1):
        if reg in body[j].dests:
            return j
    return None


def index_values(body: list[Inst], bound_check: bool = True, kernel: str = "", arch: str = "") -> set[int]:
    """Rule 2: the instructions defining index values (S2R of threadIdx / blockIdx, and with
    ``bound_check`` the values the guarded EXIT's ISETP chain compares)."""
    index_defs: set[int] = {
        j
        for j, x in enumerate(body)
        if x.base in ("S2R", "S2UR") and re.search(r"SR_(TID|CTAID)", " ".join(x.operands))
    }
    if not bound_check:
        return index_defs
    exits = [i for i, x in enumerate(body) if x.base == "EXIT" and x.guard]
    if not exits:
        raise ValueError(f"{kernel}/{arch}: no guarded EXIT (bound check) found")
    todo = [(exits[0], r) for r in _regs(body[exits[0]].guard) if r not in ZERO]
    seen = set()
    while todo:
        i, reg = todo.pop()
        j = reaching(body, i, reg)
        if j is None or (j, reg) in seen:
            continue
        seen.add((j, reg))
        x = body[j]
        if x.base in ("ISETP", "PLOP3", "PSETP"):
            for r in x.srcs:
                if re.fullmatch(r"U?P\w+", r):
                    todo.append((j, r))
                elif re.fullmatch(r"R\d+", r):
                    k = reaching(body, j, r)
                    if k is not None:
                        index_defs.add(k)
    return index_defs


def index_dependence(body: list[Inst], index_defs: set[int]) -> list[bool]:
    """Per instruction: does it depend (transitively) on an index value (forward pass)."""
    dep: list[bool] = []
    for i, x in enumerate(body):
        d = i in index_defs
        if not d:
            for r in x.srcs:
                j = reaching(body, i, r)
                if j is not None and dep[j]:
                    d = True
                    break
        dep.append(d)
    return dep


def slice_count(body: list[Inst], i: int, index_defs: set[int], dep: list[bool]) -> LoadCount:
    """Rules 3-5 for the memory instruction ``body[i]``: its slice, counted and skipped."""
    slice_: set[int] = set()
    stack = [(i, r) for r in address_regs(body[i])]
    while stack:
        k, reg = stack.pop()
        j = reaching(body, k, reg)
        if j is None or j in index_defs or j in slice_:
            continue
        slice_.add(j)
        stack += [(j, r) for r in body[j].srcs]
    counted, skipped = [], []
    for j in sorted(slice_):
        y = body[j]
        if not dep[j]:
            skipped.append((y, "index-independent"))
        elif is_copy(y):
            skipped.append((y, "register copy"))
        else:
            counted.append(y)
    return LoadCount(body[i], counted, skipped)


def count_kernel(lines: list[str], space: str, kernel: str = "", arch: str = "", elem: str = "") -> KernelCount:
    """Apply the counting rule (module docstring) to one kernel's SASS lines."""
    body = straight_line(lines, kernel, arch)
    index_defs = index_values(body, True, kernel, arch)
    dep = index_dependence(body, index_defs)
    loads = [slice_count(body, i, index_defs, dep) for i, x in enumerate(body) if is_space_load(x, space)]
    if not loads:
        raise ValueError(f"{kernel}/{arch}: no {space} load found")
    counts = [len(lc.counted) for lc in loads]
    return KernelCount(kernel, arch, space, elem, max(counts), len(set(counts)) == 1, loads, body)


@dataclass
class OffsetCount:
    """The offset-context count of one kernel (module docstring, "Offset accesses")."""

    kernel: str
    arch: str
    space: str
    elem: str
    context: str
    base: LoadCount  # the access the others are offsets of: the smallest slice
    extra: list[Inst]  # counted slice instructions of the other accesses, not in the base's slice
    accesses: int

    @property
    def exact(self) -> Fraction:
        return Fraction(len(self.extra), self.accesses - 1)

    @property
    def count(self) -> int:
        return math.floor(self.exact + HALF)


def count_offset_kernel(
    lines: list[str], space: str, context: str, kernel: str = "", arch: str = "", elem: str = ""
) -> OffsetCount:
    """Address instructions per offset access: the counted slice instructions of all accesses
    beyond the base access's slice, divided by the number of non-base accesses."""
    kc = count_kernel(lines, space, kernel, arch, elem)
    accesses = len(OFFSETS[context])
    if len(kc.loads) % accesses:
        raise ValueError(f"{kernel}/{arch}: {len(kc.loads)} {space} loads for {accesses} accesses")
    base = min(kc.loads, key=lambda lc: len(lc.counted))
    in_base = {y.pc for y in base.counted}
    extra = {y.pc: y for lc in kc.loads for y in lc.counted if y.pc not in in_base}
    return OffsetCount(kernel, arch, space, elem, context, base, sorted(extra.values(), key=lambda y: y.pc), accesses)


# ----------------------------------------------------------------------------- staging counts

LOADS = ("LDG", "LD", "LDS") + TEX_OPS
STORES = ("STG", "ST", "STS")
BRANCH_TARGET = re.compile(r"0x[0-9a-f]+")


def is_memory(inst: Inst) -> bool:
    return inst.base in LOADS or inst.base in STORES


def loop_spans(insts: list[Inst]) -> list[tuple[int, int]]:
    """(first, last) instruction index of every loop: a BRA back to an earlier pc, innermost first."""
    index_of = {x.pc: i for i, x in enumerate(insts)}
    spans = []
    for i, x in enumerate(insts):
        target = BRANCH_TARGET.fullmatch(x.operands[-1]) if x.base == "BRA" and x.operands else None
        if target and int(target.group(0), 16) <= x.pc:
            spans.append((index_of[int(target.group(0), 16)], i))
    return sorted(spans, key=lambda sp: sp[1] - sp[0])


@dataclass
class LoopCount:
    """Non-memory instructions per element of a loop the compiler kept (rule 8)."""

    kernel: str
    arch: str
    inner: list[Inst]  # the innermost loop
    elements: int  # elements it copies per iteration (its stores)
    outer: list[Inst] | None = None  # 2D: the outer loop's instructions outside the inner loop

    @property
    def per_element(self) -> Fraction:
        return Fraction(sum(not is_memory(x) for x in self.inner), self.elements)

    @property
    def per_row(self) -> Fraction | None:
        return None if self.outer is None else Fraction(len(self.outer))


def count_loop(lines: list[str], nested: bool, kernel: str = "", arch: str = "") -> LoopCount:
    """Rule 8 on one loop kernel: one loop (1D) or two nested loops (2D), as compiled."""
    insts = code(lines)
    spans = loop_spans(insts)
    if len(spans) != (2 if nested else 1):
        raise ValueError(f"{kernel}/{arch}: {len(spans)} loops, expected {2 if nested else 1}")
    first, last = spans[0]
    inner = insts[first : last + 1]
    stores = [x for x in inner if x.base in STORES]
    loads = [x for x in inner if x.base in LOADS]
    if not stores or len(stores) != len(loads):
        raise ValueError(f"{kernel}/{arch}: the inner loop has {len(loads)} loads and {len(stores)} stores")
    if not nested:
        return LoopCount(kernel, arch, inner, len(stores))
    o_first, o_last = spans[1]
    if not o_first <= first <= last <= o_last:
        raise ValueError(f"{kernel}/{arch}: the two loops are not nested")
    outer = insts[o_first:first] + insts[last + 1 : o_last + 1]
    if any(is_memory(x) for x in outer):
        raise ValueError(f"{kernel}/{arch}: the outer loop copies elements outside the inner loop")
    return LoopCount(kernel, arch, inner, len(stores), outer)


def copy_slices(lines: list[str], writeback: bool, kernel: str = "", arch: str = "") -> list[LoadCount]:
    """Rules 3-5 for every memory instruction of an unrolled copy: the staging copy is what
    comes before the kernel's barrier, the write-back copy what comes after it."""
    body = straight_line(lines, kernel, arch)
    bar = next(i for i, x in enumerate(body) if x.base == "BAR")
    copy = range(bar + 1, len(body)) if writeback else range(bar)
    index_defs = index_values(body, bound_check=False)
    dep = index_dependence(body, index_defs)
    return [slice_count(body, i, index_defs, dep) for i in copy if is_memory(body[i])]


def union_size(slices: list[LoadCount]) -> int:
    return len({y.pc for lc in slices for y in lc.counted})


@dataclass
class UnrolledCount:
    """Rule 9: counted address instructions per element an unrolled copy adds to a one-element copy."""

    kernel: str
    arch: str
    unions: dict[tuple[int, ...], int]  # elements per thread (per dimension) -> union of the copy's slices

    def per_element(self, shape: tuple[int, ...]) -> Fraction:
        one = min(self.unions)
        return Fraction(self.unions[shape] - self.unions[one], math.prod(shape) - math.prod(one))

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        return sorted(self.unions)[1:]


@dataclass
class BarrierCount:
    arch: str
    totals: dict[int, int]  # __syncthreads() calls -> instructions of the kernel
    added: list[Inst]  # the instructions the last barrier added

    @property
    def steps(self) -> set[int]:
        ms = sorted(self.totals)
        return {self.totals[b] - self.totals[a] for a, b in zip(ms, ms[1:])}

    @property
    def count(self) -> int:
        return max(self.steps)

    @property
    def agree(self) -> bool:
        return len(self.steps) == 1


def count_barrier(sass: dict[str, list[str]], arch: str = "") -> BarrierCount:
    """Rule 10: instructions each __syncthreads() adds to an otherwise unchanged kernel."""
    kernels = {m: code(sass[f"barrier_{m}"]) for m in BARRIERS}
    totals = {m: len(k) for m, k in kernels.items()}
    fewer, most = kernels[BARRIERS[-2]], kernels[BARRIERS[-1]]
    extra = Counter(x.opcode for x in most) - Counter(x.opcode for x in fewer)
    added = []
    for x in reversed(most):  # the last instructions of each opcode the extra barrier added
        if extra[x.opcode] > 0:
            extra[x.opcode] -= 1
            added.insert(0, x)
    return BarrierCount(arch, totals, added)


# ----------------------------------------------------------------------------- driver

STAGING_KEYS = ("loop_1d", "loop_2d", "loop_2d_row", "unrolled_1d", "unrolled_2d", "unrolled_flat")


@dataclass
class Results:
    indexed: dict[tuple[str, str, str], KernelCount] = field(default_factory=dict)  # (arch, type, space)
    offset: dict[tuple[str, str, str, str], OffsetCount] = field(default_factory=dict)  # (arch, type, context, space)
    # (arch, source space or WRITEBACK, STAGING_KEYS entry) -> (instructions, the steps agree)
    staging: dict[tuple[str, str, str], tuple[Fraction, bool]] = field(default_factory=dict)
    barrier: dict[str, BarrierCount] = field(default_factory=dict)  # arch ->
    copy_unroll: dict[str, int] = field(default_factory=dict)  # arch -> rule 11's u
    copy_tail: dict[str, int] = field(default_factory=dict)  # arch -> rule 12's t
    copy_rows: dict[tuple[str, str], dict[str, int] | None] = field(default_factory=dict)  # (arch, source) -> 13


def run(archs, types, verbose=False, workdir: Path | None = None, nvcc=None, cuobjdump=None) -> Results:
    nvcc = nvcc or tool("nvcc")
    cuobjdump = cuobjdump or tool("cuobjdump")
    if not nvcc or not cuobjdump:
        sys.exit(
            "addressing_modes: nvcc and cuobjdump are needed "
            "(pip install nvidia-cuda-cuobjdump; nvcc from the CUDA toolkit)"
        )
    results = Results()
    tmp = tempfile.TemporaryDirectory(prefix="addressing_") if workdir is None else None
    wd = Path(tmp.name) if tmp else workdir
    try:
        for tname in types:
            src = kernel_source(TYPES[tname])
            for arch in archs:
                sass = disassemble(compile_cubin(src, arch, wd, f"addr_{tname}", nvcc), cuobjdump)
                count_type(sass, arch, tname, results, verbose)
        for arch in archs:
            sass = disassemble(compile_cubin(staging_source(), arch, wd, "staging", nvcc), cuobjdump)
            count_staging(sass, arch, results, verbose)
    finally:
        if tmp:
            tmp.cleanup()
    return results


def count_type(sass: dict[str, list[str]], arch: str, tname: str, results: Results, verbose: bool) -> None:
    """Count the indexed and the offset kernels of one element type on one arch into ``results``."""
    for space in ALL_SPACES:
        kc = count_kernel(sass[f"k_{space}"], space, f"k_{space}", arch, tname)
        results.indexed[(arch, tname, space)] = kc
        if verbose:
            print_snippet(kc)
    for context in OFFSETS:
        for space in OFFSET_ALL:
            name = f"{context}_{space}"
            oc = count_offset_kernel(sass[name], space, context, name, arch, tname)
            results.offset[(arch, tname, context, space)] = oc
            if verbose:
                print_offset_snippet(oc)


def count_staging(sass: dict[str, list[str]], arch: str, results: Results, verbose: bool) -> None:
    """Rules 8-10 on the staging, write-back and barrier kernels of one arch, into ``results``."""
    for who in (*STAGING_SOURCES, WRITEBACK):
        got: dict[str, tuple[Fraction, bool]] = {}
        for form, nested in (("loop_1d", False), ("loop_2d", True)):
            name = staging_name(who, form, {})
            lc = count_loop(sass[name], nested, name, arch)
            got[form] = (lc.per_element, True)
            if nested:
                got[f"{form}_row"] = (lc.per_row, True)
            if verbose:
                print_loop_snippet(who, form, lc)
        for form in ("unrolled_1d", "unrolled_flat", "unrolled_2d"):
            slices = {
                tuple(size.values()): copy_slices(
                    sass[staging_name(who, form, size)], who == WRITEBACK, staging_name(who, form, size), arch
                )
                for size in form_sizes(form)
            }
            uc = UnrolledCount(staging_name(who, form, {}), arch, {k: union_size(v) for k, v in slices.items()})
            if form != "unrolled_2d":  # 1D and flattened copies are regular: every length must give one value
                values = {uc.per_element(k) for k in uc.shapes}
                got[form] = (max(values), len(values) == 1)
            else:  # 2D copies are not (the table's shape; --verbose: the others)
                got[form] = (uc.per_element(TILE_2D), True)
            if verbose:
                print_unrolled_snippet(who, form, uc, slices[max(slices)])
        for key, value in got.items():
            results.staging[(arch, who, key)] = value
    results.copy_unroll[arch] = copy_unroll_of(sass[COPY_UNROLL_KERNEL])
    results.copy_tail[arch] = copy_tail_of(sass[COPY_TAIL_KERNEL])
    for src in STAGING_SOURCES:
        results.copy_rows[(arch, src)] = copy_rows_of(sass, src) if results.copy_unroll[arch] > 1 else None
        if verbose:
            print(f"--- {arch} staging {src} copy_rows (rule 13): {results.copy_rows[(arch, src)]}")
    results.barrier[arch] = count_barrier(sass, arch)
    if verbose:
        print_barrier_snippet(results.barrier[arch])


def print_loop_snippet(who: str, form: str, lc: LoopCount) -> None:
    row = "" if lc.per_row is None else f", {_fmt(lc.per_row)} per row"
    print(f"--- {lc.arch} staging {who} {form} ({lc.kernel}): {_fmt(lc.per_element)} per element{row}")
    print(f"    inner loop ({lc.elements} element(s) per iteration)")
    for x in lc.inner:
        print(f"      {'mem' if is_memory(x) else ' +1'}  {x.text}")
    if lc.outer is not None:
        print("    outer loop, outside the inner one (per row)")
        for x in lc.outer:
            print(f"       +1  {x.text}")


def print_unrolled_snippet(who: str, form: str, uc: UnrolledCount, largest: list[LoadCount]) -> None:
    shapes = ", ".join(f"{'x'.join(map(str, k))}: {_fmt(uc.per_element(k))}" for k in uc.shapes)
    print(f"--- {uc.arch} staging {who} {form} ({uc.kernel}_*): per element, by elements per thread: {shapes}")
    print(
        "    union of the copy's counted slices: "
        + ", ".join(f"{'x'.join(map(str, k))}: {v}" for k, v in sorted(uc.unions.items()))
    )
    print(f"    the copy of {'x'.join(map(str, max(uc.unions)))} (+1 once per instruction):")
    seen: set[int] = set()
    for lc in largest:
        print(f"      mem  {lc.load.text}")
        for y in lc.counted:
            if y.pc not in seen:
                print(f"       +1  {y.text}")
            seen.add(y.pc)


def print_barrier_snippet(bc: BarrierCount) -> None:
    print(f"--- {bc.arch} barrier: {bc.count}" + ("" if bc.agree else f"  (steps disagree: {sorted(bc.steps)})"))
    print("    instructions by __syncthreads() calls: " + ", ".join(f"{m}: {v}" for m, v in bc.totals.items()))
    for x in bc.added:
        print(f"      +1  {x.text}")


def print_snippet(kc: KernelCount) -> None:
    print(
        f"--- {kc.arch} {kc.elem} {kc.space} ({kc.kernel}): {kc.count}"
        + ("" if kc.agree else "  (loads disagree: " + ", ".join(str(len(l.counted)) for l in kc.loads) + ")")
    )
    for lc in kc.loads:
        print(f"    load  {lc.load.text}")
        for y in lc.counted:
            print(f"      +1  {y.text}")
        for y, why in lc.skipped:
            print(f"       0  {y.text}    [{why}]")


def print_offset_snippet(oc: OffsetCount) -> None:
    print(
        f"--- {oc.arch} {oc.elem} {oc.space} {oc.context} ({oc.kernel}): {oc.count}"
        f"  (= {len(oc.extra)}/{oc.accesses - 1} = {float(oc.exact):.3f})"
    )
    print(f"    base  {oc.base.load.text}   (smallest slice, {len(oc.base.counted)}: not counted here)")
    for y in oc.base.counted:
        print(f"       0  {y.text}")
    for y in oc.extra:
        print(f"      +1  {y.text}")


def _fmt(value: Fraction | int) -> str:
    v = Fraction(value)
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


def _grid(title_cols: list[str], rows: list[tuple[str, list[str]]]) -> str:
    width = [max(3, len(c), *(len(r[1][k]) for r in rows)) for k, c in enumerate(title_cols)]
    head = f"{'':20} " + " ".join(c.rjust(w) for c, w in zip(title_cols, width))
    lines = [head, "-" * len(head)]
    lines += [f"{label:20} " + " ".join(c.rjust(w) for c, w in zip(cells, width)) for label, cells in rows]
    return "\n".join(lines)


def table(results: Results, archs, types) -> str:
    """The indexed counts, one line per arch and type (``*``: the loads disagree)."""
    rows = []
    for arch in archs:
        for tname in types:
            cells = []
            for s in ALL_SPACES:
                kc = results.indexed[(arch, tname, s)]
                cells.append(f"{kc.count}{'' if kc.agree else '*'}")
            rows.append((f"{arch:7} {tname:7} {TYPES[tname].bytes:>2}", cells))
    return "indexed\n" + _grid(list(ALL_SPACES), rows)


def offset_table(results: Results, archs, types) -> str:
    """The offset counts per context: the exact fraction where it is not a whole number."""
    out = []
    for context in OFFSETS:
        rows = []
        for arch in archs:
            for tname in types:
                cells = [_fmt(results.offset[(arch, tname, context, s)].exact) for s in OFFSET_ALL]
                rows.append((f"{arch:7} {tname:7} {TYPES[tname].bytes:>2}", cells))
        out.append(f"{context} {OFFSETS[context]}\n" + _grid(list(OFFSET_ALL), rows))
    return "\n\n".join(out)


def staging_table(results: Results, archs) -> str:
    """Staging instructions per element (``_row``: per row), by arch and source; the barrier."""
    rows = []
    for arch in archs:
        for who in (*STAGING_SOURCES, WRITEBACK):
            cells = []
            for key in STAGING_KEYS:
                value, agree = results.staging[(arch, who, key)]
                cells.append(_fmt(value) + ("" if agree else "*"))
            cells.append(str(results.barrier[arch].count) + ("" if results.barrier[arch].agree else "*"))
            rows.append((f"{arch:7} {who}", cells))
    return f"staging ({STAGING_TYPE})\n" + _grid([*STAGING_KEYS, "barrier"], rows)


def families_of(archs) -> dict[str, list[str]]:
    fams: dict[str, list[str]] = {}
    for a in archs:
        fams.setdefault(FAMILY.get(a, a), []).append(a)
    return fams


def _key(s: str) -> str:
    return f'"{s}"' if s[0].isdigit() else s


def _inline(row: dict[str, object], cols) -> str:
    return ", ".join(f"{_key(c)} = {row[c]}" for c in cols)


def family_rows(fam: str, members: list[str], types, cols, count) -> tuple[dict, dict]:
    """Rows per type and per element size for one family; ``count(arch, type, col)`` gives
    ``(value, agree)``. The family's archs must give one value, the types of one size one row."""
    rows: dict[str, dict[str, int]] = {}
    for tname in types:
        row = {}
        for c in cols:
            got = {a: count(a, tname, c) for a in members}
            vals = {v for v, _ in got.values()}
            if len(vals) != 1 or not all(ok for _, ok in got.values()):
                raise SystemExit(
                    f"--toml: {fam} ({', '.join(members)}) {tname} {c} is not one number: "
                    + ", ".join(f"{a}={v}{'' if ok else '*'}" for a, (v, ok) in got.items())
                )
            row[c] = vals.pop()
        rows[tname] = row
    by_bytes: dict[int, tuple[str, dict[str, int]]] = {}
    for tname in types:
        b = TYPES[tname].bytes
        if b in by_bytes and by_bytes[b][1] != rows[tname]:
            raise SystemExit(
                f"--toml: {fam}: {by_bytes[b][0]} and {tname} ({b} bytes) differ: {by_bytes[b][1]} vs {rows[tname]}"
            )
        by_bytes.setdefault(b, (tname, rows[tname]))
    return rows, by_bytes


def bytes_section(name: str, by_bytes: dict, types, cols) -> list[str]:
    out = [f"[{name}]"]
    for b in sorted(by_bytes):
        names = "/".join(t for t in types if TYPES[t].bytes == b)
        out.append(f'"{b}" = {{ {_inline(by_bytes[b][1], cols)} }}  # {names}')
    return out + [""]


def toml_rows(results: Results, archs, types) -> str:
    """The measured sections of configs/addressing.toml, per family: [fam], [fam.bytes] and
    [fam.types] (indexed), [fam.<context>] for each offset context.

    A family's archs must agree on every count, and the types of one size on every
    count (the bytes row), else this refuses and says which entry differs.
    """
    out = []
    for fam, members in families_of(archs).items():

        def indexed(a, t, c):
            kc = results.indexed[(a, t, c)]
            return kc.count, kc.agree

        rows, by_bytes = family_rows(fam, members, types, ALL_SPACES, indexed)
        out += [f"[{fam}]", "sm = [" + ", ".join(f'"{m}"' for m in members) + "]", 'source = "measured"', ""]
        out += bytes_section(f"{fam}.bytes", by_bytes, types, ALL_SPACES)
        out.append(f"[{fam}.types]")
        out += [f"{t} = {{ bytes = {TYPES[t].bytes}, {_inline(rows[t], ALL_SPACES)} }}" for t in types]
        out.append("")
        for context in OFFSETS:

            def offset(a, t, c, context=context):
                return results.offset[(a, t, context, c)].count, True

            _, by_bytes = family_rows(fam, members, types, OFFSET_ALL, offset)
            out += bytes_section(f"{fam}.{context}", by_bytes, types, OFFSET_ALL)
        out += staging_section(fam, members, results)
    return "\n".join(out)


def _one(fam: str, members: list[str], what: str, got: dict[str, tuple[Fraction, bool]]) -> Fraction:
    """The family's one value of a staging entry, else refuse."""
    vals = {v for v, _ in got.values()}
    if len(vals) != 1 or not all(ok for _, ok in got.values()):
        raise SystemExit(
            f"--toml: {fam} ({', '.join(members)}) staging {what} is not one number: "
            + ", ".join(f"{a}={_fmt(v)}{'' if ok else '*'}" for a, (v, ok) in got.items())
        )
    return vals.pop()


def _number(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else f"{float(v):.4g}"


def staging_section(fam: str, members: list[str], results: Results) -> list[str]:
    barrier = _one(
        fam, members, "barrier", {a: (Fraction(results.barrier[a].count), results.barrier[a].agree) for a in members}
    )
    out = [f"[{fam}.staging]", f"barrier = {barrier}"]
    unroll = _one(fam, members, "copy_unroll", {a: (Fraction(results.copy_unroll.get(a, 1)), True) for a in members})
    if unroll > 1:  # absent: 1, the rolled loop
        out.append(f"copy_unroll = {unroll}")
    tail = _one(fam, members, "copy_tail", {a: (Fraction(results.copy_tail.get(a, 0)), True) for a in members})
    if tail > 1:  # absent: 0
        out.append(f"copy_tail = {tail}")
    for who in (*STAGING_SOURCES, WRITEBACK):
        row = {
            key: _number(_one(fam, members, f"{who}.{key}", {a: results.staging[(a, who, key)] for a in members}))
            for key in STAGING_KEYS
        }
        out.append(f"{who} = {{ {_inline(row, STAGING_KEYS)} }}")
    for src in STAGING_SOURCES:
        got = [results.copy_rows.get((a, src)) for a in members]
        if all(g is not None for g in got):
            gap = max(abs(copy_row_count(g, n) - copy_row_count(got[0], n)) for g in got for n in COPY_ROWS_N)
            if gap > COPY_ROWS_SLACK:
                raise SystemExit(
                    f"--toml: {fam} ({', '.join(members)}) copy_rows.{src}: the members' rows differ by "
                    f"up to {gap} instructions: " + ", ".join(f"{a}={g}" for a, g in zip(members, got))
                )
            out.append(f"copy_rows.{src} = {{ {_inline(got[0], COPY_ROWS_KEYS)} }}")
            out += [f"# {a}: copy_rows.{src} = {{ {_inline(g, COPY_ROWS_KEYS)} }}"
                    for a, g in zip(members[1:], got[1:]) if g != got[0]]  # fmt: skip
    return out + [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default=",".join(ARCHS), help="comma-separated sm_XX list")
    ap.add_argument("--types", default=",".join(DEFAULT_TYPES), help="comma-separated element types")
    ap.add_argument("--verbose", "-v", action="store_true", help="print the SASS each count is made of")
    ap.add_argument("--toml", action="store_true", help="also print the rows for configs/addressing.toml")
    ap.add_argument("--keep", type=Path, help="keep the .cu and .cubin files in this folder")
    args = ap.parse_args(argv)
    archs = [a.strip() for a in args.arch.split(",") if a.strip()]
    types = [t.strip() for t in args.types.split(",") if t.strip()]
    for t in types:
        if t not in TYPES:
            ap.error(f"unknown type {t!r} (known: {', '.join(TYPES)})")
    nvcc, cuobjdump = tool("nvcc"), tool("cuobjdump")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    results = run(archs, types, args.verbose, args.keep, nvcc, cuobjdump)
    print(f"# nvcc: {tool_version(nvcc)}")
    print(f"# cuobjdump: {tool_version(cuobjdump)}")
    print(table(results, archs, types))
    print()
    print(offset_table(results, archs, types))
    print()
    print(staging_table(results, archs))
    if args.toml:
        print()
        print(toml_rows(results, archs, types))
    return 0


if __name__ == "__main__":
    import os

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _measure import timed_main

    sys.exit(timed_main(main))  # prints wall, CPU and peak RSS of the run to stderr
