"""A self-contained HTML report of a ranking: inline SVG charts, no scripts, no links out."""

from __future__ import annotations

import html

from .explain import describe, moved_events
from .search import Ranking

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:72em}
table{border-collapse:collapse;margin:1em 0}th,td{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}.small{color:#666;font-size:.9em}
"""
COLORS = {"t_comp": "#4c78a8", "t_mem": "#f58518", "t_overlap": "#54a24b"}


def _bars(labels: list[str], values: list[float], unit: str, width: int = 760, bar: int = 18) -> str:
    """Horizontal bars, one per label."""
    if not values:
        return ""
    vmax = max(values) or 1.0
    left = 260
    h = bar * len(values) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" role="img">']
    for i, (lab, v) in enumerate(zip(labels, values)):
        y = 10 + i * bar
        w = (width - left - 90) * v / vmax
        out.append(f'<text x="{left - 6}" y="{y + bar * 0.7}" text-anchor="end" font-size="12">{html.escape(lab)}</text>')
        out.append(f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{bar - 4}" fill="#4c78a8"/>')
        out.append(f'<text x="{left + w + 4:.1f}" y="{y + bar * 0.7}" font-size="11">{v:,.0f} {unit}</text>')
    out.append("</svg>")
    return "".join(out)


def _terms(labels: list[str], rows: list[tuple[float, float, float]], width: int = 760, bar: int = 18) -> str:
    """T_comp and T_mem side by side as one bar, T_overlap drawn under them as the part hidden."""
    if not rows:
        return ""
    vmax = max(c + m for c, m, _ in rows) or 1.0
    left = 260
    scale = (width - left - 20) / vmax
    h = bar * len(rows) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" role="img">']
    for i, (lab, (c, m, o)) in enumerate(zip(labels, rows)):
        y = 10 + i * bar
        out.append(f'<text x="{left - 6}" y="{y + bar * 0.7}" text-anchor="end" font-size="12">{html.escape(lab)}</text>')
        out.append(f'<rect x="{left}" y="{y + 2}" width="{c * scale:.1f}" height="{bar - 4}" fill="{COLORS["t_comp"]}"/>')
        out.append(f'<rect x="{left + c * scale:.1f}" y="{y + 2}" width="{m * scale:.1f}" height="{bar - 4}" fill="{COLORS["t_mem"]}"/>')
        out.append(f'<rect x="{left + (c + m - o) * scale:.1f}" y="{y + bar - 5}" width="{o * scale:.1f}" height="3" fill="{COLORS["t_overlap"]}"/>')
    y = 16 + len(rows) * bar
    for k, (name, col) in enumerate(COLORS.items()):
        out.append(f'<rect x="{left + k * 120}" y="{y}" width="12" height="12" fill="{col}"/>')
        out.append(f'<text x="{left + k * 120 + 16}" y="{y + 10}" font-size="12">{name}</text>')
    out.append("</svg>")
    return "".join(out)


def render(r: Ranking, trace_path: str) -> str:
    s = r.sample
    sample_terms = s.sample
    labels, times, terms, rows = [], [], [], []
    for i, e in enumerate(r.ranking, start=1):
        t = e.target
        lab = ",".join(f"{k}={v}" for k, v in t.placement.items())
        labels.append(f"{i}. {lab}")
        times.append(t.time_ns)
        terms.append((t.t_comp, t.t_mem, t.t_overlap))
        why = describe(moved_events(sample_terms, t))
        rows.append(
            f"<tr><td>{i}</td><td class=l>{html.escape(lab)}</td><td>{t.time_ns:,.0f}</td><td>{e.speedup:.3f}</td>"
            f"<td>{t.t_comp:,.0f}</td><td>{t.t_mem:,.0f}</td><td>{t.t_overlap:,.0f}</td><td class=l>{html.escape(why)}</td></tr>"
        )
    legal = f"{r.legal_placements:,} legal placements; " if r.legal_placements is not None else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Placement ranking: {html.escape(s.kernel)} on {html.escape(s.gpu)}</title>
<style>{_STYLE}</style></head><body>
<h1>{html.escape(s.kernel)} on {html.escape(s.gpu)}</h1>
<p class=small>trace {html.escape(trace_path)}; strategy {r.strategy}; {legal}{r.evaluations} exact evaluations.
Sample placement: {html.escape(", ".join(f"{k}={v}" for k, v in sample_terms.placement.items()))},
predicted {sample_terms.time_ns:,.0f} ns. T_overlap: {html.escape(sample_terms.overlap_source)}.</p>
<h2>Predicted time</h2>{_bars(labels, times, "ns")}
<h2>T_comp, T_mem and T_overlap (cycles)</h2>{_terms(labels, terms)}
<h2>Ranking</h2>
<table><tr><th>#</th><th class=l>placement</th><th>time (ns)</th><th>speedup</th><th>T_comp</th><th>T_mem</th><th>T_overlap</th><th class=l>what moved most</th></tr>
{"".join(rows)}</table>
<p class=small>Huang &amp; Li's model: T = T_comp + T_mem - T_overlap (cycles of one SM); speedup is the sample's predicted time over the placement's.</p>
</body></html>
"""
