"""What ``placement.rank`` and ``placement.evaluate`` return: frozen results with ``to_dict`` and ``to_frame``.

``to_dict()`` is the ``--json`` document of ``placement rank`` / ``placement evaluate``
(the command prints exactly it), ``to_frame()`` the same rows as a pandas DataFrame,
``text()`` what the command prints without ``--json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .textout import evaluation_text, rank_text
from .uncertainty import MODEL_RATIO_ERROR, apart

if TYPE_CHECKING:  # pragma: no cover
    import pandas

    from .explain import Explanation
    from .hints import Hint
    from .hms import Evaluation

# Columns of to_frame(), in order (the Terms fields a table can hold; dicts stay in to_dict()).
FRAME_COLUMNS = ("rank", "placement", "moved", "time_ns", "speedup", "predicted_ns", "within_model_error", "t_comp",
                 "t_mem", "t_overlap", "t_lsu", "issued_instructions", "addressing_delta", "mem_requests",
                 "dram_requests", "amat", "dram_lat", "mwp", "cwp", "itilp", "itmlp", "n", "blocks_per_sm",
                 "smem_per_block")  # fmt: skip


@dataclass(frozen=True)
class Placed:
    """One evaluated placement beside the sample: the model's evaluation and why it differs."""

    rank: int | None
    """Its place in the ranking (1 = fastest), None for the sample or a single evaluation."""
    label: str
    """The moved objects, ``M=C,N=R`` ("sample" when none moved)."""
    evaluation: Evaluation
    explanation: Explanation

    @property
    def placement(self) -> dict[str, str]:
        return self.evaluation.target.placement

    @property
    def time_ns(self) -> float:
        return self.evaluation.target.time_ns

    @property
    def speedup(self) -> float:
        return self.evaluation.speedup

    @property
    def within_model_error(self) -> bool:
        """Whether this placement's predicted time is within the model's error of the sample's."""
        return not apart(self.time_ns, self.evaluation.sample.time_ns)

    def row(self) -> dict[str, Any]:
        """The JSON row: every term of the evaluation, the speedup, the label and the reasons."""
        from .explain import moved_events

        e, t = self.evaluation, self.evaluation.target
        d = {
            "placement": t.placement, "label": self.label, "time_ns": t.time_ns, "speedup": e.speedup,
            "t_comp": t.t_comp, "t_mem": t.t_mem, "t_overlap": t.t_overlap, "bound": t.bound, "predicted_ns": e.predicted_ns,
            "within_model_error": self.within_model_error,
            "moved": moved_events(e.sample, t), "reasons": self.explanation.as_dict(),
        }  # fmt: skip
        d.update({k: v for k, v in t.as_dict().items() if k not in d})
        return d

    def frame_row(self) -> dict[str, Any]:
        t = self.evaluation.target
        d = {k: getattr(t, k) for k in FRAME_COLUMNS if hasattr(t, k) and k != "placement"}
        full = ",".join(f"{k}={v}" for k, v in t.placement.items())
        return d | {"rank": self.rank, "placement": full, "moved": self.label, "time_ns": t.time_ns,
                    "speedup": self.speedup, "predicted_ns": self.evaluation.predicted_ns,
                    "within_model_error": self.within_model_error}  # fmt: skip


def _frame(rows: list[dict[str, Any]]) -> "pandas.DataFrame":
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    frame["rank"] = frame["rank"].astype("Int64")  # the sample's is <NA>
    return frame


@dataclass(frozen=True)
class EvaluationResult:
    """One placement's prediction (``placement.evaluate``)."""

    kernel: str
    gpu: str
    target: Placed
    sample: Placed
    overlap_trained: bool
    hints: tuple[Hint, ...] | None = None
    """The CUDA changes (``hints=True``), object by object."""
    gpu_config: Any = field(default=None, repr=False, compare=False)
    blocks: tuple[int, int] | None = None
    """The launch's blocks and the trace's (``KernelInfo.launch_ctas``, ``traced_ctas``): the Blocks line's why."""

    @property
    def time_ns(self) -> float:
        return self.target.time_ns

    @property
    def speedup(self) -> float:
        return self.target.speedup

    def to_dict(self) -> dict[str, Any]:
        """The ``placement evaluate --json`` document."""
        d = self.target.evaluation.as_dict()
        d |= {"label": self.target.label, "within_model_error": self.target.within_model_error,
              "model_ratio_error": MODEL_RATIO_ERROR, "reasons": self.target.explanation.as_dict()}  # fmt: skip
        if self.hints is not None:
            d["hints"] = [h.as_dict() for h in self.hints]
        return d

    def to_frame(self) -> "pandas.DataFrame":
        """Sample and target, one row each, the terms as columns."""
        frame = _frame([self.sample.frame_row(), self.target.frame_row()])
        frame.index = ["sample", "target"]
        return frame

    def text(self) -> str:
        return evaluation_text(self)


@dataclass(frozen=True)
class RankResult:
    """The ranked placements of a kernel on a GPU (``placement.rank``)."""

    kernel: str
    gpu: str
    trace: str | None
    """The trace file, when one was given by path."""
    strategy: str
    sample: Placed
    ranking: tuple[Placed, ...]
    evaluations: int
    """Placements evaluated exactly by the model."""
    legal_placements: int | None
    """How many legal placements exist (None: too many to count)."""
    candidates: int
    """Placements the single-object rules allow (the product of each object's spaces): a bound on the legal ones."""
    excluded: dict[str, dict[str, str]]
    """Object -> space -> why moving it there alone is illegal."""
    surrogate: dict[str, int]
    overlap_trained: bool
    overlap_source: str
    hints: tuple[Hint, ...] | None = None
    """The CUDA changes for the best placement (``hints=True``)."""
    hints_incomplete: dict[str, str] = field(default_factory=dict)
    """Label -> why, for the best placements (``api.HINTS_CHECKED``) whose code changes cannot be pasted as is
    (``hints=True``; empty otherwise)."""
    hints_pasteable: str | None = None
    """Where the best placement's code changes cannot be pasted as is: the label of the best ranked placement
    whose can (None where none of the ranking's can, where the best's can, or without ``hints=True``)."""
    accesses: dict[str, int] = field(default_factory=dict)
    """Warp-level accesses of each object in the trace."""
    gpu_config: Any = field(default=None, repr=False, compare=False)
    blocks: tuple[int, int] | None = None
    """The launch's blocks and the trace's (``KernelInfo.launch_ctas``, ``traced_ctas``): the Blocks line's why."""

    @property
    def best(self) -> Placed:
        return self.ranking[0] if self.ranking else self.sample

    def uncertainty(self) -> list[str]:
        """What the ranking can and cannot tell apart, given the model's error (``placement.uncertainty``)."""
        from .uncertainty import notes

        return notes(self.sample.time_ns, [p.time_ns for p in self.ranking], [p.label for p in self.ranking])

    def to_dict(self) -> dict[str, Any]:
        """The ``placement rank --json`` document."""
        d = {
            "kernel": self.kernel, "gpu": self.gpu,
            "sample": self.sample.row() | {"speedup": 1.0},
            "ranking": [p.row() | {"rank": p.rank} for p in self.ranking],
            "evaluations": self.evaluations, "legal_placements": self.legal_placements,
            "candidates": self.candidates, "excluded": self.excluded, "surrogate": self.surrogate,
            "strategy": self.strategy, "overlap_source": self.overlap_source, "overlap_trained": self.overlap_trained,
            "model_ratio_error": MODEL_RATIO_ERROR, "uncertainty": self.uncertainty(),
        }  # fmt: skip
        if self.hints is not None:
            d["hints"] = {"placement": self.best.label, "objects": [h.as_dict() for h in self.hints],
                          "incomplete": dict(self.hints_incomplete), "pasteable": self.hints_pasteable}  # fmt: skip
        return d

    def to_frame(self) -> "pandas.DataFrame":
        """One row per ranked placement and one for the sample (rank None), the terms as columns."""
        rows = [p.frame_row() for p in self.ranking]
        if not any(p.label == self.sample.label for p in self.ranking):
            rows.append(self.sample.frame_row())
        return _frame(rows)

    def text(self) -> str:
        return rank_text(self)


__all__ = ["EvaluationResult", "FRAME_COLUMNS", "Placed", "RankResult"]
