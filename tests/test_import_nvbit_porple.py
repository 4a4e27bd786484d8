"""`placement import nvbit` and `placement import porple` through main()."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import traces

from expect import one_line

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
NVBIT = DATA / "traces" / "nvbit-memtrace-bfs-head200.txt"
PORPLE = DATA / "traces" / "porple"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"the sample {path} is absent (a fresh clone has no ../shared)")
    return path


def addrs(base, n_active=32, stride=4):
    return " ".join(f"0x{(base + stride * i) if i < n_active else 0:016x}" for i in range(32))


def memtrace(launch, cta, warp, op, base, n_active=32, stride=4):
    return f"MEMTRACE: CTX 0x00005652657a2f00 - grid_launch_id {launch} - CTA {cta} - warp {warp} - {op} - {addrs(base, n_active, stride)} "


# ---- NVBit --------------------------------------------------------------------------------------------


def test_nvbit_sample_every_line_accounted(run_cli, tmp_path):
    log = need(NVBIT)
    total_rows = 0
    for launch in range(18):
        out = tmp_path / f"l{launch}.parquet"
        code, _, err = run_cli("import", "nvbit", log, "-o", out, "--launch", launch)
        assert code == 0, err
        t = traces.read(out)
        lines = t.info.source["lines"]
        assert lines["total"] == 200
        assert sum(v for k, v in lines.items() if k != "total") == 200
        assert lines["rows"] == len(t)
        total_rows += len(t)
        assert {"seq", "pc", "instructions"} <= set(t.info.source["estimated"])
    # every line of the sample is a row of exactly one launch
    assert total_rows == 200


def test_nvbit_sample_launch_1_warps_recovered(run_cli, tmp_path):
    log = need(NVBIT)
    out = tmp_path / "l1.parquet"
    code, _, err = run_cli("import", "nvbit", log, "-o", out, "--launch", "1")
    assert code == 0, err
    t = traces.read(out)
    # The loads of x[tid] put hardware slot 2 first: slots 2,3,0,1,6,7,4,5 are warps 0..7.
    first_load = {int(w): int(a) for w, a, s in zip(t.warp, t.addr[:, 0], t.seq) if s == 0}
    assert sorted(first_load) == list(range(8))
    base = min(first_load.values())
    assert all(first_load[w] == base + 128 * w for w in range(8))
    assert "8 warps" not in t.info.source["warp"] and "1 of 1 blocks" in t.info.source["warp"]
    assert [o.written for o in t.info.objects] == [False, True]
    code, out_json, _ = run_cli("info", out, "--json")
    assert code == 0 and json.loads(out_json)["rows"] == 22


def test_nvbit_mixed_launches_need_launch(run_cli, tmp_path):
    log = need(NVBIT)
    code, out, err = run_cli("import", "nvbit", log, "-o", tmp_path / "t.parquet")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert (
        f"{log}: the log holds 18 launches; pick one with --launch N: launch 0 (unnamed: no launch line, 4 rows), "
        "launch 1 (unnamed: no launch line, 22 rows), launch 2 "
        in err
        and "launch 17 (unnamed: no launch line, 7 rows)" in err
    )


def test_nvbit_old_form_with_launch_lines_and_shared(run_cli, tmp_path):
    lines = [
        "------------- NVBit (NVidia Binary Instrumentation Tool v1.1) Loaded --------------",
        "Kernel _Z3fooPf - grid size 2,1,1 - block size 64,1,1 - nregs 8 - shmem 256 - cuda stream id 0",
        f"CTA 0,0,0 - warp 5 - LDG.E - {addrs(0x10080)} ",
        f"CTA 0,0,0 - warp 3 - LDG.E - {addrs(0x10000)} ",
        f"CTA 0,0,0 - warp 3 - STS - {addrs(0x0)} ",  # lane 0's offset 0 prints as 0: taken as inactive
        f"CTA 1,0,0 - warp 9 - LDG.E.64 - {addrs(0x10100, 16, 8)} ",
        "program output: done",
        "Kernel _Z3barPf - grid size 1,1,1 - block size 32,1,1 - nregs 8 - shmem 0 - cuda stream id 0",
        f"CTA 0,0,0 - warp 0 - STG.E - {addrs(0x90000)} ",
    ]
    p = tmp_path / "old.log"
    p.write_text("\n".join(lines) + "\n")
    out = tmp_path / "t.parquet"
    code, _, err = run_cli("import", "nvbit", p, "-o", out, "--launch", "0")
    assert code == 0, err
    t = traces.read(out)
    assert t.info.kernel == "_Z3fooPf" and t.info.grid == (2, 1, 1) and t.info.block == (64, 1, 1)
    assert t.info.smem_per_block == 256 and "grid" not in t.info.source["estimated"]
    # block 0: slots 5 and 3 -> warps 1 and 0; block 1: one slot, lane-linear -> warp 0
    assert t.cta.tolist() == [0, 0, 0, 1] and t.warp.tolist() == [1, 0, 0, 0]
    assert t.width.tolist() == [4, 4, 4, 8] and t.seq.tolist() == [0, 0, 1, 0]
    assert traces.SPACE_NAMES[t.space[2]] == "shared" and t.mask[2] == 0xFFFFFFFE
    lines_acct = t.info.source["lines"]
    # the STS line's lane 0 address is 0 (inactive): 31 lanes; banner and program output are not trace lines
    assert lines_acct == {"total": 9, "rows": 4, "other_launch_lines": 1, "launch_lines": 2, "not_trace_lines": 2,
                          "all_lanes_off": 0, "unclassified_lines": 0, "skipped_bad_lines": 0}  # fmt: skip
    code, _, err = run_cli("import", "nvbit", p, "-o", out, "--launch", "1")
    assert code == 0
    assert traces.read(out).info.kernel == "_Z3barPf"


def test_nvbit_garbage_and_truncated_line(run_cli, tmp_path):
    good = [memtrace(0, "0,0,0", 0, "LDG.E.SYS", 0x10000), memtrace(0, "0,0,0", 1, "LDG.E.SYS", 0x10080)]
    p = tmp_path / "g.log"
    p.write_text("\n".join([good[0], "MEMTRACE: CTX 0x1 - grid_launch_id zero - CTA", good[1]]) + "\n")
    code, _, err = run_cli("import", "nvbit", p, "-o", tmp_path / "t.parquet")
    assert code == 2 and f"{p} line 2:" in err
    code, _, err = run_cli("import", "nvbit", p, "-o", tmp_path / "t.parquet", "--skip-bad-lines")
    assert code == 0
    t = traces.read(tmp_path / "t.parquet")
    assert len(t) == 2 and t.info.source["lines"]["skipped_bad_lines"] == 1
    # a log cut in the middle of its last line
    p2 = tmp_path / "cut.log"
    p2.write_text(good[0] + "\n" + good[1][:200])
    code, _, err = run_cli("import", "nvbit", p2, "-o", tmp_path / "t.parquet")
    assert code == 2 and f"{p2} line 2:" in err and "32 hex addresses" in err


def test_nvbit_file_mixing_launches_synthetic(run_cli, tmp_path):
    p = tmp_path / "m.log"
    p.write_text("\n".join([memtrace(3, "0,0,0", 0, "LDG.E", 0x1000), memtrace(4, "0,0,0", 0, "LDG.E", 0x1000)]) + "\n")
    code, _, err = run_cli("import", "nvbit", p, "-o", tmp_path / "t.parquet")
    assert (
        code == 2
        and "the log holds 2 launches; pick one with --launch N: launch 3 (unnamed: no launch line, 1 row), "
        "launch 4 (unnamed: no launch line, 1 row)"
        in err
    )
    code, _, err = run_cli("import", "nvbit", p, "-o", tmp_path / "t.parquet", "--launch", "4")
    assert code == 0
    code, _, err = run_cli("import", "nvbit", p, "-o", tmp_path / "t.parquet", "--launch", "9")
    assert code == 2 and "launch 9" in err


# ---- PORPLE -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, rows, arrays", [("mm_stride", 264, 3), ("spmv_prof", 265, 4)])
def test_porple_samples_import(run_cli, tmp_path, name, rows, arrays):
    src = need(PORPLE / f"{name}.txt")
    out = tmp_path / "p.parquet"
    code, _, err = run_cli("import", "porple", src, "-o", out)
    assert code == 0, err
    code, text, err = run_cli("info", out, "--json")
    assert code == 0, err
    d = json.loads(text)
    assert d["rows"] == rows and len(d["objects"]) == arrays
    t = traces.read(out)
    # every access line is one active lane of one row
    n_access = sum(1 for ln in src.read_text().splitlines() if ln[:1].isdigit())
    assert int(sum(bin(m).count("1") for m in t.mask.tolist())) == n_access
    if name == "mm_stride":
        assert [o["shape"] for o in d["objects"]] == [[256, 256], [256, 3840], [256, 3840]]
        assert [o["written"] for o in d["objects"]] == [False, False, True]
        assert d["rows_per_op"] == {"load": 256, "store": 8}


def test_porple_format_and_errors(run_cli, tmp_path):
    text = "dimension 1 2\nsizeof 4 8\nblock_X 64 8\nblock_Y 1 8\narray_size 256 512\n"
    acc = [f"0 0 0 0 {t} {t}" for t in range(40)] + [f"1 1 0 0 {t} {t}" for t in range(8)] + ["[k1]: 0 0 0 1 0 63"]
    p = tmp_path / "t.txt"
    p.write_text(text + "\n".join(acc) + "\n")
    out = tmp_path / "p.parquet"
    code, _, err = run_cli("import", "porple", p, "-o", out)
    assert code == 0, err
    t = traces.read(out)
    # array 0: warps 0 (32 lanes) and 1 (8 lanes), then the loop-1 access; array 1: 8 lanes, written
    assert len(t) == 4 and t.info.block == (64, 1, 1)
    a0, a1 = t.info.objects
    assert a0.base == 1 << 32 and a1.base == (1 << 32) + 512 and a1.shape == (8, 8) and a1.elem_bytes == 8
    w0 = t.warp == 0
    assert t.seq[w0].tolist() == [0, 1, 2]  # loop 0 read, loop 0 write, loop 1 read
    assert t.addr[w0][2, 0] == (1 << 32) + 63 * 4
    # an element beyond its array: the array is extended, with a warning (tests/test_bad_input.py has more)
    p.write_text(text + "\n".join(acc + ["0 0 0 0 1 64"]) + "\n")
    code, _, err = run_cli("import", "porple", p, "-o", out)
    assert code == 0, err
    t = traces.read(out)
    assert t.info.object("array0").size == 260
    assert f"line {6 + len(acc)}) reach element 64, beyond its array_size of 256 bytes" in t.info.source["warnings"][0]
    # a garbage line
    p.write_text(text + "\n".join(acc[:3] + ["0 0 zero 0 1 1"] + acc[3:]) + "\n")
    code, _, err = run_cli("import", "porple", p, "-o", out)
    assert code == 2 and f"{p} line 9:" in err
    code, _, err = run_cli("import", "porple", p, "-o", out, "--skip-bad-lines")
    assert code == 0 and traces.read(out).info.source["skipped_lines"] == 1


LAUNCH64 = ("MEMTRACE: CTX 0x00005652657a2f00 - LAUNCH - Kernel pc 0x7f00 - Kernel name k - grid launch id 0 - grid size "
            "1,1,1 - block size 64,1,1 - nregs 16 - shmem 0 - cuda stream id 0")  # fmt: skip


def _nvbit_log(tmp_path, first_op="LDG.E", first_warp=0, first_base=0x7F0000000000):
    p = tmp_path / "k.log"
    p.write_text("\n".join([LAUNCH64, memtrace(0, "0,0,0", first_warp, first_op, first_base),
                            memtrace(0, "0,0,0", 1, "LDG.E", 0x7F0000000080), memtrace(0, "0,0,0", 0, "STG.E", 0x7F0000100000),
                            memtrace(0, "0,0,0", 1, "STG.E", 0x7F0000100080)]) + "\n")  # fmt: skip
    return p


@pytest.mark.parametrize(
    "edit, words",
    [
        # was "OUT.parquet: instructions.warps: 3 warps, but grid (1, 1, 1) x block (64, 1, 1) runs 2"
        (
            {"first_warp": 99},
            "line 2: CTA (0, 0, 0) has accesses of more warps than the launch's block (64, 1, 1) holds",
        ),
        # was "OUT.parquet: objects[0].size: object 'shared0' [...] ends beyond the shared address space"
        ({"first_op": "LDS.U.128"}, "line 2: LDS.U.128 is a shared-memory access, but its address 0x7f000000007c"),
        # was "OUT.parquet row 0: addr: lane 31 address 0xfffffffffffffffe (+4 B) is outside object 'global0' [...]"
        ({"first_base": 2**64 - 126}, "line 2: LDG.E: address 0xfffffffffffffffe + 4 bytes passes the end of the 64"),
    ],
)
def test_nvbit_lines_the_launch_cannot_hold_are_named_by_line(run_cli, tmp_path, edit, words):
    log = _nvbit_log(tmp_path, **edit)
    out = tmp_path / "n.parquet"
    line = one_line(*run_cli("import", "nvbit", log, "-o", out), f"{log} {words}")
    assert str(out) not in line and not out.exists()


def test_nvbit_unknown_opcodes_are_said(run_cli, tmp_path, caplog):
    """A line of an opcode the tool does not read was dropped silently (only unclassified_lines in the metadata)."""
    import logging

    log = _nvbit_log(tmp_path, first_op="FOO.BAR")
    with caplog.at_level(logging.WARNING, logger="traces.importers.nvbit"):
        code, _, err = run_cli("import", "nvbit", log, "-o", tmp_path / "n.parquet")
    assert code == 0, err
    assert traces.read(tmp_path / "n.parquet").info.source["lines"]["unclassified_lines"] == 1
    assert [r.getMessage() for r in caplog.records] == [
        f"{log}: 1 line of opcodes not read as memory accesses, not imported (FOO.BAR)"
    ]


def test_nvbit_accesses_of_a_launch_without_its_launch_line_are_said(run_cli, tmp_path, caplog):
    """Access lines of grid launch 7 in a log whose only launch line is launch 0's: imported with an estimated grid
    and block, silently."""
    import logging

    p = tmp_path / "k.log"
    p.write_text("\n".join([LAUNCH64, memtrace(7, "0,0,0", 0, "LDG.E", 0x7F0000000000),
                            memtrace(7, "0,0,0", 1, "LDG.E", 0x7F0000000080)]) + "\n")  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="traces.importers.nvbit"):
        code, _, err = run_cli("import", "nvbit", p, "-o", tmp_path / "n.parquet")
    assert code == 0, err
    assert [r.getMessage() for r in caplog.records] == [
        f"{p}: no launch line for grid launch 7 (the log has them for 0): its grid, block and kernel name are "
        "estimated from the accesses"
    ]
    assert {"grid", "block"} <= set(traces.read(tmp_path / "n.parquet").info.source["estimated"])


def test_nvbit_kernel_name_with_a_control_character_is_named_by_its_line(run_cli, tmp_path):
    p = tmp_path / "k.log"
    p.write_text("\n".join([LAUNCH64.replace("Kernel name k", "Kernel name k\x01x"),
                            memtrace(0, "0,0,0", 0, "LDG.E", 0x7F0000000000)]) + "\n")  # fmt: skip
    out = tmp_path / "n.parquet"
    one_line(*run_cli("import", "nvbit", p, "-o", out), f"{p} line 1: launch line: the kernel name holds the control")
    assert not out.exists()


def test_porple_kernel_name_from_a_file_name_with_a_control_character_names_the_input(run_cli, tmp_path):
    """The kernel's name is the file's; the trace's metadata refused "\\x01" in it, blaming the output file."""
    text = ("dimension 1\nsizeof 4\nblock_X 64\nblock_Y 1\narray_size 256\n"
            + "\n".join(f"0 0 0 0 {t} {t}" for t in range(64)) + "\n")  # fmt: skip
    ok = tmp_path / "mm.txt"
    ok.write_text(text)
    code, _, err = run_cli("import", "porple", ok, "-o", tmp_path / "ok.parquet")
    assert code == 0, err
    p = tmp_path / "mm\x01x.txt"
    p.write_text(text)
    out = tmp_path / "n.parquet"
    one_line(*run_cli("import", "porple", p, "-o", out), f"{p}: the kernel's name, taken from the file's name, holds")
    assert not out.exists()
