"""What every generator shares: the SASS recipes, object layout, row buffers and totals.

Recipes. ``recipes.toml`` (written by ``benchmarks/sass_recipes.py`` from
``benchmarks/kernels/*.cu``, nvcc 13.0 ``-arch=sm_80``) lists every kernel's SASS
basic blocks with their instruction counts per class and their memory
instructions. A generator picks the blocks a warp runs into :class:`Segment` s:
a straight-line segment keeps the exact SASS offsets of its memory instructions
(``seq`` and ``pc`` of the rows come from them); a loop segment is the compiler's
unrolled body divided by its unroll factor, so one source-level iteration costs
the average of the unrolled code and its memory instructions sit evenly spaced
in it (the order of the rows inside an unrolled group is the source order, not
the SASS order). Totals are segment counts times executions, summed per class
and rounded once.

Layout. Global objects get distinct cudaMalloc-like virtual addresses: 512-byte
aligned (the spacing of the two ``MemcpyHtoD`` bases in the Accel-Sim vectorAdd
sample is 200000 B rounded up to 512) from ``GLOBAL_BASE``. ``__constant__``
objects get addresses from ``CONST_BASE`` (the symbol's device address, as
``cudaGetSymbolAddress`` returns it). Texture-bound objects are global
allocations read through the texture path. Shared objects are offsets in the
block's window, in declaration order, aligned to 16 bytes.
"""

from __future__ import annotations

import functools
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..launch import SHARED_ALIGN
from ..schema import (
    COLUMNS,
    INSTRUCTION_CLASSES,
    NUMPY_DTYPES,
    SPACE_CODES,
    WARP_SIZE,
    Instructions,
    KernelInfo,
    ObjectInfo,
)

GLOBAL_BASE = 0x7F3C_0000_0000
CONST_BASE = 0x7F3B_FF00_0000
MALLOC_ALIGN = 512
PC_STEP = 16  # bytes per SASS instruction on sm_70 and later

RECIPE_FILE = Path(__file__).with_name("recipes.toml")
_LETTER = {"int": "i", "fp32": "f", "fp64": "d", "sfu": "s", "ldst": "m", "sync": "y", "branch": "b"}


@functools.cache
def _table(path: Path) -> dict:
    """A TOML table of this package, read once."""
    with open(path, "rb") as f:
        return tomllib.load(f)


def recipes() -> dict:
    return _table(RECIPE_FILE)


def recipe(kernel: str) -> dict:
    return recipes()[kernel]


REGISTER_FILE = Path(__file__).with_name("registers.toml")


def registers() -> dict:
    """``registers.toml`` (written by ``benchmarks/arch_registers.py``): the benchmark kernels' registers per
    thread on each architecture nvcc 13 builds."""
    return _table(REGISTER_FILE)


VARIANT_REGISTER_FILE = Path(__file__).with_name("registers_variants.toml")


def variant_registers() -> dict:
    """``registers_variants.toml`` (``benchmarks/arch_registers.py --variants``): the registers per thread of the
    builds of a benchmark kernel's other placements, where its source builds them (conv2d_kt's R, S/G, S/R)."""
    return _table(VARIANT_REGISTER_FILE)


MLP_FILE = Path(__file__).with_name("mlp.toml")


def mlps() -> dict:
    """``mlp.toml`` (written by ``benchmarks/arch_mlp.py``): GPUPerf's MLP of the benchmark kernels' SASS on each
    architecture nvcc 13 builds, and of conv2d_kt's shapes and their ``__ldg`` builds."""
    return _table(MLP_FILE)


INSTRUCTION_FILE = Path(__file__).with_name("instructions.toml")


def instructions() -> dict:
    """``instructions.toml`` (written by ``benchmarks/arch_instructions.py``): the warp-instructions a warp of
    conv2d_kt's plain build issues per shape on each architecture nvcc 13 builds."""
    return _table(INSTRUCTION_FILE)


def regs_by_arch(entry: dict) -> dict[str, int]:
    """``{sm_XY: registers}`` of one ``registers.toml`` entry (a value is the registers, or [registers,
    spill-store bytes, spill-load bytes])."""
    return {arch: int(v if isinstance(v, int) else v[0]) for arch, v in entry.items()}


@dataclass(frozen=True)
class Segment:
    """A stretch of SASS one warp runs as a unit (straight-line code or one loop iteration).

    ``length`` instructions; ``counts`` per class (floats for averaged loop bodies);
    ``mem`` offsets of the memory instructions inside the segment and their
    ``pcs``; ``ops`` their opcodes; ``blocks`` the SASS labels it came from.
    """

    kernel: str
    blocks: tuple[str, ...]
    length: int
    counts: dict[str, float]
    mem: tuple[int, ...]
    pcs: tuple[int, ...]
    ops: tuple[str, ...]
    per: int = 1

    def mem_array(self) -> np.ndarray:
        return np.asarray(self.mem, dtype=np.int64)

    def pc_array(self) -> np.ndarray:
        return np.asarray(self.pcs, dtype=np.int32)


def _block(kernel: str, label: str) -> dict:
    for b in recipe(kernel)["blocks"]:
        if b["label"] == label:
            return b
    raise KeyError(f"{kernel}: no SASS block {label!r} in {RECIPE_FILE.name}")


def mem_entries(kernel: str, label: str) -> list[tuple[int, str, str]]:
    """(offset, opcode, address operand) of a block's memory instructions and CONST operands."""
    return [tuple(m) for m in _block(kernel, label)["mem"]]


def _block_index(kernel: str, label: str) -> int:
    for i, b in enumerate(recipe(kernel)["blocks"]):
        if b["label"] == label:
            return i
    raise KeyError(label)


def segment(kernel: str, labels: str | list[str] | None = None, *, per: int = 1, mem_per_iter: int | None = None,
            first: int | None = None, upto: int | None = None) -> Segment:  # fmt: skip
    """A segment of ``kernel``'s SASS.

    ``labels``: one block label, a list of consecutive labels, or a range "A..B"
    of labels in file order (inclusive); None takes the whole kernel. ``first``
    and ``upto`` cut the concatenated instructions to [first, upto). ``per`` > 1
    divides an unrolled loop body into ``per`` iterations of ``mem_per_iter``
    memory instructions each, evenly spaced.
    """
    blocks = recipe(kernel)["blocks"]
    if labels is None:
        chosen = list(blocks)
    elif isinstance(labels, str) and ".." in labels:
        a, b = labels.split("..")
        chosen = blocks[_block_index(kernel, a) : _block_index(kernel, b) + 1]
    else:
        chosen = [_block(kernel, lb) for lb in ([labels] if isinstance(labels, str) else labels)]
    # Flatten to per-instruction records (offset, pc, class or None, mem opcode or None).
    counts = dict.fromkeys(INSTRUCTION_CLASSES, 0.0)
    total = sum(b["n"] for b in chosen)
    lo = first or 0
    hi = total if upto is None else upto
    mem, pcs, ops = [], [], []
    letters = "".join(b["cls"] for b in chosen)[lo:hi]
    pos = 0
    for b in chosen:
        for off, op, _operand in b["mem"]:
            if op == "CONST":
                continue
            p = pos + off
            if lo <= p < hi:
                mem.append(p - lo)
                pcs.append(b["pc"] + PC_STEP * off)
                ops.append(op)
        pos += b["n"]
    for c in INSTRUCTION_CLASSES:
        counts[c] = float(letters.count(_LETTER[c]))
    length = hi - lo
    if per > 1:
        L = mem_per_iter if mem_per_iter is not None else len(mem) // per
        it_len = max(int(round(length / per)), L + 1)
        counts = {c: v / per for c, v in counts.items()}
        mem = [int((k + 0.5) * it_len / L) if L else 0 for k in range(L)]
        pcs, ops = pcs[:L], ops[:L]
        length = it_len
    return Segment(kernel, tuple(b["label"] for b in chosen), length, counts, tuple(mem), tuple(pcs), tuple(ops), per)


class Tally:
    """Warp-level instruction totals: add segment counts times executions."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(INSTRUCTION_CLASSES, 0.0)

    def add(self, seg: Segment | dict[str, float], times: float | int | np.ndarray) -> None:
        t = float(np.sum(times))
        counts = seg.counts if isinstance(seg, Segment) else seg
        for c, v in counts.items():
            self.counts[c] += v * t

    def instructions(self, warps: int) -> Instructions:
        per = {c: int(round(v)) for c, v in self.counts.items()}
        return Instructions(executed=sum(per.values()), warps=warps, **per)


@dataclass
class Layout:
    """Hands out addresses to a kernel's data objects (see the module docstring)."""

    next_global: int = GLOBAL_BASE
    next_const: int = CONST_BASE
    next_shared: int = 0
    objects: list[ObjectInfo] = field(default_factory=list)

    def add(self, name: str, space: str, nbytes: int, elem_bytes: int = 4, shape: tuple[int, int] | None = None,
            written: bool = False) -> ObjectInfo:  # fmt: skip
        nbytes = max(int(nbytes), 1)
        if space == "shared":
            base = _align(self.next_shared, SHARED_ALIGN)
            self.next_shared = base + nbytes
        elif space == "constant":
            base = _align(self.next_const, MALLOC_ALIGN)
            self.next_const = base + nbytes
        else:
            base = _align(self.next_global, MALLOC_ALIGN)
            self.next_global = base + nbytes
        o = ObjectInfo(len(self.objects), name, space, int(base), nbytes, elem_bytes, shape, written)
        self.objects.append(o)
        return o

    @property
    def smem(self) -> int:
        return _align(self.next_shared, SHARED_ALIGN) if self.next_shared else 0


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def space_code(o: ObjectInfo) -> int:
    return SPACE_CODES[o.space]


def alloc_rows(n: int) -> dict[str, np.ndarray]:
    """Uninitialised row columns: every writer fills whole rows, ``addr`` included (0 for inactive
    lanes). Not zeroing saves a pass over 256 bytes per row (np.zeros of a large array also
    page-faults on first write). MemoryError where the rows would not fit in the memory the machine has free: an
    np.empty past it succeeds (the pages come on first write) and the writing pass then meets the kernel's OOM killer
    (histogram at --size 2000000000: killed after 109 s, 22 GiB resident)."""
    require_free(n * row_bytes(), f"{n:,} trace rows of {row_bytes()} bytes")
    return {name: np.empty((n, WARP_SIZE) if name == "addr" else n, NUMPY_DTYPES[name]) for name in COLUMNS}


def row_bytes() -> int:
    """Bytes of one trace row as :func:`alloc_rows` holds it (the 32 lanes' addresses and the other columns)."""
    return sum(np.dtype(NUMPY_DTYPES[name]).itemsize * (WARP_SIZE if name == "addr" else 1) for name in COLUMNS)


def free_memory() -> int:
    """Bytes of memory this machine has free for new pages (Linux's MemAvailable; elsewhere its physical memory)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def require_free(nbytes: int, what: str) -> None:
    """MemoryError naming ``what`` where ``nbytes`` exceed :func:`free_memory` (the CLI says it in one line)."""
    have = free_memory()
    if nbytes > have:
        raise MemoryError(f"{what}: {nbytes / 2**30:.1f} GiB, where this machine has {have / 2**30:.1f} GiB free")


def counting_rows(n_warps: int) -> tuple:
    """The empty columns a generator's counting pass takes (it counts rows and writes none), once the launch's
    ``n_warps`` could each hold one row in this machine's memory; else MemoryError, before the pass walks them
    (matmul_naive at --size 1000000 walked 3 x 10^10 warps for minutes before failing to allocate)."""
    require_free(n_warps * row_bytes(), f"{n_warps:,} warps of at least one {row_bytes()}-byte trace row each")
    return out_tuple(alloc_rows(0))


def out_tuple(cols: dict[str, np.ndarray]) -> tuple:
    return tuple(cols[name] for name in COLUMNS)


def kernel_info(name: str, grid, block, layout: Layout, tally: Tally, *, params: dict, sass: str | None = None,
                smem_extra: int = 0, notes: str = "", extra: dict | None = None) -> KernelInfo:  # fmt: skip
    """The trace metadata of a generated kernel."""
    rec = recipe(sass or name)
    warps = math.prod(grid) * -(-math.prod(block) // 32)
    ex = {
        "params": params,
        "recipe": f"{rec['source']} ({sass or name}, nvcc 13.0 -arch={rec['arch']})",
        # GPUPerf's MLP (Sim et al. Sec. 5.3) of the kernel's SASS: long-latency loads issued before
        # each one's result is read, averaged (benchmarks/sass_recipes.py)
        "mlp": float(rec.get("mlp", 1.0)),
    }
    by_arch = registers()["kernels"].get(sass or name)
    if by_arch:
        # nvcc's registers per thread on every architecture (placement.occupancy.regs_for takes the GPU's)
        ex["regs_by_arch"] = regs_by_arch(by_arch)
    if mlp_by_arch := mlps()["kernels"].get(sass or name):
        # and the MLP of every architecture's SASS (placement.builds.mlp_for takes the GPU's)
        ex["mlp_by_arch"] = {arch: float(v) for arch, v in mlp_by_arch.items()}
    if notes:
        ex["notes"] = notes
    if extra:
        ex.update(extra)
    return KernelInfo(
        kernel=name,
        grid=tuple(int(g) for g in grid),
        block=tuple(int(b) for b in block),
        objects=tuple(layout.objects),
        instructions=tally.instructions(warps),
        regs_per_thread=int(rec["regs"]),
        smem_per_block=int(layout.smem + smem_extra),
        source={"format": "generator", "file": f"traces/generators ({name})", "estimated": ["seq", "instructions"]},
        extra=ex,
    )


def offsets_from_counts(counts: np.ndarray) -> np.ndarray:
    off = np.zeros(counts.shape[0] + 1, np.int64)
    np.cumsum(counts, out=off[1:])
    return off
