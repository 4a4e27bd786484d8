"""numba kernel of ``hms._dram_piece``: the DRAM requests' arrival, busy and latency in one pass.

The numpy form made ten request-sized temporaries (the gaps, their running sum, the
arrivals less the sum, its running maximum, ...); here each request's values are
computed with the same operations in the same order (a running sum added request
by request, as ``np.cumsum`` does), so the results are equal to the last bit.
"""

from __future__ import annotations

import numba as nb


@nb.njit(cache=True, nogil=True)
def dram_piece(nbytes, order, cycle, service_ns, bytes_per_cycle, channels, row_hit_ns, mhz, g0, m0, arrival, busy,
               latency):  # fmt: skip
    """Request k (``nbytes[order[k]]`` bytes, arriving at ``cycle[k]``, served in ``service_ns[k]``):
    ``arrival[k]``, ``busy[k]`` and ``latency[k]`` as ``hms._dram_piece`` defines them, from the departure
    delays so far ``g0`` and the running maximum ``m0``; returns both after the last request."""
    g = g0
    m = m0
    for k in range(cycle.shape[0]):
        gap = float(nbytes[order[k]]) / bytes_per_cycle
        v = cycle[k] - g
        if v > m:
            m = v
        arrival[k] = m + g
        latency[k] = service_ns[k] * mhz / 1e3
        busy[k] = gap * channels * (service_ns[k] / row_hit_ns)
        g = g + gap
    return g, m
