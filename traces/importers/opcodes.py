"""SASS opcode classification shared by the Accel-Sim and NVBit importers.

An opcode string such as ``LDG.E.128.SYS`` is split on dots; the first token
(the base) decides the memory space, the operation and the instruction class,
the suffixes decide the access width:

- spaces (DESIGN.md, "Importers"): LDG/STG/ATOMG/REDG global; LDS/STS/ATOMS/LDSM
  shared; LDL/STL local; LDC/ULDC constant; TEX/TLD/TLD4/... texture; LD/ST/ATOM/RED
  generic (the importer resolves them by address window); LDGSTS is the
  asynchronous global-to-shared copy whose trace lines are resolved half by half;
- width: ``U8``/``S8`` 1 byte, ``U16``/``S16`` 2, ``32``/``U32``/``S32``/``F32`` 4,
  ``64``/``U64``/``S64``/``F64`` 8, ``128`` 16, otherwise 4 (as Accel-Sim's tracer,
  which reads the width from the opcode because NVBit may report it wrongly);
  ``LDSM`` lanes each address one 16-byte matrix row, so 16;
- classes (GPUPerf's instruction mix, Sim et al. Sec. 4): int, fp32, fp64, sfu,
  ldst, sync, branch. Conversions count as SFU as in Accel-Sim's opcode tables.

The classification is table data built once per distinct opcode string, so the
hot parsers only index arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..codes import ATOMIC, CONSTANT, GLOBAL, LOAD, LOCAL, N_SPACES, REDUCTION, SHARED, STORE, TEXTURE1D, TEXTURE2D
from ..schema import INSTRUCTION_CLASSES as CLASS_NAMES

# spaces an opcode may have besides the trace's (above its codes: GENERIC was 6, the read-only space's code)
NONE = -1
GENERIC = N_SPACES  # address decides: shared window, local window or global
LDGSTS = N_SPACES + 1  # one trace line per half: shared store half or global load half

INT, FP32, FP64, SFU, LDST, SYNC, BRANCH = range(len(CLASS_NAMES))

_MEM = {
    # base: (space, op)
    "LDG": (GLOBAL, LOAD),
    "STG": (GLOBAL, STORE),
    "ATOMG": (GLOBAL, ATOMIC),
    "REDG": (GLOBAL, REDUCTION),
    "LDS": (SHARED, LOAD),
    "LDSM": (SHARED, LOAD),
    "STS": (SHARED, STORE),
    "ATOMS": (SHARED, ATOMIC),
    "LDL": (LOCAL, LOAD),
    "STL": (LOCAL, STORE),
    "LDC": (CONSTANT, LOAD),
    "ULDC": (CONSTANT, LOAD),
    "TEX": (TEXTURE1D, LOAD),
    "TEXS": (TEXTURE1D, LOAD),
    "TLD": (TEXTURE1D, LOAD),
    "TLDS": (TEXTURE1D, LOAD),
    "TLD4": (TEXTURE2D, LOAD),
    "TLD4S": (TEXTURE2D, LOAD),
    "TXD": (TEXTURE1D, LOAD),
    "TMML": (TEXTURE1D, LOAD),
    "SULD": (TEXTURE2D, LOAD),
    "LD": (GENERIC, LOAD),
    "ST": (GENERIC, STORE),
    "ATOM": (GENERIC, ATOMIC),
    "RED": (GENERIC, REDUCTION),
    "LDGSTS": (LDGSTS, LOAD),
}
# Memory-class opcodes that never carry lane addresses we can place (surface
# stores and reductions, cache control, TMA bulk copies): counted, not traced.
_MEM_OTHER = {"SUST", "SUATOM", "SURED", "CCTL", "CCTLL", "CCTLT", "UTMALDG", "UTMASTG", "UTMAPF",
              "UTMAREDG", "UBLKCP", "UBLKPF", "UBLKRED", "LDGDEPBAR", "MATCH", "QSPC", "TXQ"}  # fmt: skip

_FP32 = {"FADD", "FADD32I", "FMUL", "FMUL32I", "FFMA", "FFMA32I", "FMNMX", "FSET", "FSETP", "FSEL", "FCMP",
         "FSWZADD", "FSWZ", "FCHK", "FMAD", "HADD2", "HADD2_32I", "HMUL2", "HMUL2_32I", "HFMA2", "HFMA2_32I",
         "HSET2", "HSETP2", "HMNMX2", "HMMA", "BMMA", "DMMA", "IMMA", "FMMA"}  # fmt: skip
_FP64 = {"DADD", "DMUL", "DFMA", "DSETP", "DSET", "DMNMX"}
_SFU = {"MUFU", "RRO", "F2F", "F2I", "I2F", "I2I", "F2FP", "FRND", "I2FP", "F2IP"}
_SYNC = {"BAR", "BARRIER", "MEMBAR", "DEPBAR", "WARPSYNC", "ERRBAR", "SYNCS", "ARRIVES", "FENCE", "B2R", "R2B",
         "CSMTEST", "NANOSLEEP"}  # fmt: skip
_BRANCH = {"BRA", "BRX", "JMP", "JMX", "CALL", "JCAL", "RET", "EXIT", "BSSY", "BSYNC", "BREAK", "BPT", "KILL",
           "SSY", "SYNC", "PBK", "BRK", "PCNT", "CONT", "PRET", "PLONGJMP", "LONGJMP", "RTT",
           "YIELD", "BMOV", "ACQBULK", "CAL"}  # fmt: skip

_WIDTH_TOKENS = {
    "U8": 1, "S8": 1, "8": 1,
    "U16": 2, "S16": 2, "16": 2, "F16": 2,
    "32": 4, "U32": 4, "S32": 4, "F32": 4, "B32": 4,
    "64": 8, "U64": 8, "S64": 8, "F64": 8, "B64": 8,
    "128": 16, "U128": 16, "B128": 16,
}  # fmt: skip


@dataclass(frozen=True)
class Opcode:
    """What one opcode string means for the trace.

    ``space`` is a schema space code, or ``GENERIC``/``LDGSTS`` for the two kinds
    resolved by address, or ``NONE``; ``memory_class`` marks opcodes that access
    memory even where the trace has no addresses for them (``LDC``, ``TEX``, ...).
    ``long_latency`` marks loads whose result arrives from off-chip memory (the
    "memory requests" of GPUPerf's MLP, Sec. 5.3). ``ends_block`` marks control
    flow and barriers, which end a basic block.
    """

    name: str
    space: int
    op: int
    width: int
    klass: int
    memory_class: bool
    long_latency: bool
    ends_block: bool


def width_of(tokens: list[str]) -> int:
    for t in tokens[1:]:
        if t in _WIDTH_TOKENS:
            return _WIDTH_TOKENS[t]
    return 4


def classify(opcode: str) -> Opcode:
    """Classify one SASS opcode string (case-insensitive)."""
    tokens = [t for t in opcode.upper().split(".") if t]
    base = tokens[0] if tokens else ""
    space, op = _MEM.get(base, (NONE, LOAD))
    width = 16 if base == "LDSM" else width_of(tokens)
    if space in (TEXTURE1D,) and ("2D" in tokens or "ARRAY_2D" in tokens):
        space = TEXTURE2D
    memory_class = space != NONE or base in _MEM_OTHER
    if memory_class:
        klass = LDST
    elif base in _FP32:
        klass = FP32
    elif base in _FP64:
        klass = FP64
    elif base in _SFU:
        klass = SFU
    elif base in _SYNC:
        klass = SYNC
    elif base in _BRANCH:
        klass = BRANCH
    else:
        klass = INT
    long_latency = op in (LOAD, ATOMIC) and space in (GLOBAL, LOCAL, TEXTURE1D, TEXTURE2D, GENERIC, LDGSTS)
    ends_block = klass in (BRANCH, SYNC)
    return Opcode(opcode, space, op, width, klass, memory_class, long_latency, ends_block)
