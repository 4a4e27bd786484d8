"""The machine-repairman model (placement.repairman): hand values, the M/M/1//N chain's closed form as an
independent reference, and the bounds X(n) must keep."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement import repairman


def test_mva_by_hand():
    """k = 3, c = 1. X(1) = 1 / 4, Q(1) = 1 / 4; R(2) = 1.25, X(2) = 2 / 4.25, Q(2) = 2.5 / 4.25;
    R(3) = 1 + 2.5 / 4.25 = 6.75 / 4.25, X(3) = 3 / (3 + 6.75 / 4.25) = 12.75 / 19.5."""
    assert repairman.mva(3, 3.0, 1.0) == pytest.approx([0.25, 2 / 4.25, 12.75 / 19.5])
    assert repairman.cycle(3, 3.0, 1.0) == pytest.approx(19.5 / 4.25)
    # no service: every customer on its own, n / k; no delay: the server always busy, 1 / c
    assert repairman.throughput(5, 10.0, 0.0) == pytest.approx(0.5)
    assert repairman.throughput(5, 0.0, 2.0) == pytest.approx(0.5)


def test_fractional_customers_interpolate():
    x = repairman.mva(3, 3.0, 1.0)
    assert repairman.throughput(2.25, 3.0, 1.0) == pytest.approx(x[1] + 0.25 * (x[2] - x[1]))
    assert repairman.throughput(1.0, 3.0, 1.0) == pytest.approx(0.25)


@pytest.mark.parametrize("n, think, service", [(0, 1.0, 1.0), (2, -1.0, 1.0), (2, 1.0, -1.0), (2, 0.0, 0.0)])
def test_impossible_models_are_refused(n, think, service):
    with pytest.raises(ValueError, match="repairman model"):
        repairman.mva(n, think, service)
    with pytest.raises(ValueError, match="repairman model"):
        repairman.throughput(0.5, 1.0, 1.0)


def _birth_death(n: int, think: float, service: float) -> float:
    """Throughput of the M/M/1//n chain from its stationary distribution (Kleinrock, Queueing Systems I, Sec.
    3.9): p_j proportional to n! / (n - j)! (service / think)^j with j customers at the server, X = (1 - p_0) /
    service. A reference independent of the recursion."""
    rho = service / think
    w = [math.factorial(n) / math.factorial(n - j) * rho**j for j in range(n + 1)]
    return (1.0 - w[0] / sum(w)) / service


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 40),
    think=st.floats(1.0, 1e5, allow_nan=False),
    service=st.floats(1.0, 1e4, allow_nan=False),
)
def test_mva_is_the_chain_and_under_its_bounds(n, think, service):
    """Product form: MVA gives the chain's throughput exactly; X(n) rises with n and stays under 1 / c and
    n / (k + c); the cycle is at least the hard max it replaces in T_block."""
    x = repairman.mva(n, think, service)
    assert x[-1] == pytest.approx(_birth_death(n, think, service), rel=1e-9)
    assert all(b >= a * (1 - 1e-12) for a, b in zip(x, x[1:]))
    for i, xi in enumerate(x, start=1):
        assert xi <= min(1.0 / service, i / (think + service)) * (1 + 1e-12)
    assert repairman.cycle(n, think, service) >= max(n * service, think + service) * (1 - 1e-12)


def test_furthest_under_the_bounds_where_they_meet():
    """k = 15 c: the asymptotes meet at n = 16, where the SM is busy 1 - p_0 = 85.5 % of the time; far from it
    (n = 2, n = 64) the bounds are nearly exact."""
    gap = {n: repairman.throughput(n, 15.0, 1.0) / min(1.0, n / 16.0) for n in (2, 16, 64)}
    assert gap[16] == pytest.approx(0.8554, abs=1e-4) and gap[2] > 0.99 and gap[64] > 0.999
    assert gap[16] == pytest.approx(_birth_death(16, 15.0, 1.0))
