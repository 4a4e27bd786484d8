"""Host side of `placement trace`: record file -> trace rows per second (no GPU).

Writes a record file of a vecadd-like launch (three allocations, each warp loads a[i], b[i] and stores
v[i], full masks) with ``traces.sanitizer.records.encode``, then times reading it, decoding it into the
contract's columns and writing the trace to Parquet and to an Arrow IPC file (the contract's two containers:
``placement trace -o T.arrow``), after one warm-up run (numba's kernels). The GPU side
(the traced launch's slowdown, device records per second) needs a GPU and is not measured here.

    python benchmarks/bench_sanitizer_decode.py [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

import traces
from traces.sanitizer.decode import decode
from traces.sanitizer.records import ACCESS_DTYPE, LaunchRecord, encode, read_records

BASES = (0x7F0000000000, 0x7F0010000000, 0x7F0020000000)


def record_file(path: str, rows: int) -> None:
    warps = -(-rows // 3)
    block = 256
    wpb = block // 32
    ctas = -(-warps // wpb)
    i = np.arange(rows)
    w = i % warps  # warp-major interleave: every warp's k-th access before any (k+1)-th
    k = i // warps
    acc = np.zeros(rows, ACCESS_DTYPE)
    acc["cta"], acc["warp"] = w // wpb, w % wpb
    acc["pc"], acc["flags"] = 16 * k, np.where(k == 2, 2, 1)
    acc["width"], acc["mask"] = 4, 0xFFFFFFFF
    first = np.array(BASES, np.uint64)[k] + (w * 32 * 4).astype(np.uint64)
    acc["addr"] = first[:, None] + np.uint64(4) * np.arange(32, dtype=np.uint64)[None, :]
    size = warps * 32 * 4
    buf = b"".join(b.to_bytes(8, "little") for b in BASES) + (warps * 32).to_bytes(4, "little")
    params = np.array([(0, 8), (8, 8), (16, 8), (24, 4)], dtype=[("offset", "<u4"), ("size", "<u4")])
    launch = LaunchRecord(0, "_Z6vecaddPKfS0_Pfi", (ctas, 1, 1), (block, 1, 1), 16, 0, 0, params, buf, 0, 0)
    with open(path, "wb") as f:
        f.write(encode(launch, [(b, size) for b in BASES], acc, chunk_rows=1 << 14))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        rec, out, ipc = os.path.join(d, "records.bin"), os.path.join(d, "t.parquet"), os.path.join(d, "t.arrow")
        record_file(rec, args.rows)
        decode(read_records(rec))  # warm-up
        times = {"read": [], "decode": [], "write": [], "ipc": []}
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            rf = read_records(rec)
            t1 = time.perf_counter()
            cols, info = decode(rf)
            t2 = time.perf_counter()
            traces.write(out, cols, info)
            t3 = time.perf_counter()
            traces.write(ipc, cols, info)
            t4 = time.perf_counter()
            for key, dt in (("read", t1 - t0), ("decode", t2 - t1), ("write", t3 - t2), ("ipc", t4 - t3)):
                times[key].append(dt)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{args.rows:,} rows, {os.path.getsize(rec) / 2**20:.0f} MiB of records; medians of {args.repeat}:")
        names = {"write": "write (validated Parquet)", "ipc": "write (validated Arrow IPC)"}
        for k, v in med.items():
            print(f"  {names.get(k, k):<28} {v:7.3f} s  {args.rows / v / 1e6:6.2f} M rows/s")
        for fmt, key in (("Parquet", "write"), ("Arrow IPC", "ipc")):
            total = med["read"] + med["decode"] + med[key]
            print(
                f"  total to {fmt:<19} {total:7.3f} s  {args.rows / total / 1e6:6.2f} M rows/s "
                "(goal for the whole tracer: 10 M/s)"
            )


if __name__ == "__main__":
    main()
