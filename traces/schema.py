"""The trace contract: columns, codes and kernel metadata (DESIGN.md, "The trace").

One Parquet file per kernel launch, one row per warp-level memory instruction in
each warp's program order. The kernel's description travels as JSON in the schema
metadata key ``placement.kernel`` and is held in memory as :class:`KernelInfo`.
"""

from __future__ import annotations

import json
import math
import re
import logging
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import pyarrow as pa

from .codes import (  # noqa: F401  (the space and op codes, re-exported with the rest of the contract)
    ATOMIC,
    CONSTANT,
    GLOBAL,
    LOAD,
    LOCAL,
    OP_NAMES,
    READONLY,
    REDUCTION,
    SHARED,
    SHORT_OF_SPACE,
    SPACE_CODES,
    SPACE_NAMES,
    SPACE_SHORT,
    STORE,
    TEXTURE1D,
    TEXTURE2D,
)
from .errors import TraceError, shown
from .launch import (
    ADDRESS_LIMIT,
    MAX_COUNT,
    MAX_GRID,
    MAX_OBJECT_BYTES,
    MAX_REGS_PER_THREAD,
    MAX_SMEM_PER_BLOCK,
    SHARED_WINDOW,
    grid_warps,
    launch_problem,
)

SCHEMA_VERSION = 1
METADATA_KEY = b"placement.kernel"
WARP_SIZE = 32

WIDTHS = (1, 2, 4, 8, 16)

ARROW_SCHEMA = pa.schema(
    [
        pa.field("cta", pa.int32(), nullable=False),
        pa.field("warp", pa.int32(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("pc", pa.int32(), nullable=False),
        pa.field("op", pa.int8(), nullable=False),
        pa.field("space", pa.int8(), nullable=False),
        pa.field("width", pa.int8(), nullable=False),
        pa.field("mask", pa.uint32(), nullable=False),
        pa.field("addr", pa.list_(pa.field("lane", pa.uint64(), nullable=False), WARP_SIZE), nullable=False),
        pa.field("obj", pa.int16(), nullable=False),
    ]
)
COLUMNS = tuple(ARROW_SCHEMA.names)
# numpy dtype of each column once read; `addr` is (n, 32) of this dtype.
NUMPY_DTYPES = {
    "cta": "int32",
    "warp": "int32",
    "seq": "int64",
    "pc": "int32",
    "op": "int8",
    "space": "int8",
    "width": "int8",
    "mask": "uint32",
    "addr": "uint64",
    "obj": "int16",
}

INSTRUCTION_CLASSES = ("int", "fp32", "fp64", "sfu", "ldst", "sync", "branch")


@dataclass(frozen=True)
class ObjectInfo:
    """One data object (array) of the kernel, as the sample placement holds it."""

    id: int
    name: str
    space: str
    base: int
    size: int
    elem_bytes: int = 4
    shape: tuple[int, int] | None = None
    written: bool = False

    @property
    def end(self) -> int:
        return self.base + self.size


@dataclass(frozen=True)
class Instructions:
    """Per-kernel instruction totals of the sample run (warp-level counts).

    ``executed`` counts warp-instructions executed; ``issued`` adds replays where
    the source knows them. The classes split ``executed``.
    """

    executed: int
    warps: int
    issued: int | None = None
    int: int = 0
    fp32: int = 0
    fp64: int = 0
    sfu: int = 0
    ldst: int = 0
    sync: int = 0
    branch: int = 0


@dataclass(frozen=True)
class Measured:
    """A measured time of the sample placement."""

    time_ns: float
    gpu: str


@dataclass(frozen=True)
class KernelInfo:
    """The metadata of one trace (schema metadata key ``placement.kernel``).

    ``source`` says where the trace came from (``format``, ``file``) and what was
    estimated (``estimated``: a list of field names). ``extra`` carries
    importer- or generator-specific facts (for example ``ilp`` and ``mlp``).
    """

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    objects: tuple[ObjectInfo, ...]
    instructions: Instructions
    regs_per_thread: int = 0
    smem_per_block: int = 0
    measured: Measured | None = None
    source: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // WARP_SIZE)

    @property
    def ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def traced_ctas(self) -> int:
        """The blocks whose rows the trace holds: ``extra.traced_ctas`` where only some of the grid's were
        recorded (``placement trace --ctas``), else the grid's."""
        return int(self.extra.get("traced_ctas") or self.ctas)

    @property
    def launch_ctas(self) -> int:
        """The blocks of the launch the trace stands for: ``extra.launch_ctas`` where the trace is a smaller
        grid of the same blocks (a suite's ``launch_ctas``), else the grid's."""
        return int(self.extra.get("launch_ctas") or self.ctas)

    @property
    def n_ids(self) -> int:
        """The length of an array indexed by object id: the highest id + 1 (0 without objects)."""
        return max((o.id for o in self.objects), default=-1) + 1

    def object(self, name_or_id: str | int) -> ObjectInfo:
        for o in self.objects:
            if o.name == name_or_id or o.id == name_or_id:
                return o
        raise KeyError(name_or_id)

    def to_json(self) -> str:
        d = asdict(self)
        return json.dumps(d, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes, path: str = "<metadata>") -> "KernelInfo":
        try:
            d = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise TraceError(path, f"metadata is not valid JSON ({exc})", field="placement.kernel") from None
        except RecursionError:
            raise TraceError(path, "metadata is not valid JSON (nested too deeply)", field="placement.kernel") from None
        return kernel_info_from_dict(d, path)


_ARCH_KEY = re.compile(r"sm_[1-9][0-9]{1,2}")
"""A build's architecture in ``extra``'s per-architecture maps: sm_XY."""
_BUILD_KEY = re.compile(r"[^=,;\s]+=[^=,;\s]+(,[^=,;\s]+=[^=,;\s]+)*")
"""A placement's build in ``extra``'s per-placement maps: its moved objects, ``input=R`` or ``a=S/G,b=T``."""


MAX_MLP = 1e6
"""Above any MLP a warp can have (``cachesim.hierarchy`` refuses one as large)."""


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_regs(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_REGS_PER_THREAD


def _is_build_mlp(v) -> bool:
    return _is_number(v) and 1 <= v < MAX_MLP


MAX_INST_SCALE = 100.0
"""Above any ratio of two builds' instruction counts (``extra.inst_by_arch``)."""


def _is_inst_scale(v) -> bool:
    return _is_number(v) and 0 < v <= MAX_INST_SCALE


# what each per-architecture map of ``extra`` holds: (the value's word, its test, what it must be)
_BY_ARCH = {
    "regs": ("registers", _is_regs, f"in 0..{MAX_REGS_PER_THREAD}"),
    "mlp": ("MLP", _is_build_mlp, f"a number in [1, {MAX_MLP:g})"),
    "inst": ("instructions over the trace's", _is_inst_scale, f"a number in (0, {MAX_INST_SCALE:g}]"),
}
_BY_PLACEMENT = ("regs", "mlp")
"""The kinds a generator also gives per placement build (``*_by_placement``)."""


def _check_by_arch(by_arch, path: str, field: str, kind: str) -> None:
    """One ``{"sm_XY": value}`` map of ``extra`` (``regs_by_arch``, ``mlp_by_arch`` or one build's in a
    ``*_by_placement`` map), where a generator put it: each value that architecture's build's (``_BY_ARCH``)."""
    if by_arch is None:
        return
    word, ok, expect = _BY_ARCH[kind]
    name = field.removeprefix("extra.")
    if not isinstance(by_arch, dict):
        raise TraceError(path, f"{name} must be an object of sm_XY: {word}", field=field)
    for k, v in by_arch.items():
        if not _ARCH_KEY.fullmatch(k):
            raise TraceError(path, f"{name} key {shown(k)} is not an architecture like sm_90", field=field)
        if not ok(v):
            raise TraceError(path, f"{name}.{k} must be {expect}, got {shown(v)}", field=f"{field}.{k}")


def _check_by_placement(by_placement, path: str, kind: str) -> None:
    """``extra.regs_by_placement`` / ``extra.mlp_by_placement``, where a generator put it: {"obj=space,...":
    {"sm_XY": value}}, the registers or MLP of the build of each placement whose code the generator knows
    (``placement.occupancy.regs_for``, ``placement.builds.mlp_for``)."""
    if by_placement is None:
        return
    name = f"{kind}_by_placement"
    field = f"extra.{name}"
    if not isinstance(by_placement, dict):
        raise TraceError(path, f"{name} must be an object of placement: {{sm_XY: {_BY_ARCH[kind][0]}}}", field=field)
    for k, v in by_placement.items():
        if not isinstance(k, str) or not _BUILD_KEY.fullmatch(k):
            raise TraceError(path, f"{name} key {shown(k)} is not a placement like input=R", field=field)
        _check_by_arch(v, path, f"{field}.{k}", kind)


def _check_builds(extra: dict, path: str) -> None:
    """The build facts of ``extra``: ``mlp`` (GPUPerf's MLP of the trace's build: a number in [0, 1e6), 0
    meaning none), and where a generator put them the per-architecture and per-placement maps of registers
    and MLP (an MLP there is at least 1, the load itself) and the per-architecture instruction scale
    (``inst_by_arch``: each architecture's build's warp-instructions over the trace's, positive)."""
    mlp = extra.get("mlp")
    if mlp is not None and not (_is_number(mlp) and 0 <= mlp < MAX_MLP):
        raise TraceError(path, f"mlp must be a number in [0, {MAX_MLP:g}), got {shown(mlp)}", field="extra.mlp")
    for kind in _BY_ARCH:
        _check_by_arch(extra.get(f"{kind}_by_arch"), path, f"extra.{kind}_by_arch", kind)
        if kind in _BY_PLACEMENT:
            _check_by_placement(extra.get(f"{kind}_by_placement"), path, kind)


DLCM = ("ca", "cg")
"""Values of ``extra.dlcm``: the build's ``-Xptxas -dlcm`` (global loads cached at all levels, or in the L2 only;
``placement.memory.build_hierarchy_config`` routes them)."""


def check_block_counts(extra: dict, ctas: int, path: str) -> None:
    """``extra.traced_ctas`` (the blocks recorded, 1 to the grid's) and ``extra.launch_ctas`` (the blocks of the
    launch the trace stands for, the grid's or more, at most CUDA's largest grid): whole numbers."""
    top = math.prod(MAX_GRID)
    for key, lo, hi, span in (("traced_ctas", 1, ctas, f"in 1..{ctas} (the grid's)"),
                              ("launch_ctas", ctas, top, f"from the grid's {ctas} to CUDA's largest grid")):  # fmt: skip
        v = extra.get(key)
        if v is not None and not (type(v) is int and lo <= v <= hi):
            raise TraceError(path, f"{key} must be a whole number of blocks {span}, got {shown(v)}",
                             field=f"extra.{key}")  # fmt: skip


def check_const_operands(names, objects, path: str) -> None:
    """``extra.const_operands``, where a trace says which of its constant objects its build reads as instruction
    operands (``c[0x3][imm]``, no load instruction of their own, as a generator's SASS recipe marks them): a list
    of names of objects in constant memory."""
    if names is None:
        return
    constant = {o.name for o in objects if o.space == "constant"}
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise TraceError(path, f"const_operands must be a list of object names, got {shown(names)}",
                         field="extra.const_operands")  # fmt: skip
    for n in names:
        if n not in constant:
            those = ", ".join(sorted(constant)) or "none"
            raise TraceError(path, f"const_operands names {shown(n)}, which is not an object in constant memory "
                             f"(those are: {those})", field="extra.const_operands")  # fmt: skip


def _check_dlcm(dlcm, path: str) -> None:
    """``extra.dlcm``, where a trace says how its build caches global loads: one of :data:`DLCM`."""
    if dlcm is not None and dlcm not in DLCM:
        raise TraceError(path, f"dlcm must be one of {', '.join(map(repr, DLCM))} (-Xptxas -dlcm), got {shown(dlcm)}",
                         field="extra.dlcm")  # fmt: skip


NAME_FORBIDDEN = ",=;"
"""Characters an object's name may not hold: ``--place`` splits on them (``A=T,B=S/G;windows=2``)."""


def control_character(text: str) -> str | None:
    """The first character of ``text`` that is not printable (a newline splits the commands' header lines), or None:
    what the metadata refuses in a kernel name, and what the importers refuse first, naming their own line."""
    return next((c for c in text if not c.isprintable()), None)


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an object (``--place`` could not address it, or a table would break), or None."""
    if not name:
        return "is empty"
    bad = next((c for c in name if c in NAME_FORBIDDEN or c.isspace() or not c.isprintable()), None)
    if bad is not None:
        return f"holds {bad!r}; --place could not name it (no ',', '=', ';', spaces or control characters)"
    return None


def _req(d: dict, key: str, kind, path: str, where: str):
    if not isinstance(d, dict) or key not in d:
        raise TraceError(path, f"missing metadata key '{where}{key}'", field=f"{where}{key}")
    value = d[key]
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise TraceError(
            path,
            f"metadata key '{where}{key}' must be {getattr(kind, '__name__', kind)}, got {type(value).__name__} {value!r}",
            field=f"{where}{key}",
        )
    return value


def _dim3(d: dict, key: str, path: str) -> tuple[int, int, int]:
    v = _req(d, key, list, path, "")
    if len(v) != 3 or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in v):
        raise TraceError(path, f"metadata key '{key}' must be three positive integers, got {shown(v)}", field=key)
    return (v[0], v[1], v[2])


log = logging.getLogger(__name__)
_SAID: set[tuple[str, ...]] = set()  # the (file, keys) whose unread keys were said


def unread_keys(d: dict) -> list[str]:
    """The metadata keys the contract has no place for (``objects[0].writen``, ``mesured``), as field paths: read
    by nothing, so a misspelt optional key (``measured``, ``instructions.issued``) would go unnoticed. ``source``
    and ``extra`` are open by design."""

    def extra_keys(x: Any, cls: type, where: str) -> list[str]:
        known = {f.name for f in fields(cls)}
        return [f"{where}{k}" for k in x if k not in known] if isinstance(x, dict) else []

    out = extra_keys(d, KernelInfo, "")
    for i, o in enumerate(d.get("objects") or []):
        out += extra_keys(o, ObjectInfo, f"objects[{i}].")
    out += extra_keys(d.get("instructions"), Instructions, "instructions.")
    out += extra_keys(d.get("measured"), Measured, "measured.")
    return out


def kernel_info_from_dict(d: Any, path: str = "<metadata>") -> KernelInfo:
    """Validate a metadata dictionary and build a :class:`KernelInfo`.

    Sizes are bounded as ``traces.launch`` says, before anything is sized by them: an object
    holds at most ``MAX_OBJECT_BYTES`` (2^49, a GPU's virtual address space), its extent lies
    inside the 64-bit address space (the 32-bit shared window for a shared object).
    """
    if not isinstance(d, dict):
        raise TraceError(path, "metadata must be a JSON object", field="placement.kernel")
    version = _req(d, "schema_version", int, path, "")
    if version != SCHEMA_VERSION:
        raise TraceError(
            path,
            f"schema_version {version} is not supported (this tool reads {SCHEMA_VERSION})",
            field="schema_version",
        )
    kernel = _req(d, "kernel", str, path, "")
    bad = control_character(kernel)
    if bad is not None:  # a newline in it split the commands' header lines
        raise TraceError(path, f"kernel name {kernel[:40]!r} holds the control character {bad!r}", field="kernel")
    grid = _dim3(d, "grid", path)
    block = _dim3(d, "block", path)
    problem = launch_problem(grid, block)
    if problem:
        raise TraceError(path, problem, field="grid" if problem.startswith("grid") else "block")
    regs = _req(d, "regs_per_thread", int, path, "")
    smem = _req(d, "smem_per_block", int, path, "")
    if not 0 <= regs <= MAX_REGS_PER_THREAD:
        raise TraceError(
            path, f"regs_per_thread must be in 0..{MAX_REGS_PER_THREAD}, got {shown(regs)}", field="regs_per_thread"
        )
    if not 0 <= smem <= MAX_SMEM_PER_BLOCK:
        raise TraceError(
            path, f"smem_per_block must be in 0..{MAX_SMEM_PER_BLOCK}, got {shown(smem)}", field="smem_per_block"
        )

    objects = []
    seen_ids, seen_names = set(), set()
    for i, o in enumerate(_req(d, "objects", list, path, "")):
        w = f"objects[{i}]."
        oid = _req(o, "id", int, path, w)
        name = _req(o, "name", str, path, w)
        bad = name_problem(name)
        if bad:
            raise TraceError(path, f"object name {name[:40]!r} {bad}", field=w + "name")
        space = _req(o, "space", str, path, w)
        if space not in SPACE_CODES:
            raise TraceError(path, f"space '{space}' is not one of {', '.join(SPACE_NAMES)}", field=w + "space")
        base = _req(o, "base", int, path, w)
        size = _req(o, "size", int, path, w)
        elem = _req(o, "elem_bytes", int, path, w)
        written = _req(o, "written", bool, path, w)
        if "shape" not in o:
            raise TraceError(path, f"missing metadata key '{w}shape'", field=w + "shape")
        shape = o["shape"]
        if shape is not None:
            if not (
                isinstance(shape, list)
                and len(shape) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in shape)
            ):
                raise TraceError(path, f"shape must be null or [rows, cols], got {shape!r}", field=w + "shape")
            shape = (shape[0], shape[1])
        if not 0 <= oid <= 32767:
            raise TraceError(path, f"object id {oid} outside 0..32767", field=w + "id")
        if oid in seen_ids:
            raise TraceError(path, f"object id {oid} used twice", field=w + "id")
        if name in seen_names:
            raise TraceError(path, f"object name '{name}' used twice", field=w + "name")
        if base < 0:
            raise TraceError(path, f"object '{name}' has base {base}; it must be >= 0", field=w + "base")
        if size <= 0:
            raise TraceError(path, f"object '{name}' has size {size}; it must be > 0", field=w + "size")
        if elem not in WIDTHS:
            raise TraceError(path, f"object '{name}' has elem_bytes {elem}; it must be one of {WIDTHS}",
                             field=w + "elem_bytes")  # fmt: skip
        if size > MAX_OBJECT_BYTES:
            raise TraceError(path, f"object '{name}' has {shown(size)} bytes; an object holds at most 2^49 "
                                   "(a GPU's 49-bit virtual address space, traces/launch.py)", field=w + "size")  # fmt: skip
        top = SHARED_WINDOW if space == "shared" else ADDRESS_LIMIT
        if base + size > top:
            raise TraceError(path, f"object '{name}' [{base:#x}, +{size}) ends beyond the {space} address space "
                             f"({top:#x})", field=w + "size")  # fmt: skip
        if shape is not None and shape[0] * shape[1] * elem > size:
            raise TraceError(
                path, f"object '{name}' shape {shape} x {elem} B exceeds its size {size}", field=w + "shape"
            )
        seen_ids.add(oid)
        seen_names.add(name)
        objects.append(ObjectInfo(oid, name, space, base, size, elem, shape, written))

    ins = _req(d, "instructions", dict, path, "")
    w = "instructions."
    counts = {k: _req(ins, k, int, path, w) for k in ("executed", "warps")}
    for k in ("issued",) + INSTRUCTION_CLASSES:
        if k in ins and ins[k] is not None:
            counts[k] = _req(ins, k, int, path, w)
    for k, v in counts.items():
        if not 0 <= v <= MAX_COUNT:
            raise TraceError(path, f"instruction count must be in 0..2^62, got {shown(v)}", field=w + k)
    over = next((k for k in INSTRUCTION_CLASSES if counts.get(k, 0) > counts["executed"]), None)
    if over:  # a class is a part of the executed warp-instructions
        raise TraceError(path, f"{counts[over]:,} {over} warp-instructions, more than the {counts['executed']:,} "
                         "executed", field=w + over)  # fmt: skip
    if counts["warps"] > grid_warps(grid, block):
        raise TraceError(path, f"{counts['warps']} warps, but grid {grid} x block {block} runs {grid_warps(grid, block)}",
                         field=w + "warps")  # fmt: skip
    instructions = Instructions(**counts)

    measured = None
    if d.get("measured") is not None:
        m = _req(d, "measured", dict, path, "")
        t = _req(m, "time_ns", float, path, "measured.")
        if not (isinstance(t, float) or abs(t) < 1e300) or not 0 <= float(t) < math.inf:
            raise TraceError(
                path, f"measured time must be a finite number of ns >= 0, got {shown(t)}", field="measured.time_ns"
            )
        measured = Measured(float(t), _req(m, "gpu", str, path, "measured."))
    source = d.get("source") or {}
    extra = d.get("extra") or {}
    if not isinstance(source, dict) or not isinstance(extra, dict):
        raise TraceError(path, "metadata keys 'source' and 'extra' must be objects", field="source")
    _check_builds(extra, path)
    _check_dlcm(extra.get("dlcm"), path)
    check_const_operands(extra.get("const_operands"), objects, path)
    check_block_counts(extra, math.prod(grid), path)
    unread = unread_keys(d)
    if unread and (path, *unread) not in _SAID:  # once a file: a command reads its metadata several times
        _SAID.add((path, *unread))
        keys = ", ".join(f"'{k}'" for k in unread[:5]) + (f" and {len(unread) - 5} more" if len(unread) > 5 else "")
        log.warning("%s: metadata %s not part of the trace format; ignored", path,
                    f"key {keys} is" if len(unread) == 1 else f"keys {keys} are")  # fmt: skip
    return KernelInfo(
        kernel=kernel,
        grid=grid,
        block=block,
        objects=tuple(objects),
        instructions=instructions,
        regs_per_thread=regs,
        smem_per_block=smem,
        measured=measured,
        source=source,
        extra=extra,
        schema_version=version,
    )
