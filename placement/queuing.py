"""Per-bank DRAM queuing (Huang & Li Sec. III-C, Eq. 6-10).

Each DRAM bank is a G/G/1 server. Its requests arrive at the estimated cycles of
the DRAM request stream and are served for the row-buffer hit, miss or conflict
time (Eq. 8). Three ways to get a bank's mean queuing delay W_q:

- ``kingman`` (default), the textbook G/G/1 approximation the paper means:
  W_q = ((c_a^2 + c_s^2) / 2) * (rho / (1 - rho)) * tau_s  (Kingman 1961);
- ``kingman-paper``, Eq. 9 exactly as printed, to reproduce the paper:
  W_q = ((c_a + c_s) / 2) * (rho / (1 - rho)) * tau_a. It uses c_a and c_s where
  the squares belong, and tau_a where tau_s belongs, so it is wrong even for
  M/M/1 (where it gives rho / (1 - rho) * tau_a instead of rho / (1 - rho) * tau_s);
- ``exact``: the Lindley recursion on the bank's own arrival and service
  sequence, W_1 = 0, W_{k+1} = max(0, W_k + S_k - A_{k+1}), averaged over its
  requests. Both approximations fall back to it on a bank with rho >= 1, where
  they have no finite value.

With c_a = sigma_a / tau_a, c_s = sigma_s / tau_s and rho = tau_s / tau_a (Eq. 10).
A bank with one request never waits. DRAM_lat (Eq. 7) weighs the banks' latencies
(Eq. 6: W_q + mean service) by their arrival rates; over the common window of one
kernel a bank's rate is proportional to its request count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from traces import keytable

from .choices import QUEUE_MODES as MODES

NUMBA_DEPS = "fddbf01c20b3f476"  # its imports' sources, for numba's cache (traces.numba_cache)


@dataclass(frozen=True)
class BankStats:
    """Per-bank statistics (arrays over the banks that received requests)."""

    bank: np.ndarray
    count: np.ndarray
    tau_a: np.ndarray
    c_a: np.ndarray
    tau_s: np.ndarray
    c_s: np.ndarray
    rho: np.ndarray
    wq_exact: np.ndarray


@dataclass(frozen=True)
class Queuing:
    """DRAM latency from per-bank queues."""

    mode: str
    dram_lat: float
    """Eq. 7: rate-weighted mean over banks of (W_q + mean service), in the input's time unit."""
    mean_queuing_delay: float
    """Rate-weighted mean W_q over banks."""
    mean_service: float
    saturated_banks: int
    """Banks with rho >= 1 (computed exactly whatever the mode)."""
    banks: BankStats
    wq: np.ndarray
    """W_q per bank under ``mode``."""


@nb.njit(cache=True, nogil=True, inline="always")
def _lindley_step(w, prev_service, gap):
    """Lindley's recursion, one step: the next request's wait max(0, W + S_prev - gap) (NaN stays NaN)."""
    w = w + prev_service - gap
    if w < 0.0:
        w = 0.0
    return w


@nb.njit(cache=True, nogil=True)
def lindley(arrival, service):
    """Mean waiting time of a FIFO single server (Lindley's recursion), arrivals sorted."""
    n = arrival.shape[0]
    if n == 0:
        return 0.0
    w = 0.0
    total = 0.0
    for k in range(1, n):
        w = _lindley_step(w, service[k - 1], arrival[k] - arrival[k - 1])
        total += w
    return total / n


@nb.njit(cache=True, nogil=True)
def _bank_stats(bank, arrival, service, count, tau_a, c_a, tau_s, c_s, wq_exact):
    """Moments and exact waits per bank over dense bank ids (the output arrays are per id), the requests in
    their order: two passes with per-bank running sums, each bank's terms summed in its requests' order.
    Returns whether every bank's arrivals are in order (non-decreasing, no NaN); only then are the moments
    and waits those of the banks' queues (the caller sorts otherwise)."""
    nb_ = count.shape[0]
    sums = np.zeros((6, nb_))
    sum_s, first, last, prev_s, w, total = sums[0], sums[1], sums[2], sums[3], sums[4], sums[5]
    count[:] = 0
    ordered = True
    for i in range(bank.shape[0]):
        b = bank[i]
        a = arrival[i]
        if count[b] == 0:
            first[b] = a
        else:
            ordered = ordered and a >= last[b]
            wb = _lindley_step(w[b], prev_s[b], a - last[b])
            w[b] = wb
            total[b] += wb
        last[b] = a
        prev_s[b] = service[i]
        sum_s[b] += service[i]
        count[b] += 1
    for b in range(nb_):
        if count[b]:
            tau_s[b] = sum_s[b] / count[b]
            tau_a[b] = (last[b] - first[b]) / (count[b] - 1) if count[b] >= 2 else np.inf
    vs, va = np.zeros(nb_), np.zeros(nb_)
    seen = np.zeros(nb_, np.int64)
    for i in range(bank.shape[0]):
        b = bank[i]
        vs[b] += (service[i] - tau_s[b]) ** 2
        if seen[b]:
            va[b] += (arrival[i] - last[b] - tau_a[b]) ** 2
        last[b] = arrival[i]
        seen[b] = 1
    for b in range(nb_):
        n = count[b]
        if n == 0:
            continue
        ms = tau_s[b]
        c_s[b] = np.sqrt(vs[b] / n) / ms if ms > 0 else 0.0
        if n >= 2:
            ma = tau_a[b]
            c_a[b] = np.sqrt(va[b] / (n - 1)) / ma if ma > 0 else 0.0
        else:
            c_a[b] = 0.0
        wq_exact[b] = total[b] / n
    return ordered


def bank_stats(bank: np.ndarray, arrival: np.ndarray, service: np.ndarray) -> BankStats:
    """Per-bank arrival and service moments and exact mean waits.

    Banks that are small non-negative numbers are their own dense ids, others are numbered
    in order (``np.unique``). One pass of ``_bank_stats`` over the requests as given when each
    bank's arrivals are in order (the DRAM stream's case); otherwise again over the requests
    sorted by arrival (stable: ties keep their order).
    """
    bank = np.asarray(bank, dtype=np.int64)
    arrival = np.asarray(arrival, dtype=np.float64)
    service = np.asarray(service, dtype=np.float64)
    n = bank.shape[0]
    if n > 0 and bank.min() >= 0 and bank.max() < 4 * n + 1024:
        numbers, dense = None, bank
        k = int(bank.max()) + 1
    else:
        numbers, dense = np.unique(bank, return_inverse=True)
        dense = dense.reshape(-1).astype(np.int64)
        k = numbers.shape[0]
    count = np.empty(k, np.int64)
    tau_a, c_a, tau_s, c_s, wq = (np.empty(k) for _ in range(5))
    if not _bank_stats(dense, arrival, service, count, tau_a, c_a, tau_s, c_s, wq):
        order = np.argsort(arrival, kind="stable")
        _bank_stats(dense[order], arrival[order], service[order], count, tau_a, c_a, tau_s, c_s, wq)
    ids = np.flatnonzero(count)
    return BankStats(ids if numbers is None else numbers[ids], count[ids], tau_a[ids], c_a[ids], tau_s[ids], c_s[ids],
                     _rho(tau_a[ids], tau_s[ids]), wq[ids])  # fmt: skip


def _rho(tau_a: np.ndarray, tau_s: np.ndarray) -> np.ndarray:
    """rho = tau_s / tau_a per bank (Eq. 10): infinite for a mean arrival gap of 0, 0 for a bank of one request."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(tau_a) & (tau_a > 0), tau_s / tau_a, np.where(np.isfinite(tau_a), np.inf, 0.0))


def kingman(c_a, c_s, rho, tau_s):
    """Kingman's G/G/1 approximation, W_q = ((c_a^2 + c_s^2)/2) (rho/(1-rho)) tau_s (Eq. 9, corrected form)."""
    return (c_a**2 + c_s**2) / 2.0 * (rho / (1.0 - rho)) * tau_s


def kingman_paper(c_a, c_s, rho, tau_a):
    """Eq. 9 as printed: ((c_a + c_s)/2) (rho/(1-rho)) tau_a (reproduces the paper, not queuing theory)."""
    return (c_a + c_s) / 2.0 * (rho / (1.0 - rho)) * tau_a


def dram_latency(
    bank: np.ndarray,
    arrival: np.ndarray,
    service: np.ndarray,
    mode: str = "kingman",
    latency: np.ndarray | None = None,
    population: float | None = None,
) -> Queuing:
    """DRAM_lat of Eq. 6-7 from one stream of requests (bank, arrival time, service time).

    ``service`` is the time a request keeps its bank busy, which is what the queue
    sees; ``latency``, when given, is each request's unloaded access latency, the
    "ave_service_time" that Eq. 6 adds to the queuing delay (by default the
    service time itself, as in the paper).

    ``population``, when given, is the number of requests the GPU can have in
    flight. The open-loop queues above let a saturated bank's wait grow with the
    length of the trace; a GPU is a closed system in which at most ``population``
    requests are outstanding, a share p_i of them at bank i, so a request there
    waits for at most (population x p_i - 1) others: W_q,i is capped at
    max(0, population x p_i - 1) x tau_s,i. In saturation the bank's latency then
    makes T_mem equal its total busy time, the throughput bound.
    """
    if mode not in MODES:
        raise ValueError(f"queue mode {mode!r}; expected one of {', '.join(MODES)}")
    st = bank_stats(bank, arrival, service)
    mean_latency = float(np.mean(latency)) if latency is not None and len(latency) else None  # none: no requests
    return _queuing(st, mode, mean_latency, population)


def _queuing(st: BankStats, mode: str, mean_latency: float | None, population: float | None) -> Queuing:
    """Eq. 6-10 from the banks' statistics (see ``dram_latency``)."""
    if st.bank.shape[0] == 0:
        return Queuing(mode, 0.0, 0.0, 0.0, 0, st, np.zeros(0))
    single = st.count < 2
    saturated = ~single & (st.rho >= 1.0)
    ok = ~single & ~saturated
    wq = np.zeros_like(st.tau_s)
    if mode == "exact":
        wq = st.wq_exact.copy()
    else:
        if mode == "kingman":
            wq[ok] = kingman(st.c_a[ok], st.c_s[ok], st.rho[ok], st.tau_s[ok])
        else:
            wq[ok] = kingman_paper(st.c_a[ok], st.c_s[ok], st.rho[ok], st.tau_a[ok])
        wq[saturated] = st.wq_exact[saturated]
    weight = st.count / st.count.sum()
    if population is not None:
        wq = np.minimum(wq, np.maximum(population * weight - 1.0, 0.0) * st.tau_s)
    mean_service = mean_latency if mean_latency is not None else float(np.sum(weight * st.tau_s))
    mean_wq = float(np.sum(weight * wq))
    return Queuing(
        mode=mode,
        dram_lat=mean_wq + mean_service,
        mean_queuing_delay=mean_wq,
        mean_service=mean_service,
        saturated_banks=int(saturated.sum()),
        banks=st,
        wq=wq,
    )


# per-bank state columns of QueueStream
_N, _SUM_S, _MEAN_S, _M2_S, _FIRST_A, _LAST_A, _MEAN_D, _M2_D, _W, _TOTAL_W, _PREV_S = range(11)
_STATE = 11


@nb.njit(cache=True, nogil=True)
def _feed(ids, arrival, service, state):
    """Add requests (in arrival order) to their banks' running moments and Lindley waits."""
    for i in range(ids.shape[0]):
        b = ids[i]
        a = arrival[i]
        s = service[i]
        st = state[b]
        n = st[_N] + 1.0
        st[_N] = n
        st[_SUM_S] += s
        d = s - st[_MEAN_S]
        st[_MEAN_S] += d / n
        st[_M2_S] += d * (s - st[_MEAN_S])
        if n == 1.0:
            st[_FIRST_A] = a
        else:
            gap = a - st[_LAST_A]
            k = n - 1.0
            dd = gap - st[_MEAN_D]
            st[_MEAN_D] += dd / k
            st[_M2_D] += dd * (gap - st[_MEAN_D])
            w = _lindley_step(st[_W], st[_PREV_S], gap)
            st[_W] = w
            st[_TOTAL_W] += w
        st[_LAST_A] = a
        st[_PREV_S] = s


class QueueStream:
    """:func:`dram_latency` fed the DRAM request stream a piece at a time, in bounded memory.

    Pieces come in arrival order (each after the pieces before it); per bank the stream
    keeps its request count, running moments of service and inter-arrival times
    (Welford's updates) and the Lindley recursion's wait. ``result`` equals
    ``dram_latency`` over the concatenated pieces: the mean service and the Lindley waits
    are the same sums in the same order, the variances are the same quantities summed
    differently (to within 1e-12 relative). Banks are keys of any integer kind (the
    decoded bank numbers of ``cachesim.DramPiece``); like ``dram_latency``'s dense ids,
    they are reported in increasing order.
    """

    def __init__(self):
        self._keys = np.zeros(0, np.uint64)
        self._state = np.zeros((0, _STATE))
        self._latency_sum = 0.0
        self._requests = 0

    def feed(
        self, bank: np.ndarray, arrival: np.ndarray, service: np.ndarray, latency: np.ndarray | None = None
    ) -> None:
        bank = np.asarray(bank, dtype=np.uint64)
        if bank.shape[0] == 0:
            return
        self._keys, (self._state,), ids = keytable.positions(self._keys, bank, (self._state,))
        _feed(ids, np.ascontiguousarray(arrival, np.float64), np.ascontiguousarray(service, np.float64), self._state)
        if latency is not None:
            self._latency_sum += float(np.sum(latency))
        self._requests += bank.shape[0]

    def bank_stats(self) -> BankStats:
        st = self._state
        k = st.shape[0]
        n = st[:, _N]
        tau_s = st[:, _SUM_S] / np.maximum(n, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            vs = (st[:, _M2_S] + n * (st[:, _MEAN_S] - tau_s) ** 2) / n
            c_s = np.where(tau_s > 0, np.sqrt(vs) / tau_s, 0.0)
            many = n >= 2
            m = np.maximum(n - 1.0, 1.0)
            ma = (st[:, _LAST_A] - st[:, _FIRST_A]) / m
            va = (st[:, _M2_D] + m * (st[:, _MEAN_D] - ma) ** 2) / m
            tau_a = np.where(many, ma, np.inf)
            c_a = np.where(many & (ma > 0), np.sqrt(va) / ma, 0.0)
        wq = st[:, _TOTAL_W] / np.maximum(n, 1.0)
        return BankStats(np.arange(k, dtype=np.int64), n.astype(np.int64), tau_a, c_a, tau_s, c_s, _rho(tau_a, tau_s),
                         wq)  # fmt: skip

    def result(self, mode: str = "kingman", population: float | None = None, latency: bool = True) -> Queuing:
        """The :class:`Queuing` of the stream so far; ``latency`` False: the mean service is the busy time's."""
        if mode not in MODES:
            raise ValueError(f"queue mode {mode!r}; expected one of {', '.join(MODES)}")
        mean = self._latency_sum / self._requests if latency and self._requests else None
        if latency and not self._requests:
            mean = float("nan")
        return _queuing(self.bank_stats(), mode, mean, population)
