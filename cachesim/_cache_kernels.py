"""numba kernels of one set-associative cache (GPGPU-Sim's ``tag_array``, timing-free).

A cache is a row of ``cfg`` (int64, layout below) and a slice of the shared
``state`` array (uint64, shape (4, lines), or 6 with FILL and HINT): row TAG holds the block address of each
way, VALID its valid-sector mask (0 = invalid way), DIRTY its dirty-sector mask,
STAMP the last access (LRU) or allocation (FIFO) instant, FILL (the hierarchy's per-SM
caches only; these kernels never touch it) the issue slot of its last fill and HINT (the hierarchy's
caches) a way hint per way slot: each set's slots are a direct-mapped table from a line's hash to the way
(its offset in the set + 1) that last held the line, which a hit finds without scanning the set
(:func:`access_rows`). Several caches of one kind
(one L1 per SM, one L2 per slice) are instances laid end to end from ``cfg[BASE]``.
Kernels take typed arrays, never raise and never validate: ``cache.py`` does that.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from traces._numba import LEAF

NUMBA_DEPS = "3e5555b321990317"  # its imports' sources, for numba's cache (traces.numba_cache)

# cfg layout
NSETS, ASSOC, LINE_LOG2, SECT_LOG2, NSECT, REPL, WRITE, WALLOC, INDEX, NSETS_LOG2, BASE, PRESENT, IPOLY_BITS = range(13)
IPOLY_TAB = 16
CFG_LEN = IPOLY_TAB + 64

# codes stored in cfg
LRU, FIFO = 0, 1
W_RO, W_WB, W_WT, W_WE, W_LOCAL_WB = range(5)
WA_NONE, WA_ALLOC, WA_FETCH, WA_LAZY = range(4)
IDX_LINEAR, IDX_XOR, IDX_IPOLY, IDX_FERMI = range(4)

# state rows
TAG, VALID, DIRTY, STAMP, FILL, HINT = range(6)
GOLDEN = 0x9E3779B97F4A7C15  # Fibonacci hashing's multiplier (2^64 / the golden ratio): the way hint's slot

# access outcomes
MISS, HIT, SECTOR_MISS = 0, 1, 2


@nb.njit(cache=True, nogil=True, inline="always")
def set_index(cfg, addr):
    """Set of a byte address under the cache's index function (GPGPU-Sim ``hash_function``)."""
    line_log2 = cfg[LINE_LOG2]
    nsets = cfg[NSETS]
    a = np.uint64(addr)
    index = np.int64((a >> np.uint64(line_log2)) & np.uint64(nsets - 1))
    f = cfg[INDEX]
    if f == IDX_LINEAR:
        return index
    higher = a >> np.uint64(line_log2 + cfg[NSETS_LOG2])
    if f == IDX_XOR:
        return index ^ np.int64(higher & np.uint64(nsets - 1))
    if f == IDX_IPOLY:
        # XOR of x^(k+j) mod P for each set bit j of the truncated higher bits
        h = index
        for j in range(cfg[IPOLY_BITS]):
            if (higher >> np.uint64(j)) & np.uint64(1):
                h ^= cfg[IPOLY_TAB + j]
        return h
    # Fermi hash (Nugteren et al., HPCA 2014): bits 7-11 XOR bits 13,14,15,17,19; bit 12 on top for 64 sets
    lower = np.int64((a >> np.uint64(line_log2)) & np.uint64(0x1F))
    upper = np.int64((a >> np.uint64(13)) & np.uint64(7))
    upper |= np.int64((a >> np.uint64(17)) & np.uint64(1)) << 3
    upper |= np.int64((a >> np.uint64(19)) & np.uint64(1)) << 4
    s = lower ^ upper
    if nsets == 64:
        s |= np.int64((a >> np.uint64(12)) & np.uint64(1)) << 5
    return s


@nb.njit(cache=True, nogil=True, inline="always")
def sector_mask(cfg, addr):
    """Valid-bit mask of the sector holding ``addr`` (bit 0 for a normal line)."""
    return np.uint64(1) << ((np.uint64(addr) >> np.uint64(cfg[SECT_LOG2])) & np.uint64(cfg[NSECT] - 1))


@nb.njit(cache=True, nogil=True, inline="always")
def is_write_back(cfg, is_local):
    w = cfg[WRITE]
    return w == W_WB or (w == W_LOCAL_WB and is_local)


@nb.njit(**LEAF)
def access(cfg, state, inst, addr, smask, is_write, is_local, t):
    """:func:`access_rows` on the rows of ``state`` (with its HINT row where it has one)."""
    hint = state[HINT] if state.shape[0] > HINT else state[TAG][:0]
    return access_rows(
        cfg, state[TAG], state[VALID], state[DIRTY], state[STAMP], hint, inst, addr, smask, is_write, is_local, t
    )


@nb.njit(cache=True, nogil=True, inline="always")
def access_rows(cfg, tags, valid, dirty, stamp, hint, inst, addr, smask, is_write, is_local, t):
    """One access of cache instance ``inst``; returns (outcome, evicted dirty block, its dirty mask, way).

    ``hint`` (empty: none) is the HINT row: the way its slot for the line names is tried first, and where
    it holds the line (valid, the same tag: a line is in at most one valid way of a set) the set is not
    scanned; otherwise, and for every miss (whose victim is the oldest way), the set is. The slot is then
    pointed at the way that holds the line. The outcomes, stamps and victims are the scan's alone: a
    344-way L1 set (the A100's 4 sets of 344 ways) scanned for each of the 32 lines of an uncoalesced warp
    load made the uncoalesced naive matmul at W = 512 take 32 s to evaluate."""
    line_log2 = np.uint64(cfg[LINE_LOG2])
    assoc = cfg[ASSOC]
    first = cfg[BASE] + (inst * cfg[NSETS] + set_index(cfg, addr)) * assoc
    known = -1
    slot = -1
    if hint.shape[0] > 0:
        key = (np.uint64(addr) >> line_log2) * np.uint64(GOLDEN)
        slot = first + np.int64((key >> np.uint64(32)) % np.uint64(assoc))
        h = np.int64(hint[slot])
        if h > 0:
            k = first + h - 1
            if valid[k] != np.uint64(0) and tags[k] == (np.uint64(addr) >> line_log2) << line_log2:
                known = k
    res = _access_set(cfg, tags, valid, dirty, stamp, first, known, addr, smask, is_write, is_local, t)
    if slot >= 0 and res[3] >= 0:
        hint[slot] = np.uint64(res[3] - first + 1)
    return res


@nb.njit(cache=True, nogil=True, inline="always")
def _access_set(cfg, tags, valid, dirty, stamp, first, known, addr, smask, is_write, is_local, t):
    """:func:`access_rows` in the set whose first way is ``first``, the line in way ``known`` where that is
    known (>= 0), else found by a scan.

    ``smask`` is the mask of sectors wanted (any nonzero value for a normal line).
    Reads: a hit refreshes the LRU stamp; a sector miss fills the sectors; a miss
    evicts an invalid way if any, else the oldest stamp, and installs the line.
    Writes follow the write policy: write-back marks dirty; write-through keeps the
    line clean; write-evict invalidates the written sectors; a read-only cache
    invalidates the line and reports a miss; on a write miss the line is allocated
    only with a write-allocate policy (W, F, L). Allocation on miss and on fill give
    the same hits here, since fills are instantaneous in this timing-free model.
    The evicted block is 0 with mask 0 when nothing dirty was evicted. ``way`` is the index
    (into the state's rows) of the way that holds the line after the access, -1 when none does.
    """
    nsect = cfg[NSECT]
    full = (np.uint64(1) << np.uint64(nsect)) - np.uint64(1) if nsect < 64 else ~np.uint64(0)
    if nsect == 1:
        smask = np.uint64(1)
    line_log2 = np.uint64(cfg[LINE_LOG2])
    block = (np.uint64(addr) >> line_log2) << line_log2
    assoc = cfg[ASSOC]
    lru = cfg[REPL] == LRU
    wpol = cfg[WRITE]
    wb = is_write_back(cfg, is_local)
    zero = np.uint64(0)
    # one pass finds the way holding the line and, for a miss, the victim: the first
    # invalid way if any, else the valid way of the smallest stamp (the first on a tie).
    # The victim is the first way of the smallest key, 0 for an invalid way and stamp + 1
    # for a valid one (stamps count accesses from 1, far below 2^64 - 2), kept by selects
    # rather than branches: which way is oldest is a coin toss the branch predictor loses.
    way = known
    oldest_way = -1
    oldest = ~np.uint64(0)
    one = np.uint64(1)
    for k in range(first, first + assoc if known < 0 else first):
        v = valid[k]
        if v != zero and tags[k] == block:
            way = k
            break
        key = stamp[k] + one if v != zero else zero
        older = key < oldest
        oldest = key if older else oldest
        oldest_way = k if older else oldest_way
    if way >= 0:
        present = (valid[way] & smask) == smask
        if is_write:
            if wpol == W_RO:
                valid[way] = zero
                dirty[way] = zero
                return MISS, zero, zero, -1
            if wpol == W_WE:
                valid[way] &= ~smask
                dirty[way] &= ~smask
                return (HIT if present else SECTOR_MISS), zero, zero, way
            if lru:
                stamp[way] = np.uint64(t)
            if present:
                if wb:
                    dirty[way] |= smask
                return HIT, zero, zero, way
            if cfg[WALLOC] != WA_NONE:
                valid[way] |= smask
                if wb:
                    dirty[way] |= smask
            return SECTOR_MISS, zero, zero, way
        if present:
            if lru:
                stamp[way] = np.uint64(t)
            return HIT, zero, zero, way
        valid[way] |= smask
        if lru:
            stamp[way] = np.uint64(t)
        return SECTOR_MISS, zero, zero, way
    # line absent
    if is_write and (wpol == W_RO or cfg[WALLOC] == WA_NONE):
        return MISS, zero, zero, -1
    victim = oldest_way
    ev_block = zero
    ev_mask = zero
    if valid[victim] != zero and dirty[victim] != zero:
        ev_block = tags[victim]
        ev_mask = dirty[victim]
    tags[victim] = block
    valid[victim] = smask if nsect > 1 else full
    dirty[victim] = smask if (is_write and wb) else zero
    stamp[victim] = np.uint64(t)
    return MISS, ev_block, ev_mask, victim


@nb.njit(cache=True, nogil=True)
def run(cfg, state, addresses, writes, out):
    """Feed ``addresses`` (uint64) through cache instance 0; ``out[i]`` = outcome (MISS, HIT, SECTOR_MISS)."""
    n = addresses.shape[0]
    has_writes = writes.shape[0] == n
    tags, valid, dirty, stamp = state[TAG], state[VALID], state[DIRTY], state[STAMP]
    for i in range(n):
        a = addresses[i]
        w = has_writes and writes[i]
        out[i] = access_rows(cfg, tags, valid, dirty, stamp, tags[:0], 0, a, sector_mask(cfg, a), w, False, i + 1)[0]


@nb.njit(cache=True, nogil=True)
def run_reads(addresses, line_log2, nsets, assoc, lru, out):
    """:func:`run` for the common case, loads only on a normal-line, linearly indexed cache; ``out[i]`` = hit.

    The same outcomes as :func:`run` (LRU or FIFO, ``lru`` True or False) with the state
    of one instance held per set: ``assoc`` tags then ``assoc`` stamps side by side, a
    stamp of 0 marking an invalid way (every access's stamp is its position + 1, so a
    valid way's stamp is never 0 and stamps are distinct). The victim is the way of the
    smallest stamp, the first one on a tie, which is the first invalid way while any is
    left and the LRU (FIFO) way afterwards, as in :func:`access_rows`. A power-of-two
    set count (the spec parser's rule) makes the index a mask.
    """
    n = addresses.shape[0]
    ways = np.zeros(nsets * 2 * assoc, np.uint64)
    shift = np.uint64(line_log2)
    set_mask = np.uint64(nsets - 1)
    zero = np.uint64(0)
    for i in range(n):
        line = addresses[i] >> shift
        block = line << shift
        base = np.int64(line & set_mask) * (2 * assoc)
        sbase = base + assoc
        t = np.uint64(i + 1)
        hit = False
        for k in range(assoc):
            if ways[base + k] == block and ways[sbase + k] != zero:
                if lru:
                    ways[sbase + k] = t
                hit = True
                break
        out[i] = hit
        if not hit:
            victim = 0
            oldest = ways[sbase]
            for k in range(1, assoc):
                s = ways[sbase + k]
                if s < oldest:
                    oldest = s
                    victim = k
            ways[base + victim] = block
            ways[sbase + victim] = t
