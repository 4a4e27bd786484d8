"""What nvprof cannot count, from the known code of the gpuperfpredict kernels.

nvprof on Kepler records no barrier count and no dependence information, so two
model inputs cannot come from the counters: the barriers per warp (Hong & Kim's
#Synch_insts, Sim et al.'s O_sync) and the memory-level parallelism (Sim et al.
Sec. 5.3). For the kernels of Amaris et al.'s data set both follow from the code
(shared/data/README.md describes each kernel; benchmarks/kernels/matmul_naive.cu
and matrix_sum.cu render two of them):

- MLP, by Sim et al.'s definition (Sec. 5.3): for each load, the number of memory
  requests from it to the first instruction that uses its value; averaged over
  the loads. Every one of these kernels loads two operands back to back before
  using them (``A[i] + B[i]``, ``a[i] * b[i]``, ``M[..] * N[..]`` in the inner
  loop, the ``Mds``/``Nds`` tile loads): local MLPs 2 and 1, average 1.5. The
  store is not a load and has no use. subSeqMax's loop is not described closely
  enough to say; it keeps MLP 1.
- Barriers: the tiled matMul kernels run ``__syncthreads()`` twice per tile
  (after loading the tiles, after using them), and a thread walks
  width / Tile_Width tiles with Tile_Width = block edge; ``Input.Size`` is the
  width. The counters agree: two global loads per tile per thread, so
  gld_request per warp = 2 x tiles (65 = 2 x 32 + the store at width 256,
  block 8 x 8). dotProd (github marcosamaris/gpuperfpredict, src/dotProd/dotProd.cu)
  stores each thread's product into a shared cache, runs ``__syncthreads()``, then
  halves the active threads log2(blockDim.x) times with a ``__syncthreads()`` after
  each step. Hong & Kim's Eq. 26 prices a barrier as the spread of the warps' memory
  departures, which only the first barrier waits on (the global loads before it);
  the tree's barriers wait on shared-memory steps whose instructions the counters
  already hold: 1 barrier is counted. subSeqMax (src/Subseqmax/Subseqmax.cu)
  runs 32 blocks over the input; each block walks its N / 32 elements in chunks of
  the 4096-int shared buffer, one ``__syncthreads()`` per chunk: floor(N / 32 / 4096).

ILP is left at 1: on Kepler ITILP_max = 9 / (32/192) = 54 is reached by the
occupancy alone (ITILP = min(ILP x N, ITILP_max), N >= 32 in every row), so
the kernels' ILP does not change GPUPerf's prediction.

A kernel not in the table keeps its counters-only parameters.
"""

from __future__ import annotations

import math
from dataclasses import replace

from .kernel import KernelParams

PAIRED_LOADS_MLP = 1.5
"""Two loads issued back to back before their first use: local MLPs 2 and 1 (Sim et al. Sec. 5.3)."""

KERNEL_CODE: dict[str, dict] = {
    "vectorAdd": {"mlp": PAIRED_LOADS_MLP},
    "matrix_sum_normal": {"mlp": PAIRED_LOADS_MLP},
    "matrix_sum_coalesced": {"mlp": PAIRED_LOADS_MLP},
    "matMul_gpu": {"mlp": PAIRED_LOADS_MLP},
    "matMul_gpu_uncoalesced": {"mlp": PAIRED_LOADS_MLP},
    "matMul_gpu_sharedmem": {"mlp": PAIRED_LOADS_MLP, "barriers_per_tile": 2},
    "matMul_gpu_sharedmem_uncoalesced": {"mlp": PAIRED_LOADS_MLP, "barriers_per_tile": 2},
    "dotProd": {"mlp": PAIRED_LOADS_MLP, "barriers": 1},
    "subSeqMax": {"mlp": 1.0, "blocks": 32, "chunk_elems": 4096},
}
"""Per kernel: its MLP; the barriers that wait on global loads: the tiled matMul's (per tile),
dotProd's first, and subSeqMax's chunk loop's (its grid of 32 blocks and its 4096-element
shared buffer, from Subseqmax.cu's BLOCK_SIZE and vetComp)."""


def tiles(width: float, block_edge: int) -> int:
    """Tiles a thread of the tiled matMul walks: ceil(width / Tile_Width), Tile_Width = block edge."""
    return math.ceil(width / block_edge)


def rows_with_code_facts(rows: list) -> list:
    """Counter rows (``placement.models.counters.CounterRow``) with their kernel's code facts
    (:func:`with_code_facts`); rows without counters unchanged."""
    return [replace(r, params=with_code_facts(r.params, r.kernel, r.input_size, r.block)) if r.params is not None else r
            for r in rows]  # fmt: skip


def with_code_facts(k: KernelParams, kernel: str, input_size: float, block: tuple[int, ...]) -> KernelParams:
    """``k`` with the MLP and barriers of ``kernel``'s known code; unchanged for an unknown kernel."""
    facts = KERNEL_CODE.get(kernel)
    if facts is None:
        return k
    changes: dict = {"mlp": facts["mlp"]}
    per_tile = facts.get("barriers_per_tile")
    if per_tile and input_size and input_size > 0:
        changes["synch_insts"] = float(per_tile * tiles(input_size, block[0]))
    if "barriers" in facts:
        changes["synch_insts"] = float(facts["barriers"])
    if "chunk_elems" in facts and input_size and input_size > 0:
        changes["synch_insts"] = float(math.floor(input_size / facts["blocks"] / facts["chunk_elems"]))
    return replace(k, **changes)
