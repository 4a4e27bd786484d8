"""Placement spelling and the legality rules (DESIGN.md, "Placements")."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traces
from placement.gpu import get_gpu
from placement.placements import (
    IllegalPlacement,
    check,
    parse_placement,
    sample_placement,
    shared_bytes,
    space_short,
)
from traces.errors import InputError


def kernel(objects, smem=0, threads=256, regs=16):
    objs = tuple(
        traces.ObjectInfo(i, name, space, 0x10000 * (i + 1) if space != "shared" else 0, size, 4, shape, written)
        for i, (name, space, size, shape, written) in enumerate(objects)
    )
    return traces.KernelInfo("k", (100, 1, 1), (threads, 1, 1), objs, traces.Instructions(executed=1, warps=1),
                             regs_per_thread=regs, smem_per_block=smem)  # fmt: skip


K80 = get_gpu("k80")
VEC = kernel(
    [("A", "global", 4000, None, False), ("B", "global", 4000, (10, 100), False), ("C", "global", 4000, None, True)]
)


def test_spellings():
    assert [space_short(s) for s in ("g", "texture", "TEXTURE2D", "2t", "const", "Shared")] == [
        "G",
        "T",
        "2T",
        "2T",
        "C",
        "S",
    ]
    assert [space_short(s) for s in ("r", "readonly", "LDG", "s/g", "S/T", "shared/readonly", "S / r")] == [
        "R", "R", "R", "S/G", "S/T", "S/R", "S/R"]  # fmt: skip
    with pytest.raises(InputError, match="unknown space 'L1'"):
        space_short("L1")
    with pytest.raises(InputError, match="unknown space 'G/T'"):
        space_short("G/T")
    with pytest.raises(InputError, match="staged from G, T or R"):
        space_short("S/C")


def test_parse_completes_with_the_sample():
    p = parse_placement("A=T, B=2T", VEC)
    assert p.as_dict() == {"A": "T", "B": "2T", "C": "G"}
    assert p.moved(sample_placement(VEC)) == {"A": ("G", "T"), "B": ("G", "2T")}
    assert p.label(sample_placement(VEC)) == "A=T,B=2T"
    assert parse_placement({"A": "global"}, VEC) == sample_placement(VEC)
    # S for an object held elsewhere means staged from global memory
    assert parse_placement("A=S,B=S/R", VEC).as_dict() == {"A": "S/G", "B": "S/R", "C": "G"}
    own = kernel([("s", "shared", 1024, None, True)], smem=1024)
    assert parse_placement("s=shared", own).as_dict() == {"s": "S"}
    with pytest.raises(InputError, match="already a shared-memory array"):
        parse_placement("s=S/G", own)


@pytest.mark.parametrize(
    "text, message",
    [("A", "expected OBJ=SPACE"), ("Z=T", "no object 'Z' in kernel k; objects: A, B, C"), ("A=T,A=C", "placed twice"),
     ("A=X", "--place 'A=X': unknown space 'X'")],
)  # fmt: skip
def test_parse_errors(text, message):
    with pytest.raises(InputError, match=message):
        parse_placement(text, VEC)


def test_written_objects_only_global_or_staged_from_global():
    for space in ("T", "2T", "C", "R", "S/T", "S/R"):
        with pytest.raises(
            IllegalPlacement, match=r"\(written\): C is written by the kernel, so it can only be in G or S/G"
        ):
            check(VEC, K80, parse_placement(f"C={space}", VEC))


def test_read_only_path_needs_one():
    check(VEC, K80, parse_placement("A=R", VEC))  # GK210: the 48 KB texture path
    for gpu in ("gtx680", "c2050"):
        with pytest.raises(IllegalPlacement, match=r"\(readonly\): .* has no read-only data path"):
            check(VEC, get_gpu(gpu), parse_placement("A=R", VEC))


def test_staged_placements_need_the_trace():
    with pytest.raises(InputError, match="needs the trace's footprints"):
        check(VEC, K80, parse_placement("A=S", VEC))


def test_constant_bank_capacity():
    k = kernel([("A", "global", 40000, None, False), ("B", "global", 30000, None, False)])
    check(k, K80, parse_placement("A=C", k))
    with pytest.raises(
        IllegalPlacement,
        match=r"\(constant\): the objects in C \(A, B\) need 70,000 bytes; the constant bank holds 65,536",
    ):
        check(k, K80, parse_placement("A=C,B=C", k))


def test_shared_bytes_are_the_kernels_own_arrays():
    k = kernel([("A", "global", 40000, None, False), ("s", "shared", 8000, None, True)], smem=9500)
    assert shared_bytes(k, sample_placement(k)) == 9500
    assert shared_bytes(k, parse_placement("s=G", k)) == 1500  # moving s out frees its bytes
    big = dataclasses.replace(
        k, smem_per_block=60000, objects=(k.objects[0], dataclasses.replace(k.objects[1], size=58500))
    )
    with pytest.raises(
        IllegalPlacement, match=r"\(shared\): the kernel's shared arrays \(s\) need 60,000 bytes per block"
    ):
        check(big, K80, sample_placement(big))


def test_2d_texture_needs_a_shape_within_limits():
    with pytest.raises(IllegalPlacement, match=r"\(texture2d\): A has no 2D shape"):
        check(VEC, K80, parse_placement("A=2T", VEC))
    check(VEC, K80, parse_placement("B=2T", VEC))
    wide = kernel([("W", "global", 4 * 70000, (1, 70000), False)])
    with pytest.raises(IllegalPlacement, match=r"W is 1 x 70000; k80's 2D texture limit is 65000 rows x 65000 columns"):
        check(wide, K80, parse_placement("W=2T", wide))
    # a shape that holds a fraction of the object (2 x 3 of 16,390 floats) was priced and given cudaMallocPitch code
    # for a 6-element texture
    small = kernel([("S", "global", 65560, (2, 3), False)])
    with pytest.raises(IllegalPlacement, match=r"S's 2D shape, 2 x 3 of 4 bytes, holds 24 of its 65,560 bytes"):
        check(small, K80, parse_placement("S=2T", small))
    full = kernel([("F", "global", 4 * 6, (2, 3), False)])
    check(full, K80, parse_placement("F=2T", full))  # the whole object: legal


def test_1d_texture_limit():
    big = kernel([("A", "global", 4 * (2**27 + 1), None, False)])
    with pytest.raises(IllegalPlacement, match=r"\(texture1d\): A has 134,217,729 elements"):
        check(big, K80, parse_placement("A=T", big))


def test_local_objects_cannot_move():
    k = kernel([("stack", "local", 64, None, True)])
    assert sample_placement(k).as_dict() == {}
    with pytest.raises(IllegalPlacement, match=r"\(local\)"):
        parse_placement("stack=G", k)


_PIECES = ["A", "B", "C", "Z", "=", ",", ";", " ", "T", "2T", "S", "S/G", "S/R", "R", "G", "C", "/", "windows=",
           "unrolled", "0", "3", "-1", "99999999999999999999", "\x00", "é", "==", ";;"]  # fmt: skip


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=14).map("".join) | st.text(max_size=40))
def test_any_placement_text_parses_or_is_one_clean_error(text):
    # what `--place` and a suite's placements hand to parse_placement: a placement whose label parses back to
    # itself, or an InputError of one line; then the legality rules say yes or raise IllegalPlacement (one line)
    try:
        p = parse_placement(text, VEC)
    except InputError as exc:
        assert "\n" not in str(exc) and str(exc).strip(), repr(str(exc))
        return
    assert parse_placement(p.label(), VEC) == p
    try:
        check(VEC, K80, p)
    except IllegalPlacement as exc:
        assert "\n" not in str(exc) and str(exc).strip()
