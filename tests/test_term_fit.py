"""benchmarks/term_fit.py: the measured times in the model's units and the one-factor fit, by hand on a
made-up results frame whose measured times are 1.5 x T_LSU exactly."""

from __future__ import annotations

import statistics

import pandas as pd
import pytest
from conftest import benchmark_script


def _module():
    return benchmark_script("term_fit")


def frame():
    # 2 GHz (cycles / model_ns), 100 launch cycles, a trace of a quarter of the launch's blocks per SM
    lsu = [1000.0, 2000.0, 4000.0]
    mem = [1500.0, 2500.0, 6000.0]
    rows = []
    for i, (t_lsu, t_mem) in enumerate(zip(lsu, mem)):
        measured_cycles = 1.5 * t_lsu  # in the model's units: what the launch's time is made from below
        rows.append({
            "entry": f"e{i}", "gpu": "h200", "placement": "sample",
            "measured_ns": (measured_cycles * 4 + 100) / 2.0, "model_ns": 1.0, "cycles": 2.0,
            "t_launch": 100.0, "blocks_scale": 4.0, "t_lsu": t_lsu, "t_comp": t_lsu, "w_parallel": 0.5 * t_lsu,
            "t_mem": t_mem, "t_overlap": 0.9 * t_lsu, "t_round": 0.0, "t_block": 0.0,
            "caches.l1.global.requests": 100.0, "caches.l2.global.requests": [5.0, 10.0, 20.0][i],
        })  # fmt: skip
    rows.append({**rows[0], "placement": "x=C", "measured_ns": 1e9})  # another placement: not read
    return pd.DataFrame(rows)


def test_measured_cycles_and_the_one_factor_fit_by_hand():
    mod = _module()
    df = frame()
    sample = df[df.placement == "sample"]
    assert list(mod.measured_cycles(sample)) == pytest.approx([1500.0, 3000.0, 6000.0])
    # T = max(T_comp + T_mem - T_overlap, T_round, T_block): 1,600, 2,700, 6,400
    assert list(mod.model_t(sample)) == pytest.approx([1600.0, 2700.0, 6400.0])
    out = mod.term_fits(df)["h200"]
    assert out["t_lsu"]["k"] == pytest.approx(1.5) and out["t_lsu"]["median_error"] == pytest.approx(0.0, abs=1e-12)
    assert out["t_comp"]["k"] == pytest.approx(1.5) and out["w_parallel"]["k"] == pytest.approx(3.0)
    # T's k by hand: sum(T x m) / sum(T^2)
    t, m = [1600.0, 2700.0, 6400.0], [1500.0, 3000.0, 6000.0]
    k = sum(a * b for a, b in zip(t, m)) / sum(a * a for a in t)
    assert out["T"]["k"] == pytest.approx(k) and out["T"]["n"] == 3
    assert out["T"]["max_error"] == pytest.approx(max(abs(k * a / b - 1) for a, b in zip(t, m)))
    assert out["t_round"]["k"] is None  # no positive values: nothing to fit
    # T / measured: 1.067, 0.9, 1.067 against the off-chip shares 0.05, 0.10, 0.20 (Pearson's r, the standard
    # library's as the reference)
    want = statistics.correlation([0.05, 0.10, 0.20], [a / b for a, b in zip(t, m)])
    assert out["off_chip_share_vs_error_corr"] == pytest.approx(want) and abs(want) < 0.5
    assert mod.term_fits(df, leave_out={"e0", "e1", "e2"}) == {}


def test_a_file_that_is_not_a_results_file_is_one_line_and_exit_2(tmp_path, capsys):
    mod = _module()
    bad = tmp_path / "notes.parquet"
    bad.write_text("not parquet")
    assert mod.main([str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{bad}: not a placement batch results file (") and "\n" not in err
    frame().drop(columns=["cycles"]).to_parquet(tmp_path / "short.parquet")  # the model's clock comes from it
    assert mod.main([str(tmp_path / "short.parquet")]) == 2
    assert "'cycles'" in capsys.readouterr().err
