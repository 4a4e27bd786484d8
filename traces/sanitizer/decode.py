"""Records of one traced launch -> trace columns and metadata (the trace contract, DESIGN.md).

With numba kernels over the access records where the record file's bytes hold them (``_kernels``; no per-row
Python), in three passes, the last two ``CHUNK_ROWS`` records at a time (:class:`Decoder`), so that memory
follows a part of the records, not the trace: one checks every record; one converts them and gathers what the
metadata needs (the warps that ran, the rows per SASS instruction, each allocation's widths and writes, the
shared and local rows' distinct bounds, counted); the last converts them again into the trace's columns, part
by part, as ``traces.io.write_parts`` writes them. (A trace's objects lead its file, so they must be known
before its first row is written.)

- ``op`` from the access flags: atomic that returns a value (read) -> atomic, atomic without
  read -> reduction, else write -> store, read -> load; given the kernel's SASS, an atomic whose
  instruction is a ``RED`` is a reduction (drivers that do not report the write-only flag);
- ``space`` as recorded (0 global, 1 local, 2 shared); shared addresses become offsets in the
  block's window (the launch record's ``shared_base`` subtracted; inactive lanes 0);
- ``seq``: the position among the warp's memory instructions, in record order (the records
  hold no other instructions): estimated, and ``source`` says so, as the NVBit importer does;
  the instruction totals count the memory instructions only. Given the kernel's SASS
  (``sass_fn``: nvdisasm of the cubin the injection library keeps), both come from it
  instead (``traces.sanitizer.sass``: every basic block's executions, ``seq`` in the warp's
  instruction stream);
- objects: every allocation that global accesses touch is an object (its base and size),
  named after the kernel's pointer parameter holding its base (``arg0``, ``arg1``, ... by the
  parameter's index; ``param@OFFSET`` when the driver gave no parameter list), else
  ``alloc<N>`` (its allocation record); ``--objects`` tables win over allocations they
  overlap. A global row outside every object, or across two, gets ``obj`` -1 and is counted
  in ``source["unknown_rows"]``. Shared and local rows are grouped as the other importers do
  (``importers.objects``). ``written``: a store, atomic or reduction was seen.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..codes import ATOMIC, REDUCTION
from ..errors import InputError
from ..importers.objects import ObjectSpec, _family_of, assign_objects, infer_from_bounds
from ..launch import SHARED_WINDOW, coverage_problem, launch_problem
from ..schema import (
    COLUMNS,
    NUMPY_DTYPES,
    GLOBAL,
    LOCAL,
    SHARED,
    WARP_SIZE,
    WIDTHS,
    Instructions,
    KernelInfo,
    ObjectInfo,
)
from . import _kernels as SK
from .records import F_ATOMIC, F_READ, F_WRITE, RecordError, RecordFile
from .sass import block_bounds, instruction_index, reductions, totals
from .sass import mlp as sass_mlp

log = logging.getLogger(__name__)

# What the device callbacks write (patches.cu, access_flags): a load, a store, an atomic that returns its
# value, an atomic that only writes (a reduction).
VALID_FLAGS = (F_READ, F_WRITE, F_ATOMIC | F_READ | F_WRITE, F_ATOMIC | F_WRITE)
SEQ_NOTE = "position among the warp's memory instructions (the records hold no other instructions)"
# The most warps whose seq is counted in a table of one int64 per warp of the grid, however few the rows
# (128 MiB); a larger grid's warps are numbered among those that ran (sorted, and searched for each row).
DENSE_WARPS = 1 << 24
# The first check shares the records among threads (_threads: the cores, at most MAX_THREADS), each a part of the
# rows in file order, from PARALLEL_ROWS rows.
PARALLEL_ROWS = 1 << 16
MAX_THREADS = 4
SASS_SEQ_NOTE = "position in the warp's instruction stream, estimated from the kernel's SASS (traces.sanitizer.sass)"


def demangle(name: str) -> str:
    """The demangled kernel name (``c++filt``; the mangled name where it is absent)."""
    exe = shutil.which("c++filt")
    if not exe or not name.startswith("_Z"):
        return name
    try:
        out = subprocess.run([exe, name], capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    except (OSError, ValueError, subprocess.SubprocessError):
        return name
    return out or name


assert tuple(VALID_FLAGS) == (SK.F_READ, SK.F_WRITE, SK.F_ATOMIC | SK.F_READ | SK.F_WRITE, SK.F_ATOMIC | SK.F_WRITE)
assert (GLOBAL, LOCAL, SHARED) == (0, 1, 2) and tuple(WIDTHS) == (1, 2, 4, 8, 16)  # as the kernels check them


def _threads() -> int:
    """The threads the kernels share the records among: the cores this process may run on, at most MAX_THREADS."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_THREADS, cores or 1))


def _parts(rows: int, threads: int) -> list[tuple[int, int]]:
    """Rows 0 to ``rows`` in ``threads`` parts (one below PARALLEL_ROWS rows)."""
    k = threads if rows >= PARALLEL_ROWS else 1
    bounds = [rows * j // k for j in range(k + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def _each(fn, calls: list[tuple]) -> list:
    """``fn(*args)`` of each of ``calls``, the first in this thread and the others in threads of their own (the
    kernels release the GIL); their results in order."""
    if len(calls) == 1:
        return [fn(*calls[0])]
    with ThreadPoolExecutor(len(calls) - 1) as pool:
        rest = [pool.submit(fn, *args) for args in calls[1:]]
        return [fn(*calls[0])] + [f.result() for f in rest]


def _check(rf: RecordFile, nctas: int, wpb: int, parts: list[tuple[int, int]]) -> list[int]:
    """The first access record that breaks the format is an error naming it; returns each part's rows with a lane."""
    firsts = [np.empty(SK.N_CHECKS, np.int64) for _ in parts]
    lives = _each(SK.check_records, [(rf.words, rf.spans, a, b, nctas, wpb, f) for (a, b), f in zip(parts, firsts)])
    checks = (  # in the order of _kernels.CHECK_*: the first that fails anywhere is the error
        ("space", "space {} (expected 0 global, 1 local or 2 shared)"),
        ("width", "width {} (expected one of 1, 2, 4, 8, 16)"),
        ("flags", "access flags {} (expected 1 read, 2 write, 7 atomic or 6 reduction)"),
        ("cta", f"block {{}} beyond the launch's {nctas} blocks"),
        ("warp", f"warp {{}} beyond the block's {wpb} warps"),
    )
    for c, (col, msg) in enumerate(checks):
        rows = [int(f[c]) for f in firsts if f[c] >= 0]
        if rows:
            i = rows[0]  # the parts are in file order
            raise RecordError(rf.path, rf.record_number(i), msg.format(int(rf.access(i)[col])))
    rows = [int(f[SK.CHECK_ADDR]) for f in firsts if f[SK.CHECK_ADDR] >= 0]
    if rows:  # named here, by its record (the output's bounds check named a row of a file never written)
        a = rf.access(rows[0])
        raise RecordError(rf.path, rf.record_number(rows[0]), f"a lane's address {int(a['addr'].max()):#x} + "
                          f"{int(a['width'])} bytes passes the end of the 64-bit address space")  # fmt: skip
    return [int(v) for v in lives]


def _param_names(rf: RecordFile) -> dict[int, str]:
    """Pointer-sized parameter values -> names (first parameter holding a value wins)."""
    L = rf.launch
    buf = L.param_buffer
    names: dict[int, str] = {}
    if L.params.shape[0]:
        for i, (off, size) in enumerate(zip(L.params["offset"].tolist(), L.params["size"].tolist())):
            if size == 8:
                names.setdefault(int.from_bytes(buf[off : off + 8], "little"), f"arg{i}")
    else:
        for off in range(0, len(buf) - 7, 8):
            names.setdefault(int.from_bytes(buf[off : off + 8], "little"), f"param@{off}")
    return names


def _candidates(rf: RecordFile, specs) -> list[dict[str, Any]]:
    """The objects a global row may fall in, by base: the ``--objects`` specs, then each allocation record they do
    not overlap (named after the kernel parameter holding its base, else ``allocK``; of allocations re-reported at
    one base, the first)."""
    cands: list[dict[str, Any]] = []
    for s in specs:
        cands.append({"name": s.name, "base": s.base, "size": s.size, "spec": s, "origin": "--objects"})
    taken = [(s.base, s.base + s.size) for s in specs]
    names = _param_names(rf)
    for k, (b, z) in enumerate(zip(rf.allocations["base"].tolist(), rf.allocations["size"].tolist())):
        if z == 0 or any(b < e and a < b + z for a, e in taken):
            continue
        nm = names.get(b, f"alloc{k}")
        cands.append({"name": nm, "base": b, "size": z, "spec": None,
                      "origin": f"allocation record {k}" + (f", parameter {nm}" if b in names else "")})  # fmt: skip
    # Overlapping allocation records (a pool re-reported): keep the first of each base.
    seen_base: set[int] = set()
    cands = [c for c in cands if not (c["spec"] is None and (c["base"] in seen_base or seen_base.add(c["base"])))]
    cands.sort(key=lambda c: c["base"])
    return cands


def launch_shape(rf: RecordFile) -> tuple[int, int]:
    """The launch's blocks and warps per block; a grid or block CUDA cannot launch is an error naming record 1."""
    L = rf.launch
    problem = launch_problem(L.grid, L.block)
    if problem:
        raise RecordError(rf.path, 1, f"launch record: {problem}")
    return L.grid[0] * L.grid[1] * L.grid[2], -(-(L.block[0] * L.block[1] * L.block[2]) // WARP_SIZE)


# Records per part of the stream: both passes convert the records a part at a time (about 75 MiB of columns).
CHUNK_ROWS = 1 << 18
# Distinct shared and local rows (space, pc, op, width, lo, hi) kept before they are counted once each: from
# this many, or twice as many as were distinct at the last count.
DISTINCT_ROWS = 1 << 20
_OTHER = np.dtype([("space", "i1"), ("op", "i1"), ("width", "i1"), ("pc", "<i4"), ("lo", "<u8"), ("hi", "<u8")])


class _Distinct:
    """The shared and local rows' (space, pc, op, width, lo, hi), each distinct one counted (what
    ``importers.objects.infer_from_bounds`` needs of them): memory follows the distinct rows, not the trace."""

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []
        self.held = 0
        self.limit = DISTINCT_ROWS

    def add(self, space, pc, op, width, lo, hi) -> None:
        if not space.shape[0]:
            return
        t = np.empty(space.shape[0], _OTHER)
        t["space"], t["pc"], t["op"], t["width"], t["lo"], t["hi"] = space, pc, op, width, lo, hi
        self.parts.append(t)
        self.weights.append(np.ones(t.shape[0], np.int64))
        self.held += t.shape[0]
        if self.held >= self.limit:
            self.rows()
            self.limit = max(DISTINCT_ROWS, 2 * self.held)

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct rows (sorted) and how many times each was added."""
        t = np.concatenate(self.parts) if self.parts else np.empty(0, _OTHER)
        w = np.concatenate(self.weights) if self.weights else np.empty(0, np.int64)
        if t.shape[0]:
            order = np.lexsort((t["hi"], t["lo"], t["width"], t["op"], t["pc"], t["space"]))
            t, w = t[order], w[order]
            new = np.ones(t.shape[0], bool)
            new[1:] = t[1:] != t[:-1]
            starts = np.flatnonzero(new)
            t, w = t[starts], np.add.reduceat(w, starts)
        self.parts, self.weights, self.held = [t], [w], t.shape[0]
        return t, w


class _Gathered:
    """What the decoder's first pass gathers of a range of the records (one per thread, then joined): the warps
    that ran, the rows per SASS instruction, each allocation candidate's widths and writes and the global rows on
    none, the shared and local rows' distinct bounds, and the first problem of each kind (in file order)."""

    def __init__(self, d: Decoder) -> None:
        self.d = d
        self.seen = np.zeros(d.nctas * d.wpb if d.dense else 0, np.uint8)
        self.warps = 0
        self.held: list[np.ndarray] = []  # a larger grid: the warps that ran, each part's (``keys``)
        self.last = 0
        self.per_inst = np.zeros(d.sass_fn.offsets.shape[0] if d.sass_fn is not None else 0, np.int64)
        self.widths = np.zeros((d.c_base.shape[0], max(WIDTHS) + 1), np.int64)
        self.written = np.zeros(d.c_base.shape[0], np.bool_)
        self.unknown = 0
        self.other = _Distinct()
        self.low = self.over = -1
        self.bad_pc: InputError | None = None

    def add(self, r0: int, c: dict[str, np.ndarray], lo: np.ndarray, hi: np.ndarray, low: int, over: int) -> None:
        d = self.d
        self.low = low if self.low < 0 else self.low
        self.over = over if self.over < 0 else self.over
        key = d._warp_keys(c, raw=True)
        if d.dense:
            self.warps += SK.mark_seen(key, self.seen)
        else:
            self.held.append(np.unique(key))
            if sum(k.shape[0] for k in self.held) > max(DISTINCT_ROWS, 2 * self.last):  # amortized: linear in all
                self.held = [self.keys()]
                self.last = self.held[0].shape[0]
        if d.sass_fn is not None and self.bad_pc is None:
            try:
                idx = instruction_index(d.sass_fn, c["pc"].view(np.uint32), str(d.rf.path), r0)
                self.per_inst += np.bincount(idx, minlength=self.per_inst.shape[0])
            except InputError as e:
                self.bad_pc = e
        cand = np.empty(lo.shape[0], np.int32)
        self.unknown += SK.global_candidates(c["space"], lo, hi, c["op"], c["width"], d.c_base, d.c_end, cand,
                                             self.widths, self.written)  # fmt: skip
        o = np.flatnonzero(c["space"] != GLOBAL)
        self.other.add(c["space"][o], c["pc"][o], c["op"][o], c["width"][o], lo[o], hi[o])

    def keys(self) -> np.ndarray:
        """A larger grid's warps that ran, sorted."""
        return np.unique(np.concatenate(self.held)) if self.held else np.zeros(0, np.int64)

    def join(self, later: _Gathered) -> None:
        """Add ``later``'s, gathered from the records after these."""
        if self.d.dense:
            self.warps = int(np.count_nonzero(np.bitwise_or(self.seen, later.seen, out=self.seen)))
        self.held += later.held
        self.per_inst += later.per_inst
        self.widths += later.widths
        self.written |= later.written
        self.unknown += later.unknown
        self.other.parts += later.other.parts
        self.other.weights += later.other.weights
        self.low = later.low if self.low < 0 else self.low
        self.over = later.over if self.over < 0 else self.over
        self.bad_pc = later.bad_pc if self.bad_pc is None else self.bad_pc


class Decoder:
    """A launch's trace from its record file in two passes of ``chunk_rows`` records at a time, so that memory
    follows the part, not the trace (module docstring for what each column holds):

    1. (on construction) every record is checked and converted, and what the trace's metadata needs is
       gathered (:class:`_Gathered`), the records shared among threads (``_threads``; one thread where
       ``max_rows`` cuts them); then the objects and ``info``;
    2. (:meth:`parts`) the records are converted again, part by part, with ``seq`` (counted on per warp
       across the parts) and ``obj``.
    """

    def __init__(self, rf: RecordFile, *, objects: tuple[ObjectSpec, ...] = (), ctas: str | None = None,
                 max_rows: int | None = None, sass_fn=None, chunk_rows: int = CHUNK_ROWS) -> None:  # fmt: skip
        L = rf.launch
        self.rf, self.sass_fn, self.chunk_rows = rf, sass_fn, max(1, int(chunk_rows))
        self.nctas, self.wpb = nctas, wpb = launch_shape(rf)
        ranges = _parts(rf.n_accesses, _threads())
        lives = _check(rf, nctas, wpb, ranges)
        live = sum(lives)
        self.n = n = live if max_rows is None else min(live, max_rows)
        problem = coverage_problem(L.grid, L.block, n)
        if problem:  # the writer would refuse it, naming the output: name the record file here
            raise RecordError(rf.path, 1, f"launch record: {problem}")
        self.dense = nctas * wpb <= DENSE_WARPS
        g_specs = tuple(s for s in objects if _family_of(s.space) == "offchip")
        self.o_specs = tuple(s for s in objects if _family_of(s.space) != "offchip")
        cands = _candidates(rf, g_specs)
        self.c_base = np.array([c["base"] for c in cands], np.uint64)
        self.c_end = np.array([c["base"] + c["size"] for c in cands], np.uint64)
        if n < live:
            ranges, lives = [(0, rf.n_accesses)], [n]
        firsts = np.cumsum([0] + lives[:-1]).tolist()  # each range's first output row

        def gather(a: int, b: int, r0: int) -> _Gathered:
            g = _Gathered(self)
            for at, c, lo, hi, (low, over) in self._converted(a, b, r0):
                g.add(at, c, lo, hi, low, over)
            return g

        got = _each(gather, [(a, b, r0) for (a, b), r0 in zip(ranges, firsts)])
        g = got[0]
        for later in got[1:]:
            g.join(later)
        self.keys = g.keys()  # a larger grid: a warp's index in the second pass's tables
        warps = g.warps if self.dense else int(self.keys.shape[0])
        if g.low >= 0:
            raise RecordError(
                rf.path, rf.record_number(g.low), f"shared address below the window base {L.shared_base:#x}"
            )
        if g.over >= 0:
            raise RecordError(rf.path, rf.record_number(g.over), "shared address beyond the 32-bit shared window")
        if g.bad_pc is not None:
            raise g.bad_pc
        counts = None
        if sass_fn is not None:
            counts = totals(sass_fn, g.per_inst, warps)
            self.block_first, self.block_last = block_bounds(sass_fn)
            self.is_red = reductions(sass_fn)
        self.remap = np.full(len(cands) + 1, -1, np.int16)  # candidate + 1 -> object id
        objs, origins = [], {}
        for ci in np.flatnonzero(g.widths.any(axis=1)).tolist():
            c = cands[ci]
            self.remap[ci + 1] = len(objs)
            s = c["spec"]
            elem = s.elem_bytes if s is not None and s.elem_bytes else int(g.widths[ci].argmax())
            objs.append(ObjectInfo(len(objs), c["name"], "global", c["base"], c["size"], elem,
                                   s.shape if s is not None else None, bool(g.written[ci])))  # fmt: skip
            origins[c["name"]] = c["origin"]
        self.found, self.shift = None, len(objs)
        t, w = g.other.rows()
        if t.shape[0]:
            self.found = infer_from_bounds(t["space"], t["pc"], t["op"], t["width"], t["lo"], t["hi"], weight=w,
                                           explicit=self.o_specs)  # fmt: skip
            _name_other(self.found, objs, origins)
        if g.unknown:
            log.warning("%s: %d global rows touch no allocation (obj -1)", rf.path, g.unknown)
        traced = None
        if ctas and self.dense:  # the blocks that ran of a subset (--ctas): the model scales their time to the launch's
            traced = int(np.count_nonzero(g.seen.reshape(nctas, wpb).any(axis=1)))
        elif ctas:
            traced = int(np.unique(self.keys // wpb).shape[0])
        self.info = kernel_info(rf, objs, origins, n, warps, counts, ctas=ctas, empty_rows=rf.n_accesses - live,
                                cut=n < live, unknown=g.unknown, traced_ctas=traced,
                                mlp=None if sass_fn is None else sass_mlp(sass_fn))  # fmt: skip

    def _converted(self, start: int, stop: int, r0: int, fresh: bool = False):
        """The records ``start`` to ``stop`` converted ``chunk_rows`` at a time, from output row ``r0`` until the
        trace's ``n`` rows: (the part's first output row, its columns (without ``seq`` and ``obj``), its rows'
        lo and hi, (the first shared row below the window's base, the first beyond it; -1 for none)). Without
        ``fresh`` (the first pass), every part is written over the same arrays, and ``addr`` is empty."""
        rf, n, c = self.rf, self.n, self.chunk_rows
        buf = None
        for a in range(start, stop, c):
            if r0 >= n:
                break
            k = min(c, stop - a)
            if buf is None or fresh:
                buf = (np.empty(k, np.int32), np.empty(k, np.int32), np.empty(k, np.int32), np.empty(k, np.int8),
                       np.empty(k, np.int8), np.empty(k, np.int8), np.empty(k, np.uint32),
                       np.empty((k if fresh else 0, WARP_SIZE), np.uint64), np.empty(k, np.uint64),
                       np.empty(k, np.uint64))  # fmt: skip
            out, lo, hi = buf[:8], buf[8], buf[9]
            r, low, over = SK.convert_records(rf.words, rf.spans, a, a + k, 0, min(k, n - r0), rf.launch.shared_base,
                                              SHARED_WINDOW, out, lo, hi, fresh)  # fmt: skip
            cols = dict(zip(("cta", "warp", "pc", "op", "space", "width", "mask", "addr"), (x[:r] for x in out)))
            rf.release(a, a + k)  # a mapped file's pages of this part: read, and let go
            yield r0, cols, lo[:r], hi[:r], (low, over)
            r0 += r

    def _warp_keys(self, c: dict[str, np.ndarray], raw: bool = False) -> np.ndarray:
        """Each row's warp: cta * warps per block + warp (unless ``raw``, in a grid of more than DENSE_WARPS warps:
        its index among the warps that ran)."""
        key = np.empty(c["cta"].shape[0], np.int64)
        SK.warp_keys(c["cta"], c["warp"], self.wpb, key)
        return key if self.dense or raw else np.searchsorted(self.keys, key)

    def parts(self):
        """The trace's columns (the contract's, ``traces.io.COLUMNS``), ``chunk_rows`` records at a time."""
        n_keys = self.nctas * self.wpb if self.dense else self.keys.shape[0]
        fn = self.sass_fn
        if fn is None:
            counters = np.zeros(n_keys, np.int64)
        else:
            prev, pos = np.full(n_keys, -1, np.int64), np.zeros(n_keys, np.int64)
            block = fn.block.astype(np.int64)
        for _, c, lo, hi, _ in self._converted(0, self.rf.n_accesses, 0, fresh=True):
            key = self._warp_keys(c)
            seq = np.empty(key.shape[0], np.int64)
            if fn is None:
                SK.count_seq(key, counters, seq)
            else:
                idx = instruction_index(fn, c["pc"].view(np.uint32))
                SK.sass_seq(idx, key, block, self.block_first, self.block_last, prev, pos, seq)
                c["op"][(c["op"] == ATOMIC) & self.is_red[idx]] = REDUCTION  # a RED the driver reported as an atomic
            cand = np.empty(lo.shape[0], np.int32)
            SK.global_candidates(c["space"], lo, hi, c["op"], c["width"], self.c_base, self.c_end, cand,
                                 np.zeros((self.c_base.shape[0], max(WIDTHS) + 1), np.int64),
                                 np.zeros(self.c_base.shape[0], np.bool_))  # fmt: skip
            obj = self.remap[cand + 1]
            o = np.flatnonzero(c["space"] != GLOBAL)
            if o.size:
                sub = assign_objects(c["space"][o], lo[o], hi[o], self.found, self.o_specs).astype(np.int64)
                obj[o] = np.where(sub >= 0, sub + self.shift, -1)
            yield {"cta": c["cta"], "warp": c["warp"], "seq": seq, "pc": c["pc"], "op": c["op"], "space": c["space"],
                   "width": c["width"], "mask": c["mask"], "addr": c["addr"], "obj": obj}  # fmt: skip


def decode(rf: RecordFile, *, objects: tuple[ObjectSpec, ...] = (), ctas: str | None = None,
           max_rows: int | None = None, sass_fn=None,
           chunk_rows: int = CHUNK_ROWS) -> tuple[dict[str, np.ndarray], KernelInfo]:  # fmt: skip
    """The trace of the launch a record file holds (module docstring), its columns whole: :class:`Decoder`'s
    parts joined. ``sass_fn``, the kernel's :class:`.sass.SassFunction` (nvdisasm of its module's cubin), gives the
    instruction totals and ``seq``."""
    d = Decoder(rf, objects=objects, ctas=ctas, max_rows=max_rows, sass_fn=sass_fn, chunk_rows=chunk_rows)
    return _joined(d), d.info


def _joined(d: Decoder) -> dict[str, np.ndarray]:
    """The decoder's parts joined into whole columns."""
    parts = list(d.parts())
    if len(parts) == 1:
        return parts[0]
    if parts:
        return {k: np.concatenate([p[k] for p in parts]) for k in COLUMNS}
    return {k: np.empty((0, WARP_SIZE) if k == "addr" else 0, NUMPY_DTYPES[k]) for k in COLUMNS}


def _name_other(found, objs: list[ObjectInfo], origins: dict[str, str]) -> None:
    """The shared and local objects (``found``, ``importers.objects``) after the global ones: their ids and names go
    on from ``objs`` (a name already taken gets its id appended); ``objs`` and ``origins`` are filled in place."""
    shift = len(objs)
    taken = {o.name for o in objs}
    for o in found.objects:
        name = o.name if o.name not in taken else f"{o.name}_{o.id + shift}"
        objs.append(ObjectInfo(o.id + shift, name, o.space, o.base, o.size, o.elem_bytes, o.shape, o.written))
        origins[name] = found.report["objects"].get(o.name, "inferred from addresses")


def kernel_info(rf: RecordFile, objs: list[ObjectInfo], origins: dict[str, str], n: int, warps: int, counts,
                *, ctas: str | None, empty_rows: int, cut: bool, unknown: int,
                traced_ctas: int | None = None, mlp: float | None = None) -> KernelInfo:  # fmt: skip
    """The trace's metadata: the launch record's kernel, grid, block, registers and shared memory, the objects, the
    instruction totals (``counts``: the SASS's, else the ``n`` memory instructions over ``warps`` warps), GPUPerf's
    MLP of the kernel's SASS (``mlp``, ``extra.mlp``; :func:`.sass.mlp`: none without the SASS, where the model
    takes 1), the ``source`` that says how each was found, and where ``--ctas`` recorded fewer blocks than the
    grid's, how many ran (``extra.traced_ctas``, ``KernelInfo.traced_ctas``)."""
    L = rf.launch
    source: dict[str, Any] = {
        "format": "sanitizer",
        "file": os.path.abspath(rf.path),
        "launch": L.launch,
        "mangled": L.name,
        "estimated": ["seq", "instructions"],
        "seq": SEQ_NOTE if counts is None else SASS_SEQ_NOTE,
        "instructions": "memory instructions only (no SASS counts)"
        if counts is None
        else (
            f"nvdisasm of the module's cubin: {counts.counted} basic blocks counted from the records, "
            f"{counts.estimated} estimated (traces.sanitizer.sass)"
        ),
        "ctas": ctas or "all",
        "mlp": "memory-level parallelism of the kernel's SASS (traces.sanitizer.sass.mlp)"
        if mlp is not None
        else "no SASS (nvdisasm of the kernel's cubin): the model takes an MLP of 1",
        "rows_recorded": rf.rows_written,
        "rows_without_lanes": empty_rows,
        "max_rows_reached": bool(rf.max_rows_reached or cut),
        "unknown_rows": unknown,
        "allocations": int(rf.allocations.shape[0]),
        "objects": origins,
    }
    return KernelInfo(
        kernel=demangle(L.name),
        grid=L.grid,
        block=L.block,
        objects=tuple(objs),
        instructions=Instructions(executed=n, warps=warps, ldst=n) if counts is None else counts.instructions,
        regs_per_thread=L.regs,
        smem_per_block=L.static_smem + L.dynamic_smem,
        source=source,
        extra={
            "static_smem": L.static_smem,
            "dynamic_smem": L.dynamic_smem,
            "ctas": ctas or "all",
            **({"mlp": mlp} if mlp is not None else {}),
            **({"traced_ctas": traced_ctas} if traced_ctas and traced_ctas < math.prod(L.grid) else {}),
        },
    )


def open_records(path, *, objects: tuple[ObjectSpec, ...] = (), ctas: str | None = None,
                 max_rows: int | None = None, cubin=None) -> Decoder:  # fmt: skip
    """A :class:`Decoder` of a record file (read into memory: a file of the user's is not mapped, which another
    process could cut short under the reader); ``cubin``: the kernel's module, whose SASS gives the instruction
    totals and ``seq``."""
    from .records import read_records

    rf = read_records(path)
    fn = None
    if cubin is not None:
        from .sass import cubin_function

        fn = cubin_function(cubin, rf.launch.name)
    return Decoder(rf, objects=objects, ctas=ctas, max_rows=max_rows, sass_fn=fn)


def import_sanitizer(path, *, objects: tuple[ObjectSpec, ...] = (), ctas: str | None = None,
                     max_rows: int | None = None, cubin=None) -> tuple[dict[str, np.ndarray], KernelInfo]:  # fmt: skip
    """Read a record file and decode it whole (module docstring; :func:`open_records`)."""
    d = open_records(path, objects=objects, ctas=ctas, max_rows=max_rows, cubin=cubin)
    return _joined(d), d.info
