"""Why a placement is faster or slower than the sample, in a developer's words.

Per moved object: how it is accessed, the addressing instructions the move saves or
costs, which cache now serves it and how often it hits (its own requests, then those of the
space with the other objects in it named), and for a staged object its tile, windows and write-back.
Per kernel: the change of each time term, trips to DRAM, replays by cause (bank
conflicts, divergent constant reads, ...), the staging code's loads, stores and
barriers, occupancy. ``moved_events`` keeps the earlier, model-internal summary that
``--json`` has always carried as ``moved``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import cachesim
import traces
from traces import SPACE_SHORT

from . import units
from .attribution import ObjectAccesses
from .hms import Terms
from .placements import STAGING_SOURCE, is_staged, moved_key

# (label, getter) of the events compared; counts and latencies a reader can check.
EVENTS = (
    ("issued instructions", lambda t: t.issued_instructions),
    ("addressing instructions", lambda t: t.addressing_delta),
    ("replays", lambda t: sum(t.replays.values())),
    ("memory requests", lambda t: t.mem_requests),
    ("DRAM requests", lambda t: t.dram_requests),
    ("row-buffer conflicts", lambda t: t.row_buffer.get("conflict", 0)),
    ("row-buffer hits", lambda t: t.row_buffer.get("hit", 0)),
    ("queuing delay (cycles)", lambda t: t.mean_queuing_delay),
    ("AMAT (cycles)", lambda t: t.amat),
    ("warps per SM", lambda t: t.n),
)

LEVEL_WORDS = {"l1": "L1 cache", "tex": "texture cache", "const": "constant cache", "l2": "L2 cache"}
SPACE_WORDS = {
    "global": "global memory", "texture1d": "a 1D texture", "texture2d": "a 2D texture", "constant": "constant memory",
    "readonly": "the read-only path (__ldg)", "shared": "shared memory", "local": "local memory",
}  # fmt: skip
REPLAY_WORDS = {
    "global words per warp over the transaction size": "extra transactions of uncoalesced global accesses",
    "constant cache misses": "constant cache misses",
    "constant address divergence": "constant reads of several addresses in one warp (serialized)",
    "shared memory bank conflicts": "shared-memory bank conflicts",
}
STAGE_SOURCE_WORDS = {"global": "global memory", "texture1d": "a 1D texture", "readonly": "the read-only path"}


def moved_events(sample: Terms, target: Terms, top: int = 3) -> list[dict]:
    """The ``top`` events with the largest relative change from the sample, largest first (model internals).

    ``change`` is (target - sample) / |sample|; from a sample of 0 a relative change is undefined and
    ``change`` is None (JSON null; ``target`` holds the value and its sign). Those events come first.
    """
    out = []
    for label, get in EVENTS:
        a, b = float(get(sample)), float(get(target))
        if a == b:
            continue
        rel = (b - a) / abs(a) if a else None
        out.append({"event": label, "sample": a, "target": b, "change": rel})
    out.sort(key=lambda e: (float("-inf") if e["change"] is None else -abs(e["change"]), e["event"]))
    return out[:top]


@dataclass(frozen=True)
class ObjectReason:
    """What moving one object changes."""

    object: str
    before: str
    after: str
    facts: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"object": self.object, "from": self.before, "to": self.after, "facts": list(self.facts)}


@dataclass(frozen=True)
class Explanation:
    """Why a placement differs from the sample: per moved object, then per kernel."""

    objects: tuple[ObjectReason, ...]
    kernel: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"objects": [o.as_dict() for o in self.objects], "kernel": list(self.kernel)}

    def lines(self) -> list[str]:
        out = [f"{o.object} {o.before} -> {o.after}: " + "; ".join(o.facts) + "." for o in self.objects]
        if self.kernel:
            out.append("kernel: " + "; ".join(self.kernel) + ".")
        return out

    def short(self) -> str:
        """One line: each moved object's first fact, to its first comma."""
        return "; ".join(f"{o.object}: {o.facts[0].split(', ')[0]}" for o in self.objects if o.facts) or "the sample"


def space_of(short: str) -> str:
    """The space the kernel's accesses of an object in ``short`` go to (staged objects: shared memory)."""
    return "shared" if short == "S" or is_staged(short) else SPACE_SHORT[short]


def _and(names: list[str]) -> str:
    """'M', 'M and N', 'M, N and P'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _reads_from(short: str) -> str:
    """The space whose caches serve an object's global-memory traffic in ``short``: a staged object's source
    (its copies), else :func:`space_of`."""
    return STAGING_SOURCE[short] if is_staged(short) else space_of(short)


def _served(caches: Mapping[str, Mapping[str, int]], space: str) -> str | None:
    """How the cache levels answered the requests of ``space``: "texture cache 94 % hits of 8,192 requests, L2
    cache ..., 512 L2 misses": the last level's misses, which are not all DRAM's requests (a store that misses an L2
    that allocates without fetching goes nowhere yet; the kernel's line gives DRAM's count)."""
    parts = []
    last = None
    for key, c in caches.items():
        level, _, sp = key.partition(".")
        if sp != space or not c.get("requests"):
            continue
        req, hits = c["requests"], c.get("hits", 0)
        parts.append(f"{LEVEL_WORDS.get(level, level)} {units.share(hits / req)} hits of {units.count(req)} requests")
        last = (level, c.get("misses", req - hits))
    if not parts:
        return None
    level, misses = last
    word = LEVEL_WORDS.get(level, level).removesuffix(" cache")
    return ", ".join(parts) + f", {units.count(misses)} {word} {'miss' if misses == 1 else 'misses'}"


def _own(target: Terms, name: str, space: str) -> str | None:
    """How the cache levels of ``space`` answered ``name``'s own requests (``Terms.object_caches``: ``cachesim``
    counts them per object), in :func:`_served`'s words; None without per-object counts."""
    levels = {key.partition(".")[0] for key in target.caches if key.partition(".")[2] == space}
    own = {f"{lvl}.{space}": c for lvl, c in target.object_caches.get(name, {}).items() if lvl in levels}
    return _served(own, space)


def _accesses(a: ObjectAccesses) -> str:
    kinds = [(a.loads, "read"), (a.stores, "write"), (a.atomics, "atomic")]
    return " and ".join(f"{units.count(n)} warp {w}{'s' if n != 1 else ''}" for n, w in kinds if n)


def _tile(info: traces.KernelInfo, name: str, staging: Mapping[str, Any]) -> str | None:
    tile = staging.get("tiles", {}).get(name)
    if tile is None:
        return None
    o = info.object(name)
    pitch = max(int(tile["pitch"]), 1)
    pad = max(int(tile.get("pad", 0)), 0)
    rows = int(tile["bytes"]) // ((pitch + pad) * o.elem_bytes) if o.elem_bytes else 0
    w = int(staging.get("windows", 1))
    shape = f"{rows} x {pitch}" if o.shape is not None else f"{rows * pitch}"
    padded = f", its rows padded to {pitch + pad} elements (;pad={pad})" if pad else ""
    return (f"a tile of {shape} elements{padded} ({units.nbytes(int(tile['bytes']))}) per block, "
            f"{w} window{'s' if w != 1 else ''} ({staging.get('why', '')})")  # fmt: skip


def _object_reason(info, name: str, before: str, after: str, acc: ObjectAccesses, addr: int, target: Terms,
                   together: list[str], writeback: str, pairs: bool = False) -> ObjectReason:  # fmt: skip
    """``together``: the other objects in its space (sharing its caches); ``pairs``: the GPU reads an aligned pair of
    uniform constants with one load (``placement.memory.uniform_constant_pairs_of``)."""
    facts = []
    if is_staged(after) or (after == "S" and before != "S"):
        tile = _tile(info, name, target.staging)
        source = STAGING_SOURCE.get(after, "global")
        if writeback == "atomic":
            what = "zeroed"
        elif writeback == "store" and not acc.loads:
            what = "not loaded (the kernel only writes it)"
        else:
            what = f"copied from {STAGE_SOURCE_WORDS[source]}"
        facts.append(f"staged in shared memory: {tile}, {what}" if tile else f"staged in shared memory, {what}")
        copy = target.staging.get("copy") if target.staging and acc.loads and writeback != "atomic" else None
        if copy:
            facts.append(f"its copy loop as nvcc compiles it (;unrolled): {copy}")
        if writeback == "store":
            facts.append("its written elements are stored back to global memory after each window")
        elif writeback == "atomic":
            facts.append("privatized: its atomics go to the block's copy, added back to global memory with atomicAdd")
        served = _served(target.caches, source) if writeback != "atomic" else None
        if served:
            # the objects whose requests share the source's caches: the others staged from it, and those in it
            others = [n for n, s in target.placement.items() if n != name and _reads_from(s) == source]
            own = _own(target, name, source) if others else None
            what = "the copies" if acc.loads else "the write-back"
            if own:  # its own counts (the space's totals were given under each staged object)
                facts.append(f"{what}: {own}; {_and([name, *others])} together: {served}")
            else:
                with_ = f" (with {', '.join(others)})" if others else ""
                facts.append(f"{what}{with_}: {served}")
    else:
        space = space_of(after)
        facts.append(f"in {SPACE_WORDS[space]}")
    if acc.total:
        facts.append(f"{_accesses(acc)} now served by shared memory" if space_of(after) == "shared"
                     else _accesses(acc))  # fmt: skip
    if addr:
        per = abs(addr) / acc.total if acc.total else 0.0
        # a move to or from constant memory on a GPU that pairs uniform constants, or out of the operands of the
        # sample's instructions: the delta holds loads too
        operand = name in (info.extra.get("const_operands") or ()) and before == "C"
        paired = pairs and "C" in (before, after) and not operand
        what = "to address and load it" if paired or operand else "to compute its addresses"
        why = ("; uniform floats in pairs, one load each in constant memory" if paired
               else "; instruction operands in constant memory, loads elsewhere" if operand else "")  # fmt: skip
        facts.append(f"{units.count(abs(addr))} {'fewer' if addr < 0 else 'more'} instructions {what} "
                     f"({per:.3g} per access{why})")  # fmt: skip
    if not (is_staged(after) or after == "S"):
        served = _served(target.caches, space_of(after))
        own = _own(target, name, space_of(after)) if together else None
        if served and own:
            facts.append(f"{own}; {_and([name, *together])} together: {served}")
        elif served and together:
            facts.append(f"{served}, for {_and([name, *together])} together")
        elif served:
            facts.append(served)
    return ObjectReason(name, before, after, tuple(facts))


def _bound_by(sample: Terms, target: Terms, kind: str) -> str:
    """Which of the two have ``kind`` ('round', 'block', 'atomic': ``Terms.bound``) as their T, not Eq. 1: 'the
    sample', 'the placement', both joined by 'and', or '' for neither."""
    return " and ".join(n for n, t in (("the sample", sample), ("the placement", target)) if t.bound == kind)


def _fp64_bound(t: Terms) -> bool:
    """Whether the double-precision units' time (T_FP64) is the parallel part of a placement's T_comp."""
    return t.t_fp64 > 0 and t.t_fp64 >= max(t.w_parallel, t.t_lsu, t.t_tex)


def _term_changes(sample: Terms, target: Terms, ns_per_cycle: float) -> str:
    parts = []
    floors = (("round", "T_round (waits on rounds of loads)", sample.t_round, target.t_round),
              ("block", "T_block (copies before work)", sample.t_block, target.t_block),
              ("atomic", "T_atomic (the busiest atomic unit)", sample.t_atomic, target.t_atomic))  # fmt: skip
    bound = tuple((label, a, b) for kind, label, a, b in floors if _bound_by(sample, target, kind))
    for label, a, b in (("T_comp", sample.t_comp, target.t_comp), ("T_mem", sample.t_mem, target.t_mem),
                        ("T_overlap (hidden)", sample.t_overlap, target.t_overlap), *bound):  # fmt: skip
        d = (b - a) * ns_per_cycle
        if abs(d) >= 0.005 * max(sample.time_ns, 1e-9):
            parts.append(f"{label} {'+' if d > 0 else '-'}{units.time_ns(abs(d))}")
    return ", ".join(parts)


def _signed_ns(cycles: float, ns_per_cycle: float) -> str:
    d = cycles * ns_per_cycle
    return f"{'+' if d > 0 else '-'}{units.time_ns(abs(d))}"


def _t_comp_parts(sample: Terms, target: Terms, ns_per_cycle: float, warps_per_block: int) -> str | None:
    """T_comp's change split into its parts, max(W_parallel, T_LSU, T_TEX, T_FP64) + W_serial (``hms.t_comp``),
    where W_serial changes (the barriers a staged placement adds): fewer issued instructions can come with a longer
    T_comp."""
    d = target.t_comp - sample.t_comp
    if target.w_serial == sample.w_serial or abs(d * ns_per_cycle) < 0.005 * max(sample.time_ns, 1e-9):
        return None
    par = [max(t.w_parallel, t.t_lsu, t.t_tex, t.t_fp64) for t in (sample, target)]
    serial = (f"W_serial {_signed_ns(target.w_serial - sample.w_serial, ns_per_cycle)} "
              f"({units.count(sample.w_serial)} -> {units.count(target.w_serial)} cycles")  # fmt: skip
    barriers = round((target.staging.get("inserted") or {}).get("barriers", 0)) if target.staging else 0
    if barriers:
        block = f"the {warps_per_block} warps of its block" if warps_per_block else "the warps of its block"
        serial += (f": O_sync, the {units.count(barriers)} __syncthreads() the staging code adds, each waiting for "
                   f"{block})")  # fmt: skip
    else:
        serial += ")"
    di = target.issued_instructions - sample.issued_instructions
    issued = (
        (
            f": {units.count(abs(di))} {'fewer' if di < 0 else 'more'} issued instructions, "
            f"{units.count(sample.issued_instructions)} -> {units.count(target.issued_instructions)}"
        )
        if di
        else ""
    )
    return (f"T_comp {_signed_ns(d, ns_per_cycle)} is {serial} and the parallel part "
            f"{_signed_ns(par[1] - par[0], ns_per_cycle)} (max(W_parallel, T_LSU) {units.count(par[0])} -> "
            f"{units.count(par[1])} cycles{issued})")  # fmt: skip


def _kernel_facts(sample: Terms, target: Terms, ns_per_cycle: float, warps_per_block: int = 0,
                  own_build: bool = False, own_mlp: bool = False,
                  wavefronts: frozenset[str] = frozenset()) -> list[str]:  # fmt: skip
    out = []
    terms = _term_changes(sample, target, ns_per_cycle)
    if terms:
        if sample.bound == target.bound:
            out.append(f"{units.time_ns(sample.time_ns)} -> {units.time_ns(target.time_ns)} ({terms})")
        else:  # the terms' changes do not add up to the time's: T is another term on each side
            from .textout import BOUND_WORDS

            out.append(f"{units.time_ns(sample.time_ns)} (bound by {BOUND_WORDS[sample.bound]}) -> "
                       f"{units.time_ns(target.time_ns)} (bound by {BOUND_WORDS[target.bound]}); each term's change: "
                       f"{terms}")  # fmt: skip
    parts = _t_comp_parts(sample, target, ns_per_cycle, warps_per_block)
    if parts:
        out.append(parts)
    l2 = [sum(c.get("requests", 0) for k, c in t.caches.items() if k.startswith("l2.")) for t in (sample, target)]
    if l2[0] != l2[1]:
        where = "now served by first-level caches or shared memory" if l2[1] < l2[0] else "more requests reach the L2"
        out.append(f"L2 lookups {units.count(l2[0])} -> {units.count(l2[1])} ({units.count(abs(l2[1] - l2[0]))} "
                   f"{'fewer' if l2[1] < l2[0] else 'more'}, {where})")  # fmt: skip
    if target.dram_requests != sample.dram_requests:
        d = target.dram_requests - sample.dram_requests
        out.append(f"DRAM requests {units.count(sample.dram_requests)} -> {units.count(target.dram_requests)} "
                   f"({units.count(abs(d))} {'fewer' if d < 0 else 'more'})")  # fmt: skip
    for cause, n in target.replays.items():
        a = sample.replays.get(cause, 0)
        if n != a:
            how = ("; on this GPU further wavefronts of the load/store path, not issued again"
                   if cause in wavefronts else "")  # fmt: skip
            out.append(f"{REPLAY_WORDS.get(cause, cause)}: {units.change(n - a)} replays "
                       f"({units.count(a)} -> {units.count(n)}{how})")  # fmt: skip
    if target.l1_bank_conflicts != sample.l1_bank_conflicts:
        a, n = sample.l1_bank_conflicts, target.l1_bank_conflicts
        out.append(f"bank conflicts of the accesses the L1 serves: {units.change(n - a)} ({units.count(a)} -> "
                   f"{units.count(n)}; words of different lines in one bank of the L1, the array shared memory "
                   "also uses)")  # fmt: skip
    ins = target.staging.get("inserted") if target.staging else None
    if ins:
        words = (("loads", "loads"), ("stores", "shared-memory stores"), ("int", "other instructions"),
                 ("barriers", "__syncthreads()"), ("writeback_loads", "write-back loads from shared memory"),
                 ("writeback_stores", "write-back stores"))  # fmt: skip
        parts = [f"{units.count(ins[k])} {w}" for k, w in words if round(ins.get(k, 0))]
        out.append("the staging code adds " + ", ".join(parts) + " (warp-level)")
    if target.n != sample.n or target.blocks_per_sm != sample.blocks_per_sm:
        word = "lowered" if target.n < sample.n else "raised"
        out.append(f"occupancy {word}: {sample.n} -> {target.n} warps per SM ({sample.blocks_per_sm} -> "
                   f"{target.blocks_per_sm} blocks), shared memory {units.nbytes(sample.smem_per_block)} -> "
                   f"{units.nbytes(target.smem_per_block)} per block"
                   + ("; the placement's build has registers of its own (the trace's regs_by_placement)"
                      if own_build else ""))  # fmt: skip
    if abs(target.mlp / sample.mlp - 1.0) > 0.05:
        why = ("the placement's build schedules its loads otherwise (the trace's mlp_by_placement)" if own_mlp
               else "its other loads take the moved object's slots (GPUPerf's MLP, scaled)")  # fmt: skip
        out.append(f"loads in flight per warp (MLP) {sample.mlp:.3g} -> {target.mlp:.3g}: {why}")
    if sample.t_lsu and abs(target.t_lsu / sample.t_lsu - 1.0) > 0.05:
        out.append(f"the SMs' load/store path busy (T_LSU: its data path, or its issue where slower) "
                   f"{units.time_ns(sample.t_lsu * ns_per_cycle)} -> "
                   f"{units.time_ns(target.t_lsu * ns_per_cycle)}")  # fmt: skip
    if which := _bound_by(sample, target, "round"):
        out.append(f"{which} bound by the warps' waits (T_round: each round of loads as long as its slowest, N warps "
                   f"at a time): {units.count(sample.slow_rounds)} of {units.count(sample.rounds)} rounds wait on the "
                   f"L2 -> {units.count(target.slow_rounds)} of {units.count(target.rounds)}")  # fmt: skip
    if which := _bound_by(sample, target, "block"):
        bound = target if target.bound == "block" else sample
        blocks = units.plural(bound.blocks_per_sm, "block")
        out.append(f"{which} bound by the blocks' barriers (T_block: each window's copy, the rounds of the block's "
                   f"slowest warp at DRAM's latency, before the block's work; {blocks} an SM, copying "
                   f"together in the first window, then each copying while the others work): "
                   f"{units.count(sample.copy_rounds)} copy rounds -> {units.count(target.copy_rounds)}")  # fmt: skip
    if which := _bound_by(sample, target, "atomic"):
        out.append(f"{which} bound by the L2's atomic units (T_atomic: the busiest unit's updates one after another, "
                   f"while the SMs issue): {units.time_ns(sample.t_atomic * ns_per_cycle)} -> "
                   f"{units.time_ns(target.t_atomic * ns_per_cycle)}")  # fmt: skip
    if _fp64_bound(target):
        out.append(f"the SMs' double-precision units bind T_comp, {units.time_ns(target.t_fp64 * ns_per_cycle)} "
                   "(T_FP64: the kernel's double-precision instructions at the GPU's results a clock, the same for "
                   "every placement; the placements' memory effects count only beyond it)")  # fmt: skip
    if abs(target.t_tex - sample.t_tex) > 0.05 * max(sample.t_comp, 1e-9):
        out.append(f"the SMs' texture units busy {units.time_ns(sample.t_tex * ns_per_cycle)} -> "
                   f"{units.time_ns(target.t_tex * ns_per_cycle)} (T_TEX, one texel a unit a cycle)")  # fmt: skip
    return out


def explain(info: traces.KernelInfo, sample: Terms, target: Terms, accesses: Mapping[str, ObjectAccesses],
            addressing: Mapping[str, int], writeback: Mapping[str, str] | None = None,
            pairs: bool = False, reissued: tuple[int, ...] = tuple(cachesim.REPLAY_CAUSES)) -> Explanation:  # fmt: skip
    """Why ``target`` differs from ``sample``: per moved object (``accesses`` and ``addressing`` per object from
    ``placement.attribution``; ``writeback`` per staged object: 'none', 'store' or 'atomic'), then per kernel;
    ``pairs``: the GPU reads uniform constants in pairs (the addressing then holds the pairs' loads too);
    ``reissued``: the replay causes the GPU issues again (``placement.memory.reissued_replay_causes_of``), the
    others' replays said to be wavefronts of the load/store path."""
    ns_per_cycle = sample.term_ns_per_cycle  # the terms are the trace's blocks' cycles (hms.blocks_scale)
    reasons = []
    spaces = {n: space_of(s) for n, s in target.placement.items()}
    for name, after in target.placement.items():
        before = sample.placement.get(name)
        if before == after:
            continue
        together = [n for n, s in spaces.items() if n != name and s == spaces[name]]
        reasons.append(_object_reason(info, name, before, after, accesses[name], addressing.get(name, 0), target,
                                      together, (writeback or {}).get(name, "none"), pairs))  # fmt: skip
    build = moved_key(sample.placement, target.placement)
    own_build = build in (info.extra.get("regs_by_placement") or {})
    own_mlp = build in (info.extra.get("mlp_by_placement") or {})
    wavefronts = frozenset(name for c, name in cachesim.REPLAY_CAUSES.items() if c not in reissued)
    return Explanation(tuple(reasons), tuple(_kernel_facts(sample, target, ns_per_cycle, info.warps_per_block,
                                                           own_build, own_mlp, wavefronts)))  # fmt: skip


__all__ = ["Explanation", "ObjectReason", "explain", "moved_events", "space_of"]
