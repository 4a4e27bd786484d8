"""cachesim.held: the rows a streamed walk holds back, read by row number across the groups they came in."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachesim.held import HeldRows, Rows


def _group(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    # a trace's kinds of column: 1-D of several widths and the lanes' 2-D addresses
    return (rng.integers(0, 1 << 30, n).astype(np.int32), rng.integers(-5, 5, n).astype(np.int8),
            rng.integers(0, 1 << 62, (n, 4)).astype(np.uint64))  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=12), seed=st.integers(0, 999))
def test_gather_reads_the_rows_of_the_concatenation(sizes, seed):
    rng = np.random.default_rng(seed)
    groups = [_group(rng, n) for n in sizes]
    held = HeldRows()
    for g in groups:
        held.append(g)
    assert held.rows == len(held) == sum(sizes)
    if not sum(sizes):
        with pytest.raises(ValueError, match="no rows"):
            held.take()
        return
    rows = held.take()
    assert held.rows == 0 and rows.n == sum(sizes)  # the holder emptied
    whole = [np.concatenate([g[j] for g in groups]) for j in range(3)]
    for j in range(3):
        np.testing.assert_array_equal(rows.column(j), whole[j])
    # any rows in any order, repeats too, any columns in any order
    pick = rng.integers(0, rows.n, rng.integers(0, 3 * rows.n))
    got = rows.gather(pick, (2, 0))
    np.testing.assert_array_equal(got[0], whole[2][pick])
    np.testing.assert_array_equal(got[1], whole[0][pick])
    assert got[0].dtype == np.uint64 and got[0].shape == (pick.shape[0], 4)


def test_a_wave_of_one_group_is_held_as_it_came():
    g = (np.arange(10, dtype=np.int64), np.zeros((10, 2), np.uint64))
    held = HeldRows()
    held.append(g)
    assert all(a is b for a, b in zip(held.take().pieces[0], g))


def test_a_wave_of_several_groups_is_held_as_copies_shared_between_streams():
    # a group read from a file is a view of the reader's buffers: once a second group comes, each is copied, and
    # streams fed the same arrays share one copy, as they shared the group; a column of a rewritten group is a new
    # array, a new copy; gathered rows (owned) are kept as they are
    rng = np.random.default_rng(5)
    g1, g2 = _group(rng, 10), _group(rng, 7)
    r1 = (g1[0] + 1, g1[1], g1[2])  # the same rows rewritten: a new first column
    a, b = HeldRows(), HeldRows()
    for holder, first in ((a, g1), (b, r1)):
        holder.append(first)
        holder.append(g2)
    mine = _group(rng, 3)
    a.append(mine, owned=True)
    want = [np.concatenate([g1[j], g2[j], mine[j]]) for j in range(3)]
    g1[0][:] = -1  # the groups reused by their reader
    g2[2][:] = 0
    ra, rb = a.take(), b.take()
    for j in range(3):
        np.testing.assert_array_equal(ra.column(j), want[j])
    np.testing.assert_array_equal(rb.column(0)[:10], want[0][:10] + 1)
    assert ra.pieces[0][1] is rb.pieces[0][1] and ra.pieces[0][1] is not g1[1]  # one copy, shared
    assert ra.pieces[1][2] is rb.pieces[1][2]
    assert ra.pieces[0][0] is not rb.pieces[0][0]
    assert all(x is y for x, y in zip(ra.pieces[2], mine))


def test_no_rows_is_an_error():
    with pytest.raises(ValueError, match="no rows"):
        Rows([])


def test_the_copies_are_forgotten_with_their_holders():
    import gc

    from cachesim import held as H

    gc.collect()  # earlier tests' unreachable holders would otherwise leave the registry during this one
    before = len(H._copies)
    h = HeldRows()
    h.append((np.arange(5), np.ones((5, 3))))
    h.append((np.arange(4), np.ones((4, 3))))
    assert len(H._copies) == before + 4
    del h
    gc.collect()
    assert len(H._copies) == before
