"""benchmarks/sass_exec.py: a warp's issued instructions through nvcc's SASS, by hand on written programs and
against Nsight Compute's counts of Kernel Tuner's convolution on an H200."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import sass_exec as se  # noqa: E402

BRANCH = """/*0000*/ S2R R0, SR_TID.X
/*0010*/ BSSY B0, 0x60
/*0020*/ ISETP.GE.AND P0, PT, R0, 0x10, PT
/*0030*/ @P0 BRA 0x50
/*0040*/ IADD3 R1, R0, 0x1, RZ
/*0050*/ BSYNC B0
/*0060*/ EXIT""".splitlines()

LOOP = """/*0000*/ S2R R0, SR_TID.X
/*0010*/ LOP3.LUT R1, R0, 0x3, RZ, 0xc0, !PT
/*0020*/ BSSY B0, 0x70
/*0030*/ IADD3 R1, R1, -0x1, RZ
/*0040*/ ISETP.GE.AND P0, PT, R1, RZ, PT
/*0050*/ @P0 BRA 0x30
/*0060*/ BSYNC B0
/*0070*/ EXIT""".splitlines()


def test_a_divergent_branch_runs_both_sides_and_each_issues_the_bsync():
    # 16 lanes: S2R BSSY ISETP BRA (not taken) IADD3 BSYNC EXIT = 7. 32 lanes: lanes 16-31 jump to the BSYNC, lanes
    # 0-15 run the IADD3 and reach it: one more BSYNC issued by the other side, 8
    assert se.run_warp(BRANCH, se.Launch(block=(16, 1, 1)), 0) == 7
    assert se.run_warp(BRANCH, se.Launch(block=(32, 1, 1)), 0) == 8


def test_a_loop_runs_as_long_as_its_longest_lane():
    # lane t loops (t & 3) + 1 times: one lane alone 3 + 3 + BSYNC EXIT = 8; a warp (lanes with 1-4 trips) runs 4
    # passes of 3 and splits 3 times (at each pass a group leaves): 3 + 12 + 3 + 2 = 20
    assert se.run_warp(LOOP, se.Launch(block=(1, 1, 1)), 0) == 8
    assert se.run_warp(LOOP, se.Launch(block=(32, 1, 1)), 0) == 20


def test_a_branch_on_a_loaded_value_is_refused():
    prog = ["/*0000*/ LDG.E R0, desc[UR4][R2.64]", "/*0010*/ ISETP.GT.AND P0, PT, R0, RZ, PT", "/*0020*/ @P0 EXIT",
            "/*0030*/ EXIT"]  # fmt: skip
    with pytest.raises(se.Unknown, match="unknown predicate"):
        se.run_warp(prog, se.Launch(block=(32, 1, 1)), 0)


def test_an_instruction_under_a_loaded_predicate_issues_and_its_result_is_unknown():
    # a spilled predicate's input reloaded from local memory: the guarded store and add issue either way (6 a warp),
    # the add's destination (known before it) becomes unknown, and a branch on it is refused where one on its value
    # before the add is not
    prog = ["/*0000*/ MOV R4, 0x3", "/*0010*/ LDL R0, [R1]", "/*0020*/ ISETP.GT.AND P1, PT, R0, RZ, PT",
            "/*0030*/ @!P1 STG.E [R2.64], R5", "/*0040*/ @P1 IADD3 R4, R4, 0x1, RZ", "/*0050*/ EXIT"]  # fmt: skip
    assert se.run_warp(prog, se.Launch(block=(32, 1, 1)), 0) == 6
    test = ["/*0050*/ ISETP.GT.AND P2, PT, R4, RZ, PT", "/*0060*/ @P2 EXIT", "/*0070*/ EXIT"]
    assert se.run_warp(prog[:4] + test, se.Launch(block=(32, 1, 1)), 0) == 6  # R4 = 3 > 0: every lane exits
    branch = prog[:5] + test
    with pytest.raises(se.Unknown, match="unknown predicate"):
        se.run_warp(branch, se.Launch(block=(32, 1, 1)), 0)


def test_a_spilled_register_comes_back_from_local_memory():
    # nvcc spills a value below the stack pointer (c[0x0][0x28]) and reloads it: the branch on it is known (a block
    # of 16 threads leaves at the guarded EXIT, 8 instructions; of 32, lanes 16-31 run on to the last, 10)
    prog = ["/*0000*/ MOV R1, c[0x0][0x28]", "/*0010*/ IADD3 R1, R1, -0x10, RZ", "/*0020*/ S2R R0, SR_TID.X",
            "/*0030*/ STL [R1+0x4], R0", "/*0040*/ MOV R0, RZ", "/*0050*/ LDL R2, [R1+0x4]",
            "/*0060*/ ISETP.GE.AND P0, PT, R2, 0x10, PT", "/*0070*/ @!P0 EXIT", "/*0080*/ IADD3 R3, R2, 0x1, RZ",
            "/*0090*/ EXIT"]  # fmt: skip
    assert se.run_warp(prog, se.Launch(block=(16, 1, 1)), 0) == 8
    assert se.run_warp(prog, se.Launch(block=(32, 1, 1)), 0) == 10
    # a reload from a word never stored is unknown, and a branch on it refused
    other = prog[:5] + ["/*0050*/ LDL R2, [R1+0x8]"] + prog[6:]
    with pytest.raises(se.Unknown, match="unknown predicate"):
        se.run_warp(other, se.Launch(block=(32, 1, 1)), 0)


def test_integer_instructions_by_hand():
    # the values nvcc's index arithmetic needs: LEA.HI d, a, b, c, s = b + ((c:a) >> (32 - s)); IMAD.WIDE with a
    # 64-bit addend; ISETP's second predicate the complement; HFMA2's packed fp16 constant (0, 5.96e-08: 0x1)
    w = se.Warp(se.Launch(block=(32, 1, 1)), 0, 32)
    for text in ("/*0000*/ MOV R0, 0x7f", "/*0010*/ LEA.HI R1, R0, 0x1, RZ, 0x1a", "/*0020*/ MOV R2, 0x10",
                 "/*0030*/ MOV R3, 0x1", "/*0040*/ IMAD.WIDE R4, R0, 0x4, R2",
                 "/*0050*/ ISETP.GE.U32.AND P0, P1, R0, 0x80, PT",
                 "/*0060*/ HFMA2 R6, -RZ, RZ, 0, 5.9604644775390625e-08",
                 "/*0070*/ IADD3 R7, -R0, 0x3f, R1", "/*0080*/ LOP3.LUT R8, R0, 0x3, RZ, 0xc0, !PT"):  # fmt: skip
        se.execute(w, se.parse(text), [0])
    r = w.r[0]
    assert r["R1"] == 1 + (0x7F >> 6)
    assert (r["R4"], r["R5"]) == (0x10 + 4 * 0x7F, 1)
    assert (r["P0"], r["P1"]) == (0, 1)
    assert r["R6"] == 1
    assert r["R7"] == (-0x7F + 0x3F + 2) & se.M32
    assert r["R8"] == 3


# Nsight Compute on an H200 (30 Nov 2026, thirty-ninth session, `ncu --metrics smsp__inst_executed.sum` of
# benchmarks/kernels/conv2d_kt.cu at 4096 x 4096, nvcc 13.0 -O3 -arch=sm_90): warp-instructions per warp, the sum over
# the launch's warps; (block x, block y, tile x, tile y) -> G, R, S/G, S/R. All 92 builds measured equal the
# interpreter's counts (closing note); these are 4 of them.
NCU_H200 = {
    (16, 1, 1, 1): (582.0, 610.0, 1154.0, 1214.0),
    (64, 1, 1, 1): (582.0, 610.0, 1094.0, 1124.0),
    (64, 2, 2, 2): (1549.0, 2631.0, 1897.0, 1934.0),
    (16, 8, 1, 1): (582.0, 610.0, 700.75, 712.75),
}
BUILDS = ((0, 0), (1, 0), (0, 1), (1, 1))  # (read_only, use_shmem) of G, R, S/G, S/R


def conv_per_warp(tmp_path, arch: str, shape: tuple[int, int, int, int], read_only: int, use_shmem: int) -> float:
    """Warp-instructions a warp of Kernel Tuner's convolution (benchmarks/kernels/conv2d_kt.cu at 4096 x 4096) issues,
    built by nvcc -O3 for ``arch`` and run through the interpreter (a block in the middle of the grid,
    ``arch_instructions.kt_sass``); skips the test without nvcc and cuobjdump."""
    import addressing_modes as am
    from arch_instructions import kt_sass

    nvcc, cuobjdump = am.tool("nvcc"), am.tool("cuobjdump")
    if not nvcc or not cuobjdump:
        pytest.skip("needs nvcc and cuobjdump (pip install nvidia-cuda-cuobjdump)")
    bx, by = shape[:2]
    builds = (f"read_only={read_only}", f"use_shmem={use_shmem}")
    return se.block_count(*kt_sass(arch, shape, tmp_path, nvcc, cuobjdump, builds)) / -(-bx * by // 32)


@pytest.mark.parametrize("shape", list(NCU_H200))
def test_the_count_equals_nsight_computes_on_an_h200(tmp_path, shape):
    for (ro, shm), want in zip(BUILDS, NCU_H200[shape]):
        assert conv_per_warp(tmp_path, "sm_90", shape, ro, shm) == want, (shape, ro, shm)
