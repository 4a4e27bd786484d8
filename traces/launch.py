"""The bounds every reader checks a launch and the metadata sizes against, before allocating.

CUDA's maxima (CUDA C Programming Guide, "Compute Capabilities" table, compute
capability 3.0 and later):

- grid: x up to 2^31 - 1, y and z up to 65535 blocks;
- block: x and y up to 1024, z up to 64 threads, at most 1024 threads in all;
- at most 255 registers per thread.

This tool's own bounds, far above any real kernel, so that counts stay exact in
int64 and no reader allocates by a claim the input does not back:

- shared memory per block at most 2^32 bytes (a 32-bit window offset; GPUs have
  at most 228 KiB);
- a trace covers its grid: the grid's warps (blocks x warps per block) are at most
  ``max(2^24, 64 x rows)``. Tools size per-warp state by the grid, so a tiny file
  claiming 2^31 blocks is refused at once instead of asking for gigabytes; a grid
  of up to 16 Mi warps is accepted whatever the rows (warps that touch no memory
  have no rows);
- instruction counts at most 2^62, object extents inside the 64-bit address space
  (shared objects inside the 32-bit shared window);
- an object at most 2^49 bytes (512 TiB): no allocation on an NVIDIA GPU is larger,
  since a GPU's virtual address space is 49 bits (Pascal and later: NVIDIA Tesla P100
  whitepaper, "Unified Memory": 49-bit virtual addressing, covering the CPUs' 48-bit
  spaces; earlier GPUs have fewer). A larger size is a corrupt or invented field,
  and a tool sizing anything by it would ask for terabytes.
"""

from __future__ import annotations

MAX_GRID = ((1 << 31) - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
MAX_REGS_PER_THREAD = 255
MAX_SMEM_PER_BLOCK = 1 << 32
WARPS_WITHOUT_ROWS = 1 << 24
WARPS_PER_ROW = 64
MAX_COUNT = 1 << 62
ADDRESS_LIMIT = (1 << 64) - 1  # object ends are held in uint64
MAX_OBJECT_BYTES = 1 << 49  # a GPU's virtual address space (module docstring)
SHARED_WINDOW = 1 << 32
SHARED_ALIGN = 16
"""Alignment of an object's offset in the shared-memory window, wherever this tool places one (a sample's
shared arrays in the generators, an object moved into shared memory by ``traces.rewrite``, a staged tile
by ``placement.staging``): 16 bytes, the widest access (``WIDTHS``), so every aligned access stays aligned."""


def launch_problem(grid, block) -> str | None:
    """What makes (grid, block) impossible on CUDA, or None."""
    for name, dims, top in (("grid", grid, MAX_GRID), ("block", block, MAX_BLOCK)):
        if len(dims) != 3 or any(not isinstance(v, int) or isinstance(v, bool) for v in dims):
            return f"{name} must be three integers, got {dims!r}"
        for axis, v, m in zip("xyz", dims, top):
            if not 1 <= v <= m:
                return f"{name} {axis} is {_num(v)}, CUDA allows 1 to {m}"
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS_PER_BLOCK:
        return f"block {tuple(block)} has {threads} threads, CUDA allows at most {MAX_THREADS_PER_BLOCK}"
    return None


def grid_warps(grid, block) -> int:
    """Warps the launch runs: blocks x ceil(threads per block / 32)."""
    return grid[0] * grid[1] * grid[2] * -(-(block[0] * block[1] * block[2]) // 32)


def max_grid_warps(rows: int) -> int:
    """The most warps a grid may have for a trace of ``rows`` rows (module docstring)."""
    return max(WARPS_WITHOUT_ROWS, WARPS_PER_ROW * rows)


def coverage_problem(grid, block, rows: int) -> str | None:
    """What makes the grid too large for ``rows`` rows, or None."""
    warps = grid_warps(grid, block)
    if warps > max_grid_warps(rows):
        return (f"grid {tuple(grid)} x block {tuple(block)} is {warps} warps, but the trace has {rows} rows; "
                f"a grid of more than {WARPS_WITHOUT_ROWS} warps needs a row per {WARPS_PER_ROW} warps")  # fmt: skip
    return None


def _num(v: int) -> str:
    s = str(v)
    return s if len(s) <= 24 else f"{s[:12]}...({len(s)} digits)"
