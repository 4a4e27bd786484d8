"""Records of one traced launch -> trace columns and metadata (the trace contract, DESIGN.md).

In two passes of numba kernels over the access records where the record file's bytes hold them (``_kernels``:
one checks them, one writes the columns; no per-row Python):

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
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..codes import ATOMIC, REDUCTION
from ..importers.objects import ObjectSpec, _family_of, infer_objects
from ..launch import SHARED_WINDOW, coverage_problem, launch_problem
from ..schema import (
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

log = logging.getLogger(__name__)

# What the device callbacks write (patches.cu, access_flags): a load, a store, an atomic that returns its
# value, an atomic that only writes (a reduction).
VALID_FLAGS = (F_READ, F_WRITE, F_ATOMIC | F_READ | F_WRITE, F_ATOMIC | F_WRITE)
SEQ_NOTE = "position among the warp's memory instructions (the records hold no other instructions)"
# The most warps whose seq is counted in a table of one int64 per warp of the grid, however few the rows
# (128 MiB; above it, one per row at most: traces.io._Checker's rule); a larger grid sorts the rows by warp.
DENSE_WARPS = 1 << 24
# The check and the conversion share the records among threads (_threads: the cores, at most MAX_THREADS), each a
# part of the rows in file order, from PARALLEL_ROWS rows.
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
    return [int(v) for v in lives]


def _seq(key: np.ndarray) -> tuple[np.ndarray, int]:
    """Position of each row among the rows of its key, in row order; and the number of keys."""
    n = key.shape[0]
    if n == 0:
        return np.zeros(0, np.int64), 0
    order = np.argsort(key, kind="stable")
    sk = key[order]
    start = np.r_[True, sk[1:] != sk[:-1]]
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    seq = np.empty(n, np.int64)
    seq[order] = np.arange(n) - first
    return seq, int(start.sum())


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


def _global_objects(rf, space, lo, hi, op, width, specs, obj):
    """Assign global rows to explicit objects or allocations (``obj``); returns (objects, origins, unknown rows)."""
    cands = _candidates(rf, specs)
    base = np.array([c["base"] for c in cands], np.uint64)
    end = np.array([c["base"] + c["size"] for c in cands], np.uint64)
    cand = np.empty(space.shape[0], np.int32)
    widths = np.zeros((len(cands), max(WIDTHS) + 1), np.int64)
    written = np.zeros(len(cands), np.bool_)
    unknown = SK.global_candidates(space, lo, hi, op, width, base, end, cand, widths, written)
    remap = np.full(len(cands) + 1, -1, obj.dtype)  # candidate + 1 -> object id
    objects, origins = [], {}
    for ci in np.flatnonzero(widths.any(axis=1)).tolist():
        c = cands[ci]
        oid = len(objects)
        remap[ci + 1] = oid
        s = c["spec"]
        elem = s.elem_bytes if s is not None and s.elem_bytes else int(widths[ci].argmax())
        objects.append(ObjectInfo(oid, c["name"], "global", c["base"], c["size"], elem,
                                  s.shape if s is not None else None, bool(written[ci])))  # fmt: skip
        origins[c["name"]] = c["origin"]
    obj[:] = remap[cand + 1]
    return objects, origins, int(unknown)


def launch_shape(rf: RecordFile) -> tuple[int, int]:
    """The launch's blocks and warps per block; a grid or block CUDA cannot launch is an error naming record 1."""
    L = rf.launch
    problem = launch_problem(L.grid, L.block)
    if problem:
        raise RecordError(rf.path, 1, f"launch record: {problem}")
    return L.grid[0] * L.grid[1] * L.grid[2], -(-(L.block[0] * L.block[1] * L.block[2]) // WARP_SIZE)


def decode(rf: RecordFile, *, objects: tuple[ObjectSpec, ...] = (), ctas: str | None = None,
           max_rows: int | None = None, sass_fn=None) -> tuple[dict[str, np.ndarray], KernelInfo]:  # fmt: skip
    """The trace of the launch a record file holds (module docstring). ``sass_fn``, the kernel's
    :class:`.sass.SassFunction` (nvdisasm of its module's cubin), gives the instruction totals and ``seq``."""
    L = rf.launch
    nctas, wpb = launch_shape(rf)
    threads = _threads()
    parts = _parts(rf.n_accesses, threads)
    lives = _check(rf, nctas, wpb, parts)
    live = sum(lives)
    empty_rows = rf.n_accesses - live
    n = live if max_rows is None else min(live, max_rows)
    cut = n < live
    problem = coverage_problem(L.grid, L.block, n)
    if problem:  # the writer would refuse it, naming the output: name the record file here
        raise RecordError(rf.path, 1, f"launch record: {problem}")
    cta, warp, pc = np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.int32)
    op, space, width = np.empty(n, np.int8), np.empty(n, np.int8), np.empty(n, np.int8)
    mask, addr = np.empty(n, np.uint32), np.empty((n, WARP_SIZE), np.uint64)
    lo, hi, seq = np.empty(n, np.uint64), np.empty(n, np.uint64), np.empty(n, np.int64)
    # seq counted per warp in the same pass where the grid's warps are few enough to count each
    # (at most one counter per row, or 2^24, as traces.io's checker); else sorted by warp below
    dense = nctas * wpb <= max(DENSE_WARPS, n)
    if dense and nctas * wpb > rf.n_accesses:  # a table of counters per part: only while they are fewer than rows
        parts, lives = [(0, rf.n_accesses)], [live]
    starts = np.cumsum([0] + lives[:-1]).clip(max=n).tolist()  # each part's first output row
    counters = np.zeros((len(parts), nctas * wpb if dense else 0), np.int64)
    out = (cta, warp, pc, op, space, width, mask, addr)
    done = _each(SK.convert_records, [(rf.words, rf.spans, a, b, r, n, L.shared_base, SHARED_WINDOW, wpb, out, lo, hi,
                                       seq, counters[k]) for k, ((a, b), r) in enumerate(zip(parts, starts))])  # fmt: skip
    warps = done[0][1]
    if dense:
        warps += SK.join_parts(cta, warp, seq, np.array([d[0] for d in done], np.int64), wpb, counters)
    del counters
    low = next((d[2] for d in done if d[2] >= 0), -1)  # the first in file order
    over = next((d[3] for d in done if d[3] >= 0), -1)
    if low >= 0:
        raise RecordError(rf.path, rf.record_number(low), f"shared address below the window base {L.shared_base:#x}")
    if over >= 0:
        raise RecordError(rf.path, rf.record_number(over), "shared address beyond the 32-bit shared window")
    key = None
    if not dense:
        key = cta.astype(np.int64) * wpb + warp
        seq, warps = _seq(key)
    counts = None
    if sass_fn is not None:
        from .sass import sass_counts

        if key is None:
            key = cta.astype(np.int64) * wpb + warp
        counts = sass_counts(sass_fn, pc.view(np.uint32).astype(np.int64), key, warps, where=str(rf.path))
        seq = counts.seq
        op[(op == ATOMIC) & counts.reduction] = REDUCTION  # a RED the driver reported as an atomic (sass.py)
    obj = np.full(n, -1, np.int16)
    g_specs = tuple(s for s in objects if _family_of(s.space) == "offchip")
    objs, origins, unknown = _global_objects(rf, space, lo, hi, op, width, g_specs, obj)
    _other_objects(space, pc, op, width, mask, addr, objects, obj, objs, origins)
    if unknown:
        log.warning("%s: %d global rows touch no allocation (obj -1)", rf.path, unknown)
    cols = {"cta": cta, "warp": warp, "seq": seq, "pc": pc, "op": op, "space": space, "width": width, "mask": mask,
            "addr": addr, "obj": obj}  # fmt: skip
    info = kernel_info(rf, objs, origins, n, warps, counts, ctas=ctas, empty_rows=empty_rows, cut=cut,
                       unknown=unknown)  # fmt: skip
    return cols, info


def _other_objects(space, pc, op, width, mask, addr, objects: tuple[ObjectSpec, ...], obj: np.ndarray,
                   objs: list[ObjectInfo], origins: dict[str, str]) -> None:  # fmt: skip
    """The shared and local rows' objects, grouped as the other importers do (``importers.objects``), after the
    global ones: their ids and names go on from ``objs`` (a name already taken gets its id appended); ``obj``,
    ``objs`` and ``origins`` are filled in place."""
    other = np.flatnonzero(space != GLOBAL)
    if not other.size:
        return
    o_specs = tuple(s for s in objects if _family_of(s.space) != "offchip")
    found = infer_objects(space[other], pc[other], op[other], width[other], mask[other], addr[other],
                          explicit=o_specs)  # fmt: skip
    shift = len(objs)
    sub = found.obj.astype(np.int64)
    obj[other] = np.where(sub >= 0, sub + shift, -1)
    taken = {o.name for o in objs}
    for o in found.objects:
        name = o.name if o.name not in taken else f"{o.name}_{o.id + shift}"
        objs.append(ObjectInfo(o.id + shift, name, o.space, o.base, o.size, o.elem_bytes, o.shape, o.written))
        origins[name] = found.report["objects"].get(o.name, "inferred from addresses")


def kernel_info(rf: RecordFile, objs: list[ObjectInfo], origins: dict[str, str], n: int, warps: int, counts,
                *, ctas: str | None, empty_rows: int, cut: bool, unknown: int) -> KernelInfo:  # fmt: skip
    """The trace's metadata: the launch record's kernel, grid, block, registers and shared memory, the objects, the
    instruction totals (``counts``: the SASS's, else the ``n`` memory instructions over ``warps`` warps) and the
    ``source`` that says how each was found."""
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
        extra={"static_smem": L.static_smem, "dynamic_smem": L.dynamic_smem, "ctas": ctas or "all"},
    )


def import_sanitizer(path, *, objects: tuple[ObjectSpec, ...] = (), ctas: str | None = None,
                     max_rows: int | None = None, cubin=None) -> tuple[dict[str, np.ndarray], KernelInfo]:  # fmt: skip
    """Read a record file and decode it (module docstring); ``cubin``: the kernel's module, whose SASS gives the
    instruction totals and ``seq``."""
    from .records import read_records

    rf = read_records(path)
    fn = None
    if cubin is not None:
        from .sass import cubin_function

        fn = cubin_function(cubin, rf.launch.name)
    return decode(rf, objects=objects, ctas=ctas, max_rows=max_rows, sass_fn=fn)
