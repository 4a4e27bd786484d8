"""Global atomics per L2 sector: how often each sector is updated, for the contention bound.

Global atomics and reductions are done at the L2 (``_hierarchy_kernels.walk``), where the updates of one
sector are serialized: the slice reads, modifies and writes the sector, and the next update of it waits.
The lanes of one warp-instruction that fall in one sector go to the L2 together and count as one update,
except that lanes on the same word take one update each (CUDA C++ Programming Guide, "Atomic Functions",
and Nsight's "Memory Statistics - Atomics": a warp's read-modify-writes of one location "are all
serialized"). The kernel then lasts at least the longest chain, the most updates of one sector times the
time between two of them (``placement.hms.t_atomic``).

On an H100 (h100-placements, variants-run1.csv) a histogram's global-atomics time over these updates of
its busiest sector is 11.76 ns an update at 256 bins and 11.75 at 512. Counting a warp's lanes in a
sector as one update gives 12.8 and 12.2 ns, counting each lane 8.2 and 9.7, counting updates of 128-B
lines 8.4 and 5.6: those do not hold across the bin counts. The privatized histogram's write-back (one
update a block on each sector, 8 lanes on 8 words) runs at 9.5-9.9 ns an update: the bound is 20 % high
there.

:class:`AtomicSectors` takes the rows a group at a time, in any order (the count is a sum), in memory
bounded by the sectors updated, not by the rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from traces.codes import ATOMIC, GLOBAL

ROWS_PER_PIECE = 1 << 16
"""Rows whose sectors are gathered at once: 65,536 x 32 sectors of 8 bytes = 16 MiB at most."""
DENSE_SPAN = 1 << 22
"""Sectors spanning fewer than this (128 MiB of addresses) are counted with one bincount (32 MiB at most),
more with a sort."""


@numba.njit(cache=True, nogil=True)
def row_sectors(rows, op, space, mask, addr, sector_bytes, out):  # pragma: no cover - numba
    """The updates of each global atomic or reduction row among ``rows``, one entry (the sector) per update, into
    ``out`` (room for 32 a row); returns how many were written. A row updates each sector its lanes fall in as
    many times as the most lanes on one address in it: once where the lanes' addresses differ, k times where k
    lanes add to one word (those read-modify-writes are serialized)."""
    n = 0
    lanes = np.empty(32, np.int64)
    for t in range(rows.shape[0]):
        r = rows[t]
        if op[r] < ATOMIC or space[r] != GLOBAL:
            continue
        m = mask[r]
        k = 0
        for lane in range(32):
            if (m >> lane) & 1:
                a = np.int64(addr[r, lane])
                j = k  # insertion into the row's sorted addresses
                while j > 0 and lanes[j - 1] > a:
                    lanes[j] = lanes[j - 1]
                    j -= 1
                lanes[j] = a
                k += 1
        i = 0
        while i < k:
            sector = lanes[i] // sector_bytes
            passes = 0
            while i < k and lanes[i] // sector_bytes == sector:
                run = 1
                while i + run < k and lanes[i + run] == lanes[i]:
                    run += 1
                passes = max(passes, run)
                i += run
            for _ in range(passes):
                out[n] = sector
                n += 1
    return n


@dataclass(frozen=True)
class AtomicContention:
    """The global atomic updates the L2 serializes (:func:`row_sectors`): ``updates`` in all, over ``sectors``
    distinct sectors, at most ``max_updates`` of them on one sector."""

    updates: int = 0
    sectors: int = 0
    max_updates: int = 0


class AtomicSectors:
    """Counts the updates of each sector by global atomics and reductions, fed a group of rows at a time."""

    def __init__(self, sector_bytes: int):
        if sector_bytes <= 0:
            raise ValueError(f"sector_bytes must be positive, got {sector_bytes}")
        self.sector_bytes = int(sector_bytes)
        self._keys = np.empty(0, np.int64)
        self._counts = np.empty(0, np.int64)

    def feed(self, op: np.ndarray, space: np.ndarray, mask: np.ndarray, addr: np.ndarray) -> None:
        """Add the global atomic and reduction rows among these (``addr``: one row of 32 lanes each)."""
        sel = np.flatnonzero((op >= ATOMIC) & (space == GLOBAL))
        for start in range(0, sel.shape[0], ROWS_PER_PIECE):
            idx = sel[start : start + ROWS_PER_PIECE]
            out = np.empty(32 * idx.shape[0], np.int64)
            n = row_sectors(idx, op, space, mask, addr, self.sector_bytes, out)
            if not n:
                continue
            sec = out[:n]
            lo, hi = int(sec.min()), int(sec.max())
            if hi - lo < DENSE_SPAN:  # a few arrays' sectors (a histogram's bins): count them densely
                dense = np.bincount(sec - lo, minlength=hi - lo + 1)
                keys = np.flatnonzero(dense)
                self._merge(keys + lo, dense[keys].astype(np.int64))
            else:
                keys, counts = np.unique(sec, return_counts=True)
                self._merge(keys, counts.astype(np.int64))

    def _merge(self, keys: np.ndarray, counts: np.ndarray) -> None:
        if not self._keys.shape[0]:
            self._keys, self._counts = keys, counts
            return
        merged, inverse = np.unique(np.concatenate((self._keys, keys)), return_inverse=True)
        total = np.zeros(merged.shape[0], np.int64)
        np.add.at(total, inverse, np.concatenate((self._counts, counts)))
        self._keys, self._counts = merged, total

    def result(self) -> AtomicContention:
        c = self._counts
        return AtomicContention(int(c.sum()), int(c.shape[0]), int(c.max()) if c.shape[0] else 0)
