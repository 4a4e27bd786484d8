"""Read speed of the trace format: stream a 10-million-row trace with iter_batches.

Prints rows per second and the peak resident memory of the read (goal: over 20
million rows per second, peak under 1 GiB), for the same rows in both containers: a
Parquet file (the contract's, zstd-1) and an Arrow IPC file (``traces.ipcfile``,
uncompressed, the columns as they lie in memory). The trace is a vecadd-like stream
(coalesced 4-byte accesses, three objects), written once to a temporary folder, so
both files are in the page cache when read (a cold read of the 2.7 GB IPC file is
bounded by the disk instead).

    python benchmarks/bench_read.py [--rows 10000000] [--batch 262144] [--ceiling] [--folder DIR]

``--ceiling`` also prints what bounds any Parquet reader of this contract: pyarrow's own
decode of the same rows (no validation, no copy into our columns) under the physical
encodings Parquet offers for the ``addr`` list, and a bare numpy copy of the decoded
addresses (32 x 8 bytes a row), in CPU seconds; and pyarrow's decode of the same rows under
other contracts for the addresses (none at all; a row's first address with 32 int32 lane
offsets; the first address with the lanes' spacing, alone or with offsets kept for rows not
evenly spaced).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import traces
import traces.io
from traces.schema import ARROW_SCHEMA, METADATA_KEY

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import measure  # noqa: E402


def make_trace(path: str, rows: int, chunk: int = 1 << 20, ipc_path: str | None = None) -> None:
    """Write a vecadd-shaped trace of ``rows`` rows chunk by chunk (bounded memory); with
    ``ipc_path``, the same rows as an Arrow IPC file too."""
    warps_per_block = 8
    warps = -(-rows // 3)
    ctas = -(-warps // warps_per_block)
    elems = ctas * warps_per_block * 32
    objs = tuple(
        traces.ObjectInfo(i, name, "global", base, elems * 4, 4, None, name == "C")
        for i, (name, base) in enumerate([("A", 1 << 32), ("B", 2 << 32), ("C", 3 << 32)])
    )
    info = traces.KernelInfo(
        kernel="vecadd_bench", grid=(ctas, 1, 1), block=(256, 1, 1), objects=objs,
        instructions=traces.Instructions(executed=rows * 4, warps=ctas * warps_per_block),
    )  # fmt: skip
    schema = ARROW_SCHEMA.with_metadata({METADATA_KEY: info.to_json().encode()})
    lanes = np.arange(32, dtype=np.uint64) * 4
    ipc = pa.ipc.new_file(ipc_path, schema) if ipc_path else None
    with pq.ParquetWriter(path, schema, **traces.io.PARQUET_OPTIONS) as w:
        for lo in range(0, rows, chunk):
            r = np.arange(lo, min(rows, lo + chunk), dtype=np.int64)
            gw, k = r // 3, r % 3  # global warp, which of the three accesses
            addr = (np.array([1 << 32, 2 << 32, 3 << 32], np.uint64)[k] + (gw * 128).astype(np.uint64))[:, None] + lanes
            cols = dict(
                cta=(gw // warps_per_block).astype(np.int32), warp=(gw % warps_per_block).astype(np.int32),
                seq=(k * 4).astype(np.int64), pc=(k * 16).astype(np.int32), op=(k == 2).astype(np.int8),
                space=np.zeros(len(r), np.int8), width=np.full(len(r), 4, np.int8),
                mask=np.full(len(r), 0xFFFFFFFF, np.uint32), addr=addr, obj=k.astype(np.int16),
            )  # fmt: skip
            table = traces.to_table(cols, info)
            w.write_table(table, row_group_size=traces.io.ROW_GROUP_ROWS)
            if ipc is not None:
                ipc.write_table(table, max_chunksize=traces.io.ROW_GROUP_ROWS)
    if ipc is not None:
        ipc.close()


def peak_rss_mib() -> float:
    """Peak resident memory of this process (VmHWM; ru_maxrss would include the parent's peak)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read_all(path: str, batch: int) -> None:
    """Stream the trace twice (validated, then not) and print the rates and peak memory."""
    next(traces.iter_batches(path, rows=1000))  # compile or load the numba kernel first
    rss0 = peak_rss_mib()
    for validate in (True, False):
        n = 0
        with measure("read") as m:
            for b in traces.iter_batches(path, rows=batch, validate=validate):
                n += len(b)
        f = m.figures
        print(
            f"iter_batches(rows={batch}, validate={validate}): {n:,} rows, {f.describe()} = "
            f"{n / f.wall_s / 1e6:.2f} M rows/s wall, {n / f.cpu_s / 1e6:.2f} M rows per CPU second"
        )
    print(
        f"peak resident memory of the reading process: {peak_rss_mib():.0f} MiB (after imports and one batch: {rss0:.0f} MiB)"
    )


def ceiling(path: str, rows: int) -> None:
    """CPU rows per second of pyarrow decoding the trace, re-encoded several ways, and of a
    copy of its decoded addresses: the bounds no reader of the contract's file goes past."""
    table = pq.read_table(path)
    addr = table.column("addr").combine_chunks().values.to_numpy()

    def best(fn) -> float:
        times = []
        for _ in range(3):
            c = time.process_time()
            fn()
            times.append(time.process_time() - c)
        return min(times)

    cpu = best(lambda: addr.copy())
    print(
        f"ceiling: copy of the decoded addresses alone: {rows / cpu / 1e6:.1f} M rows per CPU second "
        f"({addr.nbytes / cpu / 1e9:.1f} GB/s)"
    )
    variants = {
        "zstd-1 plain (the writer's)": dict(compression="zstd", compression_level=1),
        "uncompressed plain": dict(compression="none"),
        "lz4 plain": dict(compression="lz4"),
        "zstd-1 byte_stream_split": dict(compression="zstd", compression_level=1, column_encoding={"addr": "BYTE_STREAM_SPLIT"}),
        "uncompressed delta_binary_packed": dict(compression="none", column_encoding={"addr": "DELTA_BINARY_PACKED"}),
    }  # fmt: skip
    d = os.path.dirname(path)
    for label, kw in variants.items():
        q = os.path.join(d, "ceiling.parquet")
        pq.write_table(table, q, use_dictionary=False, row_group_size=traces.io.ROW_GROUP_ROWS, **kw)
        cpu = best(lambda: pq.read_table(q, use_threads=False))
        print(
            f"ceiling: pyarrow decode, {label}: {os.path.getsize(q) / rows:.0f} B/row, "
            f"{rows / cpu / 1e6:.2f} M rows per CPU second"
        )
        os.remove(q)
    # the same rows under another contract: a row's first address and its lanes' offsets from it, or, where
    # the lanes are evenly spaced (all of these rows), the first address and the spacing alone
    lanes = addr.reshape(-1, 32)
    base = lanes[:, 0].copy()
    offsets = (lanes - base[:, None]).view(np.int64)
    assert np.abs(offsets).max() < 2**31, "offsets beyond int32: the alternative contract needs wider ones"
    stride = offsets[:, 1].astype(np.int32)
    affine = (offsets == stride.astype(np.int64)[:, None] * np.arange(32)).all(axis=1)
    rest = table.drop_columns(["addr"])
    flat = pa.array(offsets.astype(np.int32).ravel())
    alternatives = {
        "no addresses at all (the nine other columns)": rest,
        "first address + 32 int32 offsets": rest.append_column("base", pa.array(base)).append_column(
            "offsets", pa.FixedSizeListArray.from_arrays(flat, 32)),
        "first address + spacing alone (uneven rows elsewhere)": rest.append_column("base", pa.array(base)).append_column(
            "stride", pa.array(stride)),
        "first address + spacing (offsets only where uneven: none here)": rest.append_column(
            "base", pa.array(base)).append_column("stride", pa.array(stride)).append_column(
            "offsets", pa.FixedSizeListArray.from_arrays(flat, 32, mask=pa.array(affine))),
    }  # fmt: skip
    for label, t in alternatives.items():
        q = os.path.join(d, "ceiling.parquet")
        pq.write_table(t, q, use_dictionary=False, row_group_size=traces.io.ROW_GROUP_ROWS, compression="zstd",
                       compression_level=1)  # fmt: skip
        cpu = best(lambda: pq.read_table(q, use_threads=False))
        print(
            f"ceiling: another contract, {label}, zstd-1: {os.path.getsize(q) / rows:.0f} B/row, "
            f"{rows / cpu / 1e6:.2f} M rows per CPU second"
        )
        os.remove(q)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--batch", type=int, default=traces.io.DEFAULT_BATCH_ROWS)
    ap.add_argument("--read", metavar="PATH", help=argparse.SUPPRESS)
    ap.add_argument("--ceiling", action="store_true", help="also print pyarrow's decode rates and a bare copy's")
    ap.add_argument("--repeat", type=int, default=3, help="reads of each file, each in a fresh process")
    ap.add_argument("--folder", default=None, help="where to write the two files (default: a temporary folder)")
    args = ap.parse_args()
    if args.read:
        read_all(args.read, args.batch)
        return
    with tempfile.TemporaryDirectory(dir=args.folder) as d:
        path = os.path.join(d, "bench.parquet")
        ipc_path = os.path.join(d, "bench.arrow")
        t0 = time.perf_counter()
        make_trace(path, args.rows, ipc_path=ipc_path)
        print(f"wrote {args.rows:,} rows in {time.perf_counter() - t0:.1f} s: Parquet {os.path.getsize(path) / 2**20:.0f} MiB, "
              f"Arrow IPC {os.path.getsize(ipc_path) / 2**20:.0f} MiB on disk")  # fmt: skip
        # Read in a fresh process so that its peak memory is the reader's alone; several times,
        # since the first read of a file just written competes with its write-back.
        for label, p in (("Parquet", path), ("Arrow IPC", ipc_path)):
            rates = []
            for k in range(args.repeat):
                print(f"{label}, read {k + 1} of {args.repeat}:")
                with measure("reading process") as m:
                    out = subprocess.run([sys.executable, __file__, "--read", p, "--batch", str(args.batch)], check=True,
                                         capture_output=True, text=True).stdout  # fmt: skip
                print(out, end="")
                print(m.line())
                rates.append(float(re.search(r"validate=True\).* ([0-9.]+) M rows per CPU second", out).group(1)))
            print(f"{label}: validated read {statistics.median(rates):.2f} M rows per CPU second, median of {len(rates)} "
                  f"({', '.join(f'{r:.2f}' for r in rates)})")  # fmt: skip
        os.remove(ipc_path)
        if args.ceiling:
            ceiling(path, args.rows)


if __name__ == "__main__":
    main()
