"""traces.block_groups: a stream of batches re-cut into groups of whole blocks, in block order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traces
from traces.blockgroups import block_groups
from traces.schema import COLUMNS


def _trace(cta: list[int]) -> traces.Trace:
    """Rows of the blocks ``cta``, each row's seq its index (so a row is known by it)."""
    n = len(cta)
    info = traces.KernelInfo(kernel="t", grid=(max(cta, default=0) + 1, 1, 1), block=(32, 1, 1), objects=(),
                             instructions=traces.Instructions(executed=n, warps=max(cta, default=0) + 1))  # fmt: skip
    return traces.Trace(cta=np.array(cta, np.int32), warp=np.zeros(n, np.int32), seq=np.arange(n, dtype=np.int64),
                        pc=np.zeros(n, np.int32), op=np.zeros(n, np.int8), space=np.zeros(n, np.int8),
                        width=np.full(n, 4, np.int8), mask=np.full(n, 0xFFFFFFFF, np.uint32),
                        addr=np.zeros((n, 32), np.uint64), obj=np.zeros(n, np.int16), info=info)  # fmt: skip


def _batches(t: traces.Trace, cuts: list[int]) -> list[traces.Trace]:
    edges = [0, *sorted(set(c for c in cuts if 0 < c < len(t))), len(t)]
    return [traces.Trace(**{c: getattr(t, c)[a:b] for c in COLUMNS}, info=t.info, start=a)
            for a, b in zip(edges[:-1], edges[1:])]  # fmt: skip


@st.composite
def streams(draw):
    """Blocks in order, cut into batches anywhere; two neighbouring blocks' rows may be interleaved where no batch
    boundary falls among them (the rows of a group may come in any order)."""
    sizes = draw(st.lists(st.integers(1, 9), min_size=1, max_size=12))
    cta = [b for b, k in enumerate(sizes) for _ in range(k)]
    cuts = draw(st.lists(st.integers(0, len(cta)), max_size=8))
    if draw(st.booleans()) and len(sizes) > 1:  # two neighbouring blocks' rows interleaved
        b = draw(st.integers(0, len(sizes) - 2))
        lo = sum(sizes[:b])
        hi = lo + sizes[b] + sizes[b + 1]
        cta[lo:hi] = draw(st.permutations(cta[lo:hi]))
        cuts = [c for c in cuts if not lo < c < hi]
    return cta, cuts


@settings(max_examples=200, deadline=None)
@given(streams())
def test_groups_are_whole_blocks_in_order_and_one_a_batch(case):
    # the groups, one after the other, are the batches' rows in their order; no block is in two groups, each
    # group's blocks are below the next's; each batch gives at most one group (plus the rows held at the end),
    # and each group starts at its first row's file row
    cta, cuts = case
    t = _trace(cta)
    batches = _batches(t, cuts)
    groups = list(block_groups(batches))
    assert np.concatenate([g.seq for g in groups]).tolist() == list(range(len(cta)))
    for g in groups:
        assert len(g) > 0 and g.start == int(g.seq[0])
    for a, b in zip(groups[:-1], groups[1:]):
        assert int(a.cta.max()) < int(b.cta.min())
    assert len(groups) <= len(batches) + 1
    # as few groups as whole blocks allow: a group ends only where a batch ends past a cut, so two groups
    # never both end inside one batch
    ends = np.cumsum([len(g) for g in groups])[:-1]
    edges = np.cumsum([len(b) for b in batches])
    batch_of_end = np.searchsorted(edges, ends, side="right")
    assert len(set(batch_of_end.tolist())) == len(batch_of_end)


def test_one_group_a_batch_hand_worked():
    # blocks 0 0 1 | 1 2 2 3 | 3 4: the first batch gives block 0 and holds block 1's row (the batch's last block
    # may go on); the second joins it to its own rows up to its last cut, blocks 1 and 2 in one group (until
    # 4 Dec 2026 a group of block 1, then one of block 2), and holds block 3; the third gives block 3, and the
    # end block 4
    t = _trace([0, 0, 1, 1, 2, 2, 3, 3, 4])
    groups = list(block_groups(_batches(t, [3, 7])))
    assert [g.cta.tolist() for g in groups] == [[0, 0], [1, 1, 2, 2], [3, 3], [4]]
    assert [g.start for g in groups] == [0, 2, 6, 8]


def test_a_block_after_a_later_one_names_its_row():
    # block 0 went out with the first batch (its rows before the cut at block 1); a row of it in the next batch
    # is an error naming the row and the highest block before it (block 1, held, not block 0, the highest sent)
    t = _trace([0, 0, 1, 1, 0])
    with pytest.raises(ValueError, match=r"^row 4: block 0 after block 1; streamed staging needs the rows in block"):
        list(block_groups(_batches(t, [4])))
    with pytest.raises(ValueError, match=r"^row 5: block 0 after block 2;"):
        list(block_groups(_batches(_trace([0, 1, 1, 2, 1, 0]), [2, 5])))
