"""Trace one launch of a real CUDA program (NVIDIA's Compute Sanitizer API, no NVBit).

  placement trace -o T.parquet [--kernel NAME|REGEX] [--launch N] [--ctas SPEC] [--max-rows N]
                  [--objects FILE.toml] -- PROGRAM [ARGS...]

Runs PROGRAM with an injection library (CUDA_INJECTION64_PATH) that records every global, shared
and local memory instruction of the chosen launch, one row per warp, and writes one trace in the
contract (objects from the allocations the launch touches, named after the kernel's pointer
parameters). The launch: the N-th (--launch, from 0) launch of the kernel --kernel names (its
name, demangled name or a regex), by default the first launch of the program's only kernel.
--ctas 0-63, 0,5,9-12 or waves=2 records a subset of blocks; --max-rows stops recording after N.
The library is built on first use (nvcc and the sanitizer API: pip install 'gpu-placement[trace]').
Needs a CUDA GPU; the program's exit code and stderr pass through. Not yet run on a GPU (README).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import time

from traces.errors import InputError

from ..units import plural
from ._output import print_json

NAME = "trace"
HELP = "trace one launch of a CUDA program (Compute Sanitizer API; needs a GPU)"
TRACER_FAILED = 86  # inject.cpp's exit code when the tracer itself fails

log = logging.getLogger(__name__)


def add_arguments(p) -> None:
    p.add_argument("-o", "--output", required=True, help="trace file to write (.arrow, .feather or .ipc: Arrow IPC; else Parquet)")  # fmt: skip
    p.add_argument(
        "--kernel", metavar="NAME|REGEX", help="the kernel to trace: name, demangled name or regular expression"
    )
    p.add_argument("--launch", type=int, metavar="N", help="the N-th launch (from 0) of that kernel (default 0)")
    p.add_argument("--ctas", metavar="SPEC", help="blocks to record: 0-63, 0,5,9-12 or waves=W (default all)")
    p.add_argument("--max-rows", type=int, metavar="N", help="stop recording after N warp-level memory instructions")
    p.add_argument("--objects", metavar="FILE.toml", help="[[object]] tables (name, base, size, ...) that name objects")
    p.add_argument("--time", action="store_true", help="also time the launch uninstrumented (not implemented yet)")
    p.add_argument(
        "--keep-records", metavar="FILE", help="also keep the raw record file (placement import sanitizer reads it)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON document describing the result")
    p.add_argument("program", nargs="*", metavar="-- PROGRAM [ARGS...]", help="the program to run and its arguments")


def _check_args(args) -> list[str]:
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if not program:
        raise InputError("no program to run: placement trace -o T.parquet [options] -- PROGRAM [ARGS...]")
    if args.launch is not None and args.launch < 0:
        raise InputError(f"--launch must be 0 or more, got {args.launch}")
    if args.max_rows is not None and args.max_rows < 1:
        raise InputError(f"--max-rows must be at least 1, got {args.max_rows}")
    if args.time:
        raise InputError("--time is not implemented yet (issue 32): time the launch with nsys or ncu meanwhile")
    return program


def _launches(path: str) -> list[tuple[str, str]]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [tuple(line.rstrip("\n").split("\t", 1)) for line in f if "\t" in line]  # type: ignore[misc]
    except FileNotFoundError:
        return []


def run(args) -> int:
    import traces
    from traces.atomic import check_output_folder
    from traces.importers.objects import load_objects_toml
    from traces.sanitizer import build
    from traces.sanitizer.ctas import kernel_pattern, parse_ctas, select_launch
    from traces.sanitizer.decode import decode
    from traces.sanitizer.records import read_records

    program = _check_args(args)
    check_output_folder(args.output)
    ctas = parse_ctas(args.ctas) if args.ctas else None
    if args.kernel is not None:
        kernel_pattern(args.kernel)
    objects = load_objects_toml(args.objects) if args.objects else ()
    problem = build.driver_problem()
    if problem:
        raise build.MissingTool(problem)
    lib, fatbin = build.build()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="placement-trace-") as d:
        records, launches = os.path.join(d, "records.bin"), os.path.join(d, "launches.txt")
        env = dict(os.environ, CUDA_INJECTION64_PATH=str(lib), PLACEMENT_TRACE_PATCHES=str(fatbin),
                   PLACEMENT_TRACE_OUT=records, PLACEMENT_TRACE_LAUNCHES=launches,
                   PLACEMENT_TRACE_LAUNCH=str(args.launch or 0))  # fmt: skip
        for key, value in (("PLACEMENT_TRACE_KERNEL", args.kernel), ("PLACEMENT_TRACE_CTAS", ctas.env() if ctas else None),
                           ("PLACEMENT_TRACE_MAX_ROWS", args.max_rows)):  # fmt: skip
            if value is not None:
                env[key] = str(value)
            else:
                env.pop(key, None)
        try:
            rc = subprocess.run(program, check=False, env=env).returncode  # stdin, stdout and stderr pass through
        except OSError as exc:
            raise InputError(f"cannot run {program[0]}: {exc.strerror or exc}") from None
        if rc == TRACER_FAILED:
            raise InputError(f"the tracer failed while running {program[0]} (its message is above)")
        if rc != 0:
            what = (
                f"killed by {signal.Signals(-rc).name}"
                if rc < 0 and -rc in signal.valid_signals()
                else f"exited with {rc}"
            )
            print(f"placement trace: {program[0]} {what}; no trace written", file=sys.stderr)
            return 128 - rc if rc < 0 else rc
        names = _launches(launches)
        chosen = select_launch(names, args.kernel, args.launch)  # errors: no kernel, several kernels, --launch N
        if os.path.getsize(records) <= 16:
            raise InputError(f"{program[0]}: launch {chosen} ({names[chosen][1]}) was not recorded")
        cols, info = decode(read_records(records), objects=objects, ctas=args.ctas, max_rows=args.max_rows)
        traces.write(args.output, cols, info)
        if args.keep_records:
            from traces.atomic import atomic_path

            with atomic_path(args.keep_records) as tmp, open(records, "rb") as src, open(tmp, "wb") as dst:
                dst.write(src.read())
    dt = time.perf_counter() - t0
    rows = int(cols["cta"].shape[0])
    doc = {
        "output": str(args.output),
        "kernel": info.kernel,
        "rows": rows,
        "objects": [
            {"id": o.id, "name": o.name, "space": o.space, "base": o.base, "size": o.size, "written": o.written}
            for o in info.objects
        ],
        "ctas": args.ctas or "all",
        "max_rows_reached": info.source["max_rows_reached"],
        "unknown_rows": info.source["unknown_rows"],
        "estimated": info.source["estimated"],
        "seconds": round(dt, 3),
    }
    if args.json:
        print_json(doc)
        return 0
    print(f"wrote {args.output}: {info.kernel}, {plural(rows, 'warp-level memory instruction')}, "
          f"{plural(len(info.objects), 'object')} ({dt:.2f} s)")  # fmt: skip
    for o in doc["objects"]:
        print(f"  {o['id']:>3}  {o['name']:<12} {o['space']:<9} {o['base']:#x} +{o['size']:,}")
    if doc["max_rows_reached"]:
        print(
            f"stopped at --max-rows {args.max_rows}: the trace holds the first {rows:,} warp-level memory instructions"
        )
    if doc["unknown_rows"]:
        print(f"{doc['unknown_rows']:,} rows touch no allocation (obj -1)")
    print("estimated: " + ", ".join(doc["estimated"]))
    return 0
