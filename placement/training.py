"""Training T_overlap (Huang & Li Eq. 11) on measured placements.

Each measurement is (trace of the sample placement, target placement, measured time
in ns). The model's T_comp and T_mem for that placement and the measured T give the
observed overlap ratio, (T_comp + T_mem - T_measured) / T_mem (Eq. 1 and 12); Eq.
11's coefficients are its least-squares fit on the placement's event features.
The fit is reported with its residuals and a leave-one-kernel-out error, the
paper's protocol of training and evaluating on separate kernels.
"""

from __future__ import annotations

import csv
import io
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import traces
from traces.errors import InputError
from traces.inputfile import read_text, refuse_repeated_column

from .api import require_rows
from .gpu import Gpu
from .evaluate_whole import WholeTraceEvaluator
from .hms import Options, Terms
from .overlap import FEATURES, OverlapModel, fit
from .placements import parse_placement

log = logging.getLogger(__name__)

TIME_COLUMNS = ("measured_ns", "time_ns")
MAX_TIME_NS = 1e18  # 31 years: a measured time beyond is a typo or junk


@dataclass(frozen=True)
class Sample:
    """One measured placement with the model's terms for it."""

    kernel: str
    trace: str
    placement: str
    measured_ns: float
    terms: Terms

    @property
    def features(self) -> np.ndarray:
        return np.array([self.terms.events[f] for f in FEATURES])

    def observed_ratio(self, gpu: Gpu) -> float:
        """(T_comp + T_mem - T) / T_mem, T the measured time less the launch the model puts in it
        (``Terms.t_launch``, 0 where the configuration has no launch cost), over ``Terms.blocks_scale`` (the
        trace's blocks' share of it)."""
        t = (gpu.ns_to_cycles(self.measured_ns) - self.terms.t_launch) / self.terms.blocks_scale
        return (self.terms.t_comp + self.terms.t_mem - t) / self.terms.t_mem if self.terms.t_mem else 0.0

    def predict_ns(self, model: OverlapModel, gpu: Gpu) -> float:
        """The time with the fitted T_overlap (bounded by T_comp - W_serial, as ``hms.t_overlap``), scaled to
        the launch's blocks, and the evaluation's launch."""
        t = self.terms
        hidden = model.t_overlap(self.features, t.t_comp - t.w_serial, t.t_mem)
        return gpu.cycles_to_ns((t.t_comp + t.t_mem - hidden) * t.blocks_scale + t.t_launch)


def read_measurements(path, gpu: Gpu, options: Options = Options()) -> list[Sample]:
    """Rows of (trace, placement, measured_ns); trace paths are relative to the CSV's folder."""
    p = Path(path)
    reader = csv.DictReader(io.StringIO(read_text(p), newline=""))
    try:
        cols = reader.fieldnames or []
        tcol = next((c for c in TIME_COLUMNS if c in cols), None)
        if "trace" not in cols or "placement" not in cols or tcol is None:
            shown = ", ".join(c[:40] for c in cols[:20]) or "none"
            raise InputError(f"{p}: expected columns trace, placement and measured_ns; got {shown}")
        refuse_repeated_column(p, cols)
        unused = [c for c in cols if c not in ("trace", "placement", tcol)]
        if unused:  # a notes or gpu column is common; say it is not read rather than refuse the file
            log.warning("%s: %s %s %s not read (the model takes trace, placement and %s)", p,
                        "columns" if len(unused) > 1 else "column", ", ".join(repr(c[:40]) for c in unused[:20]),
                        "are" if len(unused) > 1 else "is", tcol)  # fmt: skip
        rows = []
        for r in reader:
            if None in r:  # DictReader's restkey: the row has more fields than the header
                raise InputError(f"{p} line {reader.line_num}: {len(cols) + len(r[None])} fields, the header has "
                                 f"{len(cols)}")  # fmt: skip
            rows.append((reader.line_num, r))
    except csv.Error as exc:
        # line_num counts the lines of the rows read whole; the bad one starts on the next
        raise InputError(f"{p} line {reader.line_num + 1}: not a CSV row ({exc})") from None
    evaluators: dict[str, WholeTraceEvaluator] = {}
    out = []
    for i, r in rows:
        where = f"{p} line {i}"
        for c in ("trace", tcol):
            if not r.get(c):
                raise InputError(f"{where}: {c}: missing")
        if "\0" in r["trace"]:
            raise InputError(f"{where}: trace: a path holding a NUL character")
        tpath = Path(os.path.abspath(p.parent / r["trace"]))
        try:
            measured = float(r[tcol])
        except (TypeError, ValueError):
            raise InputError(f"{where}: {tcol}: expected a number of ns, got {r[tcol][:40]!r}") from None
        if not 0 < measured <= MAX_TIME_NS:
            raise InputError(f"{where}: {tcol}: expected a time in ns in (0, {MAX_TIME_NS:g}], got {r[tcol][:40]!r}")
        key = str(tpath)
        if key not in evaluators:
            try:
                t = traces.read(tpath)
                require_rows(str(tpath), len(t))
                evaluators[key] = WholeTraceEvaluator(t, gpu, options)
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from None
        ev = evaluators[key]
        try:
            placement = parse_placement(r["placement"] or "", ev.info)
            terms = ev.evaluate(placement).target
        except InputError as exc:  # a CSV's column, not the command line's --place
            msg = str(exc)
            raise InputError(f"{where}: {'placement ' + msg[8:] if msg.startswith('--place ') else msg}") from None
        out.append(Sample(ev.info.kernel, key, r["placement"], measured, terms))
    if not out:
        raise InputError(f"{p}: no measurements")
    return out


@dataclass(frozen=True)
class TrainingReport:
    model: OverlapModel
    residuals_pct: list[float]
    """(predicted - measured) / measured x 100, per sample, with the model fitted on all."""
    loko_mape: float | None
    """Leave-one-kernel-out mean absolute percentage error (None with a single kernel)."""
    loko_per_kernel: dict[str, float]


def train(samples: list[Sample], gpu: Gpu, source: str = "") -> TrainingReport:
    x = np.array([s.features for s in samples])
    y = np.array([s.observed_ratio(gpu) for s in samples])
    model = fit(x, y, gpu=gpu.name, source=source)
    if len(samples) < len(FEATURES):
        log.warning("%d measured placements for Eq. 11's %d coefficients: the fit is underdetermined (it fits its "
                    "own points, whatever they are, as far as T_overlap's bounds let the residuals show); measure at least %d placements, of 2 kernels or more "
                    "for the leave-one-kernel-out error", len(samples), len(FEATURES), len(FEATURES))  # fmt: skip
    residuals = [100.0 * (s.predict_ns(model, gpu) - s.measured_ns) / s.measured_ns for s in samples]
    kernels = sorted({s.kernel for s in samples})
    per_kernel: dict[str, float] = {}
    if len(kernels) > 1:
        for k in kernels:
            train_idx = [i for i, s in enumerate(samples) if s.kernel != k]
            if len(train_idx) < 2:
                continue
            m = fit(x[train_idx], y[train_idx], gpu=gpu.name)
            errs = [abs(s.predict_ns(m, gpu) - s.measured_ns) / s.measured_ns for s in samples if s.kernel == k]
            per_kernel[k] = 100.0 * float(np.mean(errs))
    loko = float(np.mean(list(per_kernel.values()))) if per_kernel else None
    return TrainingReport(model, residuals, loko, per_kernel)
