"""Rewrite a trace to a target placement (Huang & Li Sec. III-B and III-E).

The same accesses, as the target placement would issue them:

- the ``space`` of every row of a moved object becomes the target space;
- addresses stay the same between off-chip spaces (G, T, 2T, C): the object keeps
  its virtual range (Sec. III-E). 2T rows keep their linear element addresses; the
  cache simulator maps them through the 2D texture layout of the object's shape;
- an object moved into shared memory is given the block-window range just above
  the highest offset in use (the sample's ``smem_per_block``), aligned to
  ``SHARED_ALIGN``; every block sees the same offsets;
- an object moved out of shared memory becomes one off-chip array holding every
  block's copy, above the highest off-chip address in use, aligned to
  ``OFFCHIP_ALIGN`` (cudaMalloc's alignment): block b's access to offset x goes to
  base + b * size + x. This is the paper's "array index in shared memory replaced
  with a global thread ID": for ``s[threadIdx.x]`` it is ``g[blockIdx.x * blockDim.x
  + threadIdx.x]``;
- per row, the change in addressing instructions (Sec. III-B): the cost of
  computing the element's address in the target space minus that in the sample
  space, from a per-object table of costs by space the caller supplies
  (``placement.addressing`` reads it from configs/addressing.toml), optionally one
  table per access context (an index computed from the thread's position, or a
  constant offset from the previous access: ``traces.context``), chosen per row;
- objects listed as ``staged`` keep their rows here (``traces.staging`` moves them
  into shared memory afterwards) but their rows' deltas are already those of shared
  memory.

Replays (causes 1-4 of Eq. 3) depend on coalescing and caches, so they are counted
by ``cachesim`` on the rewritten rows, not here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Collection, Mapping

import numba as nb
import numpy as np

from .errors import InputError
from .io import Trace
from .launch import SHARED_ALIGN
from .schema import SHARED, SPACE_CODES, SPACE_NAMES, SPACE_SHORT, KernelInfo, ObjectInfo

NUMBA_DEPS = "bd369cf1b7868797"  # its imports' sources, for numba's cache (traces.numba_cache)

OFFCHIP_ALIGN = 256
_PROGRAMMABLE = ("global", "texture1d", "texture2d", "constant", "readonly", "shared")

# Per-object address modes of the rewrite kernel.
_SAME, _INTO_SHARED, _OUT_OF_SHARED = 0, 1, 2


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


@dataclass(frozen=True)
class Layout:
    """Where each object lives under a target placement."""

    objects: tuple[ObjectInfo, ...]
    smem_per_block: int


def _normalise(info: KernelInfo, target: Mapping[int | str, str]) -> dict[int, str]:
    """Object id -> space name, from ids or names and long or short (G, T, 2T, C, S) spellings."""
    out = {}
    for key, space in target.items():
        o = None
        for cand in info.objects:
            if cand.id == key or cand.name == key:
                o = cand
        if o is None:
            raise InputError(f"target names object {key!r}, which kernel {info.kernel} does not have")
        name = SPACE_SHORT.get(space, space)
        if name not in _PROGRAMMABLE:
            raise InputError(f"target space {space!r} of object {o.name!r} is not one of {', '.join(_PROGRAMMABLE)}")
        out[o.id] = name
    return out


def target_layout(info: KernelInfo, target: Mapping[int | str, str]) -> Layout:
    """Objects (space, base, size) and per-block shared bytes under ``target``.

    ``target`` maps object id or name -> space (``global``, ``texture1d``,
    ``texture2d``, ``constant``, ``shared`` or G, T, 2T, C, S); objects it leaves
    out stay put.
    """
    target = _normalise(info, target)
    smem = info.smem_per_block
    offchip_top = max((o.end for o in info.objects if o.space not in ("shared", "local")), default=0)
    offchip_top = _align(max(offchip_top, OFFCHIP_ALIGN), OFFCHIP_ALIGN)
    out = []
    for o in info.objects:
        t = target.get(o.id, o.space)
        if t == o.space:
            out.append(o)
        elif o.space == "local":
            raise InputError(f"object {o.name!r} is in local memory and cannot be moved")
        elif t == "shared":
            base = _align(smem, SHARED_ALIGN)
            smem = base + o.size
            out.append(replace(o, space=t, base=base))
        elif o.space == "shared":
            smem -= o.size
            size = o.size * info.ctas
            out.append(replace(o, space=t, base=offchip_top, size=size))
            offchip_top = _align(offchip_top + size, OFFCHIP_ALIGN)
        else:
            out.append(replace(o, space=t))
    return Layout(objects=tuple(out), smem_per_block=max(smem, 0))


@dataclass(frozen=True)
class Rewritten:
    """A trace in a target placement and its per-row addressing-instruction deltas."""

    trace: Trace
    addr_inst_delta: np.ndarray
    """int16 per row: addressing instructions of the target minus the sample (Sec. III-B)."""
    moved: tuple[int, ...]
    """Ids of the objects whose space changed."""


@nb.njit(cache=True, nogil=True)
def _rewrite_rows(obj, space, cta, mask, addr, new_space, cost_space, mode, shift, slice_bytes, cost, context, out_space,
                  out_addr, delta, copy_addr):  # fmt: skip
    """Row pass: new space, cost deltas and, when ``copy_addr``, new addresses into ``out_addr``.

    ``cost`` is (contexts, objects, spaces); ``context`` gives each row's first index.
    """
    n = obj.shape[0]
    for i in range(n):
        o = obj[i]
        s = space[i]
        if o < 0 or (new_space[o] < 0 and cost_space[o] < 0):
            out_space[i] = s
            delta[i] = 0
            if copy_addr:
                for lane in range(32):
                    out_addr[i, lane] = addr[i, lane]
            continue
        t = new_space[o] if new_space[o] >= 0 else s
        out_space[i] = t
        ct = cost_space[o] if cost_space[o] >= 0 else t
        c = context[i]
        delta[i] = cost[c, o, ct] - cost[c, o, s]
        if new_space[o] < 0:
            if copy_addr:
                for lane in range(32):
                    out_addr[i, lane] = addr[i, lane]
            continue
        if not copy_addr:
            continue
        md = mode[o]
        m = mask[i]
        for lane in range(32):
            a = addr[i, lane]
            if (m >> lane) & 1:
                if md == 1:
                    a = np.uint64(np.int64(a) + shift[o])
                elif md == 2:
                    a = np.uint64(np.int64(a) + shift[o] + np.int64(cta[i]) * slice_bytes[o])
            out_addr[i, lane] = a


@dataclass(frozen=True)
class _Tables:
    """What the row pass needs of a target placement: per object id, its new space (-1: stays), the space
    whose addressing cost it pays (-1: its row's), its address mode, shift and per-block slice, and the
    (contexts, objects, spaces) cost table."""

    layout: Layout
    new_space: np.ndarray
    cost_space: np.ndarray
    mode: np.ndarray
    shift: np.ndarray
    slice_bytes: np.ndarray
    cost: np.ndarray
    moved: tuple[int, ...]


def _layout(info: KernelInfo, target: Mapping[int | str, str] | Layout) -> Layout:
    """``target`` as a Layout: converted here (``target_layout``), or already converted by the caller."""
    if not isinstance(target, Layout):
        return target_layout(info, target)
    if [(o.id, o.name) for o in target.objects] != [(o.id, o.name) for o in info.objects]:
        raise ValueError(f"the layout's objects are not those of kernel {info.kernel}")
    return target


def _tables(info: KernelInfo, target: Mapping[int | str, str] | Layout, addr_cost: np.ndarray | None,
            staged: Collection[int | str]) -> _Tables:  # fmt: skip
    layout = _layout(info, target)
    n_ids = info.n_ids
    new_space = np.full(max(n_ids, 1), -1, dtype=np.int8)
    cost_space = np.full(max(n_ids, 1), -1, dtype=np.int8)
    for key in staged:
        o = info.object(key)
        if layout.objects[info.objects.index(o)].space != o.space:
            raise ValueError(f"object {o.name!r} is staged, so the target must leave it where it is")
        cost_space[o.id] = SHARED
    mode = np.zeros(max(n_ids, 1), dtype=np.int8)
    shift = np.zeros(max(n_ids, 1), dtype=np.int64)
    slice_bytes = np.zeros(max(n_ids, 1), dtype=np.int64)
    moved = []
    for old, new in zip(info.objects, layout.objects):
        if old.space == new.space:
            continue
        moved.append(old.id)
        new_space[old.id] = SPACE_CODES[new.space]
        if new.space == "shared":
            mode[old.id] = _INTO_SHARED
            shift[old.id] = new.base - old.base
        elif old.space == "shared":
            mode[old.id] = _OUT_OF_SHARED
            shift[old.id] = new.base - old.base
            slice_bytes[old.id] = old.size
    shape = (max(n_ids, 1), len(SPACE_NAMES))
    if addr_cost is None:
        cost = np.zeros((1,) + shape, dtype=np.int16)
    else:
        cost = np.ascontiguousarray(addr_cost, dtype=np.int16)
        if cost.ndim == 2:
            cost = cost[None]
        if cost.shape[1:] != shape:
            raise ValueError(f"addr_cost must have shape {shape} or (contexts, *{shape}), got {cost.shape}")
    return _Tables(layout, new_space, cost_space, mode, shift, slice_bytes, cost, tuple(moved))


def _contexts(n: int, context: np.ndarray | None, cost: np.ndarray) -> np.ndarray:
    if context is None:
        return np.zeros(n, np.int8)
    if context.shape != (n,) or (n and int(context.max()) >= cost.shape[0]):
        raise ValueError(f"context must be {n} row indices into the {cost.shape[0]} cost tables")
    return np.ascontiguousarray(context, np.int8)


def rewrite(trace: Trace, target: Mapping[int | str, str] | Layout, addr_cost: np.ndarray | None = None,
            staged: Collection[int | str] = (), context: np.ndarray | None = None) -> Rewritten:  # fmt: skip
    """The accesses of ``trace`` under the target placement.

    ``target`` maps object id or name -> space (see ``target_layout``), or is the ``Layout``
    ``target_layout`` gave for this kernel (a placement converted once, by whoever checked it:
    ``placement.placements.Legality.layout``); ``addr_cost`` is an
    (objects, spaces) table of addressing instructions per element access by object id and
    space code, or a (contexts, objects, spaces) stack of them with ``context`` giving each
    row's (int8); zeros when None. ``staged`` objects (ids or names) keep their rows, with
    the deltas of shared memory. Works on a whole trace or on one batch of ``iter_batches``.
    """
    info = trace.info
    tb = _tables(info, target, addr_cost, staged)
    n = len(trace)
    context = _contexts(n, context, tb.cost)
    out_space = np.empty(n, dtype=np.int8)
    delta = np.empty(n, dtype=np.int16)
    moves_addresses = bool((tb.mode != _SAME).any())
    # Without a move to or from shared memory the addresses are the sample's: share
    # them (they may be Arrow's read-only buffer) and give the kernel a dummy to write.
    out_addr = np.empty_like(trace.addr) if moves_addresses else np.empty((0, 32), np.uint64)
    _rewrite_rows(
        trace.obj, trace.space, trace.cta, trace.mask, trace.addr,
        tb.new_space, tb.cost_space, tb.mode, tb.shift, tb.slice_bytes, tb.cost, context, out_space,
        out_addr, delta, moves_addresses,
    )  # fmt: skip
    if not moves_addresses:
        out_addr = trace.addr
    layout = tb.layout
    new_info = replace(info, objects=layout.objects, smem_per_block=layout.smem_per_block)
    cols = trace.columns()
    cols["space"] = out_space
    cols["addr"] = out_addr
    return Rewritten(trace=Trace(**cols, info=new_info, start=trace.start), addr_inst_delta=delta, moved=tb.moved)


def addr_inst_delta(trace: Trace, target: Mapping[int | str, str] | Layout, addr_cost: np.ndarray | None = None,
                    staged: Collection[int | str] = (), context: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """``rewrite(...).addr_inst_delta`` alone (the same row pass, without the rewritten trace): int16 per row.

    A streamed evaluator takes each row's delta in every context before the contexts are known."""
    tb = _tables(trace.info, target, addr_cost, staged)
    n = len(trace)
    context = _contexts(n, context, tb.cost)
    out_space = np.empty(n, dtype=np.int8)
    delta = np.empty(n, dtype=np.int16)
    _rewrite_rows(
        trace.obj, trace.space, trace.cta, trace.mask, trace.addr,
        tb.new_space, tb.cost_space, tb.mode, tb.shift, tb.slice_bytes, tb.cost, context, out_space,
        np.empty((0, 32), np.uint64), delta, False,
    )  # fmt: skip
    return delta


__all__ = [
    "Layout",
    "Rewritten",
    "addr_inst_delta",
    "rewrite",
    "target_layout",
    "SHARED",
    "SHARED_ALIGN",
    "OFFCHIP_ALIGN",
]
