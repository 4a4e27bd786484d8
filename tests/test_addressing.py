"""The addressing-mode table (configs/addressing.toml) and its loader (Huang & Li, Sec. III-B)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from dataclasses import FrozenInstanceError, asdict

from placement.addressing import (
    CopyRows,
    StagingLoop,
    addressing_cost,
    addressing_delta,
    families,
    resolve_arch,
    staging_cost,
    table_path,
)
from traces.errors import InputError

from conftest import benchmark_script

ROOT = Path(__file__).resolve().parents[1]
SPACES = ("G", "T", "2T", "C", "R", "S")
OFFSET_SPACES = ("G", "T", "C", "R", "S")


def _script():
    """benchmarks/addressing_modes.py as a module (its counting rule and compile helpers)."""
    return benchmark_script("addressing_modes")


def _table():
    with table_path().open("rb") as fh:
        return tomllib.load(fh)


def test_kepler_float_is_the_papers_2_0_1_1():
    # Sec. III-B: "2, 0, 1, 1 for global, 1D texture, constant, and shared memories"
    got = [addressing_cost("kepler", 4, s) for s in ("G", "T", "C", "S")]
    assert got == [2, 0, 1, 1]
    assert _table()["kepler"]["types"]["float"] == {"bytes": 4, "G": 2, "T": 0, "2T": 2, "C": 1, "R": 2, "S": 1}
    # the K80 (sm_37) and K40 (sm_35) read the same row
    assert addressing_cost("sm_37", 4, "global") == 2
    assert addressing_cost("3.5", 4, "texture1d") == 0


@pytest.mark.parametrize("fam", families())
def test_every_arch_has_every_space_for_4_and_8_bytes(fam):
    for b in (4, 8):
        for s in SPACES:
            v = addressing_cost(fam, b, s)
            assert isinstance(v, int) and not isinstance(v, bool) and v >= 0


def test_costs_are_non_negative_integers_and_types_match_bytes():
    data = _table()
    for fam in families():
        sec = data[fam]
        for key, row in sec["bytes"].items():
            assert all(isinstance(v, int) and v >= 0 for v in row.values()), (fam, key)
        for tname, row in sec["types"].items():
            brow = sec["bytes"][str(row["bytes"])]
            assert {k: v for k, v in row.items() if k != "bytes"} == brow, (fam, tname)


def test_readonly_path_costs_what_global_does():
    # __ldg's LDG.E.CONSTANT takes the same 64-bit address as LDG.E (measured sm_75..sm_121; Kepler inferred)
    assert addressing_cost("ampere", 4, "R") == addressing_cost("ampere", 4, "readonly") == 1
    assert addressing_cost("sm_80", 1, "r") == 3  # char: SHF + IADD3 + IADD3.X
    assert addressing_cost("sm_37", 4, "readonly") == 2  # inferred: IMAD + IMAD.HI.X
    assert addressing_cost("hopper", 8, "R_restrict") == 1  # const __restrict__, for comparison
    for fam in families():
        for b in (1, 2, 4, 8, 16):
            assert addressing_cost(fam, b, "R") == addressing_cost(fam, b, "G"), (fam, b)


def test_offset_contexts_on_ampere_float():
    # measured, sm_80 / sm_86 (benchmarks/addressing_modes.py): G, C, S fold the constant into the
    # load's immediate; T adds it to the fetch index; __ldg folds it only after its base access
    def row(context):
        return {s: addressing_cost("sm_80", 4, s, context) for s in OFFSET_SPACES}

    assert row("offset") == {"G": 0, "T": 1, "C": 0, "R": 0, "S": 0}
    assert row("offset_leading") == {"G": 0, "T": 1, "C": 0, "R": 2, "S": 0}
    assert addressing_cost("sm_86", 4, "readonly", "offset_leading") == 2
    assert addressing_cost("ampere", 1, "R", "offset_leading") == 3  # char
    assert addressing_cost("ampere", 4, "R_restrict", "offset_leading") == 0  # const __restrict__ folds
    assert addressing_cost("ampere", 4, "R", "indexed") == addressing_cost("ampere", 4, "R") == 1
    # moving a stencil's array from global to __ldg: +2 per access before its base, 0 after
    assert addressing_delta("sm_80", 4, "G", "R", "offset_leading") == 2
    assert addressing_delta("sm_80", 4, "global", "readonly", "offset") == 0
    assert addressing_delta("sm_80", 4, "G", "T", "offset") == 1


def test_leading_ldg_folds_from_blackwell_on():
    assert addressing_cost("hopper", 4, "R", "offset_leading") == 2
    assert addressing_cost("turing", 8, "R", "offset_leading") == 2
    for arch in ("sm_100", "sm_103", "sm_110", "sm_120", "sm_121"):
        assert addressing_cost(arch, 4, "R", "offset_leading") == 0, arch


def test_kepler_offsets_are_inferred_and_the_old_families_read_them():
    assert [addressing_cost("sm_37", 4, s, "offset") for s in OFFSET_SPACES] == [0, 1, 0, 0, 0]
    assert [addressing_cost("kepler", 4, s, "offset_leading") for s in OFFSET_SPACES] == [0, 1, 0, 3, 0]
    assert addressing_cost("fermi", 8, "R", "offset_leading") == 3
    assert addressing_cost("volta", 4, "R", "offset_leading") == 2  # -> turing


@pytest.mark.parametrize("fam", families())
def test_every_family_has_every_offset_entry(fam):
    for context in ("offset", "offset_leading"):
        for b in (1, 2, 4, 8, 16):
            for s in OFFSET_SPACES:
                v = addressing_cost(fam, b, s, context)
                assert isinstance(v, int) and not isinstance(v, bool) and v >= 0


def test_offset_context_errors_name_the_table_and_key():
    with pytest.raises(InputError, match="'nearby'.*indexed, offset, offset_leading"):
        addressing_cost("ampere", 4, "G", "nearby")
    with pytest.raises(InputError, match=r"\[ampere\.offset\] \"4\" has no '2T' entry"):
        addressing_cost("ampere", 4, "2T", "offset")
    with pytest.raises(InputError, match=r'\[kepler\.offset_leading\] has no "32" row'):
        addressing_cost("sm_35", 32, "G", "offset_leading")
    with pytest.raises(InputError, match="'R_restrict'"):
        addressing_cost("kepler", 4, "R_restrict", "offset")  # measured sections only


def test_staging_cost_on_ampere():
    sc = staging_cost("sm_86")
    assert sc.family == "ampere" and sc.barrier == 1
    assert sc.load("G") == sc.sources["G"] == StagingLoop(6, 7, 16, 0, 0.6667, 10)
    assert sc.load("texture1d") == StagingLoop(4, 5, 13, 1, 1, 9)
    assert sc.load("readonly") == StagingLoop(6, 7, 16, 0, 2, 10)
    assert sc.writeback == StagingLoop(5, 6, 14, 0, 0.6667, 10)
    with pytest.raises(InputError, match=r"\[ampere\.staging\] has no 'C' row"):
        sc.load("constant")
    with pytest.raises(FrozenInstanceError):
        sc.barrier = 0
    with pytest.raises(TypeError):
        sc.sources["G"] = sc.writeback


def test_staging_cost_fallbacks():
    # [kepler.staging] is not derived: it uses turing's measured loops, and so do its fallbacks
    assert staging_cost("kepler").family == "turing"
    assert staging_cost("sm_37") == staging_cost("fermi") == staging_cost("volta") == staging_cost("sm_75")
    assert staging_cost("sm_87") == staging_cost("ampere")
    # from sm_90 on the texture handle is reloaded in the loop (ULDC + UMOV): T costs 7, not 4
    assert staging_cost("hopper").load("T").loop_1d == 7
    assert staging_cost("sm_120").barrier == 1


def test_arch_names_sm_numbers_and_fallbacks():
    assert resolve_arch("ampere") == "ampere"
    assert resolve_arch("sm_86") == "ampere"
    assert resolve_arch("compute_90") == "hopper"
    assert resolve_arch("Volta") == "turing"  # v100.toml's arch; sm_70 not compilable with CUDA 13
    assert resolve_arch("sm_70") == "turing"
    assert resolve_arch("fermi") == "kepler"  # c2050.toml
    assert resolve_arch("tesla") == "kepler"  # fx5600.toml, gtx280.toml
    assert resolve_arch("sm_61") == "kepler"
    assert resolve_arch("sm_87") == "ampere"
    # moving a float from global to 1D texture on the K80 removes 2 address instructions
    assert addressing_delta("sm_37", 4, "G", "T") == -2


def test_missing_keys_are_input_errors_naming_them():
    with pytest.raises(InputError, match="'sm_999'"):
        addressing_cost("sm_999", 4, "G")
    with pytest.raises(InputError, match="'rdna3'"):
        addressing_cost("rdna3", 4, "G")
    with pytest.raises(InputError, match='"32"'):
        addressing_cost("ampere", 32, "G")
    with pytest.raises(InputError, match="'local'"):
        addressing_cost("ampere", 4, "local")
    with pytest.raises(InputError, match="'2G'"):
        addressing_cost("kepler", 4, "2G")  # the 2D comparisons are measured sections only
    with pytest.raises(InputError):
        addressing_cost("ampere", 0, "G")


_ROW = "{ loop_1d = 6, loop_2d = 7, loop_2d_row = 16, unrolled_1d = 0, unrolled_2d = 0.5, unrolled_flat = 9 }"
_ROWS = "{ head = 14, first = 15, rest = 7, entry = 13, body = 16, split = 1, prologue = 17 }"
_MINIMAL = f"""schema = 2
spaces = ["G", "T"]
offset_spaces = ["G"]
[x]
sm = ["sm_1"]
[x.bytes]
"4" = {{ G = 1, T = 0 }}
[x.offset]
"4" = {{ G = 0 }}
[x.offset_leading]
"4" = {{ G = 2 }}
[x.staging]
barrier = 1
G = {_ROW}
T = {_ROW}
R = {_ROW}
writeback = {_ROW}
"""


def _use_table(tmp_path, monkeypatch, text: str) -> None:
    (tmp_path / "addressing.toml").write_text(text)
    monkeypatch.setenv("PLACEMENT_CONFIGS", str(tmp_path))


def test_a_minimal_table_is_read(tmp_path, monkeypatch):
    _use_table(tmp_path, monkeypatch, _MINIMAL)
    assert addressing_cost("x", 4, "T") == 0
    assert addressing_cost("x", 4, "G", "offset_leading") == 2
    assert staging_cost("sm_1").writeback == StagingLoop(6, 7, 16, 0, 0.5, 9)
    assert staging_cost("sm_1").copy_unroll == 1  # absent: the rolled loop
    assert staging_cost("sm_1").copy_tail == 0  # absent: no tail batch
    assert staging_cost("sm_1").copy_rows == {}  # absent: the copy priced per element


def test_a_tables_copy_rows_are_read(tmp_path, monkeypatch):
    _use_table(
        tmp_path, monkeypatch, _MINIMAL.replace("barrier = 1", f"barrier = 1\ncopy_unroll = 4\ncopy_rows.R = {_ROWS}")
    )
    assert dict(staging_cost("sm_1").copy_rows) == {"R": CopyRows(14, 15, 7, 13, 16, 1, 17)}


@pytest.mark.parametrize(
    "old,new,message",
    [
        ("schema = 2", "schema = 1", "schema = 1, this reader expects 2"),
        ('"4" = { G = 1, T = 0 }', '"4" = { G = -1, T = 0 }', r'\[x\.bytes\] "4"\.G = -1 is not a non-negative'),
        ('"4" = { G = 1, T = 0 }', '"4" = { G = 1 }', r"\[x\.bytes\] \"4\" has no 'T' entry"),
        ('[x.offset]\n"4" = { G = 0 }\n', "", r"\[x\.offset\] is missing"),
        ('offset_spaces = ["G"]', 'offset_spaces = ["G", "R"]', r"\[x\.offset\] \"4\" has no 'R' entry"),
        ('"4" = { G = 2 }', '"4" = { G = 0.5 }', r'\[x\.offset_leading\] "4"\.G = 0\.5'),
        ('offset_spaces = ["G"]\n', "", "'offset_spaces' must list"),
        ("barrier = 1", "barrier = -1", r"\[x\.staging\] barrier = -1"),
        ("barrier = 1", "barrier = 1\ncopy_unroll = 0", r"\[x\.staging\] copy_unroll = 0 is not a positive integer"),
        ("barrier = 1", 'barrier = 1\ncopy_unroll = "4"', r"\[x\.staging\] copy_unroll = '4' is not a positive"),
        ("barrier = 1", "barrier = 1\ncopy_tail = 1", r"\[x\.staging\] copy_tail = 1 is not 0 or an integer of at"),
        ("barrier = 1", "barrier = 1\ncopy_tail = -2", r"\[x\.staging\] copy_tail = -2 is not 0 or an integer"),
        ("barrier = 1", "barrier = 1\ncopy_tail = 2.5", r"\[x\.staging\] copy_tail = 2\.5 is not 0 or an integer"),
        ("barrier = 1", "barrier = 1\ncopy_unroll = 4\ncopy_tail = 2", r"has both copy_unroll and copy_tail"),
        (
            "barrier = 1",
            f"barrier = 1\ncopy_rows.G = {_ROWS}",
            r"copy_rows must be a table of sources, in a section with",
        ),
        ("barrier = 1", f"barrier = 1\ncopy_unroll = 4\ncopy_rows.X = {_ROWS}", r"copy_rows\.X is not a source's"),
        (
            "barrier = 1",
            f"barrier = 1\ncopy_unroll = 4\ncopy_rows.G = {_ROWS.replace('body = 16', 'body = -1')}",
            r"\[x\.staging\] copy_rows\.G\.body = -1 is not a non-negative integer",
        ),
        (
            "barrier = 1",
            f"barrier = 1\ncopy_unroll = 4\ncopy_rows.R = {_ROWS.replace(', prologue = 17', '')}",
            r"copy_rows\.R\.prologue = None",
        ),
        (f"T = {_ROW}\n", "", r"\[x\.staging\] has no 'T' row"),
        ("writeback = { loop_1d = 6,", 'writeback = { loop_1d = "6",', r"\[x\.staging\] writeback\.loop_1d = '6'"),
        ("[x.staging]\n", '[x.staging]\nuse = "y"\n', r"\[x\.staging\] uses 'y'"),
    ],
)
def test_a_broken_table_is_refused_naming_table_and_key(tmp_path, monkeypatch, old, new, message):
    assert old in _MINIMAL
    _use_table(tmp_path, monkeypatch, _MINIMAL.replace(old, new, 1))
    with pytest.raises(InputError, match=message):
        addressing_cost("x", 4, "G")


# The paper's Fig. 2 SASS (Kepler, float), wrapped in the prologue and bound check of its
# vecAdd kernels: the script's counting rule must give the paper's 2 / 0 / 1 / 1.
_PROLOGUE = [
    "/*0008*/ MOV R1, c[0x0][0x44]",
    "/*0010*/ S2R R0, SR_CTAID.X",
    "/*0018*/ S2R R4, SR_TID.X",
    "/*0020*/ IMAD R3, R0, c[0x0][0x28], R4",
    "/*0028*/ ISETP.GE.AND P0, PT, R3, 0x400, PT",
    "/*0030*/ @P0 EXIT",
]
_FIG2 = {
    "G": [
        "/*0038*/ MOV32I R5, 0x4",
        "/*0048*/ IMAD R6.CC, R3, R5, c[0x0][0x20]",
        "/*0050*/ IMAD.HI.X R7, R3, R5, c[0x0][0x24]",
        "/*0058*/ LD.E R2, [R6]",
    ],
    "T": ["/*0038*/ TLD.LZ.T R2, R3, 0x0, 1D, 0x1"],
    "C": ["/*0038*/ SHL.W R2, R3, 0x2", "/*0048*/ LDC R4, c[0x2][R2]"],
    "S": ["/*0038*/ SHL R2, R4, 0x2", "/*0048*/ LDS R5, [R2]"],
}


@pytest.mark.parametrize("space,expected", [("G", 2), ("T", 0), ("C", 1), ("S", 1)])
def test_counting_rule_reproduces_the_papers_kepler_sass(space, expected):
    mod = _script()
    lines = _PROLOGUE + _FIG2[space] + ["/*0100*/ EXIT"]
    kc = mod.count_kernel(lines, space, "vecAdd", "sm_35", "float")
    assert kc.count == expected == addressing_cost("kepler", 4, space)


# nvcc 13.0's SASS for sm_80 (cuobjdump 13.5), as benchmarks/addressing_modes.py reads it: the
# offset_leading kernel of __ldg (float) and the 1D staging loop from global memory.
_SM80_LEADING_LDG = [
    "/*0000*/ MOV R1, c[0x0][0x28]",
    "/*0010*/ S2R R3, SR_CTAID.X",
    "/*0020*/ S2R R0, SR_TID.X",
    "/*0030*/ IMAD R3, R3, c[0x0][0x0], R0",
    "/*0040*/ ISETP.GE.AND P0, PT, R3, c[0x0][0x170], PT",
    "/*0050*/ @P0 EXIT",
    "/*0060*/ HFMA2.MMA R0, -RZ, RZ, 0, 2.384185791015625e-07",
    "/*0070*/ IADD3 R5, R3.reuse, -0x7, RZ",
    "/*0080*/ ULDC.64 UR4, c[0x0][0x118]",
    "/*0090*/ IADD3 R7, R3.reuse, -0x6, RZ",
    "/*00a0*/ IADD3 R9, R3.reuse, -0x5, RZ",
    "/*00b0*/ IADD3 R11, R3, -0x4, RZ",
    "/*00c0*/ IMAD.WIDE R4, R5, R0, c[0x0][0x160]",
    "/*00d0*/ IMAD.WIDE R6, R7, R0.reuse, c[0x0][0x160]",
    "/*00e0*/ LDG.E.CONSTANT R2, [R4.64]",
    "/*00f0*/ IMAD.WIDE R8, R9, R0.reuse, c[0x0][0x160]",
    "/*0100*/ LDG.E.CONSTANT R17, [R6.64]",
    "/*0110*/ IADD3 R13, R3, -0x3, RZ",
    "/*0120*/ IMAD.WIDE R10, R11, R0.reuse, c[0x0][0x160]",
    "/*0130*/ IADD3 R15, R3, -0x2, RZ",
    "/*0140*/ LDG.E.CONSTANT R9, [R8.64]",
    "/*0150*/ IMAD.WIDE R12, R13, R0.reuse, c[0x0][0x160]",
    "/*0160*/ IADD3 R19, R3, -0x1, RZ",
    "/*0170*/ LDG.E.CONSTANT R11, [R10.64]",
    "/*0180*/ IMAD.WIDE R4, R15, R0, c[0x0][0x160]",
    "/*0190*/ LDG.E.CONSTANT R13, [R12.64]",
    "/*01a0*/ IMAD.WIDE R14, R19, R0.reuse, c[0x0][0x160]",
    "/*01b0*/ LDG.E.CONSTANT R5, [R4.64]",
    "/*01c0*/ IMAD.WIDE R6, R3, R0, c[0x0][0x160]",
    "/*01d0*/ LDG.E.CONSTANT R15, [R14.64]",
    "/*01e0*/ LDG.E.CONSTANT R7, [R6.64]",
    "/*01f0*/ FADD R2, R2, R17",
    "/*0200*/ FADD R2, R2, R9",
    "/*0210*/ FADD R2, R2, R11",
    "/*0220*/ FADD R2, R2, R13",
    "/*0230*/ FADD R2, R2, R5",
    "/*0240*/ FADD R8, R2, R15",
    "/*0250*/ IMAD.WIDE R2, R3, R0, c[0x0][0x168]",
    "/*0260*/ FADD R5, R8, R7",
    "/*0270*/ STG.E [R2.64], R5",
    "/*0280*/ EXIT",
    "/*0290*/ BRA 0x290",
]
_SM80_STAGING_LOOP_1D = [
    "/*0000*/ MOV R1, c[0x0][0x28]",
    "/*0010*/ S2R R6, SR_TID.X",
    "/*0020*/ ULDC.64 UR4, c[0x0][0x118]",
    "/*0030*/ BSSY B0, 0x130",
    "/*0040*/ S2R R7, SR_CTAID.X",
    "/*0050*/ ISETP.GE.AND P0, PT, R6.reuse, c[0x0][0x170], PT",
    "/*0060*/ SHF.L.U32 R0, R6, 0x2, RZ",
    "/*0070*/ LOP3.LUT R4, R0, 0x4, RZ, 0x3c, !PT",
    "/*0080*/ @P0 BRA 0x120",
    "/*0090*/ IMAD.MOV.U32 R0, RZ, RZ, R6",
    "/*00a0*/ HFMA2.MMA R3, -RZ, RZ, 0, 2.384185791015625e-07",
    "/*00b0*/ IMAD R2, R7, c[0x0][0x170], R0",
    "/*00c0*/ IMAD.WIDE R2, R2, R3, c[0x0][0x160]",
    "/*00d0*/ LDG.E R3, [R2.64]",
    "/*00e0*/ STS [R0.X4], R3",
    "/*00f0*/ IADD3 R0, R0, c[0x0][0x0], RZ",
    "/*0100*/ ISETP.GE.AND P0, PT, R0, c[0x0][0x170], PT",
    "/*0110*/ @!P0 BRA 0xa0",
    "/*0120*/ BSYNC B0",
    "/*0130*/ BAR.SYNC.DEFER_BLOCKING 0x0",
    "/*0140*/ IMAD.MOV.U32 R3, RZ, RZ, 0x4",
    "/*0150*/ IMAD R2, R7, c[0x0][0x0], R6",
    "/*0160*/ IMAD.WIDE.U32 R2, R2, R3, c[0x0][0x168]",
    "/*0170*/ LDS R5, [R4]",
    "/*0180*/ STG.E [R2.64], R5",
    "/*0190*/ EXIT",
    "/*01a0*/ BRA 0x1a0",
]


def test_offset_rule_on_sm80_leading_ldg_sass():
    # a[i-7] .. a[i-1] before a[i]: each leading access has its own IADD3 (index) + IMAD.WIDE
    oc = _script().count_offset_kernel(_SM80_LEADING_LDG, "R", "offset_leading", "offset_leading_R", "sm_80")
    assert oc.base.load.text == "/*01e0*/ LDG.E.CONSTANT R7, [R6.64]"
    assert [y.text for y in oc.base.counted] == ["/*01c0*/ IMAD.WIDE R6, R3, R0, c[0x0][0x160]"]
    assert sorted(y.base for y in oc.extra) == ["IADD3"] * 7 + ["IMAD"] * 7
    assert (oc.exact, oc.count) == (2, 2) == (2, addressing_cost("sm_80", 4, "R", "offset_leading"))


def test_loop_rule_on_sm80_staging_loop_sass():
    lc = _script().count_loop(_SM80_STAGING_LOOP_1D, nested=False)
    assert [x.pc for x in lc.inner] == list(range(0xA0, 0x120, 0x10))
    counted = [x.opcode for x in lc.inner if not _script().is_memory(x)]
    assert counted == ["HFMA2.MMA", "IMAD", "IMAD.WIDE", "IADD3", "ISETP.GE.AND", "BRA"]
    assert lc.per_element == 6 == staging_cost("sm_80").load("G").loop_1d
    assert lc.per_row is None


@pytest.fixture(scope="module")
def sm80_sass(tmp_path_factory):
    """sm_80 SASS of the float kernels and of the staging kernels (skips without the tools)."""
    mod = _script()
    nvcc, cuobjdump = mod.tool("nvcc"), mod.tool("cuobjdump")
    if not nvcc or not cuobjdump:
        pytest.skip("nvcc and cuobjdump are not both installed (CUDA toolkit; pip install nvidia-cuda-cuobjdump)")
    wd = tmp_path_factory.mktemp("sass")
    try:
        kernels = mod.compile_cubin(mod.kernel_source(mod.TYPES["float"]), "sm_80", wd, "addr_float", nvcc)
        staging = mod.compile_cubin(mod.staging_source(), "sm_80", wd, "staging", nvcc)
    except RuntimeError as exc:
        pytest.skip(f"this nvcc cannot compile for sm_80: {exc}")
    return mod.disassemble(kernels, cuobjdump), mod.disassemble(staging, cuobjdump)


def test_rerunning_the_script_reproduces_the_table(sm80_sass):
    mod = _script()
    sass, _ = sm80_sass
    row = _table()["ampere"]["types"]["float"]
    for space in mod.ALL_SPACES:
        kc = mod.count_kernel(sass[f"k_{space}"], space, f"k_{space}", "sm_80", "float")
        assert kc.agree, space
        assert kc.count == row[space] == addressing_cost("sm_80", 4, space), space


@pytest.mark.parametrize("context", ["offset", "offset_leading"])
def test_rerunning_the_script_reproduces_the_offset_tables(sm80_sass, context):
    mod = _script()
    sass, _ = sm80_sass
    row = _table()["ampere"][context]["4"]
    for space in mod.OFFSET_ALL:
        name = f"{context}_{space}"
        oc = mod.count_offset_kernel(sass[name], space, context, name, "sm_80", "float")
        assert oc.exact == oc.count == row[space], space  # a whole number of instructions
        if space in OFFSET_SPACES:
            assert oc.count == addressing_cost("sm_80", 4, space, context), space


def test_rerunning_the_script_reproduces_the_staging_table(sm80_sass):
    mod = _script()
    _, sass = sm80_sass
    results = mod.Results()
    mod.count_staging(sass, "sm_80", results, verbose=False)
    sc = staging_cost("sm_80")
    assert results.barrier["sm_80"].count == sc.barrier == 1
    assert [x.base for x in results.barrier["sm_80"].added] == ["BAR"]
    for who in (*mod.STAGING_SOURCES, mod.WRITEBACK):
        loop = sc.writeback if who == mod.WRITEBACK else sc.load(who)
        for key in mod.STAGING_KEYS:
            value, agree = results.staging[("sm_80", who, key)]
            assert agree, (who, key)
            assert float(value) == pytest.approx(getattr(loop, key), abs=5e-5), (who, key)
    # rule 13: the copy loop's instructions a tile row (sm_80 is ampere's first member: its values are the table's)
    for who in mod.STAGING_SOURCES:
        assert results.copy_rows[("sm_80", who)] == asdict(sc.copy_rows[who]), who
