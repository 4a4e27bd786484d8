"""Registers per thread of the benchmark kernels on every architecture nvcc builds: writes the table
the generators put in their traces (``traces/generators/registers.toml``).

Usage::

    python benchmarks/arch_registers.py [--arch sm_75,sm_80,...] [--kernels conv1d,...]
                                        [--no-conv2d-kt] [-o traces/generators/registers.toml]
    python benchmarks/arch_registers.py --variants [--arch sm_80,sm_86,sm_90]
                                        [-o traces/generators/registers_variants.toml]

Why: a trace's ``regs_per_thread`` is one build's (the recipes' sm_80 build, ``benchmarks/sass_recipes.py``),
but nvcc allocates registers per architecture, and occupancy follows them. Kernel Tuner's 2D convolution
(``benchmarks/kernels/conv2d_kt.cu``) with 2 x 2 outputs a thread and 32 x 8 blocks uses 32 registers on
sm_80, 64 on sm_75, 40 on sm_86 and 254 on sm_90 (nvcc 13.0): 8 resident blocks of 256 threads on an A100,
1 on an H100. The generators therefore store every architecture's count in the trace's metadata
(``extra["regs_by_arch"]``, ``traces.generators._common``) and the model takes the one of the GPU it prices
(``placement.occupancy.regs_for``).

Each ``benchmarks/kernels/*.cu`` is compiled once per architecture with ``nvcc -cubin -O3 -arch=sm_XX
-Xptxas -v`` (the recipes' flags), and ptxas's report gives, per ``extern "C"`` kernel, the registers and
the spill-store and spill-load bytes per thread. ``conv2d_kt`` is compiled once per shape of Kernel Tuner's
space that changes its code: block_size_y in 1, 2, 4, 8, 16 and tiles 1..4 x 1..4, at block_size_x = 32
(every block_size_x of that space is at least the filter's 15 columns, so a thread's tile columns never
share input elements and the code does not depend on it; ``--check-bsx`` compiles 16 and 64 as well and
refuses to write a table where they differ). About 560 compilations, 25-30 minutes on one core.

``--variants`` writes the registers of conv2d_kt's other placements of its input (``traces/generators/
registers_variants.toml``): R (``-Dread_only=1``, ``__ldg``) per block_size_y and tile, at block_size_x 32 as
above, and S/G and S/R (``-Duse_shmem=1``, ``-Duse_shmem=1 -Dread_only=1``: the input tile staged in shared
memory) per block_size_x too, since the copy loop's trip counts follow it (KT_VARIANT_BSX). A placement's
build is another program, with its own registers: on sm_90 the 32 x 4 block with 2 x 2 tiles takes 164
registers with plain loads and 80 staged (3 against 6 resident blocks), and on sm_80 168 with __ldg for
64 x 2 blocks and 4 x 2 tiles against 40. A shape whose build ptxas refuses (a staged tile over the 48 KB of
static shared memory, more than 1024 threads) has no entry. The generator puts these in the trace
(``extra["regs_by_placement"]``) and ``placement.occupancy.regs_for`` takes the placement's.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "benchmarks" / "kernels"
DEFAULT_OUT = ROOT / "traces" / "generators" / "registers.toml"
# What nvcc 13 builds (``nvcc --list-gpu-arch``: compute_75 and later), one per family; sm_87/88 (Orin, Thor)
# and the 'a'/'f' variants are left out.
ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
KT_BLOCK_Y = (1, 2, 4, 8, 16)
KT_TILES = (1, 2, 3, 4)
KT_BSX = 32
KT_CHECK_BSX = (16, 64)
KT_VARIANT_BSX = (16, 32, 64, 128)
VARIANTS_OUT = ROOT / "traces" / "generators" / "registers_variants.toml"
# a placement of conv2d_kt's input and the macros of its build
KT_VARIANTS = {"R": ("read_only=1",), "S/G": ("use_shmem=1",), "S/R": ("use_shmem=1", "read_only=1")}

_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS = re.compile(r"Used (\d+) registers")


def ptxas_report(text: str) -> dict[str, tuple[int, int, int]]:
    """``{kernel: (registers, spill-store bytes, spill-load bytes)}`` from ``nvcc -Xptxas -v``'s report.

    ptxas prints, per entry function, ``Compiling entry function 'NAME' for 'sm_XX'``, then a line with
    ``N bytes spill stores, M bytes spill loads``, then ``Used R registers, ...``."""
    out: dict[str, tuple[int, int, int]] = {}
    name, spill = None, (0, 0)
    for line in text.splitlines():
        m = _ENTRY.search(line)
        if m:
            name, spill = m.group(1), (0, 0)
            continue
        m = _SPILL.search(line)
        if m and name:
            spill = (int(m.group(1)), int(m.group(2)))
        m = _REGS.search(line)
        if m and name:
            out[name] = (int(m.group(1)), *spill)
            name = None
    return out


def compile_report(nvcc: str, cu: Path, arch: str, workdir: Path, defines: tuple[str, ...] = ()) -> dict:
    """ptxas's per-kernel report of one ``nvcc -cubin -O3 -arch=ARCH -Xptxas -v`` build."""
    cubin = workdir / f"{cu.stem}-{arch}-{'-'.join(defines) or 'default'}.cubin"
    flags = [f"-D{d}" for d in defines]
    r = subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", *flags, "-o", str(cubin), str(cu)],
                       capture_output=True, text=True)  # fmt: skip
    if r.returncode != 0:
        raise RuntimeError(f"nvcc failed on {cu.name} for {arch} {defines}: {r.stderr.strip().splitlines()[-1:]}")
    cubin.unlink(missing_ok=True)
    return ptxas_report(r.stderr + r.stdout)


def kt_defines(bsx: int, bsy: int, tsx: int, tsy: int) -> tuple[str, ...]:
    return (f"block_size_x={bsx}", f"block_size_y={bsy}", f"tile_size_x={tsx}", f"tile_size_y={tsy}")


def try_report(nvcc: str, cu: Path, arch: str, workdir: Path, defines: tuple[str, ...]) -> dict | None:
    """:func:`compile_report`, or None where nvcc refuses the build (a shape the kernel cannot take)."""
    try:
        return compile_report(nvcc, cu, arch, workdir, defines)
    except RuntimeError:
        return None


def variant_shapes() -> list[tuple[str, int, int, int, int]]:
    """(variant, block_size_x, block_size_y, tile_size_x, tile_size_y) of every build ``--variants`` makes:
    R at KT_BSX only (its code does not follow block_size_x, as the plain build's), S/G and S/R at each of
    KT_VARIANT_BSX; blocks over 1024 threads left out."""
    out = []
    for v in KT_VARIANTS:
        for bsx in (KT_BSX,) if v == "R" else KT_VARIANT_BSX:
            for bsy, tsx, tsy in itertools.product(KT_BLOCK_Y, KT_TILES, KT_TILES):
                if bsx * bsy <= 1024:
                    out.append((v, bsx, bsy, tsx, tsy))
    return out


def _value(v: tuple[int, int, int]) -> str:
    """A table value: the registers, or [registers, spill-store bytes, spill-load bytes] where ptxas spills."""
    return str(v[0]) if v[1] == 0 and v[2] == 0 else f"[{v[0]}, {v[1]}, {v[2]}]"


def _archs_line(archs) -> str:
    return f"archs = [{', '.join(repr(a).replace(chr(39), chr(34)) for a in archs)}]"


def _entry(key: str, per: dict, archs) -> str:
    """One table line, ``KEY = { sm_XY = value, ... }`` in ``archs`` order."""
    return f"{key} = {{ {', '.join(f'{a} = {_value(per[a])}' for a in archs if a in per)} }}"


def variants_table(found: dict[str, dict[str, tuple[int, int, int]]], archs, version: str) -> str:
    lines = [
        "# Registers per thread of conv2d_kt's builds for the other placements of its input (ptxas's report of",
        f"# nvcc {version} -cubin -O3 -arch=sm_XX -Xptxas -v of benchmarks/kernels/conv2d_kt.cu with -Dread_only=1",
        "# (R), -Duse_shmem=1 (S/G) or both (S/R)). Generated by benchmarks/arch_registers.py --variants; do not",
        '# edit. Keys: "R,block_size_y,tile_size_x,tile_size_y" (any block_size_x >= 15 builds the same code) and',
        '# "S/G,block_size_x,block_size_y,tile_size_x,tile_size_y" (the copy loop follows block_size_x). A value',
        "# is the registers, or [registers, spill-store bytes, spill-load bytes] per thread where ptxas spills.",
        _archs_line(archs),
        "",
        "[conv2d_kt]",
    ]
    lines += [_entry(f'"{key}"', found[key], archs) for key in sorted(found)]
    return "\n".join(lines) + "\n"


def variant_key(v: str, bsx: int, bsy: int, tsx: int, tsy: int) -> str:
    """The table's key of one build: the variant, block_size_x for the staged ones, then the shape."""
    return ",".join(map(str, (v, bsy, tsx, tsy) if v == "R" else (v, bsx, bsy, tsx, tsy)))


def main_variants(nvcc: str, archs, jobs: int, out: Path, version: str) -> int:
    from traces.atomic import write_text

    kt_src = KERNELS / "conv2d_kt.cu"
    found: dict[str, dict[str, tuple[int, int, int]]] = {}
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max(1, jobs)) as pool:
        work = Path(tmp)
        futs = {(s, a): pool.submit(try_report, nvcc, kt_src, a, work, (*KT_VARIANTS[s[0]], *kt_defines(*s[1:])))
                for s in variant_shapes() for a in archs}  # fmt: skip
        for (s, a), fut in futs.items():
            r = fut.result()
            if r is not None:
                found.setdefault(variant_key(*s), {})[a] = r["conv2d_kt"]
    write_text(out, variants_table(found, archs, version))
    print(f"wrote {out}: {len(found)} builds, {len(archs)} architectures", file=sys.stderr)
    return 0


def toml_table(kernels: dict[str, dict[str, tuple[int, int, int]]], kt: dict, archs, version: str) -> str:
    lines = [
        "# Registers per thread of the benchmark kernels on each architecture (ptxas's report of",
        f"# nvcc {version} -cubin -O3 -arch=sm_XX -Xptxas -v). Generated by benchmarks/arch_registers.py; do not edit.",
        '# [kernels]: one entry per extern "C" kernel of benchmarks/kernels/*.cu, as built there;',
        '# [conv2d_kt]: benchmarks/kernels/conv2d_kt.cu per shape "block_size_y,tile_size_x,tile_size_y"',
        f"# (block_size_x {KT_BSX}; any block_size_x >= 15 builds the same code). A value is the registers, or",
        "# [registers, spill-store bytes, spill-load bytes] per thread where ptxas spills.",
        _archs_line(archs),
        "",
        "[kernels]",
    ]
    lines += [_entry(name, kernels[name], archs) for name in sorted(kernels)]
    if kt:
        lines += ["", "[conv2d_kt]"]
        lines += [_entry(f'"{shape}"', kt[shape], archs) for shape in sorted(kt)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from sass_recipes import tool

    from traces.atomic import write_text

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default=",".join(ARCHS), help="comma-separated sm_XX list")
    ap.add_argument("--kernels", default="", help="only these .cu stems (default: all)")
    ap.add_argument("--no-conv2d-kt", action="store_true", help="skip conv2d_kt's shape table")
    ap.add_argument("--check-bsx", action="store_true", help=f"also build conv2d_kt at block_size_x {KT_CHECK_BSX}")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument(
        "--variants",
        action="store_true",
        help="write conv2d_kt's R, S/G and S/R builds' registers instead (registers_variants.toml)",
    )
    ap.add_argument("-o", "--output", default=None, help=f"default {DEFAULT_OUT} ({VARIANTS_OUT} with --variants)")
    args = ap.parse_args(argv)
    archs = tuple(a.strip() for a in args.arch.split(",") if a.strip())
    nvcc = tool("nvcc")
    version = re.search(r"V([\d.]+)", subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout)
    if args.variants:
        return main_variants(nvcc, archs, args.jobs, Path(args.output or VARIANTS_OUT),
                             version.group(1) if version else "?")  # fmt: skip
    stems = set(filter(None, args.kernels.split(",")))
    sources = [cu for cu in sorted(KERNELS.glob("*.cu")) if not stems or cu.stem in stems]

    kernels: dict[str, dict[str, tuple[int, int, int]]] = {}
    kt: dict[str, dict[str, tuple[int, int, int]]] = {}
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        work = Path(tmp)
        jobs = {(cu, a): pool.submit(compile_report, nvcc, cu, a, work) for cu in sources for a in archs}
        shapes = [] if args.no_conv2d_kt else list(itertools.product(KT_BLOCK_Y, KT_TILES, KT_TILES))
        bsxs = (KT_BSX, *KT_CHECK_BSX) if args.check_bsx else (KT_BSX,)
        kt_src = KERNELS / "conv2d_kt.cu"
        kt_jobs = {(s, a, x): pool.submit(compile_report, nvcc, kt_src, a, work, kt_defines(x, *s))
                   for s in shapes for a in archs for x in bsxs}  # fmt: skip
        for (cu, a), fut in jobs.items():
            for name, v in fut.result().items():
                kernels.setdefault(name, {})[a] = v
        for (s, a, x), fut in kt_jobs.items():
            v = fut.result()["conv2d_kt"]
            key = ",".join(map(str, s))
            if x == KT_BSX:
                kt.setdefault(key, {})[a] = v
        for (s, a, x), fut in kt_jobs.items():
            key = ",".join(map(str, s))
            if x != KT_BSX and fut.result()["conv2d_kt"] != kt[key][a]:
                sys.exit(f"arch_registers: conv2d_kt {key} on {a}: block_size_x {x} builds "
                         f"{fut.result()['conv2d_kt']}, {KT_BSX} builds {kt[key][a]}")  # fmt: skip
    text = toml_table(kernels, kt, archs, version.group(1) if version else "?")
    out = Path(args.output or DEFAULT_OUT)
    write_text(out, text)  # atomically (traces.atomic)
    print(f"wrote {out}: {len(kernels)} kernels, {len(kt)} conv2d_kt shapes, {len(archs)} architectures",
          file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _measure import timed_main

    sys.exit(timed_main(main))  # prints wall, CPU and peak RSS of the run to stderr
