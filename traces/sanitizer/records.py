"""The record file the injection library writes (version 1), and its reader.

All integers little-endian. A file is a 16-byte header, then chunks, each an 8-byte chunk
header (``kind`` u32, ``count`` u32) and its payload:

- header: magic ``b"PLSNTRC\\0"``, version u32 (1), header bytes u32 (16);
- ``LAUNCH`` (kind 1, once, first): ``count`` = payload bytes: :data:`LAUNCH_DTYPE`, then
  ``n_params`` x (offset u32, size u32) of the kernel's parameters (0 when the driver did
  not say), ``param_bytes`` bytes of the parameter buffer, ``name_bytes`` bytes of the
  mangled kernel name (UTF-8);
- ``ALLOC`` (kind 2): ``count`` x :data:`ALLOC_DTYPE` (base, size) of device allocations
  live at the launch;
- ``ACCESS`` (kind 3): ``count`` x :data:`ACCESS_DTYPE`, one per warp-level memory
  instruction, in each warp's program order (the device buffer drained as it fills);
- ``END`` (kind 4, once, last): ``count`` = 16: rows written u64, flags u64
  (:data:`END_MAX_ROWS`: ``--max-rows`` reached).

Records are numbered from 1 in file order (the launch record, each allocation, each access,
the end record); an error names the file and the record. A file without its end record was
cut short (the program or the tracer was killed).
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field
from typing import NoReturn

import numpy as np

from ..errors import InputError
from ..inputfile import read_error, require_file
from ..launch import ADDRESS_LIMIT, MAX_OBJECT_BYTES, MAX_REGS_PER_THREAD, MAX_SMEM_PER_BLOCK, launch_problem
from ..schema import control_character
from . import _kernels as K

MAX_WINDOW_BASE = (1 << 63) - 1
"""The largest shared or local window base a launch record may give: the decoding kernels take it as an int64
(a device's generic addresses are far below)."""

MAGIC = b"PLSNTRC\0"
VERSION = 1
HEADER = np.dtype([("magic", "S8"), ("version", "<u4"), ("header_bytes", "<u4")])
CHUNK = np.dtype([("kind", "<u4"), ("count", "<u4")])
LAUNCH, ALLOC, ACCESS, END = 1, 2, 3, 4
KIND_NAMES = {LAUNCH: "launch", ALLOC: "allocation", ACCESS: "access", END: "end"}

LAUNCH_DTYPE = np.dtype(
    [
        ("launch", "<u4"),  # index of this launch among the program's launches (0-based)
        ("grid", "<u4", (3,)),
        ("block", "<u4", (3,)),
        ("regs", "<u4"),
        ("static_smem", "<u4"),
        ("dynamic_smem", "<u4"),
        ("n_params", "<u4"),
        ("param_bytes", "<u4"),
        ("name_bytes", "<u4"),
        ("flags", "<u4"),
        ("shared_base", "<u8"),  # subtracted from shared addresses (0: the device wrote window offsets)
        ("local_base", "<u8"),
    ]
)
PARAM_DTYPE = np.dtype([("offset", "<u4"), ("size", "<u4")])
ALLOC_DTYPE = np.dtype([("base", "<u8"), ("size", "<u8")])
# Access flags (the device maps the sanitizer's flags to these).
F_READ, F_WRITE, F_ATOMIC = 1, 2, 4
ACCESS_DTYPE = np.dtype(
    [
        ("cta", "<u4"),  # linear block id x + y*gx + z*gx*gy
        ("warp", "<u4"),  # linear thread id // 32
        ("pc", "<u4"),  # byte offset of the instruction in the function
        ("flags", "<u4"),  # F_READ | F_WRITE | F_ATOMIC
        ("space", "u1"),  # the contract's codes: 0 global, 1 local, 2 shared
        ("width", "u1"),  # bytes per lane
        ("pad", "<u2"),
        ("mask", "<u4"),  # active lanes
        ("addr", "<u8", (32,)),  # per-lane address, 0 for inactive lanes
    ]
)
END_DTYPE = np.dtype([("rows", "<u8"), ("flags", "<u8")])
END_MAX_ROWS = 1
MAX_NAME_BYTES = 1 << 16
MAX_PARAM_BYTES = 1 << 15  # CUDA 12.1+: 32,764 bytes of kernel parameters
MAX_PARAMS = MAX_PARAM_BYTES
# The kernels' copies of the format (numba reads them as compile-time constants).
assert (K.LAUNCH, K.ALLOC, K.ACCESS, K.END) == (LAUNCH, ALLOC, ACCESS, END)
assert (K.CHUNK_BYTES, K.ALLOC_BYTES, K.ACCESS_BYTES, K.END_BYTES) == tuple(
    d.itemsize for d in (CHUNK, ALLOC_DTYPE, ACCESS_DTYPE, END_DTYPE)
)
assert (K.F_READ, K.F_WRITE, K.F_ATOMIC) == (F_READ, F_WRITE, F_ATOMIC)


@dataclass(frozen=True)
class LaunchRecord:
    launch: int
    name: str  # mangled
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    regs: int
    static_smem: int
    dynamic_smem: int
    params: np.ndarray  # PARAM_DTYPE
    param_buffer: bytes
    shared_base: int
    local_base: int


@dataclass(frozen=True)
class RecordFile:
    """A record file as read. The access records stay where the file's bytes hold them: ``words`` (uint64) and
    ``spans``, (k, 4) int64, each access chunk's first word in ``words`` (``_kernels.RECORD_WORDS`` words a
    record), its records, the row (0-based, among all the accesses in file order) and the record number
    (1-based, in the file) of its first; ``accesses`` copies them out into one array."""

    path: str
    launch: LaunchRecord
    allocations: np.ndarray  # ALLOC_DTYPE
    words: np.ndarray  # uint64
    spans: np.ndarray  # int64 (k, 4): first word, records, first row, first record number
    rows_written: int
    max_rows_reached: bool
    shift: int = 0  # the byte of the file where ``words`` starts
    mapping: mmap.mmap | None = field(default=None, compare=False, repr=False)  # the file's map, if mapped

    def _byte(self, row: int) -> int:
        """The byte of the file where access ``row``'s record starts (the end of the last for ``n_accesses``)."""
        j = min(self._span(row), self.spans.shape[0] - 1)
        return self.shift + 8 * int(self.spans[j, 0] + min(row - self.spans[j, 2], self.spans[j, 1]) * K.RECORD_WORDS)

    def release(self, start: int, stop: int) -> None:
        """A mapped file's pages that lie wholly within the records of accesses ``start`` to ``stop`` are let go
        (``MADV_DONTNEED``: they leave this process's resident set and are read again from the page cache if
        touched), so that a pass over the records holds the part it is in, not all it has read. Nothing for a
        file read into memory."""
        if self.mapping is None or not self.spans.shape[0] or stop <= start:
            return
        page = mmap.PAGESIZE
        a = -(-self._byte(start) // page) * page
        b = self._byte(stop) // page * page
        if b > a:
            self.mapping.madvise(mmap.MADV_DONTNEED, a, b - a)

    @property
    def n_accesses(self) -> int:
        return int(self.spans[:, 1].sum())

    @property
    def accesses(self) -> np.ndarray:
        """The access records (ACCESS_DTYPE), concatenated: a copy."""
        parts = [self.words[b : b + c * K.RECORD_WORDS] for b, c in self.spans[:, :2].tolist()]
        return (np.concatenate(parts) if parts else np.zeros(0, np.uint64)).view(ACCESS_DTYPE)

    @property
    def access_records(self) -> np.ndarray:
        """The record number (1-based) of each access."""
        return np.repeat(self.spans[:, 3] - self.spans[:, 2], self.spans[:, 1]) + np.arange(self.n_accesses)

    def _span(self, row: int) -> int:
        return int(np.searchsorted(self.spans[:, 2], row, side="right")) - 1

    def record_number(self, row: int) -> int:
        """The record number (1-based) of access ``row`` (0-based)."""
        j = self._span(row)
        return int(self.spans[j, 3] + row - self.spans[j, 2])

    def access(self, row: int) -> np.void:
        """Access ``row`` (0-based) as an ACCESS_DTYPE record."""
        j = self._span(row)
        b = int(self.spans[j, 0] + (row - self.spans[j, 2]) * K.RECORD_WORDS)
        return self.words[b : b + K.RECORD_WORDS].view(ACCESS_DTYPE)[0]


class RecordError(InputError):
    def __init__(self, path: str, record: int | None, message: str):
        where = f"{path}: record {record}" if record is not None else path
        super().__init__(f"{where}: {message}")


def _launch(path: str, payload: memoryview, record: int) -> LaunchRecord:
    if len(payload) < LAUNCH_DTYPE.itemsize:
        raise RecordError(
            path, record, f"launch record of {len(payload)} bytes, expected at least {LAUNCH_DTYPE.itemsize}"
        )
    h = np.frombuffer(payload, LAUNCH_DTYPE, count=1)[0]
    n_params, param_bytes, name_bytes = int(h["n_params"]), int(h["param_bytes"]), int(h["name_bytes"])
    if n_params > MAX_PARAMS or param_bytes > MAX_PARAM_BYTES or not 1 <= name_bytes <= MAX_NAME_BYTES:
        raise RecordError(path, record, f"launch record claims {n_params} parameters, {param_bytes} parameter bytes and "
                          f"a {name_bytes}-byte name (at most {MAX_PARAMS}, {MAX_PARAM_BYTES} and {MAX_NAME_BYTES}, name non-empty)")  # fmt: skip
    need = LAUNCH_DTYPE.itemsize + n_params * PARAM_DTYPE.itemsize + param_bytes + name_bytes
    if need != len(payload):
        raise RecordError(path, record, f"launch record of {len(payload)} bytes, its fields say {need}")
    o = LAUNCH_DTYPE.itemsize
    params = np.frombuffer(payload, PARAM_DTYPE, count=n_params, offset=o).copy()
    o += n_params * PARAM_DTYPE.itemsize
    pbuf = bytes(payload[o : o + param_bytes])
    o += param_bytes
    try:
        name = bytes(payload[o : o + name_bytes]).decode("utf-8")
    except UnicodeDecodeError:
        raise RecordError(path, record, "kernel name is not UTF-8") from None
    if "\0" in name:
        raise RecordError(path, record, "kernel name holds a NUL byte")
    bad = control_character(name)
    if bad is not None:  # the trace's metadata refuses it (traces.schema); said here, naming the records
        raise RecordError(path, record, f"kernel name holds the control character {bad!r}")
    grid, block = tuple(int(v) for v in h["grid"]), tuple(int(v) for v in h["block"])
    problem = launch_problem(grid, block)
    regs, smem = int(h["regs"]), int(h["static_smem"]) + int(h["dynamic_smem"])
    if problem is None and not (regs <= MAX_REGS_PER_THREAD and smem <= MAX_SMEM_PER_BLOCK):
        problem = f"{regs} registers per thread or {smem} bytes of shared memory beyond {MAX_REGS_PER_THREAD} and {MAX_SMEM_PER_BLOCK}"
    if problem:
        raise RecordError(path, record, f"launch record: {problem}")
    for base in ("shared_base", "local_base"):  # generic addresses of the device's windows: below 2^63
        if int(h[base]) > MAX_WINDOW_BASE:
            raise RecordError(path, record, f"launch record: {base} {int(h[base]):#x} is not a device address")
    if n_params and np.any(params["offset"].astype(np.int64) + params["size"] > param_bytes):
        raise RecordError(path, record, f"a parameter lies beyond the {param_bytes}-byte parameter buffer")
    return LaunchRecord(int(h["launch"]), name, grid, block, regs, int(h["static_smem"]), int(h["dynamic_smem"]), params, pbuf,
                        int(h["shared_base"]), int(h["local_base"]))  # fmt: skip


def read_records(path, *, mapped: bool = False) -> RecordFile:
    """Read a record file (module docstring). Truncated or corrupt files raise :class:`RecordError`. ``mapped``: see
    :func:`file_bytes`."""
    p = str(path)
    rf = _parse(p, file_bytes(p, mapped=mapped))
    rf.release(0, rf.n_accesses)  # the pages the walk over the chunks touched (a file system's large folios)
    return rf


def file_bytes(p: str, *, mapped: bool = False) -> np.ndarray:
    """A record file's bytes (uint8, read-only); a missing, unreadable or empty file is a :class:`RecordError` or an
    input error naming it.

    ``mapped``: the file's pages mapped instead of copied (Linux: 0.013 s for 267 MiB in the page cache, against
    0.025-0.035 s to read them), for a file that nothing writes or truncates while it is read (a map's pages cut
    off under it kill the process, SIGBUS, where a read is an error): `placement trace`'s own, in its temporary
    folder. The pages are mapped as they are touched (not ``MAP_POPULATE``, which made the whole file resident at
    once), and the decoder lets go of those it has passed (``RecordFile.release``)."""
    require_file(p)
    try:
        with open(p, "rb") as f:
            size = f.seek(0, 2)
            if size == 0:
                raise RecordError(p, None, "empty record file (the tracer wrote nothing: the kernel never launched?)")
            if mapped and hasattr(mmap, "MADV_DONTNEED"):  # Linux (elsewhere: read)
                try:
                    m = mmap.mmap(f.fileno(), size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
                    return np.frombuffer(m, np.uint8)
                except OSError:  # a file system that maps no files: read it
                    pass
            f.seek(0)
            buf = np.fromfile(f, np.uint8)  # one read into an array (f.read() into bytes took 4 times as long)
    except OSError as exc:
        raise read_error(p, exc) from None
    buf.flags.writeable = False  # as a map's: the kernels see one type of array either way (numba's cache)
    return buf


def check_header(p: str, buf, size: int) -> None:
    """The file header of the record file ``p`` (its ``size`` bytes in ``buf``): long enough, the magic, this version."""
    if size < HEADER.itemsize:
        raise RecordError(p, None, f"{size} bytes, shorter than the {HEADER.itemsize}-byte header (truncated)")
    h = np.frombuffer(buf, HEADER, count=1)[0]
    if bytes(h["magic"]).ljust(8, b"\0") != MAGIC:
        raise RecordError(p, None, "not a placement trace record file (bad magic)")
    if int(h["version"]) != VERSION or int(h["header_bytes"]) != HEADER.itemsize:
        raise RecordError(p, None, f"record file version {int(h['version'])} (header {int(h['header_bytes'])} bytes); this reader reads {VERSION}")  # fmt: skip


def _parse(p: str, buf: np.ndarray) -> RecordFile:
    """The record file whose bytes ``buf`` (uint8) holds: the chunks are walked by ``_kernels.scan_chunks``,
    the launch, allocation and end records read here in file order; the accesses stay in ``buf``."""
    size = buf.shape[0]
    check_header(p, buf, size)
    table, problem, at, bad_kind, bad_count, before = K.scan_chunks(buf, HEADER.itemsize)
    launch = None
    allocs: list[np.ndarray] = []
    end = None
    for kind, count, off, record in table[table[:, 0] != ACCESS].tolist():  # in file order; the accesses below
        payload = memoryview(buf[off : off + count * (ALLOC_DTYPE.itemsize if kind == ALLOC else 1)])
        if kind == LAUNCH:
            launch = _launch(p, payload, record + 1)
        elif kind == ALLOC:
            allocs.append(checked_allocations(p, payload, count, record + 1))
        else:
            e = np.frombuffer(payload, END_DTYPE, count=1)[0]
            end = (int(e["rows"]), int(e["flags"]))
    if problem:
        _stopped(p, problem, at, bad_kind, bad_count, before, size)
    if launch is None:
        raise RecordError(p, None, "no launch record (the kernel never launched?)")
    if end is None:
        raise RecordError(
            p, before + 1, "no end record: the file was cut short (the program or the tracer was killed?)"
        )
    access = table[(table[:, 0] == ACCESS) & (table[:, 1] > 0)]
    n = int(access[:, 1].sum())
    if end[0] != n:
        raise RecordError(p, before, f"end record counts {end[0]} accesses, the file holds {n}")
    # every payload after the launch record starts at the same offset modulo 8 (their sizes are multiples of 8)
    shift = int(access[0, 2]) % 8 if access.shape[0] else 0
    assert not (access[:, 2] % 8 != shift).any()
    words = buf[shift : shift + (size - shift) // 8 * 8].view(np.uint64)
    spans = np.empty((access.shape[0], 4), np.int64)
    spans[:, 0] = (access[:, 2] - shift) // 8
    spans[:, 1] = access[:, 1]
    spans[:, 2] = np.cumsum(access[:, 1]) - access[:, 1]
    spans[:, 3] = access[:, 3] + 1
    allocations = np.concatenate(allocs) if allocs else np.zeros(0, ALLOC_DTYPE)  # copies out of the buffer
    mapping = buf.base.obj if isinstance(buf.base, memoryview) and isinstance(buf.base.obj, mmap.mmap) else None
    return RecordFile(p, launch, allocations, words, spans, end[0], bool(end[1] & END_MAX_ROWS), shift, mapping)


def checked_allocations(path: str, payload, count: int, first: int) -> np.ndarray:
    """``count`` allocation records from ``payload``, the first record number ``first``; one beyond 2^49 bytes or
    the 64-bit address space is an error naming its record."""
    a = np.frombuffer(payload, ALLOC_DTYPE, count=count)
    bad = (a["size"] > MAX_OBJECT_BYTES) | (a["base"] > np.uint64(ADDRESS_LIMIT) - a["size"])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise RecordError(path, first + i, f"allocation of {int(a['size'][i])} bytes at {int(a['base'][i]):#x}: "
                          "beyond 2^49 bytes (a GPU's virtual address space) or the 64-bit address space")  # fmt: skip
    return a


def _stopped(p: str, problem: int, at: int, kind: int, count: int, record: int, size: int) -> NoReturn:
    """Raise the error of what stopped ``_kernels.scan_chunks`` (``record``: the records before that chunk)."""
    if problem == K.AFTER_END:
        raise RecordError(p, record + 1, f"data after the end record (byte {at})")
    if problem == K.SHORT_HEADER:
        raise RecordError(p, record + 1, f"truncated chunk header at byte {at}")
    if problem == K.UNKNOWN_KIND:
        raise RecordError(p, record + 1, f"unknown record kind {kind} at byte {at}")
    if problem == K.LAUNCH_ORDER:
        raise RecordError(p, record + 1, "the launch record must come first, once")
    if problem == K.END_SIZE:
        raise RecordError(p, record + 1, f"end record of {count} bytes, expected {END_DTYPE.itemsize}")
    assert problem == K.SHORT_PAYLOAD, problem
    item = {ALLOC: ALLOC_DTYPE.itemsize, ACCESS: ACCESS_DTYPE.itemsize}.get(kind, 1)
    whole = (size - at) // item if kind in (ALLOC, ACCESS) else 0
    raise RecordError(p, record + 1 + whole, f"truncated {KIND_NAMES[kind]} record: the file ends at byte "
                      f"{size}, the chunk at byte {at} claims {count * item} bytes (the tracer was killed?)")  # fmt: skip


def encode(
    launch: LaunchRecord, allocations=(), accesses=None, *, chunk_rows: int = 1 << 12, max_rows_reached: bool = False
) -> bytes:
    """The bytes of a record file (what the injection library writes): for tests and tools."""
    out = [np.array([(MAGIC, VERSION, HEADER.itemsize)], HEADER).tobytes()]
    name = launch.name.encode()
    h = np.zeros(1, LAUNCH_DTYPE)
    h["launch"], h["grid"], h["block"], h["regs"] = launch.launch, launch.grid, launch.block, launch.regs
    h["static_smem"], h["dynamic_smem"] = launch.static_smem, launch.dynamic_smem
    params = np.asarray(launch.params, PARAM_DTYPE)
    h["n_params"], h["param_bytes"], h["name_bytes"] = params.shape[0], len(launch.param_buffer), len(name)
    h["shared_base"], h["local_base"] = launch.shared_base, launch.local_base
    body = h.tobytes() + params.tobytes() + launch.param_buffer + name
    out.append(np.array([(LAUNCH, len(body))], CHUNK).tobytes() + body)
    a = np.asarray(allocations, ALLOC_DTYPE) if len(allocations) else np.zeros(0, ALLOC_DTYPE)
    if a.size:
        out.append(np.array([(ALLOC, a.shape[0])], CHUNK).tobytes() + a.tobytes())
    acc = np.zeros(0, ACCESS_DTYPE) if accesses is None else np.asarray(accesses, ACCESS_DTYPE)
    for i in range(0, acc.shape[0], chunk_rows):
        part = acc[i : i + chunk_rows]
        out.append(np.array([(ACCESS, part.shape[0])], CHUNK).tobytes() + part.tobytes())
    e = np.array([(acc.shape[0], END_MAX_ROWS if max_rows_reached else 0)], END_DTYPE)
    out.append(np.array([(END, END_DTYPE.itemsize)], CHUNK).tobytes() + e.tobytes())
    return b"".join(out)
