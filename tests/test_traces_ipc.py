"""Traces in Arrow IPC files (``traces.ipcfile``): the same contract as Parquet, another container."""

from __future__ import annotations

import json
import mmap
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import traces
from traces.ipcfile import MAGIC
from traces.schema import METADATA_KEY
from tracemaker import vecadd

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def both(tmp_path):
    """The same 18-row trace as a Parquet file and as an IPC file of record batches of 4 rows."""
    cols, info = vecadd(ctas=3, warps_per_block=2, mask=0x0000FFFF)
    traces.write(tmp_path / "t.parquet", cols, info)
    traces.atomic_write_table(traces.to_table(cols, info), tmp_path / "t.arrow", 4)
    return tmp_path / "t.parquet", tmp_path / "t.arrow", cols, info


def test_suffix_picks_the_container_on_write(both):
    pq_path, ipc_path, _, _ = both
    assert ipc_path.read_bytes()[:6] == MAGIC == b"ARROW1"
    assert pq_path.read_bytes()[:4] == b"PAR1"
    # the file holds the columns as they lie in memory: at least 18 rows x 32 lanes x 8 bytes
    assert ipc_path.stat().st_size > 18 * 32 * 8
    assert pa.ipc.open_file(ipc_path).num_record_batches == 5  # 4 + 4 + 4 + 4 + 2 rows


def test_ipc_reads_as_the_parquet_file(both):
    pq_path, ipc_path, cols, info = both
    a, b = traces.read(pq_path), traces.read(ipc_path)
    assert b.info == a.info == info
    for name, col in cols.items():
        assert getattr(b, name).dtype == col.dtype, name
        np.testing.assert_array_equal(getattr(b, name), col, err_msg=name)
    assert traces.num_rows(ipc_path) == traces.num_rows(pq_path) == 18
    assert traces.read_info(ipc_path) == info


def test_container_is_read_from_the_content_not_the_name(both, tmp_path):
    pq_path, ipc_path, cols, _ = both
    shutil.copy(pq_path, tmp_path / "parquet-named.arrow")
    shutil.copy(ipc_path, tmp_path / "ipc-named.parquet")
    for p in ("parquet-named.arrow", "ipc-named.parquet"):
        np.testing.assert_array_equal(traces.read(tmp_path / p).addr, cols["addr"], err_msg=p)


def test_batches_are_slices_of_the_record_batches(both):
    """Worked by hand: record batches of 4, 4, 4, 4, 2 rows; at most 3 rows a batch cuts each
    4 into 3 + 1; at most 10 yields them as they are."""
    _, ipc_path, cols, _ = both
    got = list(traces.iter_batches(ipc_path, rows=3))
    assert [len(b) for b in got] == [3, 1, 3, 1, 3, 1, 3, 1, 2]
    assert [b.start for b in got] == [0, 3, 4, 7, 8, 11, 12, 15, 16]
    np.testing.assert_array_equal(np.concatenate([b.seq for b in got]), cols["seq"])
    assert [len(b) for b in traces.iter_batches(ipc_path, rows=10)] == [4, 4, 4, 4, 2]


def test_arrays_stay_valid_after_their_pages_are_dropped(tmp_path):
    """The reader drops each batch's pages once past it; what the caller kept must read the same."""
    cols, info = vecadd(ctas=200, warps_per_block=8)  # 4,800 rows, 1.2 MB of addresses
    path = tmp_path / "big.arrow"
    traces.atomic_write_table(traces.to_table(cols, info), path, 500)
    kept = list(traces.iter_batches(path, rows=500))
    assert len(kept) == 10
    for name, col in cols.items():
        np.testing.assert_array_equal(np.concatenate([getattr(b, name) for b in kept]), col, err_msg=name)
    whole = traces.read(path)  # several record batches: decoded batch by batch into owned columns
    assert whole.addr.flags["OWNDATA"]
    np.testing.assert_array_equal(whole.addr, cols["addr"])


def test_each_batch_is_released_once_read_past(tmp_path):
    """The pages dropped after each record batch cover its buffers (so a streamed read holds about
    one batch): by hand, 10 batches of 480 rows, each range page-aligned and past the previous one."""
    from traces.ipcfile import IpcTraceFile

    cols, info = vecadd(ctas=200, warps_per_block=8)
    path = tmp_path / "big.arrow"
    traces.atomic_write_table(traces.to_table(cols, info), path, 480)
    f = IpcTraceFile(str(path))
    calls = []

    class Spy:  # the map's madvise, recorded (mmap's own methods cannot be patched)
        def __init__(self, m):
            self.m = m

        def __len__(self):
            return len(self.m)

        def madvise(self, flag, lo, n):
            calls.append((flag, lo, n))
            self.m.madvise(flag, lo, n)

    f._map = Spy(f._map)
    base = f._buffer.address
    ranges = []
    for i, b in enumerate(f.iter_batches(200)):
        assert b.num_rows == (200, 200, 80)[i % 3]
    for i in range(10):
        addr = f._reader.get_batch(i).column("addr").values.buffers()[1]
        ranges.append((addr.address - base, addr.address - base + addr.size))
    assert len(calls) == 10 and all(flag == mmap.MADV_DONTNEED for flag, _, _ in calls)
    for (_, lo, n), (a_lo, a_hi) in zip(calls, ranges):
        assert lo % mmap.PAGESIZE == 0 and lo <= a_lo and lo + n >= a_hi  # the batch's lanes are dropped
        assert a_hi - a_lo == 480 * 32 * 8
    assert all(calls[i + 1][1] >= calls[i][1] + calls[i][2] - mmap.PAGESIZE for i in range(9))


def test_truncated_ipc_file(both, tmp_path):
    _, ipc_path, _, _ = both
    data = ipc_path.read_bytes()
    for cut in (7, len(data) // 2, len(data) - 1):
        bad = tmp_path / "trunc.arrow"
        bad.write_bytes(data[:cut])
        with pytest.raises(traces.TraceError, match=r"trunc\.arrow: not a readable Arrow IPC file \(truncated"):
            traces.read(bad)


def test_contract_violations_name_the_row_and_field(tmp_path):
    cols, info = vecadd(ctas=2, warps_per_block=2)
    cols["seq"][4] = -1  # row 4 is warp 1's second access (rows 3-5 have seq 0, 4, 8): now before its first
    path = tmp_path / "bad.arrow"
    traces.atomic_write_table(traces.to_table(cols, info), path, 3)
    with pytest.raises(traces.TraceError, match=r"bad\.arrow row 4: seq: seq -1 after 0 for \(cta 0, warp 1\)"):
        traces.read(path)
    with pytest.raises(traces.TraceError, match=r"bad\.arrow row 4: seq"):
        for _ in traces.iter_batches(path, rows=2):
            pass


def test_metadata_is_required(tmp_path):
    cols, info = vecadd()
    table = traces.to_table(cols, info).replace_schema_metadata({})
    path = tmp_path / "nometa.arrow"
    with pa.ipc.new_file(path, table.schema) as w:
        w.write_table(table)
    with pytest.raises(traces.TraceError, match=f"missing schema metadata key '{METADATA_KEY.decode()}'"):
        traces.read(path)


def test_compressed_ipc_buffers_are_read(both, tmp_path):
    pq_path, _, cols, _ = both
    table = pa.ipc.open_file(pa.memory_map(str(both[1]))).read_all()
    for codec in ("lz4", "zstd"):
        path = tmp_path / f"{codec}.arrow"
        with pa.ipc.new_file(path, table.schema, options=pa.ipc.IpcWriteOptions(compression=codec)) as w:
            w.write_table(table, max_chunksize=7)
        np.testing.assert_array_equal(np.concatenate([b.addr for b in traces.iter_batches(path, rows=5)]), cols["addr"])


def test_rank_of_an_ipc_trace_is_the_parquet_ranking(tmp_path, monkeypatch):
    from placement import api, evaluate_stream

    src = ROOT / "configs" / "examples" / "vecadd.parquet"
    t = traces.read(src)
    dst = tmp_path / "vecadd.arrow"
    traces.write(dst, t, t.info)
    a, b = api.rank(src, "k80", top=5), api.rank(dst, "k80", top=5)
    assert [p.label for p in b.ranking] == [p.label for p in a.ranking]
    assert [p.time_ns for p in b.ranking] == [p.time_ns for p in a.ranking]
    # streamed, a few rows a batch, the IPC file gives the whole-trace result
    monkeypatch.setattr(evaluate_stream, "STREAM_ROWS", 1000)
    whole = api.evaluate(src, "k80", "a=T", stream="no")
    streamed = api.evaluate(dst, "k80", "a=T", stream="yes")
    assert streamed.time_ns == pytest.approx(whole.time_ns, rel=1e-9)


def test_cli_info_and_bad_ipc_file(both, tmp_path, run_cli):
    _, ipc_path, _, _ = both
    code, out, _ = run_cli("info", ipc_path, "--json")
    d = json.loads(out)
    assert code == 0 and d["rows"] == 18 and d["container"] == "arrow-ipc"
    assert d["file_bytes"] == ipc_path.stat().st_size
    code, out, _ = run_cli("info", both[0])
    assert code == 0 and f"file          parquet, {both[0].stat().st_size:,} bytes" in out
    bad = tmp_path / "cut.arrow"
    bad.write_bytes(ipc_path.read_bytes()[:100])
    code, out, err = run_cli("rank", bad, "--gpu", "k80")
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "cut.arrow" in err and "not a readable Arrow IPC file" in err


def test_convert_round_trips_both_ways(both, tmp_path, run_cli):
    pq_path, _, cols, info = both
    code, out, err = run_cli("convert", pq_path, "-o", tmp_path / "c.arrow", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["rows"], doc["container"], doc["kernel"]) == (18, "arrow-ipc", "vecadd")
    assert (tmp_path / "c.arrow").read_bytes()[:6] == MAGIC
    n, got_info = traces.convert(tmp_path / "c.arrow", tmp_path / "back.parquet")
    assert n == 18 and got_info == info
    assert (tmp_path / "back.parquet").read_bytes()[:4] == b"PAR1"
    back = traces.read(tmp_path / "back.parquet")
    for name, col in cols.items():
        np.testing.assert_array_equal(getattr(back, name), col, err_msg=name)
    assert back.info == info


def test_convert_of_a_bad_trace_writes_nothing(tmp_path, run_cli):
    cols, info = vecadd(ctas=2, warps_per_block=2)
    cols["obj"][7] = 9  # no object 9
    traces.write(tmp_path / "bad.parquet", cols, info, validate=False)
    code, out, err = run_cli("convert", tmp_path / "bad.parquet", "-o", tmp_path / "out.arrow")
    assert code == 2 and out == ""
    assert "bad.parquet row 7: obj" in err and err.strip().count("\n") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.parquet"]  # no output, no temporary


def test_other_arrow_layouts_are_named(both, tmp_path):
    """An IPC stream (no footer) and a Feather v1 file get a message that says what they are."""
    _, ipc_path, _, _ = both
    table = pa.ipc.open_file(ipc_path).read_all()
    stream = tmp_path / "s.arrows"
    with pa.ipc.new_stream(stream, table.schema) as w:
        w.write_table(table)
    with pytest.raises(traces.TraceError, match=r"s\.arrows: an Arrow IPC stream, not an IPC file: write traces with"):
        traces.read(stream)
    v1 = tmp_path / "v1.feather"
    v1.write_bytes(b"FEA1" + bytes(60))
    with pytest.raises(traces.TraceError, match=r"v1\.feather: a Feather version 1 file"):
        traces.read(v1)
