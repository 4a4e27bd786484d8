"""Score a batch of measured placements: the figures issue 15 asks for, per suite.

Usage::

    python benchmarks/placement_accuracy.py RESULTS.parquet [RESULTS2.parquet ...] [--json]

For every (entry, GPU) of a ``placement batch`` results file with measured times:

- the measured effect of each placement: measured / measured(sample) - 1, and the
  predicted one: T(placement) / T(sample) - 1 (the model's ratio);
- **sign**: over the effects larger than 10 % in size, the share whose predicted
  effect has the same sign;
- **ratio error**: |predicted ratio / measured ratio - 1|, median (and mean) over the
  non-sample placements;
- **top-1**: the share of entries whose predicted best placement is the measured best;
  and, beside it, the share whose predicted best runs within ``NEAR`` (2 %) of the measured
  best (variants that close are ties within run-to-run noise: S/G and S/R of the
  convolution often differ by 1 %);
- **Kendall tau** between predicted and measured order, per entry (the batch's own
  column), median over entries.

Prints one table per file (and the misses), or one JSON document with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import pyarrow.parquet as pq

SIGNIFICANT = 0.10
NEAR = 0.02


def score(path: str) -> dict:
    rows = [r for r in pq.read_table(path).to_pylist() if r.get("measured_ns") is not None]
    by_entry: dict[tuple, list[dict]] = {}
    for r in rows:
        by_entry.setdefault((r["entry"], r["gpu"]), []).append(r)
    sign_ok = sign_n = top1 = near = 0
    errors, taus, misses, lines = [], [], [], []
    for (entry, gpu), rs in by_entry.items():
        sample = next((r for r in rs if r["placement"] == "sample"), None)
        if sample is None:
            continue
        m0, p0 = sample["measured_ns"], sample["model_ns"]
        for r in rs:
            if r is sample:
                continue
            meas, pred = r["measured_ns"] / m0, r["model_ns"] / p0
            err = abs(pred / meas - 1.0)
            errors.append(err)
            lines.append((entry, gpu, r["placement"], meas, pred, err))
            if abs(meas - 1.0) > SIGNIFICANT:
                sign_n += 1
                if (pred - 1.0) * (meas - 1.0) > 0:
                    sign_ok += 1
                else:
                    misses.append(f"{entry} {r['placement']}: measured {meas:.3f}, predicted {pred:.3f}")
        best_m = min(rs, key=lambda r: r["measured_ns"])
        best_p = min(rs, key=lambda r: r["model_ns"])
        top1 += best_m["placement"] == best_p["placement"]
        near += best_p["measured_ns"] <= best_m["measured_ns"] * (1.0 + NEAR)
        tau = rs[0].get("kendall_tau")
        if tau is not None and len(rs) > 2:
            taus.append(tau)
    n = len(by_entry)
    return {
        "file": path,
        "entries": n,
        "placements": len(errors),
        "significant_effects": sign_n,
        "sign_right": sign_ok,
        "sign_share": sign_ok / sign_n if sign_n else None,
        "median_ratio_error": statistics.median(errors) if errors else None,
        "mean_ratio_error": statistics.fmean(errors) if errors else None,
        "top1_share": top1 / n if n else None,
        "near_top1_share": near / n if n else None,
        "median_kendall_tau": statistics.median(taus) if taus else None,
        "misses": misses,
        "rows": [{"entry": e, "gpu": g, "placement": p, "measured_ratio": m, "predicted_ratio": q, "error": x}
                 for e, g, p, m, q, x in lines],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    scores = [score(p) for p in args.results]
    if args.json:
        print(json.dumps(scores, indent=1))
        return 0
    for s in scores:
        print(f"{s['file']}: {s['entries']} entries, {s['placements']} placements against their sample")
        for r in s["rows"]:
            print(f"  {r['entry']:28s} {r['gpu']:7s} {r['placement']:12s} measured {r['measured_ratio']:6.3f}  "
                  f"predicted {r['predicted_ratio']:6.3f}  error {100 * r['error']:5.1f} %")
        fmt = lambda x, pct=True: "n/a" if x is None else (f"{100 * x:.1f} %" if pct else f"{x:.2f}")  # noqa: E731
        print(f"  sign of effects > 10 %: {s['sign_right']}/{s['significant_effects']} ({fmt(s['sign_share'])})")
        print(f"  ratio error: median {fmt(s['median_ratio_error'])}, mean {fmt(s['mean_ratio_error'])}")
        print(f"  predicted best = measured best: {fmt(s['top1_share'])} of entries; "
              f"within {NEAR:.0%} of the measured best: {fmt(s['near_top1_share'])}")
        print(f"  Kendall tau per entry, median: {fmt(s['median_kendall_tau'], False)}")
        for m in s["misses"]:
            print(f"  wrong sign: {m}")
    return 0


if __name__ == "__main__":
    import os

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _measure import timed_main

    sys.exit(timed_main(main))  # prints wall, CPU and peak RSS of the run to stderr
