"""`placement trace` on a GPU: the traced launch's slowdown, the device side's records per second and the whole
command's rows per second (needs a CUDA GPU, its driver, nvcc and the Compute Sanitizer API).

For each size n, ``benchmarks/trace_apps/vecadd_app.cu`` (a[i] + b[i] -> v[i], block 256: 3 warp-level memory
instructions a warp, 3n/32 rows) runs

- alone (the program's wall time);
- in the injection library's timing mode (nothing patched, a CUDA event pair around the launch, as
  ``placement trace --time``): the uninstrumented launch, median of ``--repeat`` runs;
- traced (``PLACEMENT_TRACE_STATS``, ``traces/sanitizer/inject.cpp``): the traced launch's wall time from the
  launch-begin callback's end to the drain thread's end (the patched kernel and the copying out of its records)
  and the records; slowdown = traced / uninstrumented launch, device records per second = records / traced; and
  the drain thread's seconds writing records out and waiting for the next one (which side bounds a wrapped ring);
- its record file through the host side as ``placement trace`` does it (``read_records(mapped=True)``, the
  ``decode.Decoder``'s two passes with the kernel's SASS, ``traces.write_parts``;
  ``bench_sanitizer_decode.pipeline``) to Arrow IPC and to Parquet: wall and CPU time, rows per second;
- as the whole command, ``placement trace -o T.arrow -- vecadd_app n`` (wall, rows per second end to end).

    python benchmarks/bench_trace.py [--sizes 20,22,24] [--repeat 3] [--ring 262144] [--poll one|each] [--stages]
                                     [--max-rows N] [--device-only]

Without a GPU it says what is missing in one line and exits 2. Figures measured on an H100 are in the README
("Trace your own kernel").
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench_sanitizer_decode import pipeline

APP = Path(__file__).resolve().parent / "trace_apps" / "vecadd_app.cu"


def _run(cmd: list[str], env: dict | None = None) -> float:
    """Wall seconds of one run of ``cmd``; exits with its message when it fails."""
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if r.returncode:
        sys.exit(f"bench_trace: {' '.join(cmd)} exited with {r.returncode}: {r.stderr.strip()[-300:]}")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20,22,24", help="log2 of n, comma-separated (default 20,22,24)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each measurement; medians (default 3)")
    ap.add_argument("--ring", type=int, default=262_144, help="records the injection library's ring holds "
                    "(default 262,144, placement trace's)")  # fmt: skip
    ap.add_argument("--poll", choices=("one", "each"), default="one", help="a full ring's waiting warps poll the "
                    "host's drained count one at a time (default) or each (PLACEMENT_TRACE_POLL=each, the first form)")  # fmt: skip
    ap.add_argument("--stages", action="store_true", help="also the host side's stages to Arrow IPC (read, decode, "
                    "write), with the kernel's SASS and without it")  # fmt: skip
    ap.add_argument("--device-only", action="store_true", help="the traced launch alone: no host side, no whole "
                    "command (the experiments' runs)")  # fmt: skip
    ap.add_argument("--max-rows", type=int, help="records kept (PLACEMENT_TRACE_MAX_ROWS): with 1, the traced launch "
                    "costs the patched callbacks and their slot counter alone, nothing written")  # fmt: skip
    args = ap.parse_args()

    from traces.sanitizer import build
    from traces.sanitizer.sass import find_nvdisasm, kernel_function

    problem = build.driver_problem()
    if problem:
        print(f"bench_trace: {problem}", file=sys.stderr)
        return 2
    nvcc = build.find_nvcc()
    if nvcc is None:
        print("bench_trace: nvcc not found (pip install nvidia-cuda-nvcc)", file=sys.stderr)
        return 2
    lib, fatbin = build.build()
    with tempfile.TemporaryDirectory(prefix="bench-trace-") as d:
        exe = os.path.join(d, "vecadd_app")
        _run([str(nvcc), "-O3", "-o", exe, str(APP)])
        base = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_TRACE_")}
        inject = dict(base, CUDA_INJECTION64_PATH=str(lib))
        for e in (int(x) for x in args.sizes.split(",")):
            n = 1 << e
            prog = [exe, str(n)]
            alone = statistics.median(_run(prog, base) for _ in range(args.repeat))
            launch_ms = []
            for k in range(args.repeat):
                out = os.path.join(d, f"time{k}.txt")
                _run(prog, dict(inject, PLACEMENT_TRACE_TIME_OUT=out))
                launch_ms.append(float(Path(out).read_text().split("\t")[0]))
            cubins = os.path.join(d, f"cubins{e}")
            os.mkdir(cubins)
            rec, stats = os.path.join(d, f"rec{e}.bin"), os.path.join(d, f"stats{e}.txt")
            traced_env = dict(inject, PLACEMENT_TRACE_PATCHES=str(fatbin), PLACEMENT_TRACE_OUT=rec,
                              PLACEMENT_TRACE_STATS=stats, PLACEMENT_TRACE_RING=str(args.ring),
                              PLACEMENT_TRACE_CUBIN_DIR=cubins)  # fmt: skip
            if args.max_rows:
                traced_env["PLACEMENT_TRACE_MAX_ROWS"] = str(args.max_rows)
            traced_env["PLACEMENT_TRACE_POLL"] = args.poll
            traced_wall = _run(prog, traced_env)
            seconds, records, write_s, wait_s, chunks = Path(stats).read_text().split("\t")
            traced_s, records = float(seconds), int(records)
            drain = (f"drain thread {float(write_s) * 1e3:,.1f} ms writing {int(chunks):,} chunks, "
                     f"{float(wait_s) * 1e3:,.1f} ms waiting")  # fmt: skip
            if args.device_only:
                launch = statistics.median(launch_ms) / 1e3
                print(f"n = 2^{e}: {records:,} records; launch {launch * 1e6:,.1f} us uninstrumented, traced "
                      f"{traced_s * 1e3:,.1f} ms ({traced_s / launch:,.0f}x), {records / traced_s / 1e6:.2f} M "
                      f"records/s on the device; {drain}", flush=True)  # fmt: skip
                continue
            if args.max_rows:  # the callbacks' cost alone: no records to decode
                print(f"n = 2^{e}: {records:,} records kept of {3 * n // 32:,}; launch "
                      f"{statistics.median(launch_ms) * 1e3:,.1f} us uninstrumented, traced {traced_s * 1e3:,.1f} ms",
                      flush=True)  # fmt: skip
                continue
            nvdisasm = find_nvdisasm()
            found = kernel_function(sorted(Path(cubins).iterdir()), "vecadd", nvdisasm) if nvdisasm else None
            fn = found[0] if found else None
            # read, decode with the SASS and write, as placement trace does (one warm-up pass, then medians)
            host = {s: pipeline(rec, os.path.join(d, f"t{e}{s}"), args.repeat, fn)["stages"]["total"]
                    for s in (".arrow", ".parquet")}  # fmt: skip
            cmd = [sys.executable, "-m", "placement.cli", "trace", "-o", os.path.join(d, f"cmd{e}.arrow"), "--", *prog]
            whole = []
            for k in range(args.repeat):
                whole.append(_run(cmd, base))
                os.remove(os.path.join(d, f"cmd{e}.arrow"))
            whole_s = statistics.median(whole)
            launch = statistics.median(launch_ms) / 1e3
            print(f"n = 2^{e}: {records:,} records; launch {launch * 1e6:,.1f} us uninstrumented, traced "
                  f"{traced_s * 1e3:,.1f} ms ({traced_s / launch:,.0f}x), {records / traced_s / 1e6:.2f} M records/s "
                  f"on the device ({drain}); program {alone:.2f} s alone, {traced_wall:.2f} s traced; host side "
                  + ", ".join(f"{s[1:]} {w:.3f} s wall {c:.3f} s CPU ({records / w / 1e6:.1f} M rows/s)"
                              for s, (w, c) in host.items())
                  + f"; placement trace -o T.arrow {whole_s:.2f} s ({records / whole_s / 1e6:.2f} M rows/s end to end)",
                  flush=True)  # fmt: skip
            for label, sass in (("with", fn), ("without", None)) if args.stages else ():
                st = pipeline(rec, os.path.join(d, f"s{e}.arrow"), args.repeat, sass)["stages"]
                print(f"  host side to Arrow IPC {label} the SASS, wall (CPU) s: "
                      + ", ".join(f"{k} {w:.3f} ({c:.3f})" for k, (w, c) in st.items()), flush=True)  # fmt: skip
    print(f"cores: {os.cpu_count()}, ring {args.ring:,} records, poll {args.poll}, medians of {args.repeat}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
