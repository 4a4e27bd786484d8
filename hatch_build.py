"""Wheel build hook: ship numba's on-disk cache of the kernels the commands use.

Compiling the kernels is nearly all of a first `placement rank` after a fresh install
(88 s CPU on the 2-core machine on 2 Dec 2026, 228 s while the staging copy's helpers were
inlined at numba's level; the Accel-Sim importer's parser 19 s of a first `placement import
accelsim`, 62 s inlined). This hook runs the commands
once, at wheel build time, on the bundled examples and on small importer inputs it writes
(:data:`WARM_UP`, :func:`_importer_inputs`), in a copy of the three
packages, and puts the ``__pycache__/*.nbi`` / ``*.nbc`` files numba writes there into
the wheel beside the sources they belong to.

Why the shipped cache is used after ``pip install``: numba (>= 0.61) stamps a cache
index with the SHA-256 of its source file's content, not its path or mtime, and keys
each entry on the signature, the numba version, the Python version, the CPU (name and
features) and the function's bytecode. An installed file has a new path and mtime but
the same content, so the index is valid; on another CPU, numba version or Python, or
with the sources changed, the entries do not match and numba compiles as it always
did (and caches next to the installed files when that directory is writable). An
editable install (``pip install -e .``) ships nothing: the source tree's own cache is
used.

The warm-up needs the runtime dependencies in the build environment
(``require-runtime-dependencies`` in pyproject.toml), and it runs its commands in child
processes that must see them: pip's isolated build environment reaches the interpreter
through ``PYTHONPATH`` (a ``sitecustomize`` that adds its prefixes), so the children get
the packages' copy *in front of* the frontend's ``PYTHONPATH``, never instead of it
(:func:`_child_env`). Until 23 Nov 2026 this hook replaced ``PYTHONPATH``: every warm-up
failed with "No module named numpy" whenever the installing environment did not have
the dependencies itself (every fresh virtual environment, CI's included) and the wheel
shipped no cache, while builds from a populated environment shipped it, which looked
intermittent. A warm-up command that fails only costs the speed-up: the build goes on,
with a warning naming a log file that holds the command's whole error output
(``tests/test_wheel_cache.py`` checks that an installed wheel carries the cache).
The same files seed the source tree's ``__pycache__`` where it has none (see
:func:`_seed`), for the test suite run from there. Set ``PLACEMENT_WHEEL_NO_CACHE=1`` to
build a wheel without the cache.
"""

from __future__ import annotations

import glob
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGES = ("traces", "cachesim", "placement")

# The commands whose kernels the wheel carries compiled: the main job (rank, with the
# staging kernels of conv1d and matmul), evaluate, a trace's summary, the four importers
# (the Accel-Sim parser alone took 32.8 s on a first `placement import accelsim`; the
# sanitizer's records, what `placement trace` reads, 3.8 s) on small
# inputs written by _importer_inputs, and the benchmark generators (one kernel per numba
# function of traces/generators: _kern's seven, qtc's and shoc's).
WARM_UP = (
    ("rank", "configs/examples/vecadd.parquet", "--gpu", "k80"),
    ("rank", "configs/examples/conv1d.parquet", "--gpu", "k80"),
    ("rank", "configs/examples/matmul.parquet", "--gpu", "v100"),
    ("evaluate", "configs/examples/vecadd.parquet", "--gpu", "k80"),
    ("info", "configs/examples/vecadd.parquet"),
    ("import", "accelsim", "warm-up/accelsim", "-o", "warm-up/accelsim.parquet"),
    ("import", "nvbit", "warm-up/memtrace.log", "-o", "warm-up/nvbit.parquet"),
    ("import", "porple", "warm-up/porple.txt", "-o", "warm-up/porple.parquet"),
    ("import", "sanitizer", "warm-up/records.bin", "-o", "warm-up/sanitizer.parquet"),
    ("bench", "gen", "vecadd", "-o", "warm-up/gen.parquet"),
    ("bench", "gen", "matmul_naive", "-o", "warm-up/gen.parquet"),
    ("bench", "gen", "matrixmul", "-o", "warm-up/gen.parquet"),
    ("bench", "gen", "convolution_rows", "-o", "warm-up/gen.parquet"),
    ("bench", "gen", "reduction", "-o", "warm-up/gen.parquet"),
    ("bench", "gen", "spmv", "-o", "warm-up/gen.parquet"),
    ("bench", "gen", "md", "-o", "warm-up/gen.parquet"),
    ("bench", "gen", "bfs", "-o", "warm-up/gen.parquet"),
    ("bench", "gen", "qtc", "-o", "warm-up/gen.parquet"),
)

_A, _B, _C = 0x7F0000000000, 0x7F0000000200, 0x7F0000000400  # the importers' inputs' three arrays


def _importer_inputs(folder: Path) -> None:
    """Small inputs for the importers' warm-up, in ``folder`` (``warm-up`` of the work copy; the
    wheel does not ship them): c[i] = a[i] + b[i] over 2 blocks of 64 threads (128 floats an
    array) as an Accel-Sim folder (kernelslist.g with its copies, one kernel-1.traceg, tracer
    version 5), an NVBit mem_trace log, a PORPLE trace and a record file of `placement trace`'s
    injection library (traces/sanitizer/records.py, written here with struct: the hook imports
    nothing of the package). Their numba kernels are the real files' (the parsers' types do not
    depend on the sizes)."""
    acc = folder / "accelsim"
    acc.mkdir(parents=True, exist_ok=True)
    (acc / "kernelslist.g").write_text(f"MemcpyHtoD,0x{_A:016x},512\nMemcpyHtoD,0x{_B:016x},512\nkernel-1.traceg\n")
    head = ["-kernel name = _Z6vecaddPKfS0_Pf", "-kernel id = 1", "-grid dim = (2,1,1)", "-block dim = (64,1,1)",
            "-shmem = 0", "-nregs = 12", "-binary version = 80", "-cuda stream id = 0",
            "-shmem base_addr = 0x00007f1000000000", "-local mem base_addr = 0x00007f2000000000",
            "-nvbit version = 1.7", "-accelsim tracer version = 5", "-enable lineinfo = 0", "",
            "#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width "
            "[adrrescompress?] [mem_addresses] immediate", ""]  # fmt: skip
    body = []
    mem = []
    for cta in range(2):
        body += ["#BEGIN_TB", "", f"thread block = {cta},0,0", ""]
        for warp in range(2):
            off = (cta * 64 + warp * 32) * 4
            body += [f"warp = {warp}", "insts = 6", "0000 ffffffff 1 R1 MOV 0 0 0",
                     f"0010 ffffffff 1 R4 LDG.E 1 R4 4 1 0x{_A + off:x} 4 0",
                     f"0020 ffffffff 1 R3 LDG.E 1 R2 4 1 0x{_B + off:x} 4 0",
                     "0030 ffffffff 1 R0 FADD 2 R4 R3 0 0",
                     f"0040 ffffffff 0 STG.E 2 R6 R0 4 1 0x{_C + off:x} 4 0", "0050 ffffffff 0 EXIT 0 0 0", ""]  # fmt: skip
            for op, base in (("LDG.E", _A), ("LDG.E", _B), ("STG.E", _C)):
                lanes = " ".join(f"0x{base + off + 4 * i:016x}" for i in range(32))
                mem.append(
                    f"MEMTRACE: CTX 0x0000565200000000 - grid_launch_id 0 - CTA {cta},0,0 - warp {warp} - {op} - {lanes} "
                )
        body.append("#END_TB")
    (acc / "kernel-1.traceg").write_text("\n".join(head + body) + "\n")
    (folder / "memtrace.log").write_text("\n".join(mem) + "\n")
    # PORPLE: arrays a, b (read) and c (written) of 128 floats; one access a line (array,
    # read 0 / write 1, expression, loop iteration, thread, element)
    lines = ["dimension 1 1 1", "sizeof 4 4 4", "block_X 128 128 128", "block_Y 1 1 1", "array_size 512 512 512"]
    lines += [f"{array} {int(array == 2)} {array} 0 {t} {t}" for array in range(3) for t in range(128)]
    (folder / "porple.txt").write_text("\n".join(lines) + "\n")
    # the record file: header, launch (name, no parameter list), the three allocations, 12 accesses
    # (cta, warp, pc, flags 1 read / 2 write, space 0 global, width 4, full mask, 32 addresses), end
    name = b"_Z6vecaddPKfS0_Pf"
    launch = struct.pack("<14I2Q", 0, 2, 1, 1, 64, 1, 1, 12, 0, 0, 0, 0, len(name), 0, 0, 0) + name
    allocs = b"".join(struct.pack("<2Q", base, 512) for base in (_A, _B, _C))
    rows = [(cta, warp, 16 * (k + 1), 2 if base == _C else 1, base + (cta * 64 + warp * 32) * 4)
            for k, base in enumerate((_A, _B, _C)) for cta in range(2) for warp in range(2)]  # fmt: skip
    accesses = b"".join(struct.pack("<4I2BHI32Q", cta, warp, pc, flags, 0, 4, 0, 0xFFFFFFFF,
                                    *(first + 4 * i for i in range(32))) for cta, warp, pc, flags, first in rows)  # fmt: skip
    chunks = ((1, len(launch), launch), (2, 3, allocs), (3, len(rows), accesses), (4, 16, struct.pack("<2Q", 12, 0)))
    (folder / "records.bin").write_bytes(
        b"PLSNTRC\0" + struct.pack("<2I", 1, 16) + b"".join(struct.pack("<2I", k, n) + body for k, n, body in chunks)
    )


def _child_env(work: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The warm-up commands' environment: the packages' copy first on ``PYTHONPATH``, then
    whatever the build frontend put there (pip's isolated build environment lives on it);
    numba's settings dropped so that it caches in the copy's own ``__pycache__``."""
    env = {k: v for k, v in environ.items() if not k.startswith("NUMBA_")}
    path = [str(work), *filter(None, environ.get("PYTHONPATH", "").split(os.pathsep))]
    env.update(PYTHONPATH=os.pathsep.join(path), CI="1")
    return env


def _seed(root: Path, work: Path) -> int:
    """Copy the warmed cache into the source tree's ``__pycache__`` where it has no index of
    that function yet, so that the test suite run from the source tree (``pip install
    '.[test]' && python -m pytest``) loads these kernels instead of compiling them. An
    existing index (perhaps newer, with more signatures) is left alone; a data file of the
    same name without an index belongs to none and is replaced. The index is copied last,
    once its data files are in place."""
    seeded = 0
    for index in sorted(work.glob("*/**/__pycache__/*.nbi")):
        rel = index.relative_to(work)
        if rel.parts[0] not in PACKAGES or (root / rel).exists():
            continue
        (root / rel).parent.mkdir(exist_ok=True)
        stem = index.name[: -len(".nbi")]
        for data in index.parent.glob(glob.escape(stem) + ".*.nbc"):
            shutil.copy2(data, root / data.relative_to(work))
        shutil.copy2(index, root / rel)
        seeded += 1
    return seeded


class CustomBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if version == "editable" or os.environ.get("PLACEMENT_WHEEL_NO_CACHE"):
            return
        root = Path(self.root)
        # removed in finalize, once the wheel holds the files
        self._work = work = Path(tempfile.mkdtemp(prefix="placement-numba-cache-"))
        self._warm_up(root, work)
        shipped = 0
        for pkg in PACKAGES:
            for f in sorted((work / pkg).rglob("__pycache__/*.nb[ic]")):
                build_data["force_include"][str(f)] = str(f.relative_to(work))
                shipped += 1
        self.app.display_info(f"numba cache: {shipped} index and data files shipped")
        try:
            seeded = _seed(root, work)
        except OSError as exc:  # a read-only source tree: the tests compile instead
            self.app.display_warning(f"numba cache: source tree not seeded ({exc})")
        else:
            self.app.display_info(f"numba cache: {seeded} indexes seeded into the source tree's __pycache__")

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        work = getattr(self, "_work", None)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)

    def _warm_up(self, root: Path, work: Path) -> None:
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        for pkg in PACKAGES:
            shutil.copytree(root / pkg, work / pkg, ignore=ignore)
        shutil.copytree(root / "configs", work / "configs", ignore=ignore)
        _importer_inputs(work / "warm-up")
        env = _child_env(work, os.environ)
        for argv in WARM_UP:
            cmd = [sys.executable, "-m", "placement.cli", *argv]
            if argv[0] == "rank":
                cmd += ["--workers", "1", "--no-progress"]
            r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
            if r.returncode != 0:
                # kept after the build (pip shows hatch's warnings only with -v or on failure)
                fd, log = tempfile.mkstemp(prefix="gpu-placement-warm-up-", suffix=".log")
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(f"$ {' '.join(cmd)}\n(exit {r.returncode})\n{r.stdout}\n{r.stderr}")
                tail = (r.stderr.strip().splitlines() or [""])[-1]
                self.app.display_warning(f"numba cache warm-up `placement {' '.join(argv)}` failed "
                                         f"(exit {r.returncode}: {tail}; whole output in {log}); "
                                         "those kernels compile on first use")  # fmt: skip
