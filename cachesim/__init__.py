"""cachesim: the memory hierarchy of gpu-placement (coalescing, caches, DRAM).

Data flows traces -> cachesim -> placement: this package reads trace arrays and
never imports ``placement``. Its configuration is its own frozen dataclass,
:class:`HierarchyConfig` (with a :class:`DramConfig`), which ``placement`` builds from
a ``placement.gpu.Gpu``.

- :func:`simulate_cache`: one cache from a GPGPU-Sim cache string, hit per access;
- :func:`coalesce`: per warp-instruction transactions and replays (Huang & Li Sec. III-B);
- :func:`simulate_hierarchy`: a whole trace through L1 / texture / constant / L2 to DRAM;
  :class:`HierarchyStream` the same fed a group of rows at a time, in bounded memory;
- :func:`row_buffer`, :func:`decode`: DRAM banks, rows and row-buffer outcomes (Sec. III-C2);
- :class:`AtomicSectors`: global atomic updates per L2 atomic unit or sector (the hierarchy's ``atomics``).
"""

from .atomics import AtomicContention, AtomicSectors
from .cache import simulate_cache
from .coalesce import CoalesceConfig, Coalesced, coalesce
from .dram import DramConfig, DramResult, RowBufferStream, decode, parse_mapping, row_buffer
from .errors import CachesimError, HierarchyConfigError, MappingError, SpecError
from .hierarchy import (
    LEVELS,
    REPLAY_BANK_CONFLICT,
    REPLAY_CAUSES,
    REPLAY_CONST_DIVERGENCE,
    REPLAY_CONST_MISS,
    REPLAY_WORDS,
    SPACES,
    DramPiece,
    HierarchyConfig,
    HierarchyResult,
    HierarchyStream,
    HierarchyTotals,
    schedule,
    simulate_hierarchy,
)
from .spec import CacheSpec, parse_spec

__all__ = [
    "LEVELS",
    "REPLAY_BANK_CONFLICT",
    "REPLAY_CAUSES",
    "REPLAY_CONST_DIVERGENCE",
    "REPLAY_CONST_MISS",
    "REPLAY_WORDS",
    "SPACES",
    "AtomicContention",
    "AtomicSectors",
    "CacheSpec",
    "CachesimError",
    "CoalesceConfig",
    "Coalesced",
    "DramConfig",
    "DramPiece",
    "DramResult",
    "HierarchyConfig",
    "HierarchyConfigError",
    "HierarchyResult",
    "HierarchyStream",
    "HierarchyTotals",
    "MappingError",
    "RowBufferStream",
    "SpecError",
    "coalesce",
    "decode",
    "parse_mapping",
    "parse_spec",
    "row_buffer",
    "schedule",
    "simulate_cache",
    "simulate_hierarchy",
]
