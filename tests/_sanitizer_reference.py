"""The record file's reader and decoder as they were before their numba kernels (commit 9eea656): pure numpy,
kept as the reference the tests compare ``traces.sanitizer.records.read_records`` and ``decode.decode`` with
(tests/test_sanitizer_reference.py). Not used by the library."""

from __future__ import annotations


import numpy as np

from traces.importers import _object_kernels as K
from traces.importers.objects import ObjectSpec, _family_of, infer_objects
from traces.launch import SHARED_WINDOW, coverage_problem
from traces.schema import (
    ATOMIC,
    GLOBAL,
    LOAD,
    LOCAL,
    REDUCTION,
    SHARED,
    STORE,
    WARP_SIZE,
    WIDTHS,
    KernelInfo,
    ObjectInfo,
)
from traces.sanitizer.decode import VALID_FLAGS, _candidates, kernel_info, launch_shape
from traces.sanitizer import sass
from traces.sanitizer.sass import SassCounts, block_bounds, instruction_index, reductions, totals
from traces.sanitizer.records import (
    ACCESS,
    ACCESS_DTYPE,
    ALLOC,
    ALLOC_DTYPE,
    CHUNK,
    END,
    END_DTYPE,
    END_MAX_ROWS,
    F_ATOMIC,
    F_READ,
    F_WRITE,
    HEADER,
    KIND_NAMES,
    LAUNCH,
    RecordError,
    RecordFile,
    _launch,
    check_header,
    checked_allocations,
    file_bytes,
)


def _seq(key: np.ndarray) -> tuple[np.ndarray, int]:
    """(The decoder's before it streamed, commit c2569fb.) Position of each row among the rows of its key, in row
    order; and the number of keys."""
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


def _other_objects(space, pc, op, width, mask, addr, objects: tuple[ObjectSpec, ...], obj: np.ndarray,
                   objs: list[ObjectInfo], origins: dict[str, str]) -> None:  # fmt: skip
    """(The decoder's before it streamed, commit c2569fb.) The shared and local rows' objects, grouped as the other importers do (``importers.objects``), after the
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


def sass_seq_sorted(
    idx: np.ndarray, key: np.ndarray, block: np.ndarray, first: np.ndarray, last: np.ndarray
) -> np.ndarray:
    """(traces.sanitizer.sass's, for grids too large for a table per warp, before the decoder streamed: c2569fb.)
    Each row's position in its warp's instruction stream (the ``seq`` rule of ``traces.sanitizer.sass``'s docstring)
    by a stable sort of the rows by warp (``key``); ``idx``: each row's instruction; ``first``/``last``: each basic
    block's first and last instruction."""
    n = idx.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.argsort(key, kind="stable")
    i, k = idx[order], key[order]
    start = np.r_[True, k[1:] != k[:-1]]
    prev = np.r_[0, i[:-1]]
    b, pb = block[i], block[prev]
    same = (b == pb) & (i > prev)
    gap = np.where(same, i - prev, (last[pb] - prev) + (i - first[b]) + 1)
    gap = np.where(start, i, gap)  # a warp's first row: the instructions before it on the straight path
    pos = np.cumsum(gap)
    base = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    pos = pos - pos[base] + i[base]
    seq = np.empty(n, np.int64)
    seq[order] = pos
    return seq


def sass_counts(fn, pc: np.ndarray, key: np.ndarray, warps: int, where: str = "trace") -> SassCounts:
    """(traces.sanitizer.sass's whole-array form before the decoder streamed: c2569fb.) Totals and ``seq`` of a
    kernel's rows (``pc``: each row's offset; ``key``: its warp, rows in each warp's order; ``warps``: the warps
    that ran), ``seq`` by the sort (:func:`sass_seq_sorted`), not the decoder's one-pass table; InputError when a
    row's pc is not an instruction of ``fn``."""
    idx = instruction_index(fn, pc, where)
    t = totals(fn, np.bincount(idx, minlength=fn.offsets.shape[0]).astype(np.int64), warps)
    first, last = block_bounds(fn)
    seq = sass_seq_sorted(idx, np.asarray(key, np.int64), fn.block, first, last)
    return SassCounts(t.instructions, seq, t.counted, t.estimated, reductions(fn)[idx])


def read_records(path) -> RecordFile:
    """Read a record file (module docstring). Truncated or corrupt files raise :class:`RecordError`."""
    p = str(path)
    data = file_bytes(p)  # opening the file, and its errors, are the live reader's
    return _parse(p, memoryview(data), len(data))


def _parse(p: str, buf: memoryview, size: int) -> RecordFile:
    check_header(p, buf, size)  # the live reader's
    off = HEADER.itemsize
    record = 0
    launch = None
    allocs: list[np.ndarray] = []
    chunks: list[np.ndarray] = []
    numbers: list[np.ndarray] = []
    end = None
    while off < size:
        if end is not None:
            raise RecordError(p, record + 1, f"data after the end record (byte {off})")
        if size - off < CHUNK.itemsize:
            raise RecordError(p, record + 1, f"truncated chunk header at byte {off}")
        c = np.frombuffer(buf, CHUNK, count=1, offset=off)[0]
        kind, count = int(c["kind"]), int(c["count"])
        off += CHUNK.itemsize
        if kind not in KIND_NAMES:
            raise RecordError(p, record + 1, f"unknown record kind {kind} at byte {off - CHUNK.itemsize}")
        if (kind == LAUNCH) != (launch is None):
            raise RecordError(p, record + 1, "the launch record must come first, once")
        item = {ALLOC: ALLOC_DTYPE.itemsize, ACCESS: ACCESS_DTYPE.itemsize}.get(kind, 1)
        if kind == END and count != END_DTYPE.itemsize:
            raise RecordError(p, record + 1, f"end record of {count} bytes, expected {END_DTYPE.itemsize}")
        nbytes = count * item
        if nbytes > size - off:
            whole = (size - off) // item if kind in (ALLOC, ACCESS) else 0
            raise RecordError(p, record + 1 + whole, f"truncated {KIND_NAMES[kind]} record: the file ends at byte "
                              f"{size}, the chunk at byte {off} claims {nbytes} bytes (the tracer was killed?)")  # fmt: skip
        payload = buf[off : off + nbytes]
        if kind == LAUNCH:
            record += 1
            launch = _launch(p, payload, record)
        elif kind == ALLOC:
            allocs.append(checked_allocations(p, payload, count, record + 1))  # the live reader's check
            record += count
        elif kind == ACCESS:
            chunks.append(np.frombuffer(payload, ACCESS_DTYPE, count=count))
            numbers.append(np.arange(record + 1, record + 1 + count, dtype=np.int64))
            record += count
        else:
            record += 1
            end = np.frombuffer(payload, END_DTYPE, count=1)[0]
        off += nbytes
    if launch is None:
        raise RecordError(p, None, "no launch record (the kernel never launched?)")
    if end is None:
        raise RecordError(
            p, record + 1, "no end record: the file was cut short (the program or the tracer was killed?)"
        )
    accesses = np.concatenate(chunks) if chunks else np.zeros(0, ACCESS_DTYPE)  # copies out of the map
    allocations = np.concatenate(allocs) if allocs else np.zeros(0, ALLOC_DTYPE)
    if int(end["rows"]) != accesses.shape[0]:
        raise RecordError(
            p, record, f"end record counts {int(end['rows'])} accesses, the file holds {accesses.shape[0]}"
        )
    # the live reader's RecordFile over the concatenated records: one span per non-empty chunk
    counts = np.array([c.shape[0] for c in chunks], np.int64)
    rows = np.cumsum(counts) - counts
    spans = np.stack([rows * (ACCESS_DTYPE.itemsize // 8), counts, rows,
                      np.array([int(x[0]) if x.size else 0 for x in numbers], np.int64)], axis=1)  # fmt: skip
    spans = spans[counts > 0].reshape(-1, 4)
    words = accesses.view(np.uint64)
    return RecordFile(p, launch, allocations, words, spans, int(end["rows"]), bool(int(end["flags"]) & END_MAX_ROWS))


def _check(rf: RecordFile, acc: np.ndarray, nctas: int, wpb: int) -> None:
    """The first access record that breaks the format is an error naming it."""
    f = acc["flags"]
    bad_flags = ~np.isin(f, VALID_FLAGS)
    checks = (
        (~np.isin(acc["space"], (GLOBAL, LOCAL, SHARED)), "space {} (expected 0 global, 1 local or 2 shared)", "space"),
        (~np.isin(acc["width"], WIDTHS), "width {} (expected one of 1, 2, 4, 8, 16)", "width"),
        (bad_flags, "access flags {} (expected 1 read, 2 write, 7 atomic or 6 reduction)", "flags"),
        (acc["cta"].astype(np.int64) >= nctas, f"block {{}} beyond the launch's {nctas} blocks", "cta"),
        (acc["warp"].astype(np.int64) >= wpb, f"warp {{}} beyond the block's {wpb} warps", "warp"),
    )
    for bad, msg, col in checks:
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise RecordError(rf.path, int(rf.access_records[i]), msg.format(int(acc[col][i])))


def _global_objects(rf, rows, lo, hi, op, width, specs, obj):
    """Assign global rows to explicit objects or allocations; returns (objects, origins, unknown rows)."""
    cands = _candidates(rf, specs)  # the candidate list is the live decoder's; the assignment is this one's
    if rows.size and cands:
        base = np.array([c["base"] for c in cands], np.uint64)
        end = np.array([c["base"] + c["size"] for c in cands], np.uint64)
        j = np.searchsorted(base, lo[rows], side="right") - 1
        jj = np.maximum(j, 0)
        inside = (j >= 0) & (lo[rows] >= base[jj]) & (hi[rows] <= end[jj])
        cand = np.where(inside, jj, -1)
    else:
        cand = np.full(rows.size, -1, np.int64)
    objects, origins = [], {}
    for ci in np.unique(cand[cand >= 0]).tolist():
        c = cands[ci]
        sel = rows[cand == ci]
        oid = len(objects)
        obj[sel] = oid
        s = c["spec"]
        elem = s.elem_bytes if s is not None and s.elem_bytes else int(np.bincount(width[sel]).argmax())
        objects.append(ObjectInfo(oid, c["name"], "global", c["base"], c["size"], elem,
                                  s.shape if s is not None else None, bool((op[sel] != LOAD).any())))  # fmt: skip
        origins[c["name"]] = c["origin"]
    return objects, origins, int((cand < 0).sum())


def decode(rf: RecordFile, *, objects: tuple[ObjectSpec, ...] = (), ctas: str | None = None,
           max_rows: int | None = None, sass_fn=None) -> tuple[dict[str, np.ndarray], KernelInfo]:  # fmt: skip
    """The trace of the launch a record file holds (module docstring). ``sass_fn``, the kernel's
    :class:`.sass.SassFunction` (nvdisasm of its module's cubin), gives the instruction totals and ``seq``."""
    L = rf.launch
    nctas, wpb = launch_shape(rf)  # the live decoder's check
    acc = rf.accesses
    _check(rf, acc, nctas, wpb)
    mask = acc["mask"].copy()
    live = mask != 0
    empty_rows = int((~live).sum())
    cut = False
    records = rf.access_records  # of each row kept (an error names the record)
    if not live.all():
        acc, mask, records = acc[live], mask[live], records[live]
    if max_rows is not None and acc.shape[0] > max_rows:
        acc, mask, cut = acc[:max_rows], mask[:max_rows], True
    n = acc.shape[0]
    problem = coverage_problem(L.grid, L.block, n)
    if problem:  # the writer would refuse it, naming the output: name the record file here
        raise RecordError(rf.path, 1, f"launch record: {problem}")
    flags = acc["flags"]
    op = np.where(flags & F_ATOMIC != 0, np.where(flags & F_READ != 0, ATOMIC, REDUCTION),
                  np.where(flags & F_WRITE != 0, STORE, LOAD)).astype(np.int8)  # fmt: skip
    space = acc["space"].astype(np.int8)
    width = acc["width"].astype(np.int8)
    lanes = ((mask[:, None] >> np.arange(WARP_SIZE, dtype=np.uint32)) & 1).astype(bool)
    addr = np.where(lanes, acc["addr"], np.uint64(0)).astype(np.uint64)
    sh = space == SHARED
    if sh.any():
        if L.shared_base:
            low = lanes & sh[:, None] & (addr < np.uint64(L.shared_base))
            if low.any():
                i = int(np.flatnonzero(low.any(axis=1))[0])
                raise RecordError(rf.path, int(records[i]), f"shared address below the window base {L.shared_base:#x}")
            addr[sh] = np.where(lanes[sh], addr[sh] - np.uint64(L.shared_base), np.uint64(0))
        over = lanes & sh[:, None] & (addr + width.astype(np.uint64)[:, None] > np.uint64(SHARED_WINDOW))
        if over.any():
            i = int(np.flatnonzero(over.any(axis=1))[0])
            raise RecordError(rf.path, int(records[i]), "shared address beyond the 32-bit shared window")
    cta = acc["cta"].astype(np.int32)
    warp = acc["warp"].astype(np.int32)
    key = cta.astype(np.int64) * wpb + warp
    seq, warps = _seq(key)
    counts = None
    if sass_fn is not None:
        counts = sass_counts(sass_fn, acc["pc"].astype(np.int64), key, warps, where=str(rf.path))
        seq = counts.seq
    lo = np.zeros(n, np.uint64)
    hi = np.zeros(n, np.uint64)
    if n:
        K.row_bounds(mask, addr, width, lo, hi)
    obj = np.full(n, -1, np.int16)
    g_specs = tuple(s for s in objects if _family_of(s.space) == "offchip")
    glob = np.flatnonzero(space == GLOBAL)
    objs, origins, unknown = _global_objects(rf, glob, lo, hi, op, width, g_specs, obj)
    # the shared and local rows' objects and the metadata were not rewritten with the kernels: the live code's
    _other_objects(space, acc["pc"].astype(np.int32), op, width, mask, addr, objects, obj, objs, origins)
    cols = {"cta": cta, "warp": warp, "seq": seq, "pc": acc["pc"].astype(np.int32), "op": op, "space": space,
            "width": width, "mask": mask.astype(np.uint32), "addr": addr, "obj": obj}  # fmt: skip
    # the MLP rule is not the decoder's to check here (tests/test_sanitizer_sass.py works it by hand)
    mlp = None if sass_fn is None else sass.mlp(sass_fn)
    info = kernel_info(rf, objs, origins, n, warps, counts, ctas=ctas, empty_rows=empty_rows, cut=cut,
                       unknown=unknown, mlp=mlp)  # fmt: skip
    return cols, info
