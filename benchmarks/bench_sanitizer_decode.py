"""Host side of `placement trace`: record file -> trace rows per second (no GPU).

Writes a record file of a vecadd-like launch (three allocations, each warp loads a[i], b[i] and stores
v[i], full masks) with ``traces.sanitizer.records.encode``, in chunks of 4,096 records (the most the
injection library's drain thread writes at once, ``inject.cpp``; ``--chunk-rows`` for fewer), then
times what ``placement trace`` does with it: reading it (``read_records``), the decoder's first pass
(``decode.Decoder``: the metadata) and its second, part by part as the validated trace is written
(``traces.write_parts``), to Parquet and to an Arrow IPC file (the contract's two containers: ``placement
trace -o T.arrow``). ``--from-trace T`` times the records of a trace's rows instead (a generator's, e.g.
matmul_tiled's, whose rows are mostly shared). Each container's pipeline runs in a fresh process (one
warm-up pass for numba's kernels, then ``--repeat`` passes), so that its peak memory (VmHWM, as
``ru_maxrss``; and the peak of its anonymous memory, sampled) is the pipeline's alone; each stage prints its median
wall and CPU time (this process's user + system, all threads) and rows per wall and per CPU second.
Each pass writes a new output (the last one is removed between passes, untimed: replacing a 280 MB
file costs its unlink too). The GPU side (the traced launch's slowdown, device records per second)
needs a GPU and is not measured here.

    python benchmarks/bench_sanitizer_decode.py [--rows 1000000] [--repeat 5] [--chunk-rows 4096] [--from-trace T]

Measured 26 Nov 2026 on 2 cores shared with other work: 1 M rows, 267 MiB of records in chunks of 4,096,
medians of 5 passes, three runs of each alternated; before: fb08ce5 (the numpy reader and decoder, plain
Parquet addresses), after: 11c2d56 (their numba kernels, byte-stream-split addresses):

    stage (wall s, CPU s)        before                      after
    read                         0.18-0.23, 0.18-0.22        0.052-0.063, 0.052-0.063
    decode                       0.24-0.56, 0.23-0.55        0.060-0.064, 0.058-0.062
    write, validated Parquet     0.62-0.69, 0.61-0.65        0.225-0.235, 0.224-0.232
    write, validated Arrow IPC   0.14-0.16, 0.08-0.10        0.13-0.15, 0.08-0.09
    records -> Parquet           0.73-0.91 M rows/s          2.80-2.96 M rows/s (2.84-3.00 per CPU s)
    records -> Arrow IPC         1.65-1.78 M rows/s          3.55-4.07 M rows/s (4.6-5.2 per CPU s)
    peak RSS, Parquet / IPC      1,223 / 1,059 MiB           1,018 / 805 MiB (123 after the imports)

In chunks of 16 records the read took 0.79 s before, 0.063 s after (the chunks are walked in a kernel).

Measured 26 Nov 2026 (later), same file and passes, three runs of each alternated, the second core mostly taken by other
work (a compiler) throughout; before: 1b631ae, after: f26dad6 (the temporary output opened without O_TRUNC, which
made ext4 write it back on close; the records mapped and decoded where they lie, no copy of them; the check and
the conversion shared among threads; the rows checked while the file is written). The read of a mapped file is
near 0: its pages are mapped where the decoder first touches them, which the decode's figures carry. Outputs
byte-identical:

    stage (wall s, CPU s)        before                      after
    read                         0.055-0.065, 0.055-0.065    0.001, 0.001 (mapped)
    decode                       0.064-0.070, 0.062-0.067    0.073-0.083, 0.072-0.081
    write, validated Parquet     0.232-0.238, 0.232-0.234    0.227-0.234, 0.229-0.245
    write, validated Arrow IPC   0.138-0.145, 0.083-0.087    0.076-0.078, 0.075-0.077
    records -> Parquet           2.77-2.85 M rows/s          3.14-3.32 M rows/s (3.03-3.30 per CPU s)
    records -> Arrow IPC         3.46-3.83 M rows/s          6.52-6.85 M rows/s (6.37-6.76 per CPU s)
    peak RSS, Parquet / IPC      1,018 / 805 MiB             965-1,011 / 798 MiB

With the second core free (the IPC pipeline alone, 5 passes), the decode took 0.044 s wall (0.076 s CPU) and the
whole 0.119 s: 8.4 M rows/s (6.6 per CPU s). The goal's 10 M rows/s is not reached on these 2 cores: writing
the 280 MB of an IPC trace is 0.055 s of kernel copying alone, and the trace's metadata (its objects) needs every
row decoded before the first byte can be written.

Re-measured the same day at 43a8e1a with both cores free (no other work; 4 runs): records -> Arrow IPC 7.2-9.7 M
rows/s (9.4-9.7 in 3 of the 4; 5.4-6.6 per CPU s; decode 0.047 s wall, 0.080 s CPU; write 0.059 s wall), ->
Parquet 3.8-3.9 M rows/s (3.2-3.3 per CPU s); peak RSS 1,010 / 798 MiB.

Measured 26 Nov 2026 (fourteenth session), both cores free, medians of 5 (3 at 4 M) passes, the container's pipeline in
a fresh process; before: c2569fb (the whole trace decoded, then written; the record file mapped with MAP_POPULATE),
after: the streaming decoder (``decode.Decoder``: a first pass for the metadata, the second part by part as
``traces.write_parts`` writes them, the mapped file's pages let go behind each part). "Peak anonymous" is RssAnon
sampled every 2 ms (the heap and arrays; peak RSS also counts the record file's mapped pages, which the walk over its
chunks maps whole on this ext4 and the decoder lets go):

    rows (records)               before                          after
    2 M (534 MiB), -> IPC        10.5-10.8 M rows/s              9.8-10.1 M rows/s (5.9-6.0 per CPU s)
    2 M, -> Parquet              3.7-4.1 M rows/s                4.0-4.1 M rows/s
    2 M, peak RSS IPC / Parquet  (1 M: 798 / 1,018 MiB)          792 / 957-967 MiB; anonymous 271 / 428-460 MiB
    4 M (1,068 MiB), -> IPC      7.5 M rows/s, peak RSS 2,493    9.6 M rows/s, peak RSS 1,432, anonymous 298 MiB
    4 M, -> Parquet              4.2 M rows/s, peak RSS 2,633    3.7 M rows/s, peak RSS 1,570, anonymous 433 MiB
    matmul_tiled 512^2 tile 16   decode alone 1.4-6.6 s,         decode 0.77-0.96 s, all 2.1-2.5 M rows/s
    (6.3 M rows, 5.8 M shared,   peak RSS 7.5 GiB                (IPC's 1.7 GB written at 0.8 GB/s here), anonymous
    --from-trace)                                                392 (IPC) / 515 (Parquet) MiB

The anonymous memory stays near 300 MiB (IPC) and 450 MiB (Parquet: a row group is encoded whole) from 1 M to 6 M
rows: two parts of 2^18 records and their Arrow tables. The streaming costs a second read of the records (about 35 ms
a million rows), mostly won back by making the next part while this one is written and by the first pass's ranges
in threads.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import AnonPeak, measure, peak_rss_mib  # noqa: E402

BASES = (0x7F0000000000, 0x7F0010000000, 0x7F0020000000)
STAGES = ("read", "decode", "write")


def record_file(path: str, rows: int, chunk_rows: int = 4096) -> None:
    from traces.sanitizer.records import ACCESS_DTYPE, LaunchRecord, encode

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
        f.write(encode(launch, [(b, size) for b in BASES], acc, chunk_rows=chunk_rows))


def record_file_from_trace(path: str, trace: str, chunk_rows: int = 4096) -> int:
    """A record file of a trace's rows (``placement bench gen``'s, e.g. matmul_tiled, most of whose rows are
    shared): its global objects as the allocations, shared addresses as window offsets (``shared_base`` 0).
    Returns the rows."""
    import traces
    from traces.codes import ATOMIC, REDUCTION, STORE
    from traces.sanitizer.records import ACCESS_DTYPE, F_ATOMIC, F_READ, F_WRITE, LaunchRecord, encode

    t = traces.read(trace)
    acc = np.zeros(len(t), ACCESS_DTYPE)
    acc["cta"], acc["warp"], acc["pc"], acc["space"] = t.cta, t.warp, t.pc, t.space
    acc["flags"] = np.select([t.op == STORE, t.op == ATOMIC, t.op == REDUCTION],
                             [F_WRITE, F_ATOMIC | F_READ | F_WRITE, F_ATOMIC | F_WRITE], F_READ)  # fmt: skip
    acc["width"], acc["mask"], acc["addr"] = t.width, t.mask, t.addr
    allocs = sorted({(o.base, o.size) for o in t.info.objects if o.space == "global"})
    no_params = np.zeros(0, [("offset", "<u4"), ("size", "<u4")])
    launch = LaunchRecord(0, t.info.kernel, t.info.grid, t.info.block, t.info.regs_per_thread, t.info.smem_per_block,
                          0, no_params, b"", 0, 0)  # fmt: skip
    with open(path, "wb") as f:
        f.write(encode(launch, allocs, acc, chunk_rows=chunk_rows))
    return len(t)


def pipeline(rec: str, out: str, repeat: int, sass_fn=None) -> dict:
    """One container's pipeline, in this (fresh) process: medians of each stage's wall and CPU seconds (``sass_fn``:
    the kernel's SASS, as ``placement trace`` passes it; ``bench_trace.py`` does). As ``placement trace`` runs it:
    "decode" is the decoder's check and first pass (the metadata), "write" its second pass, part by part as
    ``traces.write_parts`` writes them."""
    import traces
    from traces.sanitizer.decode import Decoder
    from traces.sanitizer.records import read_records

    base_rss, base_anon = peak_rss_mib(), AnonPeak.now_mib()
    figures: dict[str, list[tuple[float, float]]] = {s: [] for s in STAGES}
    anon = 0.0
    for k in range(repeat + 1):  # the first pass warms up (numba's cached kernels, pyarrow)
        with AnonPeak() as a:
            with measure("read") as r:
                rf = read_records(rec, mapped=True)  # as placement trace reads its tracer's file
            with measure("decode") as d:
                decoder = Decoder(rf, sass_fn=sass_fn)
            with measure("write") as w:
                traces.write_parts(out, decoder.parts(), decoder.info, decoder.n)
            del decoder, rf
        anon = max(anon, a.peak_mib)
        os.remove(out)  # the next pass writes a new file, as `placement trace` does, not over this one
        if k:
            for s, m in zip(STAGES, (r, d, w)):
                figures[s].append((m.figures.wall_s, m.figures.cpu_s))
    med = {s: [statistics.median(v[j] for v in figures[s]) for j in (0, 1)] for s in STAGES}
    med["total"] = [statistics.median(sum(figures[s][i][j] for s in STAGES) for i in range(repeat)) for j in (0, 1)]
    return {"stages": med, "peak_rss_mib": peak_rss_mib(), "base_rss_mib": base_rss, "peak_anon_mib": anon,
            "base_anon_mib": base_anon}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--chunk-rows", type=int, default=4096, help="records per access chunk of the file")
    ap.add_argument(
        "--from-trace", metavar="T", help="records of this trace's rows instead of vecadd's (--rows unused)"
    )
    ap.add_argument("--pipeline", nargs=2, metavar=("RECORDS", "OUTPUT"), help=argparse.SUPPRESS)  # the child's part
    args = ap.parse_args()
    if args.pipeline:
        print(json.dumps(pipeline(*args.pipeline, args.repeat)))
        return
    with tempfile.TemporaryDirectory() as d:
        rec = os.path.join(d, "records.bin")
        if args.from_trace:
            args.rows = record_file_from_trace(rec, args.from_trace, args.chunk_rows)
        else:
            record_file(rec, args.rows, args.chunk_rows)
        print(f"{args.rows:,} rows, {os.path.getsize(rec) / 2**20:.0f} MiB of records in chunks of {args.chunk_rows:,}; "
              f"medians of {args.repeat} "
              "passes after a warm-up, each container in a fresh process:")  # fmt: skip
        for fmt, name in (("Parquet", "t.parquet"), ("Arrow IPC", "t.arrow")):
            t0 = time.perf_counter()
            res = json.loads(subprocess.run([sys.executable, __file__, "--pipeline", rec, os.path.join(d, name),
                                             "--repeat", str(args.repeat)], check=True, capture_output=True,
                                            text=True).stdout)  # fmt: skip
            print(f"{fmt} ({time.perf_counter() - t0:.1f} s in all):")
            labels = {"write": f"write (validated {fmt})", "total": "read + decode + write"}
            for s, (wall, cpu) in res["stages"].items():
                print(f"  {labels.get(s, s):<28} wall {wall:6.3f} s  CPU {cpu:6.3f} s  {args.rows / wall / 1e6:6.2f} M rows/s"
                      f" ({args.rows / cpu / 1e6:6.2f} M per CPU s)")  # fmt: skip
            print(f"  peak RSS {res['peak_rss_mib']:,.0f} MiB ({res['base_rss_mib']:,.0f} MiB after the imports), "
                  f"peak anonymous {res['peak_anon_mib']:,.0f} MiB ({res['base_anon_mib']:,.0f} after the imports); "
                  "goal for the whole tracer: 10 M rows/s")  # fmt: skip


if __name__ == "__main__":
    main()
