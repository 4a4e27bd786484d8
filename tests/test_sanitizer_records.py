"""traces.sanitizer: the record file of `placement trace` -> a trace (no GPU: records built here, byte-exact).

The launch below is a vecadd-like kernel worked by hand: grid (2,1,1) x block (64,1,1), so 2 blocks of
2 warps; each warp loads A[i], loads B[i] and stores C[i] (i = 64 cta + 32 warp + lane, 4-byte floats),
the records interleaved over the warps as a drained buffer would hold them; then block 0 warp 0 stores
to shared memory, block 1 warp 1 does a reduction (atomic without return) on C[0], block 1 warp 0
reads an unallocated address, and one record has no active lane.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traces
from placement.cli import main
from traces.errors import InputError
from traces.importers.objects import ObjectSpec
from traces.sanitizer.decode import decode, import_sanitizer
from traces.sanitizer.records import (
    ACCESS_DTYPE,
    F_ATOMIC,
    F_READ,
    F_WRITE,
    HEADER,
    MAX_WINDOW_BASE,
    LaunchRecord,
    RecordError,
    encode,
    read_records,
)

A, B, C, D = 0x7F0000000000, 0x7F0000001000, 0x7F0000002000, 0x7F0000010000
SHARED_BASE = 0x1000000
LANES = np.arange(32, dtype=np.uint64)


def _launch(params=True, shared_base=SHARED_BASE):
    # kernel(float *C, const float *A, const float *B, int n): C is arg0, A arg1, B arg2
    buf = C.to_bytes(8, "little") + A.to_bytes(8, "little") + B.to_bytes(8, "little") + (128).to_bytes(4, "little")
    p = np.array([(0, 8), (8, 8), (16, 8), (24, 4)], dtype=[("offset", "<u4"), ("size", "<u4")])
    if not params:
        p = p[:0]
    return LaunchRecord(3, "_Z6vecaddPfPKfS1_i", (2, 1, 1), (64, 1, 1), 16, 0, 256, p, buf, shared_base, 0)


def _row(cta, warp, flags, space, addr, mask=0xFFFFFFFF, pc=0x10, width=4):
    r = np.zeros(1, ACCESS_DTYPE)
    r["cta"], r["warp"], r["pc"], r["flags"], r["space"], r["width"], r["mask"] = (
        cta,
        warp,
        pc,
        flags,
        space,
        width,
        mask,
    )
    r["addr"][0] = addr
    return r


def _accesses():
    rows = []
    for k, (base, flags, pc) in enumerate(((A, F_READ, 0x30), (B, F_READ, 0x40), (C, F_WRITE, 0x70))):
        for cta in range(2):
            for warp in range(2):
                i0 = 64 * cta + 32 * warp
                rows.append(_row(cta, warp, flags, 0, np.uint64(base) + (np.uint64(i0) + LANES) * np.uint64(4), pc=pc))
    rows.append(_row(0, 0, F_WRITE, 2, np.uint64(SHARED_BASE) + LANES * np.uint64(4), pc=0x80))
    rows.append(_row(1, 1, F_ATOMIC | F_WRITE, 0, np.r_[np.uint64(C), np.zeros(31, np.uint64)], mask=1, pc=0x90))
    rows.append(_row(1, 0, F_READ, 0, np.r_[np.uint64(0x1000), np.zeros(31, np.uint64)], mask=1, pc=0xA0))
    rows.append(_row(0, 1, F_READ, 0, np.zeros(32, np.uint64), mask=0, pc=0xB0))
    return np.concatenate(rows)


ALLOCS = [(A, 1024), (B, 1024), (C, 1024), (D, 4096)]


def _file(tmp_path, data=None, name="rec.bin", **kw):
    p = tmp_path / name
    p.write_bytes(data if data is not None else encode(_launch(**kw), ALLOCS, _accesses(), chunk_rows=5))
    return p


def test_decode_worked_by_hand(tmp_path):
    cols, info = import_sanitizer(_file(tmp_path), ctas="0-1")
    n = 15  # 12 vecadd rows + shared store + reduction + unknown; the record without lanes dropped
    assert cols["cta"].tolist() == [0, 0, 1, 1] * 3 + [0, 1, 1]
    assert cols["warp"].tolist() == [0, 1, 0, 1] * 3 + [0, 1, 0]
    assert cols["seq"].tolist() == [0] * 4 + [1] * 4 + [2] * 4 + [3, 3, 3]
    assert cols["op"].tolist() == [0] * 8 + [1] * 4 + [1, 3, 0]  # load, store, store (shared), reduction, load
    assert cols["space"].tolist() == [0] * 12 + [2, 0, 0]
    assert cols["pc"].tolist() == [0x30] * 4 + [0x40] * 4 + [0x70] * 4 + [0x80, 0x90, 0xA0]
    # shared addresses are offsets in the block's window
    assert cols["addr"][12].tolist() == [4 * lane for lane in range(32)]
    assert cols["addr"][4].tolist() == [B + 4 * lane for lane in range(32)]  # block 0 warp 0 reads B[0..31]
    assert cols["addr"][7].tolist() == [B + 4 * (96 + lane) for lane in range(32)]  # block 1 warp 1: B[96..127]
    # objects: the touched allocations, named after the parameter holding their base; D untouched
    names = {o.name: (o.id, o.base, o.size, o.written, o.space) for o in info.objects}
    assert names["arg1"] == (0, A, 1024, False, "global")
    assert names["arg2"] == (1, B, 1024, False, "global")
    assert names["arg0"] == (2, C, 1024, True, "global")
    assert names["shared0"][4] == "shared" and names["shared0"][0] == 3
    assert cols["obj"].tolist() == [0] * 4 + [1] * 4 + [2] * 4 + [3, 2, -1]
    assert info.kernel == "vecadd(float*, float const*, float const*, int)" or info.kernel == "_Z6vecaddPfPKfS1_i"
    assert (info.grid, info.block, info.regs_per_thread, info.smem_per_block) == ((2, 1, 1), (64, 1, 1), 16, 256)
    assert (info.instructions.executed, info.instructions.ldst, info.instructions.warps) == (n, n, 4)
    s = info.source
    assert s["format"] == "sanitizer" and s["launch"] == 3 and s["ctas"] == "0-1"
    assert s["estimated"] == ["seq", "instructions"] and "memory instructions" in s["seq"]
    assert (s["unknown_rows"], s["rows_without_lanes"], s["rows_recorded"], s["max_rows_reached"]) == (1, 1, 16, False)
    assert s["objects"]["arg0"] == "allocation record 2, parameter arg0"
    out = tmp_path / "t.parquet"
    traces.write(out, cols, info)
    t = traces.read(out)
    assert len(t) == n and t.info.object("arg0").written


def test_names_without_parameter_list_and_objects_toml(tmp_path):
    _, info = import_sanitizer(_file(tmp_path, params=False))
    assert sorted(o.name for o in info.objects if o.space == "global") == ["param@0", "param@16", "param@8"]
    spec = ObjectSpec("inputs", A, 0x2000, "global", 4)  # covers A and B: both allocations give way
    cols, info = import_sanitizer(_file(tmp_path), objects=(spec,))
    g = [(o.name, o.id, o.size) for o in info.objects if o.space == "global"]
    assert g == [("inputs", 0, 0x2000), ("arg0", 1, 1024)]
    assert cols["obj"][:8].tolist() == [0] * 8 and info.source["objects"]["inputs"] == "--objects"


def test_unallocated_row_on_no_object_and_max_rows(tmp_path):
    cols, info = import_sanitizer(_file(tmp_path), max_rows=6)
    assert len(cols["cta"]) == 6 and info.source["max_rows_reached"] is True
    assert [o.name for o in info.objects] == ["arg1", "arg2"]  # C's store was never reached
    rf = read_records(_file(tmp_path, data=encode(_launch(), ALLOCS, _accesses()[:4], max_rows_reached=True)))
    assert rf.max_rows_reached and rf.rows_written == 4


def test_shared_base_zero_keeps_offsets(tmp_path):
    acc = _accesses()
    acc["addr"][12] -= np.uint64(SHARED_BASE)
    cols, _ = decode(read_records(_file(tmp_path, data=encode(_launch(shared_base=0), ALLOCS, acc))))
    assert cols["addr"][12].tolist() == [4 * lane for lane in range(32)]


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("space", 5, "record 6: space 5"),
        ("width", 3, "record 6: width 3"),
        ("flags", 0, "record 6: access flags 0"),
        ("flags", 3, "record 6: access flags 3"),
        ("flags", 5, "record 6: access flags 5"),
        ("cta", 2, "record 6: block 2 beyond the launch's 2 blocks"),
        ("warp", 2, "record 6: warp 2 beyond the block's 2 warps"),
    ],
)
def test_bad_access_names_record(tmp_path, field, value, message):
    acc = _accesses()
    acc[0][field] = value  # the first access is record 6: launch 1, four allocations 2-5
    with pytest.raises(InputError, match=re.escape(message)):
        import_sanitizer(_file(tmp_path, data=encode(_launch(), ALLOCS, acc)))


@pytest.mark.parametrize(
    "lane_addr,message",
    [
        (5, "shared address below the window base 0x1000000"),
        (SHARED_BASE + (1 << 32), "shared address beyond the 32-bit shared window"),
    ],
)
def test_bad_shared_address_after_a_row_without_lanes_names_its_record(tmp_path, lane_addr, message):
    # the record without lanes (index 15) first: the shared store (index 12) moves to index 13, record 6 + 13;
    # the rows without lanes are dropped before the shared checks, which named the record before it (18)
    acc = _accesses()
    acc = np.concatenate([acc[15:16], acc[:15]])
    acc["addr"][13][0] = lane_addr
    with pytest.raises(RecordError, match=re.escape(f"rec.bin: record 19: {message}")):
        decode(read_records(_file(tmp_path, data=encode(_launch(), ALLOCS, acc))))


def test_truncated_file_names_record(tmp_path):
    data = encode(_launch(), ALLOCS, _accesses(), chunk_rows=5)
    cut = data[: len(data) - 8 - 16 - 280 * 2 - 100]  # drop the end record and cut into the last access chunk
    with pytest.raises(RecordError, match=r"rec.bin: record \d+: truncated access record"):
        read_records(_file(tmp_path, data=cut))
    with pytest.raises(RecordError, match="no end record"):
        read_records(_file(tmp_path, data=data[: len(data) - 24]))
    with pytest.raises(RecordError, match="bad magic"):
        read_records(_file(tmp_path, data=b"X" * 64))
    with pytest.raises(RecordError, match="empty record file"):
        read_records(_file(tmp_path, data=b""))


@pytest.mark.parametrize(
    "alloc, message",
    [
        ((A, 1 << 50), f"allocation of {1 << 50} bytes at {A:#x}: beyond 2^49 bytes"),  # over a GPU's address space
        (
            (0xFFFF_FFFF_FFFF_F000, 0x2000),
            "allocation of 8192 bytes at 0xfffffffffffff000: beyond 2^49 bytes (a GPU's virtual address space) "
            "or the 64-bit address space",
        ),
    ],
)
def test_an_allocation_beyond_the_address_space_names_its_record(tmp_path, alloc, message):
    # the launch record is record 1, the allocations 2, 3, ...: the bad one is the second allocation, record 3
    allocs = [ALLOCS[0], alloc] + list(ALLOCS[1:])
    with pytest.raises(RecordError, match=r"rec.bin: record 3: " + re.escape(message)):
        read_records(_file(tmp_path, data=encode(_launch(), allocs, _accesses())))


def _cli(tmp_path, path, capsys, *extra):
    out = tmp_path / "out.parquet"
    out.unlink(missing_ok=True)
    code = main(["import", "sanitizer", str(path), "-o", str(out), *extra])
    return code, capsys.readouterr(), out


def test_cli_import(tmp_path, capsys):
    code, cap, out = _cli(tmp_path, _file(tmp_path), capsys, "--json", "--ctas", "waves=2")
    assert code == 0, cap.err
    doc = json.loads(cap.out)
    assert doc["rows"] == 15 and [o["name"] for o in doc["objects"]][:3] == ["arg1", "arg2", "arg0"]
    assert traces.read_info(out).source["ctas"] == "waves=2"


VALID = encode(_launch(), ALLOCS, _accesses(), chunk_rows=5)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, len(VALID) - 1))
def test_truncated_anywhere_is_one_line_exit_2(tmp_path, capsys, cut):
    code, cap, out = _cli(tmp_path, _file(tmp_path, data=VALID[:cut]), capsys)
    assert code == 2 and not out.exists()
    line = cap.err.strip().splitlines()[-1]
    assert line.startswith("placement import sanitizer: error: ") and "rec.bin" in line
    assert cut < HEADER.itemsize or "record" in line or "magic" in line


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_corrupt_bytes_exit_0_or_one_line_2(tmp_path, capsys, edits):
    data = bytearray(VALID)
    for i, b in edits:
        data[i] = b
    code, cap, out = _cli(tmp_path, _file(tmp_path, data=bytes(data)), capsys)
    assert code in (0, 2), cap.err
    if code == 2:
        line = cap.err.strip().splitlines()[-1]  # after any warnings the log printed
        assert line.startswith("placement import sanitizer: error: ") and "rec.bin" in line and not out.exists()


@pytest.mark.parametrize("base", ["shared_base", "local_base"])
def test_a_window_base_beyond_int64_names_the_record_file(tmp_path, capsys, base):
    # hypothesis found it (the Quick start's test run, thirty-fifth session): byte 87 of the file set to 128 puts
    # the shared window's base at 2^63 or more, and the decoding kernel's int64 argument overflowed: "internal
    # error (a bug)" and a traceback. A launch record's window bases are refused beyond 2^63 - 1, naming the file
    import dataclasses

    for value, ok in ((MAX_WINDOW_BASE, True), (MAX_WINDOW_BASE + 1, False), ((1 << 64) - 1, False)):
        data = encode(dataclasses.replace(_launch(), **{base: value}), ALLOCS, _accesses(), chunk_rows=5)
        code, cap, out = _cli(tmp_path, _file(tmp_path, data=data), capsys)
        if ok:
            assert code in (0, 2) and "Traceback" not in cap.err, cap.err
            continue
        assert code == 2 and not out.exists(), cap.err
        line = cap.err.strip().splitlines()[-1]
        assert line.startswith("placement import sanitizer: error: ") and "rec.bin" in line, line
        assert f"{base} {value:#x} is not a device address" in line, line


def test_a_grid_too_large_for_its_rows_names_the_record_file(tmp_path, capsys):
    # hypothesis found it: one byte of the launch record (the grid's x, byte 31) set to 1 makes a grid of
    # 2^24 + 2 blocks of 2 warps for 15 rows; the writer refused it naming the output, the decoder now names
    # the record file (traces.launch.coverage_problem, as the other importers)
    import dataclasses

    big = dataclasses.replace(_launch(), grid=((1 << 24) + 2, 1, 1))
    path = tmp_path / "rec.bin"
    path.write_bytes(encode(big, ALLOCS, _accesses(), chunk_rows=5))
    with pytest.raises(RecordError, match=r"rec\.bin.*launch record: grid \(16777218, 1, 1\) x block \(64, 1, 1\)"):
        import_sanitizer(path)
    code, cap, out = _cli(tmp_path, path, capsys)
    assert code == 2 and "rec.bin" in cap.err and len(cap.err.strip().splitlines()) == 1 and not out.exists()


def test_a_kernel_name_with_a_control_character_names_the_record_file(tmp_path, capsys):
    """Hypothesis found it (a fresh-venv run, sixty-fourth session): byte 156 set to 1 puts \\x01 in the kernel's
    name, which the trace's metadata refuses since that session; the error named the output, not rec.bin."""
    data = bytearray(VALID)
    data[156] = 1
    code, cap, out = _cli(tmp_path, _file(tmp_path, data=bytes(data)), capsys)
    line = cap.err.strip().splitlines()[-1]
    assert code == 2 and not out.exists() and "rec.bin" in line, cap.err
    assert "kernel name holds the control character '\\x01'" in line


def test_a_launch_without_accesses_is_refused_by_its_records(tmp_path, capsys):
    """Was written, exit 0: a trace of no rows, which every other command then refuses ("nothing to place")."""
    code, cap, out = _cli(tmp_path, _file(tmp_path, data=encode(_launch(), ALLOCS, [], chunk_rows=5)), capsys)
    assert code == 2 and not out.exists()
    line = cap.err.strip().splitlines()[-1]
    assert (
        line.startswith("placement import sanitizer: error: ")
        and "rec.bin: no memory access follows the launch record" in line
    )


def test_an_address_past_the_end_of_the_address_space_is_named_by_its_record(tmp_path, capsys):
    """Was "OUT.parquet row 0: addr: lane 0 address 0xffffffffffffffff (+4 B) is outside object 'arg1'": a row of a
    file never written."""
    acc = _accesses()
    acc[3]["addr"][0] = np.uint64(2**64 - 2)  # a 4-byte lane 2 bytes before the end
    code, cap, out = _cli(tmp_path, _file(tmp_path, data=encode(_launch(), ALLOCS, acc, chunk_rows=5)), capsys)
    assert code == 2 and not out.exists()
    line = cap.err.strip().splitlines()[-1]
    assert (
        "rec.bin: record" in line
        and "a lane's address 0xfffffffffffffffe + 4 bytes passes the end of the 64-bit" in line
    )
