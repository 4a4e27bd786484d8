"""numba options shared by the kernels of every layer (``traces`` is the lowest, so they live here)."""

from __future__ import annotations

LEAF = {"cache": True, "nogil": True, "_nrt": False}
"""For a helper a kernel calls per row or per request that allocates nothing and returns no array.

numba reference-counts each array argument on entry to a function it does not inline and
again on exit: two calls into its runtime (an atomic add each) per array per call. The
hierarchy walk's L2 access took ten arrays (``cfgs``, ``state``, ``stats``, the six DRAM
request columns, ``hp``/``lat``): about 40 % of the walk's time went to those calls.
Without the runtime (numba's ``_nrt`` target option) the helper borrows its caller's
arrays, which the caller keeps alive for the call; such a helper must not allocate
(``np.empty`` needs the runtime) nor return an array. Inlining the helpers instead
(``inline="always"``) took the walk's compilation from 20 s to 4 minutes.
"""
