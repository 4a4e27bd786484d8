"""cachesim: the memory hierarchy of gpu-placement (coalescing, caches, DRAM).

Data flows traces -> cachesim -> placement: this package reads trace arrays and
never imports ``placement``; its configuration is its own frozen dataclass
(:class:`HierarchyConfig`), which ``placement`` builds from a GPU configuration.
"""

from .cache import simulate_cache
from .errors import CachesimError, HierarchyConfigError, MappingError, SpecError
from .spec import CacheSpec, parse_spec

__all__ = [
    "CacheSpec",
    "CachesimError",
    "HierarchyConfigError",
    "MappingError",
    "SpecError",
    "parse_spec",
    "simulate_cache",
]
