"""T_overlap training (Eq. 11): fit, save/load, and `placement train`."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

import traces
from placement.gpu import get_gpu
from placement.evaluate_whole import WholeTraceEvaluator
from placement.hms import Options
from placement.overlap import FEATURES, OverlapModel, fit, load, save
from placement.placements import parse_placement
from traces.errors import InputError
from traces.generators import generate


def test_fit_recovers_known_coefficients():
    rng = np.random.default_rng(1)
    x = np.column_stack([rng.uniform(0, 2, (40, 5)), rng.integers(8, 64, 40), np.ones(40)])
    true = np.array([0.05, -0.02, 0.03, 0.01, -0.04, 0.004, 0.2])
    y = x @ true
    m = fit(x, y)
    np.testing.assert_allclose(m.coef_, true, rtol=1e-9, atol=1e-12)


def test_ratio_is_bounded():
    x = np.array([0, 0, 0, 0, 0, 0, 1.0])  # only the constant term
    m = OverlapModel((0, 0, 0, 0, 0, 0, 2.0))  # ratio 2 -> clipped to 1
    assert m.ratio(x) == 1.0
    assert m.t_overlap(x, t_comp=50.0, t_mem=80.0) == 50.0  # at most T_comp
    assert m.t_overlap(x, t_comp=500.0, t_mem=80.0) == 80.0  # at most T_mem
    m = OverlapModel((0, 0, 0, 0, 0, 0, 0.25))
    assert m.t_overlap(x, 500.0, 80.0) == 20.0  # Eq. 12: ratio x T_mem
    m = OverlapModel((0, 0, 0, 0, 0, 0, -1.0))
    assert m.t_overlap(x, 50.0, 80.0) == 0.0


def test_save_and_load_round_trip(tmp_path):
    m = OverlapModel((0.1, 0.2, 0.3, 0.4, 0.5, 0.006, 0.7), gpu="k80")
    save(m, tmp_path / "c.toml")
    back = load(tmp_path / "c.toml")
    assert back.coef_ == m.coef_ and back.gpu == "k80"
    (tmp_path / "bad.toml").write_text("[coefficients]\ng = 'x'\n")
    with pytest.raises(InputError, match="coefficients.g: expected a number"):
        load(tmp_path / "bad.toml")


def test_train_command_fits_times_made_by_known_coefficients(tmp_path, run_cli, caplog):
    gpu = get_gpu("k80")
    rows = []
    # small enough that no ratio x T_mem reaches T_comp, so the times are linear in the events
    truth = OverlapModel((0.002, 0.001, 0.003, 0.0, 0.001, 0.0001, 0.001))
    for name, size, placements in [
        ("vecadd", [16384], ["", "a=T", "b=T", "a=T,b=T", "a=C"]),
        ("triad", [16384], ["", "A=T", "B=T", "A=T,B=C"]),
    ]:
        cols, info = generate(name, size, None)
        path = tmp_path / f"{name}.parquet"
        traces.write(path, cols, info)
        ev = WholeTraceEvaluator(traces.read(path), gpu, Options())
        for p in placements:
            t = ev.evaluate(parse_placement(p, info)).target
            feats = np.array([t.events[f] for f in FEATURES])
            # the K80 has no launch cost; 64 blocks on its 13 SMs: T is the busiest SM's, 5 blocks against 64 / 13
            assert t.blocks_scale == pytest.approx(5 * 13 / 64)
            ns = gpu.cycles_to_ns((t.t_comp + t.t_mem - truth.t_overlap(feats, t.t_comp, t.t_mem)) * t.blocks_scale)
            rows.append(f'{path.name},"{p}",{ns!r}')
    csv = tmp_path / "m.csv"
    csv.write_text("trace,placement,measured_ns\n" + "\n".join(rows) + "\n")
    code, out, err = run_cli("train", csv, "--gpu", "k80", "-o", tmp_path / "c.toml", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert max(abs(r["residual_pct"]) for r in d["residuals_pct"]) < 1e-6
    assert set(d["loko_per_kernel"]) == {"vecadd", "triad"}
    assert load(tmp_path / "c.toml").gpu == "k80"
    # the trained coefficients reproduce the measured times through `evaluate --overlap`
    code, out, err = run_cli("evaluate", tmp_path / "vecadd.parquet", "--gpu", "k80", "--place", "a=T",
                             "--overlap", tmp_path / "c.toml", "--json")  # fmt: skip
    assert code == 0, err
    e = json.loads(out)
    want = float(rows[1].rsplit(",", 1)[1])
    assert e["time_ns"] == pytest.approx(want, rel=1e-6)
    assert e["overlap_source"].startswith("trained coefficients")
    # coefficients trained on the K80 applied to another GPU: said (Eq. 11's fit is the K80's)
    with caplog.at_level(logging.WARNING, logger="placement.api"):
        code, out, err = run_cli("evaluate", tmp_path / "vecadd.parquet", "--gpu", "k80", "--place", "a=T",
                                 "--overlap", tmp_path / "c.toml")  # fmt: skip
        assert code == 0 and "trained on" not in caplog.text
        code, out, err = run_cli("evaluate", tmp_path / "vecadd.parquet", "--gpu", "h100", "--place", "a=T",
                                 "--overlap", tmp_path / "c.toml")  # fmt: skip
    assert code == 0 and "T_overlap coefficients trained on k80, applied to h100" in caplog.text
    # 3 placements of one kernel for Eq. 11's 7 coefficients: the fit passes through them, underdetermined; said,
    # and no leave-one-kernel-out figure
    few = tmp_path / "few.csv"
    few.write_text("trace,placement,measured_ns\n" + "\n".join(rows[:3]) + "\n")
    with caplog.at_level(logging.WARNING, logger="placement.training"):
        code, out, err = run_cli("train", few, "--gpu", "k80", "-o", tmp_path / "few.toml")
    assert code == 0 and "3 measured placements for Eq. 11's 7 coefficients: the fit is underdetermined" in caplog.text
    assert "leave-one-kernel-out MAPE: none (the measurements hold one kernel" in out


def test_train_bad_csv(tmp_path, run_cli):
    (tmp_path / "m.csv").write_text("trace,time\nx.parquet,3\n")
    code, out, err = run_cli("train", tmp_path / "m.csv", "--gpu", "k80", "-o", tmp_path / "c.toml")
    assert code == 2 and "expected columns trace, placement and measured_ns" in err
    assert not (tmp_path / "c.toml").exists()
