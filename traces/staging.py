"""Staged shared memory: an object's tiles copied into ``__shared__`` memory, as kernels really do it.

An object a placement puts in shared memory (``S/G``, ``S/T``, ``S/R``: staged from global
memory, a 1D texture or the read-only path) is not assumed to be there already. Each
block copies the part of the object its warps touch (its *footprint*) into shared memory
and reads it there; this module measures footprints on the trace and rewrites the trace
with the staging code. The model:

- **Footprint and tile.** An access's elements are ``(addr - base) // elem_bytes``; with a
  2D ``shape`` (rows, cols) an element is (row, column), else (0, index). A block's tile
  for a window is the bounding box of the elements its warps touch in that window, laid
  out row-major in shared memory in a static ``__shared__ T tile[rows][pitch]`` (as a
  convolution's input tile or a tiled matrix multiply's ``Mds``) whose rows and pitch are
  the most rows and the widest box of any block and window. Capacity is that array's
  bytes plus the kernel's own shared usage. A 2D tile's rows may be padded (``pad``
  elements after each row, ``tile[rows][pitch + pad]``, the transpose's ``[32][33]``
  and Kernel Tuner's ``use_padding``), which moves its columns to other banks;
  :func:`best_pad` finds the padding that leaves the kernel's accesses the fewest
  bank conflicts.
- **Windows (loop tiling).** When the tile does not fit, each block's accesses are split
  into consecutive windows in program order: the k-th access of each warp to the object
  (its ordinal) belongs to window ``k // L``; all staged objects share the windows (the
  same number W of them: L = ceil(K / W), K the most accesses one warp makes), so one
  loop over W tiles stages them together, as a tiled matrix multiply stages its M and N
  tiles. ``footprint`` measures the tile bytes for W = 1, 2, 4, ... and the textbook
  tiling's K / block width (:func:`window_counts`), or for the W asked; the caller picks W.
- **Staging code.** Before its first access of window j, each warp runs its share of a
  cooperative copy of every staged tile: element q of the tile (row-major over its
  bounding box) is loaded by thread q mod threads_per_block from the source space (one
  coalesced warp load per 32 consecutive elements), except that a 2D tile is copied by
  the textbook 2D loop over the block's own (threadIdx.x, threadIdx.y) when the block is
  2D or the tile at least as wide as the block (``copy_columns``), and stored to shared
  memory, with the loop's non-memory instructions per element as measured from nvcc's
  SASS (``configs/addressing.toml``, ``[<family>.staging]``); then one ``__syncthreads()``.
  Between windows a second barrier keeps the next copy from overwriting a tile still
  read (the two ``__syncthreads()`` per tile of a tiled matrix multiply). The staged
  accesses then read (or write) shared memory at their tile offsets, with the bank
  conflicts that layout gives.
- **Written objects.** An object the kernel writes is staged only when blocks write
  disjoint elements (``write_overlap`` names the first pair of blocks that do not); its
  tile is loaded only if the kernel also reads it, and after a barrier at the end of each
  window the written bounding box is stored back (a shared load and a global store per
  element). An object written only by atomics or reductions may overlap between blocks:
  it is *privatized* (each block zeroes its tile in shared memory, its atomics go to
  shared memory, and the tile is added back to global memory with reductions), the
  histogram idiom.

Inserted instructions shift the ``seq`` of every later row of the warp, so the schedule
of the hierarchy sees them; their counts (loads, stores, integer instructions, barriers)
are returned for the instruction totals of the model.

Staging lives on both sides of the traces -> placement line. This module is the
mechanics side, in ``traces``, with its numba kernels in ``traces._staging_kernels``:
what a staged kernel does to the trace, given a plan. The decisions and costs are
placement's: ``placement.staging`` (which objects may be staged, how many windows, the
staging code's instruction costs, the plan handed to :func:`stage`),
``placement.streamstaging`` (the same facts of a trace read in groups of blocks) and
``placement.tiles`` (each block's tile origin, for the CUDA hints).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Iterator, Sequence

import numpy as np

from . import _staging_kernels as K
from .io import Trace
from .schema import COLUMNS, SPACE_CODES

log = logging.getLogger(__name__)

WRITEBACK = ("none", "store", "atomic")
SOURCES = ("global", "texture1d", "readonly")
# Largest written element range whose owners are tracked exactly (an int32 per element).
MAX_OWNER_ELEMENTS = 1 << 28
STAGED_ROWS_GUESS = 2.0
"""Rows of a staged trace guessed per row of the trace, for ``stage``'s one pass (the staging code of a
tiled kernel adds a fraction of its rows; a longer staged trace is staged again into buffers that fit)."""
STAGED_ROWS_MIN = 4096
STAGE_PIECE_ROWS = 1 << 18
"""Staged rows a piece of ``stage_pieces`` holds at most (but for a single block with more): 72 MiB of columns at
289 bytes a row. A staged trace is many times its trace where the copy loops outweigh the kernel's own accesses
(a histogram's privatized bins: 24 staged rows a row), so a whole one would not be bounded by the trace's memory.
Evaluating a histogram of 2**25 elements with bins=S/G took 1.42 GB peak and 17.6 s CPU in pieces of 2**18 rows,
1.51 GB and 18.3 s in pieces of 2**19."""
STAGE_WHOLE_ROWS = 1 << 21
"""Staged rows up to which the whole-trace evaluator stages a trace in one piece (``stage_pieces``' ``whole``) and
evaluates it whole: 578 MiB of columns. Its hierarchy is then simulated at once, about a tenth faster than fed
in pieces (bench_rank at 300,000 rows: 13.0 to 13.3 s CPU whole, 14.3 to 15.0 s in pieces; its stagings reach
1.65 rows a row, under this at its 1 M rows)."""


def program_order(trace: Trace) -> np.ndarray:
    """Row indices sorted by (cta, warp, seq): blocks contiguous, each warp's rows in program order."""
    return np.lexsort((trace.seq, trace.warp, trace.cta)).astype(np.int64)


def object_rows(trace: Trace, order: np.ndarray, obj: int) -> np.ndarray:
    """The rows of one object, in program order."""
    return order[trace.obj[order] == obj]


@dataclass(frozen=True)
class Access:
    """How a kernel accesses one object: the most accesses of one warp (K) and the kinds of access."""

    obj: int
    ordinals: int
    loads: int
    stores: int
    atomics: int
    divergent_loads: int = 0
    """Loads whose active lanes read more than one address (``_staging_kernels.divergent_loads``)."""

    @property
    def written(self) -> bool:
        return self.stores + self.atomics > 0

    @property
    def rows(self) -> int:
        return self.loads + self.stores + self.atomics

    @property
    def writeback(self) -> str:
        """'none' (never written), 'atomic' (privatized: written only by atomics and
        reductions, never read) or 'store'."""
        if not self.written:
            return "none"
        if self.stores == 0 and self.loads == 0:
            return "atomic"
        return "store"


def divergent_loads(trace: Trace, rows: np.ndarray | None = None) -> np.ndarray:
    """Per object id, the loads (of ``rows``; all rows when None) whose active lanes read more than one address."""
    out = np.zeros(max(trace.info.n_ids, 1), np.int64)
    idx = np.arange(len(trace), dtype=np.int64) if rows is None else rows
    K.divergent_loads(idx, trace.obj, trace.op, trace.mask, trace.addr, out)
    return out


def access(trace: Trace, rows: np.ndarray, obj: int) -> Access:
    k, loads, stores, atomics = K.access_counts(rows, trace.cta, trace.warp, trace.op, trace.info.warps_per_block)
    div = divergent_loads(trace, rows)[obj]
    return Access(obj, int(k), int(loads), int(stores), int(atomics), int(div))


def window_counts(ordinals: int, tile: int = 0) -> tuple[int, ...]:
    """The window counts W the footprint is measured for: 1, 2, 4, ... up to the first >= ``ordinals``, and, where
    ``tile`` > 0 divides ``ordinals``, ``ordinals // tile``: the textbook tiling's phases (Kirk & Hwu: Width /
    TILE_WIDTH windows of TILE_WIDTH accesses; 19 for a width of 304 in 16-wide tiles), which no power of two is."""
    out = [1]
    while out[-1] < max(ordinals, 1):
        out.append(out[-1] * 2)
    if tile > 0 and ordinals >= tile and ordinals % tile == 0:
        out.append(ordinals // tile)
    return tuple(sorted(set(out)))


@dataclass(frozen=True)
class Footprint:
    """Tile sizes of one object per number of windows W (``windows[i]`` <-> ``bytes[i]``, ``pitch[i]``)."""

    obj: int
    windows: tuple[int, ...]
    bytes: tuple[int, ...]
    pitch: tuple[int, ...]

    def at(self, w: int) -> tuple[int, int]:
        """(tile bytes, pitch) with ``w`` windows (w one of ``windows``, or more: the finest measured)."""
        for i, n in enumerate(self.windows):
            if n >= w:
                return self.bytes[i], self.pitch[i]
        return self.bytes[-1], self.pitch[-1]


def _shape(trace: Trace, obj: int) -> tuple[int, int, int]:
    o = trace.info.object(obj)
    return o.base, o.elem_bytes, (o.shape[1] if o.shape else 0)


def footprint(trace: Trace, rows: np.ndarray, acc: Access, windows: Sequence[int] | None = None) -> Footprint:
    """The largest tile any block touches in any window, for each window count (see the module docstring)."""
    wins = tuple(windows) if windows is not None else window_counts(acc.ordinals)
    lengths = np.array([-(-max(acc.ordinals, 1) // w) for w in wins], np.int64)
    out_b = np.zeros(len(wins), np.int64)
    out_p = np.zeros(len(wins), np.int64)
    base, elem, ncols = _shape(trace, acc.obj)
    K.footprint_table(rows, trace.cta, trace.warp, trace.mask, trace.addr, trace.width, base, elem, ncols,
                      acc.ordinals, lengths, out_b, out_p)  # fmt: skip
    return Footprint(acc.obj, wins, tuple(int(x) for x in out_b), tuple(int(x) for x in out_p))


PAD_SAMPLE_ROWS = 8192
"""Most accesses :func:`best_pad` weighs, the object's first in program order (the first blocks'): a kernel's access
patterns repeat block after block, a few thousand settle the bank counts, and a trace read in groups of blocks has
them in its first groups (``placement.streamstaging``)."""


def best_pad(trace: Trace, rows: np.ndarray, obj: int, pitch: int, banks: int, bank_bytes: int) -> tuple[int, int, int]:
    """(pad, conflict degree with it, with none) for object ``obj``'s 2D tile of ``pitch`` columns: of the paddings
    0 to ``banks`` - 1 elements a row, the one whose row stride leaves the kernel's accesses ``rows`` the fewest
    bank conflicts (``_staging_kernels.tile_bank_degrees``, summed over the first ``PAD_SAMPLE_ROWS`` of them), the
    smallest where several tie; (0, 0, 0) for a 1D object or no access. A transpose's 32 x 32 tile read down its
    columns takes 32 wavefronts a read unpadded and 1 with a pad of 1 (stride 33); Kernel Tuner's convolution in
    16-wide blocks reads two 16-float half-rows of its tile a warp, which share 14 banks at the tile's 30 columns
    and none at a stride of 48 (pad 18, its own ``use_padding`` rule)."""
    base, elem, ncols = _shape(trace, obj)
    if ncols <= 0 or rows.shape[0] == 0 or banks < 1:
        return 0, 0, 0
    idx = rows[:PAD_SAMPLE_ROWS]
    strides = np.arange(banks, dtype=np.int64) + np.int64(max(pitch, 1))
    out = np.zeros(banks, np.int64)
    K.tile_bank_degrees(np.ascontiguousarray(idx, np.int64), trace.mask, trace.addr, trace.width, np.int64(base),
                        np.int64(elem), np.int64(ncols), strides, np.int64(banks), np.int64(bank_bytes), out)  # fmt: skip
    p = int(np.argmin(out))
    return p, int(out[p]), int(out[0])


def write_overlap(trace: Trace, rows: np.ndarray, obj: int, plain_only: bool = False) -> tuple[int, int, int] | None:
    """The first element two blocks both write: (block a, block b, element index), or None.

    ``plain_only`` considers plain stores only (atomics and reductions may overlap). Raises
    ValueError when the written range is too large to track (``MAX_OWNER_ELEMENTS``).
    """
    base, elem, _ = _shape(trace, obj)
    lo, hi = K.write_range(rows, trace.op, trace.mask, trace.addr, trace.width, base, elem, plain_only)
    if hi < lo:
        return None
    if hi - lo + 1 > MAX_OWNER_ELEMENTS:
        raise ValueError(f"written range of {hi - lo + 1:,} elements is too large to check for overlap")
    owner = np.full(int(hi - lo + 1), -1, np.int32)
    a, b, e = K.write_conflict(rows, trace.cta, trace.op, trace.mask, trace.addr, trace.width, base, elem, lo, owner,
                               plain_only)  # fmt: skip
    return None if a < 0 else (int(a), int(b), int(e))


@dataclass(frozen=True)
class StagedObject:
    """How one object is staged (see the module docstring)."""

    obj: int
    source: str
    """Space of the staging loads: global, texture1d or readonly."""
    length: int
    """Accesses per warp in one window (L)."""
    shared_base: int
    """Offset of its tile in the block's shared-memory window."""
    pitch: int
    """Width of the tile in elements (the columns its copy covers)."""
    load: bool
    """Whether the tile is loaded (False for an object only written, or privatized)."""
    writeback: str
    """'none', 'store' (written tiles stored back) or 'atomic' (privatized: zeroed, reduced back)."""
    int_per_element: float
    """Non-memory instructions per staged element row of a warp (loop and address arithmetic; may be
    fractional, an unrolled copy sharing its arithmetic between elements)."""
    writeback_int_per_element: float
    vector_bytes: int = 0
    """The kernel's reads of the tile merged into vector loads of this many bytes (``VECTOR_BYTES`` where the
    read loop's trip count is a compile-time constant, ``;unrolled``; 0: each read its own load): see
    ``vectorize``."""
    copy_unroll: int = 1
    """The copy loop as nvcc unrolls it: 1, the rolled loop (each load's store before the next load: the loop the
    tool's hints write, whose bounds check inside keeps nvcc from unrolling it); u > 1, LLVM's runtime unrolling
    by u with the remainder first (``_staging_kernels._unrolled_copy``: nvcc 13 on sm_75 to sm_90 with u = 4,
    for a copy loop of compile-time step and bound without a check inside, as Kernel Tuner's convolution; the
    loads of a batch in flight together; the flattened loop's remainder one iteration at a time, a tile row's
    the first alone and the rest together). ``;unrolled`` asks for it (``placement.staging.plan``)."""
    copy_tail: int = 0
    """The copy loop as nvcc 13 unrolls it on Blackwell instead (t > 1; 0 otherwise): each tile row's loop (the
    flattened loop) unrolled whole, its last t iterations' loads together and every other iteration alone
    (``_staging_kernels._tail_copy``; t = 2 on sm_100 and sm_120). ``;unrolled`` asks for it."""
    copy_rows: tuple[int, ...] = ()
    """With ``copy_unroll``: that loop's instructions a tile row, (head, first, rest, entry, body, split,
    prologue), the copy's loads and stores included (configs/addressing.toml ``copy_rows``, rule 13 of
    benchmarks/addressing_modes.py). They price a 2D copy of a tile larger than the block, a warp's row at a
    time (``_staging_kernels._row_cost``), in place of ``int_per_element``; () or a tile no larger than the
    block (the textbook copy, one element a thread and no loop): ``int_per_element``."""
    pad: int = 0
    """Elements of padding after each row of a 2D tile in shared memory: its rows lie ``pitch + pad`` elements
    apart (``__shared__ T tile[rows][pitch + pad]``), the copy and the kernel's accesses otherwise the same."""


@dataclass(frozen=True)
class Staged:
    """A trace with staged objects, its per-row addressing deltas and the instructions inserted."""

    trace: Trace
    addr_inst_delta: np.ndarray
    inserted: dict[str, float]
    """Warp-instructions inserted: loads, stores, int (non-memory, possibly fractional), barriers,
    writeback_loads, writeback_stores."""
    windows: int
    objects: tuple[StagedObject, ...] = ()
    """The plan it was staged with (``restage`` changes its sources)."""
    pc_top: int = 0
    """The first pc of the staging code (slot s's rows at ``pc_top + 64 * s`` + 0, 16, 32, 48)."""
    int_milli: int = 0
    """``inserted["int"]`` in thousandths, as the staging kernel counted it."""
    part: bool = False
    """A piece of a staging (``stage_pieces``' pieces when there are several): a run of its whole blocks."""
    kernel_rows: int = 0
    """The rows the staging kernel wrote, before ``vectorize`` merged reads (``;unrolled``): the buffers' length
    it needs, which ``stage_pieces``' ``rows_hint`` wants (the trace's rows are fewer where reads were merged)."""
    tile_rows: np.ndarray | None = None
    """The tile rows of its 2D unrolled copies (``_staging_kernels.stage_rows``' ``segs``, ``SEG_LEN`` int64
    columns), where an object is staged with ``copy_unroll``: what ``restage`` needs to price them with another
    source's ``copy_rows``. None where no object is."""


def stage(trace: Trace, delta: np.ndarray, objects: Sequence[StagedObject], windows: int, barrier: int,
          smem_per_block: int, order: np.ndarray | None = None, rows_hint: int | None = None,
          pc_top: int | None = None) -> Staged:  # fmt: skip
    """``trace`` with ``objects`` staged in ``windows`` windows (see the module docstring).

    ``delta`` is the per-row addressing-instruction change (int16) the caller computed with
    the staged objects' accesses already in shared memory; inserted rows get 0 (their
    instructions are in ``inserted``). ``barrier`` is the instructions of one
    ``__syncthreads()``; ``smem_per_block`` the kernel's shared bytes per block with the
    tiles, recorded in the result's metadata. The staging code's pcs start at ``pc_top``
    (default: 16 above the trace's highest pc; a part of a trace passes the whole's). ``order`` is the trace's
    :func:`program_order` when the caller has it (a rewritten trace keeps its rows' order).

    The rows are written in one pass into buffers of ``rows_hint`` rows (default
    ``STAGED_ROWS_GUESS`` times the trace's); when the staged trace needs more, the pass
    counts them and runs again into buffers of that length (the result is the same).
    The result's columns are views of those buffers.
    """
    run = _Run(trace, delta, objects, windows, barrier, smem_per_block, pc_top)
    if order is None:
        order = program_order(trace)
    cap = int(rows_hint) if rows_hint is not None else int(len(trace) * STAGED_ROWS_GUESS) + STAGED_ROWS_MIN
    while True:
        need, got = run.rows(order, cap)
        if got is not None:
            break
        log.debug("staged trace of %d rows is longer than the %d guessed; staged again", need, cap)
        cap = need
    return run.staged(need, *got)


def stage_pieces(trace: Trace, delta: np.ndarray, objects: Sequence[StagedObject], windows: int, barrier: int,
                 smem_per_block: int, order: np.ndarray | None = None, pc_top: int | None = None,
                 rows: int | None = None, whole: int | None = None,
                 rows_hint: int | None = None) -> Iterator[Staged]:  # fmt: skip
    """``stage`` in pieces of whole blocks in program order, each of at most ``rows`` staged rows (a block with
    more is a piece of its own; default ``STAGE_PIECE_ROWS``), made one at a time: a staged trace of any length
    in bounded memory. A staged trace of at most ``whole`` rows (default ``rows``) is one piece. The rows counted
    here are the staging kernel's, the buffers' (``Staged.kernel_rows``), which the staged rows equal but where
    ``vectorize`` merges reads (``;unrolled``), fewer then.

    The pieces' rows one after the other are ``stage``'s (the staging code's pcs start at the whole trace's
    ``pc_top``; ``order`` as for ``stage``), and their ``inserted`` counts and ``int_milli`` add up to its. One
    piece is ``stage``'s result (``part`` False); of several, every piece has ``part`` True.

    The staged rows a row come from ``rows_hint`` (the whole staging's ``kernel_rows``, which the caller may
    know from an earlier staging of the same tiles) or from the trace's first blocks, staged as a first piece of
    ``rows`` (all of a short trace's blocks, at ``STAGED_ROWS_GUESS`` rows a row). A trace expected to stage
    into at most ``whole`` rows is then staged at once; else in pieces of the blocks that fill half of ``rows``
    at the rate of the piece before. Each staging is written in one pass into buffers of its expected length (a
    quarter more), again into buffers of its length when they were short (as ``stage``), and again with fewer
    blocks when it has more rows than it may: buffers are never much longer than the rows written into them.
    """
    run = _Run(trace, delta, objects, windows, barrier, smem_per_block, pc_top)
    if order is None:
        order = program_order(trace)
    cap = max(int(STAGE_PIECE_ROWS if rows is None else rows), 1)
    top = max(cap, int(whole) if whole is not None else cap)
    n_rows = order.shape[0]
    if n_rows == 0:
        need, got = run.rows(order, STAGED_ROWS_MIN)
        yield run.staged(need, *got)
        return
    cta = trace.cta[order]
    bounds = np.concatenate(([0], np.flatnonzero(cta[1:] != cta[:-1]) + 1, [n_rows])).astype(np.int64)
    del cta
    n_blocks = bounds.shape[0] - 1

    def end(b: int, rate: float, fill: float) -> int:
        """The first block after those from ``b`` that fill ``fill`` staged rows at ``rate`` (one at least)."""
        want = int(bounds[b]) + max(int(fill / rate), 1)
        return min(max(int(np.searchsorted(bounds, want, side="right")) - 1, b + 1), n_blocks)

    def blocks(b: int, e: int, limit: int, rate: float, slack: float):
        """Blocks ``b`` to ``e`` staged into buffers of their expected length: (the staging kernel's rows, its
        output), the output None when they are more than ``limit`` rows in more than one block."""
        sub = order[bounds[b] : bounds[e]]
        guess = min(limit, int(sub.shape[0] * rate * slack) + STAGED_ROWS_MIN)
        need, got = run.rows(sub, guess)
        if need > limit and e - b > 1:
            return need, None
        if got is None:  # buffers too short (or one block longer than ``limit``): again into longer ones
            need, got = run.rows(sub, need)
        return need, got

    rate = rows_hint / n_rows if rows_hint else None  # staged rows a row: known, else learnt from the first blocks
    probe = None
    if rate is None:  # the first blocks staged as a piece (a short trace: all of them) give the rate
        rate = STAGED_ROWS_GUESS
        e = n_blocks if n_rows * rate <= cap else end(0, rate, cap / 2)
        while True:
            n, got = blocks(0, e, top if e == n_blocks else cap, rate, 1.25)
            rate = max(n / int(bounds[e]), 1e-9)
            if got is not None:
                break
            e = end(0, rate, cap / 2)
        if e == n_blocks:
            yield run.staged(n, *got)
            return
        probe = (e, n, got)
    if rate * n_rows <= top:  # expected to fit ``whole``: the whole trace at once
        n, got = blocks(0, n_blocks, top, rate, 1.0 if probe is None else 1.25)
        if got is not None:
            yield run.staged(n, *got)
            return
        rate = max(n / n_rows, 1e-9)
    b = 0
    if probe is not None:
        b, n, got = probe
        probe = None
        yield run.staged(n, *got, part=True)
    while b < n_blocks:
        e = end(b, rate, cap / 2)
        n, got = blocks(b, e, cap, rate, 1.25)
        rate = max(n / int(bounds[e] - bounds[b]), 1e-9)
        if got is None:
            log.debug("staged piece of %d blocks: %d rows, over %d; fewer blocks", e - b, n, cap)
            continue
        yield run.staged(n, *got, part=not (b == 0 and e == n_blocks))
        got = None
        b = e


class _Run:
    """The staging kernel's arguments for one trace and plan (``stage``, ``stage_pieces``)."""

    def __init__(self, trace: Trace, delta: np.ndarray, objects: Sequence[StagedObject], windows: int, barrier: int,
                 smem_per_block: int, pc_top: int | None):  # fmt: skip
        info = trace.info
        n_ids = info.n_ids
        self.slot_of = np.full(max(n_ids, 1), -1, np.int64)
        self.plan = np.zeros((len(objects), K.PLAN_LEN), np.int64)
        if pc_top is None:
            pc_top = (int(trace.pc.max()) if len(trace) else 0) + 16
        for s, so in enumerate(objects):
            _check_kinds(so)
            base, elem, ncols = _shape(trace, so.obj)
            self.slot_of[so.obj] = s
            self.plan[s] = (so.obj, SPACE_CODES[so.source], max(so.length, 1), so.shared_base, max(so.pitch, 1), elem,
                            ncols, base, int(so.load), WRITEBACK.index(so.writeback), _milli(so.int_per_element),
                            _milli(so.writeback_int_per_element), pc_top + 64 * s,
                            copy_columns(info.block, max(so.pitch, 1), ncols > 0), max(int(so.copy_unroll), 1),
                            max(int(so.copy_tail), 0), *_copy_rows(so), max(so.pitch, 1) + max(int(so.pad), 0))  # fmt: skip
        cols = trace.columns()
        self.ctuple = tuple(cols[c] for c in COLUMNS)
        self.delta = np.ascontiguousarray(delta, dtype=np.int16)
        self.info = replace(info, smem_per_block=int(smem_per_block))
        self.objects, self.windows, self.barrier, self.pc_top = tuple(objects), int(windows), barrier, int(pc_top)
        self.vec_of = np.array([max(int(so.vector_bytes), 0) for so in objects] or [0], np.int64)
        # whether the kernel records its tile rows (Staged.tile_rows)
        self.records = any(so.copy_unroll > 1 and so.copy_tail <= 1 for so in objects)

    def rows(self, order: np.ndarray, cap: int):
        """Stage rows ``order`` (whole blocks, in program order) into buffers of ``cap`` rows: (the rows the staging
        kernel writes, (staged rows, buffers, deltas, totals)), the second None when the first is over ``cap``.
        The staged rows are fewer than the kernel's where ``vectorize`` merges reads; the buffers' length a
        staging needs is the kernel's count (a hint of the merged count would make the next staging run twice)."""
        out = _row_buffers(cap)
        delta_out = np.empty(cap, np.int16)
        totals = np.zeros(6, np.int64)
        # a tile row has a load and a store at least; pages of the buffer never written are never touched
        segs = np.empty((cap // 2 + 1 if self.records else 0, K.SEG_LEN), np.int64)
        info = self.info
        need, n_segs = K.stage_rows(True, out, delta_out, order, self.ctuple, self.delta, self.slot_of, self.plan,
                                    self.windows, info.warps_per_block, info.threads_per_block, self.barrier,
                                    totals, segs)  # fmt: skip
        if need > cap:
            return int(need), None
        n = need
        if n and self.vec_of.any():
            n, out, delta_out = _vectorized(n, out, delta_out, self.slot_of, self.vec_of, self.pc_top)
        tile_rows = segs[:n_segs].copy() if self.records else None
        return int(need), (n, out, delta_out, totals, tile_rows)

    def staged(self, need: int, n: int, out, delta_out: np.ndarray, totals: np.ndarray, tile_rows: np.ndarray | None,
               part: bool = False) -> Staged:  # fmt: skip
        """The ``Staged`` of ``rows``' output (``need``: the kernel's rows, ``n`` the staged rows)."""
        staged = Trace(**dict(zip(COLUMNS, (a[:n] for a in out))), info=self.info)
        return Staged(
            staged,
            delta_out[:n],
            inserted_counts(totals),
            self.windows,
            self.objects,
            self.pc_top,
            int(totals[K.T_INT]),
            part,
            int(need),
            tile_rows,
        )


VECTOR_BYTES = 16
"""The widest load of one thread, 128 bits (PTX ``ld.shared.v4.b32``, SASS ``LDS.128``): what nvcc makes of a
lane's 4 consecutive 4-byte reads of a shared array at a 16-byte aligned offset known at compile time."""


def _vectorized(n: int, out, delta_out: np.ndarray, slot_of: np.ndarray, vec_of: np.ndarray, pc_top: int):
    """The first ``n`` staged rows with each lane's consecutive reads of a tile merged into vector loads
    (``_staging_kernels.vector_rows``, in place), the merged-away rows dropped (``compact_rows``, in place too):
    (rows, columns, deltas), the columns ``out``'s own."""
    cols = tuple(a[:n] for a in out)  # cta, warp, seq, pc, op, space, width, mask, addr, obj
    keep = np.empty(n, np.bool_)
    delta = delta_out[:n]
    gone = K.vector_rows(*cols, delta, slot_of, vec_of, np.int64(pc_top), keep)
    if gone == 0:
        return n, out, delta_out
    return int(K.compact_rows(keep, *cols, delta)), out, delta_out


def vectorize(staged: Staged, vector_bytes: int = VECTOR_BYTES) -> Staged:
    """``staged`` with each warp's consecutive reads of every staged tile merged into loads of ``vector_bytes``,
    as nvcc compiles a read loop whose trip count is a compile-time constant (``;unrolled``).

    The textbook tiled matrix multiply reads ``Mds[ty][k]`` for k = 0 .. TILE_WIDTH - 1 in an unrolled loop:
    each lane's 4 consecutive floats at a 16-byte aligned offset are one ``LDS.128``, while ``Nds[k][tx]``
    (a column) stays one ``LDS.32`` a step, so 5 shared loads are issued for every 8 reads. Measured:
    Nsight Compute's ``smsp__inst_executed_op_shared_ld`` of ``matmul_tiled_16`` on an H100 is 655,360 where
    the element-wise count is 1,048,576 (``../shared/data/h100-placements/ncu-raw-variants.csv``; the tool's
    own staged kernel, whose strip loop has a run-time bound, issues all 1,048,576), and nvprof's
    ``shared_load`` of the tiled kernel in ``../shared/data/gpuperfpredict`` is 5/8 of the element-wise count
    on a K40 and a GTX-680 at every size and block.

    A merged load is the chain's first row, of width ``vector_bytes`` (its wavefronts follow from its lanes'
    words as any shared access's), its addressing delta less the loads it saves; the later rows of the warp
    move up by the rows removed. A chain is the warp's next reads of one object in one window, each lane
    ``width`` bytes past its previous read, the same lanes active, the first at a multiple of ``vector_bytes``:
    a misaligned or strided read (a convolution's ``tile[tx + j]``, ``Nds[k][tx]``) is not merged.
    Equivalent to staging with every object's ``vector_bytes`` set (``stage`` does it then).
    """
    t = staged.trace
    run_slot = np.full(max(t.info.n_ids, 1), -1, np.int64)
    for s, so in enumerate(staged.objects):
        run_slot[so.obj] = s
    vec_of = np.full(max(len(staged.objects), 1), int(vector_bytes), np.int64)
    cols = t.columns()
    out = tuple(np.array(cols[c]) for c in COLUMNS)
    delta = np.array(staged.addr_inst_delta, dtype=np.int16)
    n, out, delta = _vectorized(len(t), out, delta, run_slot, vec_of, staged.pc_top)
    objects = tuple(replace(so, vector_bytes=int(vector_bytes)) for so in staged.objects)
    return replace(staged, trace=Trace(**dict(zip(COLUMNS, (a[:n] for a in out))), info=t.info),
                   addr_inst_delta=delta[:n], objects=objects)  # fmt: skip


def copy_columns(block: tuple[int, int, int], pitch: int, two_d: bool) -> int:
    """Threads along a tile row in the textbook 2D copy loop of a 2D object's tile (the block's x extent), or 0
    for the flattened loop.

    A 2D block copies a 2D tile with its own (threadIdx.x, threadIdx.y), as the textbook
    kernels and Kernel Tuner's convolution do; so does a 1D block a tile at least as wide
    as the block (``pitch`` elements: Kernel Tuner's convolution with ``block_size_y = 1``,
    a row of threads across each tile row). A narrower tile in a 1D block is copied by the
    flattened loop, thread t taking element q = t + k * threads at (q / width, q % width),
    the loop ``placement --hints`` writes: the 2D loop would leave it to the first threads
    of the block, a column window of a 2D array to one thread per row. A 1D tile is always
    copied by the flattened loop.
    """
    if not two_d:
        return 0
    return block[0] if block[1] * block[2] > 1 or pitch >= block[0] else 0


def _check_kinds(so: StagedObject) -> None:
    if so.source not in SOURCES:
        raise ValueError(f"staging source {so.source!r} is not one of {', '.join(SOURCES)}")
    if so.writeback not in WRITEBACK:
        raise ValueError(f"writeback {so.writeback!r} is not one of {', '.join(WRITEBACK)}")


COPY_ROWS_LEN = 7  # StagedObject.copy_rows: head, first, rest, entry, body, split, prologue


def _copy_rows(so: StagedObject) -> tuple[int, ...]:
    """The plan's ``P_ROWS`` ... ``P_PROLOGUE`` of one object: (1, its seven counts), or zeros."""
    if not so.copy_rows:
        return (0,) * (1 + COPY_ROWS_LEN)
    if len(so.copy_rows) != COPY_ROWS_LEN or min(so.copy_rows) < 0 or so.copy_unroll < 2:
        raise ValueError(f"copy_rows {so.copy_rows!r}: {COPY_ROWS_LEN} non-negative counts, with copy_unroll >= 2")
    return (1, *(int(v) for v in so.copy_rows))


def _milli(x: float) -> int:
    """An instruction count in the staging kernel's thousandths (as ``stage`` puts it in the plan)."""
    return round(x * K.MILLI)


def restage(staged: Staged, objects: Sequence[StagedObject]) -> Staged:
    """``staged`` with other staging sources: what ``stage`` gives for ``objects``, without staging again.

    ``objects`` must be ``staged.objects`` but for each one's ``source``, ``int_per_element``
    and ``copy_rows`` (S/G, S/T and S/R stage the same tiles: only the staging loads'
    space and the copy loop's non-memory instructions differ, and with them the ``seq``
    of every later row of the warp). An unrolled copy priced a tile row at a time is priced
    again from the tile rows the staging kernel recorded (``Staged.tile_rows``). The result
    shares every column but ``seq`` and ``space`` with ``staged`` (no one writes them) and
    equals ``stage``'s for ``objects`` row for row (tests/test_staging.py).
    """
    before = staged.objects
    if len(objects) != len(before):
        raise ValueError(f"restage: {len(objects)} staged objects for a staging of {len(before)}")
    for a, b in zip(before, objects):
        if replace(b, source=a.source, int_per_element=a.int_per_element, copy_rows=a.copy_rows) != a:
            raise ValueError(f"restage: object {b.obj} is staged differently (not only its source): {a} -> {b}")
        _check_kinds(b)
        _copy_rows(b)
    if staged.tile_rows is None and any(so.copy_unroll > 1 and so.copy_tail <= 1 for so in before):
        raise ValueError("restage: an unrolled staging without its tile rows (Staged.tile_rows)")
    src = np.array([SPACE_CODES[b.source] for b in objects], np.int8)
    t = staged.trace
    seq = np.empty(len(t), np.int64)
    space = np.empty(len(t), np.int8)
    stores = np.zeros(max(len(objects), 1), np.int64)
    int_rows = np.zeros(1, np.int64)
    segs = staged.tile_rows if staged.tile_rows is not None else np.empty((0, K.SEG_LEN), np.int64)
    K.resource_rows(t.cta, t.warp, t.seq, t.pc, t.space, np.int64(staged.pc_top), src, _costs_plan(before),
                    _costs_plan(objects), segs, seq, space, stores, int_rows)  # fmt: skip
    per_store = sum(int(stores[i]) * (_milli(b.int_per_element) - _milli(a.int_per_element))
                    for i, (a, b) in enumerate(zip(before, objects)))  # fmt: skip
    int_milli = staged.int_milli + int(int_rows[0]) + per_store
    cols = t.columns()
    cols["seq"], cols["space"] = seq, space
    inserted = dict(staged.inserted)
    inserted["int"] = float(int_milli) / K.MILLI
    return replace(
        staged, trace=Trace(**cols, info=t.info), inserted=inserted, objects=tuple(objects), int_milli=int_milli
    )


def _costs_plan(objects: Sequence[StagedObject]) -> np.ndarray:
    """The staging kernel's plan of ``objects`` as far as ``restage`` prices them: ``P_INT`` and ``P_ROWS`` ...
    ``P_PROLOGUE`` (every other field 0)."""
    plan = np.zeros((max(len(objects), 1), K.PLAN_LEN), np.int64)
    for s, so in enumerate(objects):
        plan[s, K.P_INT] = _milli(so.int_per_element)
        plan[s, K.P_ROWS : K.P_PROLOGUE + 1] = _copy_rows(so)
    return plan


INSERTED = ("loads", "stores", "int", "barriers", "writeback_loads", "writeback_stores")
"""The keys of ``Staged.inserted``, in the order of the staging kernel's totals (``T_LOADS`` ...)."""


def inserted_counts(totals: np.ndarray) -> dict[str, float]:
    """``Staged.inserted`` from the staging kernel's totals (of one trace, or summed over its groups): counts
    of warp-instructions, the non-memory ones (``int``) kept there in thousandths."""
    inserted: dict[str, float] = {k: int(v) for k, v in zip(INSERTED, totals)}
    inserted["int"] = float(totals[K.T_INT]) / K.MILLI
    return inserted


def _row_buffers(n: int) -> tuple[np.ndarray, ...]:
    """Uninitialised columns (cta, warp, seq, pc, op, space, width, mask, addr, obj) for ``n`` rows."""
    return (np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.int64), np.empty(n, np.int32),
            np.empty(n, np.int8), np.empty(n, np.int8), np.empty(n, np.int8), np.empty(n, np.uint32),
            np.empty((n, 32), np.uint64), np.empty(n, np.int16))  # fmt: skip


__all__ = [
    "INSERTED",
    "PAD_SAMPLE_ROWS",
    "STAGE_PIECE_ROWS",
    "STAGE_WHOLE_ROWS",
    "VECTOR_BYTES",
    "Access",
    "Footprint",
    "Staged",
    "StagedObject",
    "access",
    "best_pad",
    "footprint",
    "inserted_counts",
    "object_rows",
    "program_order",
    "restage",
    "stage",
    "stage_pieces",
    "vectorize",
    "window_counts",
    "write_overlap",
]
