"""Coalescing per warp-instruction and memory space (Huang & Li Sec. III-B, replay causes 1, 3, 4).

One rule per space, the one :func:`cachesim.simulate_hierarchy` follows (``_coalesce_kernels.path_of``):

- global, local and read-only: the distinct ``line_bytes`` lines and ``sector_bytes`` sectors the
  active lanes touch; replays (cause 1) = ceil(active lanes x width / transaction_bytes) - 1;
- constant: serialized over the distinct addresses of the warp; replays (cause 3) =
  distinct addresses - 1 (cause 2, one per constant-cache miss, needs the cache: see
  :mod:`cachesim.hierarchy`);
- shared: ``banks`` banks of ``bank_bytes``; the degree is the most distinct words one
  bank serves (identical words broadcast); replays (cause 4) = degree - 1;
- texture: distinct texture-cache lines; a 2D texture first maps each address through
  the tiled layout of the object's (rows, cols) shape (see ``_coalesce_kernels.tiled_address``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _coalesce_kernels as K
from .errors import HierarchyConfigError


@dataclass(frozen=True)
class CoalesceConfig:
    """Transaction geometry of one architecture."""

    sector_bytes: int = 32
    line_bytes: int = 128
    transaction_bytes: int = 128
    smem_banks: int = 32
    smem_bank_bytes: int = 4
    tex_line_bytes: int = 128

    def __post_init__(self):
        for name in ("sector_bytes", "line_bytes", "transaction_bytes", "tex_line_bytes", "smem_bank_bytes"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1 or v & (v - 1):
                raise HierarchyConfigError(name, f"expected a power of two >= 1, got {v!r}")
        if self.line_bytes % self.sector_bytes or self.line_bytes // self.sector_bytes > 64:
            raise HierarchyConfigError(
                "line_bytes", f"must be 1 to 64 sectors of {self.sector_bytes} B, got {self.line_bytes}"
            )
        if not isinstance(self.smem_banks, int) or not 1 <= self.smem_banks <= 64:
            raise HierarchyConfigError("smem_banks", f"expected 1..64 banks, got {self.smem_banks!r}")

    def params(self) -> np.ndarray:
        lg = lambda x: x.bit_length() - 1  # noqa: E731
        return np.array(
            [lg(self.line_bytes), lg(self.sector_bytes), self.transaction_bytes, self.smem_banks,
             self.smem_bank_bytes, lg(self.tex_line_bytes)], dtype=np.int64,
        )  # fmt: skip


@dataclass(frozen=True)
class Coalesced:
    """Per trace row: ``lines`` (global/local/read-only/texture lines, constant distinct addresses, or
    the shared bank-conflict degree), ``sectors`` (global/local/read-only sectors, texture lines) and
    ``replays`` (n, 5): column c is Huang & Li's replay cause c (column 0 and cause 2 stay 0)."""

    lines: np.ndarray
    sectors: np.ndarray
    replays: np.ndarray

    @property
    def replay_totals(self) -> np.ndarray:
        return self.replays.sum(axis=0)


def object_table(info) -> np.ndarray:
    """The kernels' (ids, 4) int64 table of a kernel's objects (a ``traces.KernelInfo``): base, elem_bytes,
    rows, cols (0, 0 without a 2D shape)."""
    tab = np.zeros((max(info.n_ids, 1), 4), dtype=np.int64)
    for o in info.objects:
        tab[o.id] = (o.base, o.elem_bytes, o.shape[0] if o.shape else 0, o.shape[1] if o.shape else 0)
    return tab


def coalesce(trace, config: CoalesceConfig = CoalesceConfig()) -> Coalesced:
    """Coalesce every row of a trace (a :class:`traces.Trace` or batch of one)."""
    n = len(trace)
    lines = np.zeros(n, np.int32)
    sectors = np.zeros(n, np.int32)
    replays = np.zeros((n, K.N_REPLAYS), np.int32)
    K.coalesce_rows(
        trace.space, trace.width, trace.mask, np.ascontiguousarray(trace.addr), trace.obj,
        object_table(trace.info), config.params(), lines, sectors, replays,
    )  # fmt: skip
    return Coalesced(lines, sectors, replays)
