"""The rows a streamed walk holds back until their wave can be walked, read without joining them.

A streamed trace arrives in groups of some 65 k rows, each row's 32 lane addresses 256 bytes. The
walk takes a wave's rows in issue order, which interleaves every block of the wave, so it needs the
whole wave; it once joined the groups it held into one array per column first, which put the wave in
memory twice (4.3 GB resident for a W = 512 matmul of one wave and a half, 2.1 GB of addresses).
:class:`HeldRows` keeps the groups of a wave that spans several as copies, and :meth:`Rows.gather`
reads rows by their number across them, a bounded slice of the issue order at a time. Copies,
because a group read from a file is a view of the reader's buffers, which held longer than the read
cost 0.75 GB more at W = 512; one copy per column however many streams hold it (the placements of
one read are fed the same groups, rewritten where their addresses move), so they share it as they
shared the group. A wave within one group (most waves of a trace of many) is not copied.

The lane addresses of the rows held are most of their bytes (256 of a trace row's 281), and a warp's lanes
mostly lie close together in a few patterns: a holder told which column they are (``HeldRows(lanes=...)``) keeps
its copies, and the rows it is given as its own, compact: the lanes as :class:`PackedLanes` (offsets from the
row's lowest address in 2 or 4 bytes, a 16-bit pattern kept once), its other integer columns as
:class:`NarrowInts` (offsets from the column's least value in 1, 2 or 4 bytes); both exact, read back a gather at
a time. The first wave of matmul_naive at 512^2 in 16 x 16 blocks on an RTX 3090 (4,034,400 rows, 1,081 MiB as
arrays) is held in 85 MiB, 12.8x less; rows of scattered addresses cost 13 bytes more than their 256.
"""

from __future__ import annotations

import weakref
from typing import Sequence

import numpy as np

from . import _held_kernels as K


class _Compact:
    """A column held in fewer bytes than its array (``shape``, ``dtype``, ``nbytes``), read back by indexing."""

    shape: tuple[int, ...]

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self[:]
        return out if dtype is None else out.astype(dtype)


class PackedLanes(_Compact):
    """A column of lane addresses (``(n, lanes)`` uint64) in fewer bytes: each row's addresses as offsets from its
    lowest non-zero address, in 16 bits where they all fit, else 32, else as they came (``cachesim._held_kernels``);
    a lane at address 0 stays 0. Indexed by an array of row numbers, it gives those rows' addresses, exactly."""

    dtype = np.dtype(np.uint64)

    def __init__(self, addr: np.ndarray):
        a = np.ascontiguousarray(addr, np.uint64)
        if a.ndim != 2:
            raise ValueError(f"lane addresses are (rows, lanes), not {a.shape}")
        self.shape = a.shape
        self._parts = K.pack(a)

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self._parts)

    def __getitem__(self, rows) -> np.ndarray:
        n = self.shape[0]
        if isinstance(rows, np.ndarray) and rows.ndim == 1 and rows.dtype.kind in "iu":  # a gather's row numbers
            rows = rows.astype(np.int64, copy=False)
            if rows.shape[0] and (int(rows.min()) < -n or int(rows.max()) >= n):
                raise IndexError(f"row numbers out of [-{n}, {n})")
            if rows.shape[0] and int(rows.min()) < 0:
                rows = np.where(rows < 0, rows + n, rows)
        else:  # any other index numpy takes, checked as numpy checks it
            rows = np.atleast_1d(np.arange(n, dtype=np.int64)[rows])
        out = np.empty((rows.shape[0], self.shape[1]), np.uint64)
        K.unpack(rows, *self._parts, out)
        return out


class NarrowInts(_Compact):
    """A 1-D integer column as offsets from its least value in the fewest bytes that hold them (1, 2 or 4; the
    caller checks that 4 do: :func:`_narrow`). Indexed like an array, it gives the values in their own dtype."""

    def __init__(self, a: np.ndarray):
        self.dtype, self.shape = a.dtype, a.shape
        self._lo = a.min() if a.shape[0] else a.dtype.type(0)
        span = int(a.max()) - int(self._lo) if a.shape[0] else 0
        small = next(t for t in (np.uint8, np.uint16, np.uint32) if span <= np.iinfo(t).max)
        self._d = (a - self._lo).astype(small)  # modulo 2^bits: exact for a span that fits, signed or not

    @property
    def nbytes(self) -> int:
        return self._d.nbytes

    def __getitem__(self, rows) -> np.ndarray:
        out = np.atleast_1d(self._d[rows]).astype(self.dtype)
        out += self._lo
        return out


def _narrow(a: np.ndarray) -> np.ndarray | NarrowInts:
    """``a`` as :class:`NarrowInts` where that takes fewer bytes (a 1-D integer column wider than a byte whose
    values span less than 2^32), else a copy."""
    if a.ndim == 1 and a.dtype.kind in "iu" and a.dtype.itemsize > 1:
        if not a.shape[0] or int(a.max()) - int(a.min()) <= np.iinfo(np.uint32).max:
            return NarrowInts(a)
    return np.array(a, order="C", copy=True)


def _compact(a: np.ndarray, lanes: bool) -> np.ndarray | PackedLanes | NarrowInts:
    """A compact copy of ``a``: :class:`PackedLanes` for the lanes' addresses, else :func:`_narrow`."""
    return PackedLanes(a) if lanes else _narrow(a)


_copies: dict[tuple[int, int], tuple[weakref.ref, weakref.ref]] = {}
"""(id of an array a stream held, its kind of copy) -> (the array, its copy), both weak: a column fed to several
streams is copied once."""

PLAIN, COMPACT, LANES = 0, 1, 2
"""Kinds of copy (:func:`_copy_once`): a C-order array; :func:`_compact` of a column; of the lanes' addresses."""


def _copy_once(a: np.ndarray, kind: int = PLAIN) -> np.ndarray | PackedLanes | NarrowInts:
    """A copy of ``a`` of its own (``kind``: ``PLAIN``, ``COMPACT`` or ``LANES``), the one made before while ``a``
    and that copy are alive."""
    key = (id(a), kind)
    hit = _copies.get(key)
    if hit is not None and hit[0]() is a:
        c = hit[1]()
        if c is not None:
            return c
    c = np.array(a, order="C", copy=True) if kind == PLAIN else _compact(a, kind == LANES)
    _copies[key] = (weakref.ref(a), weakref.ref(c, lambda ref: _forget(key, ref)))
    return c


def _forget(key: tuple[int, int], ref: weakref.ref) -> None:
    """A copy has gone: its entry goes, unless a later array of the same id holds the key now."""
    hit = _copies.get(key)
    if hit is not None and hit[1] is ref:
        del _copies[key]


class Rows:
    """Rows in pieces (tuples of columns of equal length along the first axis), numbered across them in order."""

    def __init__(self, pieces: list[tuple[np.ndarray, ...]]):
        if not pieces:
            raise ValueError("no rows")
        self.pieces = pieces
        self.offsets = np.concatenate(([0], np.cumsum([p[0].shape[0] for p in pieces]))).astype(np.int64)
        self.n = int(self.offsets[-1])

    @property
    def compact(self) -> bool:
        """Whether a column of some piece is held compact (:class:`PackedLanes`, :class:`NarrowInts`: read it by
        :meth:`gather`)."""
        return any(isinstance(c, _Compact) for p in self.pieces for c in p)

    def column(self, j: int) -> np.ndarray:
        """Column ``j`` of every row, one array (the piece's own where there is one piece and it is an array)."""
        if len(self.pieces) == 1:
            return np.asarray(self.pieces[0][j])
        return np.concatenate([p[j] for p in self.pieces])

    def gather(self, rows: np.ndarray, columns: Sequence[int]) -> tuple[np.ndarray, ...]:
        """The rows numbered ``rows`` (any order, repeats allowed), columns ``columns``, in that order: new arrays."""
        if len(self.pieces) == 1:
            return tuple(self.pieces[0][j][rows] for j in columns)
        rows = np.asarray(rows, np.int64)
        piece = np.searchsorted(self.offsets, rows, side="right") - 1
        by = np.argsort(piece, kind="stable")
        bounds = np.searchsorted(piece[by], np.arange(len(self.pieces) + 1))
        first = self.pieces[0]
        out = tuple(np.empty((rows.shape[0],) + first[j].shape[1:], first[j].dtype) for j in columns)
        for q in np.flatnonzero(bounds[1:] > bounds[:-1]):
            sel = by[bounds[q] : bounds[q + 1]]
            local = rows[sel] - self.offsets[q]
            for o, j in zip(out, columns):
                o[sel] = self.pieces[q][j][local]
        return out


def _nbytes(cols) -> int:
    return sum(c.nbytes for c in cols)


class HeldRows:
    """Groups of rows appended in order and taken back as :class:`Rows`.

    A group is held as it came while it is the only one; once a second comes (a wave longer than a group), every
    group held is a copy (see the module): a wave within one group, as in most traces of many waves, is never copied.
    Told ``lanes``, the number of the column of lane addresses ((n, 32) uint64), the holder keeps its copies and
    the rows given as its own compact (see the module); else as arrays.
    """

    def __init__(self, lanes: int | None = None):
        self._pieces: list[tuple[np.ndarray, ...]] = []
        self._copied = True  # every piece held is the holder's own or a copy
        self._lanes = lanes
        self.rows = 0
        self.nbytes = 0
        """Bytes of the rows held (of the group held as it came too, which its reader may hold as well)."""

    def _own(self, cols: tuple[np.ndarray, ...], owned: bool) -> tuple:
        """``cols`` as the holder keeps them: copies (shared, ``_copy_once``) or, ``owned``, themselves; compact
        where it was told ``lanes``."""
        if self._lanes is None:
            return cols if owned else tuple(_copy_once(c) for c in cols)
        kinds = [LANES if j == self._lanes else COMPACT for j in range(len(cols))]
        if owned:
            return tuple(_compact(c, k == LANES) for c, k in zip(cols, kinds))
        return tuple(_copy_once(c, k) for c, k in zip(cols, kinds))

    def __len__(self) -> int:
        return self.rows

    def append(self, cols: tuple[np.ndarray, ...], owned: bool = False) -> None:
        """Hold a group's columns; ``owned``: arrays no one else holds (just gathered), kept as they are."""
        n = cols[0].shape[0]
        if not n:
            return
        if self._pieces and not self._copied:
            self.nbytes -= _nbytes(self._pieces[0])
            self._pieces[0] = self._own(self._pieces[0], False)
            self.nbytes += _nbytes(self._pieces[0])
            self._copied = True
        if self._pieces or owned:
            cols = self._own(cols, owned)
        else:
            self._copied = False
        self._pieces.append(tuple(cols))
        self.rows += n
        self.nbytes += _nbytes(cols)

    def take(self) -> Rows:
        """The rows held, in the order appended; empties the holder."""
        pieces, self._pieces, self._copied, self.rows, self.nbytes = self._pieces, [], True, 0, 0
        return Rows(pieces)


__all__ = ["HeldRows", "NarrowInts", "PackedLanes", "Rows"]
