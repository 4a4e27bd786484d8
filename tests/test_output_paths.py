"""Where an output may go (issue 34): its folder must exist and be a folder; no folder is made.

Every writer goes through ``traces.atomic``; a command refuses the output before its work
(rank --report, import, train, batch): exit 2, one line naming the path, nothing written.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import traces
from traces.atomic import check_output_folder

from conftest import ROOT
from expect import one_line

EX = ROOT / "configs" / "examples"
SUITE = """\
gpu = "k80"

[[entry]]
generator = "vecadd"
size = [256]
placements = [""]
"""


def test_missing_folder_is_refused_not_made(tmp_path):
    for out in (tmp_path / "no" / "such" / "r.html", tmp_path / "no" / "r.html"):
        with pytest.raises(
            traces.InputError, match=f"{out}: cannot write there \\(folder {out.parent} does not exist\\)"
        ):
            check_output_folder(out)
        with pytest.raises(traces.InputError, match="does not exist"):
            traces.atomic.write_text(out, "x")
    assert list(tmp_path.iterdir()) == []
    check_output_folder(tmp_path / "r.html")  # the folder exists
    check_output_folder("r.html")  # the current folder


def test_a_file_where_a_folder_should_be_is_named(tmp_path):
    (tmp_path / "afile").write_text("x")
    for out in (tmp_path / "afile" / "b.parquet", tmp_path / "afile" / "sub" / "b.parquet"):
        with pytest.raises(
            traces.InputError, match=f"{out}: cannot write there \\({tmp_path / 'afile'} is not a folder\\)"
        ):
            check_output_folder(out)


def test_rank_report_into_a_missing_folder(tmp_path, run_cli):
    """Was: the folders made up to the root, after the ranking; now refused before it."""
    report = tmp_path / "nonexistent" / "x" / "r.html"
    one_line(*run_cli("rank", EX / "vecadd.parquet", "--gpu", "k80", "--report", report),
             f"{report}: cannot write there (folder {report.parent} does not exist)")  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_import_and_bench_under_a_regular_file(tmp_path, run_cli):
    """Was: "cannot write there (File exists)"."""
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "t.parquet"
    one_line(
        *run_cli("bench", "gen", "vecadd", "-o", out),
        f"{out}: cannot write there ({tmp_path / 'afile'} is not a folder)",
    )
    log = tmp_path / "log.txt"
    log.write_text("")
    one_line(
        *run_cli("import", "nvbit", log, "-o", out), f"{out}: cannot write there ({tmp_path / 'afile'} is not a folder)"
    )


@pytest.mark.parametrize("where", ["afile", "missing", "proc"])
def test_batch_output_that_cannot_be_written(tmp_path, run_cli, where):
    """Was: exit 1 and a traceback from making ``b.parts`` (``placement/batch/__init__.py``)."""
    suite = tmp_path / "s.toml"
    suite.write_text(SUITE)
    (tmp_path / "afile").write_text("x")
    if where == "proc":
        if not os.path.isdir("/proc/self"):
            pytest.skip("no /proc")
        out = Path("/proc/b.parquet")  # a folder in which nobody, root included, makes a folder
        words = ["/proc/b.parquet: cannot write there (folder /proc/b.parts: "]
    elif where == "afile":
        out = tmp_path / "afile" / "b.parquet"
        words = [f"{out}: cannot write there ({tmp_path / 'afile'} is not a folder)"]
    else:
        out = tmp_path / "missing" / "b.parquet"
        words = [f"{out}: cannot write there (folder {tmp_path / 'missing'} does not exist)"]
    one_line(*run_cli("batch", suite, "-o", out), *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "s.toml"]


class _FullDisk:
    """pyarrow's ParquetWriter on a full disk: its writes fail as pyarrow's do (an OSError with errno 28)."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def write_table(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, run_cli, monkeypatch):
    # was: a traceback and "internal error", exit 1; a full disk (a quota, a file too large, a read-only file
    # system) is the user's to fix: one line naming the output, exit 2, no temporary left and an existing file kept
    out = tmp_path / "v.parquet"
    out.write_bytes(b"before")
    monkeypatch.setattr(traces.io.pq, "ParquetWriter", _FullDisk)
    one_line(*run_cli("bench", "gen", "vecadd", "--size", "256", "-o", out),
             f"placement bench gen: error: {out}: cannot write it (No space left on device)")  # fmt: skip
    assert [p.name for p in tmp_path.iterdir()] == ["v.parquet"] and out.read_bytes() == b"before"


@pytest.mark.parametrize("code,filename", [(errno.EDQUOT, "/x/y.html"), (errno.EROFS, None)])
def test_no_room_outside_an_atomic_write_is_one_line_too(run_cli, monkeypatch, code, filename):
    # the same errors raised anywhere in a command (a write that is not through traces.atomic) are said in one line,
    # naming the file where the error does; any other OSError is a bug (a traceback, exit 1)
    from placement.commands import info

    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code), filename)

    monkeypatch.setattr(info, "run", fail)
    words = [f"placement info: error: {filename}: " if filename else "placement info: error: cannot write",
             f"({os.strerror(code)})"]  # fmt: skip
    one_line(*run_cli("info", EX / "vecadd.parquet"), *words)
    monkeypatch.setattr(info, "run", lambda *a: (_ for _ in ()).throw(OSError(errno.EACCES, "denied")))
    code_, _, err = run_cli("info", EX / "vecadd.parquet")
    assert code_ == 1 and "internal error" in err


def _bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("which", ["csv", "trace", "link"])
def test_train_does_not_write_over_its_own_inputs(tmp_path, run_cli, which):
    """`train m.csv -o m.csv` replaced the measurements with the coefficients' TOML and exited 0; `-o t.parquet`
    replaced a trace the CSV names."""
    from tracemaker import vecadd

    traces.write(tmp_path / "t.parquet", *vecadd(2, 2))
    csv = tmp_path / "m.csv"
    csv.write_text("trace,placement,measured_ns\nt.parquet,,1000\nt.parquet,A=T,900\n")
    out = {"csv": csv, "trace": tmp_path / "t.parquet", "link": tmp_path / "l.parquet"}[which]
    if which == "link":
        out.symlink_to(tmp_path / "t.parquet")
    before = _bytes(tmp_path)
    one_line(*run_cli("train", csv, "--gpu", "k80", "-o", out), f"{out}: is an input of this run (")
    assert _bytes(tmp_path) == before


def test_train_refuses_a_folder_for_output_before_it_fits(tmp_path, run_cli, caplog):
    """Was: the fit ran (and warned), then "cannot replace it (Is a directory)", two lines on stderr."""
    from tracemaker import vecadd

    traces.write(tmp_path / "t.parquet", *vecadd(2, 2))
    csv = tmp_path / "m.csv"
    csv.write_text("trace,placement,measured_ns\nt.parquet,,1000\nt.parquet,A=T,900\n")
    (tmp_path / "out").mkdir()
    with caplog.at_level("WARNING"):
        one_line(*run_cli("train", csv, "--gpu", "k80", "-o", tmp_path / "out"), f"{tmp_path / 'out'}: is a folder")
    assert caplog.records == []  # nothing fitted


def test_a_report_does_not_write_over_the_trace_it_ranks(tmp_path, run_cli):
    from tracemaker import vecadd

    t = tmp_path / "t.parquet"
    traces.write(t, *vecadd(2, 2))
    before = _bytes(tmp_path)
    one_line(
        *run_cli("rank", t, "--gpu", "k80", "--workers", "1", "--report", t), f"{t}: is an input of this run ({t})"
    )
    assert _bytes(tmp_path) == before


def test_an_import_does_not_write_over_its_log(tmp_path, run_cli):
    log = tmp_path / "p.txt"
    log.write_text("x\n")
    one_line(*run_cli("import", "porple", log, "-o", log), f"{log}: is an input of this run")
    assert log.read_text() == "x\n"


@pytest.mark.parametrize("name, out", [("t.parquet", "t.parquet"), ("t.arrow", "t.arrow"), ("t.parquet", "l.parquet")])
def test_a_convert_does_not_write_over_its_trace(tmp_path, run_cli, name, out):
    """Was: ``convert t.parquet -o t.parquet`` (or through a link to it) replaced its input, exit 0."""
    from tracemaker import vecadd

    t, o = tmp_path / name, tmp_path / out
    traces.write(t, *vecadd(2, 2))
    if o != t:
        o.symlink_to(t)
    before = _bytes(tmp_path)
    one_line(*run_cli("convert", t, "-o", o), f"{o}: is an input of this run ({t})")
    assert _bytes(tmp_path) == before and (o == t or o.is_symlink())


@pytest.mark.parametrize("argv", [["bench", "gen", "vecadd", "-o", ""], ["train", "m.csv", "--gpu", "k80", "-o", ""]])
def test_an_empty_output_path_is_said_so(tmp_path, run_cli, argv, monkeypatch):
    """Was ": cannot replace it (Device or resource busy)"."""
    monkeypatch.chdir(tmp_path)
    one_line(*run_cli(*argv), "error: the output path is empty")
    assert list(tmp_path.iterdir()) == []
