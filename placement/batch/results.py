"""Result rows, the resumable parts folder, the experiment metadata and the agreement with measurements."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from traces.atomic import atomic_path
from traces.errors import InputError, shown

from .. import __version__
from ..hms import Evaluation
from ..placements import Placement
from .plan import Plan, Task

log = logging.getLogger(__name__)


METADATA_KEY = b"placement.batch"


LEADING = (
    "entry", "kernel", "gpu", "placement", "rank", "model_ns", "predicted_ns", "prediction_basis", "measured_ns",
    "error", "abs_error", "kendall_tau", "top1_hit", "n_measured", "speedup", "sample_ns", "placement_full",
    "entry_index", "gpu_index", "position", "trace", "task",
)  # fmt: skip


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


def _row(task: Task, ev: Evaluation, sample: Placement, rank: int | None, position: int) -> dict[str, Any]:
    t = ev.target
    asked = task.placement if task.placement is not None else Placement(())  # ";windows=K;unrolled": the code measured
    label = Placement(tuple(t.placement.items()), asked.windows, asked.unrolled, asked.pad).label(sample)
    measured_sample = task.measured_sample_ns if task.measured_sample_ns is not None else ev.measured_sample_ns
    if measured_sample is not None and ev.sample.cycles > 0:
        predicted, basis = measured_sample * t.cycles / ev.sample.cycles, "measured sample"
    else:
        predicted, basis = t.time_ns, "model"
    err = predicted / task.measured_ns - 1.0 if task.measured_ns is not None else None
    row = {
        "task": task.key,
        "entry": task.entry,
        "entry_index": task.entry_index,
        "kernel": ev.kernel,
        "gpu": ev.gpu,
        "gpu_index": task.gpu_index,
        "trace": task.trace_label,
        "position": position,
        "placement": label,
        "placement_full": ",".join(f"{n}={s}" for n, s in t.placement.items()),
        "rank": rank,
        "model_ns": t.time_ns,
        "predicted_ns": predicted,
        "prediction_basis": basis,
        "measured_ns": task.measured_ns,
        "error": err,
        "abs_error": abs(err) if err is not None else None,
        "speedup": ev.speedup,
        "sample_ns": ev.sample.time_ns,
    }
    terms = _flatten({k: v for k, v in t.as_dict().items() if k not in ("placement", "time_ns")})
    row.update(terms)
    return row


def parts_dir(output: str | os.PathLike) -> Path:
    out = Path(output)
    return out.parent / (out.stem + ".parts")


def _part_name(chunk: Sequence[Task]) -> str:
    return hashlib.sha1("\n".join(t.key for t in chunk).encode()).hexdigest()[:20] + ".parquet"


def experiment(plan_: Plan) -> dict[str, Any]:
    s = plan_.suite
    return {
        "tool": "gpu-placement",
        "version": __version__,
        "suite": {"path": s.path, "resolved": str(Path(s.path).resolve()), "name": s.name, "sha256": s.sha256},
        "gpus": [plan_.gpu_names[g] for g in s.gpus],
        "gpu_configs": s.gpus,
        "gpu_override": s.gpu_override,
        "entries": len(s.entries),
        "tasks": len(plan_.tasks),
        "options": s.options_doc,
    }


def parse_experiment(raw: str | bytes | None) -> dict[str, Any] | None:
    """The experiment in ``raw`` (a results file's metadata, a parts folder's experiment.json), None where it holds
    none a run wrote: nothing, not UTF-8, not JSON, not a JSON object."""
    try:
        found = json.loads(raw) if raw else None
    except ValueError:  # UnicodeDecodeError and JSONDecodeError both
        return None
    return found if isinstance(found, dict) else None


def read_experiment(path: str | os.PathLike) -> dict[str, Any] | None:
    """The experiment a results file records (None when it has none a run wrote: :func:`parse_experiment`)."""
    md = pq.read_schema(path).metadata or {}
    return parse_experiment(md.get(METADATA_KEY))


def _refuse_other_suite(found: dict[str, Any] | None, where: str, exp: dict[str, Any], output) -> None:
    if found is None:
        raise InputError(f"{where}: not a results file of `placement batch` (no {METADATA_KEY.decode()} metadata that "
                         f"a run wrote); write to another -o")  # fmt: skip
    old = found.get("suite") if isinstance(found.get("suite"), dict) else {}
    if old.get("sha256") != exp["suite"]["sha256"]:
        raise InputError(
            f"{where} holds results of suite {old.get('path')!r} with sha256 {old.get('sha256')}, but "
            f"{exp['suite']['path']!r} has sha256 {exp['suite']['sha256']}; resuming needs the same suite: "
            f"write to another -o, or delete {output} and {parts_dir(output)} to start over"
        )
    if found.get("gpu_configs", exp["gpu_configs"]) != exp["gpu_configs"]:
        were = found.get("gpus") or found.get("gpu_configs")
        were = ", ".join(map(str, were)) if isinstance(were, (list, dict)) else shown(were)
        raise InputError(
            f"{where} holds results on {were}, but this run prices "
            f"on {', '.join(exp['gpus'])}; resuming needs the same GPUs: write to another -o, or delete {output} and "
            f"{parts_dir(output)} to start over"
        )
    if found.get("version") != exp["version"]:
        log.warning("%s was written by gpu-placement %s; this is %s", where, found.get("version"), exp["version"])


def done_tasks(output: str | os.PathLike) -> frozenset[str]:
    """The task keys the results file ``output`` and its parts folder hold, from their ``task`` column alone; none
    from a file that cannot be read. A hint for the plan (it writes no trace for an entry whose tasks are all
    done): the run checks the files properly (same suite, readable) before it skips a task."""
    out = Path(output)
    files = [out] if out.is_file() else []
    if parts_dir(out).is_dir():
        files += sorted(parts_dir(out).glob("*.parquet"))
    keys: set[str] = set()
    for f in files:
        try:
            keys.update(k for k in pq.read_table(f, columns=["task"]).column("task").to_pylist() if k)
        except (pa.ArrowException, KeyError, OSError, ValueError):  # as the run's own read (``placement.batch._run``)
            continue
    return frozenset(keys)


ROW_KEYS = {"task": str, "entry_index": int, "gpu_index": int, "position": int}
"""The columns a run reads back from every row of a results file or part, and their types: the task a row is of,
and the suite order the combine sorts the rows in."""


class UnusableRows(ValueError):
    """Rows read back from a results file or part that a run cannot combine (a column missing or of another type, text
    that is not UTF-8): what a run wrote has them all."""


def _read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a results file or part, each with :data:`ROW_KEYS` of their types, else :class:`UnusableRows`."""
    try:
        rows = pq.read_table(path).to_pylist()
    except UnicodeDecodeError as exc:
        raise UnusableRows(f"text that is not UTF-8 ({exc.reason})") from None
    for i, r in enumerate(rows):
        for key, kind in ROW_KEYS.items():
            v = r.get(key)
            if not isinstance(v, kind) or isinstance(v, bool):
                what = "no value" if v is None else f"{shown(v)}, not {'an integer' if kind is int else 'a string'}"
                raise UnusableRows(f"row {i}: {key}: {what}")
    return rows


def _write_table(rows: list[dict[str, Any]], path: Path, metadata: dict[str, Any] | None) -> None:
    """Rows -> Parquet, atomically; columns in LEADING order, then as they first appear."""
    names = list(dict.fromkeys(c for r in rows for c in r))
    names = [c for c in LEADING if c in names] + [c for c in names if c not in LEADING]
    table = pa.table({c: pa.array([r.get(c) for r in rows]) for c in names})
    if metadata is not None:
        table = table.replace_schema_metadata({METADATA_KEY: json.dumps(metadata, sort_keys=True).encode()})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def _agreement(rows: list[dict[str, Any]]) -> None:
    """Add kendall_tau, top1_hit and n_measured to every row of one (entry, GPU) group."""
    from scipy.stats import kendalltau

    m = [r for r in rows if r.get("measured_ns") is not None]
    tau = top1 = None
    if len(m) >= 2:
        pred = [r["predicted_ns"] for r in m]
        meas = [r["measured_ns"] for r in m]
        t = kendalltau(pred, meas).statistic
        tau = None if t is None or math.isnan(t) else float(t)
        best_pred = min(range(len(m)), key=lambda i: pred[i])
        top1 = meas[best_pred] == min(meas)
    for r in rows:
        r["kendall_tau"], r["top1_hit"], r["n_measured"] = tau, top1, len(m)


@dataclass(frozen=True)
class BatchResult:
    output: str
    experiment: dict[str, Any]
    rows: int
    computed: int
    """Tasks evaluated in this run."""
    skipped: int
    """Tasks whose rows were already present (resumed)."""
    summary: list[dict[str, Any]]
    """One item per (entry, GPU)."""
    overall: dict[str, Any]


def _scored(r: dict[str, Any]) -> bool:
    """Whether row ``r``'s error says something of the model: it has a measured time and is not the sample placement
    whose measured time the predictions are scaled to (``prediction_basis`` "measured sample": its error is 0 by
    construction)."""
    return r.get("abs_error") is not None and not (
        r.get("prediction_basis") == "measured sample" and r.get("placement") == "sample"
    )


def _summarize(rows: list[dict[str, Any]]) -> tuple[list[dict], dict]:
    groups: OrderedDict[tuple, list[dict]] = OrderedDict()
    for r in rows:
        groups.setdefault((r["entry_index"], r["gpu_index"]), []).append(r)
    out = []
    for g in groups.values():
        best = min(g, key=lambda r: r["predicted_ns"])
        errs = [r["abs_error"] for r in g if _scored(r)]
        out.append({
            "entry": g[0]["entry"], "kernel": g[0]["kernel"], "gpu": g[0]["gpu"], "rows": len(g),
            "best": best["placement"], "best_speedup": best["speedup"], "best_predicted_ns": best["predicted_ns"],
            "n_measured": g[0]["n_measured"],
            "mean_abs_error": sum(errs) / len(errs) if errs else None,
            "kendall_tau": g[0]["kendall_tau"], "top1_hit": g[0]["top1_hit"],
        })  # fmt: skip
    errs = [r["abs_error"] for r in rows if _scored(r)]
    taus = [s["kendall_tau"] for s in out if s["kendall_tau"] is not None]
    hits = [s["top1_hit"] for s in out if s["top1_hit"] is not None]
    overall = {
        "rows": len(rows),
        "measured": sum(1 for r in rows if r.get("abs_error") is not None),
        "scored": len(errs),
        "mean_abs_error": sum(errs) / len(errs) if errs else None,
        "mean_kendall_tau": sum(taus) / len(taus) if taus else None,
        "top1_hits": sum(hits) if hits else None,
        "ranked_groups": len(hits),
    }
    return out, overall
