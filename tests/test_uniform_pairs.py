"""Warp-uniform constant pairs: ``traces.context``'s PAIRED accesses and the instruction a pair saves in constant
memory from Turing on (``placement.hms.addr_cost_table``, configs/architectures.toml [SASS-U]), worked by hand; and
constants a build reads as instruction operands (``extra.const_operands``), which become loads elsewhere."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traces
from placement import api
from placement.gpu import get_gpu
from placement.hms import CONST_OPERAND, PAIRED_CONSTANT, addr_cost_table
from placement.memory import uniform_constant_pairs_of
from traces import generators
from traces.context import INDEXED, OFFSET, PAIRED, ContextStream, access_context
from traces.schema import KernelInfo
from tracemaker import warp_rows

A_BASE, X_BASE, Y_BASE = 0x100000, 0x200000, 0x300000
UNROLL = 4  # the loop body's loads of x, one pc each


def matvec_like(x_index, ctas: int = 2, uniform: bool = True) -> traces.Trace:
    """One warp a block reads A (its lanes 4 KB apart, one pc) and x[x_index[k]] at the body's k-th x instruction
    (pc 100 + 16 (k mod UNROLL)): every lane the same element when ``uniform``, else lane l element + l; then
    writes y."""
    A = traces.ObjectInfo(0, "A", "global", A_BASE, 32 * 1024 * 4 * ctas, 4, None, False)
    x = traces.ObjectInfo(1, "x", "global", X_BASE, 4096, 4, None, False)
    y = traces.ObjectInfo(2, "y", "global", Y_BASE, 32 * 4 * ctas, 4, None, True)
    lanes = np.arange(32, dtype=np.uint64)
    rows = []  # cta, warp, seq, pc, op, addr, obj
    for b in range(ctas):
        seq = 0
        for k, j in enumerate(x_index):
            rows.append(
                (b, 0, seq, 40, 0, A_BASE + (np.uint64(b * 32) + lanes) * np.uint64(4096) + np.uint64(4 * k), 0)
            )
            xa = X_BASE + 4 * int(j) + (np.zeros(32, np.uint64) if uniform else lanes * np.uint64(4))
            rows.append((b, 0, seq + 1, 100 + 16 * (k % UNROLL), 0, np.asarray(xa, np.uint64), 1))
            seq += 2
        rows.append((b, 0, seq, 200, 1, Y_BASE + (np.uint64(b * 32) + lanes) * np.uint64(4), 2))
    info = traces.KernelInfo("mv", (ctas, 1, 1), (32, 1, 1), (A, x, y),
                             traces.Instructions(executed=10 * len(rows), warps=ctas), regs_per_thread=32)  # fmt: skip
    return warp_rows(info, rows)


def x_contexts(t: traces.Trace) -> list[int]:
    """The contexts of block 0's x rows, in order."""
    c = access_context(t)
    return c[(t.obj == 1) & (t.cta == 0)].tolist()


def test_paired_context_by_hand():
    # x[0..7] through a body of 4 pcs: x[1], x[5] and x[3], x[7] are 4 bytes past a uniform x and at 4 mod 8 every
    # time (PAIRED); x[2], x[6] at 0 mod 8 (OFFSET); the body's first pc is indexed (its first execution has no
    # earlier access of x)
    t = matvec_like(range(8))
    assert x_contexts(t) == [INDEXED, PAIRED, OFFSET, PAIRED] * 2
    # the same loads with each lane on its own element: constant offsets, not uniform: no pairs
    assert x_contexts(matvec_like(range(8), uniform=False)) == [INDEXED, OFFSET, OFFSET, OFFSET] * 2
    # a 3 x 3 mask per channel, channel c at 9 c: the channels' taps alternate between 0 and 4 mod 8, so no
    # instruction is the second of an aligned pair at every execution (nvcc reads them by 32-bit ULDC)
    t = matvec_like([9 * c + k for c in range(2) for k in range(9)])
    t = _pcs_per_tap(t, 9)
    assert set(x_contexts(t)) == {INDEXED, OFFSET}


def _pcs_per_tap(t: traces.Trace, taps: int) -> traces.Trace:
    """``t`` with x's k-th load at pc 100 + 16 (k mod taps) (an unrolled tap loop) instead of UNROLL pcs."""
    cols = t.columns()
    pc = cols["pc"].copy()
    for b in np.unique(t.cta):
        rows = np.flatnonzero((t.obj == 1) & (t.cta == b))
        pc[rows] = 100 + 16 * (np.arange(rows.size) % taps)
    cols["pc"] = pc
    return traces.Trace(**cols, info=t.info)


def test_context_stream_gives_the_paired_contexts():
    t = matvec_like(range(8), ctas=3)
    whole = access_context(t)
    cs = ContextStream(t.info)
    for b in range(3):  # block by block, as a file's row groups come
        rows = np.flatnonzero(t.cta == b)
        cs.feed(traces.Trace(**{k: v[rows] for k, v in t.columns().items()}, info=t.info))
    cs.finish()
    np.testing.assert_array_equal(cs.context(t.pc), whole)
    assert (whole == PAIRED).sum() == 2 * 2 * 3


def test_cost_table_pairs_constants_from_turing_on():
    t = matvec_like(range(8))
    code = {s: traces.SPACE_CODES[n] for s, n in (("G", "global"), ("C", "constant"), ("S", "shared"))}
    for gpu, pairs in (("h100", True), ("a100", True), ("t4", True), ("v100", False), ("k80", False)):
        g = get_gpu(gpu)
        assert uniform_constant_pairs_of(g) is pairs, gpu
        table = addr_cost_table(t.info, g)
        x = 1
        assert table[PAIRED, x, code["C"]] == table[OFFSET, x, code["C"]] + (PAIRED_CONSTANT if pairs else 0), gpu
        for s in ("G", "S"):
            assert table[PAIRED, x, code[s]] == table[OFFSET, x, code[s]], (gpu, s)


@pytest.mark.parametrize("stream", ["no", "yes"])
def test_x_in_constant_saves_one_instruction_a_pair(tmp_path, stream):
    # 2 blocks x 2 iterations x 2 pairs: 8 second elements; on the H100 each is one load less in constant memory
    # (every other x access costs what it did: an indexed LDC scales its index as IMAD.WIDE forms the global
    # address, offsets go in the immediates); on the V100 (no uniform datapath) none
    t = matvec_like(range(8))
    path = tmp_path / "mv.parquet"
    traces.write(path, t, t.info)
    h100 = api.evaluate(path, "h100", "x=C", stream=stream)
    v100 = api.evaluate(path, "v100", "x=C", stream=stream)
    assert h100.to_dict()["addressing_delta"] == 8 * PAIRED_CONSTANT
    assert v100.to_dict()["addressing_delta"] == 0
    # the reason says what the instructions are: 16 warp reads of x, 8 loads fewer
    (x,) = h100.target.explanation.objects
    assert "8 fewer instructions to address and load it (0.5 per access; uniform floats in pairs, one load each in " \
           "constant memory)" in x.facts  # fmt: skip
    (x,) = v100.target.explanation.objects
    assert not any("instructions to" in f for f in x.facts)
    # and back: a trace whose x is in constant memory (its build reads the pairs by ULDC.64) pays their second
    # loads in global memory
    c = traces.rewrite(t, {"x": "constant"}).trace
    path_c = tmp_path / "mv_c.parquet"
    traces.write(path_c, c, c.info)
    back = api.evaluate(path_c, "h100", "x=G", stream=stream)
    assert back.to_dict()["addressing_delta"] == -8 * PAIRED_CONSTANT


# constants a build reads as instruction operands (extra.const_operands)


def _with_operands(value) -> str:
    """convolution_rows' metadata (a 256 x 64 image) with ``extra.const_operands`` set to ``value``."""
    _, info = generators.generate("convolution_rows", [256, 64])
    d = json.loads(info.to_json())
    d["extra"]["const_operands"] = value
    return json.dumps(d)


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=4), st.integers(),
                 st.lists(st.sampled_from(["c_Kernel", "d_Src", "s_Data", "nope", ""]), max_size=3),
                 st.lists(st.integers(), min_size=1, max_size=2)))  # fmt: skip
def test_any_const_operands_reads_or_is_one_trace_error(value):
    # a list of names of the trace's constant objects (convolution_rows has one: c_Kernel), else one TraceError
    try:
        info = KernelInfo.from_json(_with_operands(value), "t.parquet")
    except traces.TraceError as exc:
        assert exc.field == "extra.const_operands" and "t.parquet" in str(exc) and "\n" not in str(exc)
        assert not (value is None or (isinstance(value, list) and set(value) <= {"c_Kernel"}))
        return
    assert value is None or (isinstance(value, list) and set(value) <= {"c_Kernel"})
    assert info.extra.get("const_operands") == value


def test_generators_mark_their_constant_operands():
    # the recipes' CONST operands (FFMA R, R, c[0x3][imm]): convolution_rows' 17 taps, cfd's far-field variables
    assert generators.generate("convolution_rows", [256, 64])[1].extra["const_operands"] == ["c_Kernel"]
    assert generators.generate("cfd")[1].extra["const_operands"] == ["ff_variable"]


@pytest.mark.parametrize("stream", ["no", "yes"])
def test_constant_operands_become_loads_elsewhere(tmp_path, stream):
    # convolution_rows' c_Kernel taps are operands of its FFMAs: in global memory each access is a load of its own
    # (8,704 warp reads at 256 x 64) plus its addressing (the offset table's: none for a tap at its neighbour's
    # offset, one IMAD.WIDE for each warp's first, 64 warps); without the mark (the model before) only the
    # difference of the two spaces' addressing counted: none on the V100, whose LDC scales its index as LDG does
    cols, info = generators.generate("convolution_rows", [256, 64])
    path = tmp_path / "cr.parquet"
    traces.write(path, cols, info)
    reads = int((cols["obj"] == info.object("c_Kernel").id).sum())
    assert reads == 8704
    h100 = api.evaluate(path, "h100", "c_Kernel=G", stream=stream)
    assert h100.to_dict()["addressing_delta"] == reads * -CONST_OPERAND + 64
    (c,) = h100.target.explanation.objects
    assert f"{reads + 64:,} more instructions to address and load it" in " ".join(c.facts)
    unmarked = dict(info.extra)
    del unmarked["const_operands"]
    path0 = tmp_path / "cr0.parquet"
    traces.write(path0, cols, replace(info, extra=unmarked))
    assert api.evaluate(path0, "v100", "c_Kernel=G", stream=stream).to_dict()["addressing_delta"] == 0
    assert api.evaluate(path, "v100", "c_Kernel=G", stream=stream).to_dict()["addressing_delta"] == reads + 64
