"""Per-bank queuing: Lindley, Kingman (corrected and as printed), Eq. 7 weighting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.queuing import bank_stats, dram_latency, kingman, kingman_paper, lindley


def test_lindley_by_hand():
    # W1 = 0, W2 = max(0, 0 + 3 - 1) = 2, W3 = max(0, 2 + 3 - 1) = 4; mean 2
    assert lindley(np.array([0.0, 1.0, 2.0]), np.array([3.0, 3.0, 3.0])) == 2.0
    # a server that keeps up never queues
    assert lindley(np.array([0.0, 5.0, 10.0]), np.array([3.0, 3.0, 3.0])) == 0.0


def _mm1(rho, n, seed, deterministic=False):
    rng = np.random.default_rng(seed)
    tau_s = 10.0
    arrivals = np.cumsum(rng.exponential(tau_s / rho, n))
    service = np.full(n, tau_s) if deterministic else rng.exponential(tau_s, n)
    return arrivals, service, tau_s


@pytest.mark.parametrize("rho", [0.3, 0.5, 0.8])
@pytest.mark.parametrize("deterministic", [False, True], ids=["M/M/1", "M/D/1"])
def test_kingman_within_5_percent_of_exact(rho, deterministic):
    a, s, tau_s = _mm1(rho, 2_000_000, seed=7, deterministic=deterministic)
    q_exact = dram_latency(np.zeros(len(a), np.int64), a, s, "exact")
    q_king = dram_latency(np.zeros(len(a), np.int64), a, s, "kingman")
    assert q_king.mean_queuing_delay == pytest.approx(q_exact.mean_queuing_delay, rel=0.05)
    # and both near the closed forms: M/M/1 rho/(1-rho) tau_s, M/D/1 half of it (Pollaczek-Khinchine)
    theory = rho / (1 - rho) * tau_s * (0.5 if deterministic else 1.0)
    assert q_exact.mean_queuing_delay == pytest.approx(theory, rel=0.05)


def test_kingman_paper_reproduces_its_own_formula():
    # One bank, arrivals every 10 or 30 cycles alternately, service 5 or 15.
    a = np.cumsum(np.tile([10.0, 30.0], 50))
    s = np.tile([5.0, 15.0], 50)
    st = bank_stats(np.zeros(100, np.int64), a, s)
    diffs = np.diff(a)
    tau_a, c_a = diffs.mean(), diffs.std() / diffs.mean()
    tau_s, c_s = s.mean(), s.std() / s.mean()
    rho = tau_s / tau_a
    assert (st.tau_a[0], st.c_a[0], st.tau_s[0], st.c_s[0], st.rho[0]) == pytest.approx((tau_a, c_a, tau_s, c_s, rho))
    q = dram_latency(np.zeros(100, np.int64), a, s, "kingman-paper")
    assert q.mean_queuing_delay == pytest.approx((c_a + c_s) / 2 * rho / (1 - rho) * tau_a)
    assert q.mean_queuing_delay == pytest.approx(kingman_paper(c_a, c_s, rho, tau_a))
    q2 = dram_latency(np.zeros(100, np.int64), a, s, "kingman")
    assert q2.mean_queuing_delay == pytest.approx((c_a**2 + c_s**2) / 2 * rho / (1 - rho) * tau_s)
    assert kingman(1.0, 1.0, 0.5, 10.0) == 10.0  # M/M/1 at rho 0.5: one service time


def test_eq7_weights_banks_by_rate():
    # bank 0: 3 requests arriving 100 apart, service 10: never waits, latency 10
    # bank 1: 1 request, service 40: latency 40. Weights 3/4 and 1/4 -> 17.5
    bank = np.array([0, 1, 0, 0])
    arr = np.array([0.0, 5.0, 100.0, 200.0])
    svc = np.array([10.0, 40.0, 10.0, 10.0])
    for mode in ("kingman", "kingman-paper", "exact"):
        q = dram_latency(bank, arr, svc, mode)
        assert q.dram_lat == pytest.approx(0.75 * 10 + 0.25 * 40)
        assert q.mean_service == pytest.approx(17.5) and q.mean_queuing_delay == 0.0


def test_saturated_bank_falls_back_to_exact():
    a = np.arange(10, dtype=float)  # one per cycle
    s = np.full(10, 2.0)  # rho = 2
    q = dram_latency(np.zeros(10, np.int64), a, s, "kingman")
    assert q.saturated_banks == 1
    # W_k = k - 1 for k = 1..10 -> mean 4.5
    assert q.mean_queuing_delay == pytest.approx(4.5)


def test_exact_matches_an_independent_simulation():
    simpy = pytest.importorskip("simpy", reason="simpy (the independent G/G/1 simulator) is not installed")
    rng = np.random.default_rng(3)
    n = 2000
    arrivals = np.cumsum(rng.gamma(0.5, 20.0, n))  # bursty: c_a = sqrt(2)
    service = rng.choice([352.0, 742.0, 1008.0], n) / 40  # three clustered service times, rho about 0.8
    env = simpy.Environment()
    server = simpy.Resource(env, capacity=1)
    waits = []

    def customer(t_arrive, t_service):
        yield env.timeout(t_arrive - env.now)
        with server.request() as req:
            yield req
            waits.append(env.now - t_arrive)
            yield env.timeout(t_service)

    def source():
        for t, s in zip(arrivals, service):
            yield env.timeout(t - env.now)
            env.process(customer(t, s))

    env.process(source())
    env.run()
    q = dram_latency(np.zeros(n, np.int64), arrivals, service, "exact")
    assert q.banks.rho[0] > 0.5
    assert q.mean_queuing_delay == pytest.approx(np.mean(waits), rel=1e-9, abs=1e-9)


def test_closed_system_caps_a_saturated_bank():
    a = np.arange(10, dtype=float)
    s = np.full(10, 2.0)
    # open loop: W_k = k - 1, mean 4.5; with 3 requests in flight a request waits for
    # at most 2 others: (3 x 1 - 1) x 2 = 4
    q = dram_latency(np.zeros(10, np.int64), a, s, "kingman", population=3)
    assert q.mean_queuing_delay == pytest.approx(4.0)
    # two banks sharing 10 requests in flight, 4 of them at bank 1: cap (10 x 0.4 - 1) x tau_s
    bank = np.array([0] * 6 + [1] * 4)
    arr = np.concatenate([np.arange(6.0), np.arange(4.0)])
    svc = np.concatenate([np.full(6, 2.0), np.full(4, 3.0)])
    q = dram_latency(bank, arr, svc, "exact", population=10)
    open_loop = dram_latency(bank, arr, svc, "exact")
    wq1_open = np.mean([0, 2, 4, 6])  # W_k = 2(k-1) at bank 1
    assert open_loop.wq[1] == pytest.approx(wq1_open)
    assert q.wq[1] == pytest.approx(min(wq1_open, (10 * 0.4 - 1) * 3.0))
    assert q.wq[0] == pytest.approx(min(open_loop.wq[0], (10 * 0.6 - 1) * 2.0))


def test_grouping_paths_agree():
    # Arrivals in order (one pass) and shuffled (sorted first) give the same statistics.
    rng = np.random.default_rng(5)
    n = 5000
    arrival = np.cumsum(rng.exponential(3.0, n))
    service = rng.choice([2.0, 4.0, 6.0], n)
    bank = rng.integers(0, 37, n)
    fast = bank_stats(bank, arrival, service)
    shuffled = rng.permutation(n)  # unsorted arrivals: sorted before the pass
    slow = bank_stats(bank[shuffled], arrival[shuffled], service[shuffled])
    np.testing.assert_array_equal(fast.bank, slow.bank)
    np.testing.assert_array_equal(fast.count, slow.count)
    for f in ("tau_a", "c_a", "tau_s", "c_s", "rho", "wq_exact"):
        np.testing.assert_array_equal(getattr(fast, f), getattr(slow, f), err_msg=f)


def _bank_stats_reference(bank, arrival, service):
    """Per bank, in plain Python: its requests in arrival order (ties in their order), the mean and the
    two-pass variance of services and of arrival gaps, and Lindley's mean wait."""
    order = sorted(range(len(bank)), key=lambda i: arrival[i])
    out = {}
    for b in sorted(set(bank)):
        a = [arrival[i] for i in order if bank[i] == b]
        x = [service[i] for i in order if bank[i] == b]
        n = len(a)
        ms = 0.0
        for v in x:
            ms += v
        ms /= n
        vs = 0.0
        for v in x:
            vs += (v - ms) * (v - ms)
        c_s = math.sqrt(vs / n) / ms if ms > 0 else 0.0
        tau_a, c_a = math.inf, 0.0
        if n >= 2:
            tau_a = (a[-1] - a[0]) / (n - 1)
            va = 0.0
            for k in range(1, n):
                d = a[k] - a[k - 1] - tau_a
                va += d * d
            c_a = math.sqrt(va / (n - 1)) / tau_a if tau_a > 0 else 0.0
        w = total = 0.0
        for k in range(1, n):
            w = max(0.0, w + x[k - 1] - (a[k] - a[k - 1]))
            total += w
        out[b] = (n, tau_a, c_a, ms, c_s, total / n)
    return out


@given(
    st.lists(
        st.tuples(
            st.sampled_from([0, 1, 2, 5, 9, -3, 10**9]),
            st.sampled_from([0.0, 0.5, 1.0, 3.0]),
            st.sampled_from([0.0, 2.0, 3.5, 7.0]),
        ),
        min_size=1,
        max_size=200,
    ),
    st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_bank_stats_against_reference_to_the_bit(rows, shuffle):
    """Every statistic equals the plain-Python reference's to the last bit: small bank ids with gaps and
    large or negative ones (numbered), single-request banks, tied arrivals (kept in their order), zero
    gaps and zero service times, with the requests in arrival order or shuffled."""
    bank = np.array([r[0] for r in rows], np.int64)
    arrival = np.cumsum([r[1] for r in rows])
    service = np.array([r[2] for r in rows])
    if shuffle:
        perm = np.random.default_rng(len(rows)).permutation(len(rows))
        bank, arrival, service = bank[perm], arrival[perm], service[perm]
    got = bank_stats(bank, arrival, service)
    want = _bank_stats_reference(bank.tolist(), arrival.tolist(), service.tolist())
    np.testing.assert_array_equal(got.bank, sorted(want))
    for k, name in enumerate(("count", "tau_a", "c_a", "tau_s", "c_s", "wq_exact")):
        np.testing.assert_array_equal(getattr(got, name), [want[b][k] for b in sorted(want)], err_msg=name)


def test_no_requests_no_latency_and_no_warning():
    # a kernel whose loads never reach DRAM (Hong & Kim's micro-benchmark 1, md5hash): no requests, DRAM_lat 0,
    # and no numpy warning on the user's terminal (the mean of the empty latencies was taken before the check)
    import warnings

    empty = np.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = dram_latency(np.zeros(0, np.int64), empty, empty, "kingman", latency=empty)
    assert (q.dram_lat, q.mean_queuing_delay, q.saturated_banks) == (0.0, 0.0, 0)
