"""Import PORPLE array-level access traces.

The format, confirmed by reading PORPLE's own readers (``gychen1991/porple_model``,
``python/global_noprint.py`` and ``python/2Dtexture_noprintout.py``; none of their
code is used):

- header lines ``dimension``, ``sizeof``, ``block_X``, ``block_Y``, ``array_size``,
  each followed by one integer per array: the array's dimensionality, element size
  in bytes, row length (``block_X``: the 2D readers take column = index % block_X and
  row = index / block_X), number of rows (``block_Y``), and size in bytes (the
  samples have ``array_size`` = block_X x block_Y x sizeof);
- then one line per thread-level access, six integers: array, read/write (the
  readers cache only ``0`` accesses, so 0 is a read and 1 a write), expression
  (static reference id), loop (iteration), thread, element index. The readers group
  lines with equal array, read/write, expression, loop and ``thread // 32`` into one
  warp-level access, which is what a row of the trace is here; a lane is
  ``thread % 32``. Lines may carry a ``[...]:`` prefix, which the readers strip.

What the format lacks is estimated and listed in ``source["estimated"]``: the
arrays are laid out one after another from 4 GiB with 512-byte alignment (as
``cudaMalloc`` would); the sample placement is all global; ``pc`` numbers the
distinct (array, read/write, expression) references; ``seq`` orders a warp's
accesses by (loop, read before write, array, expression); threads form one block
(or blocks of 256 when there are more than 1024 threads); the instruction totals
count these accesses only.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np

from ..inputfile import numbered_lines, quote_line, refuse_binary, require_file
from ..launch import ADDRESS_LIMIT, MAX_OBJECT_BYTES, coverage_problem, launch_problem
from ..schema import LOAD, STORE, WARP_SIZE, WIDTHS, GLOBAL, Instructions, KernelInfo, control_character
from .accelsim import ParseError
from .objects import ObjectSpec, infer_objects
from .opcodes import CLASS_NAMES

log = logging.getLogger(__name__)

BASE = 1 << 32
MAX_DIGITS = 17  # below 2^56: element index x 16-byte elements stays exact in int64
ALIGN = 512
_KEYS = ("dimension", "sizeof", "block_X", "block_Y", "array_size")


def import_porple(
    path, *, objects: tuple[ObjectSpec, ...] = (), skip_bad_lines: bool = False
) -> tuple[dict[str, np.ndarray], KernelInfo]:
    """Read a PORPLE trace into trace columns and metadata (one object per array)."""
    p = str(path)
    require_file(p)
    refuse_binary(p, "a PORPLE trace (text)")
    head: dict[str, tuple[int, list[int]]] = {}
    recs: list[list[int]] = []
    lines_of: list[int] = []
    skipped = blank = 0

    def bad(ln: int, msg: str) -> None:
        nonlocal skipped
        if not skip_bad_lines:
            raise ParseError(p, ln, f"{msg}; --skip-bad-lines skips such lines")
        skipped += 1

    for ln, line in numbered_lines(p):
        s = line.strip()
        if not s:
            blank += 1
            continue
        if s[0] == "[":
            s = s.partition(":")[2].strip()
        if s[:1].isdigit():
            parts = s.split()
            if len(parts) != 6 or not all(t.isdigit() and len(t) <= MAX_DIGITS for t in parts):
                bad(ln, f"expected six non-negative integers of at most {MAX_DIGITS} digits (array, read/write, "
                        "expression, loop, thread, index)")  # fmt: skip
                continue
            recs.append([int(t) for t in parts])
            lines_of.append(ln)
            continue
        key, *vals = s.split() or [""]
        if key in _KEYS and vals and all(v.isdigit() and len(v) <= MAX_DIGITS for v in vals):
            if recs:
                bad(ln, f"header line '{key}' after the accesses started")
                continue
            head[key] = (ln, [int(v) for v in vals])
            continue
        bad(
            ln,
            f"expected a header line ({', '.join(_KEYS)}: non-negative integers) or an access line, got {quote_line(s)}",
        )
    for key in ("sizeof", "array_size"):
        if key not in head:
            raise ParseError(p, None, f"header line '{key}' (one value per array) is missing")
    sizeof, array_size = head["sizeof"][1], head["array_size"][1]
    n_arr = len(sizeof)
    for key, (ln, vals) in head.items():
        if len(vals) != n_arr:
            raise ParseError(p, ln, f"'{key}' has {len(vals)} values, 'sizeof' has {n_arr} (one per array)")
    for a in range(n_arr):
        if sizeof[a] not in WIDTHS or array_size[a] < sizeof[a]:
            raise ParseError(
                p,
                head["sizeof"][0],
                f"array {a}: sizeof {sizeof[a]} must be one of {WIDTHS} and at most its array_size {array_size[a]}",
            )
    if not recs:
        raise ParseError(p, None, "no access lines")
    r = np.array(recs, dtype=np.int64)
    lines_arr = np.array(lines_of, dtype=np.int64)
    arr, rw, exp, loop, thread, index = r.T
    es = np.array(sizeof, dtype=np.int64)
    for cond, msg in (
        (arr >= n_arr, f"array index must be below {n_arr}"),
        (rw > 1, "read/write must be 0 (read) or 1 (write)"),
    ):
        if cond.any():
            i = int(np.flatnonzero(cond)[0])
            raise ParseError(p, int(lines_arr[i]), msg)
    # Accesses beyond an array's array_size (PORPLE's own md_stride and cfd_stride traces
    # have them) extend it to the last element accessed, with a warning.
    needed = np.zeros(n_arr, dtype=np.int64)
    np.maximum.at(needed, arr, (index + 1) * es[arr])
    sizes = [max(int(array_size[a]), int(needed[a])) for a in range(n_arr)]
    for a in range(n_arr):
        if sizes[a] > MAX_OBJECT_BYTES:
            raise ParseError(p, head["array_size"][0], f"array {a} takes {sizes[a]} bytes (its array_size or its "
                                                       "accesses), beyond 2^49: a GPU's virtual address space")  # fmt: skip
    extended: dict[str, dict[str, Any]] = {}
    for a in range(n_arr):
        if sizes[a] > array_size[a]:
            beyond = (arr == a) & ((index + 1) * es[a] > array_size[a])
            first = int(np.flatnonzero(beyond)[0])
            extended[f"array{a}"] = {
                "array_size": int(array_size[a]), "extended_to": sizes[a], "ratio": round(sizes[a] / array_size[a], 3),
                "accesses_beyond": int(beyond.sum()), "first_line": int(lines_arr[first]),
                "last_element": int(needed[a] // es[a] - 1),
            }  # fmt: skip
    warnings = [f"array {k[5:]}: {v['accesses_beyond']} access{'' if v['accesses_beyond'] == 1 else 'es'} (first on line {v['first_line']}) reach element "
                f"{v['last_element']}, beyond its array_size of {v['array_size']} bytes; extended to {v['extended_to']} "
                f"bytes ({v['ratio']}x)" for k, v in extended.items()]  # fmt: skip
    for w in warnings:
        log.warning("%s: %s", p, w)

    # Layout: arrays one after another, aligned.
    bases, off = [], BASE
    for a in range(n_arr):
        bases.append(off)
        off += -(-sizes[a] // ALIGN) * ALIGN
    if off > ADDRESS_LIMIT:
        raise ParseError(p, head["array_size"][0], f"the arrays take {off - BASE} bytes, beyond a 64-bit address space")
    specs = list(objects)
    taken = {s.name for s in specs}
    dim = head.get("dimension", (0, [1] * n_arr))[1]
    bx = head.get("block_X", (0, [0] * n_arr))[1]
    by = head.get("block_Y", (0, [0] * n_arr))[1]
    for a in range(n_arr):
        shape = (
            (by[a], bx[a])
            if dim[a] == 2 and bx[a] > 0 and by[a] > 0 and bx[a] * by[a] * sizeof[a] <= array_size[a]
            else None
        )
        name = f"array{a}"
        if name not in taken:
            specs.append(ObjectSpec(name, bases[a], sizes[a], "global", sizeof[a], shape))

    # Threads -> blocks and warps.
    n_threads = int(thread.max()) + 1
    tpb = n_threads if n_threads <= 1024 else 256
    tpb = -(-tpb // WARP_SIZE) * WARP_SIZE
    grid = (-(-n_threads // tpb), 1, 1)
    problem = launch_problem(grid, (tpb, 1, 1))
    if problem:
        i = int(np.argmax(thread))
        raise ParseError(p, int(lines_arr[i]), f"thread {thread[i]}: {problem}")
    cta_t, tid = thread // tpb, thread % tpb
    warp_t, lane = tid // WARP_SIZE, tid % WARP_SIZE
    # One row per (array, rw, expression, loop, cta, warp, occurrence of the lane).
    ref = np.unique(np.stack([arr, rw, exp], axis=1), axis=0, return_inverse=True)[1].reshape(-1)  # static reference
    grp = np.stack([cta_t, warp_t, loop, rw, arr, exp], axis=1)
    order = np.lexsort((lines_arr, lane, exp, arr, rw, loop, warp_t, cta_t))
    g_sorted = grp[order]
    lane_sorted = lane[order]
    new_group = np.ones(len(order), dtype=bool)
    new_group[1:] = (g_sorted[1:] != g_sorted[:-1]).any(axis=1)
    # a lane repeated inside a group starts a second access of that reference
    rep = np.zeros(len(order), dtype=bool)
    rep[1:] = ~new_group[1:] & (lane_sorted[1:] == lane_sorted[:-1])
    new_row = new_group | rep
    # rep only catches adjacent repeats (lanes are sorted within a group), which is all of them
    row_of = np.cumsum(new_row) - 1
    n = int(row_of[-1]) + 1
    addr = np.zeros((n, WARP_SIZE), dtype=np.uint64)
    mask = np.zeros(n, dtype=np.uint32)
    i_arr, i_lane = arr[order], lane_sorted
    addr[row_of, i_lane] = np.array(bases, dtype=np.uint64)[i_arr] + (index[order] * es[i_arr]).astype(np.uint64)
    np.bitwise_or.at(mask, row_of, (np.uint32(1) << i_lane.astype(np.uint32)))
    first = np.flatnonzero(new_row)
    cta = cta_t[order][first]
    warp = warp_t[order][first]
    # seq: rank within the warp in (loop, rw, array, expression, repeat) order = sorted order
    seq = np.zeros(n, dtype=np.int64)
    wkey = cta * 1_000_000 + warp
    change = np.ones(n, dtype=bool)
    change[1:] = wkey[1:] != wkey[:-1]
    starts = np.flatnonzero(change)
    seq = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
    refs = ref[order][first]
    uniq, pc_idx = np.unique(refs, return_inverse=True)
    width = es[arr[order][first]].astype(np.int8)
    op = np.where(rw[order][first] == 1, STORE, LOAD).astype(np.int8)
    space = np.full(n, GLOBAL, dtype=np.int8)
    cols = {
        "cta": cta.astype(np.int32), "warp": warp.astype(np.int32), "seq": seq.astype(np.int64),
        "pc": (pc_idx * 16).astype(np.int32), "op": op, "space": space, "width": width, "mask": mask, "addr": addr,
    }  # fmt: skip
    found = infer_objects(space, cols["pc"], op, width, mask, addr, explicit=specs)
    cols["obj"] = found.obj
    n_ctas = int(cta_t.max()) + 1
    problem = coverage_problem((n_ctas, 1, 1), (tpb, 1, 1), n)
    if problem:
        raise ParseError(p, None, problem)
    kernel = os.path.splitext(os.path.basename(p))[0]  # PORPLE's format names no kernel: the file's name does
    bad = control_character(kernel)
    if bad is not None:  # the trace's metadata refuses it (traces.schema); said here, naming the input
        raise ParseError(p, None, f"the kernel's name, taken from the file's name, holds the control character "
                                  f"{bad!r}; rename the file")  # fmt: skip
    classes = {k: 0 for k in CLASS_NAMES}
    classes["ldst"] = n
    source: dict[str, Any] = {
        "format": "porple",
        "file": os.path.abspath(p),
        "lines": {"accesses": len(recs), "header": len(head), "blank": blank, "skipped_bad_lines": skipped},
        "skipped_lines": skipped,
        "estimated": ["addresses (arrays laid out from 4 GiB, 512-byte aligned)", "space (all global)", "pc", "seq",
                      "grid", "block", "instructions"] + [f"size of {k} (accesses beyond array_size)" for k in extended],
        "warnings": warnings,
        "extended": extended,
        "arrays": {f"array{a}": {"dimension": dim[a], "sizeof": sizeof[a], "block_X": bx[a], "block_Y": by[a],
                                 "array_size": array_size[a]} for a in range(n_arr)},
        "objects": {k: (f"PORPLE header, array {k[5:]}" if k not in taken else v) for k, v in found.report["objects"].items()},
        "rows_on_two_objects": found.report["rows_on_two_objects"],
    }  # fmt: skip
    info = KernelInfo(
        kernel=kernel,
        grid=(n_ctas, 1, 1),
        block=(tpb, 1, 1),
        objects=found.objects,
        instructions=Instructions(executed=n, warps=int(len(starts)), **classes),
        source=source,
    )
    return cols, info
