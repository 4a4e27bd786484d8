"""Trace one launch of a real CUDA program (NVIDIA's Compute Sanitizer API, no NVBit).

  placement trace -o T.parquet [--kernel NAME|REGEX] [--launch N] [--ctas SPEC] [--max-rows N] [--ring N]
                  [--objects FILE.toml] [--time [--time-runs N]] -- PROGRAM [ARGS...]

Runs PROGRAM with an injection library (CUDA_INJECTION64_PATH) that records every global, shared
and local memory instruction of the chosen launch, one row per warp, and writes one trace in the
contract (objects from the allocations the launch touches, named after the kernel's pointer
parameters). The launch: the N-th (--launch, from 0) launch of the kernel --kernel names (its
name, demangled name or a regex), by default the first launch of the program's only kernel.
--ctas 0-63, 0,5,9-12 or waves=2 records a subset of blocks (the model scales their time to the
launch's: trace whole waves); --max-rows stops recording after N.
--time runs the program again (--time-runs N times) with nothing patched and a CUDA event pair
around the same launch, and stores the median as the trace's measured time.
The library is built on first use (nvcc and the sanitizer API: pip install 'gpu-placement[trace]').
Instruction totals and seq come from the kernel's SASS (nvdisasm of the module the library keeps;
traces.sanitizer.sass), memory-only where nvdisasm is absent. Needs a CUDA GPU; the program's exit
code and stderr pass through. Run on an H100 (README, "Trace your own kernel").
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace

from traces.errors import InputError

from ..units import plural
from ._output import print_json

NAME = "trace"
HELP = "trace one launch of a CUDA program (Compute Sanitizer API; needs a GPU)"
TRACER_FAILED = 86  # inject.cpp's exit code when the tracer itself fails
DEFAULT_RING = 262_144
"""Records the injection library's ring holds (inject.cpp's default too). On an H100 (benchmarks/bench_trace.py,
27 Nov 2026), 98,304 to 1,572,864 records were recorded at 9.1-15.5 M a second through a ring of 262,144 and at
9.3 M through 65,536: the drain thread's writing of the record file bounds it, whatever the ring's size, since a
full ring's waiting warps poll the host one at a time (README, "Trace your own kernel")."""
# Measured on an H100: ../shared/data/h100-placements (probe_us, a first launch, against med_us, the median of
# 30 later ones after an L2 flush, 368 variants: +11.3 us median, +6 to +16 us between the quartiles) and
# placement trace --time of benchmarks/trace_apps/conv1d_app.cu launching conv1d five times (27 Nov 2026:
# 21.8-28.9 us for the first launch, 11.4-15.2 us for the second and fifth).
FIRST_LAUNCH_NOTE = (
    "on an H100 a first launch took a median 11 us more than the kernel's later launches (conv1d 22-29 us "
    "against 11-15 us), which the model does not predict; where the program repeats the kernel, --launch N traces "
    "and times a later launch"
)
MIN_RING, MAX_RING = 1024, 1 << 26  # 280 KiB to 17.5 GiB of pinned host memory (280 bytes a record)

log = logging.getLogger(__name__)


def add_arguments(p) -> None:
    p.add_argument("-o", "--output", required=True, help="trace file to write (.arrow, .feather or .ipc: Arrow IPC; else Parquet)")  # fmt: skip
    p.add_argument(
        "--kernel", metavar="NAME|REGEX", help="the kernel to trace: name, demangled name or regular expression"
    )
    p.add_argument("--launch", type=int, metavar="N", help="the N-th launch (from 0) of that kernel (default 0)")
    p.add_argument("--ctas", metavar="SPEC", help="blocks to record: 0-63, 0,5,9-12 or waves=W (default all)")
    p.add_argument("--max-rows", type=int, metavar="N", help="stop recording after N warp-level memory instructions")
    p.add_argument("--ring", type=int, default=DEFAULT_RING, metavar="N",
                   help=f"records the ring buffer in pinned host memory holds, 280 bytes each (default {DEFAULT_RING:,}, "
                   "70 MiB); recording runs at the pace the record file is written, whatever the ring's size")  # fmt: skip
    p.add_argument("--objects", metavar="FILE.toml", help="[[object]] tables (name, base, size, ...) that name objects")
    p.add_argument("--time", action="store_true", help="also time the launch uninstrumented (a second run of the "
                   "program, a CUDA event pair around the launch): the trace's measured time. A kernel's first launch "
                   "in a program runs slower than its later ones (on an H100 a median 11 us more): where the program "
                   "repeats the kernel, --launch N traces and times a later one")  # fmt: skip
    p.add_argument("--time-runs", type=int, default=1, metavar="N",
                   help="with --time: run the program N times and take the median (default 1)")  # fmt: skip
    p.add_argument(
        "--keep-records",
        metavar="FILE",
        help="also keep the raw record file (placement import sanitizer reads it) "
        "and the kernel's module as FILE.cubin",
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
    if not MIN_RING <= args.ring <= MAX_RING:
        raise InputError(f"--ring must be {MIN_RING:,} to {MAX_RING:,} records (280 bytes each), got {args.ring:,}")
    if args.time_runs < 1:
        raise InputError(f"--time-runs must be at least 1, got {args.time_runs}")
    if args.time_runs != 1 and not args.time:  # it would be ignored: no timing run without --time
        raise InputError(f"--time-runs {args.time_runs} times the launch with --time only; add --time")
    return program


def _launches(path: str) -> list[tuple[str, str]]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [tuple(line.rstrip("\n").split("\t", 1)) for line in f if "\t" in line]  # type: ignore[misc]
    except FileNotFoundError:
        return []


def _run_program(program: list[str], env: dict) -> int:
    """The program's exit code (stdin, stdout and stderr pass through); InputError when it cannot start."""
    try:
        return subprocess.run(program, check=False, env=env).returncode
    except OSError as exc:
        raise InputError(f"cannot run {program[0]}: {exc.strerror or exc}") from None


def _failed(program: list[str], rc: int, what: str) -> str:
    how = f"killed by {signal.Signals(-rc).name}" if rc < 0 and -rc in signal.valid_signals() else f"exited with {rc}"
    return f"{program[0]} {how}{what}"


def read_timing(path: str, program: str) -> tuple[float, str]:
    """(milliseconds, device name) of a timing run's file (inject.cpp: "<ms>\\t<device>")."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            line = f.readline().rstrip("\n")
    except FileNotFoundError:
        line = ""
    ms, _, device = line.partition("\t")
    try:
        value = float(ms)
    except ValueError:
        raise InputError(f"{program}: the timing run did not reach the traced launch (no time written)") from None
    if not value >= 0 or value == float("inf"):
        raise InputError(f"{program}: the timing run wrote an impossible time {ms!r} ms")
    return value, device.strip() or "unknown"


def measured_time(times_ms: list[float], device: str):
    """The trace's measured sample time: the median of the timing runs, on the device the driver named (its
    catalog name where the catalog knows it)."""
    import statistics

    from traces.schema import Measured

    from ..catalog import find

    entry = find(device)
    return Measured(statistics.median(times_ms) * 1e6, entry.name if entry else device)


def _time_launch(program: list[str], env: dict, runs: int, folder: str) -> tuple[list[float], str]:
    """Run the program ``runs`` times in timing mode (inject.cpp: nothing patched, an event pair around the
    chosen launch); the launch's times in ms and the device's name."""
    times, device = [], "unknown"
    for k in range(runs):
        out = os.path.join(folder, f"time{k}.txt")
        rc = _run_program(program, dict(env, PLACEMENT_TRACE_TIME_OUT=out))
        if rc == TRACER_FAILED:
            raise InputError(f"the tracer failed while timing {program[0]} (its message is above)")
        if rc != 0:
            raise InputError(_failed(program, rc, f" in timing run {k + 1} of {runs}; no trace written"))
        ms, device = read_timing(out, program[0])
        times.append(ms)
    return times, device


def _kernel_sass(folder: str, mangled: str):
    """(the kernel's SASS function, its cubin) from the modules the injection library kept; (None, None) with
    a warning where nvdisasm is missing or no module holds the kernel (the totals are then memory-only)."""
    from traces.sanitizer import sass

    cubins = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".cubin"))
    exe = sass.find_nvdisasm()
    if exe is None:
        log.warning("nvdisasm not found (pip install nvidia-cuda-nvdisasm): instruction totals are memory-only")
        return None, None
    found = sass.kernel_function(cubins, mangled, exe)
    if found is not None:
        return found
    log.warning("no loaded module holds %s's SASS: instruction totals are memory-only", mangled)
    return None, None


def run(args) -> int:
    import traces
    from traces.atomic import check_output_folder
    from traces.importers.objects import load_objects_toml
    from traces.sanitizer import build
    from traces.sanitizer.ctas import kernel_pattern, parse_ctas, select_launch
    from traces.sanitizer.decode import Decoder
    from traces.sanitizer.records import read_records

    program = _check_args(args)
    check_output_folder(args.output, (args.objects, *program[:1]))
    if args.keep_records:  # before the run, as -o: a missing folder, or the trace, the objects or the program itself
        check_output_folder(args.keep_records, (args.output, args.objects, *program[:1]))
        if os.path.abspath(args.keep_records) == os.path.abspath(args.output):
            raise InputError(f"{args.keep_records}: --keep-records is the trace's output (-o); give another path")
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
        cubins = os.path.join(d, "cubins")
        os.mkdir(cubins)
        env = dict(os.environ, CUDA_INJECTION64_PATH=str(lib), PLACEMENT_TRACE_PATCHES=str(fatbin),
                   PLACEMENT_TRACE_OUT=records, PLACEMENT_TRACE_LAUNCHES=launches,
                   PLACEMENT_TRACE_LAUNCH=str(args.launch or 0), PLACEMENT_TRACE_CUBIN_DIR=cubins,
                   PLACEMENT_TRACE_RING=str(args.ring))  # fmt: skip
        for key, value in (("PLACEMENT_TRACE_KERNEL", args.kernel), ("PLACEMENT_TRACE_CTAS", ctas.env() if ctas else None),
                           ("PLACEMENT_TRACE_MAX_ROWS", args.max_rows)):  # fmt: skip
            if value is not None:
                env[key] = str(value)
            else:
                env.pop(key, None)
        rc = _run_program(program, env)
        if rc == TRACER_FAILED:
            raise InputError(f"the tracer failed while running {program[0]} (its message is above)")
        if rc != 0:
            print(f"placement trace: {_failed(program, rc, '; no trace written')}", file=sys.stderr)
            return 128 - rc if rc < 0 else rc
        names = _launches(launches)
        chosen = select_launch(names, args.kernel, args.launch)  # errors: no kernel, several kernels, --launch N
        if os.path.getsize(records) <= 16:
            raise InputError(f"{program[0]}: launch {chosen} ({names[chosen][1]}) was not recorded")
        rf = read_records(records, mapped=True)  # the tracer's file, in our temporary folder: nothing else writes it
        fn, cubin = _kernel_sass(cubins, rf.launch.name)
        decoder = Decoder(rf, objects=objects, ctas=args.ctas, max_rows=args.max_rows, sass_fn=fn)
        info = decoder.info
        if args.time:
            timing_env = {k: v for k, v in env.items() if not k.startswith("PLACEMENT_TRACE_")}
            timing_env.update(PLACEMENT_TRACE_KERNEL=rf.launch.name, PLACEMENT_TRACE_LAUNCH=str(args.launch or 0))
            times, device = _time_launch(program, timing_env, args.time_runs, d)
            info = replace(info, measured=measured_time(times, device),
                           source=dict(info.source, measured={"runs": len(times), "times_ms": times, "device": device,
                                                              "method": "CUDA events around the launch, uninstrumented "
                                                              "run (placement trace --time)",
                                                              "first_launch": not args.launch}))  # fmt: skip
        # the second pass, part by part as it is written: memory follows a part of the records, not the trace
        rows = traces.write_parts(args.output, decoder.parts(), info, decoder.n)
        del decoder, rf
        if args.keep_records:
            from traces.atomic import atomic_path

            keep = [(records, args.keep_records)] + ([(cubin, args.keep_records + ".cubin")] if cubin else [])
            for src_path, dst_path in keep:
                with atomic_path(dst_path) as tmp, open(src_path, "rb") as src, open(tmp, "wb") as dst:
                    dst.write(src.read())
    dt = time.perf_counter() - t0
    doc = {
        "output": str(args.output),
        "kernel": info.kernel,
        "rows": rows,
        "objects": [
            {"id": o.id, "name": o.name, "space": o.space, "base": o.base, "size": o.size, "written": o.written}
            for o in info.objects
        ],
        "ctas": args.ctas or "all",
        "traced_ctas": info.traced_ctas,
        "launch_ctas": info.launch_ctas,
        "max_rows_reached": info.source["max_rows_reached"],
        "unknown_rows": info.source["unknown_rows"],
        "estimated": info.source["estimated"],
        "measured_ns": info.measured.time_ns if info.measured else None,
        "seconds": round(dt, 3),
    }
    if args.json:
        print_json(doc)
        return 0
    print(f"wrote {args.output}: {info.kernel}, {plural(rows, 'warp-level memory instruction')}, "
          f"{plural(len(info.objects), 'object')} ({dt:.2f} s)")  # fmt: skip
    for o in doc["objects"]:
        print(f"  {o['id']:>3}  {o['name']:<12} {o['space']:<9} {o['base']:#x} +{o['size']:,}")
    if info.traced_ctas < info.launch_ctas:
        print(f"{info.traced_ctas:,} of the launch's {info.launch_ctas:,} blocks recorded: the model scales their time "
              "to the launch's")  # fmt: skip
    if doc["max_rows_reached"]:
        print(
            f"stopped at --max-rows {args.max_rows}: the trace holds the first {rows:,} warp-level memory instructions"
        )
    if doc["unknown_rows"]:
        print(f"{doc['unknown_rows']:,} rows touch no allocation (obj -1)")
    if info.measured:
        from ..units import time_ns

        runs = info.source["measured"]["runs"]
        print(f"measured: {time_ns(info.measured.time_ns)} on {info.measured.gpu} "
              f"({'median of ' + plural(runs, 'run') if runs > 1 else 'one run'}, uninstrumented)")  # fmt: skip
        if not args.launch:
            print(f"  the kernel's first launch in the program: {FIRST_LAUNCH_NOTE}")
    print("estimated: " + ", ".join(doc["estimated"]))
    return 0
