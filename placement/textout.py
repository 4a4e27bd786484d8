"""The text ``placement rank`` and ``placement evaluate`` print: one number format (``placement.units``).

``placement.results``' ``text()`` calls it; it names the result classes for the type checker only.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from . import units
from .texttable import table
from .uncertainty import MODEL_RATIO_ERROR

if TYPE_CHECKING:  # pragma: no cover
    from .results import EvaluationResult, Placed, RankResult

TRAIN = ("To train it, time a few placements of this kernel on the GPU, list them in a CSV (columns trace, placement, "
         "measured_ns) and run `placement train MEASURED.csv --gpu {gpu} -o coeffs.toml`; then pass --overlap coeffs.toml.")  # fmt: skip


def _ns_per_cycle(p: Placed) -> float:
    return p.evaluation.sample.term_ns_per_cycle


BOUND_WORDS = {"eq1": "Eq. 1", "round": "T_round", "block": "T_block", "atomic": "T_atomic"}
"""The ranking's "bound by" column: the term that is a placement's T (``Terms.bound``)."""


def _row(p: Placed, mark: str) -> list[str]:
    t, k = p.evaluation.target, _ns_per_cycle(p)
    return [mark, p.label, units.time_ns(t.time_ns), units.speedup(p.speedup), BOUND_WORDS[t.bound],
            units.time_ns(t.t_comp * k), units.time_ns(t.t_mem * k), units.time_ns(t.t_overlap * k)]  # fmt: skip


HEADER = ["#", "placement", "time", "speedup", "bound by", "T_comp", "T_mem", "T_overlap"]


def time_line(ranked: list[Placed]) -> str:
    """How the table's time is made of its columns: the launch and the term in "bound by" (Eq. 1's T_comp + T_mem -
    T_overlap, or a floor above it), scaled to the launch's blocks."""
    floors = sorted({BOUND_WORDS[p.evaluation.target.bound] for p in ranked} - {"Eq. 1"})
    launch = max(p.evaluation.target.t_launch for p in ranked) > 0
    floor = (f"; where {' or '.join(floors)} is named, that floor is above Eq. 1 and is the time (README \"Reading the "
             "results\")") if floors else ""  # fmt: skip
    return (f"time = {'the launch + ' if launch else ''}the term in \"bound by\": Eq. 1 is T_comp + T_mem - "
            f"T_overlap{floor}.")  # fmt: skip


def measured_line(ranked: list[Placed]) -> str:
    """With a sample time measured on this GPU, each ranked placement's prediction as measured x T(target) /
    T(sample) (``Evaluation.predicted_ns``, the JSON's ``predicted_ns``); empty without one."""
    e = ranked[0].evaluation if ranked else None
    if e is None or e.predicted_ns is None:
        return ""
    each = ", ".join(f"{'#' + str(p.rank) if p.rank is not None else 'the sample'} "
                     f"{units.time_ns(p.evaluation.predicted_ns)}" for p in ranked)  # fmt: skip
    return (f"Scaled by the sample's measured {units.time_ns(e.measured_sample_ns)} (measured x T(target) / "
            f"T(sample)): {each}.")  # fmt: skip


def overlap_line(trained: bool, source: str, gpu: str) -> str:
    if trained:
        return f"T_overlap: {source}."
    return "T_overlap: GPUPerf's analytical fallback (no trained coefficients). " + TRAIN.format(gpu=gpu)


def launch_line(t, gpu) -> str:
    """What of a predicted time is the launch (``hms.t_launch``), or that the configuration does not know it."""
    if gpu is None:
        return ""
    c = gpu.compute
    if not (c.launch_us or c.launch_per_block_ns):
        return (f"Launch: not in the {gpu.name} configuration (compute.launch_us, launch_per_block_ns): the times are "
                "the kernel's alone; `placement calibrate` measures them on your GPU.")  # fmt: skip
    return (f"Launch: {units.time_ns(gpu.cycles_to_ns(t.t_launch))} of the sample's {units.time_ns(t.time_ns)} is the launch "
            f"(an empty kernel: {c.launch_us:g} µs and {c.launch_per_block_ns:g} ns a block, from the {gpu.name} "
            "configuration), in every placement's time alike.")  # fmt: skip


def blocks_line(t, blocks: tuple[int, int] | None = None, gpu=None) -> str:
    """Where the trace's time was scaled to its launch's (``hms.blocks_scale``): how, and why (``blocks``: the
    launch's and the trace's blocks, with ``gpu`` its SMs; without them, the reasons it can have)."""
    if t.blocks_scale == 1.0:
        return ""
    why = ("the trace holds fewer blocks than its launch, extra.traced_ctas and extra.launch_ctas, or the launch's "
           "blocks do not spread evenly over the SMs")  # fmt: skip
    if blocks is not None and gpu is not None:
        launched, traced = blocks
        sms = gpu.compute.sms
        parts = []
        if traced < launched:
            parts.append(f"the trace holds {units.count(traced)} of its launch's {units.count(launched)} blocks "
                         "(extra.traced_ctas, extra.launch_ctas)")  # fmt: skip
        if launched % min(sms, launched):
            parts.append(f"the launch's {units.count(launched)} blocks on {sms} SMs: the busiest runs "
                         f"{-(-launched // sms)}, {launched / sms:.3g} on average")  # fmt: skip
        why = "; ".join(parts) or why
    return (f"Blocks: each time is T of the trace's blocks x {t.blocks_scale:.4g} (the busiest SM's blocks of the "
            f"launch over the trace's blocks per SM: {why}) plus the launch, and so are the T_comp, T_mem and "
            "T_overlap shown.")  # fmt: skip


def excluded_lines(excluded: dict[str, dict[str, str]]) -> list[str]:
    """Per object, the spaces it may not take, grouped by the rule that forbids them."""
    out = []
    for name, spaces in excluded.items():
        by_rule: dict[str, tuple[list[str], str]] = {}
        for space, why in spaces.items():
            m = re.match(r"\(([^)]*)\):\s*(.*)", why)
            rule, text = (m.group(1), m.group(2)) if m else ("", why)
            text = re.sub(r",? not \S+$", "", text)
            by_rule.setdefault(rule, ([], text))[0].append(space)
        for spaces_, text in by_rule.values():
            out.append(f"  {name} not in {', '.join(spaces_)}: {text}")
    return out


def search_line(r: RankResult) -> str:
    legal = (f"{units.count(r.legal_placements)} legal placements" if r.legal_placements is not None
             else f"at most {units.count(r.candidates)} placements (too many to count the legal ones)")  # fmt: skip
    if r.legal_placements is not None and r.legal_placements < r.candidates:
        other = r.candidates - r.legal_placements
        legal += (f" (the other {units.count(other)} of the {units.count(r.candidates)} the per-object rules allow "
                  "break a rule only together: the C objects share the constant bank, staged tiles and shared "
                  "arrays the block's shared memory)")  # fmt: skip
    elif r.strategy != "exhaustive":
        legal += f" (of {units.count(r.candidates)} the per-object rules allow)"
    s = r.surrogate
    n_twins = int(s.get("unrolled_twins", 0))
    twins = (f" ({units.count(n_twins)} more: the ;unrolled twins of the staged ones, each ranked as the faster of "
             "the two)") if n_twins else ""  # fmt: skip
    if r.strategy == "exhaustive":
        return f"{legal}, every one evaluated exactly{twins}."
    singles = int(s.get("single_moves", 0))
    n_skip, n_pair = int(s.get("candidates_skipped", 0)), int(s.get("pairs_skipped", 0))
    skipped = (f" ({units.count(n_skip)} of the candidates and {units.count(n_pair)} of the pairs skipped: the "
               "surrogate's error measured on others with the same objects in each shared cache and in shared memory "
               "put them below the top)") if n_skip or n_pair else ""  # fmt: skip
    polished = int(s.get("polished", 0))
    around = f", and {units.count(polished)} one object away from the best" if polished else ""
    every = r.legal_placements is not None and r.evaluations - n_twins >= r.legal_placements
    tail = ("That is every legal placement, as `--exhaustive` would have it." if every else
            "Every placement ranked here was evaluated exactly; `--exhaustive` evaluates them all.")  # fmt: skip
    return (f"{legal}; {units.count(r.evaluations - n_twins)} "
            f"evaluated exactly{twins}: the sample, {units.count(singles)} single-object moves, "
            f"{units.plural(int(s.get('pair_terms', 0)), 'pair')} and the {units.count(s.get('candidates', 0))} best CP-SAT found "
            f"under their sum{skipped}{around}, each placement counted once where these coincide. {tail}")  # fmt: skip


def pasteable_line(r: RankResult, ranks: dict[str, int]) -> str:
    """Where #1's code changes cannot be pasted as is: which ranked placement's can, or that none faster than the
    sample can."""
    label = r.hints_pasteable
    if label is None and "sample" in ranks:
        return ("No placement faster than the sample has code to paste as is: set the tiles' origins by hand, "
                "or keep the sample.")  # fmt: skip
    if label is None:
        return (f"No placement of the {len(r.ranking)} ranked here has code to paste as is; "
                "a larger --top looks further.")  # fmt: skip
    p = r.ranking[ranks[label] - 1]
    return (f"#{p.rank} ({label}, {p.speedup:.2f}x) is the best ranked placement with code to paste as is: "
            f"`placement evaluate` with --place '{label}' --hints gives it.")  # fmt: skip


def rank_text(r: RankResult) -> str:
    s = r.sample
    names = list(s.placement)
    lines = [
        f"{r.kernel} on {r.gpu}: {len(names)} objects ({', '.join(names)}); sample "
        f"{','.join(f'{k}={v}' for k, v in s.placement.items())}, predicted {units.time_ns(s.time_ns)}",
        search_line(r),
    ]
    ex = excluded_lines(r.excluded)
    if ex:
        lines += ["Not allowed:"] + ex
    extra = [] if any(p.label == "sample" for p in r.ranking) else [s]  # the sample's row below, if not ranked
    rows = [_row(p, str(p.rank)) for p in r.ranking] + [_row(p, "-") for p in extra]
    lines += ["", table(rows, HEADER, "llrrlrrr"), time_line([*r.ranking, *extra])]
    lines += [x for x in (measured_line([*r.ranking, *extra]),) if x] + [""]
    lines += r.uncertainty()
    if r.hints is not None:
        ranks = {p.label: p.rank for p in r.ranking}
        lines += [f"#{ranks[label]} ({label}): --hints cannot give code to paste as is: {why}."
                  for label, why in r.hints_incomplete.items()]  # fmt: skip
        if r.best.label in r.hints_incomplete:
            lines.append(pasteable_line(r, ranks))
    best = r.best
    if best.label != "sample":
        verb = "faster" if best.speedup >= 1 else "slower"
        head = f"What #1 ({best.label}) changes:" if best.within_model_error else f"Why #1 ({best.label}) is {verb}:"
        lines += ["", head] + [f"  {x}" for x in best.explanation.lines()]
    lines += ["", overlap_line(r.overlap_trained, r.overlap_source, r.gpu)]
    launch = launch_line(s.evaluation.target, r.gpu_config)
    lines += [x for x in (launch, blocks_line(s.evaluation.target, r.blocks, r.gpu_config)) if x]
    if r.hints is not None:
        from .hints import text

        lines += ["", text(r.hints, best.label, r.gpu_config)]
    elif best.label != "sample":
        lines.append("The CUDA changes for #1: add --hints.")
    return "\n".join(lines)


def evaluation_text(r: EvaluationResult) -> str:
    s, t = r.sample.evaluation.sample, r.target.evaluation.target
    k = _ns_per_cycle(r.target)
    e = r.target.evaluation
    lines = [f"{r.kernel} on {r.gpu}: {r.target.label}",
             f"predicted {units.time_ns(t.time_ns)}, sample {units.time_ns(s.time_ns)}: speedup {units.speedup(e.speedup)}"]  # fmt: skip
    if e.predicted_ns is not None:
        lines.append(f"scaled by the measured sample ({units.time_ns(e.measured_sample_ns)}): "
                     f"{units.time_ns(e.predicted_ns)}")  # fmt: skip
    if r.target.label != "sample" and r.target.within_model_error:
        lines.append(f"The difference is within the model's median error of predicted ratios "
                     f"({units.share(MODEL_RATIO_ERROR)}, README \"Placement accuracy\"): not a clear change.")  # fmt: skip
    if r.target.explanation.objects or r.target.explanation.kernel:
        lines += ["", "Why:"] + [f"  {x}" for x in r.target.explanation.lines()]
    lines += ["", overlap_line(r.overlap_trained, t.overlap_source, r.gpu)]
    lines += [x for x in (launch_line(s, r.gpu_config), blocks_line(s, r.blocks, r.gpu_config)) if x] + [""]

    def cnt(x: float) -> str:
        return units.count(x)

    def tm(x: float) -> str:
        return units.time_ns(x * k)

    def num(x: float) -> str:
        return units.sig3(x)

    rows = [
        ["time", units.time_ns(s.time_ns), units.time_ns(t.time_ns)],
        ["T_comp", tm(s.t_comp), tm(t.t_comp)],
        ["T_mem", tm(s.t_mem), tm(t.t_mem)],
        ["T_overlap", tm(s.t_overlap), tm(t.t_overlap)],
        *([["T_atomic (busiest L2 sector)", tm(s.t_atomic), tm(t.t_atomic)]] if s.t_atomic or t.t_atomic else []),
        *([["T_TEX (texture units)", tm(s.t_tex), tm(t.t_tex)]] if s.t_tex or t.t_tex else []),
        *([["T_FP64 (double-precision units)", tm(s.t_fp64), tm(t.t_fp64)]] if s.t_fp64 or t.t_fp64 else []),
        *(
            [
                ["T_round (rounds of loads, each its slowest)", tm(s.t_round), tm(t.t_round)],
                [
                    "rounds waiting on the L2 / all",
                    f"{cnt(s.slow_rounds)} / {cnt(s.rounds)}",
                    f"{cnt(t.slow_rounds)} / {cnt(t.rounds)}",
                ],
            ]
            if s.rounds or t.rounds
            else []
        ),
        *(
            [
                ["T_block (each window's copy, then the block's work)", tm(s.t_block), tm(t.t_block)],
                ["copy rounds", cnt(s.copy_rounds), cnt(t.copy_rounds)],
            ]
            if s.t_block or t.t_block
            else []
        ),
        ["issued instructions", cnt(s.issued_instructions), cnt(t.issued_instructions)],
        ["addressing delta", cnt(s.addressing_delta), cnt(t.addressing_delta)],
        *[[f"replays: {c}", cnt(s.replays[c]), cnt(t.replays[c])] for c in t.replays],
        *(
            [["L1 bank conflicts (cached accesses)", cnt(s.l1_bank_conflicts), cnt(t.l1_bank_conflicts)]]
            if s.l1_bank_conflicts or t.l1_bank_conflicts
            else []
        ),
        ["memory requests", cnt(s.mem_requests), cnt(t.mem_requests)],
        ["AMAT (cycles)", num(s.amat), num(t.amat)],
        ["DRAM_lat (cycles)", num(s.dram_lat), num(t.dram_lat)],
        ["mean queuing delay (cycles)", num(s.mean_queuing_delay), num(t.mean_queuing_delay)],
        ["DRAM requests", cnt(s.dram_requests), cnt(t.dram_requests)],
        *[[f"row buffer {c}", cnt(s.row_buffer.get(c, 0)), cnt(t.row_buffer.get(c, 0))] for c in t.row_buffer],
        ["MWP", num(s.mwp), num(t.mwp)],
        ["CWP", num(s.cwp), num(t.cwp)],
        ["ITILP", num(s.itilp), num(t.itilp)],
        ["ITMLP", num(s.itmlp), num(t.itmlp)],
        ["N (warps/SM)", cnt(s.n), cnt(t.n)],
        ["shared memory/block", units.nbytes(s.smem_per_block), units.nbytes(t.smem_per_block)],
    ]
    lines.append(table(rows, ["", "sample", "target"], "lrr"))
    levels = sorted(set(s.caches) | set(t.caches))
    if levels:
        crow = []
        for lv in levels:
            a, b = s.caches.get(lv, {}), t.caches.get(lv, {})
            crow.append([lv, cnt(a.get("requests", 0)), cnt(a.get("hits", 0)), cnt(b.get("requests", 0)),
                         cnt(b.get("hits", 0))])  # fmt: skip
        lines += ["", table(crow, ["cache.space", "sample req", "sample hits", "target req", "target hits"], "lrrrr")]
    if r.hints is not None:
        from .hints import text

        lines += ["", text(r.hints, r.target.label, r.gpu_config)]
    return "\n".join(lines)


__all__ = ["evaluation_text", "rank_text"]
