"""T_overlap (Huang & Li Eq. 11-12): a linear model of the overlap ratio, trained.

T_overlap_ratio = g e_g + c e_c + t e_t + s e_s + r e_r + w N + c0   (Eq. 11)
T_overlap = T_overlap_ratio * T_mem                                   (Eq. 12)

The events are the paper's, each divided by the placement's memory requests (the
paper models "the event ratio instead of the absolute event numbers"):
e_g = L2 misses of global accesses + global requests; e_c = constant cache misses
+ constant requests; e_t = texture cache misses + texture requests; e_s = shared
bank conflicts + shared requests; e_r = DRAM row-buffer misses + conflicts; N is the
warps per SM. The ratio is clipped to [0, 1] and T_overlap to at most T_comp: an
overlap can hide neither more than the memory time nor more than the compute time.

Without trained coefficients the model falls back to GPUPerf's analytical overlap
(Sim et al. Eq. 16-17), and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traces.errors import InputError, shown
from traces.tomlfile import load_toml

FEATURES = ("e_global", "e_constant", "e_texture", "e_shared", "e_row", "warps", "const")
# The paper's names of the coefficients, in FEATURES order.
COEFFICIENT_NAMES = ("g", "c", "t", "s", "r", "w", "c0")
# A coefficient beyond this is not a fit of Eq. 11 (the ratio is clipped to [0, 1] and the
# features are event rates and warp counts); it is refused so products stay finite.
MAX_COEFFICIENT = 1e12


@dataclass(frozen=True)
class OverlapModel:
    """Trained coefficients of Eq. 11 (``coef_``, in FEATURES order)."""

    coef_: tuple[float, ...]
    gpu: str = ""
    source: str = ""

    def ratio(self, features: np.ndarray) -> float:
        return float(np.clip(np.dot(np.asarray(features, float), self.coef_), 0.0, 1.0))

    def t_overlap(self, features: np.ndarray, t_comp: float, t_mem: float) -> float:
        """Eq. 12, bounded by T_comp and T_mem."""
        return min(self.ratio(features) * t_mem, t_comp, t_mem)

    def to_toml(self) -> str:
        lines = [
            "# T_overlap coefficients of Huang & Li Eq. 11 (placement train).",
            f'gpu = "{self.gpu}"',
            f'source = "{self.source}"',
            "[coefficients]",
        ]
        lines += [f"{n} = {v!r}  # {f}" for n, f, v in zip(COEFFICIENT_NAMES, FEATURES, self.coef_)]
        return "\n".join(lines) + "\n"


def fit(x: np.ndarray, y: np.ndarray, gpu: str = "", source: str = "") -> OverlapModel:
    """Least-squares fit of Eq. 11 to observed overlap ratios ``y`` (one row of FEATURES per sample)."""
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if x.ndim != 2 or x.shape[1] != len(FEATURES) or x.shape[0] != y.shape[0]:
        raise ValueError(f"expected x of shape (n, {len(FEATURES)}) and y of shape (n,)")
    if x.shape[0] < 2:
        raise InputError(
            f"{source + ': ' if source else ''}training needs at least 2 measured placements, got {x.shape[0]}"
        )
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return OverlapModel(tuple(float(v) for v in coef), gpu=gpu, source=source)


def load(path) -> OverlapModel:
    """Read coefficients written by ``placement train``."""
    p = str(path)
    d = load_toml(p)
    co = d.get("coefficients")
    if not isinstance(co, dict):
        raise InputError(f"{p}: coefficients: missing table [coefficients]")
    unknown = sorted(set(co) - set(COEFFICIENT_NAMES))
    if unknown:
        raise InputError(f"{p}: coefficients.{unknown[0]}: unknown coefficient; known: {', '.join(COEFFICIENT_NAMES)}")
    values = []
    for n in COEFFICIENT_NAMES:
        v = co.get(n)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise InputError(f"{p}: coefficients.{n}: expected a number, got {shown(v)}")
        if not (isinstance(v, float) or abs(v) <= MAX_COEFFICIENT) or not abs(float(v)) <= MAX_COEFFICIENT:
            raise InputError(
                f"{p}: coefficients.{n}: expected a finite number of magnitude at most {MAX_COEFFICIENT:g}, got {shown(v)}"
            )
        values.append(float(v))
    gpu = d.get("gpu", "")
    if not isinstance(gpu, str):
        raise InputError(f"{p}: gpu: expected a GPU name, got {shown(gpu)}")
    return OverlapModel(tuple(values), gpu=gpu, source=p)


def save(model: OverlapModel, path) -> None:
    """Write coefficients atomically."""
    from traces.atomic import write_text

    write_text(path, model.to_toml())
