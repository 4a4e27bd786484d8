"""Import Accel-Sim tracer output (``kernel-N.traceg``, plain or ``.xz``).

The format, as written by Accel-Sim's NVBit tracer (``util/tracer_nvbit/tracer_tool``)
and grouped per block by its ``post-traces-processing``, and as read by its
``trace_parser.cc`` (read to confirm each point below; none of its code is used):

- header lines ``-key = value``: kernel name, grid and block dims, shmem, nregs,
  binary version, shmem and local-memory window bases, tracer version, ``enable
  lineinfo``; then ``#`` comments; then per block ``#BEGIN_TB``, ``thread block =
  x,y,z`` (version 6 adds ``cluster ...`` lines), per warp ``warp = j`` and ``insts =
  N`` followed by N instruction lines, ``#END_TB``;
- instruction line: ``[line_num] PC mask ndst [R..] OPCODE nsrc [R..] width``, and if
  width > 0 ``mode`` with addresses: mode 0 lists one hex address per active lane,
  mode 1 is ``base stride`` over a contiguous run of active lanes, mode 2 is ``base``
  and one signed decimal delta per further active lane (deltas from the previous
  active lane). Then the trailing fields, which tell the versions apart: version 3
  has none, version 4 none (some builds write the immediate), version 5 one
  immediate, version 6 two immediates and ``Val|NoVal`` with optional values, and
  may list several destination registers. Versions other than 3 to 6 are refused.
- ``LDGSTS`` has two memory operands; the tracer writes two lines (shared address
  first), and post-processing drops the shared one. Each line present becomes a
  row: a shared store half or a global load half; the count of global halves
  without their shared half is recorded in ``source``.
- generic ``LD``/``ST``/``ATOM``/``RED`` are resolved by address: inside the
  16 MiB shared window above ``-shmem base_addr`` they are shared (stored as
  offsets), inside the local window local, otherwise global.
- the constant bank and textures are not MREF operands for NVBit, so ``LDC`` and
  ``TEX`` lines carry no addresses in these traces; they count as instructions
  (class ldst) and the count of such memory instructions without addresses is
  recorded in ``source``.

``seq`` is the position of the line in its warp's instruction stream (all
instructions counted), the totals per class come from the opcodes
(``opcodes.py``), and ILP/MLP from the register def-use chains of the dynamic
basic blocks (GPUPerf, Sim et al. Sec. 5.3; ``_accelsim_kernels.py``).

Parsing runs in a numba kernel over 16 MiB byte chunks; Python only classifies
each distinct opcode once.
"""

from __future__ import annotations

import logging
import lzma
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..errors import InputError
from ..inputfile import quote_line, read_bytes, read_error, refuse_binary, require_file
from ..launch import ADDRESS_LIMIT, MAX_REGS_PER_THREAD, MAX_SMEM_PER_BLOCK, coverage_problem, launch_problem
from ..schema import INSTRUCTION_CLASSES, Instructions, KernelInfo, WARP_SIZE, control_character
from . import _accelsim_kernels as K
from .objects import Extent, ObjectSpec, infer_objects
from .opcodes import CLASS_NAMES, classify

log = logging.getLogger(__name__)

SUPPORTED_VERSIONS = (3, 4, 5, 6)
SEEN_BLOCKS = 1 << 24
CHUNK = 1 << 24
WINDOW = 1 << 24


class ParseError(InputError):
    """A line of an imported file that cannot be used: names the file and line."""

    def __init__(self, path, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        where = self.path if line is None else f"{self.path} line {line}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Header:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shmem: int
    nregs: int
    binary_version: int
    version: int
    lineinfo: int
    shmem_base: int
    local_base: int
    lines: int
    """Header lines consumed (the body starts on the next line)."""
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Parsed:
    """Columns (``addr`` (n, 32)) and what the parse counted."""

    columns: dict[str, np.ndarray]
    header: Header
    opcode_counts: dict[str, int]
    counts: dict[str, int]
    ilp: float
    mlp: float
    lines: int


# Header numbers go to int64 fields of the parser: below 2^31 (versions, counts) and
# below 2^62 for the window bases (addresses of a 49-bit GPU address space in practice).
_HEADER_MAX = (1 << 31) - 1
_BASE_MAX = (1 << 62) - 1
_DIM = re.compile(r"^\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)$")


def _open(path: str) -> BinaryIO:
    if path.endswith(".xz"):
        return lzma.open(path, "rb")
    return open(path, "rb")


def _read(f: BinaryIO, path: str, line_hint: int) -> bytes:
    try:
        return f.read(CHUNK)
    except (lzma.LZMAError, EOFError) as exc:
        raise ParseError(path, line_hint, f"the xz stream is truncated or corrupt after this line ({exc})") from None
    except OSError as exc:
        raise read_error(path, exc) from None


def _parse_header(path: str, lines: list[bytes]) -> Header:
    """Header lines, up to the first comment or ``#BEGIN_TB`` (as Accel-Sim's parser)."""
    vals: dict[str, tuple[int, str]] = {}
    n = 0
    for n, raw in enumerate(lines, start=1):
        s = raw.decode("utf-8", "replace").strip()
        if not s:
            continue
        if s.startswith("#"):
            n -= 1
            break
        if not s.startswith("-") or "=" not in s:
            raise ParseError(
                path, n, f"expected a header line '-key = value' before the instruction stream, got {quote_line(s)}"
            )
        key, _, value = s[1:].partition("=")
        vals[" ".join(key.split())] = (n, value.strip())

    def get(key: str, required: bool = True) -> tuple[int, str] | None:
        if key not in vals and required:
            raise ParseError(path, n + 1, f"header line '-{key} = ...' is missing before the instruction stream")
        return vals.get(key)

    def integer(key: str, default: int | None = None, base: int = 10, top: int = _HEADER_MAX) -> int:
        got = get(key, default is None)
        if got is None:
            return default  # type: ignore[return-value]
        ln, v = got
        try:
            value = int(v[:40], base) if len(v) <= 40 else None
        except ValueError:
            value = None
        if value is None or not 0 <= value <= top:
            top_text = f"{top:#x}" if base == 16 else str(top)
            raise ParseError(path, ln, f"header '-{key}' must be an integer in 0..{top_text}, got {v[:40]!r}")
        return value

    def dim(key: str) -> tuple[int, int, int]:
        ln, v = get(key)  # type: ignore[misc]
        m = _DIM.match(v) if len(v) <= 100 else None
        if not m or min(int(x) for x in m.groups()) < 1:
            raise ParseError(path, ln, f"header '-{key}' must be (x,y,z) with positive integers, got {v[:60]!r}")
        return (int(m.group(1)), int(m.group(2)), int(m.group(3)))

    vln, vtext = get("accelsim tracer version")  # type: ignore[misc]
    try:
        version = int(vtext)
    except ValueError:
        version = -1
    if version not in SUPPORTED_VERSIONS:
        raise ParseError(path, vln, f"unknown Accel-Sim tracer version {vtext!r}; this importer reads versions 3 to 6")
    name = get("kernel name", False)
    bad = control_character(name[1]) if name else None
    if bad is not None:  # the trace's metadata refuses it; said here, by the header's line
        raise ParseError(path, name[0], f"the kernel name holds the control character {bad!r}")
    grid, block = dim("grid dim"), dim("block dim")
    problem = launch_problem(grid, block)
    if problem:
        raise ParseError(path, get("grid dim" if problem.startswith("grid") else "block dim")[0], problem)  # type: ignore[index]
    known = {"kernel name", "kernel id", "grid dim", "block dim", "shmem", "nregs", "binary version", "cuda stream id",
             "shmem base_addr", "local mem base_addr", "nvbit version", "accelsim tracer version", "enable lineinfo"}  # fmt: skip
    return Header(
        kernel=name[1] if name else Path(path).name,
        grid=grid,
        block=block,
        shmem=integer("shmem", 0, top=MAX_SMEM_PER_BLOCK),
        nregs=integer("nregs", 0, top=MAX_REGS_PER_THREAD),
        binary_version=integer("binary version", 0),
        version=version,
        lineinfo=integer("enable lineinfo", 0, top=1),
        shmem_base=integer("shmem base_addr", 0, 16, _BASE_MAX),
        local_base=integer("local mem base_addr", 0, 16, _BASE_MAX),
        lines=n,
        extra={k: v for k, (_, v) in vals.items() if k not in known},
    )


_FIELD_NAMES = {
    K.F_LINENUM: "the source line number", K.F_PC: "the PC (hex, below 2^31)", K.F_MASK: "the active mask (hex, 32 bits)",
    K.F_NDST: "the destination count", K.F_DST: "a destination register R<n>", K.F_OPCODE: "the opcode",
    K.F_NSRC: "the source count", K.F_SRC: "a source register R<n>", K.F_WIDTH: "the memory width",
    K.F_MODE: "the address mode (0, 1 or 2)", K.F_ADDR: "a hex address", K.F_STRIDE: "the stride",
    K.F_DELTA: "an address delta (one per further active lane)", K.F_TRAILING: "the trailing fields",
    K.F_TB: "'thread block = x,y,z'", K.F_WARP: "'warp = <index>'", K.F_INSTS: "'insts = <count>'",
    K.F_GAP: "contiguous active lanes (address mode 1)",
}  # fmt: skip


def _error(path: str, st: np.ndarray, header: Header) -> ParseError:
    code, line, arg = int(st[K.S_ERR]), int(st[K.S_ERR_LINE]), int(st[K.S_ERR_ARG])
    if code == K.E_GARBAGE:
        what = _FIELD_NAMES.get(arg, "a field")
        extra = ""
        if arg == K.F_TRAILING:
            extra = {3: " (version 3: nothing after the addresses)", 4: " (version 4: at most the immediate)",
                     5: " (version 5: exactly one immediate)", 6: " (version 6: two immediates and Val|NoVal)"}[header.version]  # fmt: skip
        return ParseError(path, line, f"cannot parse this line: bad or missing {what}{extra} "
                          "(a garbage or truncated line; --skip-bad-lines skips such lines)")  # fmt: skip
    if code == K.E_TRUNCATED:
        return ParseError(path, line, f"warp {int(st[K.S_WARP])} of block ({int(st[K.S_CTA_X])},{int(st[K.S_CTA_Y])},"
                          f"{int(st[K.S_CTA_Z])}) ends after {arg} of its {int(st[K.S_EXPECT])} instructions "
                          "(a truncated file?)")  # fmt: skip
    if code == K.E_MIXED:
        if arg == 0:
            return ParseError(path, line, "a kernel header line inside the instruction stream: the file mixes launches "
                              "(import one kernel-N.traceg at a time)")  # fmt: skip
        return ParseError(path, line, "this thread block appeared before: the file mixes launches")
    if code == K.E_STRUCTURE:
        msg = {K.D_NO_TB: "an instruction outside '#BEGIN_TB' / 'thread block = ...'",
               K.D_NO_WARP: "an instruction before 'warp = j' and 'insts = N'",
               K.D_TOO_MANY: f"more instruction lines than the warp's 'insts = {int(st[K.S_EXPECT])}'",
               K.D_BEGIN_TWICE: "'#BEGIN_TB' before the previous block's '#END_TB' (a truncated block?)",
               K.D_END_OUTSIDE: "'#END_TB' without '#BEGIN_TB'"}[arg]  # fmt: skip
        return ParseError(path, line, msg)
    if code == K.E_RANGE:
        g, b = header.grid, header.block
        return ParseError(path, line, f"index outside the launch (grid {g}, block {b})")
    raise AssertionError(code)  # pragma: no cover


def parse_traceg(path, *, skip_bad_lines: bool = False) -> Parsed:
    """Parse one ``.traceg`` (or ``.traceg.xz``) file into trace columns."""
    p = str(path)
    require_file(p)
    if not p.endswith(".xz"):
        refuse_binary(p, "an Accel-Sim trace (text, or xz-compressed named .xz)")
    try:
        f = _open(p)
    except OSError as exc:
        raise read_error(p, exc) from None
    with f:
        buf = b""
        # Header: everything up to the first '#' line.
        while True:
            chunk = _read(f, p, 0)
            buf += chunk
            lines = buf.split(b"\n")
            body_at = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith(b"#")), None)
            if body_at is not None or not chunk:
                break
        if body_at is None:
            header_lines = lines
            if not buf.strip():
                raise ParseError(p, None, "empty file (no Accel-Sim header)")
        else:
            header_lines = lines[:body_at]
        header = _parse_header(p, header_lines)
        if body_at is None:
            raise ParseError(p, len(lines), "the file ends inside the header: no instruction stream (truncated?)")
        start = sum(len(ln) + 1 for ln in lines[: header.lines])
        data = buf[start:]

        g, b = header.grid, header.block
        n_ctas = g[0] * g[1] * g[2]
        wpb = -(-(b[0] * b[1] * b[2]) // WARP_SIZE)
        cfg = np.zeros(K.N_CFG, dtype=np.int64)
        cfg[[K.C_GX, K.C_GY, K.C_GZ, K.C_WPB]] = [g[0], g[1], g[2], wpb]
        cfg[K.C_LINEINFO] = header.lineinfo
        cfg[K.C_VERSION] = header.version
        cfg[K.C_SHBASE] = header.shmem_base
        cfg[K.C_LOBASE] = header.local_base
        cfg[K.C_ISZ] = 16 if header.binary_version >= 70 else 8
        cfg[K.C_SKIP] = 1 if skip_bad_lines else 0
        cfg[K.C_WINDOW] = WINDOW
        st = np.zeros(K.N_STATE, dtype=np.int64)
        st[K.S_LINE] = header.lines
        st[K.S_CTA] = -1
        st[K.S_WARP] = -1
        st[K.S_EXPECT] = -1
        st[K.S_PREV_END] = 1
        st[K.S_BB_GROUPS] = 1
        acc = np.zeros(K.N_ACC, dtype=np.float64)
        keys = np.zeros(K.HASH_SLOTS, dtype=np.uint64)
        vals = np.full(K.HASH_SLOTS, -1, dtype=np.int32)
        optab = np.zeros((64, K.T_N), dtype=np.int64)
        opcount = np.zeros(64, dtype=np.int64)
        names: list[str] = []
        regs = np.zeros((5, 256), dtype=np.int64)
        # A block seen twice means mixed launches; the check keeps one flag per block of
        # grids up to SEEN_BLOCKS blocks (beyond, the trace's seq check still refuses a repeated warp).
        seen_cta = np.zeros(n_ctas if n_ctas <= SEEN_BLOCKS else 0, dtype=np.bool_)
        cap = 1 << 16
        meta = np.zeros((cap, K.M_N), dtype=np.int64)
        addr = np.zeros((cap, WARP_SIZE), dtype=np.uint64)

        eof = False
        while True:
            if not eof:
                chunk = _read(f, p, int(st[K.S_LINE]))
                if chunk:
                    data += chunk
                else:
                    eof = True
                    if data and not data.endswith(b"\n"):
                        data += b"\n"  # a last line without newline: parse what is there
            end = data.rfind(b"\n") + 1
            if end == 0 and not eof:
                continue
            arr = np.frombuffer(data, dtype=np.uint8)
            st[K.S_POS] = 0
            while True:
                rc = K.parse_body(arr, end, st, acc, cfg, keys, vals, optab, opcount, regs, seen_cta, meta, addr)
                if rc == K.DONE:
                    break
                if rc == K.NEED_OPCODE:
                    o, ln = int(st[K.S_NEW_OFF]), int(st[K.S_NEW_LEN])
                    name = data[o : o + ln].decode("ascii", "replace")
                    idx = len(names)
                    if idx == optab.shape[0]:
                        optab = np.concatenate([optab, np.zeros_like(optab)])
                        opcount = np.concatenate([opcount, np.zeros_like(opcount)])
                    if idx >= K.HASH_SLOTS // 2:
                        raise ParseError(
                            p,
                            int(st[K.S_LINE]) + 1,
                            f"more than {K.HASH_SLOTS // 2} distinct opcodes: not an Accel-Sim trace?",
                        )
                    c = classify(name)
                    optab[idx] = [
                        c.space,
                        c.op,
                        c.width,
                        c.klass,
                        int(c.memory_class),
                        int(c.long_latency),
                        int(c.ends_block),
                        0,
                    ]
                    if not K.hash_insert(
                        keys, vals, np.uint64(K.fnv1a(arr, o, ln)), idx
                    ):  # pragma: no cover - 64-bit collision
                        raise ParseError(p, int(st[K.S_LINE]) + 1, f"opcode hash collision on {name!r}")
                    names.append(name)
                    continue
                if rc == K.OUT_FULL:
                    cap *= 2
                    meta = np.concatenate([meta, np.zeros_like(meta)])
                    addr = np.concatenate([addr, np.zeros_like(addr)])
                    continue
                raise _error(p, st, header)
            data = data[end:]
            if eof and not data:
                break
        if not K.finish(st, acc, regs) or st[K.S_IN_TB]:
            line = int(st[K.S_LINE])
            if not skip_bad_lines:
                raise ParseError(p, line, "the file ends inside a thread block (no '#END_TB', or a warp short of its "
                                 "'insts = N'): a truncated file (--skip-bad-lines keeps what is complete)")  # fmt: skip
            st[K.S_TRUNC_WARPS] += 1
    n = int(st[K.S_NROWS])
    columns = {
        "cta": meta[:n, K.M_CTA].astype(np.int32),
        "warp": meta[:n, K.M_WARP].astype(np.int32),
        "seq": meta[:n, K.M_SEQ].copy(),
        "pc": meta[:n, K.M_PC].astype(np.int32),
        "op": meta[:n, K.M_OP].astype(np.int8),
        "space": meta[:n, K.M_SPACE].astype(np.int8),
        "width": meta[:n, K.M_WIDTH].astype(np.int8),
        "mask": meta[:n, K.M_MASK].astype(np.uint32),
        "addr": addr[:n].copy() if n < addr.shape[0] // 2 else addr[:n],
    }
    counts = {
        "instruction_lines": int(st[K.S_INSTR_LINES]),
        "skipped_lines": int(st[K.S_SKIPPED]),
        "truncated_warps": int(st[K.S_TRUNC_WARPS]),
        "mixed_launch_lines_skipped": int(st[K.S_MIXED_SKIPPED]),
        "ldgsts_shared_halves": int(st[K.S_LDGSTS_SH]),
        "ldgsts_global_halves": int(st[K.S_LDGSTS_GL]),
        "memory_lines_all_lanes_off": int(st[K.S_MASK0_MEM]),
        "memory_instructions_without_addresses": int(st[K.S_NOADDR_MEM]),
        "memory_lines_unclassified": int(st[K.S_UNCLASSIFIED]),
        "warps": int(st[K.S_WARPS_SEEN]),
    }
    ilp = float(acc[K.A_ILP_SUM] / acc[K.A_BB_COUNT]) if acc[K.A_BB_COUNT] else 1.0
    mlp = float(acc[K.A_MLP_SUM] / acc[K.A_MLP_BB]) if acc[K.A_MLP_BB] else 1.0
    counts["basic_blocks"] = int(acc[K.A_BB_COUNT])
    counts["long_latency_loads"] = int(acc[K.A_LOADS])
    return Parsed(
        columns, header, {nm: int(opcount[i]) for i, nm in enumerate(names)}, counts, ilp, mlp, int(st[K.S_LINE])
    )


def read_kernelslist(path) -> tuple[list[Extent], list[str]]:
    """``kernelslist.g``: MemcpyHtoD extents and kernel trace file names, in order."""
    p = str(path)
    extents: list[Extent] = []
    kernels: list[str] = []
    for ln, line in enumerate(read_bytes(p).decode("utf-8", "replace").split("\n"), start=1):
        s = line.strip()
        if not s:
            continue
        if s.startswith("MemcpyHtoD"):
            parts = s.split(",")
            try:
                if len(parts) != 3 or len(parts[1]) > 40 or len(parts[2]) > 40:
                    raise ValueError
                base, size = int(parts[1], 16), int(parts[2])
                if size < 0 or base < 0 or base + size > ADDRESS_LIMIT:
                    raise ValueError
            except ValueError:
                raise ParseError(p, ln, f"expected 'MemcpyHtoD,<hex base>,<bytes>', got {quote_line(s, 80)}") from None
            if size:
                extents.append(Extent(base, size, f"{Path(p).name} line {ln}"))
        elif s.startswith("kernel"):
            kernels.append(s)
        elif s.startswith("Memcpy"):
            continue  # device-to-host copies: not inputs of a kernel
        else:
            raise ParseError(p, ln, f"expected 'MemcpyHtoD,...' or a kernel trace file name, got {quote_line(s, 80)}")
    return extents, kernels


# Accel-Sim's tracer names a launch's file kernel-N.traceg, or, since it records the
# CUDA context, kernel-N-ctx_0x<context>.traceg; either may end in .xz.
_KERNEL_FILE = re.compile(r"kernel-(\d+)(?:-ctx_0x[0-9a-fA-F]+)?\.trace")


def _kernel_number(name: str) -> int | None:
    m = _KERNEL_FILE.match(Path(name).name)
    return int(m.group(1)) if m else None


def resolve(path, kernel: int | None) -> tuple[str, list[Extent], str | None]:
    """The traceg file to read, the host-copy extents that precede it, and the kernelslist used."""
    p = Path(path)
    if os.path.isdir(p):
        kl = p / "kernelslist.g"
        if not os.path.isfile(kl):
            raise InputError(f"{p}: no kernelslist.g in this folder")
        extents, kernels = read_kernelslist(kl)
        if not kernels:
            raise InputError(f"{kl}: lists no kernel trace files")
        if kernel is None:
            if len(kernels) > 1:
                nums = ", ".join(str(_kernel_number(k)) for k in kernels)
                raise InputError(f"{kl}: lists {len(kernels)} kernels ({nums}); pick one with --kernel N")
            chosen = kernels[0]
        else:
            match = [k for k in kernels if _kernel_number(k) == kernel]
            if not match:
                nums = ", ".join(str(_kernel_number(k)) for k in kernels)
                raise InputError(f"{kl}: no kernel-{kernel} (it lists {nums})")
            chosen = match[0]
        # Extents: the copies listed before the chosen kernel.
        before = _copies_before(kl, chosen)
        f = p / chosen
        if not os.path.exists(f) and os.path.exists(p / (chosen + ".xz")):
            f = p / (chosen + ".xz")
        return str(f), [e for e in extents if e.origin in before], str(kl)
    if not os.path.isfile(p):
        raise InputError(f"{p}: no such file or folder")
    if kernel is not None and _kernel_number(p.name) not in (None, kernel):
        raise InputError(f"{p}: --kernel {kernel} does not match this file (kernel-{_kernel_number(p.name)})")
    kl = p.parent / "kernelslist.g"
    if os.path.isfile(kl):
        extents, kernels = read_kernelslist(kl)
        name = p.name
        listed = [k for k in kernels if k == name or k + ".xz" == name or k == name + ".xz"]
        if listed:
            before = _copies_before(kl, listed[0])
            return str(p), [e for e in extents if e.origin in before], str(kl)
    return str(p), [], None


def _copies_before(kl: Path, kernel_line: str) -> set[str]:
    out = set()
    for ln, line in enumerate(read_bytes(kl).decode("utf-8", "replace").split("\n"), start=1):
        s = line.strip()
        if s == kernel_line:
            break
        if s.startswith("MemcpyHtoD"):
            out.add(f"{kl.name} line {ln}")
    return out


def import_accelsim(path, *, kernel: int | None = None, objects: tuple[ObjectSpec, ...] = (),
                    skip_bad_lines: bool = False) -> tuple[dict[str, np.ndarray], KernelInfo]:  # fmt: skip
    """Read an Accel-Sim trace (file or folder with ``kernelslist.g``) into trace columns and metadata."""
    file, extents, kl = resolve(path, kernel)
    parsed = parse_traceg(file, skip_bad_lines=skip_bad_lines)
    cols = parsed.columns
    problem = coverage_problem(parsed.header.grid, parsed.header.block, len(cols["cta"]))
    if problem:
        raise ParseError(file, None, problem)
    found = infer_objects(cols["space"], cols["pc"], cols["op"], cols["width"], cols["mask"], cols["addr"],
                          explicit=objects, extents=extents)  # fmt: skip
    cols["obj"] = found.obj
    h = parsed.header
    classes = {k: 0 for k in CLASS_NAMES}
    for name, cnt in parsed.opcode_counts.items():
        classes[CLASS_NAMES[classify(name).klass]] += cnt
    # The shared half of an LDGSTS pair is the same instruction as its global half.
    pairs = min(parsed.counts["ldgsts_shared_halves"], parsed.counts["ldgsts_global_halves"])
    classes["ldst"] -= pairs
    executed = parsed.counts["instruction_lines"] - pairs
    assert set(classes) == set(INSTRUCTION_CLASSES)
    counts = dict(parsed.counts)
    counts["ldgsts_shared_half_missing"] = max(0, counts["ldgsts_global_halves"] - counts["ldgsts_shared_halves"])
    if counts["skipped_lines"]:
        log.warning(
            "%s: skipped %d bad line%s (--skip-bad-lines)",
            file,
            counts["skipped_lines"],
            "" if counts["skipped_lines"] == 1 else "s",
        )
    if counts["truncated_warps"]:
        log.warning("%s: %d warps are incomplete (truncated); kept what was read", file, counts["truncated_warps"])
    source: dict[str, Any] = {
        "format": "accelsim",
        "file": os.path.abspath(file),
        "tracer_version": h.version,
        "binary_version": h.binary_version,
        "lines": parsed.lines,
        "estimated": [],
        **counts,
        "objects": found.report["objects"],
        "rows_on_two_objects": found.report["rows_on_two_objects"],
        "memcpy_ranges": found.report["memcpy_ranges"],
        "memcpy_untouched": found.report["memcpy_untouched"],
    }
    if kl:
        source["kernelslist"] = os.path.abspath(kl)
    if "nvbit version" in h.extra:
        source["nvbit_version"] = h.extra["nvbit version"]
    info = KernelInfo(
        kernel=h.kernel,
        grid=h.grid,
        block=h.block,
        objects=found.objects,
        instructions=Instructions(executed=executed, warps=counts["warps"], **classes),
        regs_per_thread=h.nregs,
        smem_per_block=h.shmem,
        source=source,
        extra={"ilp": parsed.ilp, "mlp": parsed.mlp, "ilp_mlp": "register def-use chains over dynamic basic blocks, "
               "GPUPerf (Sim et al. 2012) Sec. 5.3", "basic_blocks": counts["basic_blocks"],
               "long_latency_loads": counts["long_latency_loads"]},
    )  # fmt: skip
    return cols, info
