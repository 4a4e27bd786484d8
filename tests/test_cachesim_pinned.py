"""The whole HierarchyResult of two mixed traces, pinned exactly.

Every count, the DRAM request stream and the row-buffer outcomes of a trace mixing all
spaces, loads, stores and atomics, partial masks, widths and scattered lanes, as the
hierarchy produced them before its kernels were reworked for speed (the rework must
not change any result). Arrays are pinned by a SHA-256 of dtype, shape and bytes.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import cachesim
import traces

K80_DRAM = cachesim.DramConfig(
    352.0, 742.0, 1008.0,
    row_bits=(14, 15, 16, 17, 18, 19, 20, 21, 30, 31, 32), column_bits=(8, 9, 10, 11, 12, 13), byte_bits=(0, 1, 2),
)  # fmt: skip
STRING_DRAM = cachesim.DramConfig(
    352.0, 742.0, 1008.0, channels=6,
    mapping="dramid@8;00000000.00000000.00000000.00000000.0000RRRR.RRRRRRRR.BBBCCCCB.CCSSSSSS",
)  # fmt: skip

CONFIGS = {
    # Kepler-like: no L1, texture and constant caches, write-back L2 in 12 slices
    "kepler": dict(
        sms=4, l2="N:64:128:16,L:B:m:W:L", l2_slices=12, dram=K80_DRAM, tex="N:16:128:24,L:R:m:N:L",
        const="N:128:64:1,L:R:f:N:L", tex_latency=108.0, const_latency=48.0, l2_latency=175.0,
        issue_cycles=0.1666666667, smem_bank_bytes=8,
    ),
    # small write-back L1, sectored XOR-indexed L2, FIFO constant cache, sectored texture cache
    "mixed": dict(
        sms=3, l1="N:32:128:4,L:B:m:W:L", l2="S:16:128:4,L:B:m:W:X", l2_slices=3, dram=STRING_DRAM,
        tex="S:4:128:8,F:R:m:N:L", const="N:16:64:2,F:R:f:N:L", l1_latency=30.0, tex_latency=100.0,
        const_latency=40.0, l2_latency=150.0, issue_cycles=1.0,
    ),
}  # fmt: skip


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer: a fixed pseudo-random uint64 per input, whatever numpy's generators do."""
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(0xFFFFFFFFFFFFFFFF)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def mixed_trace(n: int = 3000, ctas: int = 24, wpb: int = 4) -> traces.Trace:
    objs = (
        traces.ObjectInfo(0, "A", "global", 1 << 20, 1 << 22, 4, None, False),
        traces.ObjectInfo(1, "B", "global", 1 << 24, 1 << 22, 8, (1024, 512), True),
        traces.ObjectInfo(2, "K", "constant", 0x1000, 4096, 4, None, False),
        traces.ObjectInfo(3, "S", "shared", 0, 4096, 4, None, False),
    )
    info = traces.KernelInfo(kernel="pinned", grid=(ctas, 1, 1), block=(32 * wpb, 1, 1), objects=objs,
                             instructions=traces.Instructions(executed=n, warps=ctas * wpb))  # fmt: skip
    i = np.arange(n, dtype=np.uint64)
    h = [_mix(i * np.uint64(16) + np.uint64(k)) for k in range(10)]
    pick = lambda k, m: (h[k] % np.uint64(m)).astype(np.int64)  # noqa: E731
    space = np.array([0, 0, 1, 2, 3, 4, 5], np.int8)[pick(0, 7)]
    op = np.array([0, 0, 0, 1, 2], np.int8)[pick(1, 5)]
    width = np.array([1, 4, 4, 8, 16], np.int8)[pick(2, 5)]
    mask = np.array([0xFFFFFFFF, 0xFFFFFFFF, 0x0000FFFF, 0x1, 0x80000001, 0xF0F0F0F0, 0], np.uint32)[pick(3, 7)]
    stride = np.array([0, 1, 4, 8, 36, 128, 4096], np.uint64)[pick(4, 7)]
    base = np.array([1 << 20, 1 << 24, 1 << 20, 0, 0x1000, 1 << 20, 1 << 24], np.uint64)[space.astype(np.int64)]
    obj = np.array([0, 1, 0, 3, 2, 0, 1], np.int16)[space.astype(np.int64)]
    start = (h[5] % np.uint64(1 << 16)) * np.uint64(4)
    lanes = np.arange(32, dtype=np.uint64)
    addr = base[:, None] + start[:, None] + stride[:, None] * lanes[None, :]
    scattered = pick(6, 5) == 0
    noise = _mix(i[:, None] * np.uint64(64) + lanes[None, :] + np.uint64(1 << 40)) % np.uint64(1 << 20)
    addr = np.where(scattered[:, None], base[:, None] + noise, addr)
    return traces.Trace(
        cta=pick(7, ctas).astype(np.int32), warp=pick(8, wpb).astype(np.int32), seq=pick(9, 40), pc=np.zeros(n, np.int32),
        op=op, space=space, width=width, mask=mask, addr=addr, obj=obj, info=info,
    )  # fmt: skip


def digest(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()[:16]


ARRAYS = ("dram_addr", "dram_cycle", "dram_obj", "dram_warp", "dram_write", "dram_bytes", "sm", "cycle")
DRAM_ARRAYS = ("order", "arrival", "bank", "bank_number", "row", "outcome", "service_ns")


def snapshot(r: cachesim.HierarchyResult) -> dict:
    out = {k: getattr(r, k).tolist() for k in ("requests", "hits", "misses", "instructions", "transactions", "replays")}
    out["row_buffer"] = r.dram.counts()
    out["digests"] = {k: digest(getattr(r, k)) for k in ARRAYS} | {
        f"dram.{k}": digest(getattr(r.dram, k)) for k in DRAM_ARRAYS
    }
    return out


PINNED: dict = {'kepler': {'requests': [[0, 0, 0, 0, 0, 0, 0],
                         [0, 0, 0, 0, 2911, 3260, 0],
                         [0, 0, 0, 5268, 0, 0, 0],
                         [6894, 2689, 0, 3154, 2813, 3150, 0]],
            'hits': [[0, 0, 0, 0, 0, 0, 0],
                     [0, 0, 0, 0, 98, 110, 0],
                     [0, 0, 0, 2114, 0, 0, 0],
                     [3718, 722, 0, 1487, 1133, 1928, 0]],
            'misses': [[0, 0, 0, 0, 0, 0, 0],
                       [0, 0, 0, 0, 2813, 3150, 0],
                       [0, 0, 0, 3154, 0, 0, 0],
                       [3176, 1967, 0, 1667, 1680, 1222, 0]],
            'instructions': [868, 428, 412, 425, 429, 438, 0],
            'transactions': [6838, 2672, 1716, 5268, 2911, 3260, 0],
            'replays': [0, 359, 3154, 4910, 1363],
            'row_buffer': {'hit': 2971, 'miss': 4, 'conflict': 6753},
            'digests': {'dram_addr': 'aa78b46a4a8b9a74',
                        'dram_cycle': '74f672a3be44097f',
                        'dram_obj': '5f90348699015bf7',
                        'dram_warp': 'f66a3571ab1dd44e',
                        'dram_write': '628de06865b53e83',
                        'dram_bytes': '451bf4dba02b79e1',
                        'sm': '36ee0a964312649f',
                        'cycle': '67fab1f2dcb11eb3',
                        'dram.order': '80cb11b979ecad74',
                        'dram.arrival': '902cd148efce38bf',
                        'dram.bank': '3e061cc0e325937c',
                        'dram.bank_number': 'fc776b2daee6ce33',
                        'dram.row': '299076b2c3066438',
                        'dram.outcome': '61b7ee378142930c',
                        'dram.service_ns': '87c5bfb2b203a519'}},
 'mixed': {'requests': [[5302, 2266, 0, 0, 0, 0, 0],
                        [0, 0, 0, 0, 2911, 3260, 0],
                        [0, 0, 0, 5268, 0, 0, 0],
                        [8139, 3413, 0, 3168, 2895, 3243, 0]],
           'hits': [[106, 18, 0, 0, 0, 0, 0], [0, 0, 0, 0, 16, 17, 0], [0, 0, 0, 2100, 0, 0, 0], [368, 183, 0, 21, 18, 74, 0]],
           'misses': [[5196, 2248, 0, 0, 0, 0, 0],
                      [0, 0, 0, 0, 2895, 3243, 0],
                      [0, 0, 0, 3168, 0, 0, 0],
                      [7771, 3230, 0, 3147, 2877, 3169, 0]],
           'instructions': [868, 428, 412, 425, 429, 438, 0],
           'transactions': [6838, 2672, 2206, 5268, 2911, 3260, 0],
           'replays': [0, 359, 3168, 4910, 1853],
           'row_buffer': {'hit': 11433, 'miss': 96, 'conflict': 12701},
           'digests': {'dram_addr': 'a1064bbf30892470',
                       'dram_cycle': 'e521055dee256a61',
                       'dram_obj': '9853abf013a07814',
                       'dram_warp': '82dbc90897ed39bc',
                       'dram_write': '79b37027efc7ebff',
                       'dram_bytes': '5c804686786e9585',
                       'sm': '1b8915aef2c97151',
                       'cycle': '4e79064a253e731b',
                       'dram.order': '60a7ba88ff0cbc38',
                       'dram.arrival': '739029fe71ea88d7',
                       'dram.bank': 'f8dac808ad1ef7e9',
                       'dram.bank_number': '1365f041cd879379',
                       'dram.row': '5649929a73a70bcd',
                       'dram.outcome': '68f554e5f9bce160',
                       'dram.service_ns': '1111402ef50bfe40'}}}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_pinned_hierarchy_result(name):
    r = cachesim.simulate_hierarchy(mixed_trace(), cachesim.HierarchyConfig(**CONFIGS[name]), blocks_per_sm=2)
    got = snapshot(r)
    want = PINNED[name]
    for key in want:
        assert got[key] == want[key], key
