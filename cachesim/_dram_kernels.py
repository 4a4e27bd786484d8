"""numba kernels of the DRAM model: address decoding and per-bank row buffers. They never raise."""

from __future__ import annotations

import numba as nb
import numpy as np

from traces._numba import FIB_HASH_MUL

NUMBA_DEPS = "3e5555b321990317"  # its imports' sources, for numba's cache (traces.numba_cache)

ROW_HIT, ROW_MISS, ROW_CONFLICT = 0, 1, 2
# masks layout
M_CHIP, M_BANK, M_ROW, M_COL = range(4)


@nb.njit(cache=True, nogil=True)
def bit_groups(mask):
    """``mask`` as runs of consecutive set bits: rows (shift, run mask, output position)."""
    g = np.zeros((64, 3), np.uint64)
    k = 0
    pos = np.uint64(0)
    m = mask
    one = np.uint64(1)
    while m:
        low = m & (~m + one)
        shift = np.uint64(0)
        while (low >> shift) != one:
            shift += one
        width = np.uint64(0)
        while (m >> (shift + width)) & one:
            width += one
            if shift + width == np.uint64(64):
                break
        run = ~np.uint64(0) if width == np.uint64(64) else (one << width) - one
        g[k, 0] = shift
        g[k, 1] = run
        g[k, 2] = pos
        k += 1
        pos += width
        m &= ~(run << shift)
    return g[:k].copy()


@nb.njit(cache=True, nogil=True, inline="always")
def pext_groups(value, groups):
    """The bits of ``value`` selected by the mask that ``bit_groups`` split into ``groups``, gathered into the
    low bits (x86 PEXT), one run at a time."""
    out = np.uint64(0)
    for k in range(groups.shape[0]):
        out |= ((value >> groups[k, 0]) & groups[k, 1]) << groups[k, 2]
    return out


@nb.njit(cache=True, nogil=True, inline="always")
def bank_of(a, dramid, channels, bank_bits, g_chip, g_bank):
    """(bank number, address with the channel removed) of one address; see ``decode``."""
    if dramid >= 0:
        s = np.uint64(dramid)
        c = np.uint64(channels)
        chip = (a >> s) % c
        low = a & ((np.uint64(1) << s) - np.uint64(1))
        rest = (((a >> s) // c) << s) | low
    else:
        chip = pext_groups(a, g_chip)
        rest = a
    return (chip << np.uint64(bank_bits)) | pext_groups(rest, g_bank), rest


@nb.njit(cache=True, nogil=True)
def decode(addresses, masks, dramid, channels, bank_bits, bank_out, row_out, col_out):
    """Bank (chip and bank together), row and column of each address.

    With ``dramid`` >= 0 the channel is (a >> dramid) mod channels and is removed from
    the address before the other fields are read (GPGPU-Sim's ``dramid@N``); otherwise
    it is the bits of masks[M_CHIP]. bank = channel << bank_bits | bank bits.
    """
    n = addresses.shape[0]
    g_chip = bit_groups(masks[M_CHIP])
    g_bank = bit_groups(masks[M_BANK])
    g_row = bit_groups(masks[M_ROW])
    g_col = bit_groups(masks[M_COL])
    for i in range(n):
        a = addresses[i]
        bank_out[i], rest = bank_of(a, dramid, channels, bank_bits, g_chip, g_bank)
        row_out[i] = pext_groups(rest, g_row)
        col_out[i] = pext_groups(rest, g_col)


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


@nb.njit(cache=True, nogil=True)
def _hash(key, mask):
    return np.int64(((key * FIB_HASH_MUL) >> np.uint64(32)) & np.uint64(mask))


@nb.njit(cache=True, nogil=True)
def serve_state():
    """The empty state of :func:`serve_chunk`: (keys, ids, numbers, open_row, banks seen)."""
    cap = 64
    return np.empty(cap, np.uint64), np.full(cap, -1, np.int64), np.empty(16, np.uint64), np.empty(16, np.uint64), 0


@nb.njit(cache=True, nogil=True)
def serve_chunk(
    addresses,
    order,
    masks,
    dramid,
    channels,
    bank_bits,
    times,
    keys,
    ids,
    numbers,
    open_row,
    nb_,
    bank_out,
    row_out,
    outcome_out,
    service_out,
):
    """Decode and serve the requests ``addresses[order]`` through the row buffers of the state
    (keys, ids, numbers, open_row, nb_) left by the previous chunk; returns the state after them.

    Banks get ids in order of first request through an open-addressing hash map (``numbers[id]``
    is the decoded bank number); ``bank_out`` gets those first-seen ids.
    """
    n = order.shape[0]
    g_chip = bit_groups(masks[M_CHIP])
    g_bank = bit_groups(masks[M_BANK])
    g_row = bit_groups(masks[M_ROW])
    cap = keys.shape[0]
    for i in range(n):
        j = order[i]
        a = addresses[j]
        b, rest = bank_of(a, dramid, channels, bank_bits, g_chip, g_bank)
        r = pext_groups(rest, g_row)
        row_out[i] = r
        # bank number -> first-seen id
        h = _hash(b, cap - 1)
        while ids[h] >= 0 and keys[h] != b:
            h = (h + 1) & (cap - 1)
        if ids[h] >= 0:
            d = ids[h]
            if open_row[d] == r:
                outcome_out[i] = ROW_HIT
            else:
                outcome_out[i] = ROW_CONFLICT
        else:
            d = nb_
            if d == numbers.shape[0]:
                grown = np.empty(2 * d, np.uint64)
                grown[:d] = numbers
                numbers = grown
                grown = np.empty(2 * d, np.uint64)
                grown[:d] = open_row
                open_row = grown
            numbers[d] = b
            nb_ += 1
            keys[h] = b
            ids[h] = d
            outcome_out[i] = ROW_MISS
            if 2 * nb_ > cap:
                cap *= 2
                keys = np.empty(cap, np.uint64)
                ids = np.full(cap, -1, np.int64)
                for e in range(nb_):
                    h2 = _hash(numbers[e], cap - 1)
                    while ids[h2] >= 0:
                        h2 = (h2 + 1) & (cap - 1)
                    keys[h2] = numbers[e]
                    ids[h2] = e
        open_row[d] = r
        bank_out[i] = d
        service_out[i] = times[outcome_out[i]]
    return keys, ids, numbers, open_row, nb_


@nb.njit(cache=True, nogil=True)
def serve(
    addresses,
    arrival,
    order,
    masks,
    dramid,
    channels,
    bank_bits,
    times,
    arrival_out,
    bank_out,
    row_out,
    outcome_out,
    service_out,
):
    """Decode and serve the requests in ``order`` (row_buffer's whole pass); returns bank_number.

    One :func:`serve_chunk` over every request; the first-seen bank ids are then renumbered
    to the rank of the bank number among all banks seen (the
    ``np.unique(..., return_inverse=True)`` ids).
    """
    n = order.shape[0]
    for i in range(n):
        arrival_out[i] = arrival[order[i]]
    keys, ids, numbers, open_row, nb_ = serve_state()
    keys, ids, numbers, open_row, nb_ = serve_chunk(
        addresses,
        order,
        masks,
        dramid,
        channels,
        bank_bits,
        times,
        keys,
        ids,
        numbers,
        open_row,
        nb_,
        bank_out,
        row_out,
        outcome_out,
        service_out,
    )
    perm = np.argsort(numbers[:nb_])
    rank = np.empty(nb_, np.int32)
    for k in range(nb_):
        rank[perm[k]] = k
    for i in range(n):
        bank_out[i] = rank[bank_out[i]]
    return numbers[:nb_][perm].copy()
