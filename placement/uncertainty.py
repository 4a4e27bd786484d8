"""How sure a predicted difference is: two placements within the model's known error are a tie.

The model predicts ratios (a placement's time over the sample's) better than absolute
times, and its error on those ratios is what decides whether one placement is
really ahead of another. ``MODEL_RATIO_ERROR`` is that error's median.
"""

from __future__ import annotations

from . import units

MODEL_RATIO_ERROR = 0.172
"""The tie band: median |predicted ratio / measured ratio - 1| over the 105 measured placements of the A100
convolution and gpuperfpredict matmul suites (README, "Placement accuracy": ``benchmarks/placement_accuracy.py``
on the ``placement batch`` results of ``configs/suites/kerneltuner_conv_a100.toml`` and
``configs/suites/gpuperfpredict_matmul.toml``) on 26 Nov 2026 (fourteenth session), and kept since. Issue 33's
mechanisms were built against those suites, and on them the median has come down (12.1 % on 30 Nov 2026; 14.4 %
on 1 Dec, once the staged copy's instructions were counted as nvcc issues them; 16.2 % once Kepler's L2 took
Accel-Sim's write policy and set index), which says less about kernels
and GPUs the model has not seen; the one suite measured after the model was built (the H200 convolution) came in
at 7.5 %. The band stays at the older, wider figure until more held-out measurements
say otherwise. The H100 suite (median 3.3 %) is left out: most of its effects are a few percent. Two predicted
times closer than this are not told apart."""


def apart(a_ns: float, b_ns: float, error: float = MODEL_RATIO_ERROR) -> bool:
    """Whether two predicted times differ by more than the model's median ratio error."""
    lo, hi = sorted((a_ns, b_ns))
    return lo > 0 and hi / lo - 1.0 > error


def tied_with_best(times_ns: list[float], error: float = MODEL_RATIO_ERROR) -> int:
    """How many of ``times_ns`` (ascending) are within ``error`` of the first (the first included)."""
    if not times_ns:
        return 0
    return sum(1 for t in times_ns if not apart(times_ns[0], t, error))


def notes(sample_ns: float, times_ns: list[float], labels: list[str], error: float = MODEL_RATIO_ERROR) -> list[str]:
    """Sentences on what the ranking can and cannot tell apart (``times_ns`` ascending, ``labels`` alike)."""
    if not times_ns:
        return []
    err = units.share(error)
    source = 'the model\'s median error of predicted ratios (README "Placement accuracy")'
    out = []
    best = times_ns[0]
    gain = sample_ns / best if best > 0 else float("inf")
    if not apart(best, sample_ns, error):
        if labels[0] == "sample":
            out.append("The sample placement is already the best: no placement is predicted to be faster; keep it "
                       "unless a measurement says otherwise.")  # fmt: skip
            return out
        faster = sample_ns / best - 1.0 if best > 0 else 0.0
        word = (f"{units.share(abs(faster))} {'faster' if faster >= 0 else 'slower'} than" if faster
                else "as fast as")  # fmt: skip
        out.append(
            f"The best placement ({labels[0]}) is {word} the sample, within {err}, {source}: no placement is "
            "predicted to be clearly better than the sample; keep it unless a measurement says otherwise."
        )
        return out
    k = tied_with_best(times_ns, error)
    if k > 1:
        lo, hi = units.speedup(sample_ns / times_ns[k - 1]), units.speedup(gain)
        span = f"{hi}x" if lo == hi else f"{lo}x to {hi}x"
        out.append(
            f"#1 to #{k} are within {err} of #1, {source}: the model does not tell them apart; "
            f"all are {span} faster than the sample, so pick the simplest change among them, or measure them."
        )
    else:
        ahead = "#2 and the sample" if len(times_ns) > 1 else "the sample"
        out.append(f"#1 is ahead of {ahead} by more than {err}, {source}.")
    return out


__all__ = ["MODEL_RATIO_ERROR", "apart", "notes", "tied_with_best"]
