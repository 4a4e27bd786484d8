"""Deterministic trace generators for the papers' benchmark kernels.

A generator is a function ``(*size, *block) -> (columns, KernelInfo)`` that emits,
in the trace format, every warp-level memory instruction the kernel performs for
that input and launch configuration, with its data objects in the sample
placement the papers use and its instruction totals from the kernel's SASS
recipe (``recipes.toml``, see ``_common``). Output is identical bit for bit
between runs (fixed seeds where a kernel needs random input).

``REGISTRY`` maps each kernel name to a :class:`KernelSpec` (description, paper
source, size and block parameters with defaults and meanings); ``generate(name,
size, block)`` runs one, ``trace(name, size, block)`` gives it as a :class:`traces.Trace`,
``write(name, path, size, block)`` writes its trace.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import InputError
from ..launch import launch_problem
from ..schema import KernelInfo

log = logging.getLogger(__name__)


MAX_PARAM = 2**31 - 1
"""The largest size or block parameter: the benchmark kernels take their sizes as ``int``."""


@dataclass(frozen=True)
class Param:
    name: str
    default: int
    meaning: str
    minimum: int = 1


@dataclass(frozen=True)
class KernelSpec:
    """One benchmark kernel: what it is, where it comes from, how it is sized."""

    name: str
    description: str
    paper: str
    placement: str
    size: tuple[Param, ...]
    block: tuple[Param, ...]
    func: Callable[..., tuple[dict[str, np.ndarray], KernelInfo]]

    def resolve(self, size: Sequence[int] | None, block: Sequence[int] | None) -> dict[str, int]:
        values = {}
        for kind, params, given in (("size", self.size, size), ("block", self.block, block)):
            given = list(given or [])
            if len(given) > len(params):
                names = ", ".join(p.name for p in params) or "none"
                raise InputError(
                    f"{self.name}: --{kind} takes at most {len(params)} value(s) ({names}), got {len(given)}"
                )
            for i, p in enumerate(params):
                v = given[i] if i < len(given) else p.default
                if not isinstance(v, (int, np.integer)) or v < p.minimum:
                    raise InputError(f"{self.name}: --{kind} {p.name} must be an integer >= {p.minimum}, got {v!r}")
                if v > MAX_PARAM:
                    raise InputError(f"{self.name}: --{kind} {p.name} must be at most {MAX_PARAM:,} (the kernels take "
                                     f"their sizes as int), got {v:,}")  # fmt: skip
                values[p.name] = int(v)
        return values


def _p(name: str, default: int, meaning: str, minimum: int = 1) -> Param:
    return Param(name, default, meaning, minimum)


def _specs() -> dict[str, KernelSpec]:
    from . import elementwise as ew

    specs = [
        KernelSpec("vecadd", "v = a + b, one float per thread", "Huang & Li Fig. 2(a)", "a, b, v: global",
                   (_p("n", 1 << 16, "elements"),), (_p("block", 256, "threads per block"),), ew.vecadd),
        KernelSpec("triad", "C = A + s*B, one float per thread", "SHOC Triad; Huang & Li Table IV", "A, B, C: global",
                   (_p("n", 1 << 16, "elements (rounded up to whole blocks)"),), (_p("block", 256, "threads per block"),), ew.triad),
        KernelSpec("matrix_sum_normal", "S = A + B, N x N, row index from threadIdx.x (uncoalesced)",
                   "gpuperfpredict matrix_sum_normal (Amaris et al.)", "A, B, S: global",
                   (_p("N", 256, "matrix edge"),), (_p("tile", 16, "block edge (tile x tile threads)"),), ew.matrix_sum_normal),
        KernelSpec("matrix_sum_coalesced", "S = A + B, N x N, column index from threadIdx.x (coalesced)",
                   "gpuperfpredict matrix_sum_coalesced (Amaris et al.)", "A, B, S: global",
                   (_p("N", 256, "matrix edge"),), (_p("tile", 16, "block edge (tile x tile threads)"),), ew.matrix_sum_coalesced),
        KernelSpec("transpose", "odata = idata^T, naive (TILE_DIM 32, BLOCK_ROWS 8)", "CUDA SDK transposeNaive; Huang & Li Table IV",
                   "idata, odata: global", (_p("width", 256, "columns of idata (multiple of 32)", 32),
                                            _p("height", 256, "rows of idata (multiple of 32)", 32)), (), ew.transpose),
    ]  # fmt: skip
    from . import more

    specs += more.specs(_p, KernelSpec)
    from . import shoc

    specs += shoc.specs(_p, KernelSpec)
    from . import qtc

    specs.append(KernelSpec("qtc", "SHOC QTC QTC_device: one launch of quality-threshold clustering (full-storage distance matrix)",
                            "SHOC QTC; Huang & Li Table IV", "distance_matrix_txt, indr_mtrx, Ai_mask, ...: global; "
                            "dist_array, index_array: shared",
                            (_p("points", 1024, "synthetic points (SHOC size 1: 4096)", 32),
                             _p("threshold", 1, "cluster diameter threshold (SHOC sizes 1-3: 1, size 4: 4)")), (), qtc.qtc))  # fmt: skip
    return {s.name: s for s in specs}


_REGISTRY: dict[str, KernelSpec] | None = None


def registry() -> dict[str, KernelSpec]:
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _specs()
    return _REGISTRY


def names() -> list[str]:
    return list(registry())


def get(name: str) -> KernelSpec:
    reg = registry()
    if name not in reg:
        raise InputError(f"unknown benchmark kernel '{name}'; known: {', '.join(reg)}")
    return reg[name]


def generate(name: str, size: Sequence[int] | None = None, block: Sequence[int] | None = None):
    """Generate one kernel's trace: (columns, KernelInfo)."""
    spec = get(name)
    values = spec.resolve(size, block)
    t0 = time.perf_counter()
    cols, info = spec.func(**values)
    problem = launch_problem(list(info.grid), list(info.block))
    if problem:  # named by the arguments that made it, not by the file it would have gone to
        given = " ".join(f"--{k} {'x'.join(map(str, v))}" for k, v in (("size", size), ("block", block)) if v)
        raise InputError(f"{name}{' ' + given if given else ''}: {problem}")
    log.info("generated %s %s: %d rows in %.3f s", name, values, len(cols["cta"]), time.perf_counter() - t0)
    return cols, info


def trace(name: str, size: Sequence[int] | None = None, block: Sequence[int] | None = None):
    """Generate one kernel's trace as a :class:`traces.Trace` (its columns as numpy arrays)."""
    from ..io import Trace

    cols, info = generate(name, size, block)
    return Trace(**{k: np.asarray(v) for k, v in cols.items()}, info=info)


def write(name: str, path, size: Sequence[int] | None = None, block: Sequence[int] | None = None) -> KernelInfo:
    """Generate a kernel's trace and write it (validated, atomically) to ``path``."""
    from ..io import write as write_trace

    cols, info = generate(name, size, block)
    write_trace(path, cols, info)
    return info
