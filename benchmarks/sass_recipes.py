"""Recompile the benchmark kernels and recount their SASS: writes the instruction recipes.

Usage::

    python benchmarks/sass_recipes.py [--arch sm_80] [-o traces/generators/recipes.toml]

Each ``benchmarks/kernels/*.cu`` is compiled with ``nvcc -cubin -arch=ARCH`` and
disassembled with ``nvdisasm -c`` (PyPI ``nvidia-cuda-nvdisasm``; ``cuobjdump
-res-usage`` gives registers and static shared memory). Every ``extern "C"``
kernel is split into its basic blocks (nvdisasm's labels); per block the script
records the start pc, the number of instructions, the count per instruction
class and the memory instructions (offset in the block, opcode). The generators
in ``traces/generators`` walk these blocks along each warp's path: the walk gives
every memory row its ``seq`` and ``pc`` and the kernel its instruction totals.

Classes (warp-level, as ``traces.Instructions``): fp32 ``F*`` arithmetic and
``HFMA2``/``HADD2``; fp64 ``D*``; sfu ``MUFU`` and the conversions ``F2F F2I I2F``
(quarter-rate units); ldst loads, stores, atomics, texture fetches and ``LDC`` with
a register index; sync ``BAR MEMBAR DEPBAR WARPSYNC``; branch ``BRA EXIT RET CALL
BSSY BSYNC BREAK``; int everything else (``IMAD IADD3 LEA SHF LOP3 ISETP MOV S2R
ULDC ...``). The padding after the last ``EXIT`` (a ``BRA`` to itself and ``NOP``s)
never runs and is dropped.

sm_37 (the K80 of Huang & Li) is not supported by CUDA 13; sm_75 is the lowest
architecture it compiles for, sm_80 the default here (it matches the Accel-Sim
sample in ../shared/data).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "benchmarks" / "kernels"
DEFAULT_OUT = ROOT / "traces" / "generators" / "recipes.toml"
CLASSES = ("int", "fp32", "fp64", "sfu", "ldst", "sync", "branch")
# One letter per instruction in a block's ``cls`` string, so a generator can cost part of a block.
LETTER = {"int": "i", "fp32": "f", "fp64": "d", "sfu": "s", "ldst": "m", "sync": "y", "branch": "b"}

FP32 = {
    "FADD",
    "FMUL",
    "FFMA",
    "FMNMX",
    "FSETP",
    "FSET",
    "FSEL",
    "FCHK",
    "FRND",
    "FSWZADD",
    "HFMA2",
    "HADD2",
    "HMUL2",
    "FCMP",
}
SFU = {"MUFU", "F2F", "F2I", "I2F", "I2I", "F2FP"}
SYNC = {"BAR", "MEMBAR", "DEPBAR", "WARPSYNC", "ERRBAR", "CCTL"}
BRANCH = {"BRA", "EXIT", "RET", "CALL", "BSSY", "BSYNC", "BREAK", "BRX", "JMP", "JMX", "KILL", "BMOV"}


def find_tool(name: str) -> str | None:
    """``name`` on PATH or in the PyPI CUDA packages' bin folder; None when absent."""
    found = shutil.which(name)
    if found:
        return found
    cand = Path(sysconfig.get_paths()["purelib"]) / "nvidia" / "cu13" / "bin" / name
    return str(cand) if cand.exists() else None


def tool(name: str) -> str:
    found = find_tool(name)
    if found is None:
        sys.exit(f"sass_recipes: {name} not found (pip install nvidia-cuda-nvdisasm nvidia-cuda-cuobjdump)")
    return found


def compile_sass(cu: Path, cubin: Path, arch: str, nvcc: str, nvdisasm: str, defines: tuple[str, ...] = ()) -> str:
    """``nvcc -cubin -O3`` of one source (``defines``: ``NAME=VALUE`` macros) and its ``nvdisasm -c`` text."""
    flags = [f"-D{d}" for d in defines]
    subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-O3", *flags, "-o", str(cubin), str(cu)], check=True)
    return subprocess.run([nvdisasm, "-c", str(cubin)], capture_output=True, text=True, check=True).stdout


def class_counts(blocks: list[dict]) -> dict[str, int]:
    """Instructions per class (``CLASSES``) of a function's parsed blocks."""
    counts = dict.fromkeys(CLASSES, 0)
    for b in blocks:
        for _pc, _pred, op, operands in b["insns"]:
            counts[klass(op, operands)] += 1
    return counts


def is_mem(op: str, operands: str) -> bool:
    base = op.split(".")[0]
    if base in (
        "LDG",
        "STG",
        "LDS",
        "STS",
        "LD",
        "ST",
        "ATOM",
        "ATOMS",
        "ATOMG",
        "RED",
        "TEX",
        "TLD",
        "TLD4",
        "TLDS",
        "LDL",
        "STL",
        "SULD",
        "SUST",
    ):
        return True
    # LDC with a register index is a constant-memory load; c[0x0][imm] is a parameter read.
    return base == "LDC" and re.search(r"c\[0x[0-9a-f]+\]\[R", operands) is not None


def klass(op: str, operands: str) -> str:
    base = op.split(".")[0]
    if is_mem(op, operands) or base == "LDC":
        return "ldst"
    if base in SYNC:
        return "sync"
    if base in BRANCH:
        return "branch"
    if base in SFU:
        return "sfu"
    if base in FP32:
        return "fp32"
    if base[0] == "D" and base in {"DADD", "DMUL", "DFMA", "DSETP", "DMNMX", "DSET"}:
        return "fp64"
    return "int"


INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)\s*(.*?)\s*;")


def parse(text: str) -> dict[str, list[dict]]:
    """nvdisasm -c output -> {function: [basic block]}."""
    funcs: dict[str, list[dict]] = {}
    cur = None
    blocks = None
    for line in text.splitlines():
        m = re.match(r"\s*\.text\.(\w+):", line)
        if m:
            cur = m.group(1)
            blocks = funcs.setdefault(cur, [])
            blocks.append({"label": cur, "insns": []})
            continue
        if cur is None:
            continue
        m = re.match(r"^(\.L_x_\d+):", line)
        if m:
            if blocks[-1]["insns"]:
                blocks.append({"label": m.group(1), "insns": []})
            else:
                blocks[-1]["label"] = m.group(1)
            continue
        m = INSN.search(line)
        if m:
            pc = int(m.group(1), 16)
            blocks[-1]["insns"].append((pc, (m.group(2) or "").strip(), m.group(3), m.group(4)))
    for name, blocks in funcs.items():
        # Drop the padding after the last EXIT: BRA to itself and NOPs.
        last_exit = max(i for i, b in enumerate(blocks) if any(ins[2] == "EXIT" for ins in b["insns"]))
        del blocks[last_exit + 1 :]
        funcs[name] = [b for b in blocks if b["insns"]]
    return funcs


def resources(cuobjdump: str, cubin: Path) -> dict[str, tuple[int, int]]:
    out = subprocess.run([cuobjdump, "-res-usage", str(cubin)], capture_output=True, text=True, check=True).stdout
    res = {}
    name = None
    for line in out.splitlines():
        m = re.search(r"Function (\w+):", line)
        if m:
            name = m.group(1)
        m = re.search(r"REG:(\d+).*SHARED:(\d+)", line)
        if m and name:
            res[name] = (int(m.group(1)), int(m.group(2)))
    return res


def toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def mlp(blocks: list[dict]) -> float:
    """GPUPerf's MLP (Sim et al. 2012, Sec. 5.3) of a kernel's SASS, per basic block: the local MLP of
    a long-latency load is the number of long-latency loads issued from it up to the first
    instruction that reads its result (or the block's end); a block's MLP is the mean over its
    loads; the kernel's the mean over the blocks that load (1.0 if none does). The rule is
    ``traces.sanitizer.sass.mlp_of_blocks``, which a traced kernel's SASS gets too."""
    from traces.sanitizer.sass import mlp_of_blocks

    return mlp_of_blocks([[(op, operands) for _pc, _pred, op, operands in b["insns"]] for b in blocks])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_80")
    ap.add_argument("-o", "--output", default=str(DEFAULT_OUT))
    ap.add_argument("--listing", action="store_true", help="print the SASS of every block")
    args = ap.parse_args(argv)
    nvcc, nvdisasm, cuobjdump = tool("nvcc"), tool("nvdisasm"), tool("cuobjdump")
    version = re.search(
        r"release ([\d.]+), V([\d.]+)", subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    )
    lines = [
        "# Instruction recipes of the benchmark kernels, one table per kernel, one entry per",
        "# SASS basic block: start pc, instruction count, count per class, memory instructions",
        "# as [offset in block, opcode, address operand] (CONST: an operand read from the",
        "# __constant__ bank c[0x3], no instruction of its own), and ``cls`` one class letter per instruction",
        "# (i int, f fp32, d fp64, s sfu, m ldst, y sync, b branch). Generated by benchmarks/sass_recipes.py; do not edit.",
        f"# nvcc {version.group(2) if version else '?'} -cubin -arch={args.arch}; nvdisasm -c.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for cu in sorted(KERNELS.glob("*.cu")):
            cubin = Path(tmp) / (cu.stem + ".cubin")
            text = compile_sass(cu, cubin, args.arch, nvcc, nvdisasm)
            res = resources(cuobjdump, cubin)
            for name, blocks in sorted(parse(text).items()):
                regs, smem = res.get(name, (0, 0))
                lines += [f"[{name}]", f"source = {toml_str(str(cu.relative_to(ROOT)))}", f'arch = "{args.arch}"',
                          f"regs = {regs}", f"smem = {smem}", f"mlp = {mlp(blocks)}", "blocks = ["]  # fmt: skip
                for b in blocks:
                    counts = class_counts([b])
                    mem = []
                    letters = []
                    for k, (pc, pred, op, operands) in enumerate(b["insns"]):
                        letters.append(LETTER[klass(op, operands)])
                        if is_mem(op, operands):
                            addr = re.search(r"(\[[^\]]*\](\[[^\]]*\])?)\s*(,|$)", operands)
                            mem.append(f"[{k}, {toml_str(op)}, {toml_str(addr.group(1) if addr else operands)}]")
                        elif re.search(r"c\[0x3\]\[0x[0-9a-f]+\]", operands):
                            # An operand in the user constant bank (__constant__ data): a constant read
                            # with no load instruction of its own. Listed with opcode CONST.
                            imm = re.search(r"c\[0x3\]\[(0x[0-9a-f]+)\]", operands).group(1)
                            mem.append(f'[{k}, "CONST", "c[0x3][{imm}]"]')
                    cls = ", ".join(f"{c} = {v}" for c, v in counts.items() if v)
                    lines.append(
                        f"  {{ label = {toml_str(b['label'])}, pc = {b['insns'][0][0]}, n = {len(b['insns'])}, {cls}, "
                        f'mem = [{", ".join(mem)}], cls = "{"".join(letters)}" }},'
                    )
                    if args.listing:
                        print(f"{name} {b['label']} (pc {b['insns'][0][0]:#x}, {len(b['insns'])} insns)")
                        for pc, pred, op, operands in b["insns"]:
                            print(f"    {pc:04x} {pred:6s} {op} {operands}")
                lines += ["]", ""]
    Path(args.output).write_text("\n".join(lines))
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _measure import timed_main

    sys.exit(timed_main(main))  # prints wall, CPU and peak RSS of the run to stderr
