"""Mutation fuzzing of every reader: seed inputs, mutations, and the readers as targets.

Shared by ``tests/test_fuzz_readers.py`` (hypothesis, a few examples per target in
every test run) and ``benchmarks/fuzz.py`` (long campaigns). A *target* builds a
few small valid inputs (its seeds) in a folder and reads one input the way the
command does; a *mutation* turns a seed into bad input: byte flips, truncation,
deleted, duplicated or swapped lines, swapped fields, huge, negative, NaN and
infinite numbers, values of the wrong type, binary junk, or a path that is a
folder, a file that cannot be read, a dangling link or an empty file. Trace
seeds (Parquet, and Arrow IPC files) are also rewritten with mutated metadata JSON
or mutated column values, so that the trace checks are reached and not only the
decoder.

The property every reader must keep: a result, or an :class:`InputError` whose
message is one line; nothing else (:func:`outcome`). A result must also be usable
where that is cheap to see: an importer's columns are written as a trace (so they
meet the trace contract), a GPU configuration evaluates a tiny trace, and
counters, parameter files and coefficients give finite, non-negative times.

Everything is driven by one ``random.Random``, so an input is reproduced from
(target, seed index, random seed) alone, and hypothesis can drive the same
mutations through ``st.randoms()``.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import traces
from traces.errors import InputError
from traces.schema import METADATA_KEY

from tracemaker import vecadd

ROOT = Path(__file__).resolve().parents[1]

# ---- seeds -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """A valid input: ``path`` is given to the reader, ``member`` is the file mutated
    (``path`` itself, or one file of a folder input)."""

    path: Path
    member: Path
    kind: str = "text"  # "text", "parquet" or "ipc" (a trace in an Arrow IPC file)


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


def _tiny_trace(path: Path, *, shape: bool = False) -> Path:
    cols, info = vecadd(2, 2)
    if shape:
        objs = list(info.objects)
        objs[0] = traces.ObjectInfo(0, "A", "global", objs[0].base, objs[0].size, 4, (8, 16), False)
        info = traces.KernelInfo(**{**info.__dict__, "objects": tuple(objs),
                                    "measured": traces.Measured(1234.5, "k80")})  # fmt: skip
    traces.write(path, cols, info)
    return path


def seeds_trace(d: Path) -> list[Seed]:
    return [Seed(_tiny_trace(d / "t0.parquet"), d / "t0.parquet", "parquet"),
            Seed(_tiny_trace(d / "t1.parquet", shape=True), d / "t1.parquet", "parquet")]  # fmt: skip


def seeds_trace_ipc(d: Path) -> list[Seed]:
    return [Seed(_tiny_trace(d / "t0.arrow"), d / "t0.arrow", "ipc"),
            Seed(_tiny_trace(d / "t1.arrow", shape=True), d / "t1.arrow", "ipc")]  # fmt: skip


def accelsim_header(version: int = 5, grid=(2, 1, 1), block=(64, 1, 1), name: str = "_Z4testPfS_") -> str:
    return "\n".join([
        f"-kernel name = {name}", "-kernel id = 1", f"-grid dim = ({grid[0]},{grid[1]},{grid[2]})",
        f"-block dim = ({block[0]},{block[1]},{block[2]})", "-shmem = 1024", "-nregs = 16", "-binary version = 80",
        "-cuda stream id = 0", "-shmem base_addr = 0x00007f0000000000", "-local mem base_addr = 0x00007f0002000000",
        "-nvbit version = 1.7", f"-accelsim tracer version = {version}", "", "#traces format = PC mask ...", "", "",
    ])  # fmt: skip


def accelsim_block(x: int, warps: list[list[str]]) -> str:
    out = ["#BEGIN_TB", "", f"thread block = {x},0,0", ""]
    for j, lines in enumerate(warps):
        out += [f"warp = {j}", f"insts = {len(lines)}"] + lines + [""]
    return "\n".join(out + ["#END_TB", ""])


def _accelsim_kernel(version: int) -> str:
    t = {3: "", 4: "", 5: " 0", 6: " 0 0 NoVal"}[version]
    w0 = [
        f"0000 ffffffff 1 R1 MOV 0 0{t}",
        f"0010 ffffffff 1 R2 LDG.E 1 R4 4 1 0x10000 4{t}",
        f"0020 0000000f 1 R3 LDG.E.64 1 R4 8 0 0x20000 0x20008 0x20010 0x20100{t}",
        f"0030 00000f00 0 STG.E.U8 2 R4 R3 1 2 0x30000 1 1 -2{t}",
        f"0040 ffffffff 1 R5 FADD 2 R2 R3 0{t}",
        f"0050 ffffffff 0 EXIT 0 0{t}",
    ]
    w1 = [f"0010 ffffffff 1 R2 LDG.E 1 R4 4 1 0x10080 4{t}", f"0050 ffffffff 0 EXIT 0 0{t}"]
    return (
        accelsim_header(version) + accelsim_block(0, [w0, w1]) + accelsim_block(1, [[f"0050 ffffffff 0 EXIT 0 0{t}"]])
    )


def seeds_accelsim(d: Path) -> list[Seed]:
    out = []
    for i, (version, name) in enumerate(
        [(5, "kernel-1.traceg"), (6, "kernel-1-ctx_0x5581.traceg"), (3, "kernel-2.traceg")]
    ):
        f = d / f"a{i}"
        kl = _write(
            f / "kernelslist.g", f"MemcpyHtoD,0x0000000000010000,256\nMemcpyHtoD,0x0000000000020000,512\n{name}\n"
        )
        tr = _write(f / name, _accelsim_kernel(version))
        out += [Seed(f, tr), Seed(f, kl)]
    out.append(Seed(d / "a2" / "kernel-2.traceg", d / "a2" / "kernel-2.traceg"))
    return out


def _addrs(base: int, n_active: int = 32, stride: int = 4) -> str:
    return " ".join(f"0x{(base + stride * i) if i < n_active else 0:016x}" for i in range(32))


def seeds_nvbit(d: Path) -> list[Seed]:
    ctx = "MEMTRACE: CTX 0x00005652657a2f00"
    new = [
        f"{ctx} - LAUNCH - Kernel pc 0x7f65 - Kernel name _Z3fooPf - grid launch id 0 - grid size 2,1,1 - "
        "block size 64,1,1 - nregs 16 - shmem 0 - cuda stream id 0",
        *(
            f"{ctx} - grid_launch_id 0 - CTA {c},0,0 - warp {w} - LDG.E - {_addrs(0x10000 + 256 * c + 128 * w)} "
            for c in range(2)
            for w in range(2)
        ),
        f"{ctx} - grid_launch_id 0 - CTA 0,0,0 - warp 1 - STG.E - {_addrs(0x90000, 20, 4)} ",
        f"{ctx} - grid_launch_id 0 - CTA 1,0,0 - warp 0 - LDS - {_addrs(0x40, 32, 8)} ",
    ]
    old = [
        "------------- NVBit (NVidia Binary Instrumentation Tool v1.1) Loaded --------------",
        "Kernel _Z3fooPf - grid size 2,1,1 - block size 64,1,1 - nregs 8 - shmem 256 - cuda stream id 0",
        f"CTA 0,0,0 - warp 5 - LDG.E - {_addrs(0x10080)} ",
        f"CTA 0,0,0 - warp 3 - LDG.E - {_addrs(0x10000)} ",
        f"CTA 1,0,0 - warp 9 - LDG.E.64 - {_addrs(0x10100, 16, 8)} ",
        "program output: done",
        "Kernel _Z3barPf - grid size 1,1,1 - block size 32,1,1 - nregs 8 - shmem 0 - cuda stream id 0",
        f"CTA 0,0,0 - warp 0 - STG.E - {_addrs(0x90000)} ",
    ]
    no_launch = [f"{ctx} - grid_launch_id 3 - CTA 0,0,{z} - warp {w} - LDG.E.SYS - {_addrs(0x5000 + 128 * w)} "
                 for z in range(2) for w in range(3)]  # fmt: skip
    return [Seed(p, p) for p in (_write(d / "new.log", "\n".join(new) + "\n"), _write(d / "old.log", "\n".join(old) + "\n"),
                                 _write(d / "bare.log", "\n".join(no_launch) + "\n"))]  # fmt: skip


def seeds_porple(d: Path) -> list[Seed]:
    one = (
        "dimension 1 2\nsizeof 4 8\nblock_X 64 8\nblock_Y 1 8\narray_size 256 512\n"
        + "\n".join(
            [f"0 0 0 0 {t} {t}" for t in range(40)] + [f"1 1 0 0 {t} {t}" for t in range(8)] + ["[k1]: 0 0 0 1 0 63"]
        )
        + "\n"
    )
    two = "dimension 2 1\nsizeof 4 4\nblock_X 16 1\nblock_Y 16 1\narray_size 1024 256\n" + "\n".join(
        [f"0 0 {e} {l} {t} {(t * 16 + l) % 256}" for e in range(2) for l in range(2) for t in range(70)]
        + [f"1 1 0 0 {t} {t % 64}" for t in range(70)]) + "\n"  # fmt: skip
    return [Seed(p, p) for p in (_write(d / "one.txt", one), _write(d / "two.txt", two))]


def seeds_gpu(d: Path) -> list[Seed]:
    out = []
    for src in sorted((ROOT / "configs" / "gpus").glob("*.toml")):
        p = _write(d / src.name, src.read_bytes())
        out.append(Seed(p, p))
    return out


SUITE_TEXT = """\
name = "fuzz"
gpu = "k80"

[options]
queue = "kingman"
instruction_counting = true
overlap = "coef.toml"

[[entry]]
id = "triad-2k"
generator = "triad"
size = [2048]
block = [128]
placements = ["", "A=T,B=C", "C=S"]
measured_ns = [3000.0, 2800.5, 3100]

[[entry]]
generator = "matrix_sum_normal"
size = [64]
block = [16]
placements = ["", "A=2T"]
gpu = ["k80", "v100"]

[[entry]]
trace = "t.parquet"
placements = ["", "A=T", "B=C"]
note = "a tiny vecadd"

[[entry]]
id = "ranked"
generator = "vecadd"
size = [1024]
rank = true
top = 2
"""

OVERLAP_TEXT = """\
# T_overlap coefficients of Huang & Li Eq. 11 (placement train).
gpu = "k80"
source = "fuzz"
[coefficients]
g = 0.002  # e_global
c = 0.001  # e_constant
t = 0.003  # e_texture
s = 0.0  # e_shared
r = 0.001  # e_row
w = 0.0001  # warps
c0 = 0.001  # const
"""


def seeds_suite(d: Path) -> list[Seed]:
    _tiny_trace(d / "t.parquet")
    _write(d / "coef.toml", OVERLAP_TEXT)
    p = _write(d / "suite.toml", SUITE_TEXT)
    q = _write(
        d / "short.toml", 'gpu = ["k80"]\n[[entry]]\ntrace = "t.parquet"\nplacements = ["C=S"]\nmeasured_ns = [10]\n'
    )
    return [Seed(p, p), Seed(q, q)]


RESULTS_SUITE = 'gpu = "k80"\n[[entry]]\nid = "v"\ntrace = "t.parquet"\nplacements = ["", "A=T", "B=T", "A=T,B=T"]\n'


def seeds_results(d: Path) -> list[Seed]:
    """A batch run's results file, and the parts folder of a run stopped after its first chunk: what a resumed
    `placement batch` reads (``run_results``)."""
    from placement import batch

    seeds = []
    for name, stop in (("done", False), ("part", True)):
        _write(d / name / "suite.toml", RESULTS_SUITE)
        _tiny_trace(d / name / "t.parquet")
        out = d / name / "r.parquet"

        def progress(done, total):
            if stop and done:
                raise KeyboardInterrupt  # (not an Exception: the run stops where a user's ^C would)

        try:
            batch.run(str(d / name / "suite.toml"), str(out), workers=1, progress=progress)
        except KeyboardInterrupt:
            pass
        member = out if not stop else next(batch.parts_dir(out).glob("*.parquet"))
        seeds.append(Seed(out, member))
    return seeds


def seeds_lemeire_runs(d: Path) -> list[Seed]:
    """Lemeire's runs CSV (``placement model lemeire --runs``): one work-group size at rising occupancy."""
    rows = ["work_items,wg_size,local_mem,runtime_s,instr_kernel"]
    rows += [f"{n},128,0,{1e-5 * max(n / 13312, 1.0):.6g},100" for n in (1664, 3328, 6656, 13312, 26624)]
    p = _write(d / "runs.csv", "\n".join(rows) + "\n")
    q = _write(d / "bare.csv", "work_items,wg_size,local_mem,runtime_s\n4096,256,1024,2.5e-05\n8192,256,1024,4.9e-05\n")
    return [Seed(p, p), Seed(q, q)]


def seeds_chase(d: Path) -> list[Seed]:
    """A gpu-benches ``gpu-latency`` table (``placement model lemeire --chase``): three plateaus."""
    rows = ["clock: 1410 1410", "     iter  clock   footprint_kB  time_ms  latency"]
    for kb in (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144):
        lat = 30.0 if kb <= 128 else 200.0 if kb <= 8192 else 600.0
        rows.append(f"  1000000  1410  {kb}  {lat / 1410:.4f}  {lat:.1f}")
    p = _write(d / "chase.txt", "\n".join(rows) + "\n")
    q = _write(d / "two.txt", "".join(f"{kb} {30 if kb < 100 else 400}\n" for kb in (8, 16, 32, 64, 128, 256, 512)))
    return [Seed(p, p), Seed(q, q)]


def seeds_overlap(d: Path) -> list[Seed]:
    p = _write(d / "coef.toml", OVERLAP_TEXT)
    return [Seed(p, p)]


COUNTER_COLUMNS = (
    "compute_version", "gpu_name", "max_clock_rate", "num_of_cores", "L2", "bus", "memory_clock", "bandwith",
    "AppName", "Input.Size", "Duration", "Grid.X", "Grid.Y", "Grid.Z", "Block.X", "Block.Y", "Block.Z",
    "Registers.Per.Thread", "Static.SMem", "Dynamic.SMem", "warps_launched", "inst_executed", "gld_request",
    "gst_request", "shared_load", "shared_store", "Global.Load.Transactions.Per.Request",
    "Global.Store.Transactions.Per.Request", "L2.Hit.Rate..L1.Reads.", "L1.Global.Hit.Rate",
    "Device.Memory.Read.Transactions", "Device.Memory.Write.Transactions", "FP.Instructions.Single.",
)  # fmt: skip


def seeds_counters(d: Path) -> list[Seed]:
    # The shape of gpuperfpredict's Apps-Gpus CSVs (vectorAdd and matMul_gpu_sharedmem on a GTX-680), a few columns.
    spec = ["3", "GTX-680", "1058", "1536", "0.5", "256", "3004", '"192,256"']
    rows = [
        spec + ["vectorAdd", "4194304", "0.000439072", "65536", "1", "1", "64", "1", "1", "10", "0", "0",
                "131072", "2359296", "262144", "131072", "0", "0", "1", "1", "0", "0", "1048583", "524288", "4194304"],
        spec + ["matMul_gpu_sharedmem", "256", "0.0001", "32", "32", "1", "8", "8", "1", "24", "512", "0",
                "2048", "300000", "67584", "1024", "65536", "2048", "2.5", "1", "50", "0", "20000", "8000", "8388608"],
        ["5.2", "GTX-980", "1216", "2048", "2", "256", "3505", ""] + ["vectorAdd", "1024", "0.00001", "16", "1", "1",
         "64", "1", "1", "10", "0", "0", "32", "", "64", "32", "0", "0", "1", "1", "0", "0", "256", "128", "1024"],
    ]  # fmt: skip
    text = ",".join(f'"{c}"' for c in COUNTER_COLUMNS) + "\n" + "\n".join(",".join(r) for r in rows) + "\n"
    p = _write(d / "counters.csv", text)
    return [Seed(p, p)]


def seeds_measurements(d: Path) -> list[Seed]:
    _tiny_trace(d / "t.parquet")
    _tiny_trace(d / "u.parquet", shape=True)
    p = _write(d / "m.csv", 'trace,placement,measured_ns\nt.parquet,"",5000\nt.parquet,"A=T",4800.5\n'
                            'u.parquet,"A=2T,B=C",4700\nu.parquet,C=S,5100\n')  # fmt: skip
    return [Seed(p, p)]


OBJECTS_TEXT = """\
[[object]]
name = "A"
base = 0x10000
size = 256
elem_bytes = 4

[[object]]
name = "B"
base = 0x20000
size = 512
space = "G"
shape = [8, 16]
"""


def seeds_objects(d: Path) -> list[Seed]:
    seeds_porple(d)
    p = _write(d / "objects.toml", OBJECTS_TEXT)
    return [Seed(p, p)]


def seeds_kernel(d: Path) -> list[Seed]:
    p = _write(d / "params.toml", (ROOT / "configs" / "examples" / "hong-kim-table2.toml").read_bytes())
    return [Seed(p, p)]


# ---- mutations ---------------------------------------------------------------------------------------

_NUMBER = re.compile(rb"-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)")
BAD_NUMBERS = (
    b"0", b"-1", b"-7", b"1", b"2147483647", b"2147483648", b"-2147483649", b"4294967296", b"65536",
    b"9223372036854775807", b"9223372036854775808", b"18446744073709551616", b"-9223372036854775809",
    b"1" + b"0" * 30, b"9" * 400, b"1e308", b"1e309", b"-1e309", b"1e-320", b"0.5", b"-0.0", b"3.75",
    b"nan", b"NaN", b"inf", b"-inf", b"Infinity", b"0x7fffffff", b"0xffffffffffffffff", b"0x" + b"f" * 40, b"0x" + b"f" * 4000,
)  # fmt: skip
WRONG_TYPES = (b'"x"', b'""', b"true", b"false", b"[]", b"[1, 2]", b"{}", b"{a = 1}", b"[[1]]", b"-", b",", b"=",
               b"'", b'"', b"#", b"[", b"]", b"(1,2)", b"NA", b"R999", b"\\u0000", b'"\\u0000.toml"')  # fmt: skip
_SEPARATORS = re.compile(rb"(\s+|,|\s-\s|=|:)")


def _pick_line(rng: random.Random, data: bytes) -> tuple[list[bytes], int]:
    lines = data.split(b"\n")
    return lines, rng.randrange(len(lines))


def m_flip(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def m_truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def m_delete_lines(rng: random.Random, data: bytes) -> bytes:
    lines, i = _pick_line(rng, data)
    del lines[i : i + rng.choice((1, 1, 2, 5))]
    return b"\n".join(lines)


def m_duplicate_lines(rng: random.Random, data: bytes) -> bytes:
    lines, i = _pick_line(rng, data)
    k = rng.choice((1, 1, 2, 3))
    lines[i:i] = lines[i : i + k] * rng.choice((1, 1, 2, 50))
    return b"\n".join(lines)


def m_swap_lines(rng: random.Random, data: bytes) -> bytes:
    lines, i = _pick_line(rng, data)
    j = rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def m_swap_fields(rng: random.Random, data: bytes) -> bytes:
    lines, i = _pick_line(rng, data)
    parts = _SEPARATORS.split(lines[i])
    tokens = list(range(0, len(parts), 2))
    if len(tokens) >= 2:
        a, b = rng.sample(tokens, 2)
        parts[a], parts[b] = parts[b], parts[a]
    elif len(parts) > 1:
        parts = parts[::-1]
    lines[i] = b"".join(parts)
    return b"\n".join(lines)


def _replace_match(rng: random.Random, data: bytes, pattern: re.Pattern, values) -> bytes:
    found = list(pattern.finditer(data))
    if not found:
        return data + rng.choice(values)
    m = rng.choice(found)
    return data[: m.start()] + rng.choice(values) + data[m.end() :]


def m_number(rng: random.Random, data: bytes) -> bytes:
    return _replace_match(rng, data, _NUMBER, BAD_NUMBERS)


def m_wrong_type(rng: random.Random, data: bytes) -> bytes:
    value = re.compile(rb"(?<==\s)[^\n#]+|(?<=,)[^,\n]*|(?<=\s)\S+")
    return _replace_match(rng, data, value, WRONG_TYPES + BAD_NUMBERS[:4])


def m_junk(rng: random.Random, data: bytes) -> bytes:
    kind = rng.randrange(4)
    if kind == 0:
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif kind == 1:
        junk = rng.choice(
            (b"\x00", b"\xff\xfe", b"\xc3\x28", b"\r", b"\t", b"\x1b[0m", "\u00e9\u2028".encode(), b"\xef\xbb\xbf")
        )
    elif kind == 2:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 512)))
    else:
        junk = rng.choice((b"[" * 3000, b"x = " + b"[" * 3000, b"a" * 100_000, b"\n" * 1000, b"{" * 3000))
    i = rng.randrange(len(data) + 1)
    return data[:i] + junk + data[i:]


TEXT_MUTATIONS: tuple[Callable[[random.Random, bytes], bytes], ...] = (
    m_flip, m_truncate, m_delete_lines, m_duplicate_lines, m_swap_lines, m_swap_fields, m_number, m_number,
    m_wrong_type, m_junk,
)  # fmt: skip


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """One to three text mutations."""
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        data = rng.choice(TEXT_MUTATIONS)(rng, data)
    return data


_PROC_MEM = Path("/proc/self/mem")  # opens, but every read at offset 0 fails (EIO): unreadable even for root


def mutate_path(rng: random.Random, target: Path) -> str:
    """Replace the file at ``target`` by something that is not a readable file; returns what was done."""
    target.unlink()
    kinds = ["directory", "dangling link", "empty"]
    if _PROC_MEM.exists():
        kinds.append("unreadable (EIO)")
    if os.geteuid() != 0:
        kinds.append("no permission")
    kind = rng.choice(kinds)
    if kind == "directory":
        target.mkdir()
        (target / "x").write_bytes(b"x")
    elif kind == "dangling link":
        target.symlink_to(target.parent / "does-not-exist")
    elif kind == "empty":
        target.write_bytes(b"")
    elif kind == "unreadable (EIO)":
        target.symlink_to(_PROC_MEM)
    else:
        target.write_bytes(b"x = 1\n")
        target.chmod(0)
    return kind


def _mutate_table(rng: random.Random, seed_member: Path, out: Path, ipc: bool) -> str:
    """Rewrite a trace with mutated metadata JSON or mutated column values (no validation on write),
    in the seed's container."""
    table = pa.ipc.open_file(seed_member).read_all() if ipc else pq.read_table(seed_member)
    meta = dict(table.schema.metadata or {})
    how = rng.randrange(3)
    if how == 0:
        meta[METADATA_KEY] = mutate_bytes(rng, meta[METADATA_KEY])
        table = table.replace_schema_metadata(meta)
        what = "metadata"
    elif how == 1:
        cols = {n: table.column(n).to_numpy().copy() if n != "addr" else None for n in table.column_names}
        addr = np.stack(table.column("addr").to_numpy(zero_copy_only=False)).astype(np.uint64)
        for _ in range(rng.randint(1, 3)):
            name = rng.choice(table.column_names)
            i = rng.randrange(table.num_rows)
            if name == "addr":
                addr[i, rng.randrange(32)] = rng.choice((0, 1, 2**63, 2**64 - 1, int(addr[i, 0]) + 4096))
            else:
                info = np.iinfo(cols[name].dtype)
                cols[name][i] = rng.choice(
                    (info.min, info.max, -1 if info.min < 0 else 0, 0, 1, 7, min(int(cols[name][i]) + 1, info.max))
                )
        arrays = [pa.FixedSizeListArray.from_arrays(pa.array(addr.reshape(-1)), 32) if n == "addr" else pa.array(cols[n])
                  for n in table.column_names]  # fmt: skip
        table = pa.Table.from_arrays(arrays, schema=table.schema)
        what = "columns"
    else:
        keep = rng.randrange(table.num_rows + 1)
        table = table.slice(0, keep) if rng.random() < 0.5 else table.drop_columns([rng.choice(table.column_names)])
        what = "rows or a column dropped"
    rows = rng.choice((3, 5, 1000))
    if ipc:
        with pa.ipc.new_file(out, table.schema) as w:
            w.write_table(table, max_chunksize=rows)
    else:
        pq.write_table(table, out, row_group_size=rows)
    return what


def mutate(rng: random.Random, seed: Seed, work: Path) -> tuple[Path, str]:
    """A mutated copy of ``seed`` in the (empty) folder ``work``; returns (input path, what was done)."""
    src_root = seed.path if seed.path.is_dir() else seed.path.parent
    dst_root = work / "in"
    shutil.copytree(src_root, dst_root, symlinks=True)
    path = dst_root / seed.path.relative_to(src_root) if seed.path != src_root else dst_root
    member = dst_root / seed.member.relative_to(src_root)
    r = rng.random()
    if r < 0.06:
        return path, "path: " + mutate_path(rng, member)
    if seed.kind in ("parquet", "ipc") and r < 0.6:
        return path, f"{seed.kind}: " + _mutate_table(rng, seed.member, member, seed.kind == "ipc")
    member.write_bytes(mutate_bytes(rng, member.read_bytes()))
    return path, "bytes"


def cleanup(work: Path) -> None:
    """Remove a work folder whatever the mutations left in it (no-permission files and folders)."""
    for dirpath, dirnames, filenames in os.walk(work):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, stat.S_IRWXU)
    shutil.rmtree(work, ignore_errors=True)


# ---- targets -----------------------------------------------------------------------------------------


def _write_import(cols, info, out: Path) -> int:
    # the command's next step: the imported columns must meet the trace contract
    traces.write(out, cols, info)
    return len(cols["cta"])


def run_read(path: Path, variant: int, work: Path) -> Any:
    t = traces.read(path)
    return len(t)


def run_iter_batches(path: Path, variant: int, work: Path) -> Any:
    return sum(len(b) for b in traces.iter_batches(path, rows=(1, 4, 1000)[variant % 3]))


def run_accelsim(path: Path, variant: int, work: Path) -> Any:
    from traces.importers.accelsim import import_accelsim

    kernel = None if variant < 2 or not path.is_dir() else (1, 2)[variant % 2]
    try:
        cols, info = import_accelsim(path, kernel=kernel, skip_bad_lines=variant % 2 == 1)
    except InputError:
        if kernel is None:
            raise
        cols, info = import_accelsim(path, kernel=None, skip_bad_lines=True)
    return _write_import(cols, info, work / "out.parquet")


def run_nvbit(path: Path, variant: int, work: Path) -> Any:
    from traces.importers.nvbit import import_nvbit

    cols, info = import_nvbit(path, launch=(None, None, 0, 1)[variant % 4], skip_bad_lines=variant % 2 == 1)
    return _write_import(cols, info, work / "out.parquet")


def run_porple(path: Path, variant: int, work: Path) -> Any:
    from traces.importers.porple import import_porple

    cols, info = import_porple(path, skip_bad_lines=variant % 2 == 1)
    return _write_import(cols, info, work / "out.parquet")


def run_objects(path: Path, variant: int, work: Path) -> Any:
    from traces.importers.objects import load_objects_toml
    from traces.importers.porple import import_porple

    specs = load_objects_toml(path)
    cols, info = import_porple(path.parent / "one.txt", objects=specs)
    return _write_import(cols, info, work / "out.parquet")


def run_kernel(path: Path, variant: int, work: Path) -> Any:
    from dataclasses import replace

    from placement.commands.model import _preset, predict
    from placement.models.kernel import load_kernel_file

    k, overrides = load_kernel_file(path)
    model = ("mwp-cwp", "gpuperf", "bsp")[variant % 3]
    res = predict(model, k, replace(_preset(model), **overrides))
    assert np.isfinite(res.time_s) and res.time_s >= 0, f"accepted parameters predict {res.time_s} s"
    return res.time_s


def run_gpu(path: Path, variant: int, work: Path) -> Any:
    from placement.gpu import load_gpu
    from placement.evaluate_whole import WholeTraceEvaluator
    from placement.occupancy import occupancy

    g = load_gpu(path)
    occupancy(g, 64, 16, 1024)
    if variant % 4 == 0:  # a loaded configuration must be usable: one evaluation of a tiny trace
        ev = WholeTraceEvaluator(_cached_trace(), g)
        return ev.evaluate(ev.sample_placement).target.t_comp
    return g.name


_TRACE: list = []


def _cached_trace():
    if not _TRACE:
        cols, info = vecadd(2, 2)
        _TRACE.append(traces.Trace(**cols, info=info))
    return _TRACE[0]


def run_suite(path: Path, variant: int, work: Path) -> Any:
    from placement.batch import load_suite

    return len(load_suite(path).entries)


def run_results(path: Path, variant: int, work: Path) -> Any:
    # a resumed run of the suite beside the results file (every task done, or all but the first chunk's to run)
    from placement import batch

    if work not in path.parents:  # a seed itself: run on a copy (a resumed run completes and removes its parts)
        copy = Path(tempfile.mkdtemp(dir=work)) / "seed"
        shutil.copytree(path.parent, copy)
        path = copy / path.name
    return batch.run(str(path.parent / "suite.toml"), str(path), workers=1).rows


def run_lemeire_runs(path: Path, variant: int, work: Path) -> Any:
    from placement.gpu import get_gpu
    from placement.models import lemeire

    runs = lemeire.read_runs(path, instr_kernel=None if variant == 0 else 100.0)
    rep = lemeire.analyze_runs(runs, get_gpu("k80"))
    assert np.isfinite(rep.peak) and rep.peak > 0, f"accepted runs give a peak of {rep.peak}"
    return rep.peak


def run_chase(path: Path, variant: int, work: Path) -> Any:
    from placement.models import lemeire

    levels = lemeire.cache_levels_from_file(path)
    assert all(np.isfinite(lv.latency) for lv in levels), f"accepted table gives latencies {levels}"
    return len(levels)


def run_overlap(path: Path, variant: int, work: Path) -> Any:
    from placement.overlap import load

    m = load(path)
    r = m.t_overlap(np.ones(7), 1.0, 1.0)
    assert np.isfinite(r), f"accepted coefficients give T_overlap {r}"
    return r


def run_counters(path: Path, variant: int, work: Path) -> Any:
    from placement.commands.model import _spec_machine, predict
    from placement.models.counters import read_counters
    from placement.models.gpuperfpredict import rows_with_code_facts

    rows = rows_with_code_facts(read_counters(path))
    model = ("mwp-cwp", "gpuperf", "bsp")[variant % 3]
    for r in rows:
        if r.params is not None:
            res = predict(model, r.params, _spec_machine(r.spec, f"{path} row {r.row}"))
            assert np.isfinite(res.time_s) and res.time_s >= 0, f"accepted row {r.row} predicts {res.time_s} s"
    return len(rows)


def run_measurements(path: Path, variant: int, work: Path) -> Any:
    from placement.gpu import get_gpu
    from placement.training import read_measurements, train

    gpu = get_gpu("k80")
    samples = read_measurements(path, gpu)
    if len(samples) >= 2:
        train(samples, gpu)
    return len(samples)


@dataclass(frozen=True)
class Target:
    name: str
    seeds: Callable[[Path], list[Seed]]
    run: Callable[[Path, int, Path], Any]
    """run(input path, variant, scratch folder): read the input as the command does."""
    variants: int = 1
    rejected_seeds: frozenset = frozenset()
    """(seed file name, variant) pairs that are refused as they are (an option they do not fit)."""


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("read", seeds_trace, run_read),
    Target("iter_batches", seeds_trace, run_iter_batches, 3),
    Target("read_ipc", seeds_trace_ipc, run_read),
    Target("iter_batches_ipc", seeds_trace_ipc, run_iter_batches, 3),
    Target("accelsim", seeds_accelsim, run_accelsim, 4),
    # launches: new.log 0, old.log 0 and 1, bare.log 3 (variants: None, None, 0, 1)
    Target("nvbit", seeds_nvbit, run_nvbit, 4,
           frozenset({("new.log", 3), ("old.log", 0), ("bare.log", 2), ("bare.log", 3)})),
    Target("porple", seeds_porple, run_porple, 2),
    Target("gpu", seeds_gpu, run_gpu, 4),
    Target("suite", seeds_suite, run_suite),
    Target("results", seeds_results, run_results),
    Target("counters", seeds_counters, run_counters, 3),
    Target("measurements", seeds_measurements, run_measurements),
    Target("overlap", seeds_overlap, run_overlap),
    Target("lemeire_runs", seeds_lemeire_runs, run_lemeire_runs, 2, frozenset({("bare.csv", 0)})),
    Target("chase", seeds_chase, run_chase),
    Target("objects", seeds_objects, run_objects),
    Target("kernel", seeds_kernel, run_kernel, 3),
)}  # fmt: skip


def outcome(target: Target, path: Path, variant: int, work: Path) -> tuple[str, str]:
    """("accepted", "") or ("error", message) for a clean InputError; ("crash", description) otherwise."""
    try:
        target.run(path, variant, work)
    except InputError as exc:
        msg = str(exc)
        if "\n" in msg or "\r" in msg or not msg.strip():
            return "crash", f"InputError without a one-line message: {msg!r}"
        return "error", msg
    except Exception as exc:  # noqa: BLE001 - the fuzzer's job is to catch everything else
        return "crash", f"{type(exc).__name__}: {exc}"[:500]
    return "accepted", ""
