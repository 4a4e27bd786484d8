"""The CUDA changes a placement asks for, object by object, ready to paste.

For each object a placement moves: the declarations (a ``__constant__`` array, a
``__shared__`` tile), the kernel's new parameter, the code in the kernel (the read, or
the staging loop with the tile sizes and origins the trace gives: ``Terms.staging`` and
``placement.tiles``) and the host code (``cudaMemcpyToSymbol``, the texture object
setup). The element type is not in the trace, only its size: 4 bytes is written
``float``, 8 ``double``, 2 ``short``, 1 ``unsigned char``, 16 ``float4``; use the
array's own. ``Hint.translation_unit()`` wraps a hint in a complete ``.cu`` file
(the tests compile each with ``nvcc -c -arch=sm_80``).

Names used in the snippets: the object's pointer keeps its name (``N``); ``i`` is the
index the kernel used for a 1D object, ``row`` and ``col`` for a 2D one; ``v`` receives
the element read.
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

    def as_dict(self) -> dict[str, Any]:
        return {
            "object": self.object, "from": self.before, "to": self.after, "summary": self.summary,
            "declarations": self.declarations, "kernel_params": self.kernel_params, "kernel": self.kernel,
            "host_params": self.host_params, "host": self.host, "notes": list(self.notes),
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
        host = f"void placement_hint_host({self.host_params})\n{{\n{_indent(self.host, 4)}\n}}\n" if self.host else ""
        return (
            "#include <cuda_runtime.h>\n\n"
            f"{self.declarations}\n\n"
            f"__global__ void placement_hint_kernel({self.kernel_params})\n{{\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
            "    int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    (void)i; (void)row; (void)col;\n"
            f"{_indent(self.kernel, 4)}\n"
            "}\n\n"
            f"{host}"
        )


def _indent(text: str, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + line if line else line for line in text.splitlines())


def _ident(name: str) -> str:
    """A C identifier from an object name."""
    s = re.sub(r"\W", "_", name)
    return s if s and not s[0].isdigit() else f"_{s}"


def _type(o: traces.ObjectInfo) -> str:
    return TYPES.get(o.elem_bytes, "float")


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
        o.name, "", "C", f"constant memory: a __constant__ array filled by cudaMemcpyToSymbol; drop the {o.name} parameter",
        declarations=f"__constant__ {t} c_{n}[{elems}];",
        kernel=f"{t} v = c_{n}[{_index(o)}];   // was {o.name}[{_index(o)}]",
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
        o.name, "", "R", "the read-only data path: a const __restrict__ pointer, reads through __ldg",
        kernel_params=f"const {t}* __restrict__ {n}",
        kernel=f"{t} v = __ldg(&{n}[{_index(o)}]);   // was {o.name}[{_index(o)}]",
        notes=tuple(notes),
    )


def texture1d(o: traces.ObjectInfo, gpu: Gpu) -> Hint:
    n, t = _ident(o.name), _type(o)
    elems = o.size // o.elem_bytes
    host = (
        "cudaResourceDesc res = {};\n"
        "res.resType = cudaResourceTypeLinear;\n"
        f"res.res.linear.devPtr = d_{n};\n"
        f"res.res.linear.desc = cudaCreateChannelDesc<{t}>();\n"
        f"res.res.linear.sizeInBytes = {elems} * sizeof({t});\n"
        "cudaTextureDesc td = {};\n"
        "td.readMode = cudaReadModeElementType;\n"
        f"cudaTextureObject_t t_{n} = 0;\n"
        f"cudaCreateTextureObject(&t_{n}, &res, &td, nullptr);\n"
        f"// launch with t_{n} in place of d_{n}; afterwards cudaDestroyTextureObject(t_{n});"
    )
    return Hint(
        o.name, "", "T", "a 1D texture object over the existing device array, read with tex1Dfetch",
        kernel_params=f"cudaTextureObject_t t_{n}",
        kernel=f"{t} v = tex1Dfetch<{t}>(t_{n}, {_index(o)});   // was {o.name}[{_index(o)}]",
        host_params=f"{t}* d_{n}",
        host=host,
        notes=(f"{units.count(elems)} elements of the {units.count(gpu.memory.tex1d_max_elems)} a 1D texture of linear "
               "memory may hold",),  # fmt: skip
    )


def texture2d(o: traces.ObjectInfo, gpu: Gpu) -> Hint:
    n, t = _ident(o.name), _type(o)
    rows, cols = o.shape
    host = (
        f"{t}* d_{n}2 = nullptr;\n"
        f"size_t {n}_pitch = 0;\n"
        f"cudaMallocPitch((void**)&d_{n}2, &{n}_pitch, {cols} * sizeof({t}), {rows});\n"
        f"cudaMemcpy2D(d_{n}2, {n}_pitch, h_{n}, {cols} * sizeof({t}), {cols} * sizeof({t}), {rows}, "
        "cudaMemcpyHostToDevice);\n"
        "cudaResourceDesc res = {};\n"
        "res.resType = cudaResourceTypePitch2D;\n"
        f"res.res.pitch2D.devPtr = d_{n}2;\n"
        f"res.res.pitch2D.desc = cudaCreateChannelDesc<{t}>();\n"
        f"res.res.pitch2D.width = {cols};\n"
        f"res.res.pitch2D.height = {rows};\n"
        f"res.res.pitch2D.pitchInBytes = {n}_pitch;\n"
        "cudaTextureDesc td = {};\n"
        "td.addressMode[0] = cudaAddressModeClamp;\n"
        "td.addressMode[1] = cudaAddressModeClamp;\n"
        "td.filterMode = cudaFilterModePoint;\n"
        "td.readMode = cudaReadModeElementType;\n"
        "td.normalizedCoords = 0;\n"
        f"cudaTextureObject_t t_{n} = 0;\n"
        f"cudaCreateTextureObject(&t_{n}, &res, &td, nullptr);\n"
        f"// launch with t_{n}; afterwards cudaDestroyTextureObject(t_{n}); cudaFree(d_{n}2);"
    )
    return Hint(
        o.name, "", "2T", f"a 2D texture object ({rows} rows x {cols} columns) over a pitched copy, read with tex2D",
        kernel_params=f"cudaTextureObject_t t_{n}",
        kernel=f"{t} v = tex2D<{t}>(t_{n}, col, row);   // x = column, y = row; was {o.name}[{_index(o)}]",
        host_params=f"const {t}* h_{n}",
        host=host,
        notes=(f"{gpu.name}'s 2D texture limit: {units.count(gpu.memory.tex2d_max_height)} rows x "
               f"{units.count(gpu.memory.tex2d_max_width)} columns; cudaMallocPitch aligns each row",),  # fmt: skip
    )


def plain_global(o: traces.ObjectInfo, before: str) -> Hint:
    n, t = _ident(o.name), _type(o)
    const = "" if o.written else "const "
    was = {"T": f"tex1Dfetch<{t}>(t_{n}, i)", "2T": f"tex2D<{t}>(t_{n}, col, row)", "C": f"c_{n}[...]",
           "R": f"__ldg(&{n}[...])"}.get(before, f"{n}[...]")  # fmt: skip
    return Hint(
        o.name, before, "G", "a plain device pointer in global memory",
        kernel_params=f"{const}{t}* {n}",
        kernel=f"{t} v = {n}[{_index(o)}];   // was {was}",
    )


def out_of_shared(o: traces.ObjectInfo, info: traces.KernelInfo) -> Hint:
    n, t = _ident(o.name), _type(o)
    elems = o.size // o.elem_bytes
    return Hint(
        o.name, "S", "G", "the block's shared array becomes its slice of a global array (one slice per block)",
        kernel_params=f"{t}* g_{n}",
        kernel=(f"{t}* {n} = g_{n} + (size_t){elems} * (blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));"
                f"   // was __shared__ {t} {n}[{elems}]\n{t} v = {n}[i % {elems}];"),  # fmt: skip
        host_params=f"{t}** d_{n}",
        host=f"cudaMalloc((void**)d_{n}, (size_t){info.ctas} * {elems} * sizeof({t}));   // {info.ctas} blocks",
    )


_TID = "threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)"
_NTHREADS = "blockDim.x * blockDim.y * blockDim.z"
_TY, _BY = "threadIdx.y + blockDim.y * threadIdx.z", "blockDim.y * blockDim.z"  # the 2D copy loop's rows of threads
# The staging code's pieces for a 2D tile (rows x pitch, origin row0/col0) and a 1D one (origin first)
_FORMS = {
    "decl": ("__shared__ {t} s_{n}[{rows}][{pitch}];", "__shared__ {t} s_{n}[{size}];"),
    "where": ("(({n}_row0 + r) * {cols} + {n}_col0 + c)", "({n}_first + q)"),
    "inside": ("{n}_row0 + r < {nrows} && {n}_col0 + c < {cols}", "{n}_first + q < {elems}"),
    "cell": ("s_{n}[r][c]", "s_{n}[q]"),
    "read": ("s_{n}[row - {n}_row0][col - {n}_col0]", "s_{n}[i - {n}_first]"),
    "orig": ("{name}[row * {cols} + col]", "{name}[i]"),
    "origin": ("const int {n}_row0 = {row0};\nconst int {n}_col0 = {col0};", "const int {n}_first = {col0};"),
    "split": ("const int r = q / {pitch}, c = q % {pitch};", ""),
}


def staged(o: traces.ObjectInfo, space: str, staging: Mapping[str, Any], origin: Origin | None, writeback: str,
           loads: bool = True, block: tuple[int, int, int] | None = None) -> Hint:  # fmt: skip
    """The staging loop of one object (``traces.staging``'s model, written as CUDA): the flattened loop over the
    tile, or for a 2D tile the textbook 2D loop over the block's own threads where the model copies it so
    (``traces.staging.copy_columns`` of the kernel's ``block``)."""
    n, t = _ident(o.name), _type(o)
    tile = staging.get("tiles", {}).get(o.name, {"bytes": o.size, "pitch": o.size // o.elem_bytes})
    pitch = max(int(tile["pitch"]), 1)
    rows = max(int(tile["bytes"]) // (pitch * o.elem_bytes), 1)
    windows = int(staging.get("windows", 1))
    source = STAGING_SOURCE.get(space, "global")
    two_d = o.shape is not None
    cols = o.shape[1] if two_d else 0
    nrows = o.shape[0] if two_d else 1
    elems = o.size // o.elem_bytes
    notes = []
    r0 = origin.row if origin and origin.row is not None else None
    c0 = origin.col if origin and origin.col is not None else None
    if origin is not None and origin.misses:
        notes.append(f"the tile origins fit {origin.points - origin.misses} of {origin.points} blocks x windows; "
                     "the others (edge blocks) start elsewhere: check them")  # fmt: skip
    if r0 is None or c0 is None:
        notes.append("no formula fits the tiles' origins: set the block's first element of the tile by hand")
    row0 = r0 if r0 is not None else "0 /* the block's first row of the tile */"
    col0 = c0 if c0 is not None else f"0 /* the block's first {'column' if two_d else 'element'} of the tile */"
    size = rows * pitch
    f = {k: v[0 if two_d else 1].format(t=t, n=n, name=o.name, rows=rows, pitch=pitch, size=size, cols=cols,
                                       nrows=nrows, elems=elems, row0=row0, col0=col0)
         for k, v in _FORMS.items()}  # fmt: skip
    decl = f"{f['decl']}   // {units.nbytes(int(tile['bytes']))} per block"
    where, inside, cell, read, orig, origin_code, split = (f[k] for k in ("where", "inside", "cell", "read", "orig",
                                                                          "origin", "split"))  # fmt: skip
    fetch = {"global": f"{n}[{where}]", "readonly": f"__ldg(&{n}[{where}])",
             "texture1d": f"tex1Dfetch<{t}>(t_{n}, {where})"}[source]  # fmt: skip
    param = {"global": f"{'' if o.written else 'const '}{t}* {n}", "readonly": f"const {t}* __restrict__ {n}",
             "texture1d": f"cudaTextureObject_t t_{n}"}[source]  # fmt: skip
    loop = f"for (int q = {_TID}; q < {size}; q += {_NTHREADS}) {{"
    from traces.staging import copy_columns  # numba's kernels: loaded by the evaluation the hints come from

    if two_d and block is not None and copy_columns(block, pitch, True) > 0:
        loop = (f"for (int r = {_TY}; r < {rows}; r += {_BY}) for (int c = threadIdx.x; c < {pitch}; "
                "c += blockDim.x) {")  # fmt: skip
        split = ""
    body = []
    if windows > 1:
        body.append(f"for (int j = 0; j < {windows}; ++j) {{   // {windows} windows: one tile of {o.name} each")
    else:
        body.append("{   // one window: the whole tile" if "j" in row0 + col0 else "{")
        if "j" in row0 + col0:
            body.append("    const int j = 0;")
    inner = [origin_code]
    if writeback == "atomic":
        inner += [loop, f"    {split}" if split else None, f"    {cell} = 0;", "}", "__syncthreads();",
                  f"// the kernel's atomics on {o.name}, to the block's copy:",
                  f"atomicAdd(&{read}, ({t})1);   // was atomicAdd(&{orig}, ...)", "__syncthreads();", loop,
                  f"    {split}" if split else None, f"    if ({inside}) atomicAdd(&{n}[{where}], {cell});", "}"]  # fmt: skip
        notes.append("privatized: blocks may add to the same elements, so each adds its copy back with atomicAdd")
        param = f"{t}* {n}"
    else:
        if writeback != "store" or loads:  # a written object's tile is loaded only if the kernel reads it
            inner += [loop, f"    {split}" if split else None, f"    if ({inside}) {cell} = {fetch};", "}"]
            inner += ["__syncthreads();"]
        if writeback == "store":
            inner += [f"// the kernel's writes to {o.name} go to the tile:", f"{read} = ({t})0;   // was {orig} = ...",
                      "__syncthreads();", loop, f"    {split}" if split else None,
                      f"    if ({inside}) {n}[{where}] = {cell};", "}"]  # fmt: skip
            notes.append("a written object: its tile is stored back after the kernel's writes of each window; "
                         "blocks write disjoint elements (checked on the trace)")  # fmt: skip
            param = f"{t}* {n}"
        else:
            inner += [f"// the kernel's reads of {o.name} in this window, from the tile:",
                      f"{t} v = {read};   // was {orig}"]  # fmt: skip
        if windows > 1:
            inner.append("__syncthreads();   // before the next window's copy overwrites the tile")
    body += ["    " + line for block in inner if block is not None for line in block.splitlines()]
    body.append("}")
    kernel = "\n".join([decl] + body)
    where_from = {"global": "global memory", "readonly": "the read-only path (__ldg)", "texture1d": "a 1D texture"}[source]
    shape = f"{rows} x {pitch}" if two_d else f"{size}-element"
    summary = (f"staged in shared memory: each block copies its {shape} tile ({units.nbytes(int(tile['bytes']))}) "
               f"from {where_from}, {windows} window{'s' if windows != 1 else ''}, then reads it there")  # fmt: skip
    if writeback == "atomic":
        summary = f"privatized in shared memory: a {shape} tile per block, zeroed, added back with atomicAdd"
    elif writeback == "store":
        first = f"copies its {shape} tile ({units.nbytes(int(tile['bytes']))}) from {where_from}, " if loads else \
            f"keeps its {shape} tile ({units.nbytes(int(tile['bytes']))}) in shared memory, "
        summary = (f"staged in shared memory: each block {first}writes it there and stores it back to global memory, "
                   f"{windows} window{'s' if windows != 1 else ''}")  # fmt: skip
    if source == "texture1d":
        notes.append(f"the copy reads a 1D texture object t_{n}: set it up as for T")
    return Hint(o.name, "", space, summary, kernel_params=param, kernel=kernel, notes=tuple(notes))


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
            h = plain_global(o, before)
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
            "(element types from their size: 4 bytes written float; use your arrays' own):")  # fmt: skip
    return "\n\n".join([head] + [h.text() for h in hs])


__all__ = ["Hint", "hints", "text"]
