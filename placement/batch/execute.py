"""The task function and the executors that run it: local processes or a Dask cluster."""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Collection, Iterator, Sequence

import traces
from traces.errors import InputError

from ..evaluate_stream import StreamEvaluator, StreamOrderError
from ..evaluate_whole import WholeTraceEvaluator
from ..evaluator import Evaluator
from ..gpu import Gpu
from ..hms import Options
from ..workers import die_with_parent
from .plan import Plan, Task
from .results import _part_name, _row
from .suite import TraceSource

log = logging.getLogger(__name__)


DASK_CONNECT_TIMEOUT = "10s"


CACHE_ROWS = 8_000_000
"""Rows of the traces a process's evaluator cache keeps, least recently used first out (a local batch holds
less: ``_make_room``)."""


def _held_rows(ev: Evaluator) -> int:
    """The trace rows an evaluator holds: a streamed one none (it keeps the sample's terms and the staging facts)."""
    return len(ev.trace) if isinstance(ev, WholeTraceEvaluator) else 0


class _EvaluatorCache:
    """Per-process evaluators keyed by (trace, GPU, options, the streamed file's path or None); thread-safe,
    bounded in number and in rows."""

    def __init__(self, size: int = 8, rows: int = CACHE_ROWS):
        self.size = size
        self.rows = rows
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
                while len(self.items) > 1 and (
                    len(self.items) > self.size or sum(_held_rows(e) for e in self.items.values()) > self.rows
                ):
                    self.items.popitem(last=False)
            self.items.move_to_end(key)
            return ev

    def held(self) -> dict[str, int]:
        """The rows of the trace (by trace key) each evaluator holds, least recently used first."""
        with self.lock:
            out: dict[str, int] = {}
            for key, ev in self.items.items():
                out[key[0]] = max(out.get(key[0], 0), _held_rows(ev))
            return out

    def drop(self, trace_key: str) -> None:
        """Forget the evaluators of one trace."""
        with self.lock:
            for key in [k for k in self.items if k[0] == trace_key]:
                del self.items[key]

    def drop_paths(self, paths: Collection[str]) -> None:
        """Forget the evaluators that stream one of ``paths`` (files removed at the end of a run)."""
        with self.lock:
            for key in [k for k in self.items if k[3] in paths]:
                del self.items[key]


_CACHE = _EvaluatorCache()


_TRACES: dict[str, traces.Trace] = {}
"""Traces this process holds (local executor: inherited from the parent)."""


def _init_worker(loaded: dict[str, traces.Trace], parent_pid: int) -> None:
    die_with_parent(parent_pid)
    _TRACES.update(loaded)


def _evaluator(task: Task, trace: traces.Trace | str, gpu: Gpu, options: Options, options_key: str,
               early: Sequence[Task] = ()) -> Evaluator:  # fmt: skip
    """The process's evaluator of the task's (trace, GPU, options): of a trace in memory, or streamed from a trace
    file's path (``placement.evaluate_stream.StreamEvaluator``, whose first read also evaluates the unstaged
    placements of ``early``; a file out of block order is read whole instead, as ``placement evaluate`` does)."""

    def make() -> Evaluator:
        if isinstance(trace, traces.Trace):
            return WholeTraceEvaluator(trace, gpu, options)
        try:
            return StreamEvaluator(trace, gpu, options, early=[t.placement for t in early if t.placement is not None])
        except StreamOrderError as exc:
            log.warning("%s: evaluating the whole trace instead", exc)
            return WholeTraceEvaluator(traces.read(trace), gpu, options)

    # a streamed evaluator reads its file at every evaluation: keyed by the path (a run's generated traces are
    # written to a folder of its own, gone when it ends: a later run in this process must not reach them)
    return _CACHE.get((task.trace_key, task.gpu, options_key, None if isinstance(trace, traces.Trace) else trace), make)


def evaluate_task(
    task: Task, trace: traces.Trace | str, gpu: Gpu, options: Options, options_key: str
) -> list[dict[str, Any]]:
    """The rows of one task; a pure function of its arguments (the evaluator is cached per process). ``trace``: the
    trace, or the path of a trace file to evaluate streamed."""
    return evaluate_chunk((task,), trace, gpu, options, options_key)


def evaluate_chunk(chunk: Sequence[Task], trace: traces.Trace | str, gpu: Gpu, options: Options, options_key: str
                   ) -> list[dict[str, Any]]:  # fmt: skip
    """The rows of several tasks of one (trace, GPU), in order: the unit an executor runs. A streamed evaluator
    evaluates the chunk's placements together, several per read of the file (``evaluate_many``)."""
    ev = _evaluator(chunk[0], trace, gpu, options, options_key, early=chunk)
    sample = ev.sample_placement
    placed = [t.placement for t in chunk if t.placement is not None]
    done = dict(zip(placed, ev.evaluate_many(placed))) if placed and not ev.parallel else {}
    out: list[dict[str, Any]] = []
    for task in chunk:
        if task.placement is not None:
            e = done[task.placement] if task.placement in done else ev.evaluate(task.placement)
            rows = [_row(task, e, sample, None, task.position)]
        else:
            from ..search import SearchOptions, solve

            ranking = solve(ev, options=SearchOptions(top=task.top, workers=1))
            rows = [_row(task, e, sample, i + 1, i) for i, e in enumerate(ranking.ranking)]
        for r in rows:
            r["task"] = task.key
        out.extend(rows)
    return out


def _make_room(key: str, rows: int, limit: int) -> None:
    """Drop what this process holds of other traces (their traces and evaluators, oldest first) until it holds,
    with trace ``key`` (``rows`` rows), no more than ``limit`` rows: the largest trace's, so that a batch holds no
    more than its largest task however many tasks it runs (issue 34). Done before the trace is loaded, so that
    the traces dropped are gone first."""
    held = {k: len(t) for k, t in _TRACES.items()}
    for k, n in _CACHE.held().items():
        held.setdefault(k, n)
    total = sum(held.values()) + (0 if key in held else rows)
    for k in list(held):
        if total <= limit:
            break
        if k == key:
            continue
        _TRACES.pop(k, None)
        _CACHE.drop(k)
        total -= held[k]
        log.debug("batch: dropped trace %s (%d rows) to make room for %s", k, held[k], key)


def _local_chunk(chunk: Sequence[Task], source: TraceSource, gpu: Gpu, options: Options, options_key: str,
                 rows: int = 0, limit: int = CACHE_ROWS, path: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """``evaluate_chunk`` in a local process, with the chunk's trace (``rows`` rows) loaded once per process and
    kept while room allows (``_make_room``: ``limit`` rows), or streamed from the file at ``path``
    (``Plan.path``)."""
    if path is not None:
        return evaluate_chunk(chunk, path, gpu, options, options_key)
    key = chunk[0].trace_key
    _make_room(key, rows, limit)
    trace = _TRACES.get(key)
    if trace is None:  # a trace file, or a generator's trace the plan did not keep: loaded once per process
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


def _local(plan_: Plan, work: Sequence[tuple[Task, ...]], workers: int, gpus: dict[str, Gpu], okey: str
           ) -> Iterator[tuple[tuple[Task, ...], list[dict]]]:  # fmt: skip
    opts = plan_.suite.options
    # the plan's traces move to this process's cache, where they are dropped to make room (_make_room)
    _TRACES.update(plan_.loaded)
    plan_.loaded.clear()
    limit = max((n for k, n in plan_.trace_rows.items() if k not in plan_.streamed), default=0)

    def args(c: tuple[Task, ...]) -> tuple:
        key = c[0].trace_key
        return (c, plan_.sources[key], gpus[c[0].gpu], opts, okey, plan_.trace_rows.get(key, 0), limit,
                plan_.path(key))  # fmt: skip

    def run(c: tuple[Task, ...]) -> list[dict]:
        return _local_chunk(*args(c))

    if workers <= 1 or len(work) <= 1:
        for c in work:
            yield c, run(c)
        return
    methods = multiprocessing.get_all_start_methods()
    fork = "fork" in methods
    ctx = multiprocessing.get_context("fork" if fork else "spawn")
    if fork:
        # The first chunk here: the workers forked after it inherit the kernels it compiled or
        # loaded from numba's cache (and its evaluator), so none of them compiles them again.
        c, *work = work
        yield c, run(c)
        if len(work) <= 1:
            log.info("batch: the last chunk in this process (one chunk does not need workers)")
            for c in work:
                yield c, run(c)
            return
    log.info("batch: %d chunks over %d worker processes (%s)", len(work), workers, ctx.get_start_method())
    # With fork the initializer's arguments are inherited, not pickled.
    with ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=_init_worker, initargs=(dict(_TRACES), os.getpid())
    ) as pool:
        futures = {pool.submit(_local_chunk, *args(c)): c for c in work}
        try:
            for f in as_completed(futures):
                yield futures[f], f.result()
        finally:
            for f in futures:
                f.cancel()


def dask_address(executor: str) -> str:
    """``dask://HOST:PORT`` -> ``tcp://HOST:PORT`` (``dask://tcp://...``, ``dask://inproc://...`` as given)."""
    rest = executor[len("dask://") :]
    if not rest:
        raise InputError(f"--executor {executor!r}: expected dask://HOST:PORT (the scheduler's address)")
    return rest if "://" in rest else f"tcp://{rest}"


def dask_client(executor: str):
    """A client of the Dask scheduler ``executor`` names (``dask://HOST:PORT``), connected before the suite is planned
    (generating its traces can take minutes: a scheduler that is not there is said first). The caller closes it."""
    address = dask_address(executor)
    try:
        from distributed import Client
    except ImportError:
        raise InputError(
            "--executor dask://...: needs dask's distributed scheduler; pip install 'dask[distributed]'"
        ) from None
    try:
        return Client(address, timeout=DASK_CONNECT_TIMEOUT)
    except OSError as exc:
        raise InputError(f"--executor dask://: no Dask scheduler at {address} ({exc})") from None


def _dask(plan_: Plan, todo: Sequence[Task], client, gpus: dict[str, Gpu], okey: str
          ) -> Iterator[tuple[tuple[Task, ...], list[dict]]]:  # fmt: skip
    from distributed import as_completed as dask_completed

    opts = plan_.suite.options
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
