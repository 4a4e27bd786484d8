"""Batch evaluation of suites: many (kernel, GPU, placement) predictions, resumable.

A *suite* (``configs/suites/*.toml``) lists entries; each names a trace, a GPU (or
several) and the placements to evaluate, or asks for the top K of a ranking.
``run`` evaluates every (entry, GPU, placement) on an executor, writes one row per
prediction to a Parquet results file, and compares with measured times where the
suite gives them. An evaluation is a pure function of (trace, GPU, options,
placement) (DESIGN.md, "The pipeline"), so the same task function runs in local
processes or on a Dask cluster, and the rows do not depend on which.

Suite format (TOML)
-------------------
Top level (all optional but ``entry``)::

    name = "table4"                 # shown in the summary
    description = "..."
    gpu = "k80"                     # default GPU of the entries
    [options]                       # model options, as `placement evaluate` takes them
    queue = "kingman"               # kingman | kingman-paper | exact
    instruction_counting = true
    queuing = true
    even_banks = false
    overlap = "coeffs.toml"         # trained T_overlap coefficients (path relative to the suite)

Each ``[[entry]]``::

    id = "spmv"                     # unique; default: the generator name or the trace file's stem
    trace = "traces/spmv.parquet"   # a trace file, relative to the suite file ...
    generator = "spmv"              # ... or a benchmark generator (`placement bench list`)
    size = [2048]                   #     its size parameters (optional, defaults otherwise)
    block = [256]                   #     its block parameters (optional)
    dlcm = "ca"                     #     the measured build's -Xptxas -dlcm, "ca" or "cg" (optional;
                                    #     the trace's extra.dlcm: where global loads are cached)
    launch_ctas = 32768             #     the measured launch's blocks, where the trace is a smaller
                                    #     grid of the same blocks (optional; the trace's
                                    #     extra.launch_ctas: its time is scaled to the launch's)
    gpu = "k80"                     # a name from `placement gpus`, a .toml path (relative to
                                    # the suite), or a list of them; default: the top-level gpu
    placements = ["", "vec=G", "rowDelimiters=S,vec=G"]
                                    # "OBJ=SPACE,..." moves from the sample; "" is the sample
    measured_ns = [10500.0, 9800.0, 12100.0]
                                    # optional: measured time of each placement (one GPU only)
    rank = true                     # instead of placements: the top K of `placement rank`
    top = 5                         # K (default 10)
    note = "free text"              # e.g. where a paper placement could not be expressed

Every entry must have exactly one of ``trace`` / ``generator`` and one of
``placements`` / ``rank = true``; unknown keys, unknown generators, GPUs and objects,
illegal placements and duplicates are refused before anything runs, with the file
and the entry named (exit 2).

Results
-------
One row per (entry, GPU, placement), in suite order: ``entry``, ``kernel``, ``gpu``,
``placement`` (the moved objects, ``sample`` for none), ``placement_full``,
``model_ns`` (the model's own time), ``predicted_ns`` (measured sample x
T(target) / T(sample) when a measured sample time is known, from the suite or the
trace, else ``model_ns``; ``prediction_basis`` says which), ``measured_ns``,
``error`` (predicted / measured - 1), the per-(entry, GPU) rank agreement
``kendall_tau`` and ``top1_hit`` over the measured placements, and every term of
the prediction (``t_comp``, ``t_mem``, ..., nested ones flattened with dots:
``replays.global_words``, ``caches.l2.misses``, ``events.e_global``). The Parquet
schema metadata key ``placement.batch`` identifies the experiment: tool version,
suite path and SHA-256, GPU names, model options.

Resuming
--------
A *task* is one placement of an entry on one GPU, or one ranking; the row's
``task`` column is its key. Tasks run in chunks (the placements of one (entry,
GPU), split over the workers when there are many, see ``chunks``), and each
completed chunk is written at once, atomically, as a small Parquet part file in
``RESULTS.parts/``; at the end the parts (and any rows of an earlier
``RESULTS.parquet``) are combined, atomically, into ``RESULTS.parquet`` and the
folder is removed. A rerun skips every task whose rows are present, whatever the
workers or executor, so a run killed part way and started again loses and
duplicates nothing. Resuming with a suite whose SHA-256 differs from the recorded one is
refused with both values (Kernel Tuner's habit, STYLE.md).

Executors
---------
``local`` runs tasks in the calling process (``workers=1``) or in forked worker
processes that inherit the generated traces (no pickling); trace files are read
once per worker, or, where too big to evaluate whole (``run``'s ``stream``), read in
row groups for each chunk, as ``placement evaluate`` streams them (a generated trace
so big from a temporary file the plan writes). ``dask://HOST:PORT`` submits the same
task function to a Dask distributed scheduler: each trace is scattered once, broadcast
to every worker, and each worker builds one evaluator per (trace, GPU) and reuses it for
every task.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections import OrderedDict
from pathlib import Path
from typing import Callable

import pyarrow as pa

from traces.atomic import atomic_path, check_output_folder
from traces.errors import InputError, one_line

from ..gpu import get_gpu
from .execute import _dask, _local, chunks, dask_client
from . import spill
from .plan import Plan, Task, plan
from .results import (
    BatchResult,
    _agreement,
    _part_name,
    UnusableRows,
    _read_rows,
    _refuse_other_suite,
    parse_experiment,
    _summarize,
    _write_table,
    done_tasks,
    experiment,
    parts_dir,
    read_experiment,
)
from .suite import Entry, Suite, SuiteError, TraceSource, load_suite

log = logging.getLogger(__name__)


def run(
    suite: Suite | str | os.PathLike,
    output: str | os.PathLike,
    *,
    executor: str = "local",
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    gpu: str | None = None,
    stream: str = "auto",
) -> BatchResult:
    """Evaluate a suite into ``output`` (Parquet), resuming from what is already there.

    ``gpu`` prices every entry on that GPU instead of the suite's own, without the measured times
    (:func:`load_suite`); give the suite as a path then.

    ``stream`` is ``placement evaluate``'s choice, for the suite's trace files: 'auto' streams a file too big to
    evaluate whole (``placement.api.WHOLE_TRACE_BUDGET``), 'yes' every one, 'no' none (``plan.streams``). A
    streamed file is read in row groups by each process that evaluates it, several placements a read, and never
    held whole; the rows are the whole-trace path's (times to 1e-12 relative). A generator's trace too big to
    evaluate whole is streamed where it spans ``plan.SPILL_MIN_WAVES`` waves or more ('yes': every one), from a
    temporary Parquet file the plan writes it to, removed when the run ends (a killed run's, by the next run:
    ``placement.batch.spill``); none for an entry whose tasks ``output`` already holds (``done_tasks``). On a
    Dask cluster every trace is evaluated whole (its workers get the trace, not the file).

    ``executor`` is ``"local"`` (``workers`` processes; 1 runs in this process) or
    ``"dask://HOST:PORT"``. ``progress(done, total)`` counts tasks (placements, or
    rankings): it is called once before the first (done 0) and after each chunk's
    rows are safely on disk.
    """
    check_output_folder(output)  # before the suite's traces are read
    if not isinstance(suite, Suite):
        suite = load_suite(suite, gpu)
    elif gpu is not None:
        raise ValueError("run(gpu=...) needs the suite's path, not a loaded Suite (load_suite(path, gpu))")
    if executor != "local" and not executor.startswith("dask://"):
        raise InputError(f"--executor {executor!r}: expected 'local' or dask://HOST:PORT")
    if workers < 1:
        raise InputError(f"--workers must be >= 1, got {workers}")
    client = dask_client(executor) if executor != "local" else None  # before the plan's minutes of generating
    try:
        spill.sweep()  # the folders of generated traces that killed runs left
        plan_ = plan(suite, stream, done_tasks(output))
        try:
            return _run(plan_, suite, output, client, workers, progress)
        finally:
            plan_.cleanup()
            _CACHE.drop_paths(set(plan_.files.values()))
    finally:
        if client is not None:
            client.close()


def _run(plan_: Plan, suite: Suite, output, client, workers: int,
         progress: Callable[[int, int], None] | None) -> BatchResult:  # fmt: skip
    """Run the plan's tasks not yet in ``output``, locally (``client`` None) or on the Dask client's cluster."""
    exp = experiment(plan_)
    out = Path(output)
    parts = parts_dir(out)
    manifest = parts / "experiment.json"
    existing: dict[str, list[dict]] = {}
    if out.exists():
        try:
            found = read_experiment(out)
            _refuse_other_suite(found, str(out), exp, out)
            rows_there = _read_rows(out)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{out}: exists and is not a readable Parquet file ({one_line(exc)}); write to another -o"
                             ) from None  # fmt: skip
        except UnusableRows as exc:
            raise InputError(f"{out}: exists and is not a results file a run wrote ({exc}); write to another -o"
                             ) from None  # fmt: skip
        for r in rows_there:
            existing.setdefault(r.get("task"), []).append(r)
    if manifest.exists():
        try:
            found = parse_experiment(manifest.read_bytes())
        except OSError:
            found = None
        if any(parts.glob("*.parquet")):
            _refuse_other_suite(found, str(manifest), exp, out)
        elif found != exp:  # a run that stopped before its first result: nothing to resume, nothing to protect
            log.info("%s: no results in it; starting over", parts)
            manifest.unlink()
    try:
        made = not parts.exists()
        parts.mkdir(exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out}: cannot write there (folder {parts}: {exc.strerror or exc})") from None
    try:
        return _run_in(plan_, suite, exp, out, parts, manifest, existing, client, workers, progress)
    except BaseException:
        if made and not any(parts.glob("*.parquet")):  # stopped before its first result: leave nothing behind
            shutil.rmtree(parts, ignore_errors=True)
        raise


def _clear_parts(parts: Path, ours: set[Path]) -> None:
    """Remove the files of ``ours`` from the parts folder, then the folder if nothing else is in it; a file a run
    did not write (notes, an unreadable part) is left where it is, and said. Before, the whole folder went."""
    for f in ours:
        f.unlink(missing_ok=True)
    try:
        parts.rmdir()
    except OSError:
        left = sorted(f.name for f in parts.iterdir()) if parts.is_dir() else []
        if left:
            log.warning("%s: left in place, holding files no run wrote (%s)", parts, ", ".join(left[:5]))


def _run_in(plan_: Plan, suite: Suite, exp: dict, out: Path, parts: Path, manifest: Path,
            existing: dict[str, list[dict]], client, workers: int,
            progress: Callable[[int, int], None] | None) -> BatchResult:  # fmt: skip
    """:func:`_run` once the parts folder ``parts`` is there: the tasks not in ``existing`` run, their rows written
    as parts, then the results file."""
    if not manifest.exists():
        with atomic_path(manifest) as tmp:
            Path(tmp).write_text(json.dumps(exp, indent=2, sort_keys=True))
    ours = {manifest}  # the files a run wrote there: removed at the end, and nothing else
    for f in parts.iterdir():
        if f.name.startswith(".") and f.name.endswith(".tmp"):  # a part being written when a run was killed
            f.unlink()
        elif f.suffix == ".parquet":
            found_rows: dict[str, list[dict]] = {}
            try:
                part_rows = _read_rows(f)
            except (pa.ArrowException, OSError, UnusableRows) as exc:  # not written by a run (parts are written whole)
                log.warning("%s: not a readable results part (%s); its tasks run again", f, one_line(exc))
                continue
            ours.add(f)
            for r in part_rows:
                found_rows.setdefault(r.get("task"), []).append(r)
            for k, v in found_rows.items():
                existing.setdefault(k, v)
    keys = {t.key for t in plan_.tasks}
    stray = sorted(set(existing) - keys, key=str)
    if stray:
        raise InputError(f"{out}: holds rows of tasks this suite does not have ({stray[0]!r}); write to another -o")
    todo = [t for t in plan_.tasks if t.key not in existing]
    skipped = len(plan_.tasks) - len(todo)
    if skipped:
        log.info("resuming %s: %d of %d tasks already done", out, skipped, len(plan_.tasks))
    gpus = {g: get_gpu(g) for g in suite.gpus}
    okey = json.dumps(suite.options_doc, sort_keys=True)
    if progress:
        progress(0, len(todo))
    done = 0
    if todo:
        if client is None:
            stream = _local(plan_, chunks(plan_, todo, workers), workers, gpus, okey)
        else:
            stream = _dask(plan_, todo, client, gpus, okey)
        for chunk, rows in stream:
            ours.add(parts / _part_name(chunk))
            _write_table(rows, parts / _part_name(chunk), None)
            for r in rows:
                existing.setdefault(r["task"], []).append(r)
            done += len(chunk)
            if progress:
                progress(done, len(todo))
    # Combine, in suite order, with the rank agreement of each (entry, GPU).
    rows = [r for t in plan_.tasks for r in existing[t.key]]
    rows.sort(key=lambda r: (r["entry_index"], r["gpu_index"], r["position"]))
    by_group: OrderedDict[tuple, list[dict]] = OrderedDict()
    for r in rows:
        by_group.setdefault((r["entry_index"], r["gpu_index"]), []).append(r)
    for g in by_group.values():
        _agreement(g)
    if todo or not out.exists() or any(parts.glob("*.parquet")):
        _write_table(rows, out, exp)
    _clear_parts(parts, ours)
    summary, overall = _summarize(rows)
    log.info("%s: %d rows (%d tasks run, %d resumed)", out, len(rows), done, skipped)
    return BatchResult(output=str(out), experiment=exp, rows=len(rows), computed=done, skipped=skipped,
                       summary=summary, overall=overall)  # fmt: skip


# The names users and tests reach through `placement.batch`.
from .execute import _CACHE, evaluate_chunk, evaluate_task  # noqa: E402

__all__ = ["BatchResult", "Entry", "Plan", "Suite", "SuiteError", "Task", "TraceSource", "chunks", "evaluate_chunk",
           "evaluate_task", "load_suite", "parts_dir", "plan", "read_experiment", "run", "_CACHE"]  # fmt: skip
