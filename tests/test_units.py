"""One number format (placement.units) and the model-error note (placement.uncertainty), by hand and as properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placement import units
from placement.uncertainty import MODEL_RATIO_ERROR, apart, notes, tied_with_best


@pytest.mark.parametrize("x, text", [(1.0006, "1.00"), (2.923, "2.92"), (0.99812, "0.998"), (15.13, "15.1"),
                                     (152.3, "152"), (1523.4, "1,520"), (0.9997, "1.00"), (9.996, "10.0")])  # fmt: skip
def test_speedup_has_three_significant_figures(x, text):
    assert units.speedup(x) == text


@pytest.mark.parametrize("ns, text", [(15114, "15.1 µs"), (15123, "15.1 µs"), (820.4, "820 ns"), (999.4, "999 ns"),
                                      (999.7, "1.00 µs"), (1968, "1.97 µs"), (3.21e6, "3.21 ms"), (5.1e9, "5.10 s")])  # fmt: skip
def test_time_in_the_unit_that_fits(ns, text):
    assert units.time_ns(ns) == text


def test_bytes_counts_shares():
    assert [units.nbytes(n) for n in (100, 1536, 4096, 3 << 19)] == ["100 B", "1.50 KiB", "4 KiB", "1.50 MiB"]
    assert [units.count(8192), units.change(-8192), units.change(512)] == ["8,192", "-8,192", "+512"]
    assert [units.share(0.9375), units.share(0.0006), units.share(0.051)] == ["94 %", "0.06 %", "5.1 %"]


@given(st.floats(min_value=1e-3, max_value=1e5, allow_nan=False))
def test_three_significant_figures_round_trip(x):
    text = units.speedup(x)
    digits = text.replace(",", "").replace(".", "").lstrip("0")
    assert len(digits.rstrip("0")) <= 3
    assert float(text.replace(",", "")) == pytest.approx(x, rel=5e-3)


@given(st.floats(min_value=1.0, max_value=1e12, allow_nan=False))
def test_time_unit_keeps_the_value(ns):
    value, unit = units.time_ns(ns).split()
    scale = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}[unit]
    assert float(value.replace(",", "")) * scale == pytest.approx(ns, rel=5e-3)
    assert 1.0 <= float(value.replace(",", "")) < 1000.0 or unit in ("ns", "s")


def test_model_error_decides_what_is_a_tie():
    assert MODEL_RATIO_ERROR == 0.172
    assert not apart(15114, 15123)  # the vecadd example's 0.06 %
    assert apart(100.0, 117.3) and not apart(100.0, 117.1)
    assert tied_with_best([1.0, 1.05, 1.1, 1.2]) == 3


def test_notes_say_when_nothing_beats_the_sample():
    (line,) = notes(15123.0, [15114.0, 15123.0], ["a=T", "sample"])
    assert "0.06 % faster than the sample, within 17 %" in line and "keep it" in line


def test_notes_name_the_tied_placements():
    (line,) = notes(5750.0, [1970.0, 2000.0, 2100.0, 2350.0], ["x", "y", "z", "w"])
    # 2100 / 1970 = 1.066 is a tie, 2350 / 1970 = 1.19 is not
    assert line.startswith("#1 to #3 are within 17 % of #1") and "2.74x to 2.92x" in line
    assert math.isclose(5750 / 2100, 2.738, rel_tol=1e-3)
    (line,) = notes(5750.0, [1970.0, 3000.0], ["x", "y"])
    assert line.startswith("#1 is ahead of #2 and the sample by more than 17 %")


def test_a_share_under_100_percent_never_prints_100():
    """conv1d on the K80, mask in C: 3,571 constant-cache hits of 3,584 printed "100 % hits" beside 13 misses."""
    assert units.share(3571 / 3584) == "99.6 %"
    assert [units.share(x) for x in (0.9996, 0.99998, 0.995, 0.9949, 1.0)] == [
        "99.96 %", "99.998 %", "99.5 %", "99 %", "100 %",
    ]  # fmt: skip
