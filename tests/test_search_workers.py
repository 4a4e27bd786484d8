"""rank's worker processes: started only when the estimated work pays for them (the decision
logged), and the same results whether they run or not."""

from __future__ import annotations

import concurrent.futures
import logging

import pytest

import placement.search
import traces
from placement.gpu import get_gpu
from placement.evaluate_whole import WholeTraceEvaluator
from placement.search import SearchOptions, solve
from placement.workers import FORK_START_S, evaluation_cost_s, worth_processes
from traces.generators import generate

K80 = get_gpu("k80")


def test_worth_processes_breaks_even_on_the_start_cost():
    assert not worth_processes(1e6, 1)  # one worker is this process
    for w in (2, 4, 16):
        even = w * FORK_START_S / (1 - 1 / w)  # saved time == start cost
        assert not worth_processes(even * 0.99, w)
        assert worth_processes(even * 1.01, w)
    assert not worth_processes(0.0, 2)


def test_evaluation_cost_grows_with_rows():
    assert 0 < evaluation_cost_s(0) < evaluation_cost_s(264) < evaluation_cost_s(1_000_000)


def _ranking(trace, workers):
    r = solve(WholeTraceEvaluator(trace, K80), options=SearchOptions(top=5, workers=workers))
    return [(e.target.placement, e.target.time_ns) for e in r.ranking], r.evaluations, r.legal_placements


@pytest.fixture(scope="module")
def small_trace():
    cols, info = generate("conv1d", [1024], None)
    return traces.Trace(**cols, info=info)


def test_small_search_stays_in_process(small_trace, caplog, monkeypatch):
    forked = []
    # placement.search imports the pool class where it starts one
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", lambda *a, **k: forked.append(a) or pytest.fail())
    with caplog.at_level(logging.INFO, logger="placement.search"):
        got = _ranking(small_trace, 2)
    assert forked == []
    assert any("in this process" in m for m in caplog.messages)
    assert got == _ranking(small_trace, 1)


def test_workers_give_the_results_of_one_process(small_trace, caplog, monkeypatch):
    # forced: the pool whatever the estimate, so the workers' path is the one compared
    monkeypatch.setattr(placement.search, "worth_processes", lambda work_s, workers: True)
    with caplog.at_level(logging.INFO, logger="placement.search"):
        got = _ranking(small_trace, 2)
    assert any("2 worker processes" in m for m in caplog.messages)
    assert got == _ranking(small_trace, 1)  # exactly: each evaluation is the same pure function


def test_workers_warmed_on_the_head_give_the_results_of_one_process(small_trace, monkeypatch):
    # a trace longer than WARM_ROWS: each new set of spaces is evaluated on its head here, every placement by the
    # workers; the ranking is the one process's, exactly
    assert len(small_trace) > 256
    monkeypatch.setattr(placement.search, "worth_processes", lambda work_s, workers: True)
    monkeypatch.setattr(placement.search, "WARM_ROWS", 256)
    heads = []
    real = placement.search._Runner._warm_on_head
    monkeypatch.setattr(placement.search._Runner, "_warm_on_head",
                        lambda self, p, todo: heads.append(p) or real(self, p, todo))  # fmt: skip
    got = _ranking(small_trace, 2)
    assert heads  # the head path was taken
    assert got == _ranking(small_trace, 1)


def test_retained_memory_is_reused_and_released():
    import sys

    import numpy as np

    from placement.workers import retain_freed_memory

    with retain_freed_memory() as on:
        assert on == sys.platform.startswith("linux")
        for _ in range(3):  # large arrays freed and made again: the results are the arrays' own
            a = np.arange(1 << 23, dtype=np.int64)
            assert int(a[-1]) == (1 << 23) - 1
            del a
