"""placement.staging: legality of staging written objects, the window counts tried, and the staged
evaluation (instructions, barriers, occupancy), worked out by hand; legality properties (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traces
from placement.gpu import get_gpu
from placement.evaluate_whole import WholeTraceEvaluator
from placement.evaluator import group_key
from placement.placements import IllegalPlacement, Placement, check, parse_placement
from placement.search import SearchOptions, solve
from placement.staging import StagingFacts
from test_staging import BASE, trace_of
from traces.generators import generate

K40 = get_gpu("k40")


@pytest.fixture(scope="module")
def matmul():
    cols, info = generate("matmul_naive", [64], [16])
    return traces.Trace(**cols, info=info)


def test_windows_that_fit_that_keep_the_occupancy_and_the_textbook_tiling(matmul):
    # K = 64 accesses per warp to M and to N. With W windows a block's tiles are M: 16 rows x 64/W columns and
    # N: 64/W rows x 16 columns, 4096/W bytes each. W = 1 (8192 B) fits the 48 KB per block, but 6 blocks of
    # 8 KB fit an SM where the sample has 8 (warp limit, 256 threads): W = 2 (4096 B, 12 blocks) keeps them.
    # The textbook tiling: M's tile no wider than the block's 16 threads, 64/W <= 16, W = 4 (16 x 16 tiles).
    # Each option is weighed against itself with padded rows where padding removes bank conflicts: a warp reads M
    # at one column of two rows (its 2 x 16 threads), 64 floats (256 B) apart at W = 1, which Kepler's 32 banks of
    # 8-byte words put in one bank (word 32 = bank 0; a pad of 1 float, 260 B, is still word 32) and a pad of 2
    # (264 B, word 33) in the next: M's tile 16 x 66 floats. At W = 2 and 4 the rows lie 128 and 64 B apart,
    # 16 and 8 banks: nothing to pad.
    facts = StagingFacts(matmul)
    legal = check(matmul.info, K40, parse_placement("M=S,N=S", matmul.info), facts)
    (fit, occ, narrow, padded) = legal.staging.options
    assert (fit.windows, fit.smem_per_block, fit.tiles) == (1, 8192, (("M", 4096, 64, 0), ("N", 4096, 16, 0)))
    assert (occ.windows, occ.smem_per_block, occ.tiles) == (2, 4096, (("M", 2048, 32, 0), ("N", 2048, 16, 0)))
    assert (narrow.windows, narrow.smem_per_block, narrow.tiles) == (
        4, 2048, (("M", 1024, 16, 0), ("N", 1024, 16, 0)))  # fmt: skip
    assert K40.memory.smem_bank_bytes == 8 and K40.memory.smem_banks == 32
    assert (padded.windows, padded.smem_per_block, padded.tiles) == (
        1, 16 * 66 * 4 + 4096, (("M", 16 * 66 * 4, 64, 2), ("N", 4096, 16, 0)))  # fmt: skip
    assert padded.why == "fewest windows that fit, rows padded against bank conflicts (M by 2)"
    assert legal.occupancy.blocks_per_sm == 6 and legal.smem_per_block == 8192


def test_windows_asked_for(matmul):
    # ";windows=K" stages in K windows only (the code one wrote or measured); more windows than a warp has accesses,
    # or tiles that do not fit, are illegal; a K that is not a power of two, or with nothing staged, is refused
    facts = StagingFacts(matmul)
    p = parse_placement("M=S,N=S;windows=8", matmul.info)
    assert p.windows == 8 and p.label() == "M=S/G,N=S/G,P=G;windows=8"
    (only,) = check(matmul.info, K40, p, facts).staging.options
    assert (only.windows, only.smem_per_block, only.tiles) == (8, 1024, (("M", 512, 8, 0), ("N", 512, 16, 0)))
    with pytest.raises(IllegalPlacement, match="windows=128"):
        check(matmul.info, K40, parse_placement("M=S,N=S;windows=128", matmul.info), facts)
    for bad, why in (("M=S;windows=0", "whole number >= 1"), ("M=S;windows=x", "whole number >= 1"),
                     ("M=S;tile=4", "whole number >= 1"), ("M=G;windows=2", "no object")):  # fmt: skip
        with pytest.raises(traces.InputError, match=why):
            parse_placement(bad, matmul.info)
    # any K: 3 windows of ceil(64 / 3) = 22 accesses, M's tile 16 x 22 and N's 22 x 16 (1,408 B each, 2 x 1,408
    # aligned to 128 B: 2 x 1,408 = 2,816 B)
    (three,) = check(matmul.info, K40, parse_placement("M=S,N=S;windows=3", matmul.info), facts).staging.options
    assert (three.windows, three.tiles) == (3, (("M", 16 * 22 * 4, 22, 0), ("N", 22 * 16 * 4, 16, 0)))
    assert parse_placement(["M=S", "N=S;windows=2"], matmul.info).windows == 2  # --place given twice


def test_the_textbook_tiling_of_a_width_no_power_of_two_divides():
    # W = 80 in 16 x 16 blocks: K = 80 accesses of M and N a warp. Kirk & Hwu tile it in 80 / 16 = 5 windows of
    # 16 x 16 tiles (1 KiB each); the powers of two give 4 windows of 20-wide tiles, wider than the block, or 8 of
    # 10: before, 8 was the "textbook" option, with twice the barriers of the kernel one writes
    cols, info = generate("matmul_naive", [80], [16])
    t = traces.Trace(**cols, info=info)
    assert traces.staging.window_counts(80, 16) == (1, 2, 4, 5, 8, 16, 32, 64, 128)
    assert traces.staging.window_counts(80, 0) == traces.staging.window_counts(80, 24) == (1, 2, 4, 8, 16, 32, 64, 128)
    legal = check(info, K40, parse_placement("M=S,N=S", info), StagingFacts(t))
    (narrow,) = [o for o in legal.staging.options if o.why.startswith("fewest windows whose 2D tiles are no wider")]
    assert (narrow.windows, narrow.tiles) == (5, (("M", 1024, 16, 0), ("N", 1024, 16, 0)))


def test_the_faster_window_count_is_kept_and_each_is_reported(matmul):
    ev = WholeTraceEvaluator(matmul, K40)
    t = ev.evaluate(parse_placement("M=S,N=S", matmul.info)).target
    tried = {d["windows"]: d["time_ns"] for d in t.staging["tried"]}
    assert set(tried) == {1, 2, 4} and t.time_ns == min(tried.values())
    assert t.staging["windows"] == min(tried, key=tried.get)
    # each warp stages its share of both tiles per window: a tile of 4096 / W bytes is 1024 / W floats over
    # 256 threads, 4 / W rows of 32 lanes per warp -> 2 tiles x 4 / W rows x W windows = 8 loads (and 8 shared
    # stores) per warp whatever W; barriers: one after each staging pass, one before each further pass
    w = t.staging["windows"]
    warps = matmul.info.instructions.warps
    assert t.staging["inserted"]["loads"] == t.staging["inserted"]["stores"] == warps * 8
    assert t.staging["inserted"]["barriers"] == warps * (2 * w - 1)
    assert t.smem_per_block == 8192 // w


@pytest.mark.parametrize("block, form", [((64, 1, 1), "flat"), ((32, 2, 1), "2d")])
def test_a_narrow_tile_of_a_1d_block_costs_the_flattened_copy(block, form):
    # X (64 x 8 floats) read down column 5 by both warps of each block: a one-column tile. A 1D block copies it by
    # the flattened loop and is charged that form's count per element row ([turing.staging] unrolled_flat, which
    # Kepler uses: 10 for G); a 2D block by the 2D loop (unrolled_2d: 0.6667)
    from placement.addressing import staging_cost
    from placement.staging import choose, copy_form, plan

    X = traces.ObjectInfo(0, "X", "global", BASE, 64 * 8 * 4, 4, (64, 8), False)
    lanes = np.arange(32)
    rows = [(b, w, 0, 0, 0, (32 * w + lanes) * 8 + 5, 0xFFFFFFFF) for b in range(2) for w in range(2)]
    t = trace_of(rows, [X], ctas=2, block=block)
    facts = StagingFacts(t)
    p = parse_placement("X=S", t.info)
    choice = choose(facts, K40, p, 0)
    (option,) = choice.options
    assert option.tiles == (("X", 64 * 4, 1, 0),) and copy_form(t.info, "X", 1) == form
    (so,) = plan(facts, K40, p, option, choice.own_smem)
    loop = staging_cost(K40.arch).load("global")
    assert so.int_per_element == (loop.unrolled_flat if form == "flat" else loop.unrolled_2d)
    assert loop.unrolled_flat == 10 and loop.unrolled_2d == 0.6667


def test_a_group_of_staging_sources_equals_each_evaluated_alone(matmul):
    # WholeTraceEvaluator.evaluate_many stages M and N once per window count and re-sources the tiles for the other
    # placements of the group (traces.staging.restage); every term of every placement equals its evaluation alone
    srcs = ("S/G", "S/T", "S/R")
    group = [parse_placement(f"M={a},N={b}", matmul.info) for a in srcs for b in srcs]
    ev = WholeTraceEvaluator(matmul, K40)
    assert len({group_key(p) for p in group}) == 1
    together = ev.evaluate_many(group + [ev.sample_placement, parse_placement("M=T", matmul.info)])
    assert ev.evaluations == 11
    for p, e in zip(group + [ev.sample_placement, parse_placement("M=T", matmul.info)], together):
        alone = WholeTraceEvaluator(matmul, K40).evaluate(p)
        assert e.target == alone.target, p
        assert e == alone
    # the sources do change the staged traces' terms (else the test would not tell restage from stage)
    assert len({e.target.time_ns for e in together[:9]}) > 1


def test_a_group_of_unrolled_staging_sources_equals_each_evaluated_alone(matmul):
    # the same for ;unrolled on an H100 (sm_90, whose copy_rows differ by source: configs/addressing.toml), in one
    # window, so that M's 16 x 64 tile and N's 64 x 16 are taller or wider than the 16 x 16 block and the copy is
    # priced a tile row at a time: staged once, re-sourced from the staging kernel's record of its tile rows
    h100 = get_gpu("h100")
    srcs = ("S/G", "S/T", "S/R")
    group = [parse_placement(f"M={a},N={b};windows=1;unrolled", matmul.info) for a in srcs for b in srcs]
    ev = WholeTraceEvaluator(matmul, h100)
    assert len({group_key(p) for p in group}) == 1
    together = ev.evaluate_many(group)
    for p, e in zip(group, together):
        alone = WholeTraceEvaluator(matmul, h100).evaluate(p)
        assert e.target == alone.target, p
    # the sources change the copy's instructions (else the test would not tell restage from stage)
    assert len({e.target.staging["inserted"]["int"] for e in together}) > 1


def test_written_objects_stage_only_where_blocks_write_apart():
    Y = traces.ObjectInfo(0, "Y", "global", BASE, 64 * 4, 4, None, True)
    lanes = np.arange(32)
    apart = trace_of([(b, 0, 0, 1, 0, 32 * b + lanes, 0xFFFFFFFF) for b in range(2)], [Y])
    check(apart.info, K40, parse_placement("Y=S", apart.info), StagingFacts(apart))
    same = trace_of([(b, 0, 0, 1, 0, lanes, 0xFFFFFFFF) for b in range(2)], [Y])
    with pytest.raises(
        IllegalPlacement, match=r"\(shared-overlap\): Y is written by blocks 0 and 1 at the same element 0"
    ):
        check(same.info, K40, parse_placement("Y=S", same.info), StagingFacts(same))
    # written only by atomics: privatized, legal despite the overlap
    atomics = trace_of([(b, 0, 0, 2, 0, lanes, 0xFFFFFFFF) for b in range(2)], [Y])
    facts = StagingFacts(atomics)
    check(atomics.info, K40, parse_placement("Y=S", atomics.info), facts)
    assert facts.writeback("Y") == "atomic"


def test_privatized_histogram_is_evaluated_with_reductions():
    Y = traces.ObjectInfo(0, "Y", "global", BASE, 64 * 4, 4, None, True)
    lanes = np.arange(32)
    t = trace_of([(b, 0, 2 * k, 2, 0, (lanes * 7 + k) % 64, 0xFFFFFFFF) for b in range(2) for k in range(4)], [Y])
    target = WholeTraceEvaluator(t, K40).evaluate(parse_placement("Y=S", t.info)).target
    ins = target.staging["inserted"]
    # per warp: the 64-bin tile is zeroed in 2 shared stores and reduced back in 2 shared loads + 2 reductions
    assert (ins["loads"], ins["stores"], ins["writeback_loads"], ins["writeback_stores"]) == (0, 4, 4, 4)


@st.composite
def writers(draw):
    ctas = draw(st.integers(2, 3))
    ops = draw(st.sampled_from([(1,), (2,), (1, 2), (0, 1)]))
    rows = []
    for b in range(ctas):
        for k in range(draw(st.integers(1, 3))):
            start = draw(st.integers(0, 3)) * 16
            rows.append((b, 0, k, draw(st.sampled_from(ops)), 0, start + np.arange(32), 0xFFFFFFFF))
    return trace_of(rows, [traces.ObjectInfo(0, "Y", "global", BASE, 96 * 4, 4, None, True)], ctas)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(writers())
def test_a_written_object_is_never_staged_where_blocks_overlap(t):
    """Legal iff every write is an atomic (privatized, never read) or no element is written by two blocks."""
    elems: dict[int, set[int]] = {}
    plain = False
    for i in range(len(t)):
        if t.op[i] == 0:
            plain = True
            continue
        if t.op[i] == 1:
            plain = True
        for a in t.addr[i]:
            elems.setdefault(int(a - BASE) // 4, set()).add(int(t.cta[i]))
    overlap = any(len(b) > 1 for b in elems.values())
    legal = not overlap or not plain
    p = parse_placement("Y=S", t.info)
    if legal:
        check(t.info, K40, p, StagingFacts(t))
    else:
        with pytest.raises(IllegalPlacement, match="shared-overlap"):
            check(t.info, K40, p, StagingFacts(t))
    # and no ranking ever holds an illegal staging
    r = solve(WholeTraceEvaluator(t, K40), options=SearchOptions(strategy="exhaustive", top=4))
    for e in r.ranking:
        check(t.info, K40, Placement(tuple(e.target.placement.items())), StagingFacts(t))


def test_streamed_facts_give_the_same_windows_and_measure_an_asked_count():
    # the streamed trace's facts (placement.streamstaging, pass B over groups of blocks) measure the textbook count
    # with the powers of two, so they choose the same options as the whole trace's; a count asked for that they did
    # not measure (;windows=3) costs one more read and gives the same tiles
    from placement.streamstaging import StreamStagingFacts

    cols, info = generate("matmul_naive", [80], [16])
    t = traces.Trace(**cols, info=info)
    whole = StagingFacts(t)

    def groups():
        yield t

    stream = StreamStagingFacts(info, groups)
    stream.feed(t)
    for text in ("M=S,N=S", "M=S,N=S;windows=3", "M=S,N=S;windows=5"):
        p = parse_placement(text, info)
        a = check(info, K40, p, whole).staging.options
        b = check(info, K40, p, stream).staging.options
        assert a == b, text
    assert stream.reads == 2  # the default counts, then 3 once asked


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([8, 16]), st.integers(2, 7))
def test_the_textbook_option_is_width_over_block_for_any_multiple(block, tiles):
    # W = tiles x block: the textbook option stages block x block tiles of M and N in W / block windows, on the
    # whole trace's facts and on the streamed ones alike, whatever W / block is (a power of two or not)
    from placement.streamstaging import StreamStagingFacts

    w = tiles * block
    cols, info = generate("matmul_naive", [w], [block])
    t = traces.Trace(**cols, info=info)
    stream = StreamStagingFacts(info, lambda: iter([t]))
    stream.feed(t)
    p = parse_placement("M=S,N=S", info)
    whole = check(info, K40, p, StagingFacts(t)).staging.options
    assert check(info, K40, p, stream).staging.options == whole
    tile = block * block * 4
    textbook = [o for o in whole if o.tiles == (("M", tile, block, 0), ("N", tile, block, 0))]
    assert textbook and min(o.windows for o in textbook) == tiles
