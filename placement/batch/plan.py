"""A suite checked against its kernels and turned into tasks, one per (entry, GPU, placement)."""

from __future__ import annotations

import logging
import os
from collections.abc import Collection
from dataclasses import dataclass, field

import traces
from traces.errors import InputError

from ..api import require_rows, too_big_to_evaluate_whole
from ..choices import STREAM_MODES
from ..evaluate_stream import STREAM_ROWS
from ..gpu import Gpu, get_gpu
from ..placements import (
    IllegalPlacement,
    Placement,
    check,
    is_staged,
    parse_placement,
    sample_placement,
)
from ..staging import StagingFacts
from ..streamstaging import StreamStagingFacts
from .spill import SpillFolder
from .suite import Suite, SuiteError, TraceSource, _where

log = logging.getLogger(__name__)

SPILL_MIN_WAVES = 4
"""Waves of resident blocks (the sample's, on the entry's GPUs) from which ``stream`` 'auto' writes a generator's
trace too big to evaluate whole to a file and streams it. A stream holds a wave's rows (it walks a wave's blocks
together), so a trace of one or two waves is held whole either way and the file only adds its writing and
decoding: the H100 W = 512 matmuls (8.4 M rows, one wave each) took 5.4 GB and 114 s streamed against 5.7 GB
and 98 s whole (`placement batch configs/suites/h100_matmul_512.toml --workers 1`, 30 Nov)."""

KEEP_ROWS = 4_000_000
"""Rows of the trace the plan keeps for the run at most (the last one it loaded); a longer one is dropped after
its entry is checked and generated again when its tasks run."""


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
    streamed: frozenset[str] = frozenset()
    """The traces the local executor evaluates streamed (``placement.evaluate_stream.StreamEvaluator``,
    ``streams``) from their file: read in row groups, never held whole."""
    files: dict[str, str] = field(default_factory=dict)
    """trace key -> the file a streamed generator's trace was written to (in ``spill``), to be read from there."""
    spill: SpillFolder | None = None
    """The folder of ``files``, removed by ``cleanup`` (or when the plan is collected; a killed run's, by the next
    batch run: ``placement.batch.spill``)."""

    def path(self, key: str) -> str | None:
        """The file a streamed trace is read from: the trace file's, or the one its generated trace was written to."""
        return self.files.get(key) or (str(self.sources[key].path) if key in self.streamed else None)

    def cleanup(self) -> None:
        """Remove the files the plan wrote its generated traces to (``files``)."""
        if self.spill is not None:
            self.spill.cleanup()


def streams(rows: int, options, stream: str, where: str) -> bool:
    """Whether a trace of ``rows`` rows is evaluated streamed: as ``placement evaluate`` decides it for a trace file
    (``placement.api.WHOLE_TRACE_BUDGET`` for 'auto'; 'yes', 'no'); ``even_banks`` needs the whole DRAM stream."""
    if stream not in STREAM_MODES:
        raise InputError(f"stream {stream!r}: expected one of {', '.join(STREAM_MODES)}")
    if stream == "no":
        return False
    if options.even_banks:
        if stream == "yes":
            raise SuiteError(f"{where}: --stream yes: the suite's even_banks needs the whole DRAM stream")
        return False
    return stream == "yes" or too_big_to_evaluate_whole(rows)


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


def waves(info: traces.KernelInfo, gpus: list[Gpu]) -> float:
    """The fewest waves of resident blocks the sample placement's grid takes on any of ``gpus``
    (``placement.hms.residency``)."""
    from ..hms import residency

    sample = sample_placement(info)
    out = float("inf")
    for g in gpus:
        r = residency(info, g, check(info, g, sample).occupancy)
        out = min(out, info.traced_ctas / (r.blocks_per_sm * r.active_sms))
    return out


def plan(suite: Suite, stream: str = "auto", done: Collection[str] = frozenset()) -> Plan:
    """Check every entry against its kernel (objects, legality) and list the tasks.

    Generator traces are generated here (their metadata needs it); trace files only have their
    metadata read, unless a placement stages an object in shared memory (its legality needs the
    trace's footprints: for a trace file evaluated streamed (``streams``), the footprints of
    ``placement.streamstaging`` in two reads, so the file is never held whole). A generator's trace
    that ``streams`` (too big to evaluate whole, over ``SPILL_MIN_WAVES`` waves or more; or ``stream``
    'yes') is written, once checked, to a Parquet file in a temporary folder (``Plan.files``;
    ``Plan.cleanup`` removes it), from which the tasks stream it: it is generated once, not again in
    every worker; not for an entry whose tasks are all in ``done`` (the task keys a resumed run
    holds). One trace is held at a time, the others dropped before it is loaded, so that planning
    holds no more than the largest trace (issue 34); the last is kept for the run up to
    ``KEEP_ROWS`` rows, the others are loaded again when their tasks run.
    """
    tasks: list[Task] = []
    sources: dict[str, TraceSource] = {}
    loaded: dict[str, traces.Trace] = {}
    gpus: dict[str, Gpu] = {}
    trace_rows: dict[str, int] = {}
    streamed: set[str] = set()
    files: dict[str, str] = {}
    spill: SpillFolder | None = None
    facts: dict[str, StagingFacts | StreamStagingFacts] = {}

    def drop_others(key: str) -> None:
        """Drop every trace but ``key``'s (and its facts): gone before the next is read or generated."""
        for old in [k for k in loaded if k != key]:
            del loaded[old]
            facts.pop(old, None)

    def load(key: str, src: TraceSource) -> traces.Trace:
        if key not in loaded:
            drop_others(key)
            loaded[key] = src.load()
        return loaded[key]

    def staging(key: str, src: TraceSource) -> StagingFacts | StreamStagingFacts:
        if key not in facts:
            if key in streamed:
                drop_others(key)
                try:
                    facts[key] = StreamStagingFacts.read(files.get(key) or src.path, STREAM_ROWS)
                except InputError:  # a bad file (a TraceError is a ValueError too): the error, not a fallback
                    raise
                except ValueError as exc:  # rows out of block order: evaluated whole, as `placement evaluate` does
                    log.warning("%s: %s; evaluating the whole trace instead", files.get(key) or src.path, exc)
                    streamed.discard(key)
                    files.pop(key, None)  # (a generated trace: generated again, whole)
            if key not in facts:
                facts[key] = StagingFacts(load(key, src))
        return facts[key]

    try:
        for e in suite.entries:
            entry_tasks = len(tasks)  # this entry's tasks start here
            where = _where(suite.path, e.index, e.id)
            src = e.source
            key = src.key
            sources[key] = src
            try:  # a trace file's metadata, or a generator's trace (whose extra.launch_ctas is checked when built)
                if src.path is not None:
                    info = traces.read_info(src.path)
                    trace_rows[key] = traces.num_rows(src.path)
                    require_rows(src.path, trace_rows[key])
                    if streams(trace_rows[key], suite.options, stream, where):
                        streamed.add(key)
                elif key in files:  # an earlier entry's generated trace, written to be streamed
                    info = traces.read_info(files[key])
                else:
                    info = load(key, src).info
                    trace_rows[key] = len(loaded[key])
            except SuiteError:
                raise  # (streams': the entry named already)
            except InputError as exc:
                raise SuiteError(f"{where}: {exc}") from None
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
                        staged = any(is_staged(sp) for _, sp in p.spaces)
                        check(info, gpu, p, staging(key, src) if staged else None)
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
                    full = p.label()  # every object's space, and ";windows=K" where asked for
                    tasks.append(Task(
                        key=f"{e.id}|{g}|{full}", entry=e.id, entry_index=e.index, gpu=g, gpu_index=gi, trace_key=key,
                        trace_label=src.label, position=pos, placement=p,
                        measured_ns=e.measured_ns[pos] if e.measured_ns is not None else None,
                        measured_sample_ns=measured_sample,
                    ))  # fmt: skip
            if (
                src.path is None
                and key not in files
                and any(t.key not in done for t in tasks[entry_tasks:])
                and streams(trace_rows[key], suite.options, stream, where)
                and (stream == "yes" or waves(info, [gpus[g] for g in e.gpus]) >= SPILL_MIN_WAVES)
            ):
                if spill is None:
                    spill = SpillFolder()
                files[key] = os.path.join(spill.name, f"trace-{len(files)}.parquet")
                t = loaded.pop(key)
                facts.pop(key, None)
                traces.write(files[key], t, t.info, validate=False)  # checked when the evaluator first reads it
                streamed.add(key)
                log.info("batch: %s (%d rows) written to %s, to be streamed", src.label, len(t), files[key])
                del t
            if key in loaded and len(loaded[key]) > KEEP_ROWS:
                del loaded[key]  # generated again when its tasks run
                facts.pop(key, None)
    except BaseException:  # nothing half-written stays behind
        if spill is not None:
            spill.cleanup()
        raise
    return Plan(suite=suite, tasks=tuple(tasks), sources=sources, loaded=loaded,
                gpu_names={g: v.name for g, v in gpus.items()}, trace_rows=trace_rows,
                streamed=frozenset(streamed), files=files, spill=spill)  # fmt: skip
