"""A lane's consecutive reads of a staged tile merged into 128-bit loads (``;unrolled``): traces.staging.vectorize."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traces
from traces.errors import InputError
from placement.placements import parse_placement
from traces import staging as S
from traces.schema import LOAD, SHARED

from test_staging import BASE, trace_of, x_plan

ROWS, COLS = 2, 8  # X is 2 x 8 floats; Y a plain global array read between X's reads
LANES = np.arange(32)


def mds_like(elements, windows=1, y_between=True):
    """One block of one warp reading X like a tiled matmul's ``Mds[ty][k]``: the k-th read takes element
    ``elements[k]`` of the row lane // 16 (lanes 0-15 row 0, lanes 16-31 row 1: two broadcasts), at seq 10 k,
    with a read of Y between two of X (seq 10 k + 5). X staged in ``windows`` windows, Y left in global memory."""
    X = traces.ObjectInfo(0, "X", "global", BASE, ROWS * COLS * 4, 4, (ROWS, COLS), False)
    Y = traces.ObjectInfo(1, "Y", "global", BASE + 0x1000, 32 * 4, 4, None, False)
    rows = []
    for k, e in enumerate(elements):
        rows.append((0, 0, 10 * k, LOAD, 0, (LANES // 16) * COLS + e, 0xFFFFFFFF))
        if y_between:
            rows.append((0, 0, 10 * k + 5, LOAD, 1, LANES, 0xFFFFFFFF))
    t = trace_of(rows, [X, Y], ctas=1)
    plan, fp, _ = x_plan(t, windows)
    delta = np.ones(len(t), np.int16)  # each kernel row one addressing instruction more than the sample's
    return t, plan, delta, fp


def both(t, plan, delta, fp, windows=1):
    plain = S.stage(t, delta, [plan], windows, barrier=1, smem_per_block=fp.bytes[0])
    vec = S.stage(t, delta, [replace(plan, vector_bytes=16)], windows, barrier=1, smem_per_block=fp.bytes[0])
    return plain, vec


def x_reads(staged):
    s = staged.trace
    return np.flatnonzero((s.obj == 0) & (s.space == SHARED) & (s.op == LOAD) & (s.pc < staged.pc_top))


def test_mds_reads_by_hand():
    # 8 reads of a row, elements 0..7 of an 8-wide tile (pitch 32 B): reads 0-3 and 4-7 are each one 128-bit
    # load at offsets 0 and 16 of the lane's row; the 6 reads merged away take their seq with them
    t, plan, delta, fp = mds_like(range(8))
    plain, vec = both(t, plan, delta, fp)
    assert len(plain.trace) - len(vec.trace) == 6
    assert vec.inserted == plain.inserted  # the staging code is the same
    xp, xv = x_reads(plain), x_reads(vec)
    assert len(xp) == 8 and len(xv) == 2
    s = vec.trace
    assert s.width[xv].tolist() == [16, 16]
    for j, i in enumerate(xv):
        assert s.addr[i].tolist() == ((LANES // 16) * COLS * 4 + 16 * j).tolist()
    # addressing deltas: the merged load keeps its chain's 4 (1 each) less the 3 loads it saves
    assert vec.addr_inst_delta[xv].tolist() == [1, 1]
    assert int(vec.addr_inst_delta.sum()) == int(plain.addr_inst_delta.sum()) - 6  # the 6 loads saved
    # seq: every row after a merged-away one moves up by one for each
    kept = np.ones(len(plain.trace), bool)
    kept[xp[[1, 2, 3, 5, 6, 7]]] = False
    gone_before = np.cumsum(~kept) - (~kept)
    assert s.seq.tolist() == (plain.trace.seq[kept] - gone_before[kept]).tolist()
    assert s.pc.tolist() == plain.trace.pc[kept].tolist()


def test_misaligned_and_strided_reads_stay():
    # the tile 4 bytes into the block's window: a lane's elements 0-2 sit at 4-12 B, 3-6 at 16-28 B (one chain),
    # 7 at 32 B with no 3 reads after it; 8 bytes in: elements 2-5 at 16-28 B; 16 bytes in: both chains, as at 0
    t, plan, delta, fp = mds_like(range(8))
    for base, merged in ((4, 3), (8, 3), (16, 6)):
        plain, vec = both(t, replace(plan, shared_base=base), delta, fp)
        assert len(x_reads(plain)) - len(x_reads(vec)) == merged
    # a column read (Nds[k][tx]: each read a tile row further) and a read that goes back are never merged
    for elems in ([0, 8, 16, 24], [0, 1, 2, 1, 0, 1, 2, 3][::-1]):
        X = traces.ObjectInfo(0, "X", "global", BASE, 32 * COLS * 4, 4, (32, COLS), False)
        rows = [(0, 0, 10 * k, LOAD, 0, LANES % COLS + 0 * e + e, 0xFFFFFFFF) for k, e in enumerate(elems)]
        tt = trace_of(rows, [X], ctas=1)
        p, f, _ = x_plan(tt, 1)
        pl, ve = both(tt, p, np.zeros(len(tt), np.int16), f)
        assert len(pl.trace) == len(ve.trace)


def test_a_window_ends_a_chain():
    # 8 reads in 4 windows (2 reads each): every chain would cross a window's copy: nothing merged;
    # in 2 windows (4 reads each) both chains sit inside their windows
    for windows, merged in ((4, 0), (2, 6)):
        t, plan, delta, fp = mds_like(range(8), windows)
        plain, vec = both(t, plan, delta, fp, windows)
        assert len(plain.trace) - len(vec.trace) == merged


def test_masks_must_agree():
    t, plan, delta, fp = mds_like(range(4), y_between=False)
    cols = t.columns()
    cols["mask"] = cols["mask"].copy()
    cols["mask"][2] = 0x0000FFFF  # the third read by half the warp
    t2 = traces.Trace(**cols, info=t.info)
    plain, vec = both(t2, plan, delta, fp)
    assert len(plain.trace) == len(vec.trace)


def test_kernel_rows_are_the_buffers_a_vectorized_staging_needs(monkeypatch):
    # the 8 merged reads of test_mds_reads_by_hand: the staging kernel writes the plain staging's rows (6 more
    # than the merged trace keeps), and that count is the hint that stages in one pass; the merged count, as
    # the whole-trace evaluator passed until 4 Dec 2026, is too short by 6 and runs the kernel twice
    t, plan, delta, fp = mds_like(range(8))
    plain, vec = both(t, plan, delta, fp)
    assert plain.kernel_rows == len(plain.trace) and vec.kernel_rows == len(plain.trace) == len(vec.trace) + 6
    calls = []
    kernel = S.K.stage_rows
    monkeypatch.setattr(S.K, "stage_rows", lambda *a: calls.append(a[0]) or kernel(*a))
    monkeypatch.setattr(S, "STAGED_ROWS_MIN", 0)  # buffers of the hint's length, no margin
    vplan = replace(plan, vector_bytes=16)
    for hint, runs in ((vec.kernel_rows, 1), (len(vec.trace), 2)):
        calls.clear()
        (got,) = S.stage_pieces(t, delta, [vplan], 1, barrier=1, smem_per_block=fp.bytes[0], rows_hint=hint)
        assert len(calls) == runs and got.kernel_rows == vec.kernel_rows
        assert got.trace.seq.tolist() == vec.trace.seq.tolist() and got.trace.width.tolist() == vec.trace.width.tolist()


# --- property: the kernel against a reference written from the rule, lane by lane ---


@st.composite
def chains(draw):
    """Warps reading X (1,024 floats) in runs of consecutive elements (a lane's element + 1 a read), each run
    from a random element with a mask of its own (full, half, or changing in the run), lanes spread by 0 (a
    broadcast), 1, 4 or 8 elements, with Y reads between some."""
    ctas, warps = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    X = traces.ObjectInfo(0, "X", "global", BASE, 1024 * 4, 4, None, False)
    Y = traces.ObjectInfo(1, "Y", "global", BASE + 0x10000, 32 * 4, 4, None, False)
    rows = []
    for b in range(ctas):
        for w in range(warps):
            seq = 0
            spread = draw(st.sampled_from([0, 0, 4, 8, 1]))
            for _ in range(draw(st.integers(0, 3))):
                start, mask = draw(st.integers(0, 12)), draw(st.sampled_from([0xFFFFFFFF, 0x0000FFFF]))
                for k in range(draw(st.integers(1, 9))):
                    seq += draw(st.integers(1, 3))
                    m = mask if draw(st.integers(0, 7)) else 0x0000FFFF
                    rows.append((b, w, seq, LOAD, 0, np.minimum(start + k + spread * LANES, 1023), m))
                    if draw(st.integers(0, 3)) == 0:
                        seq += 1
                        rows.append((b, w, seq, LOAD, 1, LANES, 0xFFFFFFFF))
    if not rows:
        rows.append((0, 0, 0, LOAD, 0, LANES, 0xFFFFFFFF))
    return trace_of(rows, [X, Y], ctas, threads=32 * warps), draw(st.sampled_from([1, 1, 2, 4]))


def reference(plain: S.Staged, vb: int = 16):
    """(rows kept, width, delta, seq) by the rule of ``vectorize``'s docstring, a row and a lane at a time."""
    s = plain.trace
    n = len(s)
    keep = [True] * n
    width = s.width.astype(int).tolist()
    delta = plain.addr_inst_delta.astype(int).tolist()
    warp_rows: dict[tuple[int, int], list[int]] = {}
    for i in range(n):
        warp_rows.setdefault((int(s.cta[i]), int(s.warp[i])), []).append(i)

    def lanes(i):
        return [lane for lane in range(32) if (int(s.mask[i]) >> lane) & 1]

    def own_read(i):
        return s.obj[i] == 0 and s.op[i] == LOAD and s.space[i] == SHARED and s.pc[i] < plain.pc_top

    for rows in warp_rows.values():
        for p, i in enumerate(rows):
            if not keep[i] or not own_read(i) or not lanes(i):
                continue
            if any(int(s.addr[i][lane]) % vb for lane in lanes(i)):
                continue
            chain = []
            for j in rows[p + 1 :]:
                if len(chain) == vb // 4 - 1 or s.pc[j] >= plain.pc_top:
                    break
                if s.obj[j] != 0:
                    continue
                nxt = len(chain) + 1
                if not own_read(j) or s.mask[j] != s.mask[i]:
                    break
                if any(int(s.addr[j][lane]) != int(s.addr[i][lane]) + 4 * nxt for lane in lanes(i)):
                    break
                chain.append(j)
            if len(chain) == vb // 4 - 1:
                width[i] = vb
                delta[i] += sum(delta[j] for j in chain) - len(chain)
                for j in chain:
                    keep[j] = False
    seq = s.seq.astype(int).tolist()
    for rows in warp_rows.values():
        gone = 0
        for i in rows:
            gone += not keep[i]
            seq[i] -= gone
    k = np.array(keep)
    return k, np.array(width)[k], np.array(delta)[k], np.array(seq)[k]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains())
def test_vectorize_equals_the_rule_lane_by_lane(case):
    t, windows = case
    plan, fp, _ = x_plan(t, windows, "global", 32, 2)
    delta = (np.arange(len(t)) % 3).astype(np.int16)
    plain = S.stage(t, delta, [plan], windows, barrier=1, smem_per_block=32 + fp.bytes[0])
    keep, width, dl, seq = reference(plain)
    for got in (S.vectorize(plain), S.stage(t, delta, [replace(plan, vector_bytes=16)], windows, barrier=1,
                                            smem_per_block=32 + fp.bytes[0], rows_hint=1)):  # fmt: skip
        s = got.trace
        assert len(s) == int(keep.sum())
        assert s.width.tolist() == width.tolist() and got.addr_inst_delta.tolist() == dl.tolist()
        assert s.seq.tolist() == seq.tolist()
        assert s.pc.tolist() == plain.trace.pc[keep].tolist()
        assert np.array_equal(s.addr, plain.trace.addr[keep])


def test_unrolled_option_parses():
    t, *_ = mds_like(range(4))
    info = t.info
    p = parse_placement("X=S;windows=2;unrolled", info)
    assert (p.windows, p.unrolled, p["X"]) == (2, True, "S/G")
    assert parse_placement("X=S;unrolled;windows=2", info) == p
    assert p.label() == "X=S/G,Y=G;windows=2;unrolled"
    assert not parse_placement("X=S;windows=2", info).unrolled
    for bad in ("X=G;unrolled", "X=S;unrolled;unrolled", "X=S;unrolled=1", "X=S;windows=2;windows=2", "X=S;vec"):
        with pytest.raises(InputError):
            parse_placement(bad, info)


def test_tiled_matmul_issues_5_shared_loads_for_8_reads(tmp_path, run_cli):
    # matmul_naive at W = 64 in 16 x 16 blocks (128 warps, each 64 reads of M and 64 of N), M and N staged in the
    # textbook 16 x 16 tiles (4 windows): unrolled, each lane's 16 reads of its Mds row a window are 4 LDS.128,
    # Nds's column reads stay: 128 x 64 x 3 / 4 = 6,144 fewer issued instructions and shared requests, the
    # ratio Nsight Compute and nvprof measure for the textbook kernel (5 shared loads for 8 reads)
    from traces import generators

    from placement.evaluate_stream import StreamEvaluator
    from placement.evaluate_whole import WholeTraceEvaluator
    from placement.gpu import get_gpu

    cols, info = generators.generate("matmul_naive", [64], [16])
    t = traces.Trace(**cols, info=info)
    ev = WholeTraceEvaluator(t, get_gpu("k40"))
    plain = ev.evaluate(parse_placement("M=S,N=S;windows=4", info)).target
    vec = ev.evaluate(parse_placement("M=S,N=S;windows=4;unrolled", info)).target
    assert plain.issued_instructions - vec.issued_instructions == 128 * 64 * 3 // 4
    assert plain.mem_requests - vec.mem_requests == 128 * 64 * 3 // 4
    assert vec.t_lsu < plain.t_lsu
    # the streamed evaluator, fed in groups of blocks, counts the same
    path = tmp_path / "mm.parquet"
    traces.write(path, cols, info)
    streamed = (
        StreamEvaluator(path, get_gpu("k40"), rows=4000)
        .evaluate(parse_placement("M=S,N=S;windows=4;unrolled", info))
        .target
    )
    assert streamed.issued_instructions == vec.issued_instructions and streamed.mem_requests == vec.mem_requests
    # the hints say what code ;unrolled prices, and only for it
    for place, said in (("M=S,N=S;windows=4;unrolled", 2), ("M=S,N=S;windows=4", 0)):
        code, out, err = run_cli("evaluate", path, "--gpu", "k40", "--place", place, "--hints")
        assert code == 0, err
        assert out.count("one 128-bit load (LDS.128)") == said


def test_doubles_merge_two_reads():
    # X of doubles (2 x 8, 8 bytes each), read like Mds: a thread's reads k and k + 1 (16 bytes from an aligned
    # offset) are one 128-bit load, so 8 reads make 4 loads, each saving 1 instruction
    X = traces.ObjectInfo(0, "X", "global", BASE, ROWS * COLS * 8, 8, (ROWS, COLS), False)
    t4 = trace_of([(0, 0, 10 * k, LOAD, 0, (LANES // 16) * COLS + k, 0xFFFFFFFF) for k in range(8)], [X], ctas=1)
    cols = t4.columns()
    cols["width"] = np.full(len(t4), 8, np.int8)
    cols["addr"] = BASE + 8 * ((cols["addr"] - BASE) // 4)  # the same elements, 8 bytes each
    t = traces.Trace(**cols, info=t4.info)
    traces.validate(t)
    plan, fp, _ = x_plan(t, 1)
    plain, vec = both(t, plan, np.zeros(len(t), np.int16), fp)
    assert len(x_reads(plain)) == 8 and len(x_reads(vec)) == 4
    s = vec.trace
    assert s.width[x_reads(vec)].tolist() == [16] * 4
    assert vec.addr_inst_delta[x_reads(vec)].tolist() == [-1] * 4
    for j, i in enumerate(x_reads(vec)):
        assert s.addr[i].tolist() == ((LANES // 16) * COLS * 8 + 16 * j).tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), max_size=40), st.integers(0, 2**31))
def test_compact_rows_is_boolean_indexing(keep, seed):
    # compact_rows moves the kept rows up in place: the columns' first rows are numpy's a[keep], every column
    rng = np.random.default_rng(seed)
    n = len(keep)
    keep = np.array(keep, np.bool_)
    cols = (rng.integers(0, 9, n).astype(np.int32), rng.integers(0, 9, n).astype(np.int32), rng.integers(0, 99, n),
            rng.integers(0, 99, n).astype(np.int32), rng.integers(0, 3, n).astype(np.int8),
            rng.integers(0, 9, n).astype(np.int8), rng.integers(1, 16, n).astype(np.int8),
            rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32),
            rng.integers(0, 2**63, (n, 32), dtype=np.uint64), rng.integers(-1, 9, n).astype(np.int16),
            rng.integers(-99, 99, n).astype(np.int16))  # fmt: skip
    want = [c[keep] for c in cols]
    k = S.K.compact_rows(keep, *cols)
    assert k == int(keep.sum())
    for c, w in zip(cols, want):
        assert np.array_equal(c[:k], w)
