"""Copy a trace into the other container: Parquet (compact) or Arrow IPC (fast to read).

  placement convert T.parquet -o T.arrow     # Arrow IPC: the columns as they lie in memory
  placement convert T.arrow -o T.parquet     # back to Parquet (zstd-1)

The output's container follows its name: .arrow, .feather or .ipc give an Arrow IPC
file, anything else Parquet. Both hold the same schema and metadata (README.md, "The
trace"), and every command reads either, telling them apart by their first bytes. An
IPC file is about 285 bytes a row, 8 to 180 times the Parquet file (whose rows take 1.6
to 36 bytes in the generators' traces), and a streamed read of it is about six times
faster (31 M rows a CPU second against 5.5 M, ``benchmarks/bench_read.py``): worth it for traces of
millions of rows that are evaluated or ranked more than once. The input is validated
and copied batch by batch (the memory of one batch), and the output appears only once
complete.
"""

from __future__ import annotations

import os
import time

from ..units import plural
from ._output import print_json

NAME = "convert"
HELP = "copy a trace into Parquet or Arrow IPC (fast reads), by the output's name"


def add_arguments(p) -> None:
    p.add_argument("trace", help="trace file (Parquet or Arrow IPC)")
    p.add_argument(
        "-o", "--output", required=True, help="file to write: .arrow/.feather/.ipc for Arrow IPC, else Parquet"
    )
    p.add_argument("--json", action="store_true", help="print a JSON summary of what was written")


def run(args) -> int:
    import traces
    from traces.ipcfile import wants_ipc

    t0 = time.perf_counter()
    rows, info = traces.convert(args.trace, args.output)
    doc = {
        "input": str(args.trace),
        "output": str(args.output),
        "container": "arrow-ipc" if wants_ipc(args.output) else "parquet",
        "kernel": info.kernel,
        "rows": rows,
        "bytes": os.path.getsize(args.output),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    if args.json:
        print_json(doc)
    else:
        print(
            f"wrote {doc['output']}: {plural(rows, 'row')} of {info.kernel} as {doc['container']}, {doc['bytes']:,} bytes"
        )
    return 0
