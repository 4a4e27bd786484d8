"""numba kernels of the DRAM model: address decoding and per-bank row buffers. They never raise."""

from __future__ import annotations

import numba as nb
import numpy as np

ROW_HIT, ROW_MISS, ROW_CONFLICT = 0, 1, 2
# masks layout
M_CHIP, M_BANK, M_ROW, M_COL = range(4)


@nb.njit(cache=True, nogil=True, inline="always")
def pext(value, mask):
    """Gather the bits of ``value`` selected by ``mask`` into the low bits (x86 PEXT)."""
    out = np.uint64(0)
    pos = np.uint64(0)
    m = mask
    one = np.uint64(1)
    while m:
        low = m & (~m + one)
        if value & low:
            out |= one << pos
        pos += one
        m &= m - one
    return out


@nb.njit(cache=True, nogil=True)
def decode(addresses, masks, dramid, channels, bank_bits, bank_out, row_out, col_out):
    """Bank (chip and bank together), row and column of each address.

    With ``dramid`` >= 0 the channel is (a >> dramid) mod channels and is removed from
    the address before the other fields are read (GPGPU-Sim's ``dramid@N``); otherwise
    it is the bits of masks[M_CHIP]. bank = channel << bank_bits | bank bits.
    """
    n = addresses.shape[0]
    for i in range(n):
        a = addresses[i]
        if dramid >= 0:
            s = np.uint64(dramid)
            c = np.uint64(channels)
            chip = (a >> s) % c
            low = a & ((np.uint64(1) << s) - np.uint64(1))
            rest = (((a >> s) // c) << s) | low
        else:
            chip = pext(a, masks[M_CHIP])
            rest = a
        bank_out[i] = (chip << np.uint64(bank_bits)) | pext(rest, masks[M_BANK])
        row_out[i] = pext(rest, masks[M_ROW])
        col_out[i] = pext(rest, masks[M_COL])


@nb.njit(cache=True, nogil=True)
def row_buffer(bank, row, n_banks, outcome):
    """Open-page row buffers, requests in the given order: hit (the bank's open row),
    miss (no row open yet) or conflict (another row open); the row stays open after."""
    is_open = np.zeros(n_banks, np.bool_)
    open_row = np.zeros(n_banks, np.uint64)
    for i in range(bank.shape[0]):
        b = bank[i]
        if not is_open[b]:
            outcome[i] = ROW_MISS
            is_open[b] = True
        elif open_row[b] == row[i]:
            outcome[i] = ROW_HIT
        else:
            outcome[i] = ROW_CONFLICT
        open_row[b] = row[i]
