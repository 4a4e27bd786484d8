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
  column), median over entries;
- **absolute time error** (issue 33): |model time / measured time - 1| of every measured
  placement (the sample too) that runs ``ABS_MIN_NS`` (20 us) or more, median, with the
  median of model / measured beside it; entries whose suite note carries ``RATIOS_ONLY``
  (a trace smaller than the measured run whose blocks are not the run's: ``make_placement_suites.py``;
  one of the same blocks, fewer, says the run's in ``launch_ctas`` and is scaled to it) are left out of it,
  which needs the suite file the results name (found and unchanged); without it there is
  no absolute figure, and the output says why.

Beside each figure, issue 33's goal (``GOALS``); per kernel the same figures, one line each; and per kernel
and kind of placement (the placement with its ``windows=N`` left out, so a staged matmul's tiles of every
size are one kind), the ratio figures and the median measured and predicted ratios: which kind of move the
model gets wrong, and in which direction.
Prints one table per file (and the misses), or one JSON document with ``--json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
import tomllib
from pathlib import Path

import pyarrow.parquet as pq

SIGNIFICANT = 0.10
NEAR = 0.02
ABS_MIN_NS = 20_000.0
RATIOS_ONLY = "(ratios only)"
"""The mark make_placement_suites.py puts in the note of an entry traced smaller than its measured run."""
GOALS = {
    "sign_share": (">=", 0.95),
    "median_ratio_error": ("<=", 0.10),
    "near_top1_share": (">=", 0.80),
    "median_kendall_tau": (">=", 0.70),
    "median_abs_error": ("<=", 0.25),
}
"""Issue 33's "done when" figures."""


def experiment(path: str) -> dict | None:
    """The experiment a results file records in its Parquet metadata (``placement.batch.read_experiment``'s, read
    here without importing the package), None when it has none a run wrote (not UTF-8, not a JSON object)."""
    raw = (pq.read_schema(path).metadata or {}).get(b"placement.batch")
    try:
        found = json.loads(raw) if raw else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def ratios_only_entries(path: str, exp: dict | None = None) -> tuple[set[str] | None, str]:
    """The ids of the results' suite entries marked RATIOS_ONLY, or None and why the suite cannot tell; ``exp``:
    the file's :func:`experiment`, where the caller has read it."""
    exp = experiment(path) if exp is None else exp
    if exp is None:
        return None, "the results name no suite"
    suite = exp.get("suite", {})
    sp = Path(suite.get("resolved") or suite.get("path") or "")
    if not sp.is_file():
        return None, f"its suite {str(sp)!r} is not there"
    data = sp.read_bytes()
    if hashlib.sha256(data).hexdigest() != suite.get("sha256"):
        return None, f"its suite {str(sp)!r} changed since the run (SHA-256)"
    entries = tomllib.loads(data.decode()).get("entry", [])
    return {e.get("id", "") for e in entries if RATIOS_ONLY in e.get("note", "")}, ""


def score(path: str) -> dict:
    rows = [r for r in pq.read_table(path).to_pylist() if r.get("measured_ns") is not None]
    exp = experiment(path)
    ratios_only, why = ratios_only_entries(path, exp)
    kernels: dict[str, list[dict]] = {}
    for r in rows:
        kernels.setdefault(r["kernel"], []).append(r)
    by_kernel = {k: score_rows(rs, ratios_only, why) for k, rs in kernels.items()}
    for v in by_kernel.values():
        del v["rows"], v["misses"]
    whole = score_rows(rows, ratios_only, why)
    override = (exp or {}).get("gpu_override") or None
    return {"file": path, **whole, "by_kernel": by_kernel, "by_kind": by_kind(whole["rows"]), "gpu_override": override}


def placement_kind(placement: str) -> str:
    """A placement without its window count ("M=S/G,N=S/G;windows=32;unrolled" -> "M=S/G,N=S/G;unrolled")."""
    return re.sub(r";windows=\d+(?=;|$)", "", placement)


def by_kind(scored: list[dict]) -> dict[tuple[str, str], dict]:
    """Per (kernel, :func:`placement_kind`) of ``score_rows``' rows: placements, significant effects and those
    of the right sign, the median and mean ratio error, and the median measured and predicted ratios."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in scored:
        groups.setdefault((r["kernel"], placement_kind(r["placement"])), []).append(r)
    out = {}
    for key, rs in groups.items():
        big = [r for r in rs if abs(r["measured_ratio"] - 1.0) > SIGNIFICANT]
        right = [r for r in big if (r["predicted_ratio"] - 1.0) * (r["measured_ratio"] - 1.0) > 0]
        errors = [r["error"] for r in rs]
        out[key] = {
            "placements": len(rs),
            "significant_effects": len(big),
            "sign_right": len(right),
            "median_ratio_error": statistics.median(errors),
            "mean_ratio_error": statistics.fmean(errors),
            "median_measured_ratio": statistics.median(r["measured_ratio"] for r in rs),
            "median_predicted_ratio": statistics.median(r["predicted_ratio"] for r in rs),
        }
    return out


def score_rows(rows: list[dict], ratios_only: set[str] | None = frozenset(), why: str = "") -> dict:
    """The figures of result rows with measured times (``ratios_only``: entry ids left out of the absolute
    error; None: no absolute error, for the reason ``why``)."""
    by_entry: dict[tuple, list[dict]] = {}
    for r in rows:
        by_entry.setdefault((r["entry"], r["gpu"]), []).append(r)
    sign_ok = sign_n = top1 = near = 0
    errors, taus, misses, lines, abs_errors, abs_ratios = [], [], [], [], [], []
    for (entry, gpu), rs in by_entry.items():
        if ratios_only is not None and entry not in ratios_only:
            for r in rs:
                if r["measured_ns"] >= ABS_MIN_NS:
                    abs_ratios.append(r["model_ns"] / r["measured_ns"])
                    abs_errors.append(abs(abs_ratios[-1] - 1.0))
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
            lines.append((entry, gpu, r["kernel"], r["placement"], meas, pred, err))
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
        "abs_placements": len(abs_errors),
        "median_abs_error": statistics.median(abs_errors) if abs_errors else None,
        "median_model_over_measured": statistics.median(abs_ratios) if abs_ratios else None,
        "abs_left_out": why if ratios_only is None else f"{len(ratios_only)} entries marked {RATIOS_ONLY}",
        "misses": misses,
        "rows": [
            {"entry": e, "gpu": g, "kernel": k, "placement": p, "measured_ratio": m, "predicted_ratio": q, "error": x}
            for e, g, k, p, m, q, x in lines
        ],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    for p in args.results:  # one line, not pyarrow's traceback, for a results file that is not there
        if not Path(p).is_file():
            print(
                f"placement_accuracy: {p}: no such file (placement batch SUITE.toml -o {p} writes it)", file=sys.stderr
            )
            return 2
    scores = [score(p) for p in args.results]
    if args.json:
        for s in scores:  # JSON keys are strings
            s["by_kind"] = [{"kernel": k, "kind": p, **v} for (k, p), v in s["by_kind"].items()]
        print(json.dumps(scores, indent=1))
        return 0
    for s in scores:
        print(f"{s['file']}: {s['entries']} entries, {s['placements']} placements against their sample")
        if s["gpu_override"]:
            print(
                f"  priced on {s['gpu_override']} with placement batch --gpu: the suite's measured times are left out"
            )
        for r in s["rows"]:
            print(
                f"  {r['entry']:28s} {r['gpu']:7s} {r['placement']:12s} measured {r['measured_ratio']:6.3f}  "
                f"predicted {r['predicted_ratio']:6.3f}  error {100 * r['error']:5.1f} %"
            )
        print(
            f"  sign of effects > 10 %: {s['sign_right']}/{s['significant_effects']} ({_fmt(s['sign_share'])})"
            f"{_goal(s, 'sign_share')}"
        )
        print(
            f"  ratio error: median {_fmt(s['median_ratio_error'])}{_goal(s, 'median_ratio_error')}, "
            f"mean {_fmt(s['mean_ratio_error'])}"
        )
        print(
            f"  predicted best = measured best: {_fmt(s['top1_share'])} of entries; "
            f"within {NEAR:.0%} of the measured best: {_fmt(s['near_top1_share'])}{_goal(s, 'near_top1_share')}"
        )
        print(
            f"  Kendall tau per entry, median: {_fmt(s['median_kendall_tau'], False)}{_goal(s, 'median_kendall_tau')}"
        )
        print(
            f"  absolute time error, placements of {ABS_MIN_NS / 1e3:g} us or more: median "
            f"{_fmt(s['median_abs_error'])}{_goal(s, 'median_abs_error')} over {s['abs_placements']}, model / "
            f"measured median {_fmt(s['median_model_over_measured'], False)} (left out: {s['abs_left_out']})"
        )
        for m in s["misses"]:
            print(f"  wrong sign: {m}")
        kernels = s["by_kernel"]
        if len(kernels) > 1:
            print(
                "  per kernel: entries, sign right / effects > 10 %, median ratio error, predicted best within "
                f"{NEAR:.0%}, median tau, median absolute error (n), model / measured"
            )
            for k, v in kernels.items():
                print(
                    f"    {k:24s} {v['entries']:3d}  {v['sign_right']:3d}/{v['significant_effects']:<3d}  "
                    f"{_fmt(v['median_ratio_error']):>7s}  {_fmt(v['near_top1_share']):>7s}  "
                    f"{_fmt(v['median_kendall_tau'], False):>5s}  {_fmt(v['median_abs_error']):>7s} "
                    f"({v['abs_placements']})  {_fmt(v['median_model_over_measured'], False)}"
                )
        print(
            "  per kind of placement: placements, sign right / effects > 10 %, median (mean) ratio error, "
            "median measured ratio, median predicted ratio"
        )
        for (k, p), v in s["by_kind"].items():
            print(
                f"    {k:24s} {p:32s} {v['placements']:3d}  {v['sign_right']:3d}/{v['significant_effects']:<3d}  "
                f"{_fmt(v['median_ratio_error']):>7s} ({_fmt(v['mean_ratio_error'])})  "
                f"{v['median_measured_ratio']:6.3f}  {v['median_predicted_ratio']:6.3f}"
            )
    return 0


def _fmt(x, pct: bool = True) -> str:
    return "n/a" if x is None else (f"{100 * x:.1f} %" if pct else f"{x:.2f}")


def _goal(s: dict, key: str) -> str:
    op, goal = GOALS[key]
    x = s[key]
    if x is None:
        return ""
    met = x >= goal if op == ">=" else x <= goal
    return f" [goal {op} {_fmt(goal, key != 'median_kendall_tau')}: {'met' if met else 'not met'}]"


if __name__ == "__main__":
    import os

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _measure import timed_main

    sys.exit(timed_main(main))  # prints wall, CPU and peak RSS of the run to stderr
