"""Placements: what they are, how they are spelled, and which are legal.

A placement maps every data object of a kernel to one of the programmable spaces
G (global), T (1D texture), 2T (2D texture), C (constant), R (global memory read
through the read-only data path: ``__ldg``, ``const __restrict__``) or staged shared
memory S/G, S/T, S/R (each block copies its tile of the object into shared memory from
global memory, a 1D texture or the read-only path: ``traces.staging``); objects it does
not name stay where the sample placement has them. ``S`` alone means ``S/G`` for an
object the sample holds elsewhere, and the sample's own shared array for one it holds
in shared memory (such an array is the kernel's: its fills are in the trace already).
The rules (DESIGN.md, "Placements and what makes one legal"; Huang & Li Sec. II-A):

1. written objects only in G, S/G or their own shared array (texture, constant and the
   read-only path are read-only);
2. all C objects together fit the constant bank;
3. R and S/R need a read-only data path (``[caches] readonly_cache``; Fermi and GK104
   have none);
4. a written object is staged only where blocks write disjoint elements, or where
   every write is an atomic or a reduction (then each block works on a private copy);
5. per block, the kernel's shared usage (its own arrays, less those moved out) plus
   the staged tiles fits the per-block limit, with the tiles split into windows
   (loop tiling) where the whole footprint does not fit; and the launch still fits on
   an SM (occupancy >= 1 block);
6. T and S/T: the element count fits the 1D texture limit of linear memory;
7. 2T: the object has a 2D shape within the 2D texture limits;
8. objects outside the programmable spaces (local memory) cannot move.

Rules 4 and 5 need the trace's footprints (``placement.staging.StagingFacts``); the
others only the kernel's metadata. Every placement the search returns is re-checked
here before it is ranked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping

from traces import SHORT_OF_SPACE, KernelInfo, Layout, ObjectInfo, target_layout
from traces.errors import InputError

from .gpu import Gpu
from .occupancy import Occupancy, occupancy, regs_for

if TYPE_CHECKING:
    from .staging import StagingChoice, StagingFacts

# Spaces an object may take; "S" is the sample's own shared array (only for an object the
# sample holds in shared memory), the S/x spaces stage an object held elsewhere.
SPACES = ("G", "T", "2T", "C", "R", "S/G", "S/T", "S/R")
STAGED = ("S/G", "S/T", "S/R")
STAGING_SOURCE = {"S/G": "global", "S/T": "texture1d", "S/R": "readonly"}
_ALIASES = {
    "g": "G", "global": "G",
    "t": "T", "texture": "T", "texture1d": "T", "tex": "T",
    "2t": "2T", "texture2d": "2T", "tex2d": "2T",
    "c": "C", "constant": "C", "const": "C",
    "r": "R", "readonly": "R", "read-only": "R", "ldg": "R",
    "s": "S", "shared": "S",
}  # fmt: skip
_SOURCES = {"G", "T", "R"}


class IllegalPlacement(InputError):
    """A placement that breaks a rule; ``rule`` names it."""

    def __init__(self, rule: str, message: str):
        self.rule = rule
        self.reason = message
        super().__init__(f"illegal placement ({rule}): {message}")


class UnlaunchableBuild(IllegalPlacement):
    """The sample placement breaks one of ``gpu``'s launch rules: the traced build itself does not fit the GPU (its
    registers or shared memory), whatever the placement."""

    def __init__(self, rule: str, message: str, where: str, gpu_name: str):
        InputError.__init__(self, f"{where}: the traced build cannot run on {gpu_name}, whatever the placement "
                                  f"({rule}): {message}")  # fmt: skip
        self.rule = rule
        self.reason = message


SPELLING = "G T 2T C R S S/G S/T S/R (or global texture texture2d constant readonly shared shared/global ...)"


def space_short(name: str) -> str:
    """The short spelling (G, T, 2T, C, R, S, S/G, S/T, S/R) of a space name or alias."""
    head, sep, src = name.strip().lower().partition("/")
    s = _ALIASES.get(head.strip())
    if s is None or (sep and s != "S"):
        raise InputError(f"unknown space {name!r}; use one of {SPELLING}")
    if not sep:
        return s
    source = _ALIASES.get(src.strip())
    if source not in _SOURCES:
        raise InputError(f"unknown staging source in {name!r}: shared memory is staged from G, T or R (S/G, S/T, S/R)")
    return f"S/{source}"


MAX_PAD = 64
"""The most padding ``;pad=P`` takes, in elements a row (two rows of 32 banks of 4-byte words)."""


def is_staged(space: str) -> bool:
    return space in STAGED


@dataclass(frozen=True)
class Placement:
    """Object name -> short space, for every object of a kernel (sorted by object id)."""

    spaces: tuple[tuple[str, str], ...]
    windows: int | None = None
    """The staged objects' window count asked for (``;windows=K``: the staged code one wrote or measured), or
    None for the tool's choice (``placement.staging.choose``)."""
    unrolled: bool = False
    """The staged tiles are read in loops that nvcc unrolls knowing the reads' alignment (``;unrolled``: the
    textbook tiled kernels' ``for (k = 0; k < TILE_WIDTH; ++k)``, or a run-time bound counted from an aligned
    start, as matvec's ``sx[j]``: nvcc 13 for sm_90 reads 16 of its columns with 4 ``LDS.128``), which it
    vectorizes: a lane's consecutive aligned reads of a tile become 128-bit loads (``traces.staging.vectorize``).
    Its copy loops are the compile-time kind too (``#pragma unroll``, compile-time steps and bounds, no bounds check
    inside, as Kernel Tuner's convolution), which nvcc unrolls by ``copy_unroll`` (configs/addressing.toml: 4 on
    sm_75 to sm_90, the remainder first), a batch's loads in flight together (``StagedObject.copy_unroll``), or on
    sm_100 and sm_120 each tile row's loop whole with its last ``copy_tail`` (2) copies together."""
    pad: int | None = None
    """Elements of padding after each row of the staged 2D tiles in shared memory (``;pad=P``: ``tile[rows][width
    + P]``, the code one wrote or measured), or None: none where ``;windows=K`` gives the code one wrote, else the
    tool's choice, the padding that leaves the kernel's accesses of the tile the fewest bank conflicts
    (``traces.staging.best_pad``; the transpose's ``[32][33]``)."""

    def __getitem__(self, name: str) -> str:
        for n, s in self.spaces:
            if n == name:
                return s
        raise KeyError(name)

    def as_dict(self) -> dict[str, str]:
        return dict(self.spaces)

    def moved(self, sample: "Placement") -> dict[str, tuple[str, str]]:
        """Objects whose space differs from ``sample``: name -> (from, to)."""
        ref = sample.as_dict()
        return {n: (ref[n], s) for n, s in self.spaces if ref.get(n) != s}

    def label(self, sample: "Placement | None" = None) -> str:
        """`A=T,B=2T` of the moved objects (all objects when no sample is given)."""
        text = moved_key(sample.as_dict() if sample else {}, self.as_dict())
        return (
            (text or "sample")
            + (f";windows={self.windows}" if self.windows is not None else "")
            + (";unrolled" if self.unrolled else "")
            + (f";pad={self.pad}" if self.pad is not None else "")
        )


def object_short(o: ObjectInfo) -> str | None:
    """The sample space of an object in short spelling; None for local memory."""
    return SHORT_OF_SPACE.get(o.space)


def sample_placement(info: KernelInfo) -> Placement:
    """The placement the trace was recorded with (local objects left out)."""
    return Placement(tuple((o.name, s) for o in info.objects if (s := object_short(o)) is not None))


def moved_key(sample: Mapping[str, str], target: Mapping[str, str]) -> str:
    """``target``'s objects whose space differs from ``sample``'s as ``name=space``, in ``target``'s order."""
    return ",".join(f"{n}={s}" for n, s in target.items() if sample.get(n) != s)


def build_key(info: KernelInfo, placement: Placement) -> str:
    """The placement's build as ``extra["regs_by_placement"]`` names it (``placement.occupancy.regs_for``): its
    moved objects as ``name=space`` in object order ("input=S/G"), "" for the sample's own."""
    return moved_key(sample_placement(info).as_dict(), placement.as_dict())


def parse_placement(text: str | Mapping[str, str] | Iterable[str], info: KernelInfo) -> Placement:
    """Complete a partial placement (`A=T,B=2T` or a mapping) with the sample's spaces.

    Names must be objects of the kernel; spaces any spelling of G T 2T C R S S/G S/T S/R. A text may end in
    options, each after a ``;``, for the staged code one wrote or measured: ``;windows=K``, the staged
    objects' tiles in K windows (any K >= 1: ceil(accesses / K) accesses a window) instead of the tool's
    choice; ``;unrolled``, the tiles copied and read in loops nvcc unrolls (:attr:`Placement.unrolled`); ``;pad=P``,
    each staged 2D tile's rows padded by P elements (:attr:`Placement.pad`).
    """
    windows = None
    unrolled = False
    pad = None
    if not isinstance(text, (str, Mapping)):
        text = ",".join(text)  # --place given more than once
    if isinstance(text, str) and ";" in text:
        text, *tails = text.split(";")
        for tail in tails:
            key, _, value = (x.strip() for x in tail.partition("="))
            if key == "unrolled" and not value and not unrolled:
                unrolled = True
                continue
            if key == "pad" and pad is None and value.isdigit() and int(value) <= MAX_PAD:
                pad = int(value)
                continue
            if key != "windows" or windows is not None or not value.isdigit() or int(value) < 1:
                raise InputError(
                    f"--place ...;{tail}: expected ;windows=K with K a whole number >= 1, ;unrolled or ;pad=P with P a "
                    f"whole number from 0 to {MAX_PAD}, each at most once"
                )
            windows = int(value)
    if isinstance(text, str):
        pairs = [p for p in (x.strip() for x in text.split(",")) if p]
    else:
        pairs = [f"{k}={v}" for k, v in text.items()]
    wanted: dict[str, str] = {}
    names = {o.name: o for o in info.objects}
    for p in pairs:
        if "=" not in p:
            raise InputError(f"--place {p!r}: expected OBJ=SPACE (for example A=T,B=2T)")
        name, space = (x.strip() for x in p.split("=", 1))
        if name not in names:
            raise InputError(f"--place {p!r}: no object {name!r} in kernel {info.kernel}; objects: {', '.join(names)}")
        if name in wanted:
            raise InputError(f"--place: object {name!r} placed twice")
        own = object_short(names[name])
        if own is None:
            raise IllegalPlacement("local", f"object {name!r} is in local memory, which is not programmable")
        try:
            short = space_short(space)
        except InputError as exc:
            raise InputError(f"--place {p!r}: {exc}") from None
        if short == "S" and own != "S":
            short = "S/G"  # staged from global memory, the usual way
        elif is_staged(short) and own == "S":
            raise InputError(f"--place {p!r}: {name!r} is already a shared-memory array of the kernel; place it in S")
        wanted[name] = short
    sample = sample_placement(info)
    if windows is not None and not any(is_staged(s) for s in wanted.values()):
        raise InputError(f"--place ...;windows={windows}: no object is staged (S/G, S/T or S/R) to split into windows")
    if unrolled and not any(is_staged(s) for s in wanted.values()):
        raise InputError("--place ...;unrolled: no object is staged (S/G, S/T or S/R) to read in unrolled loops")
    if pad is not None and not any(is_staged(s) and names[n].shape is not None for n, s in wanted.items()):
        raise InputError(f"--place ...;pad={pad}: no 2D object (one with a shape) is staged to pad the rows of")
    return Placement(tuple((n, wanted.get(n, s)) for n, s in sample.spaces), windows, unrolled, pad)


@dataclass(frozen=True)
class Legality:
    """The outcome of checking a placement: the launch it implies.

    With staged objects, ``staging`` holds the window counts worth evaluating (see
    ``placement.staging.choose``, which ``check`` reaches through the ``StagingFacts`` it
    is given); ``smem_per_block`` and ``occupancy`` are those of its first (fewest
    windows that fit).
    """

    smem_per_block: int
    const_bytes: int
    occupancy: Occupancy
    layout: Layout = field(compare=False, repr=False)
    """The placement converted once for the rewrite: ``traces.target_layout`` of its unstaged
    spaces (``unstaged``), which ``traces.rewrite`` takes as it is."""
    staging: "StagingChoice | None" = None


def unstaged(placement: Placement) -> dict[str, str]:
    """The placement's spaces with each staged object left where the sample has it
    (its accesses are rewritten by ``traces.staging``, not by ``traces.rewrite``)."""
    return {n: s for n, s in placement.spaces if not is_staged(s)}


def shared_bytes(info: KernelInfo, placement: Placement) -> int:
    """Per-block shared memory of the kernel's own arrays under ``placement`` (staged tiles not included).

    The sample's usage, less its shared arrays moved out (Huang & Li Sec. III-E; the
    layout is ``traces.target_layout``'s, the same the trace rewriting uses).
    """
    return _layout(info, placement).smem_per_block


def _layout(info: KernelInfo, placement: Placement) -> Layout:
    """The placement converted for ``traces.rewrite``: the layout of its unstaged spaces."""
    return target_layout(info, unstaged(placement))


def check(info: KernelInfo, gpu: Gpu, placement: Placement, staging: "StagingFacts | None" = None) -> Legality:
    """Check every rule; raise IllegalPlacement naming the first one broken.

    ``staging`` (the trace's footprints) is needed when the placement stages an object.
    """
    m = gpu.memory
    objs = {o.name: o for o in info.objects}
    const_bytes = 0
    for name, space in placement.spaces:
        o = objs[name]
        if o.written and space not in ("G", "S", "S/G"):
            raise IllegalPlacement(
                "written",
                f"{name} is written by the kernel, so it can only be in G or S/G (staged from global), not {space}",
            )
        if space in ("R", "S/R") and gpu.caches.readonly_cache == "none":
            raise IllegalPlacement(
                "readonly",
                f"{gpu.name} ({gpu.arch}, cc {gpu.compute_capability[0]}.{gpu.compute_capability[1]}) has no "
                f"read-only data path (__ldg needs cc 3.5, and GK104 has none), so {name} cannot be in {space}",
            )
        if space == "C":
            const_bytes += o.size
        elif space in ("T", "S/T"):
            elems = o.size // o.elem_bytes
            if elems > m.tex1d_max_elems:
                raise IllegalPlacement(
                    "texture1d",
                    f"{name} has {elems:,} elements; {gpu.name}'s 1D texture limit is {m.tex1d_max_elems:,}",
                )
        elif space == "2T":
            if o.shape is None:
                raise IllegalPlacement("texture2d", f"{name} has no 2D shape, so it cannot be a 2D texture")
            rows, cols = o.shape
            # a texture of that shape must hold the object, short of less than one row (an allocation rounded up)
            if (rows + 1) * cols * o.elem_bytes <= o.size:
                raise IllegalPlacement(
                    "texture2d",
                    f"{name}'s 2D shape, {rows} x {cols} of {o.elem_bytes} bytes, holds {rows * cols * o.elem_bytes:,} of "
                    f"its {o.size:,} bytes, so a 2D texture of that shape cannot be it",
                )
            if cols > m.tex2d_max_width or rows > m.tex2d_max_height:
                raise IllegalPlacement(
                    "texture2d",
                    f"{name} is {rows} x {cols}; {gpu.name}'s 2D texture limit is "
                    f"{m.tex2d_max_height} rows x {m.tex2d_max_width} columns",
                )
    if const_bytes > m.const_bank_bytes:
        in_c = ", ".join(n for n, s in placement.spaces if s == "C")
        raise IllegalPlacement(
            "constant",
            f"the objects in C ({in_c}) need {const_bytes:,} bytes; the constant bank holds {m.const_bank_bytes:,}",
        )
    layout = _layout(info, placement)
    smem = layout.smem_per_block
    if smem > m.smem_per_block:
        in_s = ", ".join(n for n, s in placement.spaces if s == "S")
        arrays = f"the kernel's shared arrays ({in_s})" if in_s else "the kernel's own shared memory (smem_per_block)"
        raise IllegalPlacement("shared", f"{arrays} need{'s' if not in_s else ''} {smem:,} bytes per block; {gpu.name} "
                                         f"allows {m.smem_per_block:,}")  # fmt: skip
    choice = None
    if any(is_staged(s) for _, s in placement.spaces):
        if staging is None:
            raise InputError("a placement with staged shared memory (S/G, S/T, S/R) needs the trace's footprints")
        choice = staging.choose(gpu, placement, smem)
        smem = choice.options[0].smem_per_block
    try:
        occ = occupancy(gpu, info.threads_per_block, regs_for(info, gpu, build_key(info, placement)), smem)
    except InputError as exc:
        raise IllegalPlacement("launch", str(exc)) from None
    if occ.blocks_per_sm < 1:
        raise IllegalPlacement("launch", f"no block fits on an SM of {gpu.name} ({occ.limiter})")
    return Legality(smem_per_block=smem, const_bytes=const_bytes, occupancy=occ, layout=layout, staging=choice)
