"""Kepler's, Maxwell's and Pascal's L2 as Accel-Sim's tested configurations have it (SM3_KEPLER_TITAN and SM6_TITANX
dl2 ``L:B:m:L:P``): write-back, a write miss allocates its line without fetching it from DRAM (lazy fetch-on-read),
and the set index is IPOLY's hash. The configurations had GPGPU-Sim's older Fermi string (``L:B:m:W:L``: a write
miss fetched its line first, a linear index), under which the CUDA SDK's naive transpose wrote 1024 x 1024 floats
with 11.5 times the L2 misses the two arrays' lines account for (753,536 against 65,536): every lane of a
warp-store writes a line 4 KB from its neighbour's, and a linear index maps lines a power of two apart to a few
sets."""

from __future__ import annotations

import dataclasses

import pytest

import traces
from placement.api import evaluate
from placement.gpu import get_gpu
from traces.generators import generate

ACCEL_SIM_POLICY = "L:B:m:L:P"


@pytest.mark.parametrize("name", ["k40", "k80", "gtx680", "k20", "gtx780", "gtx980", "m40", "gtx1060"])
def test_pre_volta_l2s_take_accel_sims_policy(name):
    l2 = get_gpu(name).caches.l2
    # the catalog lowers IPOLY to XOR where a slice's set count has no polynomial (cachesim.spec.IPOLY)
    assert l2.split(",")[1] in (ACCEL_SIM_POLICY, "L:B:m:L:X"), l2


@pytest.fixture(scope="module")
def transpose_1024():
    cols, info = generate("transpose", size=(1024, 1024))
    return traces.Trace(**cols, info=info)


def _transpose_l2(trace, gpu):
    d = evaluate(trace, gpu, "idata=G").to_dict()
    return d["caches"]["l2.global"], d["dram_requests"]


def test_transpose_misses_each_line_once_and_writes_fetch_nothing(transpose_1024):
    # transpose(odata, idata, 1024, 1024), 32 x 8 threads a block, 4 rows a thread: 32,768 warp-loads of one line
    # (idata read along rows) and 32,768 warp-stores of 32 lines each (odata written down columns), 1,081,344
    # L2 requests; the two arrays hold 2 x 4 MiB / 128 B = 65,536 lines, each missed once with the hashed index.
    # DRAM reads every idata line once (32,768) and odata's dirty lines as the L2 evicts them, none fetched.
    l2, dram = _transpose_l2(transpose_1024, get_gpu("k40"))
    assert l2["requests"] == 32_768 + 32_768 * 32
    assert l2["misses"] == 65_536
    assert 32_768 <= dram <= 65_536


def test_the_old_string_is_what_this_changes(transpose_1024):
    # the same kernel under the old string: the linear index's conflicts (misses far above the 65,536 lines) and a
    # DRAM read before every write miss (DRAM requests above reads plus write-backs)
    k40 = get_gpu("k40")
    old = dataclasses.replace(k40, caches=dataclasses.replace(k40.caches, l2="N:64:128:16,L:B:m:W:L"))
    l2, dram = _transpose_l2(transpose_1024, old)
    assert l2["misses"] > 10 * 65_536
    assert dram > 2 * 65_536
