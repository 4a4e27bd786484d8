"""A trace with no rows is not placed (issue 34): exit 2 and one line naming the file ("no rows"),
instead of a ranking of the sample alone and numpy's RuntimeWarnings over empty means."""

from __future__ import annotations

from pathlib import Path

import pytest

import traces

from tracemaker import vecadd
from expect import one_line


def _empty(tmp_path: Path) -> Path:
    cols, info = vecadd(2, 2)
    p = tmp_path / "empty.parquet"
    traces.write(p, {k: v[:0] for k, v in cols.items()}, info)
    return p


@pytest.mark.parametrize("argv", [["rank"], ["evaluate"], ["evaluate", "--stream", "no"], ["rank", "--stream", "yes"]])
def test_a_trace_with_no_rows_is_not_ranked(tmp_path, run_cli, argv):
    """Was: exit 0, a ranking of one placement (the sample, ~100 ns of compute) and numpy's
    RuntimeWarnings over empty means."""
    p = _empty(tmp_path)
    one_line(*run_cli(argv[0], p, "--gpu", "k80", *argv[1:]), f"{p}: no rows: ")


def test_a_trace_with_no_rows_in_python(tmp_path):
    import placement

    p = _empty(tmp_path)
    with pytest.raises(traces.TraceError, match="no rows"):
        placement.rank(p, "k80")
    with pytest.raises(traces.TraceError, match="kernel 'vecadd': no rows"):
        placement.evaluate(traces.read(p), "k80")
    # reading and summarising an empty trace stay as they were
    assert len(traces.read(p)) == 0


def test_a_suite_entry_with_no_rows(tmp_path, run_cli):
    p = _empty(tmp_path)
    suite = tmp_path / "s.toml"
    suite.write_text('gpu = "k80"\n\n[[entry]]\ntrace = "empty.parquet"\nplacements = [""]\n')
    one_line(*run_cli("batch", suite, "-o", tmp_path / "b.parquet"), "entry 1", f"{p}: no rows")
    assert sorted(q.name for q in tmp_path.iterdir()) == ["empty.parquet", "s.toml"]


def test_training_on_a_trace_with_no_rows(tmp_path, run_cli):
    p = _empty(tmp_path)
    csv = tmp_path / "m.csv"
    csv.write_text("trace,placement,measured_ns\nempty.parquet,,1000\nempty.parquet,A=T,900\n")
    one_line(*run_cli("train", csv, "--gpu", "k80", "-o", tmp_path / "c.toml"), f"{csv}", f"{p}: no rows")
    assert not (tmp_path / "c.toml").exists()


@pytest.mark.parametrize("model", ["mwp-cwp", "gpuperf", "bsp"])
def test_a_trace_with_no_rows_is_not_modelled(tmp_path, run_cli, model):
    """Was: `placement model --trace` predicted a compute-only time from the metadata of a trace that recorded
    no memory instruction (a tracer that saw nothing); now it is refused as rank and evaluate refuse it."""
    p = _empty(tmp_path)
    one_line(*run_cli("model", model, "--gpu", "k80", "--trace", p), f"{p}: no rows: ")


def test_info_on_a_trace_with_no_rows_says_so(tmp_path, run_cli):
    """Was "(4112 a row)": the file's bytes over max(rows, 1)."""
    p = _empty(tmp_path)
    rc, out, err = run_cli("info", p)
    assert rc == 0, err
    line = next(s for s in out.splitlines() if s.startswith("file "))
    assert line.endswith("bytes (no rows)"), line
