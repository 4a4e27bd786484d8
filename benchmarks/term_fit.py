"""Which one of the model's terms follows a suite's measured times: a diagnostic, not a fit the model takes.

Usage::

    python benchmarks/term_fit.py RESULTS.parquet [--placement sample] [--json]

For each GPU of a ``placement batch`` results file and one placement (the sample by default), the measured time
of each entry is put in the model's units (cycles of one SM over the trace's blocks: the measured nanoseconds
at the model's clock, less the launch's cycles, over ``blocks_scale``, as ``placement.hms.t_launch`` and the
trace's scaling add them), and each term (T itself, T_comp, T_mem, T_LSU, W_parallel, T_round, T_block) is held
against it: the one factor k that fits k x term to the measured times best (least squares through the origin)
and the median and largest |k x term / measured - 1| with it. A term whose error stays small under one k is
what the measured times follow across the suite's shapes; k says by how much the model's rate for it is off.
The entries' off-chip share (the L1's global and read-only requests that go on to the L2) is printed beside, with its
correlation to the model's own error (T / measured). Entries a suite marks "(ratios only)" (measured at
another size than traced: ``placement_accuracy.py``) are left out.

This is how the forty-sixth session read the Kernel Tuner convolution's plain builds: on the H200 T_LSU alone
follows the 29 shapes within 1.3 % (median) at k = 1.16 (1.44 cycles a load, where ``placement calibrate`` timed
L1-hit loads there at 1.15; ``l1_wavefronts.py``'s 1.39-1.48 of the same day, once taken for the match, were the
loop's own issue: benchmarks/README.md), where T is left 7.2 % off at its best k and its error grows with the L2
share (r = 0.83: T_mem's off-chip class adds what the measured times do not); the A100 the same at k = 2.03 (4.1 %).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _measure import measure  # noqa: E402
from placement_accuracy import ratios_only_entries  # noqa: E402

TERMS = ("T", "t_comp", "t_mem", "t_lsu", "w_parallel", "t_round", "t_block")


def measured_cycles(df):
    """The measured times in the model's units: (measured ns x clock - launch cycles) / blocks_scale, the clock
    the model's own (its cycles over its nanoseconds)."""
    clock_ghz = df["cycles"] / df["model_ns"]
    return (df["measured_ns"] * clock_ghz - df["t_launch"]) / df["blocks_scale"]


def model_t(df):
    """Eq. 1's T of each row, at least T_round and T_block (``placement.hms.t_kernel``)."""
    return np.maximum.reduce([df["t_comp"] + df["t_mem"] - df["t_overlap"], df["t_round"], df["t_block"]])


def off_chip_share(df):
    """The share of the L1's global and read-only requests that go on to the L2, None where a row has none."""
    l1 = sum(df[f"caches.l1.{s}.requests"].fillna(0) for s in ("global", "readonly") if f"caches.l1.{s}.requests" in df)
    l2 = sum(df[f"caches.l2.{s}.requests"].fillna(0) for s in ("global", "readonly") if f"caches.l2.{s}.requests" in df)
    if isinstance(l1, int) or not (l1 > 0).all():
        return None
    return l2 / l1


def fit(term, measured) -> dict:
    """k = argmin sum (k x term - measured)^2, and the relative errors of k x term."""
    x, y = np.asarray(term, float), np.asarray(measured, float)
    ok = (x > 0) & (y > 0)
    if not ok.any():
        return {"k": None, "median_error": None, "max_error": None, "n": 0}
    x, y = x[ok], y[ok]
    k = float(x @ y / (x @ x))
    err = np.abs(k * x / y - 1.0)
    return {"k": k, "median_error": float(np.median(err)), "max_error": float(err.max()), "n": int(ok.sum())}


def term_fits(df, placement: str = "sample", leave_out=frozenset()) -> dict:
    """Per GPU: each term's fit, and the off-chip share's correlation with the model's own error; the entries in
    ``leave_out`` left out."""
    out = {}
    rows = df[(df["placement"] == placement) & df["measured_ns"].notna() & ~df["entry"].isin(list(leave_out))]
    for gpu, g in rows.groupby("gpu", sort=True):
        meas, t_model = measured_cycles(g), model_t(g)
        terms = {t: (t_model if t == "T" else g[t]) for t in TERMS if t == "T" or t in g}
        res = {t: fit(v, meas) for t, v in terms.items()}
        off = off_chip_share(g)
        err = t_model / meas
        if off is not None and len(g) > 2 and np.std(off) > 0 and np.std(err) > 0:
            res["off_chip_share_vs_error_corr"] = float(np.corrcoef(off, err)[0, 1])
        out[gpu] = res
    return out


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--placement", default="sample")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    with measure("term_fit") as m:
        try:
            ratios_only, why = ratios_only_entries(a.results)
            out = term_fits(pd.read_parquet(a.results), a.placement, ratios_only or frozenset())
        except (OSError, ValueError, KeyError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            print(f"{a.results}: not a placement batch results file ({str(exc).splitlines()[0]})", file=sys.stderr)
            return 2
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    if ratios_only is None:
        print(f"every entry kept: {why}")
    for gpu, res in out.items():
        print(f"{gpu} ({a.placement}):")
        for t in TERMS:
            r = res.get(t)
            if r and r["k"] is not None:
                print(f"  {t:<11} k {r['k']:7.3f}  median error {100 * r['median_error']:5.1f} %  "
                      f"largest {100 * r['max_error']:5.1f} %  over {r['n']}")  # fmt: skip
        if "off_chip_share_vs_error_corr" in res:
            print(f"  off-chip share against T / measured: correlation {res['off_chip_share_vs_error_corr']:.2f}")
    print(m.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
