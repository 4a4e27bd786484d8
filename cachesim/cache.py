"""One cache level on its own: :func:`simulate_cache`, and the arrays behind every cache.

``cache_config`` turns a :class:`~cachesim.spec.CacheSpec` into the int64 row the
kernels in ``_cache_kernels`` read; ``new_state`` allocates the tag store of one or
more instances.
"""

from __future__ import annotations

import logging

import numpy as np

from . import _cache_kernels as K
from .errors import CachesimError
from .spec import IPOLY, CacheSpec, parse_spec

log = logging.getLogger(__name__)

_REPL = {"L": K.LRU, "F": K.FIFO}
_WRITE = {"R": K.W_RO, "B": K.W_WB, "T": K.W_WT, "E": K.W_WE, "L": K.W_LOCAL_WB}
_WALLOC = {"N": K.WA_NONE, "W": K.WA_ALLOC, "F": K.WA_FETCH, "L": K.WA_LAZY}
_INDEX = {"L": K.IDX_LINEAR, "X": K.IDX_XOR, "P": K.IDX_IPOLY, "H": K.IDX_FERMI}


def ipoly_table(nsets: int) -> tuple[np.ndarray, int]:
    """Residues x^(k+j) mod P(x) over GF(2) for the IPOLY hash of ``nsets`` = 2^k sets.

    Returns (table of length 64, number of higher address bits used). The set of a
    line is its index bits XOR the residues of its set higher bits (Rau, ISCA 1991;
    the polynomials and truncation of GPGPU-Sim's ``ipoly_hash_function``).
    """
    poly, nbits = IPOLY[nsets]
    k = nsets.bit_length() - 1
    tab = np.zeros(64, dtype=np.int64)
    r = 1 << k  # x^k
    for j in range(nbits):
        if r >> k:
            r ^= poly
        tab[j] = r
        r <<= 1
    return tab, nbits


def cache_config(spec: CacheSpec | None, base: int = 0) -> np.ndarray:
    """The kernels' int64 configuration row of a cache (all zero, PRESENT 0, for no cache)."""
    cfg = np.zeros(K.CFG_LEN, dtype=np.int64)
    if spec is None:
        return cfg
    cfg[K.NSETS] = spec.nsets
    cfg[K.ASSOC] = spec.assoc
    cfg[K.LINE_LOG2] = spec.line.bit_length() - 1
    cfg[K.SECT_LOG2] = spec.sector.bit_length() - 1
    cfg[K.NSECT] = spec.line // spec.sector
    cfg[K.REPL] = _REPL[spec.replacement]
    cfg[K.WRITE] = _WRITE[spec.write]
    cfg[K.WALLOC] = _WALLOC[spec.write_alloc]
    cfg[K.INDEX] = _INDEX[spec.index]
    cfg[K.NSETS_LOG2] = spec.nsets.bit_length() - 1
    cfg[K.BASE] = base
    cfg[K.PRESENT] = 1
    if spec.index == "P":
        tab, nbits = ipoly_table(spec.nsets)
        cfg[K.IPOLY_TAB : K.IPOLY_TAB + 64] = tab
        cfg[K.IPOLY_BITS] = nbits
    return cfg


def new_state(lines: int) -> np.ndarray:
    """An empty tag store of ``lines`` ways (all invalid)."""
    return np.zeros((4, max(lines, 1)), dtype=np.uint64)


def simulate_cache(spec: str, addresses: np.ndarray, writes: np.ndarray | None = None) -> np.ndarray:
    """Hit (True) or miss (False) of each access to one cache described by a GPGPU-Sim cache string.

    ``addresses`` are byte addresses (any integer dtype, non-negative); ``writes``
    (bool, same length) marks stores, which follow the string's write policy (see
    ``_cache_kernels.access``; the ``L`` policy treats every write as global, so
    write-through). On a sectored cache each access wants the 32-byte sector of its
    address, and a present line lacking that sector is a miss.
    """
    s = parse_spec(spec)
    a = np.asarray(addresses)
    if a.ndim != 1:
        raise CachesimError("addresses", f"expected a one-dimensional array, got shape {a.shape}")
    if a.dtype.kind not in "iu":
        raise CachesimError("addresses", f"expected integers, got dtype {a.dtype}")
    if a.dtype.kind == "i" and a.size and a.min() < 0:
        raise CachesimError("addresses", f"expected non-negative byte addresses, got {a.min()}")
    a = np.ascontiguousarray(a, dtype=np.uint64)
    if writes is None:
        w = np.zeros(0, dtype=np.bool_)
    else:
        w = np.ascontiguousarray(np.asarray(writes), dtype=np.bool_)
        if w.shape != a.shape:
            raise CachesimError("writes", f"expected shape {a.shape} like addresses, got {w.shape}")
        if s.write == "R" and w.any():
            log.info("writes to read-only cache '%s' invalidate the line and count as misses", spec)
    if not w.any() and s.line == s.sector and s.index == "L" and s.replacement in _REPL:
        # loads only, normal lines, linear index: the specialised kernel (same outcomes as K.run)
        hits = np.empty(a.shape[0], dtype=np.bool_)
        K.run_reads(a, s.line.bit_length() - 1, s.nsets, s.assoc, s.replacement == "L", hits)
        return hits
    cfg = cache_config(s)
    state = new_state(s.nsets * s.assoc)
    out = np.empty(a.shape[0], dtype=np.int8)
    K.run(cfg, state, a, w, out)
    return out == K.HIT
