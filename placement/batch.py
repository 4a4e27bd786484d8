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
once per worker. ``dask://HOST:PORT`` submits the same task function to a Dask
distributed scheduler: each trace is scattered once, broadcast to every worker, and
each worker builds one evaluator per (trace, GPU) and reuses it for every task.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import multiprocessing
import os
import shutil
import threading
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

import traces
from traces import generators
from traces.atomic import atomic_path
from traces.errors import InputError
from traces.tomlfile import load_toml

from . import __version__
from .gpu import Gpu, get_gpu
from .hms import Evaluation, Evaluator, Options
from .placements import IllegalPlacement, Placement, check, parse_placement, sample_placement
from .queuing import MODES
from .resources import config_dir

log = logging.getLogger(__name__)

METADATA_KEY = b"placement.batch"
SUITE_KEYS = ("name", "description", "gpu", "options", "entry")
ENTRY_KEYS = ("id", "trace", "generator", "size", "block", "gpu", "placements", "measured_ns", "rank", "top", "note")
OPTION_KEYS = ("queue", "instruction_counting", "queuing", "even_banks", "overlap")
DASK_CONNECT_TIMEOUT = "10s"
LEADING = (
    "entry", "kernel", "gpu", "placement", "rank", "model_ns", "predicted_ns", "prediction_basis", "measured_ns",
    "error", "abs_error", "kendall_tau", "top1_hit", "n_measured", "speedup", "sample_ns", "placement_full",
    "entry_index", "gpu_index", "position", "trace", "task",
)  # fmt: skip


class SuiteError(InputError):
    """A suite file that does not meet the suite format; the message names the file and entry."""


# ---------------------------------------------------------------- the suite


@dataclass(frozen=True)
class TraceSource:
    """Where an entry's trace comes from: a file, or a generator with its parameters."""

    path: str | None = None
    generator: str | None = None
    size: tuple[int, ...] | None = None
    block: tuple[int, ...] | None = None

    @property
    def key(self) -> str:
        """Identifies the trace (the workers' cache key)."""
        if self.path is not None:
            st = os.stat(self.path)
            return f"file:{self.path}:{st.st_size}:{st.st_mtime_ns}"
        return f"gen:{self.generator}:size={list(self.size or [])}:block={list(self.block or [])}"

    @property
    def label(self) -> str:
        if self.path is not None:
            return self.path
        parts = [self.generator or ""]
        if self.size:
            parts.append("size=" + "x".join(map(str, self.size)))
        if self.block:
            parts.append("block=" + "x".join(map(str, self.block)))
        return "generator:" + " ".join(parts)

    def load(self) -> traces.Trace:
        if self.path is not None:
            return traces.read(self.path)
        cols, info = generators.generate(self.generator, self.size, self.block)
        return traces.Trace(**cols, info=info)


@dataclass(frozen=True)
class Entry:
    id: str
    index: int
    source: TraceSource
    gpus: tuple[str, ...]
    placements: tuple[str, ...] = ()
    measured_ns: tuple[float, ...] | None = None
    rank: bool = False
    top: int = 10
    note: str = ""


@dataclass(frozen=True)
class Suite:
    path: str
    sha256: str
    name: str
    description: str
    entries: tuple[Entry, ...]
    options: Options
    options_doc: dict[str, Any] = field(default_factory=dict)

    @property
    def gpus(self) -> list[str]:
        return list(dict.fromkeys(g for e in self.entries for g in e.gpus))


def suite_dir() -> Path:
    return config_dir() / "suites"


def resolve_suite_path(name_or_path: str | os.PathLike) -> Path:
    """A suite file by path, or a bundled suite by name (``table4``)."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        return p
    candidate = suite_dir() / f"{p}.toml"
    if candidate.exists():
        return candidate
    known = ", ".join(sorted(q.stem for q in suite_dir().glob("*.toml")))
    raise InputError(f"no suite file {str(p)!r}; bundled suites: {known or 'none'} (or a path to a .toml file)")


def _where(path: str, i: int | None, eid: str | None) -> str:
    if i is None:
        return path
    return f"{path}: entry {i + 1}" + (f" ({eid!r})" if eid else "")


def _ints(v: Any, where: str, key: str) -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise SuiteError(f"{where}: {key} must be an integer or a list of integers, got {v!r}")
    return tuple(v)


def _gpu_list(v: Any, where: str, base: Path) -> tuple[str, ...]:
    items = [v] if isinstance(v, str) else v
    if not isinstance(items, list) or not items or not all(isinstance(x, str) and x for x in items):
        raise SuiteError(f"{where}: gpu must be a GPU name or a list of them (see `placement gpus`), got {v!r}")
    out = []
    for g in items:
        if g.endswith(".toml") and not os.path.isabs(g):
            g = str((base / g).resolve())
        out.append(g)
    if len(set(out)) != len(out):
        raise SuiteError(f"{where}: gpu lists a GPU twice: {items}")
    return tuple(out)


def load_suite(path: str | os.PathLike) -> Suite:
    """Parse and validate the structure of a suite file (the format is in the module docstring).

    Object names and legality need each kernel's metadata; ``plan`` checks those.
    """
    p = resolve_suite_path(path)
    ps = str(p)
    raw = p.read_bytes() if p.exists() else None
    data = load_toml(ps)
    sha = hashlib.sha256(raw or b"").hexdigest()
    base = p.resolve().parent
    unknown = sorted(set(data) - set(SUITE_KEYS))
    if unknown:
        raise SuiteError(f"{ps}: unknown key {unknown[0]!r}; known keys: {', '.join(SUITE_KEYS)}")
    for k in ("name", "description"):
        if k in data and not isinstance(data[k], str):
            raise SuiteError(f"{ps}: {k} must be a string, got {data[k]!r}")
    default_gpu = _gpu_list(data["gpu"], ps, base) if "gpu" in data else None
    options, options_doc = _options(data.get("options", {}), ps, base)
    raw_entries = data.get("entry")
    if not isinstance(raw_entries, list) or not raw_entries:
        raise SuiteError(f"{ps}: no entries; expected one or more [[entry]] tables")
    entries = []
    ids: dict[str, int] = {}
    for i, e in enumerate(raw_entries):
        entries.append(_entry(e, i, ps, base, default_gpu))
        eid = entries[-1].id
        if eid in ids:
            raise SuiteError(f"{_where(ps, i, eid)}: id {eid!r} is already entry {ids[eid] + 1}'s; give each entry its own id")
        ids[eid] = i
    return Suite(
        path=ps, sha256=sha, name=data.get("name", p.stem), description=data.get("description", ""),
        entries=tuple(entries), options=options, options_doc=options_doc,
    )  # fmt: skip


def _options(d: Any, ps: str, base: Path) -> tuple[Options, dict[str, Any]]:
    if not isinstance(d, dict):
        raise SuiteError(f"{ps}: [options] must be a table")
    unknown = sorted(set(d) - set(OPTION_KEYS))
    if unknown:
        raise SuiteError(f"{ps}: [options]: unknown key {unknown[0]!r}; known keys: {', '.join(OPTION_KEYS)}")
    queue = d.get("queue", "kingman")
    if queue not in MODES:
        raise SuiteError(f"{ps}: [options] queue {queue!r}: expected one of {', '.join(MODES)}")
    flags = {}
    for k, default in (("instruction_counting", True), ("queuing", True), ("even_banks", False)):
        v = d.get(k, default)
        if not isinstance(v, bool):
            raise SuiteError(f"{ps}: [options] {k} must be true or false, got {v!r}")
        flags[k] = v
    overlap = None
    doc: dict[str, Any] = {"queue": queue, **flags, "overlap": None}
    if "overlap" in d:
        from .overlap import load as load_overlap

        if not isinstance(d["overlap"], str):
            raise SuiteError(f"{ps}: [options] overlap must be a path to a coefficients file, got {d['overlap']!r}")
        op = Path(d["overlap"])
        op = op if op.is_absolute() else base / op
        overlap = load_overlap(op)
        doc["overlap"] = {"path": str(op), "coef": list(overlap.coef_)}
    return Options(queue=queue, overlap=overlap, **flags), doc


def _entry(e: Any, i: int, ps: str, base: Path, default_gpu) -> Entry:
    where = _where(ps, i, None)
    if not isinstance(e, dict):
        raise SuiteError(f"{where}: expected a table of keys, got {e!r}")
    eid = e.get("id")
    if eid is not None and (not isinstance(eid, str) or not eid or "|" in eid):
        raise SuiteError(f"{where}: id must be a non-empty string without '|', got {eid!r}")
    where = _where(ps, i, eid)
    unknown = sorted(set(e) - set(ENTRY_KEYS))
    if unknown:
        raise SuiteError(f"{where}: unknown key {unknown[0]!r}; known keys: {', '.join(ENTRY_KEYS)}")
    if ("trace" in e) == ("generator" in e):
        raise SuiteError(f"{where}: expected exactly one of 'trace' (a trace file) or 'generator' (a benchmark kernel)")
    if "trace" in e:
        if not isinstance(e["trace"], str):
            raise SuiteError(f"{where}: trace must be a path, got {e['trace']!r}")
        if "size" in e or "block" in e:
            raise SuiteError(f"{where}: size and block go with 'generator', not with 'trace'")
        tp = Path(e["trace"])
        tp = tp if tp.is_absolute() else base / tp
        if not tp.is_file():
            raise SuiteError(f"{where}: trace file {str(tp)!r} does not exist")
        source = TraceSource(path=str(tp.resolve()))
        default_id = tp.stem
    else:
        name = e["generator"]
        if not isinstance(name, str) or name not in generators.names():
            raise SuiteError(f"{where}: unknown generator {name!r}; known: {', '.join(generators.names())}")
        size = _ints(e["size"], where, "size") if "size" in e else None
        block = _ints(e["block"], where, "block") if "block" in e else None
        try:
            generators.get(name).resolve(size, block)
        except InputError as exc:
            raise SuiteError(f"{where}: {exc}") from None
        source = TraceSource(generator=name, size=size, block=block)
        default_id = name
    eid = eid or default_id
    where = _where(ps, i, eid)
    if "gpu" in e:
        gpus = _gpu_list(e["gpu"], where, base)
    elif default_gpu is not None:
        gpus = default_gpu
    else:
        raise SuiteError(f"{where}: missing key 'gpu' (and the suite has no top-level gpu)")
    for g in gpus:
        try:
            get_gpu(g)
        except InputError as exc:
            raise SuiteError(f"{where}: {exc}") from None
    rank = e.get("rank", False)
    if not isinstance(rank, bool):
        raise SuiteError(f"{where}: rank must be true or false, got {rank!r}")
    if rank == ("placements" in e):
        raise SuiteError(f"{where}: expected exactly one of 'placements' (a list of \"OBJ=SPACE,...\") or 'rank = true'")
    top = e.get("top", 10)
    if "top" in e and not rank:
        raise SuiteError(f"{where}: 'top' goes with 'rank = true'")
    if not isinstance(top, int) or isinstance(top, bool) or top < 1:
        raise SuiteError(f"{where}: top must be an integer >= 1, got {top!r}")
    placements: tuple[str, ...] = ()
    if not rank:
        pl = e["placements"]
        if not isinstance(pl, list) or not pl or not all(isinstance(x, str) for x in pl):
            raise SuiteError(f"{where}: placements must be a non-empty list of strings like \"A=T,B=2T\" (\"\" for the sample)")
        placements = tuple(pl)
    measured = None
    if "measured_ns" in e:
        m = e["measured_ns"]
        if rank:
            raise SuiteError(f"{where}: measured_ns goes with a placements list, not with 'rank = true'")
        if len(gpus) != 1:
            raise SuiteError(f"{where}: measured_ns needs exactly one gpu (this entry has {len(gpus)}); "
                             "write one entry per GPU")  # fmt: skip
        ok = isinstance(m, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in m)
        if not ok or len(m) != len(placements):
            raise SuiteError(f"{where}: measured_ns must be a list of {len(placements)} positive times in ns "
                             f"(one per placement), got {m!r}")  # fmt: skip
        measured = tuple(float(x) for x in m)
    note = e.get("note", "")
    if not isinstance(note, str):
        raise SuiteError(f"{where}: note must be a string")
    return Entry(id=eid, index=i, source=source, gpus=gpus, placements=placements, measured_ns=measured,
                 rank=rank, top=top, note=note)  # fmt: skip


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Task:
    """One unit of work: one placement of an entry on one GPU, or one ranking."""

    key: str
    """The resume key: entry|gpu|full placement, or entry|gpu|rank."""
    entry: str
    entry_index: int
    gpu: str
    gpu_index: int
    trace_key: str
    trace_label: str
    position: int
    """Index in the entry's placements list (0 for a ranking)."""
    placement: Placement | None
    top: int = 0
    measured_ns: float | None = None
    measured_sample_ns: float | None = None


@dataclass(frozen=True)
class Plan:
    suite: Suite
    tasks: tuple[Task, ...]
    sources: dict[str, TraceSource]
    """trace key -> source."""
    loaded: dict[str, traces.Trace]
    """Traces already in memory (generated while checking the suite), by trace key."""
    gpu_names: dict[str, str]
    """suite's GPU spelling -> the configuration's name."""
    trace_rows: dict[str, int] = field(default_factory=dict)
    """trace key -> rows (the cost estimate that orders the work)."""


def _check_names(text: str, info: traces.KernelInfo, where: str) -> None:
    names = [o.name for o in info.objects]
    for part in (x.strip() for x in text.split(",")):
        if not part:
            continue
        if "=" not in part:
            raise SuiteError(f"{where}: {part!r}: expected OBJ=SPACE (for example A=T,B=2T)")
        name = part.split("=", 1)[0].strip()
        if name not in names:
            raise SuiteError(f"{where}: unknown object {name!r} in kernel {info.kernel}; objects: {', '.join(names)}")


def plan(suite: Suite) -> Plan:
    """Check every entry against its kernel (objects, legality) and list the tasks.

    Generator traces are generated here, once (their metadata needs it); trace files
    only have their metadata read.
    """
    tasks: list[Task] = []
    sources: dict[str, TraceSource] = {}
    loaded: dict[str, traces.Trace] = {}
    gpus: dict[str, Gpu] = {}
    trace_rows: dict[str, int] = {}
    for e in suite.entries:
        where = _where(suite.path, e.index, e.id)
        src = e.source
        key = src.key
        sources[key] = src
        if src.path is not None:
            try:
                info = traces.read_info(src.path)
                trace_rows[key] = pq.ParquetFile(src.path).metadata.num_rows
            except InputError as exc:
                raise SuiteError(f"{where}: {exc}") from None
        else:
            if key not in loaded:
                loaded[key] = src.load()
            info = loaded[key].info
            trace_rows[key] = len(loaded[key])
        sample = sample_placement(info)
        for gi, g in enumerate(e.gpus):
            gpu = gpus.setdefault(g, get_gpu(g))
            if e.rank:
                tasks.append(Task(key=f"{e.id}|{g}|rank", entry=e.id, entry_index=e.index, gpu=g, gpu_index=gi,
                                  trace_key=key, trace_label=src.label, position=0, placement=None, top=e.top))  # fmt: skip
                continue
            parsed: list[Placement] = []
            for text in e.placements:
                pwhere = f"{where}: placement {text!r}"
                _check_names(text, info, pwhere)
                try:
                    p = parse_placement(text, info)
                    check(info, gpu, p)
                except IllegalPlacement as exc:
                    raise SuiteError(f"{pwhere} on {g}: {exc}") from None
                except InputError as exc:
                    raise SuiteError(f"{pwhere}: {exc}") from None
                if p in parsed:
                    first = e.placements[parsed.index(p)]
                    raise SuiteError(f"{pwhere} is the same placement as {first!r}; list each placement once")
                parsed.append(p)
            measured_sample = None
            if e.measured_ns is not None and sample in parsed:
                measured_sample = e.measured_ns[parsed.index(sample)]
            for pos, p in enumerate(parsed):
                full = ",".join(f"{n}={s}" for n, s in p.spaces)
                tasks.append(Task(
                    key=f"{e.id}|{g}|{full}", entry=e.id, entry_index=e.index, gpu=g, gpu_index=gi, trace_key=key,
                    trace_label=src.label, position=pos, placement=p,
                    measured_ns=e.measured_ns[pos] if e.measured_ns is not None else None,
                    measured_sample_ns=measured_sample,
                ))  # fmt: skip
    return Plan(suite=suite, tasks=tuple(tasks), sources=sources, loaded=loaded,
                gpu_names={g: v.name for g, v in gpus.items()}, trace_rows=trace_rows)  # fmt: skip


# ---------------------------------------------------------------- the task function


class _EvaluatorCache:
    """Per-process evaluators keyed by (trace, GPU, options); thread-safe, bounded."""

    def __init__(self, size: int = 8):
        self.size = size
        self.items: OrderedDict[tuple, Evaluator] = OrderedDict()
        self.lock = threading.Lock()
        self.built = 0

    def get(self, key: tuple, make: Callable[[], Evaluator]) -> Evaluator:
        with self.lock:
            ev = self.items.get(key)
            if ev is None:
                ev = make()
                self.built += 1
                self.items[key] = ev
                while len(self.items) > self.size:
                    self.items.popitem(last=False)
            self.items.move_to_end(key)
            return ev


_CACHE = _EvaluatorCache()
_TRACES: dict[str, traces.Trace] = {}
"""Traces this process holds (local executor: inherited from the parent)."""


def _init_worker(loaded: dict[str, traces.Trace]) -> None:
    _TRACES.update(loaded)


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
    label = Placement(tuple(t.placement.items())).label(sample)
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


def evaluate_task(task: Task, trace: traces.Trace, gpu: Gpu, options: Options, options_key: str) -> list[dict[str, Any]]:
    """The rows of one task; a pure function of its arguments (the evaluator is cached per process)."""
    ev = _CACHE.get((task.trace_key, task.gpu, options_key), lambda: Evaluator(trace, gpu, options))
    sample = ev.sample_placement
    if task.placement is not None:
        rows = [_row(task, ev.evaluate(task.placement), sample, None, task.position)]
    else:
        from .search import SearchOptions, solve

        ranking = solve(ev, options=SearchOptions(top=task.top, workers=1))
        rows = [_row(task, e, sample, i + 1, i) for i, e in enumerate(ranking.ranking)]
    for r in rows:
        r["task"] = task.key
    return rows


def evaluate_chunk(chunk: Sequence[Task], trace: traces.Trace, gpu: Gpu, options: Options, options_key: str
                   ) -> list[dict[str, Any]]:  # fmt: skip
    """The rows of several tasks of one (trace, GPU), in order: the unit an executor runs."""
    return [r for t in chunk for r in evaluate_task(t, trace, gpu, options, options_key)]


def _local_chunk(chunk: Sequence[Task], source: TraceSource, gpu: Gpu, options: Options, options_key: str
                 ) -> list[dict[str, Any]]:  # fmt: skip
    key = chunk[0].trace_key
    trace = _TRACES.get(key)
    if trace is None:  # a trace file: read once per process
        trace = _TRACES[key] = source.load()
    return evaluate_chunk(chunk, trace, gpu, options, options_key)


def _dask_chunk(chunk: Sequence[Task], trace: traces.Trace, gpu: Gpu, options: Options, options_key: str
                ) -> list[dict[str, Any]]:  # fmt: skip
    return evaluate_chunk(chunk, trace, gpu, options, options_key)


MIN_CHUNK = 3
"""Placements per chunk before an (entry, GPU) is split over workers: every chunk
builds the sample's terms again in its worker, one evaluation more."""


def chunks(plan_: Plan, todo: Sequence[Task], workers: int) -> list[tuple[Task, ...]]:
    """Group the tasks to run into chunks, largest estimated cost first.

    The tasks of one (entry, GPU) share the sample's terms, which a worker computes
    once per chunk; so they stay together, split into at most ``workers`` chunks of
    at least MIN_CHUNK placements. Cost ~ trace rows x evaluations (a ranking: about
    5 per object plus its top K). Longest first keeps the workers evenly loaded.
    The chunking changes neither the rows nor what a rerun skips (that is per task).
    """
    groups: OrderedDict[tuple, list[Task]] = OrderedDict()
    for t in todo:
        groups.setdefault((t.entry_index, t.gpu_index, t.placement is None), []).append(t)
    out: list[tuple[float, int, tuple[Task, ...]]] = []
    for g in groups.values():
        rows = plan_.trace_rows.get(g[0].trace_key, 1)
        if g[0].placement is None:  # rankings: one task each
            for t in g:
                n_obj = len(plan_.loaded[t.trace_key].info.objects) if t.trace_key in plan_.loaded else 8
                out.append((rows * (5 * n_obj + t.top), len(out), (t,)))
            continue
        k = max(1, min(workers, len(g) // MIN_CHUNK))
        for j in range(k):
            part = tuple(g[j::k]) if k > 1 else tuple(g)
            has_sample = any(t.position == 0 for t in part)
            out.append((rows * (len(part) + (0 if has_sample else 1)), len(out), part))
    out.sort(key=lambda x: (-x[0], x[1]))
    return [c for _, _, c in out]


# ---------------------------------------------------------------- executors


def _local(plan_: Plan, work: Sequence[tuple[Task, ...]], workers: int, gpus: dict[str, Gpu], okey: str
           ) -> Iterator[tuple[tuple[Task, ...], list[dict]]]:  # fmt: skip
    opts = plan_.suite.options
    if workers <= 1 or len(work) <= 1:
        _TRACES.update(plan_.loaded)
        for c in work:
            yield c, _local_chunk(c, plan_.sources[c[0].trace_key], gpus[c[0].gpu], opts, okey)
        return
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    # With fork the initializer's arguments are inherited, not pickled.
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(plan_.loaded,)) as pool:
        futures = {pool.submit(_local_chunk, c, plan_.sources[c[0].trace_key], gpus[c[0].gpu], opts, okey): c
                   for c in work}  # fmt: skip
        try:
            for f in as_completed(futures):
                yield futures[f], f.result()
        finally:
            for f in futures:
                f.cancel()


def dask_address(executor: str) -> str:
    """``dask://HOST:PORT`` -> ``tcp://HOST:PORT`` (``dask://tcp://...``, ``dask://inproc://...`` as given)."""
    rest = executor[len("dask://"):]
    if not rest:
        raise InputError(f"--executor {executor!r}: expected dask://HOST:PORT (the scheduler's address)")
    return rest if "://" in rest else f"tcp://{rest}"


def _dask(plan_: Plan, todo: Sequence[Task], address: str, gpus: dict[str, Gpu], okey: str
          ) -> Iterator[tuple[tuple[Task, ...], list[dict]]]:  # fmt: skip
    try:
        from distributed import Client, as_completed as dask_completed
    except ImportError:
        raise InputError("--executor dask://...: needs dask's distributed scheduler; pip install 'dask[distributed]'") from None
    opts = plan_.suite.options
    try:
        client = Client(address, timeout=DASK_CONNECT_TIMEOUT)
    except OSError as exc:
        raise InputError(f"--executor dask://: no Dask scheduler at {address} ({exc})") from None
    workers = client.scheduler_info().get("workers", {})
    # A chunk runs on one thread: chunk for the cluster's threads.
    work = chunks(plan_, todo, max(1, sum(w.get("nthreads", 1) for w in workers.values())))
    order = {c: i for i, c in enumerate(work)}  # longest first
    groups: OrderedDict[str, list[tuple[Task, ...]]] = OrderedDict()
    for c in work:
        groups.setdefault(c[0].trace_key, []).append(c)
    window = max(2, len(workers))
    pending = list(groups.items())
    remaining: dict[str, int] = {}
    scattered: dict[str, Any] = {}
    owner: dict[Any, tuple[Task, ...]] = {}
    done = dask_completed()

    def submit_next() -> None:
        trace_key, group = pending.pop(0)
        trace = plan_.loaded.get(trace_key)
        if trace is None:
            trace = plan_.sources[trace_key].load()
        # One copy per worker, not one per task.
        scattered[trace_key] = fut = client.scatter(trace, broadcast=True, hash=False)
        remaining[trace_key] = len(group)
        for c in group:
            f = client.submit(_dask_chunk, c, fut, gpus[c[0].gpu], opts, okey, pure=False, priority=-order[c],
                              key=f"placement-batch-{_part_name(c).removesuffix('.parquet')}")  # fmt: skip
            owner[f] = c
            done.add(f)

    try:
        while pending and len(scattered) < window:
            submit_next()
        for f in done:
            c = owner.pop(f)
            rows = f.result()
            key = c[0].trace_key
            remaining[key] -= 1
            if remaining[key] == 0:
                scattered.pop(key).release()
                if pending:
                    submit_next()
            yield c, rows
    finally:
        for f in owner:
            f.cancel()
        client.close()


# ---------------------------------------------------------------- results files


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
        "entries": len(s.entries),
        "tasks": len(plan_.tasks),
        "options": s.options_doc,
    }


def read_experiment(path: str | os.PathLike) -> dict[str, Any] | None:
    """The experiment a results file records (None when it has none)."""
    md = pq.read_schema(path).metadata or {}
    raw = md.get(METADATA_KEY)
    return json.loads(raw) if raw else None


def _refuse_other_suite(found: dict[str, Any] | None, where: str, exp: dict[str, Any], output) -> None:
    if found is None:
        raise InputError(f"{where}: not a results file of `placement batch` (no {METADATA_KEY.decode()} metadata); "
                         f"write to another -o")  # fmt: skip
    old = found.get("suite", {})
    if old.get("sha256") != exp["suite"]["sha256"]:
        raise InputError(
            f"{where} holds results of suite {old.get('path')!r} with sha256 {old.get('sha256')}, but "
            f"{exp['suite']['path']!r} has sha256 {exp['suite']['sha256']}; resuming needs the same suite: "
            f"write to another -o, or delete {output} and {parts_dir(output)} to start over"
        )
    if found.get("version") != exp["version"]:
        log.warning("%s was written by gpu-placement %s; this is %s", where, found.get("version"), exp["version"])


def _read_rows(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


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


def _summarize(rows: list[dict[str, Any]]) -> tuple[list[dict], dict]:
    groups: OrderedDict[tuple, list[dict]] = OrderedDict()
    for r in rows:
        groups.setdefault((r["entry_index"], r["gpu_index"]), []).append(r)
    out = []
    for g in groups.values():
        best = min(g, key=lambda r: r["predicted_ns"])
        errs = [r["abs_error"] for r in g if r.get("abs_error") is not None]
        out.append({
            "entry": g[0]["entry"], "kernel": g[0]["kernel"], "gpu": g[0]["gpu"], "rows": len(g),
            "best": best["placement"], "best_speedup": best["speedup"], "best_predicted_ns": best["predicted_ns"],
            "n_measured": g[0]["n_measured"],
            "mean_abs_error": sum(errs) / len(errs) if errs else None,
            "kendall_tau": g[0]["kendall_tau"], "top1_hit": g[0]["top1_hit"],
        })  # fmt: skip
    errs = [r["abs_error"] for r in rows if r.get("abs_error") is not None]
    taus = [s["kendall_tau"] for s in out if s["kendall_tau"] is not None]
    hits = [s["top1_hit"] for s in out if s["top1_hit"] is not None]
    overall = {
        "rows": len(rows),
        "measured": len(errs),
        "mean_abs_error": sum(errs) / len(errs) if errs else None,
        "mean_kendall_tau": sum(taus) / len(taus) if taus else None,
        "top1_hits": sum(hits) if hits else None,
        "ranked_groups": len(hits),
    }
    return out, overall


def run(
    suite: Suite | str | os.PathLike,
    output: str | os.PathLike,
    *,
    executor: str = "local",
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> BatchResult:
    """Evaluate a suite into ``output`` (Parquet), resuming from what is already there.

    ``executor`` is ``"local"`` (``workers`` processes; 1 runs in this process) or
    ``"dask://HOST:PORT"``. ``progress(done, total)`` counts tasks (placements, or
    rankings): it is called once before the first (done 0) and after each chunk's
    rows are safely on disk.
    """
    if not isinstance(suite, Suite):
        suite = load_suite(suite)
    if executor != "local" and not executor.startswith("dask://"):
        raise InputError(f"--executor {executor!r}: expected 'local' or dask://HOST:PORT")
    if workers < 1:
        raise InputError(f"--workers must be >= 1, got {workers}")
    plan_ = plan(suite)
    exp = experiment(plan_)
    out = Path(output)
    parts = parts_dir(out)
    manifest = parts / "experiment.json"
    existing: dict[str, list[dict]] = {}
    if out.exists():
        try:
            found = read_experiment(out)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(f"{out}: exists and is not a readable Parquet file ({exc}); write to another -o") from None
        _refuse_other_suite(found, str(out), exp, out)
        for r in _read_rows(out):
            existing.setdefault(r["task"], []).append(r)
    if manifest.exists():
        try:
            found = json.loads(manifest.read_text())
        except (ValueError, OSError):
            found = None
        _refuse_other_suite(found, str(manifest), exp, out)
    parts.mkdir(parents=True, exist_ok=True)
    if not manifest.exists():
        with atomic_path(manifest) as tmp:
            Path(tmp).write_text(json.dumps(exp, indent=2, sort_keys=True))
    for f in parts.iterdir():
        if f.name.startswith(".") and f.name.endswith(".tmp"):  # a part being written when a run was killed
            f.unlink()
        elif f.suffix == ".parquet":
            found_rows: dict[str, list[dict]] = {}
            for r in _read_rows(f):
                found_rows.setdefault(r["task"], []).append(r)
            for k, v in found_rows.items():
                existing.setdefault(k, v)
    keys = {t.key for t in plan_.tasks}
    stray = sorted(set(existing) - keys)
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
        if executor == "local":
            stream = _local(plan_, chunks(plan_, todo, workers), workers, gpus, okey)
        else:
            stream = _dask(plan_, todo, dask_address(executor), gpus, okey)
        for chunk, rows in stream:
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
    shutil.rmtree(parts, ignore_errors=True)
    summary, overall = _summarize(rows)
    log.info("%s: %d rows (%d tasks run, %d resumed)", out, len(rows), done, skipped)
    return BatchResult(output=str(out), experiment=exp, rows=len(rows), computed=done, skipped=skipped,
                       summary=summary, overall=overall)  # fmt: skip


__all__ = ["BatchResult", "Entry", "Plan", "Suite", "SuiteError", "Task", "TraceSource", "chunks", "evaluate_chunk",
           "evaluate_task", "load_suite", "plan", "read_experiment", "run"]  # fmt: skip
