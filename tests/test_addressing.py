"""The addressing-mode table (configs/addressing.toml) and its loader (Huang & Li, Sec. III-B)."""

from __future__ import annotations

import functools
import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest

from placement.addressing import addressing_cost, addressing_delta, families, resolve_arch, table_path
from traces.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SPACES = ("G", "T", "2T", "C", "R", "S")


@functools.lru_cache(maxsize=1)
def _script():
    """benchmarks/addressing_modes.py as a module (its counting rule and compile helpers)."""
    spec = importlib.util.spec_from_file_location("addressing_modes", ROOT / "benchmarks" / "addressing_modes.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["addressing_modes"] = mod        # dataclasses look their module up here
    spec.loader.exec_module(mod)
    return mod


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
    assert addressing_cost("sm_80", 1, "r") == 3                # char: SHF + IADD3 + IADD3.X
    assert addressing_cost("sm_37", 4, "readonly") == 2         # inferred: IMAD + IMAD.HI.X
    assert addressing_cost("hopper", 8, "R_restrict") == 1      # const __restrict__, for comparison
    for fam in families():
        for b in (1, 2, 4, 8, 16):
            assert addressing_cost(fam, b, "R") == addressing_cost(fam, b, "G"), (fam, b)


def test_arch_names_sm_numbers_and_fallbacks():
    assert resolve_arch("ampere") == "ampere"
    assert resolve_arch("sm_86") == "ampere"
    assert resolve_arch("compute_90") == "hopper"
    assert resolve_arch("Volta") == "turing"        # v100.toml's arch; sm_70 not compilable with CUDA 13
    assert resolve_arch("sm_70") == "turing"
    assert resolve_arch("fermi") == "kepler"        # c2050.toml
    assert resolve_arch("tesla") == "kepler"        # fx5600.toml, gtx280.toml
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
        addressing_cost("kepler", 4, "2G")          # the 2D comparisons are measured sections only
    with pytest.raises(InputError):
        addressing_cost("ampere", 0, "G")


def test_a_broken_table_is_refused(tmp_path, monkeypatch):
    (tmp_path / "addressing.toml").write_text(
        'schema = 1\nspaces = ["G", "T"]\n[x]\nsm = ["sm_1"]\n[x.bytes]\n"4" = { G = -1, T = 0 }\n')
    monkeypatch.setenv("PLACEMENT_CONFIGS", str(tmp_path))
    with pytest.raises(InputError, match="non-negative"):
        addressing_cost("x", 4, "G")
    (tmp_path / "addressing.toml").write_text(
        'schema = 1\nspaces = ["G", "T"]\n[y]\nsm = ["sm_1"]\n[y.bytes]\n"4" = { G = 1 }\n')
    with pytest.raises(InputError, match="'T'"):
        addressing_cost("y", 4, "G")


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
    "G": ["/*0038*/ MOV32I R5, 0x4",
          "/*0048*/ IMAD R6.CC, R3, R5, c[0x0][0x20]",
          "/*0050*/ IMAD.HI.X R7, R3, R5, c[0x0][0x24]",
          "/*0058*/ LD.E R2, [R6]"],
    "T": ["/*0038*/ TLD.LZ.T R2, R3, 0x0, 1D, 0x1"],
    "C": ["/*0038*/ SHL.W R2, R3, 0x2",
          "/*0048*/ LDC R4, c[0x2][R2]"],
    "S": ["/*0038*/ SHL R2, R4, 0x2",
          "/*0048*/ LDS R5, [R2]"],
}


@pytest.mark.parametrize("space,expected", [("G", 2), ("T", 0), ("C", 1), ("S", 1)])
def test_counting_rule_reproduces_the_papers_kepler_sass(space, expected):
    mod = _script()
    lines = _PROLOGUE + _FIG2[space] + ["/*0100*/ EXIT"]
    kc = mod.count_kernel(lines, space, "vecAdd", "sm_35", "float")
    assert kc.count == expected == addressing_cost("kepler", 4, space)


def test_rerunning_the_script_reproduces_the_table(tmp_path):
    mod = _script()
    nvcc, cuobjdump = mod.tool("nvcc"), mod.tool("cuobjdump")
    if not nvcc or not cuobjdump:
        pytest.skip("nvcc and cuobjdump are not both installed (CUDA toolkit; pip install nvidia-cuda-cuobjdump)")
    arch, tname = "sm_80", "float"
    try:
        cubin = mod.compile_cubin(mod.kernel_source(mod.TYPES[tname]), arch, tmp_path, "addr_float", nvcc)
    except RuntimeError as exc:
        pytest.skip(f"this nvcc cannot compile for {arch}: {exc}")
    sass = mod.disassemble(cubin, cuobjdump)
    row = _table()["ampere"]["types"][tname]
    for space in mod.ALL_SPACES:
        kc = mod.count_kernel(sass[f"k_{space}"], space, f"k_{space}", arch, tname)
        assert kc.agree, space
        assert kc.count == row[space] == addressing_cost(arch, 4, space), space
