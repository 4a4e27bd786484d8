"""Rank every generator's kernel on a few GPUs, as a new user would, and list what looks wrong.

Usage::

    python benchmarks/rank_sweep.py [--gpus t4,a100,h100] [--kernels vecadd,conv1d,...] [--top 3] [--compile] [--json]

Each generator's default launch (``traces.generators``) is ranked (``placement.rank``, ``top`` placements,
``hints=True``) on each GPU. A finding is: an exception, a Python warning on the way (what a user sees on
the terminal), a time or term of the ranking that is not finite or is negative, a top placement whose CUDA
change cannot be pasted as is (``RankResult.hints_incomplete``, which ``rank`` also says), and a top
placement that puts in constant memory an object most of whose loads read several addresses a warp (the
constant cache serves them one after another; ``ObjectAccesses.serialized``), which is worth a look but
need not be wrong. With ``--compile``, each top placement's CUDA changes pasted together
(``placement.hints.translation_unit``) go through ``nvcc -c`` for the GPU's architecture (``sm_75`` for older GPUs,
the oldest nvcc 13 builds: the snippets are CUDA C++ whatever the target), and one that does not compile is a
finding with nvcc's first error. Each line gives the best placements, their predicted speedups and the rank's wall and
CPU time. The exit status is 1 when there is an exception, a warning, a bad number or hints that do not compile,
else 0.

This is how the 29 Nov session found the numpy warnings of kernels whose loads never reach DRAM and the
tiled matmul's ``M=C`` ranked first at 1.45x on the A100 (README "A placement's MLP"). The whole default
sweep (42 kernels, 3 GPUs: 126 ranks) took 1,238 s CPU, 2.2 GB peak on 29 Nov 2026; the Hong & Kim
micro-benchmarks of uncoalesced loads are most of it (``mb6_uc``, ``mb7_uc``: 1.5-3 minutes a GPU). ``--compile``
found, on 30 Nov, s3d's textures of doubles (``tex1Dfetch<double>``, which no texture format has) and md's
``(float4)0`` (README "Quick start", ``--hints``).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

TERMS = ("time_ns", "t_comp", "t_mem", "t_overlap")
OLDEST_ARCH = 75
"""The oldest architecture nvcc 13 compiles for (sm_75); older GPUs' snippets are compiled for it."""


def compile_error(trace, gpu: str, label: str) -> str:
    """nvcc's first error for the CUDA changes of placement ``label`` pasted together, "" when they compile."""
    import placement
    from placement import hints as H
    from placement.gpu import get_gpu
    from traces.errors import one_line

    cc = get_gpu(gpu).compute_capability
    arch = max(OLDEST_ARCH, 10 * cc[0] + cc[1])
    unit = H.translation_unit(placement.evaluate(trace, gpu, label, hints=True).hints)
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "hints.cu"
        src.write_text(unit)
        r = subprocess.run(["nvcc", "-c", f"-arch=sm_{arch}", str(src), "-o", str(Path(d) / "hints.o")],
                           capture_output=True, text=True, timeout=600)  # fmt: skip
    if r.returncode == 0:
        return ""
    errors = [line for line in r.stderr.splitlines() if "error" in line]
    return one_line(errors[0] if errors else r.stderr)[:300]


def sweep_one(name: str, gpu: str, top: int, compile_hints: bool = False) -> dict:
    """One kernel ranked on one GPU: its best placements and the findings."""
    import placement
    import traces
    from placement import attribution
    from traces import generators

    cols, info = generators.generate(name)
    trace = traces.Trace(**cols, info=info)
    found: list[str] = []
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = placement.rank(trace, gpu, top=top, hints=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    found += [f"warning: {w.category.__name__}: {w.message} ({Path(w.filename).name}:{w.lineno})" for w in caught]
    frame = r.to_frame()
    for _, row in frame.iterrows():
        for k in TERMS:
            v = row.get(k)
            if v is not None and not (math.isfinite(v) and v >= 0):
                found.append(f"bad number: {row.get('placement', '?')} {k} = {v}")
    found += [f"hints cannot be pasted: {p}: {why}" for p, why in r.hints_incomplete.items()]
    serialized = {n for n, a in attribution.accesses(trace).items() if a.serialized}
    for p in r.ranking[:top]:
        moved = [n for n, sp in dict(p.placement).items() if sp == "C" and n in serialized]
        if moved:
            found.append(
                f"look: {p.label} puts {', '.join(moved)} in constant memory, read at several addresses a warp"
            )
    if compile_hints:
        for p in r.ranking[:top]:
            why = compile_error(trace, gpu, p.label) if p.label != "sample" else ""
            if why:
                found.append(f"does not compile: {p.label}: {why}")
    return {"kernel": name, "gpu": gpu, "top": [(p.label, round(p.speedup, 3)) for p in r.ranking[:top]],
            "findings": found, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    from traces import generators

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default="t4,a100,h100")
    ap.add_argument("--kernels", default=",".join(generators.names()))
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--compile", action="store_true", help="compile each top placement's hints with nvcc")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.compile and shutil.which("nvcc") is None:
        print("rank_sweep.py: --compile needs nvcc (the CUDA toolkit) on the PATH", file=sys.stderr)
        return 2
    bad = 0
    rows = []
    for name in args.kernels.split(","):
        for gpu in args.gpus.split(","):
            try:
                row = sweep_one(name, gpu, args.top, args.compile)
            except Exception as exc:  # a finding, not the end of the sweep
                row = {"kernel": name, "gpu": gpu, "top": [], "findings": [f"exception: {exc!r}"],
                       "wall_s": 0.0, "cpu_s": 0.0}  # fmt: skip
            bad += any(not f.startswith(("look:", "hints")) for f in row["findings"])
            rows.append(row)
            if not args.json:
                best = ", ".join(f"{label} {s:.3f}" for label, s in row["top"])
                print(f"{name:26s} {gpu:6s} {best}  ({row['wall_s']:.1f} s wall, {row['cpu_s']:.1f} s CPU)", flush=True)
                for f in row["findings"]:
                    print(f"    {f}", flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        n = sum(bool(r["findings"]) for r in rows)
        print(f"{len(rows)} ranks, {n} with findings, {bad} with an exception, a warning, a bad number or hints that "
              "do not compile")  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _measure import timed_main

    sys.exit(timed_main(main))
