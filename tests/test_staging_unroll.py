"""An unrolled staging copy (``;unrolled``, ``traces.staging.StagedObject.copy_unroll``): the order of its loads and
stores worked out by hand from nvcc's rule, the same elements copied as the rolled loop copies, the rule read off
nvcc's SASS of Kernel Tuner's convolution, and the rounds the model's walk then counts."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import traces
from placement.addressing import staging_cost
from traces import staging as S
from traces.schema import GLOBAL, SHARED

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from _kernel_launches import sass_of
from test_staging import BASE, tiles_of_blocks, trace_of

ROOT = Path(__file__).resolve().parents[1]
FULL = 0xFFFFFFFF


def _staged_copy(t, so, smem: int):
    """``t`` with ``so`` staged in one window: the staged trace, its staging code's rows and their loads (L) and
    stores (S) in order."""
    staged = S.stage(t, np.zeros(len(t), np.int16), [so], 1, barrier=1, smem_per_block=smem).trace
    copy = [i for i in range(len(staged)) if staged.pc[i] > t.pc.max()]
    return staged, copy, "".join("L" if staged.space[i] == GLOBAL else "S" for i in copy)


def _row_copy(width: int, unroll: int, tail: int = 0):
    """A block of 16 threads (half a warp) whose warp reads columns 0-15 and then width-16 .. width-1 of row 0 of a
    2D object: its tile is 1 x ``width``, copied by the 2D loop (16 threads along a row: copy_columns), staged in
    one window with ``unroll``."""
    cols = 256
    X = traces.ObjectInfo(0, "X", "global", BASE, 8 * cols * 4, 4, (8, cols), False)
    lanes = np.arange(32)
    rows = [(0, 0, 0, 0, 0, lanes % 16, 0xFFFF), (0, 0, 10, 0, 0, width - 16 + lanes % 16, 0xFFFF)]
    t = trace_of(rows, [X], ctas=1, block=(16, 1, 1))
    so = S.StagedObject(0, "global", 2, 0, width, True, "none", 1, 0, copy_unroll=unroll, copy_tail=tail)
    staged, copy, ops = _staged_copy(t, so, width * 4)
    cols_of = [((staged.addr[i][:16] - BASE) // 4).tolist() if staged.space[i] == GLOBAL else None for i in copy]
    return ops, [int(staged.mask[i]) for i in copy], cols_of


def test_three_iterations_a_lane_are_two_rounds_unrolled_by_4():
    # 46 columns by 16 threads: lanes 0-13 copy tx, tx + 16, tx + 32 (3 iterations), lanes 14 and 15 two. Rolled:
    # load, store, three times (the third without lanes 14, 15). nvcc's unrolling by 4 (remainder first): each lane's
    # first iteration alone, then its remainder's others together (lanes 0-13 two, 14-15 one), each batch's loads
    # before its stores: L S L L S S, two rounds of loads
    ops, masks, cols = _row_copy(46, 1)
    assert ops == "LSLSLS" and masks == [0xFFFF] * 4 + [0x3FFF] * 2
    ops, masks, cols = _row_copy(46, 4)
    assert ops == "LSLLSS" and masks == [0xFFFF, 0xFFFF, 0xFFFF, 0x3FFF, 0xFFFF, 0x3FFF]
    tx = list(range(16))
    assert cols[0] == tx and cols[2] == [c + 16 for c in tx] and cols[3][:14] == [c + 32 for c in tx[:14]]


def test_six_iterations_a_lane_are_three_rounds_unrolled_by_4():
    # 96 columns: every lane 6 iterations, 6 mod 4 = 2: the first alone, the second alone (the remainder's rest),
    # then the unrolled body's 4: L S L S L L L L S S S S, three rounds where the rolled loop has six
    ops, masks, cols = _row_copy(96, 4)
    assert ops == "LSLSLLLLSSSS" and masks == [0xFFFF] * 12
    assert [c[0] for c in cols if c is not None] == [0, 16, 32, 48, 64, 80]


def test_blackwell_batches_a_rows_last_two_iterations():
    # copy_tail = 2 (sm_100, sm_120): a row's loop unrolled whole to its compile-time trip count n = ceil(width /
    # 16), its first n - 2 iterations one at a time, its last two together; a lane without an iteration sits it out
    # 46 columns, n = 3: L S, then L L S S (lanes 14 and 15 have no third): two rounds, as unrolled by 4
    ops, masks, cols = _row_copy(46, 1, tail=2)
    assert ops == "LSLLSS" and masks == [0xFFFF, 0xFFFF, 0xFFFF, 0x3FFF, 0xFFFF, 0x3FFF]
    assert cols[0] == list(range(16)) and cols[3][:14] == list(range(32, 46))
    # 78 columns, n = 5 (lanes 14, 15 four): L S three times, then L L S S: four rounds where unrolled by 4 has two
    # (lanes 0-13's remainder L S, then everyone's body of 4) and the rolled loop five
    ops, masks, cols = _row_copy(78, 1, tail=2)
    assert ops == "LS" * 3 + "LLSS" and masks == [0xFFFF] * 7 + [0x3FFF, 0xFFFF, 0x3FFF]
    assert [c[0] for c in cols if c is not None] == [0, 16, 32, 48, 64]
    assert _row_copy(78, 4)[0] == "LSLLLLSSSS"
    # 30 columns, n = 2 (lanes 14, 15 one): both together, one round, where unrolled by 4 has two
    ops, masks, _ = _row_copy(30, 1, tail=2)
    assert ops == "LLSS" and masks == [0xFFFF, 0x3FFF, 0xFFFF, 0x3FFF]
    assert _row_copy(30, 4)[0] == "LSLS"


def _flat_copy(length: int, unroll: int, tail: int = 0) -> str:
    """A block of one warp reading elements 0-31 and length-32 .. length-1 of a 1D object: its tile, ``length``
    elements, copied by the flattened loop (``length`` / 32 iterations a lane), in one window; the copy's loads (L)
    and stores (S) in order."""
    X = traces.ObjectInfo(0, "X", "global", BASE, 4096 * 4, 4, None, False)
    lanes = np.arange(32)
    t = trace_of([(0, 0, 0, 0, 0, lanes, FULL), (0, 0, 10, 0, 0, length - 32 + lanes, FULL)], [X], ctas=1)
    so = S.StagedObject(0, "global", 2, 0, 0, True, "none", 1, 0, copy_unroll=unroll, copy_tail=tail)
    return _staged_copy(t, so, length * 4)[2]


def test_the_flattened_loops_remainder_stays_rolled():
    # nvcc 13 on sm_75 to sm_90 keeps the flattened loop's remainder a rolled loop (LDG STS and a branch back)
    # before the body of 4, where the 2D loop's is one iteration and then the rest together: n = 7 (224 elements
    # by 32 lanes) is L S three times and a body of 4 flattened, L S, L L S S and the body in a tile row
    assert _flat_copy(224, 4) == "LS" * 3 + "LLLLSSSS"
    assert _row_copy(16 * 7, 4)[0] == "LS" + "LLSS" + "LLLLSSSS"
    assert _flat_copy(160, 4) == "LS" + "LLLLSSSS"  # n = 5: the remainder is one either way
    assert _flat_copy(96, 4) == _flat_copy(96, 1) == "LS" * 3  # n = 3: all remainder, as rolled
    # Blackwell: the flattened loop unrolled whole as a tile row's, its last two together (n = 5, 3); past 1,024
    # elements the iterations every thread index up to 1,023 has go first, together: 1,100 by 32 threads, n = 35,
    # ceil(77 / 32) = 3 of them; 1,300, n = 41, 9
    assert _flat_copy(160, 1, tail=2) == "LS" * 3 + "LLSS" and _flat_copy(96, 1, tail=2) == "LSLLSS"
    assert _flat_copy(1100, 1, tail=2) == "LLLSSS" + "LS" * 30 + "LLSS"
    assert _flat_copy(1300, 1, tail=2) == "L" * 9 + "S" * 9 + "LS" * 30 + "LLSS"


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"])
def test_nvcc_copies_the_flattened_loop_so(tmp_path, arch):
    # a flattened copy of compile-time bound (#pragma unroll, 1,100 elements by 256 threads: 4 or 5 a thread) as
    # nvcc 13 compiles it, in code order up to the barrier: sm_75 to sm_90 a rolled remainder loop (LS, a branch
    # back) and a body of 4; sm_100 and sm_120 the loop whole, 5 iterations, the last two together (_flat_copy's)

    def code(n: int, step: int) -> str:
        source = (
            'extern "C" __global__ void flat(const float* src, float* out) {\n'
            f"    __shared__ float s[{n}];\n    int t = threadIdx.x, x0 = blockIdx.x * 1024;\n#pragma unroll\n"
            f"    for (int q = t; q < {n}; q += {step}) s[q] = src[x0 + q];\n"
            "    __syncthreads();\n    out[x0 + t] = s[t + 5];\n}\n"
        )
        return _copy_before_barrier(tmp_path, arch, source, "flat")

    cost = staging_cost(arch)
    if cost.copy_tail:
        assert code(1100, 256) == _flat_copy(160, 1, cost.copy_tail) == "LSLSLSLLSS"
        # by one warp's 32 threads, as _flat_copy's block: 3 and 9 iterations every thread index has, together
        assert code(1100, 32) == _flat_copy(1100, 1, cost.copy_tail)
        assert code(1300, 32) == _flat_copy(1300, 1, cost.copy_tail)
    else:
        assert cost.copy_unroll == 4 and code(1100, 256) == "LS" + "LLLLSSSS"


def _copied_pairs(t, s) -> list[tuple[int, int, int, int]]:
    """(block, warp, global address, shared address) of every lane a staging copy of ``s`` (staged from ``t``) moves:
    each shared store pairs with the oldest load not yet stored, the same lanes active."""
    out = []
    for b in range(t.info.ctas):
        for w in range(int(s.warp.max()) + 1):
            pending = []
            for i in np.flatnonzero((s.cta == b) & (s.warp == w) & (s.pc > t.pc.max())):
                if s.space[i] == GLOBAL:
                    pending.append(i)
                    continue
                ld = pending.pop(0)
                assert s.space[i] == SHARED and s.mask[i] == s.mask[ld]
                out += [(b, w, int(s.addr[ld][k]), int(s.addr[i][k])) for k in range(32) if (int(s.mask[i]) >> k) & 1]
            assert not pending
    return sorted(out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiles_of_blocks())
def test_unrolled_copies_the_elements_the_rolled_loop_copies(case):
    # the same (global element, shared offset) pairs by the same warps, each element once: only the order of the
    # loads and stores and their grouping into warp-instructions differ
    t, _ = case
    a = S.access(t, S.object_rows(t, S.program_order(t), 0), 0)
    fp = S.footprint(t, S.object_rows(t, S.program_order(t), 0), a, (1,))
    pairs = {}
    for unroll, tail in ((1, 0), (4, 0), (1, 2), (1, 3)):
        so = S.StagedObject(0, "global", a.ordinals, 0, fp.pitch[0], True, "none", 1, 0, copy_unroll=unroll,
                            copy_tail=tail)  # fmt: skip
        s = S.stage(t, np.zeros(len(t), np.int16), [so], 1, barrier=1, smem_per_block=fp.bytes[0]).trace
        pairs[unroll, tail] = _copied_pairs(t, s)
        assert len({p[:3] for p in pairs[unroll, tail]}) == len(pairs[unroll, tail])
    assert pairs[1, 0] == pairs[4, 0] == pairs[1, 2] == pairs[1, 3] and pairs[1, 0]


def test_the_unroll_is_read_from_the_addressing_table():
    # turing to hopper measured 4; blackwell's nvcc 13 batches a row's last two iterations instead (copy_tail)
    assert {staging_cost(a).copy_unroll for a in ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")} == {4}
    assert {staging_cost(a).copy_tail for a in ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")} == {0}
    assert staging_cost("sm_100").copy_unroll == staging_cost("sm_120").copy_unroll == 1
    assert staging_cost("sm_100").copy_tail == staging_cost("sm_120").copy_tail == 2


def _copy_pattern(tmp_path, arch: str, block: tuple[int, int, int, int]) -> str:
    bx, by, tx, ty = block
    defines = (f"-Dblock_size_x={bx}", f"-Dblock_size_y={by}", f"-Dtile_size_x={tx}", f"-Dtile_size_y={ty}",
               "-Duse_shmem=1")  # fmt: skip
    source = (ROOT / "benchmarks" / "kernels" / "conv2d_kt.cu").read_text()
    return _copy_before_barrier(tmp_path, arch, source, "conv2d_kt", *defines)


def _copy_before_barrier(tmp_path, arch: str, source: str, kernel: str, *defines: str) -> str:
    """``kernel`` of ``source`` built by nvcc -O3 for ``arch``: its global loads (L) and shared stores (S) in code
    order up to its first barrier (skips without nvcc and nvdisasm)."""
    out = []
    for o in sass_of(tmp_path, source, arch, "-O3", *defines)[kernel].opcodes:
        if o.startswith("BAR"):
            break
        if o.startswith(("LDG", "STS")):
            out.append("L" if o.startswith("LDG") else "S")
    return "".join(out)


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90"])
def test_nvcc_unrolls_the_convolutions_copy_by_4_remainder_first(tmp_path, arch):
    # Kernel Tuner's copy loop (compile-time step and bound, no check inside) as nvcc 13 compiles it, in code
    # order up to the barrier: the remainder's first iteration (LDG STS), its other two (LDG LDG STS STS), the
    # body unrolled by 4 (4 LDG, 4 STS), for wide and narrow blocks and tiles alike
    unroll = staging_cost(arch).copy_unroll
    body = "L" * unroll + "S" * unroll
    for block in ((16, 1, 2, 2), (32, 2, 2, 2), (128, 1, 2, 2), (16, 4, 1, 1)):
        assert _copy_pattern(tmp_path, arch, block) == "LS" + "LLSS" + body, block


@pytest.mark.parametrize("arch", ["sm_100", "sm_120"])
def test_blackwell_batches_the_copy_otherwise(tmp_path, arch):
    # nvcc 13 on Blackwell unrolls the row loop and batches each row's last two iterations: 16 x 4 threads with
    # 1 x 1 tiles (30 columns, at most 2 a lane) LLSS per row, 16 x 1 with 2 x 2 (46 columns, at most 3) LS LLSS,
    # 16 x 1 with 4 x 1 (78 columns, at most 5) LS LS LS LLSS: each row as _tail_copy emits it (the test above)
    tail = staging_cost(arch).copy_tail
    for block, width in (((16, 4, 1, 1), 30), ((16, 1, 2, 2), 46), ((16, 1, 4, 1), 78)):
        row = _row_copy(width, 1, tail)[0]
        assert re.fullmatch(f"({row})+", _copy_pattern(tmp_path, arch, block)), block


def _lines(pattern: str) -> list[str]:
    ops = {"L": "LDG.E R2, desc[UR4][R2.64]", "S": "STS [R5], R2", "B": "BAR.SYNC.DEFER_BLOCKING 0x0"}
    return [f"/*{16 * k:04x}*/ {ops[c]}" for k, c in enumerate(pattern)]


@pytest.mark.parametrize("pattern,unroll", [
    ("LSLLSSLLLLSSSSB", 4),  # nvcc 13, sm_75 to sm_90: the remainder (1, then 2), the body by 4
    ("LSLLLLSSSSLLLLLLSSSSSSB", 6),  # the same rule by 6: the remainder's rest is u - 2 = 4
    ("LSLLSSLSLLSSB", 1),  # sm_100: each row's last two together, row after row
    ("LSLSLSB", 1),  # the rolled loop
    ("LSLLSSLLLSSSB", 1),  # a body of 3 after a rest of 2: not the rule (u - 2 = 1)
    ("LLLLSSSSLSLLSSB", 1),  # the body before the remainder
])  # fmt: skip
def test_rule_11_reads_the_unroll_off_the_pattern_by_hand(pattern, unroll):
    import addressing_modes as am

    assert am.copy_unroll_of(_lines(pattern) + _lines("LS")) == unroll  # what follows the barrier does not count


@pytest.mark.parametrize("pattern,tail", [
    ("LSLSLSLLSS" * 3 + "B", 2),  # sm_100, sm_120: rows of 5, the last two together, row after row
    ("LSLSLLLSSS" * 2 + "B", 3),  # the same rule with t = 3
    ("LSLLSSLLLLSSSSB", 0),  # sm_75 to sm_90: runtime unrolling by 4, not this rule
    ("LS" * 10 + "B", 0),  # the rolled loop
    ("LSLSLSLLSS" + "LSLSLLLSSS" + "B", 0),  # rows that disagree
    ("LSLSLSLLSSLSB", 0),  # a row cut short
    ("B", 0),  # no copy
])  # fmt: skip
def test_rule_12_reads_the_tail_off_the_pattern_by_hand(pattern, tail):
    import addressing_modes as am

    assert am.copy_tail_of(_lines(pattern) + _lines("LLSS")) == tail  # n = 5: 78 columns by 16 threads


@pytest.mark.parametrize("arch,unroll,tail", [("sm_80", 4, 0), ("sm_90", 4, 0), ("sm_100", 1, 2), ("sm_120", 1, 2)])
def test_rules_11_and_12_on_the_scripts_own_kernels(tmp_path, arch, unroll, tail):
    # the script's kernel (Kernel Tuner's copy of a 16 x 46 tile) through nvcc and cuobjdump gives the table's value
    import addressing_modes as am

    nvcc, cuobjdump = am.tool("nvcc"), am.tool("cuobjdump")
    if not nvcc or not cuobjdump:
        pytest.skip("needs nvcc and cuobjdump (pip install nvidia-cuda-cuobjdump)")
    sass_of = am.disassemble(am.compile_cubin(am.staging_source(), arch, tmp_path, "staging", nvcc), cuobjdump)
    assert am.copy_unroll_of(sass_of[am.COPY_UNROLL_KERNEL]) == unroll == staging_cost(arch).copy_unroll
    assert am.copy_tail_of(sass_of[am.COPY_TAIL_KERNEL]) == tail == staging_cost(arch).copy_tail


@pytest.mark.parametrize("block,size,rolled,unrolled,tailed", [
    # 16 x 1 threads, 2 x 2 tiles, 64 x 64 outputs: 64 blocks of one warp, a 16 x 46 tile each; a lane copies 3 or
    # 2 columns of each of its 16 rows: 3 rounds a row rolled (48 a warp), 2 unrolled (1, then 2: 32 a warp), 2 on
    # Blackwell (a row of n = 3: 1, then the last 2)
    ([16, 1, 2, 2], [64, 64], 64 * 48, 64 * 32, 64 * 32),
    # 32 x 2 threads, 2 x 2 tiles, 128 x 64: 32 blocks of 2 warps (one per row of threads), an 18 x 78 tile: 9 rows
    # a warp, 3 or 2 columns a lane: 27 and 18 rounds a warp, 18 on Blackwell (n = 3)
    ([32, 2, 2, 2], [128, 64], 64 * 27, 64 * 18, 64 * 18),
    # 16 x 1 threads, 1 x 1 tiles: a 15 x 30 tile, 2 or 1 columns a lane: 2 rounds a row either way (1, then 1)
    # unrolled by 4; 1 on Blackwell (a row of n = 2, both together)
    ([16, 1, 1, 1], [64, 64], 256 * 30, 256 * 30, 256 * 15),
])  # fmt: skip
def test_the_walk_counts_the_unrolled_copys_rounds(block, size, rolled, unrolled, tailed):
    # Kernel Tuner's convolution staged in one window on the H200 (cc 9.0: copy_unroll 4) and on an RTX 5090
    # (sm_120: copy_tail 2), every copy round slow (the tiles are new to the caches)
    from placement.evaluate_whole import evaluate
    from placement.gpu import get_gpu
    from placement.placements import parse_placement
    from traces.generators import generate

    cols, info = generate("conv2d_kt", size, block)
    t = traces.Trace(**cols, info=info)
    for gpu, want in (("h200", unrolled), ("rtx5090", tailed)):
        got = [evaluate(t, get_gpu(gpu), parse_placement(f"input=S/G;windows=1{u}", info)).target.copy_rounds
               for u in ("", ";unrolled")]  # fmt: skip
        assert got == [rolled, want], gpu


def test_the_explanation_says_how_the_copy_runs():
    # ;unrolled: the object's reasons name nvcc's copy loop on that GPU (Hopper by 4, Blackwell its tail; a table
    # without either, one copy a round); without ;unrolled they say nothing of it
    import placement
    from placement.evaluator import _copy_words
    from placement.staging import Costs
    from traces.generators import generate

    cols, info = generate("conv2d_kt", [64, 64], [16, 1, 2, 2])
    t = traces.Trace(**cols, info=info)
    said = {
        (gpu, u): placement.evaluate(t, gpu, f"input=S/G;windows=1{u}").text()
        for gpu in ("h200", "rtx5090")
        for u in ("", ";unrolled")
    }
    lead = "its copy loop as nvcc compiles it (;unrolled): "
    assert lead + "unrolled by 4, the remainder first" in said["h200", ";unrolled"]
    assert lead + "each loop unrolled whole, its last 2 copies together" in said["rtx5090", ";unrolled"]
    assert not any(lead in said[g, ""] for g in ("h200", "rtx5090"))
    rolled = Costs(stage={}, writeback={}, barrier=1)
    assert _copy_words(rolled) == "one copy a round (no unrolling known for this GPU)"
