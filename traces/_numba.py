"""numba options shared by the kernels of every layer (``traces`` is the lowest, so they live here)."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

FIB_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)
"""Multiplier of Fibonacci hashing (2^64 / golden ratio, odd), for the kernels' open-addressing tables (the
warp table of ``traces._kernels``, the DRAM banks' ids of ``cachesim._dram_kernels``)."""

LEAF = {"cache": True, "nogil": True, "_nrt": False}
"""For a helper a kernel calls per row or per request that allocates nothing and returns no array.

numba reference-counts each array argument on entry to a function it does not inline and
again on exit: two calls into its runtime (an atomic add each) per array per call. The
hierarchy walk's L2 access took ten arrays (``cfgs``, ``state``, ``stats``, the six DRAM
request columns, ``hp``/``lat``): about 40 % of the walk's time went to those calls.
Without the runtime (numba's ``_nrt`` target option) the helper borrows its caller's
arrays, which the caller keeps alive for the call; such a helper must not allocate
(``np.empty`` needs the runtime) nor return an array. Inlining the helpers instead
(``inline="always"``) took the walk's compilation from 20 s to 4 minutes.
"""


@intrinsic
def prefetch(typingctx, arr, i, j):
    """Ask the CPU to bring the cache line of ``arr[i]`` (1D; ``j`` unused) or ``arr[i, j]`` (2D) into its
    caches (``llvm.prefetch``: a read, kept close). It changes no result, only when the bytes arrive: a
    kernel that visits rows out of their order (the hierarchy walk, in issue order across warps) asks for
    the rows it will read a few dozen iterations ahead, which the hardware prefetchers cannot guess.
    Indices are not checked (a prefetch of any address is harmless)."""
    if not (isinstance(arr, types.Array) and arr.ndim <= 2 and isinstance(i, types.Integer)
            and isinstance(j, types.Integer)):  # fmt: skip
        return None

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, args[1], signature.args[1], types.intp)]
        if aryty.ndim == 2:
            idx.append(context.cast(builder, args[2], signature.args[2], types.intp))
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False, boundscheck=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        # the unsuffixed name: LLVM upgrades it to its address-space overload (p0i8 or p0) on parsing
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch")  # fmt: skip
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])  # read, high locality, data
        return context.get_dummy_value()

    return types.void(arr, i, j), codegen
