"""Where an output may go (issue 34): its folder must exist and be a folder; no folder is made.

Every writer goes through ``traces.atomic``; a command refuses the output before its work
(rank --report, import, train, batch): exit 2, one line naming the path, nothing written.
"""

from __future__ import annotations

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
