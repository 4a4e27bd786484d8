"""Staged shared memory in the model: the trace's footprints, how many windows, the staging plan.

Staging lives on both sides of the traces -> placement line. ``traces.staging`` holds
the mechanics (footprints, the rewrite with the staging code; its module docstring is
the model), with its numba kernels in ``traces._staging_kernels``. This module is the
decisions and costs side, in ``placement``, with ``placement.streamstaging`` (the facts
below of a trace read in groups of blocks) and ``placement.tiles`` (each block's tile
origin, for the CUDA hints). It makes the decisions a developer makes when writing the
staged kernel:

- **Legality** of staging a written object: blocks must write disjoint elements, else
  the placement is illegal and the message names two blocks and an element they both
  write; an object written only by atomics or reductions (and never read plainly) is
  privatized instead (zeroed in shared memory, reduced back to global memory).
- **Windows.** The tiles of all staged objects are sized together for W windows (W =
  1, 2, 4, ..., and for 2D tiles the textbook K / block width where that divides K, so a
  304-wide matrix in 16 x 16 blocks gets Kirk & Hwu's 19 windows). Three choices are
  worth evaluating, and the fastest is kept (each is reported): the fewest windows whose
  tiles fit the per-block shared-memory limit with the kernel's own arrays (one staging
  pass when the whole footprint fits: a convolution's input tile); the fewest that keep the occupancy the placement has
  without tiles (small tiles, which a developer picks so that staging does not cost
  resident blocks); and the textbook tiling, the fewest (keeping the occupancy) whose 2D
  tiles are no wider than the block nor than a warp's accesses in one window (Kirk &
  Hwu's ``Mds[TILE_WIDTH][TILE_WIDTH]``, TILE_WIDTH steps of k a window; not a
  convolution's one tap a window, whose tile is read once). A warp's rows of a tile no
  wider than the block do not share a bank, where the wider tile of fewer windows may:
  a tiled matrix multiply of 8 x 8 and 16 x 16 blocks in the fewest windows has 2- to
  4-way conflicts that the textbook kernel, measured, does not have. Where choices
  coincide they are one. ``;windows=K`` (``Placement.windows``) evaluates K alone.
- **Padding.** Each window count is also weighed with its 2D tiles' rows padded (``tile[rows][width + P]``) by
  the P that leaves the kernel's accesses the fewest bank conflicts (``traces.staging.best_pad``; the transpose's
  ``[32][33]``, Kernel Tuner's ``use_padding``), where that pads a row and still fits; the faster is kept.
  ``;pad=P`` (``Placement.pad``) pads by P, its windows chosen on the padded tiles (a pad that does not fit in
  the fewest windows takes more, or the placement is refused); ``;windows=K`` without it is the code one wrote,
  unpadded.
- **Costs** of the staging code per element and per barrier come from nvcc's SASS
  (``placement.addressing.staging_cost``): the copy loops of a static tile have
  compile-time bounds, so nvcc unrolls them (the ``unrolled_2d`` form for an object
  with a 2D shape, ``unrolled_1d`` otherwise), as in the textbook tiled kernels and
  Kernel Tuner's convolution; a 2D tile that a 1D block copies by the flattened loop
  (``traces.staging.copy_columns``) costs the ``unrolled_flat`` form's count (a division
  and a remainder by the tile's width per element).
- **Rounds of the copy.** The barrier after a copy waits for its loads, a round at a time. Each
  copy is a round of its own (each load's store before the next load: the loop ``--hints``
  writes, whose bounds check keeps nvcc from unrolling it), unless the placement says
  ``;unrolled``: then the copy is Kernel Tuner's kind (``#pragma unroll``, no check), which nvcc
  unrolls by the family's ``copy_unroll`` with the remainder first, or (Blackwell) unrolls each tile
  row's loop whole with its last ``copy_tail`` iterations together (``traces.staging.StagedObject``).
  Its instructions: where the family has ``copy_rows`` (sm_75 to sm_90), a tile row at a time as nvcc's
  SASS of that loop issues them (the outer loop's trip, the remainder, the unrolled body, divergence;
  rule 13 of benchmarks/addressing_modes.py), for a tile larger than the block; else ``unrolled_2d``
  per element (Blackwell, and the textbook copy of a tile no larger than the block).
"""

from __future__ import annotations

import logging
from dataclasses import astuple, dataclass, field, replace
from functools import cached_property

import numpy as np

import traces
from traces import staging as ts
from traces.launch import SHARED_ALIGN

from . import addressing
from .gpu import Gpu
from .occupancy import occupancy, regs_for
from .placements import STAGING_SOURCE, IllegalPlacement, Placement, build_key, is_staged

log = logging.getLogger(__name__)


def _align(x: int, a: int = SHARED_ALIGN) -> int:
    return -(-x // a) * a


class StagingFacts:
    """What the trace says about staging each object, measured once and cached.

    Holds the trace; every measurement (accesses, footprints per window count,
    overlapping writes) is made the first time a placement asks for it.
    """

    def __init__(self, trace: traces.Trace):
        self.trace = trace
        self.info = trace.info
        self._rows: dict[int, np.ndarray] = {}
        self._access: dict[int, ts.Access] = {}
        self._footprint: dict[tuple[int, tuple[int, ...]], ts.Footprint] = {}
        self._overlap: dict[tuple[int, bool], tuple[int, int, int] | None | str] = {}
        self._pad: dict[tuple[int, int, int, int], tuple[int, int, int]] = {}

    @cached_property
    def order(self) -> np.ndarray:
        return ts.program_order(self.trace)

    def _id(self, name: str) -> int:
        return self.info.object(name).id

    def rows(self, name: str) -> np.ndarray:
        i = self._id(name)
        if i not in self._rows:
            self._rows[i] = ts.object_rows(self.trace, self.order, i)
        return self._rows[i]

    def pad(self, name: str, pitch: int, banks: int, bank_bytes: int) -> tuple[int, int, int]:
        """``traces.staging.best_pad`` of object ``name``'s tile of ``pitch`` columns."""
        key = (self._id(name), pitch, banks, bank_bytes)
        if key not in self._pad:
            self._pad[key] = ts.best_pad(self.trace, self.rows(name), key[0], pitch, banks, bank_bytes)
        return self._pad[key]

    def access(self, name: str) -> ts.Access:
        i = self._id(name)
        if i not in self._access:
            self._access[i] = ts.access(self.trace, self.rows(name), i)
        return self._access[i]

    def footprint(self, name: str, windows: tuple[int, ...]) -> ts.Footprint:
        key = (self._id(name), windows)
        if key not in self._footprint:
            self._footprint[key] = ts.footprint(self.trace, self.rows(name), self.access(name), windows)
        return self._footprint[key]

    def overlap(self, name: str, plain_only: bool) -> tuple[int, int, int] | None | str:
        """Two blocks writing one element (block a, block b, element), None, or why it cannot be told."""
        key = (self._id(name), plain_only)
        if key not in self._overlap:
            try:
                self._overlap[key] = ts.write_overlap(self.trace, self.rows(name), key[0], plain_only)
            except ValueError as exc:
                self._overlap[key] = str(exc)
        return self._overlap[key]

    def writeback(self, name: str) -> str:
        """'none', 'store' or 'atomic' (privatized: written only by atomics and reductions, never read)."""
        return self.access(name).writeback

    def choose(self, gpu: Gpu, placement: Placement, own_smem: int) -> StagingChoice:
        """:func:`choose` on these facts. ``placement.placements.check`` calls it through the facts it
        is given, so that ``placement.placements`` (which this module imports) need not import this one."""
        return choose(self, gpu, placement, own_smem)


@dataclass(frozen=True)
class StagingOption:
    """One way to size the tiles: W windows, the shared bytes per block, each object's tile."""

    windows: int
    smem_per_block: int
    tiles: tuple[tuple[str, int, int, int], ...]
    """(object, tile bytes, width in elements, padding in elements a row) per staged object, in placement order;
    the bytes count the padding."""
    why: str


@dataclass(frozen=True)
class StagingChoice:
    """The window counts worth evaluating for a placement (see the module docstring)."""

    options: tuple[StagingOption, ...]
    own_smem: int
    """The kernel's own shared bytes per block (the tiles go above them)."""


def _check_writes(facts: StagingFacts, name: str) -> None:
    a = facts.access(name)
    if not a.written or facts.writeback(name) == "atomic":
        return
    hit = facts.overlap(name, plain_only=False)
    if isinstance(hit, str):
        raise IllegalPlacement("shared-overlap", f"{name} cannot be staged: {hit}")
    if hit is not None:
        b1, b2, e = hit
        raise IllegalPlacement(
            "shared-overlap",
            f"{name} is written by blocks {b1} and {b2} at the same element {e}; a written object is staged in shared "
            "memory only where blocks write disjoint elements (or only by atomics and reductions)",
        )


def choose(facts: StagingFacts, gpu: Gpu, placement: Placement, own_smem: int) -> StagingChoice:
    """The window counts to evaluate for ``placement``'s staged objects (see the module docstring).

    ``own_smem`` is the kernel's own shared bytes per block under the placement.
    Raises IllegalPlacement when a written object's blocks overlap or no window count fits.
    """
    info = facts.info
    staged = [n for n, s in placement.spaces if is_staged(s)]
    for n in staged:
        _check_writes(facts, n)
    k_max = max(facts.access(n).ordinals for n in staged)
    two_d = [i for i, n in enumerate(staged) if info.object(n).shape is not None]
    # the powers of two up to one access a window, the textbook tiling's K / block width windows where the block's
    # width divides K (2D tiles only), and the windows asked for
    wins = ts.window_counts(k_max, info.block[0] if two_d else 0)
    finest = wins[-1]  # one access a window (the power of two at or above K: K / width is below it)
    if placement.windows is not None and placement.windows <= finest:
        wins = tuple(sorted({*wins, placement.windows}))
    fps = {n: facts.footprint(n, wins) for n in staged}
    limit = gpu.memory.smem_per_block
    threads, regs = info.threads_per_block, regs_for(info, gpu, build_key(info, placement))
    base_blocks = occupancy(gpu, threads, regs, own_smem).blocks_per_sm

    banks, bank_bytes = gpu.memory.smem_banks, gpu.memory.smem_bank_bytes

    def pad_of(n: str, pitch: int) -> int:
        """The padding of object ``n``'s tile rows: ``;pad=P``'s, none for the code one wrote (``;windows=K``
        without ``;pad``), else the one that leaves the kernel's accesses the fewest bank conflicts."""
        if info.object(n).shape is None:
            return 0
        if placement.pad is not None:
            return placement.pad
        if placement.windows is not None or banks < 2:
            return 0
        return facts.pad(n, pitch, banks, bank_bytes)[0]

    def option(w: int, why: str, padded: bool = False) -> StagingOption:
        tiles = []
        for n in staged:
            b, pitch = fps[n].at(w)
            p = pad_of(n, pitch) if padded else 0
            elem = info.object(n).elem_bytes
            rows = b // max(pitch * elem, 1)
            tiles.append((n, rows * (pitch + p) * elem if p else b, pitch, p))
        smem = _align(own_smem) + sum(_align(b) for _, b, _, _ in tiles)
        return StagingOption(w, smem, tuple(tiles), why)

    if placement.windows is not None:  # the windows asked for (";windows=K")
        w = placement.windows
        o = option(w, f"the windows asked for (;windows={w})", padded=True)
        tiles = f"windows={w}: the staged tiles of {', '.join(staged)}"
        if w > finest:  # each window is a span of the warps' accesses: no more windows than accesses
            raise IllegalPlacement("shared", f"{tiles}: a warp makes fewer than {w} accesses to them, so at most "
                                             f"{finest} windows")  # fmt: skip
        if o.smem_per_block > limit or occupancy(gpu, threads, regs, o.smem_per_block).blocks_per_sm < 1:
            raise IllegalPlacement(
                "shared",
                f"{tiles} in {w} windows need {o.smem_per_block:,} bytes of shared memory per block with the kernel's "
                f"own ({gpu.name} allows {limit:,} and one block an SM)",
            )
        return StagingChoice((o,), own_smem)
    # ;pad=P: the windows are chosen on the padded tiles (a pad that does not fit takes more windows, or is refused)
    asked = placement.pad is not None
    fit = occ = narrow = None
    for w in wins:
        o = option(w, "", padded=asked)
        if o.smem_per_block > limit:  # before occupancy(), which refuses it
            continue
        blocks = occupancy(gpu, threads, regs, o.smem_per_block).blocks_per_sm
        if blocks < 1:
            continue
        if fit is None:
            fit = replace(o, why="fewest windows that fit")
        keeps = blocks >= base_blocks
        if keeps and occ is None:
            occ = replace(o, why="fewest windows that keep the occupancy")
        per_window = -(-k_max // w)  # a warp's accesses in one window
        if keeps and two_d and all(o.tiles[i][2] <= min(info.block[0], per_window) for i in two_d):
            narrow = replace(o, why="fewest windows whose 2D tiles are no wider than the block (the textbook tiling)")
        if occ is not None and (narrow is not None or not two_d):
            break
    if fit is None:
        finest = option(wins[-1], "", padded=asked)
        raise IllegalPlacement(
            "shared",
            f"the staged tiles of {', '.join(staged)} need {finest.smem_per_block:,} bytes of shared memory per block "
            f"with the kernel's own, even split into {wins[-1]} windows of one access per warp; {gpu.name} allows "
            f"{limit:,} per block",
        )
    options = (fit,) if occ is None or occ.windows == fit.windows else (fit, occ)
    if narrow is not None and all(narrow.windows != o.windows for o in options):
        options += (narrow,)
    if asked:
        p = placement.pad
        said = f"the padded tiles of ;pad={p}" if p else "unpadded (;pad=0)"
        return StagingChoice(tuple(replace(o, why=f"{o.why}, {said}") for o in options), own_smem)
    # the tool's choice: the windows are chosen on unpadded tiles, each weighed against itself with the padding that
    # leaves the fewest bank conflicts, where that pads a row and still fits; the faster is kept
    for o in tuple(options):
        padded = option(o.windows, "", padded=True)
        if (
            any(t[3] for t in padded.tiles)
            and padded.smem_per_block <= limit
            and occupancy(gpu, threads, regs, padded.smem_per_block).blocks_per_sm >= 1
        ):
            pads = ", ".join(f"{t[0]} by {t[3]}" for t in padded.tiles if t[3])
            options += (replace(padded, why=f"{o.why}, rows padded against bank conflicts ({pads})"),)
    return StagingChoice(options, own_smem)


@dataclass(frozen=True)
class Costs:
    """Instructions of the staging code (possibly fractional: an unrolled copy shares its address arithmetic):
    per staged element row of a warp by source space and copy form, per written-back element row by form, and
    per barrier. Forms: "1d" (a 1D tile), "2d" (a 2D tile by the 2D loop), "flat" (a 2D tile by the flattened
    loop of a 1D block)."""

    stage: dict[tuple[str, str], float]
    """(source space, form) -> instructions."""
    writeback: dict[str, float]
    barrier: int
    copy_unroll: int = 1
    """How nvcc unrolls a copy loop of compile-time step and bound (``traces.staging.StagedObject.copy_unroll``)."""
    copy_tail: int = 0
    """Or how many of a tile row's last iterations it batches (``traces.staging.StagedObject.copy_tail``)."""
    copy_rows: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Source space -> that loop's instructions a tile row (``traces.staging.StagedObject.copy_rows``)."""


FORMS = ("1d", "2d", "flat")


def costs(gpu: Gpu) -> Costs:
    """The staging code's instruction costs on ``gpu`` (``placement.addressing.staging_cost``, unrolled forms)."""
    c = addressing.staging_cost(gpu.arch)

    def by_form(loop: addressing.StagingLoop) -> tuple[float, float, float]:
        return loop.unrolled_1d, loop.unrolled_2d, loop.unrolled_flat

    sources = ("global", "texture1d", "readonly")
    stage = {(s, f): v for s in sources for f, v in zip(FORMS, by_form(c.load(s)))}
    wb = dict(zip(FORMS, by_form(c.writeback)))
    rows = {s: astuple(r) for s in sources if (r := c.rows(s)) is not None}
    return Costs(stage=stage, writeback=wb, barrier=c.barrier, copy_unroll=c.copy_unroll, copy_tail=c.copy_tail,
                 copy_rows=rows)  # fmt: skip


def copy_form(info: traces.KernelInfo, name: str, pitch: int) -> str:
    """The copy form of one object's tile (a key of ``Costs``): as ``traces.staging.copy_columns`` copies it."""
    if info.object(name).shape is None:
        return "1d"
    return "2d" if ts.copy_columns(info.block, max(pitch, 1), True) > 0 else "flat"


def plan(facts: StagingFacts, gpu: Gpu, placement: Placement, option: StagingOption,
         own_smem: int) -> list[ts.StagedObject]:  # fmt: skip
    """The ``traces.staging`` plan of one option: tiles above the kernel's own arrays, in placement order."""
    cost = costs(gpu)
    spaces = dict(placement.spaces)
    out = []
    base = _align(own_smem)
    for name, tile_bytes, pitch, pad in option.tiles:
        a = facts.access(name)
        wb = facts.writeback(name)
        source = STAGING_SOURCE[spaces[name]]
        form = copy_form(facts.info, name, pitch)
        out.append(ts.StagedObject(
            obj=a.obj, source=source, length=-(-max(a.ordinals, 1) // option.windows), shared_base=base, pitch=pitch,
            load=a.loads > 0, writeback=wb, int_per_element=cost.stage[(source, form)],
            writeback_int_per_element=cost.writeback[form] if wb != "none" else 0.0,
            vector_bytes=ts.VECTOR_BYTES if placement.unrolled else 0,
            copy_unroll=cost.copy_unroll if placement.unrolled else 1,
            copy_tail=cost.copy_tail if placement.unrolled else 0,
            copy_rows=cost.copy_rows.get(source, ()) if placement.unrolled and form == "2d" else (), pad=pad,
        ))  # fmt: skip
        base += _align(tile_bytes)
    return out


__all__ = ["Costs", "StagingChoice", "StagingFacts", "StagingOption", "choose", "copy_form", "costs", "plan"]
