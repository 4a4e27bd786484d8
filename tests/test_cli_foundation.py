"""`placement info` and `placement gpus` through main(), with exact exit codes."""

from __future__ import annotations

import json

import numpy as np
import pytest

import traces
from placement.gpu import gpu_names
from expect import one_line
from tracemaker import vecadd

NINE = ["a100", "c2050", "fx5600", "gtx280", "gtx680", "h100", "k40", "k80", "v100"]


@pytest.fixture
def trace_path(tmp_path):
    cols, info = vecadd(ctas=3, warps_per_block=2, mask=0x0000FFFF)
    path = tmp_path / "t.parquet"
    traces.write(path, cols, info)
    return path


def test_info_json(run_cli, trace_path):
    code, out, err = run_cli("info", trace_path, "--json")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert d["kernel"] == "vecadd" and d["grid"] == [3, 1, 1] and d["block"] == [64, 1, 1]
    assert d["rows"] == 18 and d["warps"] == 6
    assert d["rows_per_op"] == {"load": 12, "store": 6}
    assert [o["name"] for o in d["objects"]] == ["A", "B", "C"]
    for o in d["objects"]:
        assert set(o) >= {"name", "space", "base", "size", "written"}
        # 6 warps x 16 active lanes x 4 bytes, each byte once
        assert o["bytes_touched"] == 6 * 16 * 4
        assert o["accesses"] == {"global": 6}
        assert o["size"] == 6 * 32 * 4
    assert [o["written"] for o in d["objects"]] == [False, False, True]
    assert d["instructions"]["executed"] == 60 and d["instructions"]["warps"] == 6


def test_info_text(run_cli, trace_path):
    code, out, err = run_cli("info", trace_path)
    assert code == 0
    assert "18 warp-level memory instructions from 6 warps" in out
    assert "0x30000" in out  # C's base


def test_info_counts_repeated_bytes_once(run_cli, tmp_path):
    cols, info = vecadd(ctas=1, warps_per_block=2)
    # Both warps read the same 32 elements of A: 128 distinct bytes, not 256.
    cols["addr"][3] = cols["addr"][0]
    traces.write(tmp_path / "r.parquet", cols, info)
    d = json.loads(run_cli("info", tmp_path / "r.parquet", "--json")[1])
    assert d["objects"][0]["bytes_touched"] == 128


@pytest.mark.parametrize("kind", ["truncated", "not parquet", "missing metadata key", "wrong column type", "seq"])
def test_info_bad_input_exit_2(run_cli, trace_path, tmp_path, kind):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from traces.schema import METADATA_KEY

    bad = tmp_path / "bad.parquet"
    cols, info = vecadd(ctas=3, warps_per_block=2, mask=0x0000FFFF)
    if kind == "truncated":
        bad.write_bytes(trace_path.read_bytes()[:-100])
        expect = "not a readable Parquet file (truncated or not Parquet)"
    elif kind == "not parquet":
        bad.write_text("hello\n")
        expect = "not a readable Parquet file"
    elif kind == "missing metadata key":
        d = json.loads(info.to_json())
        del d["instructions"]
        pq.write_table(traces.to_table(cols, info).replace_schema_metadata({METADATA_KEY: json.dumps(d).encode()}), bad)
        expect = "missing metadata key 'instructions'"
    elif kind == "wrong column type":
        t = traces.to_table(cols, info)
        i = t.schema.get_field_index("mask")
        pq.write_table(t.set_column(i, pa.field("mask", pa.int64()), pa.array(cols["mask"].astype(np.int64))), bad)
        expect = "column 'mask' has type int64, expected uint32"
    else:
        cols["seq"][4] = 0  # warp (0, 1): seq 0 after 0
        traces.write(bad, cols, info, validate=False)
        expect = "row 4: seq: seq 0 after 0 for (cta 0, warp 1); seq must increase per warp"
    code, out, err = run_cli("info", bad)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and str(bad) in err and expect in err


@pytest.mark.parametrize(
    "argv, words",
    [
        (["info"], "placement info: error: the following arguments are required: trace"),
        (["rank", "t.parquet", "--gpu", "k80", "--top", "abc"], "placement rank: error: argument --top: invalid int"),
        (["rank", "t.parquet", "--gpu", "k80", "--bogus"], "placement rank: error: unrecognized arguments: --bogus"),
        (["nope"], "placement: error: argument COMMAND: invalid choice: 'nope'"),
    ],
)
def test_usage_error_exit_2(run_cli, argv, words):
    """One line, as every other input error (was argparse's usage block, then the message)."""
    line = one_line(*run_cli(*argv), words)
    assert line.rstrip().endswith("--help` for usage)") and "usage:" not in line


def test_gpus_json_lists_the_catalog_and_the_nine(run_cli):
    code, out, err = run_cli("gpus", "--json")
    assert code == 0
    docs = json.loads(out)["gpus"]
    names = [g["name"] for g in docs]
    assert set(gpu_names()) <= set(names) and set(NINE) <= set(names)
    assert len(names) == len(set(names))
    assert {g["name"]: g["origin"] for g in docs}["k40"] == "bundled"  # the hand-written TOML wins
    assert {g["name"]: g["origin"] for g in docs}["rtx3080"] == "catalog"


def test_gpus_text_and_one(run_cli):
    code, out, _ = run_cli("gpus")
    assert code == 0 and "k80" in out and "kepler" in out
    code, out, _ = run_cli("gpus", "k80", "--json")
    d = json.loads(out)
    assert code == 0 and d["compute"]["sms"] == 13 and d["dram"]["row_conflict_ns"] == 1008.0


def test_unknown_gpu_exit_2(run_cli):
    code, out, err = run_cli("gpus", "nope")
    assert code == 2 and "unknown GPU 'nope'" in err and "placement gpus" in err
    code, out, err = run_cli("gpus", "rtx3800")
    assert code == 2 and "did you mean" in err and "rtx3080" in err


def test_bad_gpu_file_names_the_key(run_cli, tmp_path):
    from placement.gpu import gpu_dir

    text = (gpu_dir() / "k80.toml").read_text().replace("sms = 13", "sms = 0")
    (tmp_path / "bad.toml").write_text(text)
    code, out, err = run_cli("gpus", tmp_path / "bad.toml")
    assert code == 2 and "compute.sms: must be in [1, 4096], got 0" in err


@pytest.mark.parametrize("argv, level", [(["info", "x"], 0), (["-v", "info", "x"], 1), (["info", "x", "-v"], 1),
                                         (["info", "x", "-vv"], 2), (["-v", "info", "x", "-vv"], 2)])  # fmt: skip
def test_verbose_before_or_after_the_command(argv, level):
    """`placement evaluate T --gpu k80 -v` was refused ("unrecognized arguments: -v")."""
    from placement.cli import build_parser

    assert build_parser().parse_args(argv).verbose == level


@pytest.mark.parametrize(
    "argv, prefix",
    [
        (["model", "lemeire", "--runs", "no-such.csv", "--gpu", "k80"], "placement model lemeire: error: "),
        (["import", "nvbit", "no-such.log", "-o", "x.parquet"], "placement import nvbit: error: "),
        (["bench", "gen", "vecadd", "--size", "0", "-o", "x.parquet"], "placement bench gen: error: "),
        (["info", "no-such.parquet"], "placement info: error: "),
    ],
)
def test_an_input_error_begins_as_the_commands_usage_errors(run_cli, tmp_path, monkeypatch, argv, prefix):
    """A subcommand's input errors said "placement model: error: ..." where its usage errors said "placement model
    lemeire: error: ...": both now name the command as typed."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(*argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith(prefix), err
    code, _, err = run_cli(*argv, "--no-such-option")
    assert code == 2 and err.startswith(prefix.replace(": error: ", "")), err


@pytest.mark.parametrize(
    "edit, expect",
    [
        # C is stored to in every warp's row 2: its metadata says it is not written
        ("C unwritten", "row 2: op: a store on object 'C', whose metadata says it is not written (objects[2].written)"),
        (
            "atomic on B",
            "row 1: op: an atomic on object 'B', whose metadata says it is not written (objects[1].written)",
        ),
        ("store in constant", "row 2: op: a store in constant space, which kernels only read"),
        ("store in texture2d", "row 2: op: a store in texture2d space, which kernels only read"),
    ],
)
def test_rows_that_write_what_the_metadata_says_is_read_only_are_refused(run_cli, tmp_path, edit, expect):
    """Were read and ranked: a trace whose stored object said ``written: false`` had it placed in constant memory
    and texture (#1 ``a=C,b=T,v=T`` on the K80, "32 warp writes" in texture)."""
    import dataclasses

    cols, info = vecadd(ctas=2, warps_per_block=2)
    if edit == "C unwritten":
        objs = list(info.objects)
        objs[2] = dataclasses.replace(objs[2], written=False)
        info = dataclasses.replace(info, objects=tuple(objs))
    elif edit == "atomic on B":
        cols["op"][1] = 2
    else:
        cols["space"][2] = traces.SPACE_CODES[edit.split()[-1]]
    bad = tmp_path / "w.parquet"
    traces.write(bad, cols, info, validate=False)
    code, out, err = run_cli("info", bad)
    assert code == 2 and out == "" and err.count("\n") == 1 and f"{bad} {expect}" in err, err
