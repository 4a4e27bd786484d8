"""traces.sanitizer's reader and decoder (numba kernels) against the numpy code they replaced
(tests/_sanitizer_reference.py): the same columns, dtypes, metadata and record numbers, and the same
one-line errors, on record files built here (worked by hand, vecadd-like, random, corrupted)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import _sanitizer_reference as ref
from test_sanitizer_records import ALLOCS, SHARED_BASE, VALID, _accesses, _launch
from traces.errors import InputError
from traces.importers.objects import ObjectSpec
from traces.sanitizer import decode as decode_module
from traces.sanitizer.decode import decode
from traces.sanitizer.records import (
    ACCESS_DTYPE,
    F_ATOMIC,
    F_READ,
    F_WRITE,
    LAUNCH_DTYPE,
    LaunchRecord,
    encode,
    read_records,
)

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _outcome(fn, *args, **kw):
    """What ``fn`` returns, or the type and one-line message of what it raised."""
    try:
        return fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - the error itself is compared
        return (type(exc), str(exc))


def _same_records(a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):
        assert a == b
        return
    names = [f.name for f in dataclasses.fields(a) if f.name not in ("words", "spans", "shift", "mapping")]  # where
    for name in [*names, "accesses", "access_records"]:  # what they hold
        x, y = getattr(a, name), getattr(b, name)
        if name == "launch":
            for g in dataclasses.fields(x):
                u, v = getattr(x, g.name), getattr(y, g.name)
                assert (np.array_equal(u, v) and u.dtype == v.dtype) if isinstance(u, np.ndarray) else u == v, g.name
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name
        else:
            assert x == y, name


def _same_decode(a, b):
    if isinstance(a, tuple) and isinstance(a[0], type) or isinstance(b, tuple) and isinstance(b[0], type):
        assert a == b
        return
    (cols, info), (rcols, rinfo) = a, b
    assert list(cols) == list(rcols)
    for name in cols:
        x, y = cols[name], rcols[name]
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name
    assert info == rinfo


def _check_file(path, mapped=False, chunk_rows=None, **options):
    """The live reader and decoder (the decoder's passes ``chunk_rows`` records at a time where given) against the
    reference."""
    rf = _outcome(read_records, path, mapped=mapped)
    _same_records(rf, _outcome(ref.read_records, path))
    if not isinstance(rf, tuple):
        live = dict(options, chunk_rows=chunk_rows) if chunk_rows else options
        _same_decode(_outcome(decode, rf, **live), _outcome(ref.decode, ref.read_records(path), **options))


@pytest.mark.parametrize(
    "options",
    [{}, {"ctas": "0-1"}, {"max_rows": 0}, {"max_rows": 6}, {"max_rows": 13}, {"max_rows": 100},
     {"objects": (ObjectSpec("inputs", 0x7F0000000000, 0x2000, "global", 4),)}],
)  # fmt: skip
@pytest.mark.parametrize("chunk_rows", [1, 5, 4096])
@pytest.mark.parametrize("kw", [{}, {"params": False}, {"shared_base": 0}])
@pytest.mark.parametrize("mapped", [False, True])
def test_worked_by_hand(tmp_path, options, chunk_rows, kw, mapped):
    acc = _accesses()
    if kw.get("shared_base") == 0:
        acc["addr"][12] -= np.uint64(SHARED_BASE)
    path = tmp_path / "rec.bin"
    path.write_bytes(encode(_launch(**kw), ALLOCS, acc, chunk_rows=chunk_rows))
    _check_file(path, mapped, **options)


@pytest.mark.parametrize("threads", [1, 2])
def test_seq_sorted_by_warp_for_a_grid_of_more_warps_than_rows(tmp_path, monkeypatch, threads):
    # a grid above max(2^24, rows) warps sorts the rows by warp instead of counting per warp: made to happen here
    monkeypatch.setattr(decode_module, "DENSE_WARPS", 0)
    monkeypatch.setattr(decode_module, "PARALLEL_ROWS", 1)
    monkeypatch.setattr(decode_module, "_threads", lambda: threads)
    path = tmp_path / "rec.bin"
    big = dataclasses.replace(_launch(), grid=(64, 1, 1))  # 128 warps for 15 rows
    path.write_bytes(encode(big, ALLOCS, _accesses()))
    _check_file(path)


BASE = 0x7F0000000000


@st.composite
def record_files(draw):
    """A random launch's record file: mostly valid rows, some fields out of range, rows without lanes,
    shared rows near the window's ends, allocations that rows may miss or straddle."""
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.sampled_from([300, 37, 2, 1, 0]))
    bad = draw(st.sampled_from([0.0, 0.0, 0.0, 0.002, 0.02]))
    bad_shared = draw(st.booleans())
    rng = np.random.default_rng(seed)
    grid, block = (int(rng.integers(1, 5)), int(rng.integers(1, 3)), 1), (int(rng.choice([32, 64, 96, 100])), 1, 1)
    nctas, wpb = grid[0] * grid[1], -(-block[0] // 32)
    shared_base = int(rng.choice([0, SHARED_BASE]))
    acc = np.zeros(n, ACCESS_DTYPE)
    acc["cta"] = rng.integers(0, nctas, n)
    acc["warp"] = rng.integers(0, wpb, n)
    acc["pc"] = 16 * rng.integers(0, 8, n) + np.where(rng.random(n) < 0.05, 2**31, 0)  # int32 in the trace: wraps
    acc["flags"] = rng.choice([F_READ, F_WRITE, F_ATOMIC | F_READ | F_WRITE, F_ATOMIC | F_WRITE], n)
    acc["space"] = rng.choice([0, 0, 0, 1, 2], n)
    acc["width"] = rng.choice([1, 2, 4, 8, 16], n)
    acc["mask"] = np.where(rng.random(n) < 0.1, 0, rng.choice([0xFFFFFFFF, 1, 0x80000001, 0xFFFF0000], n))
    elem = np.arange(32, dtype=np.uint64)
    first = np.uint64(BASE) + rng.integers(0, 3, n).astype(np.uint64) * np.uint64(0x10000)
    first += rng.integers(0, 0x8000, n).astype(np.uint64)
    addr = first[:, None] + elem[None, :] * acc["width"].astype(np.uint64)[:, None]
    sh = acc["space"] == 2
    addr[sh] = np.uint64(shared_base) + rng.integers(0, 0x1000, (int(sh.sum()), 32)).astype(np.uint64)
    if draw(st.booleans()):  # the shared rows of each pc repeat a few rows (tiles read by every warp): counted once
        starts = rng.choice([0, 0x40, 0x80, 0x400, 0x2000], (8, 3))  # each pc's row starts, a long gap among them
        pick = starts[(acc["pc"][sh] // 16) % 8, rng.integers(0, 3, int(sh.sum()))].astype(np.uint64)
        addr[sh] = np.uint64(shared_base) + pick[:, None] + 4 * elem[None, :]
    loc = acc["space"] == 1
    addr[loc] = np.uint64(0xFFFE00) + 4 * elem
    lanes = ((acc["mask"][:, None] >> elem.astype(np.uint32)) & 1).astype(bool)
    acc["addr"] = np.where(lanes, addr, 0)
    for field, values in (("space", [3, 7]), ("width", [0, 3, 32]), ("flags", [0, 3, 5, 8]),
                          ("cta", [nctas, 2**31, 2**32 - 1]), ("warp", [wpb, 2**31 + 5])):  # fmt: skip
        hit = rng.random(n) < bad
        acc[field][hit] = rng.choice(values, int(hit.sum()))
    if n and bad_shared:  # a shared lane below the base or beyond the window
        i = int(rng.integers(0, n))
        acc["space"][i], acc["mask"][i] = 2, 1
        acc["addr"][i, 0] = rng.choice([max(shared_base - 1, 0), shared_base + (1 << 32) - 2])
    allocs = [(BASE + k * 0x10000, int(rng.choice([0x4000, 0x8000, 0x10000]))) for k in range(3)]
    allocs = [a for a in allocs if rng.random() < 0.9]
    params = np.array([(8 * k, 8) for k in range(3)], dtype=[("offset", "<u4"), ("size", "<u4")])
    buf = b"".join((BASE + k * 0x10000).to_bytes(8, "little") for k in (2, 0, 1))
    launch = LaunchRecord(0, "_Z1kPfS_S_", grid, block, 16, 0, 0, params, buf, shared_base, 0)
    chunk = int(rng.choice([1, 3, 64, 4096]))
    max_rows = draw(st.sampled_from([None, None, None, n // 2, n, 1, 0]))
    return encode(launch, allocs, acc, chunk_rows=chunk, max_rows_reached=bool(rng.random() < 0.1)), max_rows


@settings(max_examples=150, **SETTINGS)
@given(case=record_files(), chunk_rows=st.sampled_from([None, 1, 2, 7, 64]), distinct=st.sampled_from([None, 1, 5]),
       sparse=st.booleans())  # fmt: skip
def test_random_launches(tmp_path, monkeypatch, case, chunk_rows, distinct, sparse):
    # the decoder's two passes in parts of chunk_rows records (seq counted on across them, each part's objects from
    # the first pass's), the shared and local rows (and a larger grid's warps) counted once each from `distinct`
    # rows, the warps as those of a grid too large for a table per warp (sparse): the reference's result
    if distinct:
        monkeypatch.setattr(decode_module, "DISTINCT_ROWS", distinct)
    if sparse:
        monkeypatch.setattr(decode_module, "DENSE_WARPS", 0)
    data, max_rows = case
    path = tmp_path / "rec.bin"
    path.write_bytes(data)
    _check_file(path, chunk_rows=chunk_rows, max_rows=max_rows)


@settings(max_examples=100, **SETTINGS)
@given(case=record_files(), threads=st.sampled_from([2, 3]), chunk_rows=st.sampled_from([None, 1, 4]))
def test_random_launches_shared_among_threads(tmp_path, monkeypatch, case, threads, chunk_rows):
    # the check and the first pass in ranges of the rows, each in a thread (from PARALLEL_ROWS rows), each range in
    # parts of chunk_rows: made to happen here on small files; what the ranges gathered joined, their errors the
    # first in file order
    monkeypatch.setattr(decode_module, "PARALLEL_ROWS", 1)
    monkeypatch.setattr(decode_module, "_threads", lambda: threads)
    data, max_rows = case
    path = tmp_path / "rec.bin"
    path.write_bytes(data)
    _check_file(path, chunk_rows=chunk_rows, max_rows=max_rows)


def test_parts_of_the_rows():
    assert decode_module._parts(0, 2) == [(0, 0)]
    assert decode_module._parts(decode_module.PARALLEL_ROWS - 1, 4) == [(0, decode_module.PARALLEL_ROWS - 1)]
    n = 3 * decode_module.PARALLEL_ROWS + 1
    parts = decode_module._parts(n, 3)
    assert len(parts) == 3 and parts[0][0] == 0 and parts[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))


@settings(max_examples=150, **SETTINGS)
@given(cut=st.integers(0, len(VALID)), edits=st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)),
                                                       max_size=6))  # fmt: skip
def test_corrupt_and_truncated_files(tmp_path, cut, edits):
    data = bytearray(VALID)
    for i, b in edits:
        data[i] = b
    path = tmp_path / "rec.bin"
    path.write_bytes(bytes(data[:cut]))
    _check_file(path)
    _check_file(path, mapped=True)


def test_mapped_file_is_read_only_and_kept_alive(tmp_path):
    from traces.sanitizer.records import file_bytes

    path = tmp_path / "rec.bin"
    path.write_bytes(VALID)
    for mapped in (False, True):
        data = file_bytes(str(path), mapped=mapped)
        assert not data.flags.writeable and data.tobytes() == VALID
    rf = read_records(path, mapped=True)
    path.unlink()  # the map outlives the file's name
    assert rf.rows_written == len(_accesses()) and np.array_equal(rf.accesses, _accesses())


@pytest.mark.parametrize("mapped", [False, True])
def test_record_bytes_and_pages_let_go(tmp_path, mapped):
    # each access's byte in the file holds its record (records in chunks of 4: the chunk headers between); pages
    # let go (a mapped file's, MADV_DONTNEED) read the same when touched again; a file read into memory keeps its
    acc = np.concatenate([_accesses()] * 40)  # 600 records, 168,000 bytes: 41 pages
    path = tmp_path / "rec.bin"
    path.write_bytes(encode(_launch(), ALLOCS, acc, chunk_rows=4))
    data = path.read_bytes()
    rf = read_records(path, mapped=mapped)
    assert (rf.mapping is not None) == mapped
    n, size = rf.n_accesses, ACCESS_DTYPE.itemsize
    for row in range(n):
        assert data[rf._byte(row) : rf._byte(row) + size] == rf.access(row).tobytes()
    assert rf._byte(n) == rf._byte(n - 1) + size
    before = decode(rf)
    rf.release(0, n)
    rf.release(5, 3)  # nothing
    assert np.array_equal(rf.accesses, acc)
    _same_decode(decode(rf), before)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("chunk_rows", [None, 1, 3])
def test_sass_totals_and_seq(tmp_path, monkeypatch, chunk_rows, threads):
    # the totals from the first pass's rows per instruction (the ranges' joined), seq counted on across the parts
    from test_sanitizer_sass import _matvec, _records

    monkeypatch.setattr(decode_module, "PARALLEL_ROWS", 1)
    monkeypatch.setattr(decode_module, "_threads", lambda: threads)

    fn = _matvec()
    path = _records(tmp_path, fn)
    live = {"chunk_rows": chunk_rows} if chunk_rows else {}
    _same_decode(_outcome(decode, read_records(path), sass_fn=fn, **live),
                 _outcome(ref.decode, ref.read_records(path), sass_fn=fn))  # fmt: skip
    # a pc that is no instruction, late in the file (in the second thread's range): the error names its row
    data = bytearray(path.read_bytes())
    rf = read_records(path)
    row = rf.n_accesses - 2
    data[rf._byte(row) + 8 : rf._byte(row) + 12] = (0xFFFFF0).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    bad = _outcome(decode, read_records(path), sass_fn=fn, **live)
    assert bad[0] is InputError and f"row {row}: pc 0xfffff0 is no instruction" in bad[1]
    _same_decode(_outcome(decode, read_records(path), sass_fn=fn, **live),
                 _outcome(ref.decode, ref.read_records(path), sass_fn=fn))  # fmt: skip


@pytest.mark.parametrize("name_bytes", range(1, 9))
def test_records_read_where_they_lie_at_any_offset(tmp_path, name_bytes):
    # the kernels read the access records in the file's bytes, through one uint64 view from the first payload's
    # offset modulo 8 (the launch record's length sets it: a name of 1 to 8 bytes gives each residue once)
    acc = _accesses()
    path = tmp_path / "rec.bin"
    launch = dataclasses.replace(_launch(), name="k" * name_bytes)
    path.write_bytes(encode(launch, ALLOCS, acc, chunk_rows=4))
    rf = read_records(path)
    launch_bytes = LAUNCH_DTYPE.itemsize + 8 * len(launch.params) + len(launch.param_buffer) + name_bytes
    assert rf.words.ctypes.data % 8 == launch_bytes % 8  # the file's bytes are read to an aligned buffer
    assert rf.spans[:, 1].tolist() == [4] * (acc.shape[0] // 4) + [acc.shape[0] % 4] * (acc.shape[0] % 4 > 0)
    assert np.array_equal(rf.accesses, acc) and rf.n_accesses == acc.shape[0]
    numbers = rf.access_records
    assert numbers.tolist() == list(range(1 + 1 + len(ALLOCS), 1 + 1 + len(ALLOCS) + acc.shape[0]))
    for i in range(acc.shape[0]):
        assert rf.record_number(i) == numbers[i] and rf.access(i) == acc[i]
    _check_file(path)
