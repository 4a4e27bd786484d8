"""`placement trace` without a GPU: the error paths, and the host side of a run with a stand-in program that
writes the record file the injection library would (the device side awaits a GPU: README)."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from test_sanitizer_records import ALLOCS, _accesses, _launch

import traces
from placement.cli import main
from traces.sanitizer import build
from traces.sanitizer.records import encode


def _err(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines, "nothing on stderr"
    return lines[-1]


@pytest.mark.skipif(build.driver_problem() is None, reason="a GPU and its driver are present here")
def test_no_driver_is_one_line_exit_2(tmp_path, capsys):
    out = tmp_path / "t.parquet"
    assert main(["trace", "-o", str(out), "--", sys.executable, "-c", "pass"]) == 2
    line = _err(capsys)
    assert line.startswith("placement trace: error: no NVIDIA driver") and not out.exists()


def test_missing_nvcc_and_sanitizer_say_how_to_get_them(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(build, "driver_problem", lambda: None)
    monkeypatch.setattr(build, "find_nvcc", lambda: None)
    assert main(["trace", "-o", str(tmp_path / "t.parquet"), "--", "true"]) == 2
    line = _err(capsys)
    assert "nvcc not found" in line and "pip install 'gpu-placement[trace]'" in line
    monkeypatch.setattr(build, "find_nvcc", lambda: tmp_path / "nvcc")
    monkeypatch.setattr(build, "find_sanitizer", lambda nvcc=None: None)
    assert main(["trace", "-o", str(tmp_path / "t.parquet"), "--", "true"]) == 2
    assert "Compute Sanitizer API" in _err(capsys)


@pytest.mark.parametrize(
    "argv,message",
    [
        ([], "no program to run"),
        (["--ctas", "x", "--", "true"], "--ctas 'x'"),
        (["--max-rows", "0", "--", "true"], "--max-rows must be at least 1"),
        (["--ring", "1000", "--", "true"], "--ring must be 1,024 to 67,108,864 records (280 bytes each), got 1,000"),
        (["--ring", str(1 << 27), "--", "true"], "got 134,217,728"),
        (["--time", "--time-runs", "0", "--", "true"], "--time-runs must be at least 1"),
    ],
)
def test_bad_options(tmp_path, capsys, argv, message):
    assert main(["trace", "-o", str(tmp_path / "t.parquet"), *argv]) == 2
    assert message in _err(capsys)


STAND_IN = """
import os, sys
if "PLACEMENT_TRACE_TIME_OUT" in os.environ:  # placement trace --time: the timing runs
    out = os.environ["PLACEMENT_TRACE_TIME_OUT"]
    k = int(os.path.basename(out)[4:-4])
    assert "PLACEMENT_TRACE_OUT" not in os.environ and "PLACEMENT_TRACE_PATCHES" not in os.environ
    if k < len({times!r}):
        open(out, "w").write({times!r}[k] + "\\t" + os.environ["PLACEMENT_TRACE_KERNEL"] + "\\n")
    sys.exit(0)
assert os.environ["PLACEMENT_TRACE_RING"] == "262144"  # placement trace's default ring
names = open(os.environ["PLACEMENT_TRACE_LAUNCHES"], "a")
for line in {launches!r}:
    names.write(line + "\\n")
names.close()
open(os.environ["PLACEMENT_TRACE_OUT"], "wb").write(open({records!r}, "rb").read())
print("stand-in stderr", file=sys.stderr)
sys.exit({code})
"""


def _stand_in(
    tmp_path,
    monkeypatch,
    code=0,
    launches=("_Z6vecaddPfPKfS1_i\tvecadd(float*, float const*, float const*, int)",),
    times=(),
):
    monkeypatch.setattr(build, "driver_problem", lambda: None)
    monkeypatch.setattr(build, "build", lambda tc=None: (tmp_path / "lib.so", tmp_path / "patches.fatbin"))
    rec = tmp_path / "rec.bin"
    rec.write_bytes(encode(_launch(), ALLOCS, _accesses()))
    script = tmp_path / "app.py"
    script.write_text(
        textwrap.dedent(STAND_IN.format(launches=list(launches), records=str(rec), code=code, times=list(times)))
    )
    return [sys.executable, str(script)]


def test_run_writes_the_trace(tmp_path, capsys, monkeypatch):
    app = _stand_in(tmp_path, monkeypatch)
    out = tmp_path / "t.parquet"
    assert main(["trace", "-o", str(out), "--json", "--ctas", "0-1", "--", *app]) == 0
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert doc["rows"] == 15 and doc["unknown_rows"] == 1 and doc["ctas"] == "0-1"
    assert doc["traced_ctas"] == doc["launch_ctas"] == 2  # both of the launch's blocks ran: nothing to scale
    t = traces.read(out)
    assert len(t) == 15 and {o.name for o in t.info.objects} >= {"arg0", "arg1", "arg2"}
    assert t.info.source["format"] == "sanitizer" and t.info.source["ctas"] == "0-1"


def test_program_exit_code_and_stderr_pass_through(tmp_path, capfd, monkeypatch):
    app = _stand_in(tmp_path, monkeypatch, code=3)
    out = tmp_path / "t.parquet"
    assert main(["trace", "-o", str(out), "--", *app]) == 3
    err = capfd.readouterr().err
    assert "stand-in stderr" in err and "exited with 3; no trace written" in err and not out.exists()


def test_several_kernels_need_kernel(tmp_path, capsys, monkeypatch):
    app = _stand_in(tmp_path, monkeypatch, launches=("_Z4initPf\tinit(float*)", "_Z6vecaddPfPKfS1_i\tvecadd(float*)"))
    out = tmp_path / "t.parquet"
    assert main(["trace", "-o", str(out), "--", *app]) == 2
    assert "launches 2 kernels; pick one with --kernel" in _err(capsys) and not out.exists()
    assert main(["trace", "-o", str(out), "--kernel", "vecadd", "--launch", "1", "--", *app]) == 2
    assert "--launch 1: the chosen kernel was launched 1 time" in _err(capsys)


def test_time_stores_the_median_of_the_timing_runs(tmp_path, capsys, monkeypatch):
    # three uninstrumented runs time the launch at 12, 10 and 11 us: the trace's measured time is the median,
    # on the device the timing run named (the stand-in names the kernel it was asked to time: the traced
    # launch's mangled name)
    app = _stand_in(tmp_path, monkeypatch, times=("0.012", "0.010", "0.011"))
    out = tmp_path / "t.parquet"
    assert main(["trace", "-o", str(out), "--time", "--time-runs", "3", "--json", "--", *app]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["measured_ns"] == pytest.approx(11000.0)
    info = traces.read_info(out)
    assert info.measured.time_ns == pytest.approx(11000.0) and info.measured.gpu == "_Z6vecaddPfPKfS1_i"
    assert info.source["measured"]["times_ms"] == [0.012, 0.010, 0.011] and info.source["measured"]["runs"] == 3


def test_time_without_a_time_is_one_line(tmp_path, capsys, monkeypatch):
    # the timing run never reaches the launch (no file written): exit 2, nothing written
    app = _stand_in(tmp_path, monkeypatch, times=())
    out = tmp_path / "t.parquet"
    assert main(["trace", "-o", str(out), "--time", "--", *app]) == 2
    assert "the timing run did not reach the traced launch" in _err(capsys) and not out.exists()


def test_measured_device_takes_its_catalog_name():
    from placement.commands.trace import measured_time

    m = measured_time([0.02, 0.01], "NVIDIA H100 80GB HBM3")
    assert m.time_ns == pytest.approx(15000.0) and m.gpu == "h100"
    assert measured_time([1.0], "Some Future GPU").gpu == "Some Future GPU"


def test_time_says_when_it_timed_a_first_launch(tmp_path, capsys, monkeypatch):
    # the kernel's first launch (no --launch) is said to run slower than its later ones, in the output and the
    # trace's source; a later launch (--launch 1 of a kernel launched twice) is not
    vecadd = "_Z6vecaddPfPKfS1_i\tvecadd(float*, float const*, float const*, int)"
    app = _stand_in(tmp_path, monkeypatch, launches=(vecadd, vecadd), times=("0.012",))
    out = tmp_path / "t.parquet"
    assert main(["trace", "-o", str(out), "--time", "--", *app]) == 0
    text = capsys.readouterr().out
    assert "the kernel's first launch in the program: on an H100 a first launch took a median 11 us more" in text
    assert traces.read_info(out).source["measured"]["first_launch"] is True
    out.unlink()
    assert main(["trace", "-o", str(out), "--time", "--launch", "1", "--", *app]) == 0
    assert "first launch" not in capsys.readouterr().out
    assert traces.read_info(out).source["measured"]["first_launch"] is False


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--time-runs", "3"], "--time-runs 3 times the launch with --time only; add --time"),  # was ignored
        (
            ["--keep-records", "nodir/rec"],
            "nodir/rec: cannot write there (folder nodir does not exist)",
        ),  # after the run
        (["--keep-records", "t.parquet"], "t.parquet: --keep-records is the trace's output (-o)"),
        (["--keep-records", "PROGRAM"], "is an input of this run"),  # the program itself, overwritten by the records
    ],
)
def test_trace_options_are_checked_before_the_run(tmp_path, capsys, monkeypatch, extra, words):
    monkeypatch.chdir(tmp_path)
    prog = tmp_path / "app"
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    extra = [str(prog) if x == "PROGRAM" else x for x in extra]
    assert main(["trace", "-o", "t.parquet", *extra, "--", str(prog)]) == 2
    line = _err(capsys)
    assert line.startswith("placement trace: error: ") and words in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app"] and prog.read_text() == "#!/bin/sh\n"
