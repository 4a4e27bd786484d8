"""Suite files (configs/suites/*.toml): reading and checking them; the format is in the package docstring."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import traces
from traces import generators
from traces.errors import InputError, shown
from traces.inputfile import read_bytes
from traces.schema import DLCM
from traces.tomlfile import parse_toml

from ..gpu import get_gpu
from ..hms import Options
from ..queuing import MODES
from ..resources import config_dir

log = logging.getLogger(__name__)


SUITE_KEYS = ("name", "description", "gpu", "options", "entry")


ENTRY_KEYS = (
    "id", "trace", "generator", "size", "block", "dlcm", "launch_ctas", "gpu", "placements", "measured_ns", "rank",
    "top", "note",
)  # fmt: skip


OPTION_KEYS = ("queue", "instruction_counting", "queuing", "even_banks", "overlap")

# Bounds of the numbers a suite holds: generator sizes and blocks fit CUDA's int
# (2^31 - 1), a ranking returns at most MAX_TOP placements, and a measured time is a
# finite number of ns up to 1e18 (31 years).
MAX_INT = (1 << 31) - 1
MAX_TOP = 100_000
MAX_TIME_NS = 1e18


class SuiteError(InputError):
    """A suite file that does not meet the suite format; the message names the file and entry."""


@dataclass(frozen=True)
class TraceSource:
    """Where an entry's trace comes from: a file, or a generator with its parameters."""

    path: str | None = None
    generator: str | None = None
    size: tuple[int, ...] | None = None
    block: tuple[int, ...] | None = None
    dlcm: str | None = None
    """A generator's trace: the measured build's ``-Xptxas -dlcm`` (``traces.schema.DLCM``), put in the trace's
    ``extra["dlcm"]``; None: the GPU's default. (A trace file says its own, in its metadata.)"""
    launch_ctas: int | None = None
    """A generator's trace: the blocks of the measured launch where the trace is a smaller grid of the same blocks,
    put in the trace's ``extra["launch_ctas"]`` (``placement.hms.blocks_scale``); None: the trace's grid."""

    @property
    def key(self) -> str:
        """Identifies the trace (the workers' cache key)."""
        build = (f":dlcm={self.dlcm}" if self.dlcm else "") + (f":launch_ctas={self.launch_ctas}"
                                                                if self.launch_ctas else "")  # fmt: skip
        if self.path is not None:
            st = os.stat(self.path)
            return f"file:{self.path}:{st.st_size}:{st.st_mtime_ns}{build}"
        return f"gen:{self.generator}:size={list(self.size or [])}:block={list(self.block or [])}{build}"

    @property
    def label(self) -> str:
        if self.path is not None:
            return self.path
        parts = [self.generator or ""]
        if self.size:
            parts.append("size=" + "x".join(map(str, self.size)))
        if self.block:
            parts.append("block=" + "x".join(map(str, self.block)))
        if self.dlcm:
            parts.append("dlcm=" + self.dlcm)
        if self.launch_ctas:
            parts.append(f"launch_ctas={self.launch_ctas}")
        return "generator:" + " ".join(parts)

    def load(self) -> traces.Trace:
        if self.path is not None:
            return traces.read(self.path)
        cols, info = generators.generate(self.generator, self.size, self.block)
        return traces.Trace(**cols, info=self.build_info(info))

    def build_info(self, info: traces.KernelInfo) -> traces.KernelInfo:
        """``info`` with the entry's build options and measured launch in its ``extra`` (a launch of fewer blocks
        than the trace's grid is an error naming the generator and ``extra.launch_ctas``)."""
        extra = {**info.extra, **({"dlcm": self.dlcm} if self.dlcm else {})}
        if self.launch_ctas:
            extra["launch_ctas"] = self.launch_ctas
            traces.schema.check_block_counts(extra, info.ctas, self.label)
        return info if extra == info.extra else dataclasses.replace(info, extra=extra)


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
    gpu_override: str = ""
    """The GPU every entry was priced on instead of its own (``load_suite(..., gpu=)``); "" for none."""

    @property
    def gpus(self) -> list[str]:
        return list(dict.fromkeys(g for e in self.entries for g in e.gpus))


def suite_dir() -> Path:
    return config_dir() / "suites"


def resolve_suite_path(name_or_path: str | os.PathLike) -> Path:
    """A suite file by path (a name ending in ``.toml``, or an existing regular file), or a bundled
    suite by name (``table4``, even beside a folder of that name)."""
    p = Path(name_or_path)
    if not str(name_or_path).strip():
        raise InputError("empty suite name: give a bundled suite's name or a path to a .toml file")
    if p.suffix == ".toml" or os.path.isfile(p):
        return p
    candidate = suite_dir() / f"{p}.toml"
    if os.path.exists(candidate):
        return candidate
    known = ", ".join(sorted(q.stem for q in suite_dir().glob("*.toml")))
    raise InputError(f"no suite file {str(p)!r}; bundled suites: {known or 'none'} (or a path to a .toml file)")


def _where(path: str, i: int | None, eid: str | None) -> str:
    if i is None:
        return path
    return f"{path}: entry {i + 1}" + (f" ({shown(eid)})" if eid else "")


def _ints(v: Any, where: str, key: str) -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v]
    if not isinstance(v, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_INT for x in v
    ):
        raise SuiteError(f"{where}: {key} must be an integer or a list of integers in 0..{MAX_INT}, got {shown(v)}")
    return tuple(v)


def _time_ns(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x <= MAX_TIME_NS


def _gpu_list(v: Any, where: str, base: Path) -> tuple[str, ...]:
    items = [v] if isinstance(v, str) else v
    if not isinstance(items, list) or not items or not all(isinstance(x, str) and x for x in items):
        raise SuiteError(f"{where}: gpu must be a GPU name or a list of them (see `placement gpus`), got {shown(v)}")
    out = []
    for g in items:
        if "\0" in g:
            raise SuiteError(f"{where}: gpu {shown(g)} holds a NUL character")
        if g.endswith(".toml") and not os.path.isabs(g):
            g = os.path.realpath(base / g)
        out.append(g)
    if len(set(out)) != len(out):
        raise SuiteError(f"{where}: gpu lists a GPU twice: {items}")
    return tuple(out)


def load_suite(path: str | os.PathLike, gpu: str | None = None) -> Suite:
    """Parse and validate the structure of a suite file (the format is in the module docstring).

    ``gpu`` (a name from `placement gpus` or a configuration file, relative to the working folder) prices every
    entry on that GPU instead of its own: the entries' GPUs are still checked, but their measured times are left
    out, since they were measured on another GPU (``placement batch --gpu``: a suite's rankings on the user's
    GPU). Object names and legality need each kernel's metadata; ``plan`` checks those, for ``gpu`` where given.
    """
    p = resolve_suite_path(path)
    ps = str(p)
    raw = read_bytes(ps)
    data = parse_toml(ps, raw)
    sha = hashlib.sha256(raw).hexdigest()
    base = p.resolve().parent
    unknown = sorted(set(data) - set(SUITE_KEYS))
    if unknown:
        raise SuiteError(f"{ps}: unknown key {unknown[0]!r}; known keys: {', '.join(SUITE_KEYS)}")
    for k in ("name", "description"):
        if k in data and not isinstance(data[k], str):
            raise SuiteError(f"{ps}: {k} must be a string, got {shown(data[k])}")
    default_gpu = _gpu_list(data["gpu"], ps, base) if "gpu" in data else None
    options, options_doc = _options(data.get("options", {}), ps, base)
    raw_entries = data.get("entry")
    if not isinstance(raw_entries, list) or not raw_entries:
        raise SuiteError(f"{ps}: no entries; expected one or more [[entry]] tables")
    override = _override(gpu) if gpu is not None else None
    entries = []
    ids: dict[str, int] = {}
    for i, e in enumerate(raw_entries):
        entries.append(_entry(e, i, ps, base, default_gpu))
        if override is not None:
            entries[-1] = dataclasses.replace(entries[-1], gpus=(override,), measured_ns=None)
        eid = entries[-1].id
        if eid in ids:
            raise SuiteError(
                f"{_where(ps, i, eid)}: id {shown(eid)} is already entry {ids[eid] + 1}'s; give each entry its own id"
            )
        ids[eid] = i
    return Suite(
        path=ps, sha256=sha, name=data.get("name", p.stem), description=data.get("description", ""),
        entries=tuple(entries), options=options, options_doc=options_doc, gpu_override=override or "",
    )  # fmt: skip


def _override(gpu: str) -> str:
    """``load_suite``'s ``gpu``, checked as a suite's (:func:`_gpu_list`, a configuration file's path made absolute,
    here from the working folder) and loaded."""
    (g,) = _gpu_list(gpu, "--gpu", Path.cwd())
    try:
        get_gpu(g)
    except InputError as exc:
        raise InputError(f"--gpu: {exc}") from None
    return g


def _options(d: Any, ps: str, base: Path) -> tuple[Options, dict[str, Any]]:
    if not isinstance(d, dict):
        raise SuiteError(f"{ps}: [options] must be a table")
    unknown = sorted(set(d) - set(OPTION_KEYS))
    if unknown:
        raise SuiteError(f"{ps}: [options]: unknown key {unknown[0]!r}; known keys: {', '.join(OPTION_KEYS)}")
    queue = d.get("queue", "kingman")
    if queue not in MODES:
        raise SuiteError(f"{ps}: [options] queue {shown(queue)}: expected one of {', '.join(MODES)}")
    flags = {}
    for k, default in (("instruction_counting", True), ("queuing", True), ("even_banks", False)):
        v = d.get(k, default)
        if not isinstance(v, bool):
            raise SuiteError(f"{ps}: [options] {k} must be true or false, got {shown(v)}")
        flags[k] = v
    overlap = None
    doc: dict[str, Any] = {"queue": queue, **flags, "overlap": None}
    if "overlap" in d:
        from ..overlap import load as load_overlap

        if not isinstance(d["overlap"], str):
            raise SuiteError(
                f"{ps}: [options] overlap must be a path to a coefficients file, got {shown(d['overlap'])}"
            )
        op = Path(d["overlap"])
        op = op if op.is_absolute() else base / op
        overlap = load_overlap(op)
        doc["overlap"] = {"path": str(op), "coef": list(overlap.coef_)}
    return Options(queue=queue, overlap=overlap, **flags), doc


def _entry(e: Any, i: int, ps: str, base: Path, default_gpu) -> Entry:
    where = _where(ps, i, None)
    if not isinstance(e, dict):
        raise SuiteError(f"{where}: expected a table of keys, got {shown(e)}")
    eid = e.get("id")
    if eid is not None and (not isinstance(eid, str) or not eid or "|" in eid or not eid.isprintable()):
        raise SuiteError(f"{where}: id must be a non-empty string without '|' or control characters (a table's rows "
                         f"name it), got {shown(eid)}")  # fmt: skip
    where = _where(ps, i, eid)
    unknown = sorted(set(e) - set(ENTRY_KEYS))
    if unknown:
        raise SuiteError(f"{where}: unknown key {unknown[0]!r}; known keys: {', '.join(ENTRY_KEYS)}")
    if ("trace" in e) == ("generator" in e):
        raise SuiteError(f"{where}: expected exactly one of 'trace' (a trace file) or 'generator' (a benchmark kernel)")
    if "trace" in e:
        if not isinstance(e["trace"], str):
            raise SuiteError(f"{where}: trace must be a path, got {shown(e['trace'])}")
        if "size" in e or "block" in e or "dlcm" in e or "launch_ctas" in e:
            raise SuiteError(f"{where}: size, block, dlcm and launch_ctas go with 'generator', not with 'trace' (a "
                             "trace file says them in its metadata, extra.dlcm and extra.launch_ctas)")  # fmt: skip
        tp = Path(e["trace"])
        tp = tp if tp.is_absolute() else base / tp
        if os.path.isdir(tp):
            raise SuiteError(f"{where}: trace {str(tp)!r} is a folder, expected a trace file")
        if not os.path.isfile(tp):
            raise SuiteError(f"{where}: trace file {str(tp)!r} does not exist")
        source = TraceSource(path=str(tp.resolve()))
        default_id = tp.stem
    else:
        name = e["generator"]
        if not isinstance(name, str) or name not in generators.names():
            raise SuiteError(f"{where}: unknown generator {shown(name)}; known: {', '.join(generators.names())}")
        size = _ints(e["size"], where, "size") if "size" in e else None
        block = _ints(e["block"], where, "block") if "block" in e else None
        try:
            generators.get(name).resolve(size, block)
        except InputError as exc:
            raise SuiteError(f"{where}: {exc}") from None
        dlcm = e.get("dlcm")
        if dlcm is not None and dlcm not in DLCM:
            raise SuiteError(f"{where}: dlcm must be one of {', '.join(map(repr, DLCM))} (the build's -Xptxas -dlcm), "
                             f"got {shown(dlcm)}")  # fmt: skip
        launch = e.get("launch_ctas")
        if launch is not None and not (type(launch) is int and 1 <= launch <= MAX_INT):
            raise SuiteError(f"{where}: launch_ctas must be a whole number of blocks in 1..{MAX_INT} (the measured "
                             f"launch's), got {shown(launch)}")  # fmt: skip
        source = TraceSource(generator=name, size=size, block=block, dlcm=dlcm, launch_ctas=launch)
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
        raise SuiteError(f"{where}: rank must be true or false, got {shown(rank)}")
    if rank == ("placements" in e):
        raise SuiteError(
            f"{where}: expected exactly one of 'placements' (a list of \"OBJ=SPACE,...\") or 'rank = true'"
        )
    top = e.get("top", 10)
    if "top" in e and not rank:
        raise SuiteError(f"{where}: 'top' goes with 'rank = true'")
    if not isinstance(top, int) or isinstance(top, bool) or not 1 <= top <= MAX_TOP:
        raise SuiteError(f"{where}: top must be an integer in 1..{MAX_TOP}, got {shown(top)}")
    placements: tuple[str, ...] = ()
    if not rank:
        pl = e["placements"]
        if not isinstance(pl, list) or not pl or not all(isinstance(x, str) for x in pl):
            raise SuiteError(
                f'{where}: placements must be a non-empty list of strings like "A=T,B=2T" ("" for the sample)'
            )
        placements = tuple(pl)
    measured = None
    if "measured_ns" in e:
        m = e["measured_ns"]
        if rank:
            raise SuiteError(f"{where}: measured_ns goes with a placements list, not with 'rank = true'")
        if len(gpus) != 1:
            raise SuiteError(f"{where}: measured_ns needs exactly one gpu (this entry has {len(gpus)}); "
                             "write one entry per GPU")  # fmt: skip
        ok = isinstance(m, list) and all(_time_ns(x) for x in m)
        if not ok or len(m) != len(placements):
            raise SuiteError(f"{where}: measured_ns must be a list of {len(placements)} positive times in ns, at most "
                             f"{MAX_TIME_NS:g} (one per placement), got {shown(m)}")  # fmt: skip
        measured = tuple(float(x) for x in m)
    note = e.get("note", "")
    if not isinstance(note, str):
        raise SuiteError(f"{where}: note must be a string")
    return Entry(id=eid, index=i, source=source, gpus=gpus, placements=placements, measured_ns=measured,
                 rank=rank, top=top, note=note)  # fmt: skip
