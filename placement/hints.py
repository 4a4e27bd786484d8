"""The CUDA changes a placement asks for, object by object, ready to paste.

For each object a placement moves: the declarations (a ``__constant__`` array, a
``__shared__`` tile), the kernel's new parameter, the code in the kernel (the read, or
the staging loop with the tile sizes and origins the trace gives: ``Terms.staging`` and
``placement.tiles``) and the host code (``cudaMemcpyToSymbol``, the texture object
setup). The element type is not in the trace, only its size: 4 bytes is written
``float``, 8 ``double``, 2 ``short``, 1 ``unsigned char``, 16 ``float4``, and an object
written by atomics only (a histogram's bins) ``unsigned int`` / ``unsigned long long``;
use the array's own. A texture of doubles holds them as ``int2`` texels, joined again by
``__hiloint2double`` (:data:`TEXELS`). ``translation_unit(hints)`` wraps the hints of one placement in a
complete ``.cu`` file (the tests compile them with ``nvcc -c -arch=sm_80``).

Names used in the snippets: the object's pointer keeps its name (``N``); ``i`` is the
index the kernel used for a 1D object, ``row`` and ``col`` for a 2D one; ``v_N`` receives
the element read. Everything a snippet declares carries the object's name (``res_N``,
``td_N``, ``t_N``, ``s_N``), so the snippets of one placement paste together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Mapping

import traces

from . import units
from .gpu import Gpu
from .placements import STAGING_SOURCE, is_staged
from .tiles import Origin

TYPES = {1: "unsigned char", 2: "short", 4: "float", 8: "double", 16: "float4"}
ATOMIC_TYPES = {4: "unsigned int", 8: "unsigned long long"}
"""An object written by atomics only is a histogram's counters (atomicAdd of unsigned int / unsigned long long)."""
TEXELS = {"double": "int2"}
"""Element types no texture format has, and the texel that holds them: CUDA's channel formats have no 64-bit float
(``tex1Dfetch<double>`` does not compile), so a texture of doubles holds their two 32-bit halves, which
``__hiloint2double`` puts back together (:func:`_fetch`)."""
# Families whose __ldg of an int index expression pays extra address arithmetic (configs/addressing.toml,
# [<family>.offset_leading], measured from nvcc's SASS for sm_75 to sm_90)
LDG_OFFSET_FAMILIES = ("turing", "ampere", "ada", "hopper")


@dataclass(frozen=True)
class Hint:
    """The code change for one object."""

    object: str
    before: str
    after: str
    summary: str
    declarations: str = ""
    """File-scope code: ``__constant__`` arrays, the tile's size constants."""
    kernel_params: str = ""
    """The kernel parameter(s) that replace the object's pointer (empty: a symbol, no parameter)."""
    kernel: str = ""
    """Code inside the kernel."""
    host_params: str = ""
    """What the host code starts from (a host or device array)."""
    host: str = ""
    """Host code: copies, texture objects."""
    notes: tuple[str, ...] = ()
    incomplete: str = ""
    """Why the code cannot be pasted as is (a tile origin to set by hand); empty when it can."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "object": self.object, "from": self.before, "to": self.after, "summary": self.summary,
            "declarations": self.declarations, "kernel_params": self.kernel_params, "kernel": self.kernel,
            "host_params": self.host_params, "host": self.host, "notes": list(self.notes),
            "incomplete": self.incomplete,
        }  # fmt: skip

    def text(self) -> str:
        out = [f"{self.object}: {self.before} -> {self.after}: {self.summary}"]
        if self.declarations:
            out += ["  // file scope", _indent(self.declarations, 2)]
        if self.kernel_params:
            out += [f"  // kernel parameter, instead of {self.object}'s pointer", f"  {self.kernel_params}"]
        if self.kernel:
            out += ["  // in the kernel", _indent(self.kernel, 2)]
        if self.host:
            out += [f"  // host ({self.host_params})" if self.host_params else "  // host", _indent(self.host, 2)]
        out += [f"  note: {n}" for n in self.notes]
        return "\n".join(out)

    def translation_unit(self) -> str:
        """A complete ``.cu`` file holding the hint, for ``nvcc -c`` (the index variables declared around it)."""
        return translation_unit((self,))


def translation_unit(hs: "tuple[Hint, ...] | list[Hint]") -> str:
    """A complete ``.cu`` file holding the hints of one placement pasted together, for ``nvcc -c``: their
    declarations at file scope, their parameters and kernel code in one kernel (the index variables declared
    around it), their host code in one host function."""
    params = ", ".join(h.kernel_params for h in hs if h.kernel_params)
    host_params = ", ".join(h.host_params for h in hs if h.host and h.host_params)
    host_code = "\n".join(h.host for h in hs if h.host)
    host = f"void placement_hint_host({host_params})\n{{\n{_indent(host_code, 4)}\n}}\n" if host_code else ""
    return (
        "#include <cuda_runtime.h>\n\n"
        + "".join(f"{h.declarations}\n" for h in hs if h.declarations)
        + f"\n__global__ void placement_hint_kernel({params})\n{{\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
        "    int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    (void)i; (void)row; (void)col;\n" + "".join(f"{_indent(h.kernel, 4)}\n" for h in hs if h.kernel) + "}\n\n"
        f"{host}"
    )


def _indent(text: str, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + line if line else line for line in text.splitlines())


def _ident(name: str) -> str:
    """A C identifier from an object name."""
    s = re.sub(r"\W", "_", name)
    return s if s and not s[0].isdigit() else f"_{s}"


def _type(o: traces.ObjectInfo, writeback: str = "none") -> str:
    if writeback == "atomic" and o.elem_bytes in ATOMIC_TYPES:
        return ATOMIC_TYPES[o.elem_bytes]
    return TYPES.get(o.elem_bytes, "float")


def _type_why(o: traces.ObjectInfo, t: str, writeback: str = "none") -> str:
    """Where the element type ``t`` of ``o`` comes from (a comment beside the declaration)."""
    if writeback == "atomic" and o.elem_bytes in ATOMIC_TYPES:
        return f"{t}: {o.name} is written by atomics only, a histogram's counts; use the array's own type"
    return (
        f"{t}: {o.name}'s element type is not in the trace, only its size ({o.elem_bytes} bytes); use the array's own"
    )


def _zero(t: str) -> str:
    """A zero of element type ``t`` (``(float4)0`` does not compile: the vector type has ``make_float4``)."""
    return "make_float4(0.f, 0.f, 0.f, 0.f)" if t == "float4" else f"({t})0"


def _fetch(n: str, t: str, coords: str, two_d: bool = False) -> tuple[str, str]:
    """The expression that reads one element of type ``t`` from texture object ``t_<n>`` at ``coords`` (an index, or
    ``x, y``), and the file-scope helper it needs (empty for a type with a texture format of its own)."""
    fn, texel = ("tex2D", "float x, float y") if two_d else ("tex1Dfetch", "int i")
    if t not in TEXELS:
        return f"{fn}<{t}>(t_{n}, {coords})", ""
    p = TEXELS[t]
    args = "x, y" if two_d else "i"
    helper = (f"__device__ __forceinline__ {t} fetch_{n}(cudaTextureObject_t t, {texel})   // {t} has no texture "
              f"format: its texels are {p}, the two 32-bit halves\n"
              f"{{\n    const {p} h = {fn}<{p}>(t, {args});\n    return __hiloint2double(h.y, h.x);\n}}")  # fmt: skip
    return f"fetch_{n}(t_{n}, {coords})", helper


def _index(o: traces.ObjectInfo) -> str:
    return f"row * {o.shape[1]} + col" if o.shape else "i"


def _sm(gpu: Gpu) -> str:
    return f"sm_{gpu.compute_capability[0]}{gpu.compute_capability[1]}"


def constant(o: traces.ObjectInfo, gpu: Gpu, divergent_replays: int) -> Hint:
    n, t = _ident(o.name), _type(o)
    elems = o.size // o.elem_bytes
    notes = [f"{units.nbytes(o.size)} of the {units.nbytes(gpu.memory.const_bank_bytes)} constant bank "
             "(all __constant__ arrays together)"]  # fmt: skip
    if divergent_replays:
        notes.append(f"warps read several addresses of {o.name} at once: constant memory serializes a warp's "
                     f"distinct addresses (predicted: {units.count(divergent_replays)} replays); it pays where a warp "
                     "reads one address")  # fmt: skip
    return Hint(
        o.name,
        "",
        "C",
        f"constant memory: a __constant__ array filled by cudaMemcpyToSymbol; drop the {o.name} parameter",
        declarations=f"__constant__ {t} c_{n}[{elems}];",
        kernel=f"{t} v_{n} = c_{n}[{_index(o)}];   // was {o.name}[{_index(o)}]",
        host_params=f"const {t}* h_{n}",
        host=f"cudaMemcpyToSymbol(c_{n}, h_{n}, {elems} * sizeof({t}));   // before the launch",
        notes=tuple(notes),
    )


def readonly(o: traces.ObjectInfo, gpu: Gpu) -> Hint:
    n, t = _ident(o.name), _type(o)
    notes = [
        f"on {gpu.name} ({_sm(gpu)}) the model prices __ldg, as written here",
    ]
    if gpu.arch in LDG_OFFSET_FAMILIES:
        notes.append("on sm_75..sm_90, __ldg of an int index expression (__ldg(&N[(y + k) * W + x])) recomputes the "
                     "64-bit address per access, extra address arithmetic the model assumes; plain loads through a "
                     "const T* __restrict__ pointer (N[(y + k) * W + x]) get the offsets folded in and do not pay it, "
                     "and nvcc may still route them through the read-only path (LDG.E.CONSTANT)")  # fmt: skip
    else:
        notes.append("a const T* __restrict__ pointer lets nvcc use the read-only path for plain loads too; __ldg "
                     "makes it explicit")  # fmt: skip
    return Hint(
        o.name,
        "",
        "R",
        "the read-only data path: a const __restrict__ pointer, reads through __ldg",
        kernel_params=f"const {t}* __restrict__ {n}",
        kernel=f"{t} v_{n} = __ldg(&{n}[{_index(o)}]);   // was {o.name}[{_index(o)}]",
        notes=tuple(notes),
    )


ALIGN_1D = (
    "the bound pointer d_{n} must be a multiple of the device's texture alignment "
    "(cudaDeviceProp::textureAlignment, cudaDevAttrTextureAlignment); cudaMalloc's pointers are. For an "
    "array that starts at an offset inside an allocation, bind the allocation's start instead (devPtr and "
    "sizeInBytes of the whole allocation) and add the offset, in elements, to tex1Dfetch's index"
)


def _texture1d_host(o: traces.ObjectInfo) -> str:
    """The host code that makes the 1D texture object ``t_<name>`` over the device array ``d_<name>``."""
    n, t = _ident(o.name), _type(o)
    elems = o.size // o.elem_bytes
    return (
        f"// d_{n} must be aligned to cudaDeviceProp::textureAlignment (cudaMalloc's pointers are)\n"
        f"cudaResourceDesc res_{n} = {{}};\n"
        f"res_{n}.resType = cudaResourceTypeLinear;\n"
        f"res_{n}.res.linear.devPtr = d_{n};\n"
        f"res_{n}.res.linear.desc = cudaCreateChannelDesc<{TEXELS.get(t, t)}>();\n"
        f"res_{n}.res.linear.sizeInBytes = {elems} * sizeof({t});\n"
        f"cudaTextureDesc td_{n} = {{}};\n"
        f"td_{n}.readMode = cudaReadModeElementType;\n"
        f"cudaTextureObject_t t_{n} = 0;\n"
        f"cudaCreateTextureObject(&t_{n}, &res_{n}, &td_{n}, nullptr);\n"
        f"// launch with t_{n} in place of d_{n}; afterwards cudaDestroyTextureObject(t_{n});"
    )


def texture1d(o: traces.ObjectInfo, gpu: Gpu) -> Hint:
    n, t = _ident(o.name), _type(o)
    elems = o.size // o.elem_bytes
    fetch, helper = _fetch(n, t, _index(o))
    return Hint(
        o.name,
        "",
        "T",
        "a 1D texture object over the existing device array, read with tex1Dfetch",
        declarations=helper,
        kernel_params=f"cudaTextureObject_t t_{n}",
        kernel=f"{t} v_{n} = {fetch};   // was {o.name}[{_index(o)}]",
        host_params=f"{t}* d_{n}",
        host=_texture1d_host(o),
        notes=(
            f"{units.count(elems)} elements of the {units.count(gpu.memory.tex1d_max_elems)} a 1D texture of linear "
            "memory may hold",
            ALIGN_1D.format(n=n),
        ),
    )


def texture2d(o: traces.ObjectInfo, gpu: Gpu) -> Hint:
    n, t = _ident(o.name), _type(o)
    rows, cols = o.shape
    fetch, helper = _fetch(n, t, "col, row", two_d=True)
    host = (
        f"{t}* d_{n}2 = nullptr;\n"
        f"size_t {n}_pitch = 0;\n"
        f"cudaMallocPitch((void**)&d_{n}2, &{n}_pitch, {cols} * sizeof({t}), {rows});\n"
        f"cudaMemcpy2D(d_{n}2, {n}_pitch, h_{n}, {cols} * sizeof({t}), {cols} * sizeof({t}), {rows}, "
        "cudaMemcpyHostToDevice);\n"
        f"cudaResourceDesc res_{n} = {{}};\n"
        f"res_{n}.resType = cudaResourceTypePitch2D;\n"
        f"res_{n}.res.pitch2D.devPtr = d_{n}2;   // cudaMallocPitch: aligned to textureAlignment\n"
        f"res_{n}.res.pitch2D.desc = cudaCreateChannelDesc<{TEXELS.get(t, t)}>();\n"
        f"res_{n}.res.pitch2D.width = {cols};\n"
        f"res_{n}.res.pitch2D.height = {rows};\n"
        f"res_{n}.res.pitch2D.pitchInBytes = {n}_pitch;   // a multiple of texturePitchAlignment\n"
        f"cudaTextureDesc td_{n} = {{}};\n"
        f"td_{n}.addressMode[0] = cudaAddressModeClamp;\n"
        f"td_{n}.addressMode[1] = cudaAddressModeClamp;\n"
        f"td_{n}.filterMode = cudaFilterModePoint;\n"
        f"td_{n}.readMode = cudaReadModeElementType;\n"
        f"td_{n}.normalizedCoords = 0;\n"
        f"cudaTextureObject_t t_{n} = 0;\n"
        f"cudaCreateTextureObject(&t_{n}, &res_{n}, &td_{n}, nullptr);\n"
        f"// launch with t_{n}; afterwards cudaDestroyTextureObject(t_{n}); cudaFree(d_{n}2);"
    )
    return Hint(
        o.name,
        "",
        "2T",
        f"a 2D texture object ({rows} rows x {cols} columns) over a pitched copy, read with tex2D",
        declarations=helper,
        kernel_params=f"cudaTextureObject_t t_{n}",
        kernel=f"{t} v_{n} = {fetch};   // x = column, y = row; was {o.name}[{_index(o)}]",
        host_params=f"const {t}* h_{n}",
        host=host,
        notes=(
            f"{gpu.name}'s 2D texture limit: {units.count(gpu.memory.tex2d_max_height)} rows x "
            f"{units.count(gpu.memory.tex2d_max_width)} columns; cudaMallocPitch aligns each row",
            "a pitch2D texture needs its start aligned to cudaDeviceProp::textureAlignment and its row pitch a "
            "multiple of cudaDeviceProp::texturePitchAlignment: cudaMallocPitch's copy has both. To bind an "
            "existing device array instead, it needs both too (else copy it, or use cudaMallocArray, "
            "cudaMemcpy2DToArray and a cudaResourceTypeArray resource); an array at an offset inside an "
            "allocation is bound from an aligned row and read with the offset's rows and columns added to "
            "tex2D's y and x",
        ),
    )


def plain_global(o: traces.ObjectInfo, before: str, writeback: str = "none") -> Hint:
    n, t = _ident(o.name), _type(o, writeback)
    const = "" if o.written else "const "
    was = {"T": f"tex1Dfetch<{t}>(t_{n}, i)", "2T": f"tex2D<{t}>(t_{n}, col, row)", "C": f"c_{n}[...]",
           "R": f"__ldg(&{n}[...])"}.get(before, f"{n}[...]")  # fmt: skip
    return Hint(
        o.name,
        before,
        "G",
        "a plain device pointer in global memory",
        kernel_params=f"{const}{t}* {n}",
        kernel=f"{t} v_{n} = {n}[{_index(o)}];   // was {was}",
    )


def out_of_shared(o: traces.ObjectInfo, info: traces.KernelInfo) -> Hint:
    n, t = _ident(o.name), _type(o)
    elems = o.size // o.elem_bytes
    return Hint(
        o.name,
        "S",
        "G",
        "the block's shared array becomes its slice of a global array (one slice per block)",
        kernel_params=f"{t}* g_{n}",
        kernel=(
            f"{t}* {n} = g_{n} + (size_t){elems} * (blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));"
            f"   // was __shared__ {t} {n}[{elems}]\n{t} v_{n} = {n}[i % {elems}];"
        ),
        host_params=f"{t}** d_{n}",
        host=f"cudaMalloc((void**)d_{n}, (size_t){info.launch_ctas} * {elems} * sizeof({t}));   // {info.launch_ctas} blocks",
    )


_TID = "threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)"
_NTHREADS = "blockDim.x * blockDim.y * blockDim.z"
_TY, _BY = "threadIdx.y + blockDim.y * threadIdx.z", "blockDim.y * blockDim.z"  # the 2D copy loop's rows of threads
# The staging code's pieces for a 2D tile (rows x pitch, origin row0/col0) and a 1D one (origin first)
_FORMS = {
    "decl": ("__shared__ {t} s_{n}[{rows}][{stride}];", "__shared__ {t} s_{n}[{size}];"),
    "where": ("(({n}_row0 + r) * {cols} + {n}_col0 + c)", "({n}_first + q)"),
    # "where" clamped to the array instead of checked ("inside"): the branch-free copy of ;unrolled
    "clamped": (
        "(min({n}_row0 + r, {last_row}) * {cols} + min({n}_col0 + c, {last_col}))",
        "min({n}_first + q, {last})",
    ),  # fmt: skip
    "inside": ("{n}_row0 + r < {nrows} && {n}_col0 + c < {cols}", "{n}_first + q < {elems}"),
    "cell": ("s_{n}[r][c]", "s_{n}[q]"),
    "read": ("s_{n}[row - {n}_row0][col - {n}_col0]", "s_{n}[i - {n}_first]"),
    "orig": ("{name}[row * {cols} + col]", "{name}[i]"),
    "origin": ("const int {n}_row0 = {row0};\nconst int {n}_col0 = {col0};", "const int {n}_first = {col0};"),
    "split": ("const int r = q / {pitch}, c = q % {pitch};", ""),
}


def _unrolled_head(rowwise: bool, block: tuple[int, int, int], rows: int, pitch: int, size: int) -> str:
    """The head of the copy loop that ``;unrolled`` prices (``placement.staging``, "Rounds of the copy"): the traced
    block's dimensions as compile-time steps and bounds under ``#pragma unroll``. With the source index clamped
    (``_FORMS["clamped"]``) rather than checked, its body has no branch, and nvcc 13 for sm_86 unrolls it by 4 with
    the remainder first and issues each batch's loads together (tests/test_hints.py reads it off the SASS), where
    the checked loop of run-time steps is one load then its store."""
    bx, by, bz = block
    if rowwise:
        return (f"#pragma unroll\nfor (int r = threadIdx.y + {by} * threadIdx.z; r < {rows}; r += {by * bz})\n"
                f"    #pragma unroll\n    for (int c = threadIdx.x; c < {pitch}; c += {bx}) {{")  # fmt: skip
    tid = f"threadIdx.x + {bx} * (threadIdx.y + {by} * threadIdx.z)"
    return f"#pragma unroll\nfor (int q = {tid}; q < {size}; q += {bx * by * bz}) {{"


def _load(n: str, t: str, source: str, where: str) -> str:
    """The expression that reads element ``where`` of object ``n`` from its staging source."""
    if source == "texture1d":
        return _fetch(n, t, where)[0]
    return {"global": f"{n}[{where}]", "readonly": f"__ldg(&{n}[{where}])"}[source]


def staged(o: traces.ObjectInfo, space: str, staging: Mapping[str, Any], origin: Origin | None, writeback: str,
           loads: bool = True, block: tuple[int, int, int] | None = None) -> Hint:  # fmt: skip
    """The staging loop of one object (``traces.staging``'s model, written as CUDA): the flattened loop over the
    tile, or for a 2D tile the textbook 2D loop over the block's own threads where the model copies it so
    (``traces.staging.copy_columns`` of the kernel's ``block``). A tile as large as the object starts at 0 in
    every block; origins that are a per-window table (``Origin.row_table``) are a ``__constant__`` table."""
    n, t = _ident(o.name), _type(o, writeback)
    tile = staging.get("tiles", {}).get(o.name, {"bytes": o.size, "pitch": o.size // o.elem_bytes})
    pitch = max(int(tile["pitch"]), 1)
    pad = max(int(tile.get("pad", 0)), 0)
    stride = f"{pitch} + {pad}" if pad else f"{pitch}"
    rows = max(int(tile["bytes"]) // ((pitch + pad) * o.elem_bytes), 1)
    windows = int(staging.get("windows", 1))
    source = STAGING_SOURCE.get(space, "global")
    two_d = o.shape is not None
    cols = o.shape[1] if two_d else 0
    nrows = o.shape[0] if two_d else 1
    elems = o.size // o.elem_bytes
    notes = []
    r0 = origin.row if origin and origin.row is not None else None
    c0 = origin.col if origin and origin.col is not None else None
    r_table = origin.row_table if origin and r0 is not None else ()
    c_table = origin.col_table if origin and c0 is not None else ()
    misses = origin.misses if origin is not None else 0
    # a tile as wide (as high) as the object starts at column (row) 0 in every block and window
    whole_r, whole_c = (rows >= nrows if two_d else True), pitch >= (cols if two_d else elems)
    if whole_r and (r0 is None or misses):
        r0, r_table = "0", ()
    if whole_c and (c0 is None or misses):
        c0, c_table = "0", ()
    if whole_r and whole_c:
        misses = 0
    if r0 is not None and c0 is not None and misses:
        notes.append(f"the tile origins fit {origin.points - misses} of {origin.points} blocks x windows; "
                     "the others (edge blocks) start elsewhere: check them")  # fmt: skip
    incomplete = ""
    if r0 is None or c0 is None:
        notes.append("no formula fits the tiles' origins: set the block's first element of the tile by hand")
        incomplete = f"no formula fits the origins of {o.name}'s tiles: they are to be set by hand"
    used = origin.windows if origin is not None and 0 < origin.windows < windows else windows
    if used > 1 and origin is not None and origin.length:
        k = origin.length
        span = "access j" if k == 1 else f"accesses {k} j to {k} j + {k - 1}"
        notes.append(f"window j holds each warp's {span} of {o.name} in program order (from 0): "
                     "their reads go inside the loop, after the copy")  # fmt: skip
    if used < windows:
        notes.append(f"the last {windows - used} of the model's {windows} windows hold no access of {o.name}: the "
                     f"loop runs {used}")  # fmt: skip
    tables = []
    for dim, table in (("row", r_table), ("col" if two_d else "first", c_table)):
        if table:
            tables.append(f"__constant__ int {n}_{dim}_of[{len(table)}] = {{{', '.join(map(str, table))}}};"
                          f"   // {o.name}'s tile origin per window j, beside the blocks' part")  # fmt: skip
    if r_table:
        r0 = f"{n}_row_of[j]" if r0 == "0" else f"{r0} + {n}_row_of[j]"
    if c_table:
        cn = f"{n}_col_of[j]" if two_d else f"{n}_first_of[j]"
        c0 = cn if c0 == "0" else f"{c0} + {cn}"
    row0 = r0 if r0 is not None else "0 /* the block's first row of the tile */"
    col0 = c0 if c0 is not None else f"0 /* the block's first {'column' if two_d else 'element'} of the tile */"
    size = rows * pitch
    f = {k: v[0 if two_d else 1].format(t=t, n=n, name=o.name, rows=rows, pitch=pitch, size=size, cols=cols,
                                       nrows=nrows, elems=elems, row0=row0, col0=col0, stride=stride,
                                       last_row=nrows - 1, last_col=cols - 1, last=elems - 1)
         for k, v in _FORMS.items()}  # fmt: skip
    padding = (f"; each row padded by {pad} element{'s' if pad != 1 else ''}, which moves the kernel's accesses of a "
               "column to other banks (fewer bank conflicts)") if pad and two_d else ""  # fmt: skip
    decl = f"{f['decl']}   // {units.nbytes(int(tile['bytes']))} per block{padding}; {_type_why(o, t, writeback)}"
    where, inside, cell, read, orig, origin_code, split = (f[k] for k in ("where", "inside", "cell", "read", "orig",
                                                                          "origin", "split"))  # fmt: skip
    helper = _fetch(n, t, where)[1] if source == "texture1d" else ""
    fetch = _load(n, t, source, where)
    param = {"global": f"{'' if o.written else 'const '}{t}* {n}", "readonly": f"const {t}* __restrict__ {n}",
             "texture1d": f"cudaTextureObject_t t_{n}"}[source]  # fmt: skip
    loop = f"for (int q = {_TID}; q < {size}; q += {_NTHREADS}) {{"
    from traces.staging import copy_columns  # numba's kernels: loaded by the evaluation the hints come from

    rowwise = two_d and block is not None and copy_columns(block, pitch, True) > 0
    if rowwise:
        loop = (f"for (int r = {_TY}; r < {rows}; r += {_BY}) for (int c = threadIdx.x; c < {pitch}; "
                "c += blockDim.x) {")  # fmt: skip
        split = ""
    unrolled = bool(staging.get("unrolled")) and block is not None
    copy_loop, copy_body = loop, f"if ({inside}) {cell} = {fetch};"
    if unrolled:  # the copy ;unrolled prices: compile-time steps and bounds, no branch inside (nvcc batches its loads)
        copy_loop = _unrolled_head(rowwise, block, rows, pitch, size)
        copy_body = f"{cell} = {_load(n, t, source, f['clamped'])};"
    body = []
    if used > 1:
        body.append(f"for (int j = 0; j < {used}; ++j) {{   // {used} windows: one tile of {o.name} each")
    else:
        body.append("{   // one window: the whole tile" if "j" in row0 + col0 else "{")
        if "j" in row0 + col0:
            body.append("    const int j = 0;")
    inner = [origin_code]
    if writeback == "atomic":
        inner += [loop, f"    {split}" if split else None, f"    {cell} = {_zero(t)};", "}", "__syncthreads();",
                  f"// the kernel's atomics on {o.name}, to the block's copy:",
                  f"atomicAdd(&{read}, ({t})1);   // was atomicAdd(&{orig}, ...)", "__syncthreads();", loop,
                  f"    {split}" if split else None, f"    if ({inside}) atomicAdd(&{n}[{where}], {cell});", "}"]  # fmt: skip
        notes.append("privatized: blocks may add to the same elements, so each adds its copy back with atomicAdd")
        param = f"{t}* {n}"
    else:
        if writeback != "store" or loads:  # a written object's tile is loaded only if the kernel reads it
            inner += [copy_loop, f"    {split}" if split else None, f"    {copy_body}", "}"]
            inner += ["__syncthreads();"]
        if writeback == "store":
            inner += [f"// the kernel's writes to {o.name} go to the tile:", f"{read} = {_zero(t)};   // was {orig} = ...; the value the kernel wrote, in place of {_zero(t)}",
                      "__syncthreads();", loop, f"    {split}" if split else None,
                      f"    if ({inside}) {n}[{where}] = {cell};", "}"]  # fmt: skip
            notes.append("a written object: its tile is stored back after the kernel's writes of each window; "
                         "blocks write disjoint elements (checked on the trace)")  # fmt: skip
            param = f"{t}* {n}"
        else:
            inner += [f"// the kernel's reads of {o.name} in this window, from the tile:",
                      f"{t} v_{n} = {read};   // was {orig}"]  # fmt: skip
        if used > 1:
            inner.append("__syncthreads();   // before the next window's copy overwrites the tile")
        if staging.get("unrolled"):
            aligned = (
                ""
                if not pad or ((pitch + pad) * o.elem_bytes) % 16 == 0
                else (
                    f" (the padded rows of {pitch + pad} elements do not all start 16-byte aligned: fewer such loads)"
                )
            )
            notes.append(
                f"as ;unrolled prices it: read the tile in a loop whose trip count is a compile-time constant "
                f"(the tile's width a template parameter or constexpr): where a thread reads 16 bytes of s_{n} "
                f"one element after another from a 16-byte aligned offset, nvcc then makes them one 128-bit "
                f"load (LDS.128){aligned}; with a run-time bound each element is a load of its own"
            )
            if unrolled:
                notes.append(f"the copy's steps are the traced block's ({' x '.join(map(str, block))} threads): launch "
                             "with it (or make them template parameters); its index is clamped to the array instead of "
                             "checked, so that the loop has no branch and nvcc unrolls it and keeps several of its loads "
                             "in flight (a bounds check inside keeps it one load at a time); the clamped copies of "
                             "elements past the edge are not read")  # fmt: skip
    body += ["    " + line for block in inner if block is not None for line in block.splitlines()]
    body.append("}")
    kernel = "\n".join([decl] + body)
    where_from = {"global": "global memory", "readonly": "the read-only path (__ldg)", "texture1d": "a 1D texture"}[
        source
    ]
    shape = f"{rows} x {pitch}" if two_d else f"{size}-element"
    summary = (f"staged in shared memory: each block copies its {shape} tile ({units.nbytes(int(tile['bytes']))}) "
               f"from {where_from}, {windows} window{'s' if windows != 1 else ''}, then reads it there")  # fmt: skip
    if writeback == "atomic":
        summary = f"privatized in shared memory: a {shape} tile per block, zeroed, added back with atomicAdd"
    elif writeback == "store":
        first = (
            f"copies its {shape} tile ({units.nbytes(int(tile['bytes']))}) from {where_from}, "
            if loads
            else f"keeps its {shape} tile ({units.nbytes(int(tile['bytes']))}) in shared memory, "
        )
        summary = (f"staged in shared memory: each block {first}writes it there and stores it back to global memory, "
                   f"{windows} window{'s' if windows != 1 else ''}")  # fmt: skip
    host_params = host = ""
    if source == "texture1d":
        host_params, host = f"{t}* d_{n}", _texture1d_host(o)
        notes.append(f"the copy reads a 1D texture object t_{n}; " + ALIGN_1D.format(n=n))
    declarations = "\n".join([*tables, helper] if helper else tables)
    return Hint(o.name, "", space, summary, declarations=declarations, kernel_params=param, kernel=kernel,
                host_params=host_params, host=host, notes=tuple(notes), incomplete=incomplete)  # fmt: skip


def hints(info: traces.KernelInfo, gpu: Gpu, sample: Mapping[str, str], target: Mapping[str, str],
          staging: Mapping[str, Any], origins: Mapping[str, Origin], writeback: Mapping[str, str],
          loads: Mapping[str, bool], divergent_replays: int = 0) -> tuple[Hint, ...]:  # fmt: skip
    """The code change of every object ``target`` moves from ``sample`` (``staging``: the target's
    ``Terms.staging``; per staged object its tile ``origins``, ``writeback`` ('none', 'store', 'atomic') and
    whether the kernel reads it, ``loads``)."""
    out = []
    for name, after in target.items():
        before = sample.get(name)
        if before == after:
            continue
        o = info.object(name)
        if after == "C":
            h = constant(o, gpu, divergent_replays)
        elif after == "R":
            h = readonly(o, gpu)
        elif after == "T":
            h = texture1d(o, gpu)
        elif after == "2T":
            h = texture2d(o, gpu)
        elif is_staged(after):
            h = staged(o, after, staging, origins.get(name), writeback.get(name, "none"), loads.get(name, True),
                       info.block)  # fmt: skip
        elif after == "G" and before == "S":
            h = out_of_shared(o, info)
        else:
            h = plain_global(o, before, writeback.get(name, "none"))
        out.append(replace(h, before=before))
    together = [h.object for h in out if is_staged(h.after)]
    if len(together) > 1:
        note = (f"{' and '.join(together)} share the windows: copy their tiles in one loop over the windows, "
                "before one __syncthreads()")  # fmt: skip
        out = [replace(h, notes=h.notes + (note,)) if is_staged(h.after) else h for h in out]
    return tuple(out)


def text(hs: tuple[Hint, ...], label: str, gpu: Gpu) -> str:
    """The hints of one placement as text."""
    if not hs:
        return f"{label}: the sample placement, no code change."
    head = (f"The CUDA changes for {label} on {gpu.name} ({_sm(gpu)}), object by object "
            "(element types from their size: 4 bytes written float, unsigned int for counters written by atomics "
            "only; use your arrays' own):")  # fmt: skip
    return "\n\n".join([head] + [h.text() for h in hs])


__all__ = ["Hint", "hints", "text", "translation_unit"]
