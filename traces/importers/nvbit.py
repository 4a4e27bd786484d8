"""Import NVBit ``mem_trace`` logs.

Line forms (NVBit's ``tools/mem_trace``; read to confirm, none of its code used):

- access, NVBit >= 1.5: ``MEMTRACE: CTX 0x.. - grid_launch_id N - CTA x,y,z - warp W -
  OPCODE - 0x<addr> x 32`` (``%016lx`` each; inactive lanes print 0);
- access, older tools: the same from ``CTA x,y,z`` on, without context or launch id;
- launch, NVBit >= 1.5: ``MEMTRACE: CTX 0x.. - LAUNCH - Kernel pc 0x.. - Kernel name
  NAME - grid launch id N - grid size x,y,z - block size x,y,z - nregs R - shmem S -
  cuda stream id I``; older: ``Kernel NAME - grid size ... - cuda stream id I``, which
  starts the next launch (launches are numbered from 0 in file order).

Every line is accounted for in ``source["lines"]``: rows imported, lines of other
launches, launch lines, lines that are not trace lines at all (NVBit's banner, the
program's own output), access lines with no active lane, and bad lines skipped.
A trace line that does not parse (or is cut short) is an error naming its line
unless ``--skip-bad-lines``; a log holding several launches needs ``--launch N``.

What the log does not hold is estimated and listed in ``source["estimated"]``:

- ``warp`` is the hardware warp slot (``get_warpid``), not the warp's index in its
  block. Within one block every warp holds its own slot, so per block the slots
  are mapped back to indices where the thread pattern allows: when each slot's first
  access is the same opcode over a lane-linear address run (address = a0 + lane x
  width, two or more lanes), the warps are ordered by a0 and the index is
  (a0 - lowest a0) / (32 x width) -- the pattern of ``x[threadIdx.x + ...]``. The
  lowest a0 is taken to be warp 0. Blocks where the pattern fails keep the slot
  (or, if a slot exceeds the block's warps, the slot's rank), and ``source["warp"]``
  says how many blocks were recovered.
- ``seq`` is the position among the warp's memory instructions (the log has no
  other instructions); ``pc`` is one pseudo-PC per distinct opcode string (the log
  has no PCs); the instruction totals count memory instructions only; without a
  launch line, grid and block are the smallest that hold the CTAs and warps seen.
- shared-memory addresses are printed as offsets by NVBit; generic ``LD``/``ST``
  accesses are taken as global (the log gives no shared window base).
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..inputfile import numbered_lines, refuse_binary, require_file
from ..launch import (
    ADDRESS_LIMIT,
    MAX_GRID,
    MAX_REGS_PER_THREAD,
    MAX_THREADS_PER_BLOCK,
    MAX_SMEM_PER_BLOCK,
    SHARED_WINDOW,
    coverage_problem,
    launch_problem,
)
from ..schema import GLOBAL, LOAD, SHARED, WARP_SIZE, Instructions, KernelInfo, control_character
from .accelsim import ParseError
from .objects import ObjectSpec, infer_objects
from .opcodes import CLASS_NAMES, GENERIC, LDGSTS, NONE, classify

log = logging.getLogger(__name__)

_ACCESS_NEW = re.compile(
    r"^MEMTRACE: CTX 0x[0-9a-fA-F]+ - grid_launch_id (\d{1,20}) - CTA (\d{1,20}),(\d{1,20}),(\d{1,20}) - warp (\d{1,20}) - (\S+) - (.*)$"
)
_ACCESS_OLD = re.compile(r"^CTA (\d{1,20}),(\d{1,20}),(\d{1,20}) - warp (\d{1,20}) - (\S+) - (.*)$")
_LAUNCH_NEW = re.compile(
    r"^MEMTRACE: CTX 0x[0-9a-fA-F]+ - LAUNCH - Kernel (?:pc )?0x[0-9a-fA-F]+ - Kernel name (.+?) - grid launch id (\d{1,20}) - "
    r"grid size (\d{1,20}),(\d{1,20}),(\d{1,20}) - block size (\d{1,20}),(\d{1,20}),(\d{1,20}) - nregs (\d{1,20}) - shmem (\d{1,20})"
)
_LAUNCH_OLD = re.compile(
    r"^Kernel (.+?) - grid size (\d{1,20}),(\d{1,20}),(\d{1,20}) - block size (\d{1,20}),(\d{1,20}),(\d{1,20}) - nregs (\d{1,20}) - shmem (\d{1,20})"
)
_HEX = re.compile(r"^0x[0-9a-fA-F]{1,16}$")


@dataclass(frozen=True)
class Launch:
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    nregs: int
    shmem: int
    line: int


def _addresses(text: str) -> list[int] | None:
    toks = text.split()
    if len(toks) != WARP_SIZE or not all(_HEX.match(t) for t in toks):
        return None
    return [int(t, 16) for t in toks]


def parse_log(path, *, launch: int | None = None, skip_bad_lines: bool = False):
    """Read the access lines of one launch; returns (rows, launch info or None, line accounting, launch id)."""
    p = str(path)
    require_file(p)
    refuse_binary(p, "an NVBit mem_trace log (text)")
    acct = Counter()
    launches: dict[int, Launch] = {}
    old_launch = -1
    first_launch: int | None = None
    rows: list[tuple[int, int, int, int, int, str, list[int]]] = []  # (line, launch, x, y, z, warp, opcode, addrs)
    accesses: Counter = Counter()  # access lines per launch, in order of appearance
    for ln, line in numbered_lines(p):
        acct["total"] += 1
        s = line.rstrip("\r\n")
        if s.startswith("MEMTRACE:"):
            m = _ACCESS_NEW.match(s)
            if m:
                lid = int(m.group(1))
                xyz = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
                warp, opcode, rest = int(m.group(5)), m.group(6), m.group(7)
            else:
                lm = _LAUNCH_NEW.match(s)
                if lm:
                    lid = int(lm.group(2))
                    launches[lid] = _launch(p, ln, lm.group(1), lm.groups()[2:])
                    acct["launch_lines"] += 1
                    continue
                if " - LAUNCH - " in s:
                    _bad(p, ln, "a launch line that does not parse", skip_bad_lines, acct)
                    continue
                _bad(p, ln, "a MEMTRACE line that does not parse", skip_bad_lines, acct)
                continue
        elif s.startswith("CTA "):
            m = _ACCESS_OLD.match(s)
            if not m:
                _bad(p, ln, "an access line that does not parse", skip_bad_lines, acct)
                continue
            lid = max(old_launch, 0)
            xyz = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            warp, opcode, rest = int(m.group(4)), m.group(5), m.group(6)
        elif s.startswith("Kernel "):
            lm = _LAUNCH_OLD.match(s)
            if not lm:
                _bad(p, ln, "a launch line that does not parse", skip_bad_lines, acct)
                continue
            old_launch += 1
            launches[old_launch] = _launch(p, ln, lm.group(1), lm.groups()[1:])
            acct["launch_lines"] += 1
            continue
        else:
            acct["not_trace_lines"] += 1
            continue
        # an access line
        accesses[lid] += 1
        if first_launch is None:
            first_launch = lid
        if launch is None and lid != first_launch:
            acct["other_launch_lines"] += 1
            continue
        if any(v >= m for v, m in zip(xyz, MAX_GRID)) or warp > MAX_WARP_SLOT:
            _bad(p, ln, f"CTA {xyz} or warp {warp} beyond CUDA's grid {MAX_GRID} or {MAX_WARP_SLOT} warp slots",
                 skip_bad_lines, acct)  # fmt: skip
            continue
        if launch is not None and lid != launch:
            acct["other_launch_lines"] += 1
            continue
        addrs = _addresses(rest)
        if addrs is None:
            _bad(
                p,
                ln,
                "expected 32 hex addresses (0x...) after the opcode (a garbage or truncated line)",
                skip_bad_lines,
                acct,
            )
            continue
        rows.append((ln, lid, *xyz, warp, opcode, addrs))
    if not accesses:
        raise InputError(f"{p}: no memory access lines ('MEMTRACE: CTX ... - CTA x,y,z - warp ...' or "
                         f"'CTA x,y,z - warp ...') in {acct['total']:,} lines: not an NVBit mem_trace log?")  # fmt: skip
    if launch is None and len(accesses) > 1 and not skip_bad_lines:
        raise InputError(
            f"{p}: the log holds {len(accesses)} launches; pick one with --launch N: {_listing(launches, accesses)}"
        )
    chosen = launch if launch is not None else first_launch
    if launches and chosen not in launches and rows:  # the log has launch lines, none of them this launch's
        log.warning("%s: no launch line for grid launch %s (the log has them for %s): its grid, block and kernel name "
                    "are estimated from the accesses", p, chosen, ", ".join(map(str, sorted(launches)[:5])))  # fmt: skip
    if launch is not None and not rows and launch not in launches:
        listed = f" (it holds {_listing(launches, accesses)})" if accesses else ""
        raise InputError(f"{p}: no accesses of grid launch {launch}{listed}")
    return rows, launches.get(chosen) if chosen is not None else None, acct, chosen


MAX_WARP_SLOT = (1 << 31) - 1
LISTED_LAUNCHES = 20


def _listing(launches: dict[int, Launch], accesses: Counter) -> str:
    """Launches with accesses: id, kernel name and access lines (rows before any is skipped), in file order."""
    items = [f"launch {lid} ({launches[lid].name if lid in launches else 'unnamed: no launch line'}, "
             f"{n} row{'' if n == 1 else 's'})" for lid, n in accesses.items()]  # fmt: skip
    more = len(items) - LISTED_LAUNCHES
    return ", ".join(items[:LISTED_LAUNCHES]) + (f" and {more} more" if more > 0 else "")


def _launch(path: str, ln: int, name: str, numbers) -> Launch:
    """A launch line's fields, its grid and block checked against CUDA's maxima."""
    grid, block = tuple(map(int, numbers[0:3])), tuple(map(int, numbers[3:6]))
    nregs, shmem = int(numbers[6]), int(numbers[7])
    problem = launch_problem(grid, block)
    if problem is None and not (0 <= nregs <= MAX_REGS_PER_THREAD and 0 <= shmem <= MAX_SMEM_PER_BLOCK):
        problem = f"nregs {nregs} or shmem {shmem} beyond 0..{MAX_REGS_PER_THREAD} and 0..{MAX_SMEM_PER_BLOCK}"
    bad = control_character(name)
    if problem is None and bad is not None:  # the trace's metadata refuses it; said here, by the log's line
        problem = f"the kernel name holds the control character {bad!r}"
    if problem:
        raise ParseError(path, ln, f"launch line: {problem}")
    return Launch(name, grid, block, nregs, shmem, ln)


def _bad(path: str, line: int, what: str, skip: bool, acct: Counter) -> None:
    if not skip:
        raise ParseError(path, line, f"{what}; --skip-bad-lines skips such lines")
    acct["skipped_bad_lines"] += 1


def _recover_warps(cta_rows: dict[int, list[int]], slot: np.ndarray, opcode: list[str], widths: np.ndarray,
                   addr: np.ndarray, mask: np.ndarray, wpb: int | None) -> tuple[np.ndarray, Counter]:  # fmt: skip
    """Map hardware warp slots to warp indices per block (module docstring)."""
    warp = slot.astype(np.int64).copy()
    stats: Counter = Counter()
    lanes = np.arange(WARP_SIZE, dtype=np.uint64)
    for cta, idx in cta_rows.items():
        firsts: dict[int, int] = {}
        for i in idx:
            firsts.setdefault(int(slot[i]), i)
        ok = len({opcode[i] for i in firsts.values()}) == 1
        a0s: dict[int, int] = {}
        if ok:
            for s, i in firsts.items():
                m = int(mask[i])
                act = [lane for lane in range(WARP_SIZE) if m >> lane & 1]
                w = int(widths[i])
                if len(act) < 2:
                    ok = False
                    break
                a0 = int(addr[i, act[0]]) - act[0] * w
                if a0 < 0 or not np.array_equal(addr[i, act], np.uint64(a0) + lanes[act] * np.uint64(w)):
                    ok = False
                    break
                a0s[s] = a0
        if ok:
            w = int(widths[next(iter(firsts.values()))])
            lo = min(a0s.values())
            ks = {s: (a - lo) // (WARP_SIZE * w) for s, a in a0s.items()}
            ok = all((a - lo) % (WARP_SIZE * w) == 0 for a in a0s.values()) and len(set(ks.values())) == len(ks)
            ok = ok and (wpb is None or max(ks.values()) < wpb)
        idx_arr = np.asarray(idx)
        if ok:
            warp[idx_arr] = [ks[int(slot[i])] for i in idx]
            stats["recovered"] += 1
        elif wpb is not None and max(firsts) >= wpb:
            order = {s: r for r, s in enumerate(sorted(firsts))}
            warp[idx_arr] = [order[int(slot[i])] for i in idx]
            stats["slot_rank"] += 1
        else:
            stats["slot_kept"] += 1
    return warp, stats


def import_nvbit(path, *, launch: int | None = None, objects: tuple[ObjectSpec, ...] = (),
                 skip_bad_lines: bool = False) -> tuple[dict[str, np.ndarray], KernelInfo]:  # fmt: skip
    """Read one launch of an NVBit mem_trace log into trace columns and metadata."""
    p = str(path)
    rows, lau, acct, lid = parse_log(p, launch=launch, skip_bad_lines=skip_bad_lines)
    ops = {name: classify(name) for name in {r[6] for r in rows}}
    keep = []
    for r in rows:
        c = ops[r[6]]
        if c.space == NONE:
            acct["unclassified_lines"] += 1
        elif not any(r[7]):
            acct["all_lanes_off"] += 1
        else:
            keep.append(r)
    n = len(keep)
    acct["rows"] = n
    addr = np.array([r[7] for r in keep], dtype=np.uint64).reshape(n, WARP_SIZE)
    mask = (addr != 0).astype(np.uint64) << np.arange(WARP_SIZE, dtype=np.uint64)
    mask = mask.sum(axis=1).astype(np.uint32) if n else np.zeros(0, np.uint32)
    opnames = [r[6] for r in keep]
    pseudo = {name: 16 * i for i, name in enumerate(sorted(ops))}
    space = np.empty(n, dtype=np.int8)
    op = np.empty(n, dtype=np.int8)
    width = np.empty(n, dtype=np.int8)
    ldgsts = 0
    for i, name in enumerate(opnames):
        c = ops[name]
        sp, o = c.space, c.op
        if sp == GENERIC:
            sp = GLOBAL
        elif sp == LDGSTS:  # NVBit reports one address per instruction: the global source
            sp, o = GLOBAL, LOAD
            ldgsts += 1
        space[i], op[i], width[i] = sp, o, c.width
    xyz = np.array([r[2:5] for r in keep], dtype=np.int64).reshape(n, 3)
    slot = np.array([r[5] for r in keep], dtype=np.int64)
    estimated = ["seq", "pc", "instructions"]
    if lau is not None:
        grid, block = lau.grid, lau.block
    else:
        grid = tuple(int(v) + 1 for v in xyz.max(axis=0)) if n else (1, 1, 1)
        block = None
        estimated += ["grid", "block"]
    wpb = -(-(block[0] * block[1] * block[2]) // WARP_SIZE) if block else None
    if n and (xyz >= np.array(grid)).any():
        i = int(np.flatnonzero((xyz >= np.array(grid)).any(axis=1))[0])
        raise ParseError(p, keep[i][0], f"CTA {tuple(int(v) for v in xyz[i])} outside the launch's grid {grid}")
    cta = xyz[:, 0] + xyz[:, 1] * grid[0] + xyz[:, 2] * grid[0] * grid[1]
    by_cta: dict[int, list[int]] = defaultdict(list)
    for i, c in enumerate(cta.tolist()):
        by_cta[c].append(i)
    # Without a launch line the block is unknown, but CUDA's has at most 32 warps: slots beyond are ranked.
    warp, wstats = _recover_warps(by_cta, slot, opnames, width, addr, mask, wpb or MAX_THREADS_PER_BLOCK // WARP_SIZE)
    if wpb and n and (warp >= wpb).any():  # named here, by its line, not by the output's metadata check
        i = int(np.flatnonzero(warp >= wpb)[0])
        raise ParseError(p, keep[i][0], f"CTA {tuple(int(v) for v in xyz[i])} has accesses of more warps than the "
                                        f"launch's block {block} holds ({wpb}): warp slot {int(slot[i])}")  # fmt: skip
    shared_far = np.flatnonzero((space == SHARED) & (addr.max(axis=1) >= SHARED_WINDOW)) if n else []
    if len(shared_far):
        i = int(shared_far[0])
        raise ParseError(p, keep[i][0], f"{opnames[i]} is a shared-memory access, but its address "
                                        f"{int(addr[i].max()):#x} is beyond the {SHARED_WINDOW:#x}-byte shared window")  # fmt: skip
    past_end = np.flatnonzero(addr.max(axis=1) > np.uint64(ADDRESS_LIMIT) - width.astype(np.uint64)) if n else []
    if len(past_end):  # named here, by its line (the output's bounds check named a row of a file never written)
        i = int(past_end[0])
        raise ParseError(p, keep[i][0], f"{opnames[i]}: address {int(addr[i].max()):#x} + {int(width[i])} bytes passes "
                                        "the end of the 64-bit address space")  # fmt: skip
    if block is None:
        block = (WARP_SIZE * (int(warp.max()) + 1 if n else 1), 1, 1)
    problem = launch_problem(grid, block) or coverage_problem(grid, block, n)
    if problem:
        raise InputError(f"{p}: launch {lid}: {problem}")
    estimated.append("warp" if wstats["recovered"] < len(by_cta) else "warp (recovered from addresses)")
    # seq: position among the warp's memory instructions, in log order.
    seq = np.zeros(n, dtype=np.int64)
    pos: Counter = Counter()
    for i, key in enumerate(zip(cta.tolist(), warp.tolist())):
        seq[i] = pos[key]
        pos[key] += 1
    cols = {
        "cta": cta.astype(np.int32),
        "warp": warp.astype(np.int32),
        "seq": seq,
        "pc": np.array([pseudo[nm] for nm in opnames], dtype=np.int32),
        "op": op,
        "space": space,
        "width": width,
        "mask": mask,
        "addr": addr,
    }
    found = infer_objects(space, cols["pc"], op, width, mask, addr, explicit=objects)
    cols["obj"] = found.obj
    classes = {k: 0 for k in CLASS_NAMES}
    classes["ldst"] = n
    lines = {k: int(acct.get(k, 0)) for k in ("total", "rows", "other_launch_lines", "launch_lines", "not_trace_lines",
                                               "all_lanes_off", "unclassified_lines", "skipped_bad_lines")}  # fmt: skip
    assert lines["total"] == sum(v for k, v in lines.items() if k != "total"), lines
    if lines["unclassified_lines"]:
        unknown = sorted(name for name, c in ops.items() if c.space == NONE)
        log.warning("%s: %d line%s of opcodes not read as memory accesses, not imported (%s)", p,
                    lines["unclassified_lines"], "" if lines["unclassified_lines"] == 1 else "s", ", ".join(unknown[:8]))  # fmt: skip
    if lines["skipped_bad_lines"]:
        log.warning(
            "%s: skipped %d bad line%s (--skip-bad-lines)",
            p,
            lines["skipped_bad_lines"],
            "" if lines["skipped_bad_lines"] == 1 else "s",
        )
    source: dict[str, Any] = {
        "format": "nvbit",
        "file": os.path.abspath(p),
        "launch": lid,
        "form": "MEMTRACE" if rows and rows[0][1] is not None and _first_is_new(p) else "old",
        "lines": lines,
        "skipped_lines": lines["skipped_bad_lines"],
        "estimated": estimated,
        "warp": (f"hardware warp slot mapped to the warp index for {wstats['recovered']} of {len(by_cta)} blocks "
                 f"(lane-linear first accesses); slot kept for {wstats['slot_kept']}, slot rank for {wstats['slot_rank']}"),
        "pc": "one pseudo-PC per distinct opcode: " + ", ".join(f"{k}={v:#x}" for k, v in sorted(pseudo.items(), key=lambda kv: kv[1])),
        "ldgsts_shared_half_missing": ldgsts,
        "objects": found.report["objects"],
        "rows_on_two_objects": found.report["rows_on_two_objects"],
    }  # fmt: skip
    info = KernelInfo(
        kernel=lau.name if lau else f"launch{lid}",
        grid=grid,
        block=block,
        objects=found.objects,
        instructions=Instructions(executed=n, warps=len(pos), **classes),
        regs_per_thread=lau.nregs if lau else 0,
        smem_per_block=lau.shmem if lau else 0,
        source=source,
    )
    return cols, info


def _first_is_new(path: str) -> bool:
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("MEMTRACE:"):
                return True
            if line.startswith("CTA ") or line.startswith("Kernel "):
                return False
    return False
