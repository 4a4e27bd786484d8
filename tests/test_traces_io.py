"""The trace format: round trip, streaming, and one test per contract violation."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import traces
from traces.schema import METADATA_KEY
from tracemaker import vecadd


@pytest.fixture
def trace_file(tmp_path):
    cols, info = vecadd(ctas=3, warps_per_block=2, mask=0x0000FFFF)
    path = tmp_path / "t.parquet"
    traces.write(path, cols, info)
    return path, cols, info


def test_round_trip_identical(trace_file):
    path, cols, info = trace_file
    t = traces.read(path)
    assert len(t) == 18
    for name, a in cols.items():
        got = getattr(t, name)
        assert got.dtype == a.dtype, name
        np.testing.assert_array_equal(got, a, err_msg=name)
    assert t.info == info
    assert t.addr.shape == (18, 32)


def test_addresses_are_byte_stream_split_and_plain_files_still_read(trace_file, tmp_path):
    # the writer's lane addresses are byte-stream split (traces.io.PARQUET_OPTIONS: pyarrow ignores an encoding
    # asked for a column name it does not have, so the name is checked here); a file with them plain, as
    # traces were written before, reads the same
    path, cols, info = trace_file
    meta = pq.ParquetFile(path).metadata
    encodings = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i).encodings
                 for i in range(meta.num_columns)}  # fmt: skip
    assert "BYTE_STREAM_SPLIT" in encodings[traces.io.ADDR_LEAF]
    assert all("BYTE_STREAM_SPLIT" not in e for c, e in encodings.items() if c != traces.io.ADDR_LEAF)
    plain = tmp_path / "plain.parquet"
    options = {k: v for k, v in traces.io.PARQUET_OPTIONS.items() if k != "column_encoding"}
    pq.write_table(traces.io.to_table(cols, info), plain, **options)
    assert "BYTE_STREAM_SPLIT" not in pq.ParquetFile(plain).metadata.row_group(0).column(8).encodings
    a, b = traces.read(path), traces.read(plain)
    assert all(np.array_equal(getattr(a, c), getattr(b, c)) for c in cols) and a.info == b.info == info


def test_n_ids_is_the_length_of_per_object_arrays(trace_file):
    _, _, info = trace_file
    obj = lambda i: traces.ObjectInfo(i, f"o{i}", "global", 0x1000 * (i + 1), 64)  # noqa: E731
    assert dataclasses.replace(info, objects=(obj(0), obj(5), obj(2))).n_ids == 6  # ids need not be dense
    assert dataclasses.replace(info, objects=()).n_ids == 0
    assert info.n_ids == max(o.id for o in info.objects) + 1


def test_addr_is_a_view_of_arrow_memory(trace_file):
    path, _, _ = trace_file
    t = traces.read(path)
    assert not t.addr.flags["OWNDATA"]  # no copy made when reading a single chunk


def test_iter_batches_concatenate_to_read(trace_file):
    path, cols, _ = trace_file
    batches = list(traces.iter_batches(path, rows=5))
    assert [b.start for b in batches] == [0, 5, 10, 15]
    assert [len(b) for b in batches] == [5, 5, 5, 3]
    np.testing.assert_array_equal(np.concatenate([b.addr for b in batches]), cols["addr"])
    np.testing.assert_array_equal(np.concatenate([b.seq for b in batches]), cols["seq"])


def test_columns_of_a_sliced_table_are_its_rows(trace_file):
    # the columns are views through DLPack and the lanes the list's values from the slice's
    # offset (traces.io._numpy_columns, which avoids Arrow's pandas and compute modules):
    # Arrow's own conversions give the same, read-only, values
    from traces.io import _numpy_columns

    path, cols, info = trace_file
    table = pq.read_table(path).slice(7, 6)
    t = _numpy_columns(str(path), table.combine_chunks(), 7, info)
    for name, a in cols.items():
        got = getattr(t, name)
        assert got.dtype == a.dtype and not got.flags.writeable, name
        np.testing.assert_array_equal(got, a[7:13], err_msg=name)
    np.testing.assert_array_equal(t.addr.ravel(), table.column("addr").combine_chunks().flatten().to_numpy())


def test_empty_trace_round_trips(tmp_path):
    cols, info = vecadd(ctas=1, warps_per_block=1)
    empty = {k: v[:0] for k, v in cols.items()}
    traces.write(tmp_path / "e.parquet", empty, info)
    t = traces.read(tmp_path / "e.parquet")
    assert len(t) == 0 and t.addr.shape == (0, 32)
    assert list(traces.iter_batches(tmp_path / "e.parquet")) == []


def test_write_is_atomic_on_failure(tmp_path):
    cols, info = vecadd()
    cols["seq"] = cols["seq"][::-1].copy()  # invalid: seq decreases
    with pytest.raises(traces.TraceError):
        traces.write(tmp_path / "bad.parquet", cols, info)
    assert list(tmp_path.iterdir()) == []  # nothing, not even a temporary file


# --- one test per violation: each names the file, the row and the field ------------


def test_truncated_file(trace_file, tmp_path):
    path, _, _ = trace_file
    data = path.read_bytes()
    bad = tmp_path / "trunc.parquet"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(traces.TraceError, match=r"trunc\.parquet: not a readable Parquet file \(truncated"):
        traces.read(bad)


def test_not_parquet(tmp_path):
    bad = tmp_path / "text.parquet"
    bad.write_text("cta,warp\n1,2\n")
    with pytest.raises(traces.TraceError, match="not a readable Parquet file"):
        traces.read(bad)


def test_missing_file(tmp_path):
    with pytest.raises(traces.TraceError, match="no such file"):
        traces.read(tmp_path / "nope.parquet")


def test_missing_metadata_key(trace_file, tmp_path):
    path, cols, info = trace_file
    d = json.loads(info.to_json())
    del d["grid"]
    bad = tmp_path / "nogrid.parquet"
    table = traces.to_table(cols, info).replace_schema_metadata({METADATA_KEY: json.dumps(d).encode()})
    pq.write_table(table, bad)
    with pytest.raises(traces.TraceError, match=r"nogrid\.parquet: grid: missing metadata key 'grid'"):
        traces.read(bad)


def test_no_metadata_at_all(trace_file, tmp_path):
    path, cols, info = trace_file
    bad = tmp_path / "plain.parquet"
    pq.write_table(traces.to_table(cols, info).replace_schema_metadata(None), bad)
    with pytest.raises(traces.TraceError, match="missing schema metadata key 'placement.kernel'"):
        traces.read(bad)


def test_object_metadata_wrong_type(trace_file, tmp_path):
    path, cols, info = trace_file
    d = json.loads(info.to_json())
    d["objects"][1]["size"] = "big"
    bad = tmp_path / "objsize.parquet"
    pq.write_table(traces.to_table(cols, info).replace_schema_metadata({METADATA_KEY: json.dumps(d).encode()}), bad)
    with pytest.raises(traces.TraceError, match=r"objects\[1\]\.size' must be int, got str"):
        traces.read(bad)


def test_wrong_column_type(trace_file, tmp_path):
    path, cols, info = trace_file
    table = traces.to_table(cols, info)
    i = table.schema.get_field_index("seq")
    table = table.set_column(i, pa.field("seq", pa.int32()), pa.array(cols["seq"].astype(np.int32)))
    bad = tmp_path / "seq32.parquet"
    pq.write_table(table, bad)
    with pytest.raises(traces.TraceError, match=r"seq32\.parquet: seq: column 'seq' has type int32, expected int64"):
        traces.read(bad)


def test_missing_column(trace_file, tmp_path):
    path, cols, info = trace_file
    bad = tmp_path / "nomask.parquet"
    pq.write_table(traces.to_table(cols, info).drop(["mask"]), bad)
    with pytest.raises(traces.TraceError, match="missing column 'mask'"):
        traces.read(bad)


def _bad_rows(tmp_path, mutate, validate_write=False):
    cols, info = vecadd(ctas=3, warps_per_block=2, mask=0x0000FFFF)
    mutate(cols)
    path = tmp_path / "bad.parquet"
    traces.write(path, cols, info, validate=validate_write)
    return path


def test_non_increasing_seq(tmp_path):
    def m(c):
        c["seq"][7] = 0  # row 7 is warp 2's second access: seq 0 after 0

    path = _bad_rows(tmp_path, m)
    with pytest.raises(traces.TraceError, match=r"bad\.parquet row 7: seq: seq 0 after 0 for \(cta 1, warp 0\)"):
        traces.read(path)
    # Streaming finds the same row, also across a batch boundary.
    with pytest.raises(traces.TraceError, match="row 7: seq"):
        list(traces.iter_batches(path, rows=7))


def test_unknown_object_id(tmp_path):
    def m(c):
        c["obj"][4] = 9

    with pytest.raises(
        traces.TraceError, match=r"row 4: obj: obj 9 is not an object id in the metadata \(ids: 0, 1, 2"
    ):
        traces.read(_bad_rows(tmp_path, m))


def test_bad_width(tmp_path):
    def m(c):
        c["width"][2] = 3

    with pytest.raises(traces.TraceError, match="row 2: width: width 3 is not one of 1, 2, 4, 8, 16"):
        traces.read(_bad_rows(tmp_path, m))


def test_address_on_inactive_lane(tmp_path):
    def m(c):
        c["addr"][5, 20] = 0x10000  # mask 0x0000ffff: lane 20 is inactive

    with pytest.raises(traces.TraceError, match="row 5: addr: lane 20 is inactive"):
        traces.read(_bad_rows(tmp_path, m))


def test_address_outside_its_object(tmp_path):
    def m(c):
        c["addr"][3, 1] = 0x10000 - 4  # just below A's base

    with pytest.raises(traces.TraceError, match=r"row 3: addr: lane 1 address 0xfffc \(\+4 B\) is outside object 'A'"):
        traces.read(_bad_rows(tmp_path, m))


@pytest.mark.parametrize("addr", [(1 << 64) - 4, (1 << 64) - 16, (1 << 64) - 1])
def test_an_address_near_two_to_the_64_is_outside_its_object(tmp_path, addr):
    """addr + width wrapped past 2^64 in the check (uint64), so these passed as inside A."""

    def m(c):
        c["addr"][3, 1] = addr

    with pytest.raises(traces.TraceError, match=rf"row 3: addr: lane 1 address {addr:#x} \(\+4 B\) is outside"):
        traces.read(_bad_rows(tmp_path, m))


def test_warp_outside_block(tmp_path):
    def m(c):
        c["warp"][0] = 2  # the block has 2 warps: 0 and 1

    with pytest.raises(traces.TraceError, match="row 0: warp: warp 2 outside the block's 2 warps"):
        traces.read(_bad_rows(tmp_path, m))


def test_write_refuses_wrong_dtype(tmp_path):
    cols, info = vecadd()
    cols["seq"] = cols["seq"].astype(np.float64)
    with pytest.raises(traces.TraceError, match="column 'seq' has dtype float64, expected int64"):
        traces.write(tmp_path / "x.parquet", cols, info)


def test_write_refuses_wrong_addr_shape(tmp_path):
    cols, info = vecadd()
    cols["addr"] = cols["addr"][:, :16]
    with pytest.raises(traces.TraceError, match=r"must have shape \(n, 32\)"):
        traces.write(tmp_path / "x.parquet", cols, info)


def _shuffled_vecadd(ctas: int, wpb: int, seed: int = 3):
    """tracemaker's vecadd with its rows interleaved across warps (each warp's rows stay in seq order)."""
    cols, info = vecadd(ctas, wpb)
    rng = np.random.default_rng(seed)
    key = rng.random(len(cols["cta"]))
    gw = cols["cta"].astype(np.int64) * wpb + cols["warp"]
    # a random interleaving that keeps each warp's rows in order: sort by (random time of the warp's k-th row)
    key = np.sort(key.reshape(-1, 3), axis=1).reshape(-1)
    order = np.argsort(key, kind="stable")
    assert not np.all(np.diff(gw[order]) >= 0)  # warps interleave
    return {k: v[order] for k, v in cols.items()}, info


def _verdicts(cols, info, rows: int, dense: bool, monkeypatch) -> list[str]:
    """Check the columns in batches of ``rows`` with one checker; the messages (or 'ok')."""
    from traces import io

    monkeypatch.setattr(io._Checker, "DENSE_WARPS", 1 << 24 if dense else 1)
    monkeypatch.setattr(io._Checker, "MIN_TABLE", 2)  # the hash table grows many times
    checker = io._Checker("t", info, 0)
    assert checker.dense is dense
    n = len(cols["cta"])
    try:
        for lo in range(0, n, rows):
            checker.check(traces.Trace(**{k: v[lo : lo + rows] for k, v in cols.items()}, info=info, start=lo))
    except traces.TraceError as exc:
        return [str(exc)]
    return ["ok"]


@pytest.mark.parametrize("rows", [1, 7, 500, 10_000])
def test_warp_table_gives_the_dense_verdicts(rows, monkeypatch):
    """Above the dense size the seq state lives in a hash table of the warps present (linear in the rows; the
    sorted key array it replaced was re-merged per batch). Same verdicts as the dense table: a good trace of
    1,200 interleaved warps passes; a repeated seq, a seq going back, a warp outside the block and a block
    outside the grid are reported at the same row, across batch boundaries and table growths."""
    cols, info = _shuffled_vecadd(300, 4)
    gw = cols["cta"].astype(np.int64) * 4 + cols["warp"]
    assert _verdicts(cols, info, rows, True, monkeypatch) == _verdicts(cols, info, rows, False, monkeypatch) == ["ok"]
    last = np.flatnonzero(gw == gw[-1])  # the last row's warp: its earlier rows are far back
    cases = {
        "repeat": ("seq", last[-1], cols["seq"][last[-2]]),
        "back": ("seq", last[-1], cols["seq"][last[-2]] - 1),
        "warp": ("warp", 2000, 4),
        "cta": ("cta", 2500, 300),
    }
    for name, (col, row, value) in cases.items():
        bad = {k: v.copy() for k, v in cols.items()}
        bad[col][row] = value
        dense = _verdicts(bad, info, rows, True, monkeypatch)
        assert dense == _verdicts(bad, info, rows, False, monkeypatch), name
        assert f"t row {row}: {col}: " in dense[0], (name, dense)


def test_dense_seq_table_is_bounded_by_the_rows(monkeypatch):
    """A grid above DENSE_WARPS warps gets the dense table when the rows number at least its warps (8 bytes a row)."""
    from traces import io

    monkeypatch.setattr(io._Checker, "DENSE_WARPS", 16)
    cols, info = vecadd(8, 2)
    assert io._Checker("t", info, 0).dense
    big = dataclasses.replace(info, grid=(16, 1, 1))  # 32 warps
    assert not io._Checker("t", big, 31).dense
    assert io._Checker("t", big, 32).dense


def test_output_that_cannot_be_written_is_a_clean_error(tmp_path, run_cli):
    """A folder that cannot be made (a file stands in its place) and a target that is a folder:
    one line naming the path, exit 2, and no temporary file left (``traces.atomic``)."""
    (tmp_path / "afile").write_text("x")
    src = tmp_path / "t.parquet"
    cols, info = vecadd()
    traces.write(src, cols, info)
    with pytest.raises(traces.InputError, match=r"afile/out\.parquet: cannot write there \("):
        traces.write(tmp_path / "afile" / "out.parquet", cols, info)
    (tmp_path / "adir.arrow").mkdir()
    code, out, err = run_cli("convert", src, "-o", tmp_path / "adir.arrow")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "adir.arrow: is a folder; give the file to write" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir.arrow", "afile", "t.parquet"]
    assert list((tmp_path / "adir.arrow").iterdir()) == []


@pytest.mark.parametrize("name", ["t.parquet", "t.arrow"])
def test_rows_checked_while_written_give_the_same_file_and_errors(tmp_path, monkeypatch, name):
    # from traces.io.OVERLAP_ROWS rows the rows are checked in a thread while the file is written: made to happen
    # here; the same bytes, and a bad row is the same error with no file left, even where the output cannot be
    # written either (the rows were checked before the writing: their error came first)
    import traces.io as tio

    cols, info = vecadd(ctas=3, warps_per_block=2, mask=0x0000FFFF)
    traces.write(tmp_path / name, cols, info)
    first = (tmp_path / name).read_bytes()
    monkeypatch.setattr(tio, "OVERLAP_ROWS", 0)
    (tmp_path / "again").mkdir()
    traces.write(tmp_path / "again" / name, cols, info)
    assert (tmp_path / "again" / name).read_bytes() == first
    bad = {k: v.copy() for k, v in cols.items()}
    bad["addr"][5, 20] = 0x10000  # mask 0x0000ffff: lane 20 is inactive
    (tmp_path / "bad").mkdir()
    (tmp_path / "afile").write_text("x")
    for out in (tmp_path / "bad" / name, tmp_path / "afile" / name):
        with pytest.raises(traces.TraceError, match=f"{name} row 5: addr: lane 20 is inactive"):
            traces.write(out, bad, info)
    assert list((tmp_path / "bad").iterdir()) == []  # nothing, not even a temporary file
    with pytest.raises(traces.InputError, match=r"afile/t\.\w+: cannot write there \("):  # good rows: the folder's
        traces.write(tmp_path / "afile" / name, cols, info)


@pytest.mark.parametrize("name", ["t.parquet", "t.arrow"])
def test_write_parts_reads_back_as_the_whole_and_names_a_bad_row_by_its_place_in_the_file(tmp_path, name):
    # traces.write_parts: the parts (any split) read back as the whole written at once; the checker's state (each
    # warp's last seq) goes on across the parts; a bad row in a later part is named by its row in the file, and a
    # count other than the one promised is an error; no file is left by either
    cols, info = vecadd(ctas=3, warps_per_block=2, mask=0x0000FFFF)
    cuts = [0, 1, 7, 7, 18]
    parts = [{k: v[a:b] for k, v in cols.items()} for a, b in zip(cuts, cuts[1:])]
    assert traces.write_parts(tmp_path / name, iter(parts), info, 18) == 18
    t = traces.read(tmp_path / name)
    assert all(np.array_equal(getattr(t, k), v) for k, v in cols.items()) and t.info == info
    bad = {k: v.copy() for k, v in cols.items()}
    bad["addr"][9, 20] = 0x10000  # mask 0x0000ffff: lane 20 is inactive
    (tmp_path / "bad").mkdir()
    with pytest.raises(traces.TraceError, match=f"{name} row 9: addr: lane 20 is inactive"):
        traces.write_parts(
            tmp_path / "bad" / name, ({k: v[a:b] for k, v in bad.items()} for a, b in zip(cuts, cuts[1:])), info, 18
        )
    back = {k: v.copy() for k, v in cols.items()}
    key = cols["cta"].astype(np.int64) * 2 + cols["warp"]
    r = next(r for r in range(7, 18) if key[r] in key[:7])  # a warp's row in the last part, its previous before it
    p = max(q for q in range(r) if key[q] == key[r])
    back["seq"][r] = cols["seq"][p]  # not after its previous
    with pytest.raises(traces.TraceError, match=f"{name} row {r}: seq: seq {cols['seq'][p]} after {cols['seq'][p]} "):
        traces.write_parts(
            tmp_path / "bad" / name, ({k: v[a:b] for k, v in back.items()} for a, b in zip(cuts, cuts[1:])), info, 18
        )
    with pytest.raises(traces.TraceError, match="17 rows written where the trace was to hold 18"):
        traces.write_parts(
            tmp_path / "bad" / name, iter(parts[:-1] + [{k: v[7:17] for k, v in cols.items()}]), info, 18
        )
    assert list((tmp_path / "bad").iterdir()) == []


def test_writing_and_reading_a_trace_imports_no_pandas(tmp_path):
    # pa.array of a numpy array imports pandas (0.2 s of every trace-writing command's start): to_table builds the
    # Arrow arrays from the columns' buffers instead; a column of another dtype still gets pa.array's checked cast
    import os
    import subprocess
    import sys

    code = (
        "import sys, numpy as np, traces; from tracemaker import vecadd; cols, info = vecadd(ctas=2, warps_per_block=2); "
        f"traces.write({str(tmp_path / 't.arrow')!r}, cols, info); traces.read({str(tmp_path / 't.arrow')!r}); "
        "print('pandas' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"
    cols, info = vecadd(ctas=2, warps_per_block=2)
    wide = dict(cols, op=cols["op"].astype(np.int64) + 300)  # int64 beyond int8: refused, not wrapped
    with pytest.raises(pa.ArrowInvalid):
        traces.to_table(wide, info)
