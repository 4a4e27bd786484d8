"""The addressing context of each access: an index computed from the thread's position, or a constant offset.

How many instructions an access needs to form its address depends on the memory space
(Huang & Li Sec. III-B) and on how the address relates to the code around it. When an
access's address is a *constant offset* from the previous access of the same warp to the
same object, the compiler keeps one base register and puts the offset in the
instruction's immediate (``LDG [R2.64+0x4]``, ``LDS [R3+0x4]``, ``c[0x3][R+0x4]``): the
unrolled loops and stencils of real kernels. Some spaces cannot do that (``__ldg``'s inline
assembly takes a register address; a texture fetch an index register), so the cost of a
placement depends on the context (``configs/addressing.toml``, ``[<family>.offset]``).

An access is classified ``OFFSET`` when, at every execution of its static instruction
(``pc``), the previous access of its warp to the same object came from *another*
instruction and every lane active in both sits at the same constant distance from it,
the same distance each time; otherwise ``INDEXED`` (the first access, accesses whose
distance changes, and a rolled loop's access, where the same instruction repeats with a
pointer increment of its own).

An ``OFFSET`` access is ``PAIRED`` when, at every execution, it is also warp-uniform (every
active lane at one address), 4 bytes past a warp-uniform previous access, at an address that
is 4 mod 8: the second float of an 8-byte aligned pair, as an unrolled loop reads ``x[j]``,
``x[j + 1]`` with ``j`` the loop counter. From Turing on nvcc reads such a pair from constant
memory with one uniform-datapath load (``ULDC.64``, ``LDCU.64`` on Blackwell) where it needs
one ``LDG`` per element from global memory (``placement.hms.addr_cost_table``). The test is
per instruction because nvcc pairs only what it can prove aligned at every execution: a
convolution's 3 x 3 mask, one channel 36 bytes after the last, is read by unpaired ``ULDC``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from . import keytable
from ._kernels import one_address
from .io import Trace

NUMBA_DEPS = "384a9d03d50c4117"  # its imports' sources, for numba's cache (traces.numba_cache)

INDEXED, OFFSET, PAIRED = 0, 1, 2
CONTEXTS = ("indexed", "offset", "paired")
PAIR_SHIFT = 4
"""Bytes between the two elements of a uniform pair (two 4-byte elements, one 8-byte load)."""
PAIR_BYTES = 8
"""The alignment of a uniform pair's first element (an 8-byte load)."""


@nb.njit(cache=True, nogil=True)
def _shifts(order, cta, warp, pc, obj, mask, addr, n_ids, ok, shift, pair):
    """Per row (in ``order``): whether it is a uniform constant shift from its warp's previous row of the same object
    issued by another instruction (``ok``), that shift, and whether it is also the second of a uniform pair
    (``pair``: both rows warp-uniform, 4 bytes apart, this one at 4 mod 8)."""
    last = np.full(max(n_ids, 1), -1, np.int64)
    last_uniform = np.zeros(max(n_ids, 1), np.bool_)
    prev_g = np.int64(-1)
    for t in range(order.shape[0]):
        i = order[t]
        g = (np.int64(cta[i]) << 20) + warp[i]
        if g != prev_g:
            last[:] = -1
            prev_g = g
        o = obj[i]
        ok[i] = False
        shift[i] = 0
        pair[i] = False
        if o < 0:
            continue
        m = np.int64(mask[i])
        uniform, a0 = one_address(mask, addr, i)
        p = last[o]
        was_uniform = last_uniform[o]
        last[o] = i
        last_uniform[o] = uniform
        if p < 0 or pc[p] == pc[i]:
            continue
        both = m & np.int64(mask[p])
        if both == 0:
            continue
        first = True
        d = np.int64(0)
        same = True
        for lane in range(32):
            if (both >> lane) & 1:
                dl = np.int64(addr[i, lane]) - np.int64(addr[p, lane])
                if first:
                    d = dl
                    first = False
                elif dl != d:
                    same = False
                    break
        if same:
            ok[i] = True
            shift[i] = d
            pair[i] = uniform and was_uniform and d == PAIR_SHIFT and (a0 & np.uint64(PAIR_BYTES - 1)) == PAIR_SHIFT


@nb.njit(cache=True, nogil=True)
def _by_instruction(inv, ok, shift, pair, n_pcs, out):
    """A pc is OFFSET when every row of it is ``ok`` with one shift, PAIRED when every row is also ``pair``."""
    state = np.zeros(n_pcs, np.int8)  # 0 unseen, 1 offset so far, 2 indexed
    first = np.zeros(n_pcs, np.int64)
    unpaired = np.zeros(n_pcs, np.bool_)
    _update_pcs(inv, np.arange(inv.shape[0]), ok, shift, pair, state, first, unpaired)
    for i in range(inv.shape[0]):
        k = inv[i]
        out[i] = (OFFSET if unpaired[k] else PAIRED) if state[k] == 1 else INDEXED


def access_context(trace: Trace, order: np.ndarray | None = None) -> np.ndarray:
    """INDEXED, OFFSET or PAIRED (int8) for each row of ``trace`` (see the module docstring).

    ``order`` is the rows in (cta, warp, seq) order (computed when None).
    """
    n = len(trace)
    out = np.zeros(n, np.int8)
    if n == 0:
        return out
    if order is None:
        order = np.lexsort((trace.seq, trace.warp, trace.cta)).astype(np.int64)
    n_ids = trace.info.n_ids
    ok = np.zeros(n, np.bool_)
    shift = np.zeros(n, np.int64)
    pair = np.zeros(n, np.bool_)
    _shifts(order, trace.cta, trace.warp, trace.pc, trace.obj, trace.mask, trace.addr, n_ids, ok, shift, pair)
    pcs, inv = np.unique(trace.pc, return_inverse=True)
    _by_instruction(inv.astype(np.int64), ok, shift, pair, pcs.shape[0], out)
    return out


@nb.njit(cache=True, nogil=True)
def _update_pcs(inv, rows, ok, shift, pair, state, first, unpaired):
    """Per-pc state (0 unseen, 1 offset so far, 2 indexed; ``first``: the shift seen; ``unpaired``: a row seen that
    is not the second of a uniform pair) updated with ``rows`` (``inv[t]`` is row ``rows[t]``'s pc); the whole
    trace at once or group by group."""
    for t in range(rows.shape[0]):
        i = rows[t]
        k = inv[t]
        if not pair[i]:
            unpaired[k] = True
        if state[k] == 2:
            continue
        if not ok[i]:
            state[k] = 2
        elif state[k] == 0:
            state[k] = 1
            first[k] = shift[i]
        elif shift[i] != first[k]:
            state[k] = 2


class ContextStream:
    """:func:`access_context` over a trace fed in groups of rows, in bounded memory.

    A row's context needs the previous row of its warp and object; a pc's, every row of
    the pc. The stream works block by block (rows in block order, as the generators
    write them; within a block any order), holding back the rows of the last block of a
    group until a later block starts, and keeps one state per pc. After ``finish``,
    ``context(pc)`` gives each row's context from its pc: the same as ``access_context``
    over the whole trace.
    """

    def __init__(self, info):
        self.n_ids = info.n_ids
        self._held: list[tuple[np.ndarray, ...]] = []
        self._held_cta = -1
        self._done = 0  # blocks below this one have been taken
        self._pcs = np.zeros(0, np.int64)
        self._state = np.zeros(0, np.int8)
        self._first = np.zeros(0, np.int64)
        self._unpaired = np.zeros(0, np.bool_)

    def feed(self, group: Trace) -> None:
        n = len(group)
        if n == 0:
            return
        cols = (group.cta, group.warp, group.seq, group.pc, group.obj, group.mask, group.addr)
        lo = int(group.cta.min())
        if lo < self._held_cta:
            i = int(np.flatnonzero(group.cta < self._held_cta)[0])
            raise ValueError(f"row {group.start + i}: block {int(group.cta[i])} after block {self._held_cta}; "
                             "streamed contexts need the rows in block order")  # fmt: skip
        top = int(group.cta.max())
        if lo == top and (not self._held or top == self._held_cta):
            self._held.append(cols)
            self._held_cta = top
            return
        if self._held:
            # the last block's rows held back, with this group's rows of it (a block's worth, not the group)
            same = np.flatnonzero(group.cta == self._held_cta)
            held = tuple(np.concatenate(c) for c in zip(*self._held, (c[same] for c in cols)))
            self._take(held, self._held_cta + 1)
        self._take(cols, top)  # the group's later blocks, in place

    def finish(self) -> None:
        if self._held:
            cols = tuple(np.concatenate(c) for c in zip(*self._held))
            self._take(cols, self._held_cta + 1)

    def _take(self, cols: tuple[np.ndarray, ...], upto: int) -> None:
        cta, warp, seq, pc, obj, mask, addr = cols
        now = np.flatnonzero((cta >= self._done) & (cta < upto))  # blocks below _done were taken already
        if now.size:
            order = now[np.lexsort((seq[now], warp[now], cta[now]))].astype(np.int64)
            ok = np.zeros(cta.shape[0], np.bool_)
            shift = np.zeros(cta.shape[0], np.int64)
            pair = np.zeros(cta.shape[0], np.bool_)
            _shifts(order, cta, warp, pc, obj, mask, np.ascontiguousarray(addr), self.n_ids, ok, shift, pair)
            self._pcs, (self._state, self._first, self._unpaired), inv = keytable.positions(
                self._pcs, pc[now].astype(np.int64), (self._state, self._first, self._unpaired))  # fmt: skip
            _update_pcs(inv, now.astype(np.int64), ok, shift, pair, self._state, self._first, self._unpaired)
        keep = np.flatnonzero(cta >= upto)
        self._held = [tuple(c[keep] for c in cols)] if keep.size else []
        self._held_cta = upto
        self._done = upto

    def context(self, pc: np.ndarray) -> np.ndarray:
        """INDEXED, OFFSET or PAIRED (int8) for rows of these pcs (after ``finish``)."""
        out = np.full(pc.shape[0], INDEXED, np.int8)
        if not self._pcs.shape[0]:
            return out
        k = np.minimum(np.searchsorted(self._pcs, pc.astype(np.int64)), self._pcs.shape[0] - 1)
        offset = (self._pcs[k] == pc) & (self._state[k] == 1)
        out[offset] = np.where(self._unpaired[k[offset]], OFFSET, PAIRED)
        return out


__all__ = ["CONTEXTS", "INDEXED", "OFFSET", "PAIRED", "ContextStream", "access_context"]
