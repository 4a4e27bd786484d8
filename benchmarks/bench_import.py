"""Accel-Sim import speed: lines parsed per second on one core (goal: over 1 million).

Synthesizes a large ``kernel-1.traceg`` from the vectorAdd sample in
``../shared/data/traces/accelsim-vectoradd`` by repeating its thread blocks under a
larger grid (block ids renumbered, every address shifted per copy so each copy
touches its own part of the arrays), optionally rewriting a fraction of the memory
lines into address mode 0 (one hex address per lane, the slowest mode) and mode 2
(base + deltas). Then times ``parse_traceg`` (the parser alone) and the whole
import (parser, object inference, metadata), after one warm-up run that loads the
compiled kernels.

    python benchmarks/bench_import.py [--lines 5000000] [--mode0 0.1] [--mode2 0.1] [--xz]
"""

from __future__ import annotations

import argparse
import lzma
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numba

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import measure, run_footer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT.parent / "shared" / "data" / "traces" / "accelsim-vectoradd" / "kernel-1.traceg"

_MEM = re.compile(rb"^(\S+ (\S+) .*? )(\d+) 1 0x([0-9a-f]+) (-?\d+) (\S+) $")


def _rewrite(line: bytes, mode: int) -> bytes:
    m = _MEM.match(line)
    if not m:
        return line
    mask = int(m.group(2), 16)
    base, stride = int(m.group(4), 16), int(m.group(5))
    lanes = [i for i in range(32) if mask >> i & 1]
    if mode == 0:
        addrs = " ".join(f"0x{base + k * stride:016x}" for k in range(len(lanes)))
        return m.group(1) + m.group(3) + b" 0 " + addrs.encode() + b" " + m.group(6) + b" "
    deltas = " ".join(str(stride) for _ in lanes[1:])
    return m.group(1) + m.group(3) + b" 2 0x" + m.group(4) + b" " + deltas.encode() + b" " + m.group(6) + b" "


def synthesize(path: str, lines: int, mode0: float, mode2: float, xz: bool) -> int:
    text = SAMPLE.read_bytes().split(b"\n")
    body_at = next(i for i, ln in enumerate(text) if ln.startswith(b"#BEGIN_TB"))
    header, body = text[:body_at], text[body_at:]
    grid0 = int(re.search(rb"\((\d+),", next(h for h in header if h.startswith(b"-grid dim"))).group(1))
    copies = max(1, -(-lines // len(text)))
    header = [re.sub(rb"-grid dim = \(\d+,", b"-grid dim = (%d," % (grid0 * copies), h) for h in header]
    # Pre-render the memory-line variants once; copies shift addresses by a multiple of 1 MiB.
    mem_idx = [i for i, ln in enumerate(body) if _MEM.match(ln)]
    n0, n2 = int(len(mem_idx) * mode0), int(len(mem_idx) * mode2)
    variants = {i: 0 for i in mem_idx[:n0]} | {i: 2 for i in mem_idx[n0 : n0 + n2]}
    body = [_rewrite(ln, variants[i]) if i in variants else ln for i, ln in enumerate(body)]
    addr = re.compile(rb"0x(7fb0fc[0-9a-f]+)")
    tb = re.compile(rb"^thread block = (\d+),")
    total = len(header)
    opener = (lambda p: lzma.open(p, "wb", preset=1)) if xz else (lambda p: open(p, "wb"))
    with opener(path) as f:
        f.write(b"\n".join(header) + b"\n")
        for r in range(copies):
            shift = r * (1 << 20) * 3  # room for the three 200 kB arrays of each copy
            out = []
            for ln in body:
                if ln.startswith(b"thread block"):
                    ln = tb.sub(lambda m: b"thread block = %d," % (int(m.group(1)) + r * grid0), ln)
                elif shift and b"0x7fb0fc" in ln:
                    ln = addr.sub(lambda m: b"0x%x" % (int(m.group(1), 16) + shift), ln)
                out.append(ln)
            f.write(b"\n".join(out) + b"\n")
            total += len(body)
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=5_000_000, help="approximate number of lines to synthesize")
    ap.add_argument("--mode0", type=float, default=0.0, help="fraction of memory lines written in address mode 0")
    ap.add_argument("--mode2", type=float, default=0.0, help="fraction of memory lines written in address mode 2")
    ap.add_argument("--xz", action="store_true", help="compress the synthesized trace with xz")
    args = ap.parse_args(argv)
    if not SAMPLE.is_file():
        print(
            f"the Accel-Sim sample {SAMPLE} is absent (a fresh clone has no ../shared); nothing to measure",
            file=sys.stderr,
        )
        return 2
    numba.set_num_threads(1)
    t_start, c_start = time.perf_counter(), time.process_time()
    from traces.importers.accelsim import import_accelsim, parse_traceg

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "kernel-1.traceg" + (".xz" if args.xz else ""))
        t0 = time.perf_counter()
        n = synthesize(path, args.lines, args.mode0, args.mode2, args.xz)
        size = os.path.getsize(path)
        print(
            f"synthesized {n:,} lines ({size / 2**20:.0f} MiB{' xz' if args.xz else ''}) in {time.perf_counter() - t0:.1f} s"
        )
        parse_traceg(str(SAMPLE))  # warm-up: load the compiled kernels
        with measure("parse") as m:
            parsed = parse_traceg(path)
        dt = m.figures.wall_s
        rows = parsed.columns["cta"].shape[0]
        print(f"parse:  {n / dt / 1e6:.2f} million lines/s ({n:,} lines, {rows:,} rows, {size / dt / 2**20:.0f} MiB/s); "
              f"{m.figures.describe()}")  # fmt: skip
        del parsed
        with measure("import") as m:
            cols, info = import_accelsim(path)
        dt = m.figures.wall_s
        print(f"import: {n / dt / 1e6:.2f} million lines/s including object inference ({len(info.objects)} objects); "
              f"{m.figures.describe()}")  # fmt: skip
    print(run_footer(t_start, c_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
