"""Placement spelling and the legality rules (DESIGN.md, "Placements")."""

from __future__ import annotations

import dataclasses

import pytest

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
VEC = kernel([("A", "global", 4000, None, False), ("B", "global", 4000, (10, 100), False), ("C", "global", 4000, None, True)])


def test_spellings():
    assert [space_short(s) for s in ("g", "texture", "TEXTURE2D", "2t", "const", "Shared")] == ["G", "T", "2T", "2T", "C", "S"]
    with pytest.raises(InputError, match="unknown space 'L1'"):
        space_short("L1")


def test_parse_completes_with_the_sample():
    p = parse_placement("A=T, B=2T", VEC)
    assert p.as_dict() == {"A": "T", "B": "2T", "C": "G"}
    assert p.moved(sample_placement(VEC)) == {"A": ("G", "T"), "B": ("G", "2T")}
    assert p.label(sample_placement(VEC)) == "A=T,B=2T"
    assert parse_placement({"A": "global"}, VEC) == sample_placement(VEC)


@pytest.mark.parametrize(
    "text, message",
    [("A", "expected OBJ=SPACE"), ("Z=T", "no object 'Z' in kernel k; objects: A, B, C"), ("A=T,A=C", "placed twice"),
     ("A=X", "unknown space 'X'")],
)  # fmt: skip
def test_parse_errors(text, message):
    with pytest.raises(InputError, match=message):
        parse_placement(text, VEC)


def test_written_objects_only_global_or_shared():
    for space in ("T", "2T", "C"):
        with pytest.raises(IllegalPlacement, match=r"\(written\): C is written by the kernel, so it can only be in G or S"):
            check(VEC, K80, parse_placement(f"C={space}", VEC))
    check(VEC, K80, parse_placement("C=S", VEC))


def test_constant_bank_capacity():
    k = kernel([("A", "global", 40000, None, False), ("B", "global", 30000, None, False)])
    check(k, K80, parse_placement("A=C", k))
    with pytest.raises(IllegalPlacement, match=r"\(constant\): the objects in C \(A, B\) need 70,000 bytes; the constant bank holds 65,536"):
        check(k, K80, parse_placement("A=C,B=C", k))


def test_shared_capacity_per_block_counts_the_kernel_usage():
    k = kernel([("A", "global", 40000, None, False), ("s", "shared", 8000, None, True)], smem=8000)
    assert shared_bytes(k, parse_placement("A=S", k)) == 48000
    check(k, K80, parse_placement("A=S", k))  # 48000 <= 49152
    k2 = dataclasses.replace(k, smem_per_block=9500)  # the kernel uses 1500 more bytes of its own
    with pytest.raises(IllegalPlacement, match=r"\(shared\): the objects in S \(A, s\) need 49,504 bytes of shared memory per block"):
        check(k2, K80, parse_placement("A=S", k2))
    # moving s out frees its bytes
    assert shared_bytes(k2, parse_placement("A=S,s=G", k2)) == 1504 + 40000


def test_shared_lowers_occupancy():
    k = kernel([("A", "global", 20480, None, False)], threads=128, regs=16)
    assert check(k, K80, sample_placement(k)).occupancy.blocks_per_sm == 16
    legal = check(k, K80, parse_placement("A=S", k))
    # 114688 // 20480 = 5 blocks of 4 warps
    assert (legal.occupancy.blocks_per_sm, legal.occupancy.warps_per_sm, legal.occupancy.limiter) == (5, 20, "shared memory")


def test_2d_texture_needs_a_shape_within_limits():
    with pytest.raises(IllegalPlacement, match=r"\(texture2d\): A has no 2D shape"):
        check(VEC, K80, parse_placement("A=2T", VEC))
    check(VEC, K80, parse_placement("B=2T", VEC))
    wide = kernel([("W", "global", 4 * 70000, (1, 70000), False)])
    with pytest.raises(IllegalPlacement, match=r"W is 1 x 70000; k80's 2D texture limit is 65000 rows x 65000 columns"):
        check(wide, K80, parse_placement("W=2T", wide))


def test_1d_texture_limit():
    big = kernel([("A", "global", 4 * (2**27 + 1), None, False)])
    with pytest.raises(IllegalPlacement, match=r"\(texture1d\): A has 134,217,729 elements"):
        check(big, K80, parse_placement("A=T", big))


def test_local_objects_cannot_move():
    k = kernel([("stack", "local", 64, None, True)])
    assert sample_placement(k).as_dict() == {}
    with pytest.raises(IllegalPlacement, match=r"\(local\)"):
        parse_placement("stack=G", k)
