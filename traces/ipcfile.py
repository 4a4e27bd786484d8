"""Arrow IPC files (Feather v2) as a second trace container, for fast reads of big traces.

A trace in an Arrow IPC file has the contract's schema and metadata (DESIGN.md, "The
trace"); only the container differs. Parquet compresses and encodes every value, and
decoding the contract's ``addr`` column (32 uint64 a row) bounds any Parquet reader near
2.5 M rows per CPU second (``benchmarks/bench_read.py --ceiling``). An uncompressed IPC
file holds the columns as they lie in memory, so reading one is a memory map: the cost of
a streamed read is the validation (about 30 M rows per CPU second), at 272 bytes a row on
disk against Parquet's 20-50.

``IpcTraceFile`` offers the few members of ``pyarrow.parquet.ParquetFile`` that
``traces.io`` uses. The file is mapped read-only; once the reader moves past a batch, its
pages are dropped from the process (``madvise(MADV_DONTNEED)``), so a streamed read of a
trace larger than memory keeps the resident set to about one batch. Arrays still held by
the caller stay valid: a dropped page of a shared file mapping is read again from the
page cache on its next touch. (Without ``madvise``, on Windows, the pages stay until the
map is released.) Compressed IPC buffers (lz4, zstd) are read too, with the
decompression's cost. ``traces.io`` writes IPC files uncompressed, in record batches of
``ROW_GROUP_ROWS``.
"""

from __future__ import annotations

import mmap
import os
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.ipc as ipc

# The first bytes of an Arrow IPC file (the Arrow columnar format, "IPC File Format").
MAGIC = b"ARROW1"
# Names that select the IPC container on write (Arrow's and Feather's usual suffixes).
SUFFIXES = (".arrow", ".feather", ".ipc")
_PAGE = mmap.PAGESIZE
# Where the platform has no madvise (Windows), pages stay mapped until the file is closed.
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None) if hasattr(mmap.mmap, "madvise") else None


# The first bytes of Arrow data in other layouts: the IPC stream format (a continuation
# marker) and Feather version 1.
STREAM_MARKER = b"\xff\xff\xff\xff"
FEATHER_V1 = b"FEA1"


def sniff(path: str) -> str:
    """'ipc' (an Arrow IPC file), 'ipc-stream', 'feather-v1' or 'other', by the first bytes."""
    with open(path, "rb") as fh:
        head = fh.read(len(MAGIC))
    if head == MAGIC:
        return "ipc"
    if head.startswith(STREAM_MARKER):
        return "ipc-stream"
    if head.startswith(FEATHER_V1):
        return "feather-v1"
    return "other"


def wants_ipc(path: str) -> bool:
    """Whether a trace written to ``path`` goes into an IPC file (by its suffix)."""
    return str(path).lower().endswith(SUFFIXES)


class _Metadata:
    """The two footer figures ``traces.io`` reads from a Parquet file's metadata."""

    def __init__(self, num_rows: int, num_row_groups: int):
        self.num_rows = num_rows
        self.num_row_groups = num_row_groups


class IpcTraceFile:
    """A read-only memory map of an Arrow IPC file, read batch by batch.

    Raises ``pa.ArrowException``, ``OSError`` or ``ValueError`` for a file that is not a
    whole IPC file; ``traces.io`` turns them into one-line errors naming the file.
    """

    def __init__(self, path: str):
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise ValueError("empty file")
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self._buffer = pa.py_buffer(self._map)
        self._reader = ipc.open_file(pa.BufferReader(self._buffer))
        self.schema_arrow = self._reader.schema
        self.metadata = _Metadata(self._reader.count_rows(), self._reader.num_record_batches)

    def _batch(self, i: int) -> pa.RecordBatch:
        b = self._reader.get_batch(i)
        b.validate()  # buffer sizes against the lengths (cheap): no view reads past a buffer
        return b

    def _release(self, batch: pa.RecordBatch) -> None:
        """Drop the batch's pages from this process (they stay in the page cache)."""
        base = self._buffer.address
        lo, hi = len(self._map), 0
        for col in batch.columns:
            for arr in (col, col.values) if pa.types.is_fixed_size_list(col.type) else (col,):
                for buf in arr.buffers():
                    if buf is not None and base <= buf.address < base + len(self._map):
                        lo = min(lo, buf.address - base)
                        hi = max(hi, buf.address - base + buf.size)
        if lo < hi and _DONTNEED is not None:
            lo -= lo % _PAGE
            self._map.madvise(_DONTNEED, lo, hi - lo)

    def iter_batches(
        self, batch_size: int, columns: Sequence[str] | None = None, use_threads: bool = True
    ) -> Iterator[pa.RecordBatch]:
        """The file's rows in batches of at most ``batch_size`` rows (slices of its record
        batches: a file written in smaller batches yields them as they are)."""
        for i in range(self.metadata.num_row_groups):
            b = self._batch(i)
            if columns is not None:
                b = b.select(list(columns))
            for lo in range(0, b.num_rows, batch_size):
                yield b.slice(lo, batch_size)
            self._release(b)

    def read(self, columns: Sequence[str] | None = None, use_threads: bool = True) -> pa.Table:
        """The whole file as a table (views of the map where the file is uncompressed)."""
        batches = [self._batch(i) for i in range(self.metadata.num_row_groups)]
        table = pa.Table.from_batches(batches, schema=self.schema_arrow)
        return table.select(list(columns)) if columns is not None else table
