"""importers.objects: inference from rows counted once each (``infer_from_bounds`` with weights) equals inference from
the rows repeated, and ``assign_objects`` gives each row the object inference gave it (the streaming sanitizer
decoder relies on both)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traces.importers import _object_kernels as K
from traces.importers.objects import ObjectSpec, assign_objects, infer_from_bounds, infer_objects
from traces.schema import GLOBAL, LOCAL, SHARED

LANES = np.arange(32, dtype=np.uint64)


@st.composite
def rows(draw):
    """Distinct rows (space, pc, op, 4-byte lanes from lo) and how often each repeats, with explicit objects."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(1, 60))
    space = rng.choice([GLOBAL, SHARED, SHARED, LOCAL], n).astype(np.int8)
    pc = (16 * rng.integers(0, 5, n)).astype(np.int32)
    op = rng.integers(0, 4, n).astype(np.int8)
    width = np.full(n, 4, np.int8)
    # starts from a few clusters per space, far apart, so that gaps and medians decide the ranges
    cluster = rng.choice([0, 0x200, 0x800, 0x10000, 0x400000], n).astype(np.uint64)
    lo = (
        cluster
        + (4 * rng.integers(0, 96, n)).astype(np.uint64)
        + np.where(space == GLOBAL, 1 << 40, 0).astype(np.uint64)
    )
    weight = rng.choice([1, 1, 2, 5, 40], n).astype(np.int64)
    specs = []
    if draw(st.booleans()):
        specs.append(ObjectSpec("tile", 0x800, 0x100, "shared"))
    if draw(st.booleans()):
        specs.append(ObjectSpec("big", (1 << 40) + 0x10000, 0x200, "global"))
    return space, pc, op, width, lo, weight, tuple(specs)


def _repeated(space, pc, op, width, lo, weight):
    r = np.repeat(np.arange(space.shape[0]), weight)
    np.random.default_rng(0).shuffle(r)  # the copies in any order
    addr = lo[r][:, None] + 4 * LANES[None, :]
    return space[r], pc[r], op[r], width[r], np.full(r.size, 0xFFFFFFFF, np.uint32), addr


@settings(max_examples=200, deadline=None)
@given(case=rows())
def test_counted_rows_infer_the_objects_of_the_rows_repeated(case):
    space, pc, op, width, lo, weight, specs = case
    rep = _repeated(space, pc, op, width, lo, weight)
    whole = infer_objects(*rep, explicit=specs)
    counted = infer_from_bounds(space, pc, op, width, lo, lo + 128, weight=weight, explicit=specs)
    assert counted.objects == whole.objects
    assert counted.report == whole.report
    # and every row, of either, is assigned the object inference gave it
    r_lo, r_hi = np.zeros(rep[0].size, np.uint64), np.zeros(rep[0].size, np.uint64)
    K.row_bounds(rep[4], rep[5], rep[3], r_lo, r_hi)
    assert np.array_equal(assign_objects(rep[0], r_lo, r_hi, whole, specs), whole.obj)
    assert np.array_equal(assign_objects(space, lo, lo + 128, counted, specs), counted.obj)


def test_median_gap_counts_the_copies():
    # one pc's rows at 0, 0x100 and 0x2000 (128 B each): gaps 0x80 and 0x1e80, median 0xf80, x16 above 0x1e80: one
    # range. Row 0 three times: gaps 0, 0, 0x80, 0x1e80, median 0x40 (x16 = 0x400 < 0x1e80): cut in two.
    lo = np.array([0, 0x100, 0x2000], np.uint64)
    args = (np.full(3, SHARED, np.int8), np.zeros(3, np.int32), np.zeros(3, np.int8), np.full(3, 4, np.int8))
    once = infer_from_bounds(*args, lo, lo + 128)
    assert [(o.base, o.size) for o in once.objects] == [(0, 0x2080)]
    thrice = infer_from_bounds(*args, lo, lo + 128, weight=np.array([3, 1, 1]))
    assert [(o.base, o.size) for o in thrice.objects] == [(0, 0x180), (0x2000, 0x80)]


def test_assign_refuses_objects_from_host_copies():
    from traces.importers.objects import Extent

    lo = np.array([1 << 40], np.uint64)
    args = (np.zeros(1, np.int8), np.zeros(1, np.int32), np.zeros(1, np.int8), np.full(1, 4, np.int8))
    found = infer_from_bounds(*args, lo, lo + 128, extents=[Extent(1 << 40, 4096, "copy")])
    with pytest.raises(ValueError, match="host-copy extents"):
        assign_objects(args[0], lo, lo + 128, found)
