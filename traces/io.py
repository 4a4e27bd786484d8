"""Trace file I/O (Parquet, or Arrow IPC for fast reads), with validation against the trace contract.

``read`` returns the whole trace as numpy columns (``addr`` (n, 32) uint64: a view of
Arrow's buffer for a file of one row group, else decoded batch by batch into them);
``iter_batches`` streams row groups for traces larger than memory; ``write`` checks
the columns against the same rules and writes atomically (temporary file, then rename).

The container is Parquet (DESIGN.md's contract), or an Arrow IPC file with the same schema
and metadata (``traces.ipcfile``): read by its first bytes, written by the path's suffix
(``.arrow``, ``.feather``, ``.ipc``).
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Callable, Iterable, Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.ipc  # noqa: F401 (pa.ipc)
import pyarrow.parquet as pq

from . import _kernels as K
from .atomic import atomic_path, check_output_folder
from .errors import TraceError
from .ipcfile import IpcTraceFile, sniff, wants_ipc
from .launch import coverage_problem
from .schema import ARROW_SCHEMA, COLUMNS, METADATA_KEY, NUMPY_DTYPES, OP_NAMES, SPACE_NAMES, WARP_SIZE, KernelInfo

log = logging.getLogger(__name__)

DEFAULT_BATCH_ROWS = 1 << 18
# Row-group size on write: large enough for fast scans, small enough that a
# streaming reader holds little (2^18 rows of 282 bytes is about 70 MiB).
ROW_GROUP_ROWS = 1 << 18


@dataclass(frozen=True)
class Trace:
    """Columns of a trace (or of one batch of it) and the kernel's metadata.

    ``start`` is the file row of the first row held here (0 for a whole trace).
    """

    cta: np.ndarray
    warp: np.ndarray
    seq: np.ndarray
    pc: np.ndarray
    op: np.ndarray
    space: np.ndarray
    width: np.ndarray
    mask: np.ndarray
    addr: np.ndarray
    obj: np.ndarray
    info: KernelInfo
    start: int = 0

    def __len__(self) -> int:
        return int(self.cta.shape[0])

    def columns(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in COLUMNS}


_COLUMN_FIELDS = {f.name for f in fields(Trace)} - {"info", "start"}
assert _COLUMN_FIELDS == set(COLUMNS)


class _Checker:
    """Carries validation state (last seq per warp) across batches.

    The state is one int64 per warp of the grid while the grid has at most
    max(DENSE_WARPS, rows) warps (at most 8 bytes per row of the input: its
    addresses alone are 256); above that (a grid up to ``traces.launch``'s 64 warps
    per row), an open-addressing hash table of the warps present in the rows
    (``_kernels.warp_slots``), at most half full, so memory follows the data, not the
    metadata's claim, and each row costs the same however many warps came before.
    (The sorted key array this replaced was re-merged on every batch: quadratic.)
    """

    DENSE_WARPS = 1 << 24
    MIN_TABLE = 1 << 10

    def __init__(self, path: str, info: KernelInfo, rows: int = 0):
        self.path = path
        self.info = info
        self.rows = rows
        n_ids = info.n_ids
        self.obj_lo = np.zeros(n_ids, dtype=np.uint64)
        self.obj_hi = np.zeros(n_ids, dtype=np.uint64)
        self.obj_written = np.zeros(n_ids, dtype=np.uint8)
        for o in info.objects:
            self.obj_lo[o.id] = o.base
            self.obj_hi[o.id] = o.end
            self.obj_written[o.id] = o.written
        self.wpb = info.warps_per_block
        self.dense = info.ctas * self.wpb <= max(self.DENSE_WARPS, rows)
        self.last_seq = np.full(info.ctas * self.wpb if self.dense else 0, -1, dtype=np.int64)
        self.table = np.full(0, -1, dtype=np.int64)  # sparse: the warps seen, hashed; -1 empty
        self.shift = 64  # the table's hash shift, 64 - log2(its size)
        self.used = 0
        self._no_slots = np.zeros(0, dtype=np.int64)
        # the blocks the rows hold, where extra.traced_ctas says fewer than the grid's were recorded
        self.traced = int(info.extra["traced_ctas"]) if info.extra.get("traced_ctas") else None
        self.ctas_seen = np.zeros(0, dtype=np.int64)

    def _grow(self, rows: int) -> None:
        """Room for ``rows`` more warps with the table at most half full (doubling: linear in all)."""
        need = 2 * (self.used + rows)
        if self.table.size >= need:
            return
        size = max(self.MIN_TABLE, self.table.size)
        while size < need:
            size *= 2
        table = np.full(size, -1, dtype=np.int64)
        last = np.full(size, -1, dtype=np.int64)
        shift = 64 - size.bit_length() + 1
        K.rehash(self.table, self.last_seq, table, last, shift)
        self.table, self.last_seq, self.shift = table, last, shift

    def _slots(self, t: Trace) -> np.ndarray:
        if self.dense:
            return self._no_slots  # empty: the kernel indexes by warp
        self._grow(len(t))
        slots = np.empty(len(t), dtype=np.int64)
        self.used += K.warp_slots(self.table, t.cta, t.warp, self.info.ctas, self.wpb, self.shift, slots)
        return slots

    def _check_traced(self, t: Trace) -> None:
        """The rows hold no more blocks than ``extra.traced_ctas`` says were recorded (the model scales the
        time by the launch's blocks over those: 1 said where the rows held 64 made a kernel 64x slower)."""
        self.ctas_seen = np.union1d(self.ctas_seen, np.unique(t.cta))
        if self.ctas_seen.size > self.traced:
            raise TraceError(self.path, f"the rows hold {'at least ' if t.start + len(t) < self.rows else ''}"
                             f"{self.ctas_seen.size:,} blocks, more than the {self.traced:,} it says were traced",
                             field="extra.traced_ctas")  # fmt: skip

    def check(self, t: Trace) -> None:
        slots = self._slots(t)  # first: it may grow last_seq
        code, i, extra = K.check_rows(
            t.cta, t.warp, t.seq, t.op, t.space, t.width, t.mask, t.addr, t.obj,
            self.info.ctas, self.wpb, self.obj_lo, self.obj_hi, self.obj_written, self.last_seq, slots,
        )  # fmt: skip
        if code == K.OK:
            if self.traced is not None:
                self._check_traced(t)
            return
        row = t.start + int(i)
        p = self.path
        if code == K.BAD_WIDTH:
            raise TraceError(p, f"width {t.width[i]} is not one of 1, 2, 4, 8, 16", row=row, field="width")
        if code == K.BAD_OP:
            raise TraceError(
                p, f"op {t.op[i]} is not 0 (load), 1 (store), 2 (atomic) or 3 (reduction)", row=row, field="op"
            )
        if code == K.BAD_SPACE:
            names = ", ".join(f"{c} {n}" for c, n in enumerate(SPACE_NAMES))
            raise TraceError(p, f"space {t.space[i]} is not one of {names}", row=row, field="space")
        if code == K.BAD_OBJ:
            ids = ", ".join(str(o.id) for o in self.info.objects) or "none"
            raise TraceError(
                p, f"obj {t.obj[i]} is not an object id in the metadata (ids: {ids}; -1 for none)", row=row, field="obj"
            )
        op = OP_NAMES[t.op[i]] if 0 <= t.op[i] < len(OP_NAMES) else "write"
        an = f"{'an' if op[0] in 'aeiou' else 'a'} {op}"
        if code == K.WRITE_READ_ONLY_SPACE:
            raise TraceError(p, f"{an} in {SPACE_NAMES[t.space[i]]} space, which kernels only read",
                             row=row, field="op")  # fmt: skip
        if code == K.WRITE_UNWRITTEN:
            o = self.info.object(int(t.obj[i]))
            raise TraceError(p, f"{an} on object '{o.name}', whose metadata says it is not written "
                             f"(objects[{self.info.objects.index(o)}].written)", row=row, field="op")  # fmt: skip
        if code == K.BAD_CTA:
            raise TraceError(p, f"cta {t.cta[i]} outside the grid of {self.info.ctas} blocks", row=row, field="cta")
        if code == K.BAD_WARP:
            raise TraceError(p, f"warp {t.warp[i]} outside the block's {self.wpb} warps", row=row, field="warp")
        if code == K.BAD_SEQ:
            raise TraceError(
                p,
                f"seq {t.seq[i]} after {extra} for (cta {t.cta[i]}, warp {t.warp[i]}); seq must increase per warp",
                row=row,
                field="seq",
            )
        if code == K.INACTIVE_ADDR:
            raise TraceError(
                p,
                f"lane {extra} is inactive (mask {t.mask[i]:#010x}) but has address {t.addr[i, extra]:#x}",
                row=row,
                field="addr",
            )
        if code == K.OUTSIDE_OBJ:
            o = self.info.object(int(t.obj[i]))
            a = int(t.addr[i, extra])
            raise TraceError(
                p,
                f"lane {extra} address {a:#x} (+{t.width[i]} B) is outside object '{o.name}' [{o.base:#x}, {o.end:#x})",
                row=row,
                field="addr",
            )
        raise AssertionError(code)  # pragma: no cover


def validate(trace: Trace, path: str = "<memory>") -> None:
    """Check in-memory columns against the trace contract (as ``read`` checks a file)."""
    _check_coverage(str(path), trace.info, len(trace))
    _Checker(str(path), trace.info, len(trace)).check(trace)


def _check_coverage(path: str, info: KernelInfo, rows: int) -> None:
    """The grid against the rows (``traces.launch``): before anything is sized by the grid."""
    problem = coverage_problem(info.grid, info.block, rows)
    if problem:
        raise TraceError(path, problem, field="grid")
    if info.instructions.executed < rows:  # each row is a warp-level memory instruction the kernel executed
        raise TraceError(path, f"{info.instructions.executed:,} executed warp-instructions, but the trace has {rows:,} "
                         "rows, each a memory instruction executed", field="instructions.executed")  # fmt: skip


def _metadata(path: str, schema: pa.Schema) -> KernelInfo:
    meta = schema.metadata or {}
    if METADATA_KEY not in meta:
        raise TraceError(
            path,
            f"missing schema metadata key '{METADATA_KEY.decode()}' (not a placement trace?)",
            field=METADATA_KEY.decode(),
        )
    return KernelInfo.from_json(meta[METADATA_KEY], path)


def _check_schema(path: str, schema: pa.Schema) -> None:
    for f in ARROW_SCHEMA:
        idx = schema.get_field_index(f.name)
        if idx < 0:
            raise TraceError(path, f"missing column '{f.name}' ({f.type})", field=f.name)
        got = schema.field(idx).type
        if f.name == "addr":
            ok = pa.types.is_fixed_size_list(got) and got.list_size == WARP_SIZE and got.value_type == pa.uint64()
        else:
            ok = got == f.type
        if not ok:
            raise TraceError(path, f"column '{f.name}' has type {got}, expected {f.type}", field=f.name)


# Streamed reads buffer this much of a column chunk at a time instead of whole
# row groups, which keeps a reader's memory flat however large the trace.
STREAM_BUFFER_BYTES = 1 << 22


# Arrow layouts a trace cannot be in, and what to do instead.
UNREAD_LAYOUTS = {
    "ipc-stream": "an Arrow IPC stream, not an IPC file: write traces with pyarrow.ipc.new_file "
                  "(or traces.write to a .arrow name), which keeps the footer a reader seeks by",
    "feather-v1": "a Feather version 1 file: rewrite it as Feather version 2 (an Arrow IPC file: "
                  "pyarrow.feather.write_feather's default) or as Parquet",
}  # fmt: skip


def _open(path, streaming: bool = False) -> tuple[str, pq.ParquetFile | IpcTraceFile, KernelInfo]:
    p = str(path)
    if not os.path.exists(p):
        raise TraceError(p, "no such file")
    if os.path.isdir(p):
        raise TraceError(p, "is a folder, expected a file")
    kind = "trace"
    try:
        layout = sniff(p)
        if layout in UNREAD_LAYOUTS:
            raise TraceError(p, UNREAD_LAYOUTS[layout])
        if layout == "ipc":
            kind = "Arrow IPC"
            pf = IpcTraceFile(p)
        else:
            kind = "Parquet"
            pf = (
                pq.ParquetFile(p, buffer_size=STREAM_BUFFER_BYTES, pre_buffer=False) if streaming else pq.ParquetFile(p)
            )
        schema = pf.schema_arrow
    except TraceError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:  # ValueError: names that are not UTF-8
        raise TraceError(p, f"not a readable {kind} file (truncated or not {kind}): {exc}") from None
    _check_schema(p, schema)
    info = _metadata(p, schema)
    _check_coverage(p, info, pf.metadata.num_rows)
    return p, pf, info


def num_rows(path) -> int:
    """The number of rows of a trace file, from its footer."""
    return _open(path)[1].metadata.num_rows


def _view(col: pa.Array) -> np.ndarray:
    """A read-only numpy view of a null-free primitive column, through DLPack: Arrow's
    ``to_numpy`` goes through its pandas conversion, which imports pandas (0.25 s of CPU)."""
    return np.from_dlpack(col)


def _numpy_columns(path: str, batch: pa.RecordBatch | pa.Table, start: int, info: KernelInfo) -> Trace:
    cols = {}
    for name in COLUMNS:
        col = batch.column(name)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if col.null_count:
            i = int(np.flatnonzero(~np.asarray(col.is_valid()))[0])
            raise TraceError(path, "null value", row=start + i, field=name)
        if name == "addr":
            # the lanes of these rows (flatten() would import pyarrow.compute: 0.03 s of CPU)
            values = col.values.slice(col.offset * col.type.list_size, len(col) * col.type.list_size)
            if values.null_count:
                i = int(np.flatnonzero(~np.asarray(values.is_valid()))[0]) // WARP_SIZE
                raise TraceError(path, "null lane address", row=start + i, field="addr")
            arr = _view(values).reshape(-1, WARP_SIZE)
        else:
            arr = _view(col)
        cols[name] = arr
    return Trace(**cols, info=info, start=start)


def read_info(path) -> KernelInfo:
    """The metadata of a trace, reading only the file footer."""
    return _open(path)[2]


def _batches(p: str, pf: pq.ParquetFile | IpcTraceFile, rows: int) -> Iterator[pa.RecordBatch]:
    """The file's record batches of at most ``rows`` rows, decoding errors as TraceError."""
    start = 0
    it = pf.iter_batches(batch_size=rows, columns=list(COLUMNS), use_threads=True)
    while True:
        try:
            batch = next(it)
        except StopIteration:
            return
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise TraceError(p, f"cannot decode the data after row {start} (truncated or corrupt): {exc}") from None
        start += batch.num_rows
        yield batch


def read(path, *, validate: bool = True) -> Trace:
    """Read a whole trace into numpy columns, validated.

    A file of one row group gives views of Arrow's buffers; a larger one is decoded a batch
    at a time straight into the columns, so reading holds the trace once plus one batch
    (Arrow's whole-table read of a 10 M-row trace peaks near 2.5 times the trace, with the
    copy that joins the row groups' chunks).
    """
    p, pf, info = _open(path, streaming=True)
    if pf.metadata.num_row_groups <= 1:  # one chunk: the columns are views of Arrow's buffers, no copy
        try:
            table = pf.read(columns=list(COLUMNS), use_threads=True)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise TraceError(p, f"cannot decode the data (truncated or corrupt): {exc}") from None
        trace = _numpy_columns(p, table, 0, info)
        if validate:
            _Checker(p, info, len(trace)).check(trace)
        return trace
    n = pf.metadata.num_rows
    cols = {name: np.empty((n, WARP_SIZE) if name == "addr" else n, NUMPY_DTYPES[name]) for name in COLUMNS}
    start = 0
    for t in _checked_batches(p, pf, info, DEFAULT_BATCH_ROWS, validate):
        m = len(t)
        if start + m > n:
            raise TraceError(p, f"more rows than the footer's {n} (corrupt)")
        for name in COLUMNS:
            cols[name][start : start + m] = getattr(t, name)
        start += m
    if start != n:
        raise TraceError(p, f"{start} rows decoded, the footer says {n} (truncated or corrupt)")
    return Trace(**cols, info=info)


def iter_batches(path, rows: int = DEFAULT_BATCH_ROWS, *, validate: bool = True) -> Iterator[Trace]:
    """Stream a trace in batches of at most ``rows`` rows, each validated.

    Validation state (seq per warp) carries across batches, so a streamed trace
    is checked exactly as ``read`` checks it.
    """
    if rows < 1:
        raise ValueError("rows must be >= 1")
    p, pf, info = _open(path, streaming=True)
    yield from _checked_batches(p, pf, info, rows, validate)


def _checked_batches(p: str, pf, info, rows: int, validate: bool) -> Iterator[Trace]:
    """The file's batches of at most ``rows`` rows as numpy columns, validated with one checker across them."""
    checker = _Checker(p, info, pf.metadata.num_rows) if validate else None
    start = 0
    for batch in _batches(p, pf, rows):
        t = _numpy_columns(p, batch, start, info)
        if checker is not None:
            checker.check(t)
        start += len(t)
        yield t


def _as_columns(path: str, columns: Mapping[str, np.ndarray] | Trace) -> dict[str, np.ndarray]:
    if isinstance(columns, Trace):
        columns = columns.columns()
    missing = [c for c in COLUMNS if c not in columns]
    if missing:
        raise TraceError(path, f"missing columns {missing}", field=missing[0])
    out = {}
    n = None
    for name in COLUMNS:
        a = np.asarray(columns[name])
        dt = np.dtype(NUMPY_DTYPES[name])
        if a.dtype != dt:
            if not np.can_cast(a.dtype, dt, casting="same_kind") or (a.size and not _fits(a, dt)):
                raise TraceError(path, f"column '{name}' has dtype {a.dtype}, expected {dt}", field=name)
            a = a.astype(dt)
        if name == "addr":
            if a.ndim != 2 or a.shape[1] != WARP_SIZE:
                raise TraceError(path, f"column 'addr' must have shape (n, {WARP_SIZE}), got {a.shape}", field=name)
        elif a.ndim != 1:
            raise TraceError(path, f"column '{name}' must be one-dimensional, got shape {a.shape}", field=name)
        if n is None:
            n = a.shape[0]
        elif a.shape[0] != n:
            raise TraceError(path, f"column '{name}' has {a.shape[0]} rows, expected {n}", field=name)
        out[name] = np.ascontiguousarray(a)
    return out


def _fits(a: np.ndarray, dt: np.dtype) -> bool:
    if dt.kind not in "iu" or a.dtype.kind not in "iu":
        return True
    info = np.iinfo(dt)
    return bool(a.min() >= info.min and a.max() <= info.max)


def _arrow(a: np.ndarray, type_: pa.DataType) -> pa.Array:
    """A numpy column as an Arrow array of ``type_`` (its dtype's), no nulls, over the same memory: built from its
    buffer, since ``pa.array`` of a numpy array imports pandas (0.2 s of a command's start) to ask whether it is
    one of pandas' arrays. A column of another dtype goes through ``pa.array`` (its checked cast)."""
    if a.dtype != np.dtype(type_.to_pandas_dtype()):
        return pa.array(a, type=type_)
    a = np.ascontiguousarray(a)
    return pa.Array.from_buffers(type_, a.shape[0], [None, pa.py_buffer(a)])


def to_table(columns: Mapping[str, np.ndarray], info: KernelInfo) -> pa.Table:
    """An Arrow table of trace columns with the metadata attached (no copies of ``addr``)."""
    arrays = []
    for f in ARROW_SCHEMA:
        a = columns[f.name]
        if f.name == "addr":
            arrays.append(pa.FixedSizeListArray.from_arrays(_arrow(a.reshape(-1), pa.uint64()), type=f.type))
        else:
            arrays.append(_arrow(a, f.type))
    schema = ARROW_SCHEMA.with_metadata({METADATA_KEY: info.to_json().encode()})
    return pa.Table.from_arrays(arrays, schema=schema)


# From this many rows, `write` checks the rows while it writes them (in a thread of its own) instead of before.
OVERLAP_ROWS = 1 << 16


def write(path, columns: Mapping[str, np.ndarray] | Trace, kernel_info: KernelInfo, *, validate: bool = True) -> None:
    """Write a trace: columns (name -> array, ``addr`` (n, 32)) and its metadata.

    The columns are checked against the contract (from ``OVERLAP_ROWS`` rows, while they are written: a bad row is
    still the error, and no file appears); the file appears only once complete (written to a temporary file in the
    same folder, then renamed).
    """
    p = str(path)
    cols = _as_columns(p, columns)
    # Round-trip the metadata through its validator so a bad KernelInfo is caught here.
    info = KernelInfo.from_json(kernel_info.to_json(), p)
    _check_coverage(p, info, len(cols["cta"]))
    if not validate:
        atomic_write_table(to_table(cols, info), p)
        return
    t = Trace(**cols, info=info)
    checker = _Checker(p, info, len(t))
    if len(t) < OVERLAP_ROWS:
        checker.check(t)
        atomic_write_table(to_table(cols, info), p)
        return
    # the rows checked in a thread while the file is written: the check's kernel and pyarrow's writers release the
    # GIL; the file appears only once the check has passed, and a bad row is the error whatever else failed
    with ThreadPoolExecutor(1) as pool:
        checking = pool.submit(checker.check, t)
        try:
            table = to_table(cols, info)
            with _trace_writer(p, table.schema, ROW_GROUP_ROWS) as put:
                put(table)
                checking.result()  # before the temporary file replaces the output
        except BaseException:
            checking.result()
            raise


def write_parts(path, parts: Iterable[Mapping[str, np.ndarray]], kernel_info: KernelInfo, rows: int, *,
                validate: bool = True) -> int:  # fmt: skip
    """Write a trace given in parts (each a columns mapping as ``write`` takes, in row order), ``rows`` in all, as
    ``write`` does (checked against the contract, the file only once complete), holding about two parts: the next
    part is made and checked in a thread of its own while this one is written (the decoders' kernels, the check
    and pyarrow's writers release the GIL). Returns the rows written; a count other than ``rows`` is an error."""
    p = str(path)
    info = KernelInfo.from_json(kernel_info.to_json(), p)
    _check_coverage(p, info, rows)
    checker = _Checker(p, info, rows) if validate else None
    schema = ARROW_SCHEMA.with_metadata({METADATA_KEY: info.to_json().encode()})
    it = iter(parts)

    def prepared(start: int) -> tuple[pa.Table, int] | None:
        part = next(it, None)
        if part is None:
            return None
        cols = _as_columns(p, part)
        k = len(cols["cta"])
        if checker is not None:
            checker.check(Trace(**cols, info=info, start=start))
        return to_table(cols, info), k

    done = 0
    with ThreadPoolExecutor(1) as pool, _trace_writer(p, schema, ROW_GROUP_ROWS) as put:
        ahead = pool.submit(prepared, 0)
        while (got := ahead.result()) is not None:
            table, k = got
            done += k
            ahead = pool.submit(prepared, done)
            put(table)
        if done != rows:
            raise TraceError(p, f"{done} rows written where the trace was to hold {rows}")
    return done


# How traces are written to Parquet: zstd-1, no dictionaries, and the lane addresses byte-stream split (their
# eight bytes stored as eight streams, the high ones nearly constant: zstd compresses them two to ten times
# smaller, and two to three times faster, than the plain encoding; pyarrow 16 or later reads them). The
# addresses' leaf column is named as Parquet's nested list types name it (use_compliant_nested_type).
ADDR_LEAF = "addr.list.element"
PARQUET_OPTIONS = dict(compression="zstd", compression_level=1, use_dictionary=False, write_statistics=False,
                       column_encoding={ADDR_LEAF: "BYTE_STREAM_SPLIT"})  # fmt: skip


@contextmanager
def _trace_writer(path, schema: pa.Schema, rows: int) -> Iterator[Callable[[pa.Table], None]]:
    """A function that appends tables to the trace file ``path``, written atomically (``traces.atomic``) in the
    container its name asks for: Arrow IPC (``traces.ipcfile.SUFFIXES``, uncompressed, record batches of at
    most ``rows``) or Parquet (``PARQUET_OPTIONS``, row groups of at most ``rows``)."""
    with atomic_path(path) as tmp, _output(tmp) as out:
        if wants_ipc(path):
            with pa.ipc.new_file(out, schema) as w:
                yield lambda table: w.write_table(table, max_chunksize=rows)
        else:
            with pq.ParquetWriter(out, schema, **PARQUET_OPTIONS) as w:
                yield lambda table: w.write_table(table, row_group_size=rows)


def _output(tmp: str) -> pa.NativeFile:
    """The empty temporary file ``tmp`` (``atomic_path`` made it) opened for writing without truncating it.

    pyarrow opens a path with ``O_TRUNC``, and on ext4 truncating a file that exists (even an empty one) marks
    it to have its blocks allocated and written back when it is closed (``auto_da_alloc``): the close then
    waits on the start of the write-back, and the write-back competes with the next work. Appending to the
    empty file writes the same bytes: a 280 MB Arrow IPC trace took 0.16-0.20 s wall (0.08 s CPU) through the
    path, 0.055 s (0.055 s CPU) this way.
    """
    return pa.OSFile(tmp, "a")


def atomic_write_table(table: pa.Table, path: str, row_group_rows: int = ROW_GROUP_ROWS) -> None:
    """Write a trace table atomically, in the container the path's name asks for (``_trace_writer``)."""
    with _trace_writer(path, table.schema, row_group_rows) as write:
        write(table)


def convert(source, target, rows: int = DEFAULT_BATCH_ROWS) -> tuple[int, KernelInfo]:
    """Copy a trace into the container ``target``'s name asks for (as ``atomic_write_table``).

    The source is read in batches of ``rows`` and validated as ``iter_batches`` does, and
    each batch is written as it comes, so the memory is about one batch whatever the size;
    the target appears only once complete, and may not be the source (``check_output_folder``: it replaced its
    own input, exit 0). Returns (rows, metadata).
    """
    check_output_folder(target, (source,))
    p, pf, info = _open(source, streaming=True)
    schema = ARROW_SCHEMA.with_metadata({METADATA_KEY: info.to_json().encode()})
    n = 0
    with _trace_writer(target, schema, ROW_GROUP_ROWS) as write:
        for t in _checked_batches(p, pf, info, rows, True):
            write(to_table(t.columns(), info))
            n += len(t)
    return n, info
