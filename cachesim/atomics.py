"""Global atomics at the L2: how many serialized updates each atomic unit does, for the contention bound.

Global atomics and reductions are done at the L2 (``_hierarchy_kernels.walk``), by atomic units that each serve an
interleave of the address space and do one update after another. A warp-instruction updates each 32-byte sector its
lanes fall in, once where the lanes' words differ and k times where k lanes add to one word (those
read-modify-writes are serialized: CUDA C++ Programming Guide, "Atomic Functions"); the unit serving the sector
does them one after the other, also those of other sectors it serves. The kernel then lasts at least the busiest
unit's chain (``placement.hms.t_atomic``: its updates times the interval between two, ``memory.l2_atomic_interval_ns``).

Which unit serves an address: ``unit_bytes`` of the address space at a time, round-robin over ``units``
(``memory.l2_atomic_unit_bytes``; 0, the default, counts each sector alone, as this module did before the H100's
measurements). Measured on an H100 (``benchmarks/atomic_contention.py``, 26 Nov 2026: every warp of 528 x 256 threads
adding 1 to the same words, ns per warp-instruction of the grid, REDG and ATOMG alike):

- lanes on one word: 0.91, 1.61, 3.09, 6.03, 11.92, 23.64 ns for 1, 2, 4, 8, 16, 32 lanes: 0.74 ns a lane;
- 32 lanes over 2, 4, 8 words of one sector (16, 8, 4 on each): 11.88, 6.04, 2.52 ns: the most lanes on one word;
- 32 lanes on word 0 of 2, 4, 8 sectors of one 256-byte block: 23.73, 23.74, 23.96 ns: the sectors one after the
  other (32 updates); one lane on each of 32 words over 8 sectors (256 B): 6.14 ns (8 updates);
- one lane on each of 32 sectors (1 KiB): 11.17 ns, 15.2 updates at 0.733 ns: two units share the KiB, so a unit
  serves 512 bytes at a time; a warp on its own sector (the grid over 1 MiB), 32 lanes on one word: 0.61 ns a
  warp-instruction, 32 x 0.733 / 0.61 = 38 units at work (the H100's 40 memory channels).

With 512 bytes over 40 units and 0.733 ns an update (``placement calibrate``'s same-address rate, 1.365 G lane
updates a second), a histogram of 2^24 values into 256 bins is bound at 4,280 us (measured 4,329 us) and one of 2^20
values into 512 bins at 162 us (measured 165 us): neither was fitted.

:class:`AtomicSectors` takes the rows a group at a time, in any order (the count is a sum), in memory bounded by
the units (or sectors) updated, not by the rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from traces.codes import ATOMIC, GLOBAL

NUMBA_DEPS = "8b842204114c01c0"  # its imports' sources, for numba's cache (traces.numba_cache)

ROWS_PER_PIECE = 1 << 16
"""Rows whose sectors are gathered at once: 65,536 x 32 sectors of 8 bytes = 16 MiB at most."""
DENSE_SPAN = 1 << 22
"""Sectors spanning fewer than this (128 MiB of addresses) are counted with one bincount (32 MiB at most),
more with a sort."""


@numba.njit(cache=True, nogil=True)
def row_sectors(rows, op, space, mask, addr, sector_bytes, unit_bytes, units, out):  # pragma: no cover - numba
    """The updates of each global atomic or reduction row among ``rows``, one entry per update, into ``out`` (room
    for 32 a row); returns how many were written. A row updates each sector its lanes fall in as many times as the
    most lanes on one address in it: once where the lanes' addresses differ, k times where k lanes add to one word
    (those read-modify-writes are serialized). The entry is the unit serving the sector, (address // unit_bytes)
    mod units, or the sector itself where ``unit_bytes`` is 0."""
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
            key = sector if unit_bytes == 0 else ((sector * sector_bytes) // unit_bytes) % units
            for _ in range(passes):
                out[n] = key
                n += 1
    return n


@dataclass(frozen=True)
class AtomicContention:
    """The global atomic updates the L2 serializes (:func:`row_sectors`): ``updates`` in all, over ``sectors``
    distinct atomic units (sectors, where no unit interleave is given), at most ``max_updates`` of them on one."""

    updates: int = 0
    sectors: int = 0
    max_updates: int = 0


class AtomicSectors:
    """Counts the updates of each atomic unit (or sector) by global atomics and reductions, fed a group of rows at a
    time (module docstring: ``unit_bytes`` of the address space at a time over ``units``; 0, each sector alone)."""

    def __init__(self, sector_bytes: int, unit_bytes: int = 0, units: int = 1):
        if sector_bytes <= 0:
            raise ValueError(f"sector_bytes must be positive, got {sector_bytes}")
        if unit_bytes < 0 or (unit_bytes and (unit_bytes % sector_bytes or units < 1)):
            raise ValueError(f"unit_bytes must be 0 or a multiple of sector_bytes over units >= 1, got "
                             f"{unit_bytes} over {units}")  # fmt: skip
        self.sector_bytes = int(sector_bytes)
        self.unit_bytes = int(unit_bytes)
        self.units = int(units)
        self._keys = np.empty(0, np.int64)
        self._counts = np.empty(0, np.int64)

    def feed(self, op: np.ndarray, space: np.ndarray, mask: np.ndarray, addr: np.ndarray) -> None:
        """Add the global atomic and reduction rows among these (``addr``: one row of 32 lanes each)."""
        sel = np.flatnonzero((op >= ATOMIC) & (space == GLOBAL))
        for start in range(0, sel.shape[0], ROWS_PER_PIECE):
            idx = sel[start : start + ROWS_PER_PIECE]
            out = np.empty(32 * idx.shape[0], np.int64)
            n = row_sectors(idx, op, space, mask, addr, self.sector_bytes, self.unit_bytes, self.units, out)
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
