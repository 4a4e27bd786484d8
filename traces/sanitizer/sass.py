"""A traced kernel's instruction totals and ``seq`` from its SASS (nvdisasm of the module's cubin).

The sanitizer's device callbacks see memory instructions only, so a trace decoded from the
records alone counts those (``decode``: "memory instructions only"). The module's cubin,
which the injection library writes at load time (``PLACEMENT_TRACE_CUBIN_DIR``), holds the
rest: ``nvdisasm -c`` lists every instruction of the kernel with its byte offset, the offset
the records' ``pc`` holds (the function's start subtracted, ``inject.cpp``).

- **Basic blocks.** A block starts at the function's first instruction, at every label
  (``.L_x_N:``, a branch target) and after every instruction that ends one (control flow
  and barriers, ``importers.opcodes``' ``ends_block``); the padding after the last ``EXIT``
  (a branch to itself and NOPs) is left out. (``benchmarks/sass_recipes.py`` parses the
  same listings into the generators' recipes, blocks at labels only, with operands.)
- **Executions per block** (warp-level). A block holding a traced memory instruction (global,
  shared, local or generic) ran as often as its most-recorded such instruction (a warp's
  instruction with no active lane is not recorded: a lower bound). A block with none is
  estimated: the blocks before the first counted one ran once per warp (the entry), any other
  the fewer of its nearest counted neighbours' executions (a test or pre-header between two
  loops runs no more often than either), skipping neighbours that never ran.
- **Totals**: each block's executions times its instructions, per class (GPUPerf's mix,
  ``importers.opcodes.classify``).
- **seq**: a row's position in its warp's instruction stream, estimated from its
  predecessor's: the instructions between them in one block, or the rest of the
  predecessor's block and the start of the row's (the blocks between, which hold no traced
  instruction, are not counted).
- **MLP** (GPUPerf's, Sim et al. 2012, Sec. 5.3; the model's ``extra.mlp``): per block between labels, each
  long-latency load counts the long-latency loads issued from it up to the first instruction that reads its
  result (or the block's end); a block's MLP is the mean over its loads, the kernel's the mean over the blocks
  that load (1 where none does). The rule the generators' SASS tables are made by
  (``benchmarks/sass_recipes.py``, ``traces/generators/mlp.toml``): a traced kernel gets its own build's
  schedule, where it had the model's default of 1 until 30 Nov 2026.
- **Reductions**: the rows whose instruction is a reduction (``RED``, ``REDG``: an atomic
  whose old value is not returned). The sanitizer reports those as atomics with the read and
  write flags unless it sets ``SANITIZER_MEMORY_DEVICE_FLAG_ATOMIC_WRITE_ONLY``, which driver
  580.159.04 did not (an H100, 26 Nov 2026: a histogram's ``atomicAdd`` with its result
  unused, ``REDG.E.ADD.STRONG.GPU``, came back as an atomic); the opcode decides.

Run against an H100's records (driver 580.159.04, 26 Nov 2026): the records' pcs are the
offsets of nvdisasm's listing of the module the injection library keeps.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..codes import REDUCTION
from ..errors import InputError
from ..importers.opcodes import CLASS_NAMES, GENERIC, LDGSTS, classify
from ..schema import GLOBAL, LOCAL, SHARED, Instructions

log = logging.getLogger(__name__)

_FUNC = re.compile(r"^\.text\.(\S+):$")
_LABEL = re.compile(r"^([.$A-Za-z_][\w.$]*):$")
_INST = re.compile(r"^/\*([0-9a-fA-F]+)\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)\b\s*([^;]*?)\s*(?:;|$)")
_TRACED = {GLOBAL, SHARED, LOCAL, GENERIC, LDGSTS}
"""The spaces of the instructions the device callbacks record."""


@dataclass(frozen=True)
class SassFunction:
    """One kernel's instructions: ``offsets`` (bytes from the function's start), ``opcodes`` and
    ``block`` (each instruction's basic block, from 0, in code order)."""

    name: str
    offsets: np.ndarray
    opcodes: tuple[str, ...]
    block: np.ndarray
    operands: tuple[str, ...] = ()
    """Each instruction's operands as nvdisasm prints them (empty where not parsed)."""
    label_block: np.ndarray | None = None
    """Each instruction's block between labels (from 0): the blocks of :func:`mlp`, as the generators' tables."""

    @property
    def n_blocks(self) -> int:
        return int(self.block[-1]) + 1 if self.block.shape[0] else 0


@dataclass(frozen=True)
class SassCounts:
    """What the SASS gives a trace: the totals, each row's ``seq``, and how many blocks were counted from the
    records (``counted``) and how many estimated."""

    instructions: Instructions
    seq: np.ndarray
    counted: int
    estimated: int
    reduction: np.ndarray | None = None
    """Per row: its instruction is a reduction (module docstring)."""


def parse_sass(text: str) -> dict[str, SassFunction]:
    """The functions of an ``nvdisasm -c`` listing, by name (as nvdisasm prints it: mangled)."""
    out: dict[str, SassFunction] = {}
    name = None
    offsets: list[int] = []
    opcodes: list[str] = []
    operands: list[str] = []
    leader: list[bool] = []
    labelled: list[bool] = []
    new_block = new_label = True

    def close():
        exits = [i for i, o in enumerate(opcodes) if o == "EXIT"]
        end = exits[-1] + 1 if exits else len(opcodes)  # the padding after the last EXIT never runs
        if name is not None and end:
            start, at_label = np.array(leader[:end], bool), np.array(labelled[:end], bool)
            start[0] = at_label[0] = True
            out[name] = SassFunction(
                name, np.array(offsets[:end], np.int64), tuple(opcodes[:end]), np.cumsum(start) - 1,
                tuple(operands[:end]), np.cumsum(at_label) - 1,
            )  # fmt: skip

    for raw in text.splitlines():
        line = raw.strip()
        m = _FUNC.match(line)
        if m:
            close()
            name, offsets, opcodes, operands, leader, labelled = m.group(1), [], [], [], [], []
            new_block = new_label = True
            continue
        if name is None:
            continue
        m = _INST.match(line)
        if m:
            offsets.append(int(m.group(1), 16))
            opcodes.append(m.group(2))
            operands.append(m.group(3))
            leader.append(new_block)
            labelled.append(new_label)
            new_block, new_label = classify(m.group(2)).ends_block, False
            continue
        if _LABEL.match(line) and not line.startswith(".text."):
            new_block = new_label = True
    close()
    return out


LONG_LATENCY = ("LDG", "LD", "TEX", "TLD", "TLD4", "TLDS", "LDL", "ATOMG", "ATOM")
"""The opcodes (before the first dot) of GPUPerf's long-latency loads: global, generic, texture and local loads
and the atomics that return a value (shared memory's LDS is not one). The generators' tables were made with this
list; ``importers.opcodes.classify``'s ``long_latency`` also counts LDGSTS (cp.async, no register result) and SULD,
which the MLP rule leaves out so that a traced kernel's MLP is the same rule's."""
_REG = re.compile(r"\bR(\d+)\b")


def _dest_regs(op: str, operands: str) -> set[int]:
    """The registers a load writes: its first operand, widened to the pair or quad of .64 / .128 loads."""
    m = _REG.match(operands.strip())
    if not m:
        return set()
    width = 4 if ".128" in op else 2 if ".64" in op else 1
    return {int(m.group(1)) + k for k in range(width)}


def local_mlps(insns: Sequence[tuple[str, str]]) -> list[int]:
    """Each long-latency load's local MLP in one block of ``(opcode, operands)``: the long-latency loads issued
    from it (itself included) up to the first instruction that reads one of its registers, or the block's end."""
    out = []
    for i, (op, operands) in enumerate(insns):
        if op.split(".")[0] not in LONG_LATENCY:
            continue
        dest, count = _dest_regs(op, operands), 1
        for op2, operands2 in insns[i + 1 :]:
            sources = operands2.split(",", 1)[1] if "," in operands2 else operands2
            if dest & {int(r) for r in _REG.findall(sources)}:
                break
            count += op2.split(".")[0] in LONG_LATENCY
        out.append(count)
    return out


def mlp_of_blocks(blocks: Iterable[Sequence[tuple[str, str]]]) -> float:
    """GPUPerf's MLP of a kernel's blocks (module docstring): the mean over the blocks that load of each one's
    mean local MLP (:func:`local_mlps`), to 3 decimals; 1.0 where no block loads."""
    per_block = [sum(m) / len(m) for m in map(local_mlps, blocks) if m]
    return round(sum(per_block) / len(per_block), 3) if per_block else 1.0


def mlp(fn: SassFunction) -> float:
    """GPUPerf's MLP of one kernel's SASS over its blocks between labels (:func:`mlp_of_blocks`); 1.0 where the
    listing's operands were not parsed."""
    if fn.label_block is None or len(fn.operands) != len(fn.opcodes):
        return 1.0
    insns = list(zip(fn.opcodes, fn.operands))
    bounds = np.flatnonzero(np.diff(fn.label_block)) + 1
    return mlp_of_blocks([insns[a:b] for a, b in zip([0, *bounds.tolist()], [*bounds.tolist(), len(insns)])])


def find_nvdisasm() -> Path | None:
    """nvdisasm from PATH, the CUDA toolkit, or the pip package (``nvidia-cuda-nvdisasm``)."""
    from .build import _pip_roots

    exe = shutil.which("nvdisasm")
    if exe:
        return Path(exe)
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for root in [*([Path(home)] if home else []), Path("/usr/local/cuda"), *_pip_roots()]:
        p = root / "bin" / "nvdisasm"
        if p.is_file():
            return p
    return None


def disassemble(cubin: str | Path, nvdisasm: Path | None = None) -> dict[str, SassFunction]:
    """The functions of a cubin (``nvdisasm -c``); InputError naming the file when it cannot be read."""
    exe = nvdisasm or find_nvdisasm()
    if exe is None:
        raise InputError("nvdisasm not found: pip install nvidia-cuda-nvdisasm (or the CUDA toolkit)")
    try:
        done = subprocess.run([str(exe), "-c", str(cubin)], capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(f"{cubin}: nvdisasm failed: {exc}") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        raise InputError(f"{cubin}: nvdisasm exited with {done.returncode}: {first}")
    return parse_sass(done.stdout)


def _block_counts(fn: SassFunction, rows: np.ndarray, warps: int) -> tuple[np.ndarray, np.ndarray]:
    """Executions of each block (warp-level) and which were counted from the records (module docstring)."""
    nb = fn.n_blocks
    traced = np.array([classify(o).space in _TRACED for o in fn.opcodes], bool)
    counts = np.zeros(nb, np.int64)
    np.maximum.at(counts, fn.block[traced], rows[traced])
    counted = np.zeros(nb, bool)
    counted[fn.block[traced]] = True
    ran = np.flatnonzero(counted & (counts > 0))
    out = counts.copy()
    for b in np.flatnonzero(~counted):
        before, after = ran[ran < b], ran[ran > b]
        if not before.size:
            out[b] = warps
        elif not after.size:
            out[b] = counts[before[-1]]
        else:
            out[b] = min(counts[before[-1]], counts[after[0]])
    return out, counted


def block_bounds(fn: SassFunction) -> tuple[np.ndarray, np.ndarray]:
    """Each basic block's first and last instruction (indexes into ``fn.offsets``)."""
    ids = np.arange(fn.n_blocks)
    return np.searchsorted(fn.block, ids, side="left"), np.searchsorted(fn.block, ids, side="right") - 1


def instruction_index(fn: SassFunction, pc: np.ndarray, where: str = "trace", row0: int = 0) -> np.ndarray:
    """Each row's instruction (its index in ``fn.offsets``) by its ``pc``; InputError naming the row (``row0`` +
    its index here) when a row's pc is not an instruction of ``fn``."""
    off = fn.offsets
    idx = np.searchsorted(off, pc.astype(np.int64))
    bad = (idx >= off.shape[0]) | (off[np.minimum(idx, off.shape[0] - 1)] != pc)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InputError(f"{where}: row {row0 + r}: pc {int(pc[r]):#x} is no instruction of {fn.name}'s SASS")
    return idx


def reductions(fn: SassFunction) -> np.ndarray:
    """Per instruction: it is a reduction (module docstring)."""
    return np.array([classify(o).op == REDUCTION for o in fn.opcodes], bool)


def totals(fn: SassFunction, rows: np.ndarray, warps: int) -> SassCounts:
    """The kernel's totals from its rows per instruction (``rows``, a count per entry of ``fn.offsets``; ``warps``:
    the warps that ran), with no rows' ``seq`` (empty)."""
    blocks, counted = _block_counts(fn, rows, warps)
    per_inst = blocks[fn.block]
    klass = np.array([classify(o).klass for o in fn.opcodes], np.int64)
    by_class = np.bincount(klass, weights=per_inst, minlength=len(CLASS_NAMES)).astype(np.int64)
    executed = int(per_inst.sum())
    ins = Instructions(executed=executed, warps=warps, **{c: int(v) for c, v in zip(CLASS_NAMES, by_class)})
    return SassCounts(ins, np.zeros(0, np.int64), int(counted.sum()), int((~counted).sum()), np.zeros(0, bool))


def kernel_function(cubins, mangled: str, nvdisasm: Path | None = None) -> tuple[SassFunction, Path] | None:
    """The kernel ``mangled`` and the first of ``cubins`` that holds it (a program loads many modules: only those
    whose bytes name the kernel are disassembled); None when none does."""
    key = mangled.encode()
    for c in cubins:
        if key in Path(c).read_bytes():
            fn = disassemble(c, nvdisasm).get(mangled)
            if fn is not None:
                return fn, Path(c)
    return None


def cubin_function(cubin: str | Path, mangled: str) -> SassFunction:
    """The kernel ``mangled`` of one cubin (``placement import sanitizer --cubin``); InputError naming the file
    when it has no such function."""
    fn = disassemble(cubin).get(mangled)
    if fn is None:
        raise InputError(f"{cubin}: no function {mangled} in its SASS (the records' kernel)")
    return fn
