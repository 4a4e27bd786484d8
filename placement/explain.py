"""Why a placement is faster or slower: the events that moved most against the sample."""

from __future__ import annotations

from .hms import Terms

# (label, getter) of the events compared; counts and latencies a reader can check.
EVENTS = (
    ("issued instructions", lambda t: t.issued_instructions),
    ("addressing instructions", lambda t: t.addressing_delta),
    ("replays", lambda t: sum(t.replays.values())),
    ("memory requests", lambda t: t.mem_requests),
    ("DRAM requests", lambda t: t.dram_requests),
    ("row-buffer conflicts", lambda t: t.row_buffer.get("conflict", 0)),
    ("row-buffer hits", lambda t: t.row_buffer.get("hit", 0)),
    ("queuing delay (cycles)", lambda t: t.mean_queuing_delay),
    ("AMAT (cycles)", lambda t: t.amat),
    ("warps per SM", lambda t: t.n),
)


def moved_events(sample: Terms, target: Terms, top: int = 3) -> list[dict]:
    """The ``top`` events with the largest relative change from the sample, largest first."""
    out = []
    for label, get in EVENTS:
        a, b = float(get(sample)), float(get(target))
        if a == b:
            continue
        rel = (b - a) / abs(a) if a else float("inf")
        out.append({"event": label, "sample": a, "target": b, "change": rel})
    out.sort(key=lambda e: (-abs(e["change"]) if e["change"] != float("inf") else float("-inf"), e["event"]))
    return out[:top]


def describe(events: list[dict]) -> str:
    parts = []
    for e in events:
        if e["change"] == float("inf"):
            parts.append(f"{e['event']} {e['sample']:,.0f} -> {e['target']:,.0f}")
        else:
            parts.append(f"{e['event']} {e['change']:+.0%}")
    return "; ".join(parts) or "no event changed"
