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
"""

from __future__ import annotations

import weakref
from typing import Sequence

import numpy as np

_copies: dict[int, tuple[weakref.ref, weakref.ref]] = {}
"""id of an array a stream held -> (the array, its copy), both weak: a column fed to several streams is copied once."""


def _copy_once(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` of its own (C order), the one made before while ``a`` and that copy are alive."""
    hit = _copies.get(id(a))
    if hit is not None and hit[0]() is a:
        c = hit[1]()
        if c is not None:
            return c
    c = np.array(a, order="C", copy=True)
    key = id(a)
    _copies[key] = (weakref.ref(a), weakref.ref(c, lambda ref: _forget(key, ref)))
    return c


def _forget(key: int, ref: weakref.ref) -> None:
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

    def column(self, j: int) -> np.ndarray:
        """Column ``j`` of every row, one array (the piece's own where there is one piece)."""
        if len(self.pieces) == 1:
            return self.pieces[0][j]
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


class HeldRows:
    """Groups of rows appended in order and taken back as :class:`Rows`.

    A group is held as it came while it is the only one; once a second comes (a wave longer than a group), every
    group held is a copy (see the module): a wave within one group, as in most traces of many waves, is never copied.
    """

    def __init__(self):
        self._pieces: list[tuple[np.ndarray, ...]] = []
        self._copied = True  # every piece held is the holder's own or a copy
        self.rows = 0

    def __len__(self) -> int:
        return self.rows

    def append(self, cols: tuple[np.ndarray, ...], owned: bool = False) -> None:
        """Hold a group's columns; ``owned``: arrays no one else holds (just gathered), kept as they are."""
        n = cols[0].shape[0]
        if not n:
            return
        if self._pieces and not self._copied:
            self._pieces[0] = tuple(_copy_once(c) for c in self._pieces[0])
            self._copied = True
        if not owned:
            if self._pieces:
                cols = tuple(_copy_once(c) for c in cols)
            else:
                self._copied = False
        self._pieces.append(tuple(cols))
        self.rows += n

    def take(self) -> Rows:
        """The rows held, in the order appended; empties the holder."""
        pieces, self._pieces, self._copied, self.rows = self._pieces, [], True, 0
        return Rows(pieces)


__all__ = ["HeldRows", "Rows"]
