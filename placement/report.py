"""A self-contained HTML report of a ranking: matplotlib charts inlined as SVG, no scripts, no links out.

Three charts and the text a developer acts on:

1. the speedup of each ranked placement over the sample, the sample's own bar at 1 among
   them, bars drawn from the sample's 1.0 (not from 0, which hides a few percent) with
   the band of the model's median ratio error around the best and around the sample;
2. T_comp, T_mem and T_overlap per placement, three bars each, and T = T_comp + T_mem -
   T_overlap as a mark;
3. per object (and the staging copies), where its requests were served in the sample
   and in the best placement: first-level cache hits, L2 hits, DRAM, shared memory
   (``Terms.caches`` per space; shared-memory accesses from the trace);

then the ranking table, why each of the first placements differs (``placement.explain``),
what is excluded and why, and the CUDA changes of the best (``placement.hints``).
"""

from __future__ import annotations

import html
import io
import re

from . import units
from .explain import SPACE_WORDS, space_of
from .placements import STAGING_SOURCE, is_staged
from .results import Placed, RankResult
from .textout import BOUND_WORDS, excluded_lines, overlap_line, search_line
from .uncertainty import MODEL_RATIO_ERROR

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:80em}
table{border-collapse:collapse;margin:1em 0}th,td{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:right}
th{background:#f4f4f4}td{white-space:nowrap}td.l,th.l{text-align:left;white-space:normal}.small{color:#555;font-size:.9em}
pre{background:#f7f7f7;padding:.8em;overflow-x:auto;font-size:.85em}ul{margin:.3em 0}code{background:#f4f4f4;padding:0 .2em}
figure{margin:1em 0}figcaption{color:#555;font-size:.9em;max-width:60em}
"""
COLORS = {"t_comp": "#4c78a8", "t_mem": "#f58518", "t_overlap": "#54a24b", "time": "#222222"}
SERVED = (("first-level cache hits", "#4c78a8"), ("L2 hits", "#72b7b2"), ("DRAM", "#e45756"),
          ("shared memory", "#54a24b"))  # fmt: skip
DETAILS = 3
"""Placements whose reasons the report spells out."""
_CODE = re.compile(r"`([^`\n]+)`")


def _prose(text: str) -> str:
    """A sentence of the text output as HTML: escaped, with its `commands` in <code> (not literal backticks)."""
    return _CODE.sub(r"<code>\1</code>", html.escape(text))


def _svg(fig) -> str:
    """The figure as inline SVG: glyphs as paths (no fonts needed), no metadata, stable ids."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "placement-report", "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = re.sub(r"<\?xml[^>]*\?>\s*", "", text)
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text)
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    return text


def _figure(rows: int):
    from matplotlib.figure import Figure

    return Figure(figsize=(9.0, 0.9 + 0.38 * max(rows, 1)), dpi=96)


def _entries(r: RankResult) -> list[tuple[str, Placed, bool]]:
    """(label, placement, is the sample) top first, the sample among them."""
    out = [(f"{p.rank}. {p.label}", p, p.label == "sample") for p in r.ranking]
    if not any(s for _, _, s in out):
        out.append(("sample", r.sample, True))
    return out


def speedup_chart(r: RankResult) -> str:
    """Speedup over the sample, bars from 1.0, the model's error bands."""
    entries = _entries(r)
    fig = _figure(len(entries))
    ax = fig.subplots()
    ys = list(range(len(entries)))[::-1]
    values = [p.speedup for _, p, _ in entries]
    colors = ["#9e9e9e" if s else "#4c78a8" for _, _, s in entries]
    ax.barh(ys, [v - 1.0 for v in values], left=1.0, color=colors, height=0.7)
    e = MODEL_RATIO_ERROR
    best = max(values)
    ax.axvspan(1 / (1 + e), 1 + e, color="#9e9e9e", alpha=0.15, lw=0, label=f"within {units.share(e)} of the sample")
    if best > 1 + e:
        ax.axvspan(
            best / (1 + e), best, color="#4c78a8", alpha=0.12, lw=0, label=f"within {units.share(e)} of the best"
        )
    ax.axvline(1.0, color="#444", lw=1)
    ax.scatter([1.0 for _, _, s in entries if s], [y for y, (_, _, s) in zip(ys, entries) if s], marker="D",
               color="#616161", zorder=3, label="the sample")  # fmt: skip
    lo, hi = min(values + [1.0]), max(values + [1.0])
    pad = (hi - lo) * 0.12 or 0.05
    ax.set_xlim(min(lo - pad, 1 / (1 + e) - 0.01), hi + pad * 2)
    for y, v in zip(ys, values):
        ax.text(v + (pad * 0.1 if v >= 1 else -pad * 0.1), y, f"{units.speedup(v)}x", va="center",
                ha="left" if v >= 1 else "right", fontsize=9)  # fmt: skip
    ax.set_yticks(ys, [lab for lab, _, _ in entries], fontsize=9)
    ax.set_xlabel("speedup over the sample (predicted; bars start at the sample's 1.0)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)


def terms_chart(r: RankResult) -> str:
    """T_comp, T_mem and T_overlap per placement, in time, with T marked."""
    entries = _entries(r)
    fig = _figure(len(entries) * 1.6)
    ax = fig.subplots()
    k = r.sample.evaluation.sample.term_ns_per_cycle
    scale, unit = _unit(max(max(p.evaluation.target.t_comp, p.evaluation.target.t_mem) * k for _, p, _ in entries))
    ys = [3.2 * i for i in range(len(entries))][::-1]
    h = 0.9
    for j, (key, name) in enumerate((("t_comp", "T_comp"), ("t_mem", "T_mem"), ("t_overlap", "T_overlap (hidden)"))):
        vals = [getattr(p.evaluation.target, key) * k / scale for _, p, _ in entries]
        ax.barh([y + (1 - j) * h for y in ys], vals, height=h, color=COLORS[key], label=name)
    totals = [p.time_ns / scale for _, p, _ in entries]
    launch = " + launch" if r.sample.evaluation.sample.t_launch else ""
    floors = any(p.evaluation.target.bound != "eq1" for _, p, _ in entries)
    term = "the bound term (table)" if floors else "T_comp + T_mem - T_overlap"  # a floor is T where it binds
    ax.scatter(totals, ys, marker="|", s=260, color=COLORS["time"], zorder=3, label=f"T = {term}{launch}")
    ax.set_yticks(ys, [lab for lab, _, _ in entries], fontsize=9)
    ax.set_xlabel(f"{unit} (one SM's cycles at the GPU's clock)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)


def _unit(ns: float) -> tuple[float, str]:
    for scale, unit in ((1e6, "ms"), (1e3, "µs")):
        if ns >= scale:
            return scale, unit
    return 1.0, "ns"


def served(p: Placed, accesses: dict[str, int]) -> list[tuple[str, list[int]]]:
    """Per group of objects sharing a space in ``p``: (label, [first-level hits, L2 hits, DRAM, shared])."""
    t = p.evaluation.target
    groups: dict[str, list[str]] = {}
    for name, s in t.placement.items():
        groups.setdefault(space_of(s), []).append(name)
    out = []
    for space, names in groups.items():
        if space == "shared":
            n = sum(accesses.get(x, 0) for x in names)
            if n:
                out.append((f"{', '.join(names)} ({SPACE_WORDS[space]})", [0, 0, 0, n]))
            continue
        out.append((f"{', '.join(names)} ({SPACE_WORDS[space]})", _levels(t.caches, space)))
    copies = {STAGING_SOURCE[s] for s in t.placement.values() if is_staged(s)} - set(groups)
    for source in sorted(copies):
        names = [n for n, s in t.placement.items() if is_staged(s) and STAGING_SOURCE[s] == source]
        out.append((f"{', '.join(names)} staging copies ({SPACE_WORDS[source]})", _levels(t.caches, source)))
    return [(lab, v) for lab, v in out if sum(v)]


def _levels(caches, space: str) -> list[int]:
    first = l2 = dram = 0
    for key, c in caches.items():
        level, _, sp = key.partition(".")
        if sp != space:
            continue
        if level == "l2":
            l2 += c.get("hits", 0)
        else:
            first += c.get("hits", 0)
        dram = c.get("misses", 0)  # the last level of the chain (l2 after the first level) sends its misses on
    return [first, l2, dram, 0]


def served_chart(r: RankResult, accesses: dict[str, int]) -> str:
    """Where each object's requests were served, in the sample and in the best placement."""
    rows = [(f"sample: {lab}", v) for lab, v in served(r.sample, accesses)]
    if r.best.label != "sample":
        rows += [(f"#1: {lab}", v) for lab, v in served(r.best, accesses)]
    fig = _figure(len(rows))
    ax = fig.subplots()
    ys = list(range(len(rows)))[::-1]
    left = [0] * len(rows)
    for j, (name, color) in enumerate(SERVED):
        vals = [v[j] for _, v in rows]
        ax.barh(ys, vals, left=left, color=color, height=0.7, label=name)
        left = [a + b for a, b in zip(left, vals)]
    for y, total in zip(ys, left):
        ax.text(total, y, f" {units.count(total)}", va="center", fontsize=8)
    ax.set_yticks(ys, [lab for lab, _ in rows], fontsize=9)
    ax.set_xlabel("requests (cache lookups; shared memory: warp accesses)")
    ax.set_xlim(0, max(left + [1]) * 1.15)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)


def _table(r: RankResult) -> str:
    head = "".join(f"<th{' class=l' if h in ('placement', 'why (first fact per object)') else ''}>{h}</th>"
                   for h in ("#", "placement", "time", "speedup", "bound by", "T_comp", "T_mem", "T_overlap",
                             "launch", "why (first fact per object)"))  # fmt: skip
    c = r.gpu_config.compute if r.gpu_config is not None else None
    known = c is None or bool(c.launch_us or c.launch_per_block_ns)  # else not in the configuration: not 0 ns
    rows = []
    for lab, p, is_sample in _entries(r):
        t = p.evaluation.target
        k = t.term_ns_per_cycle
        launch = units.time_ns(t.t_launch * t.ns_per_cycle) if known else "unknown"
        rows.append(
            f"<tr><td>{p.rank or '-'}</td><td class=l>{html.escape(p.label)}</td><td>{units.time_ns(t.time_ns)}</td>"
            f"<td>{units.speedup(p.speedup)}</td><td>{BOUND_WORDS[t.bound]}</td><td>{units.time_ns(t.t_comp * k)}</td>"
            f"<td>{units.time_ns(t.t_mem * k)}</td><td>{units.time_ns(t.t_overlap * k)}</td>"
            f"<td>{launch}</td><td class=l>{_prose(p.explanation.short())}</td></tr>"
        )
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _details(r: RankResult) -> str:
    out = []
    for p in r.ranking[:DETAILS]:
        if p.label == "sample":
            continue
        items = "".join(f"<li>{_prose(x)}</li>" for x in p.explanation.lines())
        out.append(f"<h3>#{p.rank}: {html.escape(p.label)} ({units.speedup(p.speedup)}x)</h3><ul>{items}</ul>")
    return "".join(out)


def _hints(r: RankResult) -> str:
    if not r.hints:
        return ""
    blocks = "".join(f"<pre>{html.escape(h.text())}</pre>" for h in r.hints)
    return f"<h2>The code change for #1 ({html.escape(r.best.label)})</h2>{blocks}"


def render(r: RankResult) -> str:
    """The report of ``r`` as one HTML document."""
    s = r.sample
    title = f"{html.escape(r.kernel)} on {html.escape(r.gpu)}"
    ex = "".join(f"<li>{_prose(x.strip())}</li>" for x in excluded_lines(r.excluded))
    notes = "".join(f"<p>{_prose(x)}</p>" for x in r.uncertainty())
    trace = f"trace {html.escape(r.trace)}; " if r.trace else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Placement ranking: {title}</title>
<style>{_STYLE}</style></head><body>
<h1>{title}</h1>
<p class=small>{trace}sample placement {html.escape(", ".join(f"{k}={v}" for k, v in s.placement.items()))},
predicted {units.time_ns(s.time_ns)}. {_prose(search_line(r))}</p>
{f"<p class=small>Not allowed:</p><ul class=small>{ex}</ul>" if ex else ""}
{notes}
<p class=small>{_prose(overlap_line(r.overlap_trained, r.overlap_source, r.gpu))}</p>
<h2>Speedup over the sample</h2>
<figure>{speedup_chart(r)}<figcaption>Predicted speedup of each ranked placement over the sample (the diamond at 1.0).
Shaded: within the model's median error of predicted ratios ({units.share(MODEL_RATIO_ERROR)}) of the sample and of the
best: placements inside one band are not told apart.</figcaption></figure>
<h2>T_comp, T_mem and T_overlap</h2>
<figure>{terms_chart(r)}<figcaption>Huang &amp; Li's T = T_comp + T_mem - T_overlap (one SM's cycles, in time):
T_overlap is the part of T_comp and T_mem that runs at the same time, so it is taken off.</figcaption></figure>
<h2>Where each object's requests went</h2>
<figure>{served_chart(r, r.accesses)}<figcaption>Per object (objects sharing a space are counted together, as the
caches see them), in the sample and in the best placement.</figcaption></figure>
<h2>Ranking</h2>
{_table(r)}
<h2>Why</h2>
{_details(r)}
{_hints(r)}
</body></html>
"""


__all__ = ["render", "served", "served_chart", "speedup_chart", "terms_chart"]
