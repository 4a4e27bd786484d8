"""DRAM: address decoding and row-buffer outcomes against a loop reference and by hand."""

from __future__ import annotations

import numpy as np
import pytest

import cachesim
from traces.errors import InputError

K80 = cachesim.DramConfig(
    352.0, 742.0, 1008.0,
    row_bits=(14, 15, 16, 17, 18, 19, 20, 21, 30, 31, 32), column_bits=(8, 9, 10, 11, 12, 13), byte_bits=(0, 1, 2),
)  # fmt: skip


def ref_row_buffer(banks, rows):
    open_rows = {}
    out = []
    for b, r in zip(banks, rows):
        if b not in open_rows:
            out.append(1)
        elif open_rows[b] == r:
            out.append(0)
        else:
            out.append(2)
        open_rows[b] = r
    return np.array(out, dtype=np.int8)


def test_k80_hand_worked():
    a = np.array([0, 1 << 8, 1 << 14, 1 << 3, 0, 1 << 30, 1 << 22], np.uint64)
    r = cachesim.row_buffer(a, np.arange(7.0), K80)
    # 0 opens row 0 of bank 0 (miss); bit 8 is a column bit: same row (hit); bit 14 is a row
    # bit: conflict; bit 3 is a bank bit: another bank (miss); 0 again: row 1 is open (conflict);
    # bit 30 is a row bit (conflict); bit 22 is a bank bit (miss)
    assert r.outcome.tolist() == [1, 0, 2, 1, 2, 2, 1]
    assert r.service_ns.tolist() == [742.0, 352.0, 1008.0, 742.0, 1008.0, 1008.0, 742.0]
    assert r.n_banks == 3 and r.counts() == {"hit": 1, "miss": 3, "conflict": 3}


def test_arrival_order_decides():
    a = np.array([1 << 14, 0, 0], np.uint64)
    r = cachesim.row_buffer(a, np.array([5.0, 1.0, 2.0]), K80)
    assert r.order.tolist() == [1, 2, 0] and r.arrival.tolist() == [1.0, 2.0, 5.0]
    assert r.outcome.tolist() == [1, 0, 2]


@pytest.mark.parametrize("seed", range(4))
def test_random_against_loop_reference(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 24, 5000).astype(np.uint64) & ~np.uint64(0x3F)
    t = rng.random(5000)
    r = cachesim.row_buffer(a, t, K80)
    bank, row, col = cachesim.decode(a[r.order], K80)
    np.testing.assert_array_equal(r.outcome, ref_row_buffer(bank.tolist(), row.tolist()))
    # the bank bits are exactly the bits that are neither row, column nor byte bits
    x = a[r.order]
    bank_mask = ~np.uint64(sum(1 << b for b in K80.row_bits + K80.column_bits + K80.byte_bits))
    same = (x[:, None] & bank_mask) == (x[None, :300] & bank_mask)
    np.testing.assert_array_equal(same, bank[:, None] == bank[None, :300])


def test_gpgpusim_mapping_string():
    # GTX480-style: dramid@8, 6 channels (not a power of two: the channel is a modulo)
    m = "dramid@8;00000000.00000000.00000000.00000000.0000RRRR.RRRRRRRR.RBBBCCCC.BCCSSSSS"
    cfg = cachesim.DramConfig(1.0, 2.0, 3.0, mapping=m, channels=6)
    a = np.array([0, 256, 5 * 256, 6 * 256, 6 * 256 + (1 << 12), 6 * 256 + (1 << 16)], np.uint64)
    bank, row, col = cachesim.decode(a, cfg)
    # channel = (a >> 8) % 6, above the 4 bank bits; the rest is ((a >> 8) // 6) << 8 | (a & 255)
    assert (bank[:3] >> np.uint64(4)).tolist() == [0, 1, 5]
    # 6 * 256 -> channel 0, rest 256: bit 8 is the 8th column bit (5 S + 2 C below it)
    assert bank[3] == 0 and col[3] == 1 << 7 and row[3] == 0
    # 6 * 256 + 2^12 = 5632: a >> 8 = 22 -> channel 4, rest 3 << 8 (bits 8, 9: column bits 7, 8)
    assert (bank[4], col[4], row[4]) == (4 << 4, (1 << 7) | (1 << 8), 0)
    # 6 * 256 + 2^16 = 67072: a >> 8 = 262 -> channel 4, rest 43 << 8 (bits 8, 9, 11: columns 7, 8, 10;
    # bit 13: the third bank bit, bank bits being 7, 12, 13, 14)
    assert (bank[5], col[5], row[5]) == ((4 << 4) | 0b100, (1 << 7) | (1 << 8) | (1 << 10), 0)
    # explicit D bits: 2 channels at bit 7
    m2 = "00000000.00000000.00000000.00000000.0000RRRR.RRRRRRRR.RBBBCCCC.DCCSSSSS"
    cfg2 = cachesim.DramConfig(1.0, 2.0, 3.0, mapping=m2, channels=2)
    bank2, row2, _ = cachesim.decode(np.array([0, 128, 1 << 12, 1 << 15, 1 << 16], np.uint64), cfg2)
    assert bank2.tolist() == [0, 8, 1, 0, 0] and row2.tolist() == [0, 0, 0, 1, 2]


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(mapping="dramid@8;RRRR"), "mapping"),
        (dict(mapping="X" * 64), "mapping"),
        (dict(mapping="dramid@8;" + "D" + "0" * 63), "mapping"),
        (dict(mapping="D" + "0" * 63, channels=4), "channels"),
        (dict(), "mapping"),
        (dict(row_bits=(1, 2), column_bits=(2, 3)), "row_bits"),
        (dict(row_bits=(70,), column_bits=(2,)), "row_bits"),
        (dict(row_bits=(1,), column_bits=(2,), channels=0), "channels"),
    ],
)
def test_bad_mappings(kwargs, field):
    with pytest.raises(cachesim.MappingError) as e:
        cachesim.DramConfig(1.0, 2.0, 3.0, **kwargs)
    assert isinstance(e.value, InputError) and e.value.field == field


def test_bad_times():
    with pytest.raises(cachesim.MappingError, match="^row_hit_ns"):
        cachesim.DramConfig(0.0, 2.0, 3.0, row_bits=(1,), column_bits=(2,))
