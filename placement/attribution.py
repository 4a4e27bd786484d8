"""Per object, what the trace says: its accesses by kind and the addressing instructions a placement adds.

The model's terms (``placement.hms.Terms``) are per kernel and per space; a developer asks
per array. The accesses and the addressing change are exactly per object (one row of the
trace is one object's access, and ``traces.rewrite`` prices each row for its object);
cache requests and hits are per space (``Terms.caches``) and per object (``Terms.object_caches``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import traces
from traces.staging import divergent_loads

from .placements import Placement, is_staged, unstaged


@dataclass(frozen=True)
class ObjectAccesses:
    """Warp-level accesses of one object in the trace."""

    loads: int
    stores: int
    atomics: int
    """Atomics and reductions."""
    divergent_loads: int = 0
    """Loads whose active lanes read more than one address (``traces.staging.divergent_loads``)."""

    @property
    def serialized(self) -> bool:
        """Whether most of the loads read several addresses (``placement.hms.is_long_latency``'s ``serialized``)."""
        return self.loads > 0 and 2 * self.divergent_loads > self.loads

    @property
    def total(self) -> int:
        return self.loads + self.stores + self.atomics


def accesses(trace: traces.Trace) -> dict[str, ObjectAccesses]:
    """Each object's loads, stores and atomics (warp-level rows) in the trace."""
    ids = trace.info.n_ids
    obj = trace.obj.astype(np.int64)
    keep = obj >= 0
    by_op = np.zeros((4, max(ids, 1)), np.int64)
    np.add.at(by_op, (trace.op[keep].astype(np.int64), obj[keep]), 1)
    div = divergent_loads(trace)
    return {
        o.name: ObjectAccesses(
            int(by_op[0, o.id]), int(by_op[1, o.id]), int(by_op[2, o.id] + by_op[3, o.id]), int(div[o.id])
        )
        for o in trace.info.objects
    }


def addressing(trace: traces.Trace, placement: Placement, cost: np.ndarray, context: np.ndarray,
               layout: traces.Layout | None = None) -> dict[str, int]:  # fmt: skip
    """Addressing instructions the placement adds (negative: removes) per object, against the sample.

    The per-row deltas of ``traces.rewrite`` with the evaluator's cost table and access
    contexts (``Evaluator.cost``, ``Evaluator.context``), staged objects read from shared memory;
    summed per object they add up to ``Terms.addressing_delta``. ``layout`` is the placement as its
    check converted it (``Legality.layout``); without it, it is converted here.
    """
    info = trace.info
    staged = [info.object(n).id for n, s in placement.spaces if is_staged(s)]
    rw = traces.rewrite(trace, unstaged(placement) if layout is None else layout, cost, staged=staged, context=context)
    ids = info.n_ids
    obj = trace.obj.astype(np.int64)
    keep = obj >= 0
    per = np.bincount(obj[keep], weights=rw.addr_inst_delta[keep].astype(np.float64), minlength=max(ids, 1))
    return {o.name: int(round(per[o.id])) for o in info.objects}


__all__ = ["ObjectAccesses", "accesses", "addressing"]
