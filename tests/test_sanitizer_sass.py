"""Instruction totals and ``seq`` of a traced kernel from its SASS (``traces.sanitizer.sass``, issue 32).

The listing is nvdisasm's of ``benchmarks/kernels/matvec.cu`` for sm_90 (tests/fixtures, made with the
command in its first line); the rows are what the sanitizer would record for one warp of a 40-column
matvec: the 16-wide loop twice (its 32 loads a pass), the 8-wide remainder once, then the store.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traces.errors import InputError
import _sanitizer_reference as ref
from traces.sanitizer import sass
from traces.sanitizer._kernels import sass_seq

FIXTURE = Path(__file__).parent / "fixtures" / "matvec.sm_90.sass"
ROOT = Path(__file__).resolve().parents[1]


def _matvec():
    return sass.parse_sass(FIXTURE.read_text())["matvec"]


def _rows(fn):
    """The pcs one warp records for cols = 40 (2 passes of block 7, 1 of block 9, the store), in order."""
    mem = [i for i, o in enumerate(fn.opcodes) if o.startswith(("LDG", "STG"))]
    by_block = {b: [fn.offsets[i] for i in mem if fn.block[i] == b] for b in (7, 9, 15)}
    return np.array(by_block[7] * 2 + by_block[9] + by_block[15], np.int64)


def test_blocks_of_the_listing():
    fn = _matvec()
    # 178 instructions up to the last EXIT (the self-branch and NOPs after it dropped), 17 blocks: split at
    # labels and after each branch or EXIT
    assert len(fn.opcodes) == 178 and fn.opcodes[-1] == "EXIT" and fn.n_blocks == 17
    first = [int(fn.offsets[np.flatnonzero(fn.block == b)[0]]) for b in range(fn.n_blocks)]
    assert first == [0x0, 0x70, 0x80, 0xD0, 0x130, 0x1E0, 0x210, 0x220, 0x5C0, 0x5E0, 0x7D0, 0x7F0, 0x970, 0x990,
                     0xA00, 0xAE0, 0xB10]  # fmt: skip
    sizes = np.bincount(fn.block).tolist()
    assert sizes == [7, 1, 5, 6, 11, 3, 1, 58, 2, 31, 2, 24, 2, 7, 14, 3, 1]


def test_totals_and_seq_hand_worked():
    fn = _matvec()
    pc = _rows(fn)
    assert pc.shape[0] == 32 * 2 + 16 + 1
    c = ref.sass_counts(fn, pc, np.zeros(pc.shape[0], np.int64), warps=1)
    # blocks 7, 9 and 15 ran 2, 1, 1 times (counted); 11 and 14 hold loads never recorded (0); the others are
    # estimated: 0-6 before the first block that ran, once (the warp's entry), 8, 10, 12, 13 the fewer of their
    # neighbours' (1), 16 after the last, as 15 (1)
    assert (c.counted, c.estimated) == (5, 12)
    assert c.instructions.executed == 34 + 58 * 2 + 2 + 31 + 2 + 2 + 7 + 3 + 1 == 198
    # ldst: LDC/ULDC of blocks 0, 2, 4 (3 + 2 + 2), 32 loads twice, 16 loads, block 13's LDC.64 + ULDC.64, the
    # store block's LDC.64 + STG
    assert c.instructions.ldst == 7 + 64 + 16 + 2 + 2 == 91
    assert c.instructions.fp32 == 2 * 16 + 8 + 2  # FFMA: 16 a pass of block 7, 8 in block 9; an HFMA2.MMA in 2 and 4
    assert sum(getattr(c.instructions, k) for k in ("int", "fp32", "fp64", "sfu", "ldst", "sync", "branch")) == 198
    # seq: the first load after the 34 instructions of blocks 0-6; the second pass's first load after the
    # first pass's 58 (34 + 58); block 9's first load after the second pass (92 + 58), block 8's two
    # instructions between them not counted; the store 18 after block 9's last load (15 + 2 + 1)
    assert c.seq[0] == 34 and c.seq[32] == 92 and c.seq[64] == 150
    assert c.seq[79] == 150 + 15 and c.seq[80] == 165 + 18
    assert (np.diff(c.seq) > 0).all()


def test_seq_per_warp_and_in_any_row_order():
    # two warps' rows interleaved: each warp's seq as if alone
    fn = _matvec()
    pc = _rows(fn)
    alone = ref.sass_counts(fn, pc, np.zeros(pc.shape[0], np.int64), warps=1).seq
    both = np.empty(2 * pc.shape[0], np.int64)
    both[0::2], both[1::2] = pc, pc
    key = np.tile([0, 1], pc.shape[0])
    c = ref.sass_counts(fn, both, key, warps=2)
    assert (c.seq[0::2] == alone).all() and (c.seq[1::2] == alone).all()
    assert c.instructions.executed == 2 * 198


def test_a_pc_outside_the_function_is_refused():
    fn = _matvec()
    with pytest.raises(InputError, match=r"rec\.bin: row 1: pc 0x228 is no instruction of matvec"):
        ref.sass_counts(fn, np.array([0x220, 0x228]), np.zeros(2, np.int64), warps=1, where="rec.bin")
    with pytest.raises(InputError, match="pc 0xb20"):  # the padding after the last EXIT
        ref.sass_counts(fn, np.array([0xB20]), np.zeros(1, np.int64), warps=1)


def test_nvdisasm_missing_or_failing_is_one_line(tmp_path):
    bad = tmp_path / "x.cubin"
    bad.write_bytes(b"not an ELF")
    exe = sass.find_nvdisasm()
    if exe is None:
        with pytest.raises(InputError, match="nvdisasm not found"):
            sass.disassemble(bad)
    else:
        with pytest.raises(InputError, match=r"x\.cubin: nvdisasm exited with"):
            sass.disassemble(bad, exe)


@pytest.mark.skipif(shutil.which("nvcc") is None or sass.find_nvdisasm() is None, reason="needs nvcc and nvdisasm")
def test_the_fixture_is_what_nvcc_and_nvdisasm_make(tmp_path):
    cubin = tmp_path / "matvec.cubin"
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", "-o", str(cubin), str(ROOT / "benchmarks/kernels/matvec.cu")],
                   check=True, capture_output=True)  # fmt: skip
    fn = sass.disassemble(cubin)["matvec"]
    mine = _matvec()
    assert fn.opcodes[0] == mine.opcodes[0] and fn.opcodes[-1] == "EXIT"
    assert sum(o.startswith("LDG") for o in fn.opcodes) == sum(o.startswith("LDG") for o in mine.opcodes) == 58


X, Y = 0x7F0000000000, 0x7F0000100000


def _records(tmp_path, fn):
    """A record file of one warp of matvec running the rows of ``_rows`` (loads of x, the store to y)."""
    from traces.sanitizer.records import ACCESS_DTYPE, F_READ, F_WRITE, LaunchRecord, encode

    pc = _rows(fn)
    acc = np.zeros(pc.shape[0], ACCESS_DTYPE)
    acc["pc"], acc["mask"], acc["width"] = pc, 0xFFFFFFFF, 4
    store = np.array([o.startswith("STG") for o in fn.opcodes])[np.searchsorted(fn.offsets, pc)]
    acc["flags"] = np.where(store, F_WRITE, F_READ)
    lanes = np.arange(32, dtype=np.uint64) * np.uint64(4)
    acc["addr"] = np.where(store[:, None], np.uint64(Y) + lanes, np.uint64(X) + lanes)
    buf = X.to_bytes(8, "little") + Y.to_bytes(8, "little")
    params = np.array([(0, 8), (8, 8)], dtype=[("offset", "<u4"), ("size", "<u4")])
    launch = LaunchRecord(0, "matvec", (1, 1, 1), (32, 1, 1), 24, 0, 0, params, buf, 0, 0)
    path = tmp_path / "rec.bin"
    path.write_bytes(encode(launch, [(X, 4096), (Y, 4096)], acc, chunk_rows=7))
    return path


def test_decode_takes_totals_and_seq_from_the_sass(tmp_path):
    from traces.sanitizer.decode import decode
    from traces.sanitizer.records import read_records

    fn = _matvec()
    rf = read_records(_records(tmp_path, fn))
    cols, info = decode(rf, sass_fn=fn)
    assert info.instructions.executed == 198 and info.instructions.ldst == 91 and info.instructions.warps == 1
    assert cols["seq"][0] == 34 and cols["seq"][64] == 150 and cols["seq"][-1] == 183
    assert "5 basic blocks counted from the records, 12 estimated" in info.source["instructions"]
    assert "SASS" in info.source["seq"]
    # and the MLP of its SASS, which the model takes (placement.builds.mlp_for), as the generators' matvec has it
    from placement.builds import mlp_for

    assert info.extra["mlp"] == 6.625 and mlp_for(info) == 6.625 and "SASS" in info.source["mlp"]
    # without it: memory instructions only, seq their positions, no MLP (the model's 1)
    cols0, info0 = decode(read_records(_records(tmp_path, fn)))
    assert info0.instructions.executed == 81 and cols0["seq"].tolist() == list(range(81))
    assert "mlp" not in info0.extra and mlp_for(info0) == 1.0 and "no SASS" in info0.source["mlp"]


def test_import_with_a_bad_cubin_is_one_line_exit_2(tmp_path, capsys):
    from placement.cli import main

    bad = tmp_path / "bad.cubin"
    bad.write_bytes(b"\x7fELF broken")
    out = tmp_path / "t.parquet"
    code = main(["import", "sanitizer", str(_records(tmp_path, _matvec())), "--cubin", str(bad), "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and ("bad.cubin" in err[0] or "nvdisasm not found" in err[0])
    assert not out.exists()


@pytest.mark.skipif(shutil.which("nvcc") is None or sass.find_nvdisasm() is None, reason="needs nvcc and nvdisasm")
def test_import_with_the_kernels_cubin(tmp_path, capsys):
    from placement.cli import main

    cubin = tmp_path / "matvec.cubin"
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", "-o", str(cubin), str(ROOT / "benchmarks/kernels/matvec.cu")],
                   check=True, capture_output=True)  # fmt: skip
    fn = sass.disassemble(cubin)["matvec"]
    out = tmp_path / "t.parquet"
    code = main(["import", "sanitizer", str(_records(tmp_path, fn)), "--cubin", str(cubin), "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    import traces

    info = traces.read_info(out)
    assert "basic blocks counted" in info.source["instructions"] and info.instructions.executed > 81
    # a cubin without the records' kernel
    other = tmp_path / "vecadd.cubin"
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(other), str(ROOT / "benchmarks/kernels/vecadd.cu")],
                   check=True, capture_output=True)  # fmt: skip
    code = main(["import", "sanitizer", str(_records(tmp_path, fn)), "--cubin", str(other), "-o", str(out)])
    assert code == 2 and "no function matvec" in capsys.readouterr().err


def test_a_red_recorded_as_an_atomic_is_a_reduction(tmp_path):
    """Driver 580.159.04 (an H100, 26 Nov 2026) reported histogram's REDG (an atomicAdd whose result is unused)
    with the read and write flags and without the write-only one: an atomic. The SASS says reduction; a real
    atomic (the same rows flagged at the LDG's pc, by hand) is left alone."""
    from traces.codes import ATOMIC, LOAD, REDUCTION
    from traces.sanitizer.decode import decode
    from traces.sanitizer.records import ACCESS_DTYPE, F_ATOMIC, F_READ, F_WRITE, LaunchRecord, encode, read_records

    fn = sass.parse_sass((FIXTURE.parent / "histogram.sm_90.sass").read_text())["histogram"]
    assert fn.opcodes[fn.offsets.tolist().index(0xF0)] == "REDG.E.ADD.STRONG.GPU"
    data, bins = 0x7F0000000000, 0x7F0000100000
    acc = np.zeros(3, ACCESS_DTYPE)
    acc["pc"] = [0xC0, 0xF0, 0xC0]
    acc["flags"] = [F_READ, F_ATOMIC | F_READ | F_WRITE, F_ATOMIC | F_READ | F_WRITE]
    acc["mask"], acc["width"], acc["warp"] = 0xFFFFFFFF, 4, [0, 0, 1]
    lanes = np.arange(32, dtype=np.uint64) * np.uint64(4)
    acc["addr"] = [data + lanes, bins + lanes, data + 128 + lanes]
    buf = data.to_bytes(8, "little") + bins.to_bytes(8, "little")
    params = np.array([(0, 8), (8, 8)], dtype=[("offset", "<u4"), ("size", "<u4")])
    launch = LaunchRecord(0, "histogram", (1, 1, 1), (64, 1, 1), 8, 0, 0, params, buf, 0, 0)
    path = tmp_path / "rec.bin"
    path.write_bytes(encode(launch, [(data, 4096), (bins, 1024)], acc))
    cols, _ = decode(read_records(path), sass_fn=fn)
    assert cols["op"].tolist() == [LOAD, REDUCTION, ATOMIC]
    cols0, _ = decode(read_records(path))  # without the SASS: as the flags say
    assert cols0["op"].tolist() == [LOAD, ATOMIC, ATOMIC]


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 300), st.integers(1, 9), st.integers(0, 2**32 - 1))
def test_seq_in_one_pass_equals_the_sorted_rule(n, warps, seed):
    # random rows of matvec's listing from a few warps, interleaved: the one-pass table (sass_seq) and the stable
    # sort by warp give every row the same position
    fn = _matvec()
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(fn.opcodes), n).astype(np.int64)
    key = rng.integers(0, warps, n).astype(np.int64)
    first, last = sass.block_bounds(fn)
    one_pass = np.empty(n, np.int64)
    sass_seq(idx, key, fn.block.astype(np.int64), first, last, np.full(warps, -1, np.int64), np.zeros(warps, np.int64),
             one_pass)  # fmt: skip
    assert (one_pass == ref.sass_seq_sorted(idx, key, fn.block, first, last)).all()


def test_mlp_worked_by_hand():
    # GPUPerf's MLP: each long-latency load counts those issued from it up to the first reader of its registers
    a = [
        ("LDG.E", "R2, desc[UR4][R10.64]"),
        ("LDG.E", "R4, desc[UR4][R10.64+0x4]"),
        ("IMAD", "R12, R13, R14, R15"),
        ("LDG.E.64", "R6, desc[UR4][R10.64+0x8]"),  # writes R6 and R7
        ("FADD", "R8, R2, R7"),  # reads the first load's R2 and the third's R7
        ("LDS", "R9, [R1]"),  # shared memory: not a long-latency load
        ("FADD", "R8, R8, R4"),
    ]
    assert sass.local_mlps(a) == [3, 2, 1]
    b = [("LDG.E.128", "R4, desc[UR4][R2.64]"), ("FFMA", "R0, R7, R7, R0")]  # R4..R7: read at once
    assert sass.local_mlps(b) == [1]
    # the kernel's: the mean over the blocks that load of their means (2.0 and 1.0)
    assert sass.mlp_of_blocks([a, b, [("IMAD", "R1, R2, R3, R4")]]) == 1.5
    assert sass.mlp_of_blocks([]) == 1.0 and sass.mlp_of_blocks([[("EXIT", "")]]) == 1.0


def test_mlp_of_the_listing_is_the_generators():
    # the traced kernel's MLP by the rule the generators' table was made by (benchmarks/arch_mlp.py, nvcc 13.0 sm_90,
    # its own parse of nvdisasm's listing: blocks at labels only)
    import tomllib

    table = tomllib.loads((ROOT / "traces" / "generators" / "mlp.toml").read_text())["kernels"]
    assert sass.mlp(_matvec()) == table["matvec"]["sm_90"] == 6.625
    histogram = sass.parse_sass((FIXTURE.parent / "histogram.sm_90.sass").read_text())["histogram"]
    assert sass.mlp(histogram) == table["histogram"]["sm_90"] == 1.0
    # 10 blocks between labels, where the totals split after branches too (17)
    assert int(_matvec().label_block[-1]) + 1 == 10 and _matvec().n_blocks == 17
    # a function built without the listing's operands has no MLP to give
    fn = _matvec()
    bare = sass.SassFunction(fn.name, fn.offsets, fn.opcodes, fn.block)
    assert sass.mlp(bare) == 1.0
