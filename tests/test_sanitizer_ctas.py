"""traces.sanitizer.ctas: --ctas, --kernel and --launch of `placement trace` (no GPU needed)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from traces.errors import InputError
from traces.sanitizer.ctas import kernel_matches, parse_ctas, select_launch


def test_ranges_and_lists():
    assert parse_ctas("0-63").resolve(100).tolist() == list(range(64))
    spec = parse_ctas("0,5,9-12")
    assert spec.ranges == ((0, 0), (5, 5), (9, 12)) and spec.env() == "0-0,5-5,9-12"
    assert spec.resolve(13).tolist() == [0, 5, 9, 10, 11, 12]
    assert parse_ctas("3-5,4-8,9").ranges == ((3, 9),)  # overlapping and adjacent ranges merge


def test_waves_resolved_against_grid_and_occupancy():
    spec = parse_ctas("waves=2")
    assert spec.waves == 2 and spec.env() == "w:2"
    # 132 SMs x 2 resident blocks per SM = 264 blocks a wave; 2 waves of a 1000-block grid
    assert spec.resolve(1000, ctas_per_wave=264).tolist() == list(range(528))
    assert spec.resolve(300, ctas_per_wave=264).tolist() == list(range(300))  # the grid is smaller
    with pytest.raises(InputError, match="blocks per wave"):
        spec.resolve(1000)


@pytest.mark.parametrize("bad", ["", "a", "5-3", "1-2-3", "waves=0", "waves=x", "-1", "0,,2", "1.5"])
def test_bad_specs(bad):
    with pytest.raises(InputError, match="--ctas"):
        parse_ctas(bad)


def test_beyond_grid():
    with pytest.raises(InputError, match=r"block 64 is beyond the launch's 64 blocks \(0-63\)"):
        parse_ctas("0-64").resolve(64)


@given(st.text(max_size=30))
def test_any_text_parses_or_input_error(text):
    try:
        spec = parse_ctas(text)
    except InputError as exc:
        assert "\n" not in str(exc)
        return
    assert spec.waves is not None or all(a <= b for a, b in spec.ranges)


MANGLED = "_Z6conv1dPKfS0_Pfii"
DEMANGLED = "conv1d(float const*, float const*, float*, int, int)"


def test_kernel_matches():
    assert kernel_matches(None, MANGLED, DEMANGLED)
    for name in (MANGLED, DEMANGLED, "conv1d", "conv.*", "^conv1d\\("):
        assert kernel_matches(name, MANGLED, DEMANGLED), name
    assert kernel_matches("step", "_ZN2ns4stepEv", "ns::step()")  # the name without its namespace
    assert not kernel_matches("conv2d", MANGLED, DEMANGLED)
    assert not kernel_matches("[", MANGLED, DEMANGLED)  # a bad regex matches nothing


def test_select_launch():
    launches = [
        ("_Z4initPf", "init(float*)"),
        (MANGLED, DEMANGLED),
        ("_Z4initPf", "init(float*)"),
        (MANGLED, DEMANGLED),
    ]
    assert select_launch(launches, "conv1d", None) == 1
    assert select_launch(launches, "conv1d", 1) == 3
    assert select_launch(launches, "init", 1) == 2
    assert select_launch(launches[1:2], None, None) == 0
    with pytest.raises(InputError, match="launches 2 kernels; pick one with --kernel"):
        select_launch(launches, None, None)
    with pytest.raises(InputError, match=r"--launch 2: the chosen kernel was launched 2 times \(0-1\)"):
        select_launch(launches, "conv1d", 2)
    with pytest.raises(InputError, match="no kernel matches --kernel 'matmul'"):
        select_launch(launches, "matmul", None)
