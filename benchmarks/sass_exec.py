"""Count the warp instructions a kernel's SASS executes: a small SIMT interpreter of nvcc's integer code.

``cuobjdump -sass`` gives the static code; what a warp issues depends on its threads' trip counts (a copy loop
``for (r = ty; r < ROWS; r += BY)`` runs a thread-dependent number of times) and on divergence. This module runs
one warp through the code: 32 threads' integer registers and predicates, the instructions nvcc emits for index
arithmetic and loop control (``IADD3``, ``VIADD``, ``IMAD``, ``LEA``, ``ISETP``, ``LOP3``, ``SHF``, ``SEL``,
``IMNMX``, ``MOV``, ``S2R``, ``LDC``, ``HFMA2`` as a move of a constant, their uniform forms), and control flow
as the compiler lays it out on Volta and later: a ``BRA`` that splits the warp runs each side to the innermost
open ``BSSY``'s ``BSYNC``, where the warp reconverges (each side issues that ``BSYNC``). Every instruction issued
counts one, predicated off or not (``smsp__inst_executed``). Loads give unknown values; a branch that depends on
one is an error, so what is counted never rests on a guess.

Used by ``benchmarks/addressing_modes.py`` (rule 13, the copy's instructions per row) and its tests; checked
against Nsight Compute's instruction counts of Kernel Tuner's convolution on an H200 (``tests/test_sass_exec.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from addressing_modes import BRANCH_TARGET, ZERO, Inst, parse

M32 = 0xFFFFFFFF
WARP = 32
PARAMS = {o: 0x1000 for o in range(0x160, 0x400, 4)}
"""A value for every kernel-parameter word of the constant bank (sm_75 and later keep them from 0x160 to 0x3ff): a
pointer's words or a size, where the counted code's control depends on none of them."""
CONST = re.compile(r"c\[(0x[0-9a-f]+)\]\[(.*)\]")
STACK_WORD, STACK_TOP = 0x28, 0xFFFC00
"""The constant-bank word the kernel's stack pointer comes from (``MOV R1, c[0x0][0x28]`` on sm_70 and later), and
a value for it: spills only need their ``STL``/``LDL`` addresses to agree."""
MEMORY = ("LDG", "LD", "LDS", "LDL", "STG", "ST", "STS", "STL", "ATOM", "ATOMG", "ATOMS", "RED", "LDSM")
SKIP = ("NOP", "BMOV", "WARPSYNC", "DEPBAR", "MEMBAR", "ERRBAR", "CCTL", "FENCE", "YIELD", "NANOSLEEP")


class Unknown(Exception):
    """Control flow that depends on a value the interpreter does not know (a load's result)."""


@dataclass
class Launch:
    """What the special registers and the constant bank say: block and grid sizes, the block's index, parameters
    (``params``: constant-bank offset -> 32-bit value; missing parameter words read as unknown)."""

    block: tuple[int, int, int]
    block_idx: tuple[int, int, int] = (0, 0, 0)
    grid: tuple[int, int, int] = (1, 1, 1)
    params: dict[int, int] = field(default_factory=dict)

    def special(self, name: str, lane: int, warp: int) -> int:
        t = warp * WARP + lane
        bx, by, _ = self.block
        tid = (t % bx, (t // bx) % by, t // (bx * by))
        table = {
            "SR_TID.X": tid[0], "SR_TID.Y": tid[1], "SR_TID.Z": tid[2],
            "SR_CTAID.X": self.block_idx[0], "SR_CTAID.Y": self.block_idx[1], "SR_CTAID.Z": self.block_idx[2],
            "SR_LANEID": lane, "SR_CgaCtaId": 0, "SR_TID": tid[0] | (tid[1] << 16),
        }  # fmt: skip
        if name not in table:
            raise Unknown(f"special register {name}")
        return table[name]


class Warp:
    """Registers of one warp's threads (``None``: unknown)."""

    def __init__(self, launch: Launch, warp: int, threads: int):
        self.launch, self.warp = launch, warp
        self.lanes = [k for k in range(WARP) if warp * WARP + k < threads]
        self.r: list[dict[str, int | None]] = [{} for _ in range(WARP)]
        self.local: list[dict[int, int | None]] = [{} for _ in range(WARP)]
        """Each thread's local memory (its spills) by byte address, one 32-bit word an entry."""

    def get(self, lane: int, op: str) -> int | None:
        """One 32-bit source operand: a register, predicate, immediate or constant-bank word."""
        op = op.replace(".reuse", "").strip()
        neg = inv = False
        if op.startswith("-"):
            neg, op = True, op[1:]
        if op.startswith("~"):
            inv, op = True, op[1:]
        if op.startswith("!"):
            v = self.get(lane, op[1:])
            return None if v is None else 1 - v
        if op in ("RZ", "URZ"):
            v = 0
        elif op in ("PT", "UPT"):
            v = 1
        elif re.fullmatch(r"U?R\d+|U?P\d", op):
            v = self.r[lane].get(op)
        elif op.startswith("0x") or op.startswith("-0x") or re.fullmatch(r"-?\d+", op):
            v = int(op, 0) & M32
        elif m := CONST.fullmatch(op):
            v = self.const(lane, int(m[1], 16), m[2])
        elif op.startswith("SR_"):
            v = self.launch.special(op, lane, self.warp)
        else:
            raise Unknown(f"operand {op!r}")
        if v is None:
            return None
        if inv:
            v = ~v & M32
        if neg:
            v = -v & M32
        return v

    def const(self, lane: int, bank: int, expr: str) -> int | None:
        off = 0
        for term in expr.split("+"):
            term = term.strip()
            if term in ("URZ", "RZ"):
                continue
            if re.fullmatch(r"U?R\d+", term):
                v = self.r[lane].get(term)
                if v is None:
                    return None
                off += v
            else:
                off += int(term, 0)
        if bank != 0:
            return None  # user constants: data, not control
        if off == STACK_WORD:
            return STACK_TOP
        if off < 12:
            return self.launch.block[off // 4]
        if off < 24:
            return self.launch.grid[(off - 12) // 4]
        return self.launch.params.get(off)

    def set(self, lane: int, reg: str, v: int | None) -> None:
        if reg not in ZERO:
            self.r[lane][reg] = None if v is None else v & M32


def _signed(v: int) -> int:
    return v - (1 << 32) if v & 0x80000000 else v


def _pair(name: str, k: int) -> str:
    m = re.fullmatch(r"(U?R)(\d+)", name)
    return f"{m[1]}{int(m[2]) + k}" if m else name


def _cmp(kind: str, a: int, b: int, unsigned: bool) -> bool:
    if not unsigned:
        a, b = _signed(a), _signed(b)
    return {"LT": a < b, "LE": a <= b, "GT": a > b, "GE": a >= b, "EQ": a == b, "NE": a != b}[kind]


def _lop3(a: int, b: int, c: int, lut: int) -> int:
    out = 0
    for bit in range(32):
        k = ((a >> bit) & 1) << 2 | ((b >> bit) & 1) << 1 | ((c >> bit) & 1)
        out |= ((lut >> k) & 1) << bit
    return out


def _guard(w: Warp, lane: int, guard: str | None) -> int | None:
    return 1 if guard is None else w.get(lane, guard.lstrip("@"))


def execute(w: Warp, inst: Inst, lanes: list[int]) -> None:
    """One non-branch instruction on ``lanes`` (each under its guard)."""
    base, mods = inst.base, inst.opcode.split(".")[1:]
    ops = [o.replace(".reuse", "") for o in inst.operands]
    if base == "HFMA2" and len(ops) == 5 and ops[1] == "-RZ" and ops[2] == "RZ":
        # nvcc's move of a constant through the half-precision unit: 0 x 0 + (hi, lo) as two fp16 immediates
        v = int(np.array([float(ops[4]), float(ops[3])], dtype=np.float16).view(np.uint32)[0])
        for lane in lanes:
            if _guard(w, lane, inst.guard):
                w.set(lane, ops[0], v)
        return
    if base in SKIP or base.startswith(("BSSY", "BSYNC", "BAR")):
        return
    if base in ("FFMA", "FADD", "FMUL", "HFMA2"):
        for lane in lanes:  # floating point: data, not control
            w.set(lane, ops[0], None)
        return
    for lane in lanes:
        g = _guard(w, lane, inst.guard)
        if g is None:  # a predicate from a loaded value (a spilled one, reloaded): the warp issues the instruction
            _unknown_dest(w, lane, mods, ops)  # either way, and what it would write is not known
            if base in ("ISETP", "FSETP", "PLOP3") and len(ops) > 1 and re.fullmatch(r"U?P\d+", ops[1]):
                w.set(lane, ops[1], None)  # a comparison's second predicate too
            continue
        if not g:
            continue
        _one(w, lane, base, mods, ops, inst)


def _width(mods: list[str]) -> int:
    """Registers an instruction's result or memory word spans: 4 for ``.128``, 2 for ``.64`` or ``.WIDE``."""
    return 4 if "128" in mods else 2 if ("64" in mods or "WIDE" in mods) else 1


def _unknown_dest(w: Warp, lane: int, mods: list[str], ops: list[str]) -> None:
    """The destination register ``ops[0]`` (and the next ones of a wide result) made unknown on ``lane``; nothing
    for an instruction without one (a store's first operand is its address)."""
    if ops and re.fullmatch(r"U?R\d+|U?P\d", ops[0]):
        for k in range(_width(mods)):
            w.set(lane, _pair(ops[0], k), None)


def _address(w: Warp, lane: int, operand: str) -> int | None:
    """The byte address of a memory operand ``[R1+0x10]`` (registers and immediates summed), None if unknown."""
    total = 0
    for term in operand.strip("[]").split("+"):
        v = w.get(lane, term.strip().removesuffix(".64").removesuffix(".U32"))
        if v is None:
            return None
        total += v
    return total & M32


def _one(w: Warp, lane: int, base: str, mods: list[str], ops: list[str], inst: Inst) -> None:
    g = lambda o: w.get(lane, o)  # noqa: E731
    if base in ("STL", "LDL"):  # spills: a register kept in the thread's local memory and read back
        width = _width(mods)
        mem, reg = (ops[0], ops[1]) if base == "STL" else (ops[1], ops[0])
        a = _address(w, lane, mem)
        if base == "STL" and a is None:
            w.local[lane].clear()  # a store we cannot place: nothing kept is certain any more
        for k in range(width):
            if base == "STL" and a is not None:
                w.local[lane][a + 4 * k] = g(_pair(reg, k))
            elif base == "LDL":
                w.set(lane, _pair(reg, k), None if a is None else w.local[lane].get(a + 4 * k))
        return
    if base in MEMORY:  # a load's data is not control: its registers become unknown
        _unknown_dest(w, lane, mods, ops)
        return
    if base in ("S2R", "S2UR", "CS2R"):
        w.set(lane, ops[0], g(ops[1]) if base != "CS2R" else None)
        return
    if base in ("LDC", "ULDC", "LDCU"):
        m = CONST.fullmatch(ops[1])
        for k in range(_width(mods)):
            v = w.const(lane, int(m[1], 16), f"{m[2]}+{4 * k}") if m else None
            w.set(lane, _pair(ops[0], k), v)
        return
    if base in ("MOV", "UMOV"):
        w.set(lane, ops[0], g(ops[1]))
        return
    if base in ("IADD3", "UIADD3"):
        d, rest = ops[0], ops[1:]
        pdst = [o for o in rest if re.fullmatch(r"U?P\d|U?PT", o)]
        vals = [o for o in rest if o not in pdst]
        if "X" in mods:  # carry-ins are the trailing predicates
            xs = [g(o) for o in vals[:3]]
            carry = [g(o) for o in vals[3:]]
            vals_known = None not in xs and None not in carry
            w.set(lane, d, (sum(xs) + sum(carry)) if vals_known else None)
            return
        xs = [g(o) for o in vals[:3]]
        if None in xs:
            w.set(lane, d, None)
            for p in pdst:
                w.set(lane, p, None)
            return
        total = xs[0] + xs[1] + xs[2]
        if pdst:  # carry out of the unsigned sum (first predicate)
            uns = sum(x & M32 for x in xs)
            w.set(lane, pdst[0], 1 if uns >> 32 else 0)
        w.set(lane, d, total)
        return
    if base in ("IMAD", "UIMAD"):
        d = ops[0]
        a, b, c = ops[1], ops[2], ops[3]
        if "WIDE" in mods:
            x, y, z0, z1 = g(a), g(b), g(c), g(_pair(c, 1)) if c not in ("RZ", "URZ") else 0
            if None in (x, y, z0, z1):
                w.set(lane, d, None), w.set(lane, _pair(d, 1), None)
                return
            if "U32" in mods:
                p = x * y
            else:
                p = _signed(x) * _signed(y)
            v = (p + (z1 << 32 | z0)) & ((1 << 64) - 1)
            w.set(lane, d, v & M32), w.set(lane, _pair(d, 1), v >> 32)
            return
        x, y, z = g(a), g(b), g(c)
        if "X" in mods:  # IMAD.X: the carry-in predicate follows
            carry = g(ops[4]) if len(ops) > 4 else 0
            w.set(lane, d, None if None in (x, y, z, carry) else x * y + z + carry)
            return
        if None in (x, y, z):
            w.set(lane, d, None)
            return
        if "HI" in mods:
            p = (x * y) >> 32 if "U32" in mods else (_signed(x) * _signed(y)) >> 32
            w.set(lane, d, p + z)
        else:
            w.set(lane, d, x * y + z)
        return
    if base in ("VIADD", "UVIADD"):  # sm_90+: Rd = Ra + b
        a, b = g(ops[1]), g(ops[2])
        w.set(lane, ops[0], None if None in (a, b) else a + b)
        return
    if base in ("LEA", "ULEA"):
        d = ops[0]
        rest = [o for o in ops[1:] if not re.fullmatch(r"U?P\d|U?PT", o)]
        if "HI" in mods:
            a, b, c, s = (g(o) for o in rest[:4]) if len(rest) >= 4 else (g(rest[0]), g(rest[1]), 0, g(rest[2]))
            if None in (a, b, c, s):
                w.set(lane, d, None)
                return
            w.set(lane, d, b + (((c << 32) | a) >> (32 - s)))
        else:
            a, b, s = g(rest[0]), g(rest[1]), g(rest[2])
            w.set(lane, d, None if None in (a, b, s) else (a << s) + b)
        return
    if base in ("SHF", "USHF"):
        d, a, s, b = ops[0], g(ops[1]), g(ops[2]), g(ops[3])
        if None in (a, s, b):
            w.set(lane, d, None)
            return
        s &= 63 if "64" in mods else 31
        if "L" in mods:
            full = ((b << 32) | a) << s
            w.set(lane, d, full >> 32 if "HI" in mods else full)
        else:
            hi = _signed(b) if "S32" in mods or "S64" in mods else b
            full = (hi << 32) | a
            w.set(lane, d, (full >> s) >> 32 if "HI" in mods else full >> s)
        return
    if base in ("LOP3", "ULOP3"):
        pd = ops[0] if re.fullmatch(r"U?P\d|U?PT", ops[0]) else None
        k = 1 if pd else 0
        d = ops[k]
        a, b, c, lut = g(ops[k + 1]), g(ops[k + 2]), g(ops[k + 3]), int(ops[k + 4], 0)
        v = None if None in (a, b, c) else _lop3(a, b, c, lut)
        w.set(lane, d, v)
        if pd:
            w.set(lane, pd, None if v is None else int(v != 0))
        return
    if base in ("ISETP", "UISETP"):
        kind, uns, op = mods[0], "U32" in mods, mods[-1]
        p, q = ops[0], ops[1]
        a, b, c = g(ops[2]), g(ops[3]), g(ops[4])
        if None in (a, b, c):
            w.set(lane, p, None), w.set(lane, q, None)
            return
        r = _cmp(kind, a, b, uns)
        comb = {"AND": lambda x, y: x and y, "OR": lambda x, y: x or y, "XOR": lambda x, y: x != y}[op]
        w.set(lane, p, int(comb(r, bool(c))))
        w.set(lane, q, int(comb(not r, bool(c))))
        return
    if base in ("IMNMX", "VIMNMX", "UIMNMX"):
        d, a, b, p = ops[0], g(ops[1]), g(ops[2]), g(ops[3])
        if None in (a, b, p):
            w.set(lane, d, None)
            return
        if "U32" not in mods:
            a, b = _signed(a), _signed(b)
        w.set(lane, d, min(a, b) if p else max(a, b))
        return
    if base in ("SEL", "USEL"):
        d, a, b, p = ops[0], g(ops[1]), g(ops[2]), g(ops[3])
        w.set(lane, d, None if p is None else (a if p else b))
        return
    if base in ("IABS",):
        a = g(ops[1])
        w.set(lane, ops[0], None if a is None else abs(_signed(a)))
        return
    if base == "IADD" and "64" in mods:
        a0, a1, b0, b1 = g(ops[1]), g(_pair(ops[1], 1)), g(ops[2]), g(_pair(ops[2], 1))
        if None in (a0, a1, b0, b1):
            w.set(lane, ops[0], None), w.set(lane, _pair(ops[0], 1), None)
            return
        v = ((a1 << 32 | a0) + (b1 << 32 | b0)) & ((1 << 64) - 1)
        w.set(lane, ops[0], v & M32), w.set(lane, _pair(ops[0], 1), v >> 32)
        return
    # anything else (float, conversion, special function): its destination becomes unknown
    _unknown_dest(w, lane, mods, ops)


def run_warp(lines: list[str], launch: Launch, warp: int, until_barrier: bool = False) -> int:
    """Warp instructions warp ``warp`` of a block issues from the kernel's start to its exit (or to its first
    ``BAR`` with ``until_barrier``)."""
    return _run_warp([parse(ln) for ln in lines], launch, warp, until_barrier)


def block_count(lines: list[str], launch: Launch, until_barrier: bool = False) -> int:
    """Warp instructions all warps of one block issue (see :func:`run_warp`), the code parsed once."""
    code = [parse(ln) for ln in lines]
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    return sum(_run_warp(code, launch, wp, until_barrier) for wp in range(-(-threads // WARP)))


def _run_warp(code: list[Inst], launch: Launch, warp: int, until_barrier: bool) -> int:
    at = {inst.pc: k for k, inst in enumerate(code)}
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    w = Warp(launch, warp, threads)
    if not w.lanes:
        return 0

    def target(inst: Inst) -> int:
        """The code index a ``BRA`` or ``BSSY`` names."""
        return at[int(BRANCH_TARGET.findall(inst.text)[-1], 16)]

    def run(k: int, lanes: list[int], stops: tuple[int, ...], bssy: list[int]) -> tuple[int, int | None]:
        """Run ``lanes`` from code index ``k`` until an index in ``stops`` (returned) or exit (None)."""
        n = 0
        bssy = list(bssy)
        while True:
            if k in stops:
                return n, k
            inst = code[k]
            base = inst.base
            if base == "EXIT" and inst.guard is None:
                return n + 1, None
            if base == "BAR" and until_barrier:
                return n, None
            n += 1
            if base == "BSSY":
                bssy.append(target(inst) - 1)  # its BSYNC, just before the address it names
                k += 1
                continue
            if base == "BSYNC":
                if bssy and bssy[-1] == k:
                    bssy.pop()
                k += 1
                continue
            if base in ("BRA", "EXIT"):
                gs = [_guard(w, lane, inst.guard) for lane in lanes]
                if None in gs:
                    raise Unknown(f"branch {inst.text} on an unknown predicate")
                taken = [lane for lane, g in zip(lanes, gs) if g]
                rest = [lane for lane, g in zip(lanes, gs) if not g]
                if base == "EXIT":
                    lanes = rest
                    if not lanes:
                        return n, None
                    k += 1
                    continue
                to = target(inst)
                if not rest:
                    k = to
                    continue
                if not taken:
                    k += 1
                    continue
                if not bssy:
                    raise Unknown(f"divergent {inst.text} outside any BSSY")
                join = bssy[-1]
                n1, s1 = run(to, taken, stops + (join,), bssy)
                n2, s2 = run(k + 1, rest, stops + (join,), bssy)
                n += n1 + n2 + 1  # each side issues the BSYNC it waits at: one more than the merged warp's
                if s1 != join or s2 != join:
                    raise Unknown(f"the two sides of {inst.text} do not meet at its BSYNC")
                k = join
                continue
            execute(w, inst, lanes)
            k += 1

    n, _ = run(0, w.lanes, (), [])
    return n
