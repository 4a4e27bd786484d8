"""Bad input never crashes (issue 19): each defect the fuzzers found, pinned by an input that showed it.

Every case goes through the command where one exists: exit 2, one line on stderr
naming the file and the key, row or line, nothing on stdout, no output file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from traces.errors import InputError, TraceError, one_line

ROOT = Path(__file__).resolve().parents[1]
PROC_MEM = Path("/proc/self/mem")  # opens, but reading it fails (EIO), even for root


def one_line_error(code: int, out: str, err: str, *words: str) -> str:
    assert code == 2, err
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in err, (w, err)
    return err


# ---- the error type -----------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_one_line_keeps_the_words_and_nothing_else(text):
    # the helper every command's message goes through: the same words in the same order, one space between
    line = one_line(ValueError(text))
    assert line == line.strip() and "  " not in line
    assert not any(c.isspace() and c != " " for c in line)
    assert line.split(" ") == (text.split() or [""])


def test_input_error_message_is_one_line():
    e = InputError(
        "t.parquet: not a readable Parquet file: Couldn't deserialize thrift\nDeserializing page header failed.\n"
    )
    assert (
        str(e)
        == "t.parquet: not a readable Parquet file: Couldn't deserialize thrift Deserializing page header failed."
    )
    t = TraceError("t.parquet", "line one\r\n  line two", row=3, field="seq")
    assert str(t) == "t.parquet row 3: seq: line one line two"


# ---- TOML files: folders, unreadable files, binary, deep nesting, huge integers ----------------------------


def _toml_cases(tmp_path: Path) -> dict[str, Path]:
    cases = {}
    d = tmp_path / "folder.toml"
    d.mkdir()
    cases["folder"] = d
    if PROC_MEM.exists():
        eio = tmp_path / "eio.toml"
        eio.symlink_to(PROC_MEM)
        cases["unreadable"] = eio
    cases["binary"] = tmp_path / "binary.toml"
    cases["binary"].write_bytes(b'name = "k80"\n\xff\xfe\x00\x81junk')
    cases["nested"] = tmp_path / "nested.toml"
    cases["nested"].write_text("x = " + "[" * 3000 + "]" * 3000 + "\n")
    cases["digits"] = tmp_path / "digits.toml"
    cases["digits"].write_text("x = " + "9" * 5000 + "\n")
    return cases


WHY = {"folder": "is a folder", "unreadable": "cannot be read", "binary": "not UTF-8", "nested": "nested too deeply",
       "digits": "not valid TOML"}  # fmt: skip


def test_toml_readers_refuse_unreadable_files(tmp_path, run_cli):
    from placement.batch import load_suite
    from placement.gpu import load_gpu
    from placement.overlap import load
    from traces.importers.objects import load_objects_toml

    for kind, path in _toml_cases(tmp_path).items():
        for reader in (load_gpu, load_suite, load, load_objects_toml):
            with pytest.raises(InputError, match=re.escape(WHY[kind])) as info:
                reader(path)
            assert str(path) in str(info.value) and "\n" not in str(info.value)
        one_line_error(*run_cli("gpus", path), str(path), WHY[kind])


# ---- T_overlap coefficients ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "9" * 400, "1e300"])
def test_overlap_coefficients_must_be_finite(tmp_path, value):
    from placement.overlap import load

    p = tmp_path / "c.toml"
    p.write_text(f'gpu = "k80"\n[coefficients]\ng = {value}\nc = 0\nt = 0\ns = 0\nr = 0\nw = 0\nc0 = 0\n')
    with pytest.raises(InputError, match=rf"{re.escape(str(p))}: coefficients.g: expected a finite number"):
        load(p)


# ---- GPU configurations -------------------------------------------------------------------------------


def _gpu(tmp_path: Path, name: str, key: str, value: str) -> Path:
    text = (ROOT / "configs" / "gpus" / f"{name}.toml").read_text()
    text, n = re.subn(rf"^{key}\s*=\s*(\"[^\"]*\"|[^#\n]+)", f"{key} = {value}", text, count=1, flags=re.M)
    assert n == 1
    p = tmp_path / f"{name}-{key}.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "name, key, value, qualified, words",
    [
        ("k80", "clock_mhz", "nan", "compute.clock_mhz", "expected a finite number"),
        ("k80", "dram_latency", "inf", "memory.dram_latency", "expected a finite number"),
        ("k80", "smem_latency", "9" * 400, "memory.smem_latency", "expected a finite number"),
        ("k80", "sms", "4294967296", "compute.sms", "must be in [1, 4096]"),
        ("k80", "regs_per_sm", str(1 << 50), "compute.regs_per_sm", "at most"),
        ("k80", "column_bits", "[8, 99]", "dram.column_bits", "expected integers in [0, 63]"),
        ("k80", "tex", '"N:4294967296:128:24,L:R:m:N:L"', "caches.tex", "lines; at most 16777216"),
        ("k80", "l2", '"N:64:128:16,L:B:m:W:Q"', "caches.l2", "'Q' in cache string"),
        ("a100", "mapping", '"dramid@8;0000RRRR"', "dram.mapping", "bit characters, expected 64"),
    ],
)
def test_gpu_values_the_simulation_cannot_use_are_refused(tmp_path, run_cli, name, key, value, qualified, words):
    from placement.gpu import ConfigError, load_gpu

    p = _gpu(tmp_path, name, key, value)
    with pytest.raises(ConfigError) as info:
        load_gpu(p)
    msg = str(info.value)
    assert msg.startswith(f"{p}: {qualified}: ") and words in msg, msg
    one_line_error(*run_cli("gpus", p), qualified)


# ---- suite files --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry, words",
    [
        ('gpu = "k' + "9" * 300 + '"', "unknown GPU"),
        ('gpu = "k' + "9" * 300 + '.toml"', "cannot be read (File name too long)"),
        ('gpu = "k80\\u0000.toml"', "NUL character"),
        ('trace = "' + "t" * 300 + '.parquet"', "does not exist"),
        ("measured_ns = [inf]", "measured_ns must be a list of 1 positive times"),
        ("measured_ns = [" + "9" * 400 + "]", "measured_ns must be a list of 1 positive times"),
        ("size = [" + "9" * 30 + "]", "size must be an integer or a list of integers in 0..2147483647"),
        ("top = " + "9" * 30, "top must be an integer in 1..100000"),
    ],
)
def test_suite_names_and_numbers_no_file_can_have(tmp_path, run_cli, entry, words):
    key = entry.split(" ")[0]
    base = {"gpu": 'gpu = "k80"', "trace": 'generator = "vecadd"', "measured_ns": "measured_ns = [10.0]",
            "size": "size = [1024]", "top": ""}  # fmt: skip
    lines = [base[k] if k != key else entry for k in ("gpu", "trace", "size")]
    if key == "top":
        lines += ["rank = true", entry]
    else:
        lines += ['placements = [""]', entry if key == "measured_ns" else base["measured_ns"]]
    p = tmp_path / "s.toml"
    p.write_text("[[entry]]\n" + "\n".join(x for x in lines if x) + "\n")
    if key == "trace":
        p.write_text(p.read_text().replace("size = [1024]\n", ""))
    one_line_error(*run_cli("batch", p, "-o", tmp_path / "r.parquet"), str(p), "entry 1", words)
    assert not (tmp_path / "r.parquet").exists()


# ---- traces: metadata sizes against CUDA's maxima and the rows present ------------------------------------


def _with_metadata(tmp_path: Path, edit) -> Path:
    import json

    import pyarrow.parquet as pq

    import traces
    from traces.schema import METADATA_KEY
    from tracemaker import vecadd

    cols, info = vecadd(2, 2)
    d = json.loads(info.to_json())
    edit(d)
    p = tmp_path / "t.parquet"
    pq.write_table(traces.to_table(cols, info).replace_schema_metadata({METADATA_KEY: json.dumps(d).encode()}), p)
    return p


@pytest.mark.parametrize(
    "edit, field, words",
    [
        (lambda d: d.update(grid=[1 << 31, 1, 1]), "grid", "grid x is 2147483648, CUDA allows 1 to 2147483647"),
        (lambda d: d.update(grid=[2, 65536, 1]), "grid", "grid y is 65536, CUDA allows 1 to 65535"),
        (lambda d: d.update(block=[64, 1, 65]), "block", "block z is 65, CUDA allows 1 to 64"),
        (lambda d: d.update(block=[64, 32, 1]), "block", "has 2048 threads, CUDA allows at most 1024"),
        # within CUDA's maxima, but 2^31 - 1 blocks of 2 warps for 12 rows
        (lambda d: d.update(grid=[(1 << 31) - 1, 1, 1]), "grid", "is 4294967294 warps, but the trace has 12 rows"),
        (lambda d: d.update(regs_per_thread=256), "regs_per_thread", "must be in 0..255"),
        (lambda d: d["instructions"].update(executed=1 << 70), "instructions.executed", "must be in 0..2^62"),
        (
            lambda d: d["instructions"].update(warps=5),
            "instructions.warps",
            "5 warps, but grid (2, 1, 1) x block (64, 1, 1) runs 4",
        ),
        (
            lambda d: d["objects"][0].update(base=(1 << 64) - 8),
            "objects[0].size",
            "ends beyond the global address space",
        ),
        (lambda d: d.update(measured={"time_ns": 1 << 1100, "gpu": "k80"}), "measured.time_ns", "finite number of ns"),
        # counts the rest of the metadata contradicts (spmv with executed 0 was predicted 993 ns, not 1.61 us)
        (lambda d: d["instructions"].update(int=10**15), "instructions.int", "1,000,000,000,000,000 int warp-"),
        # a newline split evaluate's header line
        (lambda d: d.update(kernel="a\nb"), "kernel", "kernel name 'a\\nb' holds the control character '\\n'"),
        # each named under its own key (elem_bytes 0 was reported under objects[0].size)
        (lambda d: d["objects"][0].update(elem_bytes=0), "objects[0].elem_bytes", "has elem_bytes 0; it must be one"),
        (lambda d: d["objects"][0].update(size=0), "objects[0].size", "has size 0; it must be > 0"),
        (lambda d: d["objects"][0].update(base=-8), "objects[0].base", "has base -8; it must be >= 0"),
    ],
)
def test_trace_metadata_sizes_refused_before_allocating(tmp_path, run_cli, edit, field, words):
    import traces

    p = _with_metadata(tmp_path, edit)
    for reader in (traces.read, lambda q: list(traces.iter_batches(q)), traces.read_info):
        with pytest.raises(TraceError) as info:
            reader(p)
        assert info.value.field == field and words in str(info.value), str(info.value)
    one_line_error(*run_cli("info", p), f"{p}: {field}: ", words)


@pytest.mark.parametrize(
    "edit, field, words",
    [
        # vecadd(2, 2) has 12 rows, each a memory instruction executed: 11 executed cannot be
        (lambda d: d["instructions"].update(executed=11, int=0, fp32=0, ldst=0, branch=0), "instructions.executed",
         "11 executed warp-instructions, but the trace has 12 rows"),
        # rows of 2 blocks: traced_ctas 1 was taken at its word (the time scaled by the launch's blocks over 1:
        # spmv's 64 blocks made 1.61 -> 514 us)
        (lambda d: d["extra"].update(traced_ctas=1), "extra.traced_ctas",
         "the rows hold 2 blocks, more than the 1 it says were traced"),
    ],
)  # fmt: skip
def test_metadata_the_rows_contradict(tmp_path, run_cli, edit, field, words):
    """Checked against the rows: the read, the stream and evaluate agree."""
    import traces

    p = _with_metadata(tmp_path, edit)
    for reader in (traces.read, lambda q: list(traces.iter_batches(q))):
        with pytest.raises(TraceError) as info:
            reader(p)
        assert info.value.field == field and words in str(info.value), str(info.value)
    one_line_error(*run_cli("evaluate", p, "--gpu", "k80"), f"{p}: {field}: {words}")


def test_traced_ctas_that_the_rows_hold_is_read():
    import traces
    from tracemaker import vecadd

    cols, info = vecadd(2, 2)
    assert len({int(c) for c in cols["cta"]}) == 2  # so traced_ctas 2 is right
    import dataclasses

    info2 = dataclasses.replace(info, extra={**info.extra, "traced_ctas": 2})
    traces.validate(traces.Trace(**cols, info=info2))


def test_tiny_file_claiming_two_to_the_31_blocks_fails_fast(tmp_path, monkeypatch):
    """Before the fix, the reader asked numpy for one int64 per warp of the claimed grid."""
    import numpy as np

    import traces

    p = _with_metadata(tmp_path, lambda d: d.update(grid=[(1 << 31) - 1, 1, 1]))
    asked = []
    real_full = np.full

    def full(shape, *a, **k):
        asked.append(shape)
        return real_full(shape, *a, **k)

    monkeypatch.setattr(np, "full", full)
    with pytest.raises(TraceError, match="warps, but the trace has 12 rows"):
        traces.read(p)
    assert all(int(np.prod(s)) < 1 << 20 for s in asked), asked


def test_large_grid_state_follows_the_rows(tmp_path, monkeypatch):
    """Above DENSE_WARPS the per-warp seq state is kept for the warps present only: same verdicts."""
    import numpy as np

    import traces
    from traces import io
    from tracemaker import vecadd

    cols, info = vecadd(4, 2)
    good = tmp_path / "good.parquet"
    traces.write(good, cols, info)
    cols["seq"][7] = 0  # row 7 (cta 1, warp 0, second access) repeats seq 0
    bad = tmp_path / "bad.parquet"
    traces.write(bad, cols, info, validate=False)
    monkeypatch.setattr(io._Checker, "DENSE_WARPS", 2)
    assert io._Checker("x", info).dense is False
    for rows in (1, 3, 100):
        assert sum(len(b) for b in traces.iter_batches(good, rows=rows)) == 24
        with pytest.raises(TraceError, match="row 7: seq: seq 0 after 0 for \\(cta 1, warp 0\\)"):
            list(traces.iter_batches(bad, rows=rows))
    cols["seq"][7] = 4
    np.testing.assert_array_equal(traces.read(good).seq, cols["seq"])


def test_info_on_a_huge_object_holds_the_touched_ranges_only(tmp_path, run_cli):
    """`placement info` used a bitmap of every object's claimed size (2^40 bytes here: 128 GiB)."""
    import json

    p = _with_metadata(tmp_path, lambda d: d["objects"][2].update(size=1 << 40))
    code, out, err = run_cli("info", p, "--json")
    assert code == 0, err
    objs = {o["name"]: o for o in json.loads(out)["objects"]}
    assert objs["C"]["size"] == 1 << 40
    assert [objs[n]["bytes_touched"] for n in "ABC"] == [4 * 32 * 4] * 3  # 4 warps x 32 lanes x 4 bytes each
    assert json.loads(out)["warps"] == 4


# ---- Accel-Sim --------------------------------------------------------------------------------------------


def _accelsim_folder(tmp_path: Path, names: list[str], header_edit=lambda h: h, copies: str = "") -> Path:
    from fuzzing import accelsim_block, accelsim_header

    d = tmp_path / "as"
    d.mkdir()
    (d / "kernelslist.g").write_text(copies + "".join(f"{n}\n" for n in names))
    w = ["0010 ffffffff 1 R2 LDG.E 1 R4 4 1 0x10000 4 0", "0050 ffffffff 0 EXIT 0 0 0"]
    for n in names:
        text = (
            header_edit(accelsim_header(5, grid=(2, 1, 1), block=(32, 1, 1)))
            + accelsim_block(0, [w])
            + accelsim_block(1, [w])
        )
        if n.endswith(".xz"):
            import lzma

            (d / n).write_bytes(lzma.compress(text.encode()))
        else:
            (d / n).write_text(text)
    return d


def test_accelsim_context_named_kernels_import(tmp_path, run_cli):
    """The current tracer writes kernel-N-ctx_0x<context>.traceg; --kernel 1 answered 'no kernel-1 (it lists None, None)'."""
    import traces

    d = _accelsim_folder(tmp_path, ["kernel-1-ctx_0x55962a553360.traceg", "kernel-2-ctx_0x55962a553360.traceg.xz"],
                         copies="MemcpyHtoD,0x0000000000010000,256\n")  # fmt: skip
    out = tmp_path / "t.parquet"
    for k in (1, 2):
        code, _, err = run_cli("import", "accelsim", d, "--kernel", k, "-o", out)
        assert code == 0, err
        t = traces.read(out)
        assert len(t) == 2 and t.info.source["file"].endswith(
            f"kernel-{k}-ctx_0x55962a553360.traceg" + ("" if k == 1 else ".xz")
        )
        assert [o.base for o in t.info.objects] == [0x10000] and "MemcpyHtoD" in t.info.source["objects"]["htod0"]
    one_line_error(*run_cli("import", "accelsim", d, "-o", out), "lists 2 kernels (1, 2); pick one with --kernel N")
    one_line_error(*run_cli("import", "accelsim", d, "--kernel", 3, "-o", out), "no kernel-3 (it lists 1, 2)")
    # a file given by name, with its number
    code, _, err = run_cli("import", "accelsim", d / "kernel-1-ctx_0x55962a553360.traceg", "--kernel", 1, "-o", out)
    assert code == 0, err


@pytest.mark.parametrize(
    "edit, line, words",
    [
        (
            lambda h: h.replace("-grid dim = (2,1,1)", "-grid dim = (2147483648,1,1)"),
            3,
            "grid x is 2147483648, CUDA allows",
        ),
        (
            lambda h: h.replace("-block dim = (32,1,1)", "-block dim = (32,64,1)"),
            4,
            "has 2048 threads, CUDA allows at most 1024",
        ),
        (lambda h: h.replace("-nregs = 16", "-nregs = 300"), 6, "'-nregs' must be an integer in 0..255"),
        (
            lambda h: h.replace("-shmem base_addr = 0x00007f0000000000", "-shmem base_addr = 0x" + "f" * 20),
            9,
            "'-shmem base_addr' must be an integer in 0..0x3fffffffffffffff",
        ),
        (
            lambda h: h.replace("-grid dim = (2,1,1)", "-grid dim = (2147483647,1,1)"),
            None,
            "is 2147483647 warps, but the trace has 2 rows",
        ),
    ],
)
def test_accelsim_header_sizes_refused(tmp_path, run_cli, edit, line, words):
    d = _accelsim_folder(tmp_path, ["kernel-1.traceg"], edit)
    f = d / "kernel-1.traceg"
    where = f"{f} line {line}: " if line else f"{f}: "
    one_line_error(*run_cli("import", "accelsim", d, "-o", tmp_path / "t.parquet"), where, words)
    assert not (tmp_path / "t.parquet").exists()


def test_accelsim_kernelslist_copy_beyond_the_address_space(tmp_path, run_cli):
    d = _accelsim_folder(tmp_path, ["kernel-1.traceg"], copies="MemcpyHtoD,0xffffffffffffff00,4096\n")
    one_line_error(*run_cli("import", "accelsim", d, "-o", tmp_path / "t.parquet"), f"{d / 'kernelslist.g'} line 1:",
                   "expected 'MemcpyHtoD,<hex base>,<bytes>'")  # fmt: skip


@pytest.mark.skipif(not PROC_MEM.exists(), reason="needs /proc/self/mem for a file that cannot be read")
def test_importers_name_an_unreadable_file(tmp_path, run_cli):
    for fmt in ("accelsim", "nvbit", "porple"):
        f = tmp_path / f"kernel-1.{fmt}"
        f.symlink_to(PROC_MEM)
        one_line_error(
            *run_cli("import", fmt, f, "-o", tmp_path / "t.parquet"), str(f), "cannot be read (Input/output error)"
        )


# ---- NVBit ----------------------------------------------------------------------------------------------


def _memtrace(launch, cta, warp, op, base):
    lanes = " ".join(f"0x{base + 4 * i:016x}" for i in range(32))
    return f"MEMTRACE: CTX 0x00005652657a2f00 - grid_launch_id {launch} - CTA {cta} - warp {warp} - {op} - {lanes} "


def _launch_line(launch, name, grid="2,1,1", block="64,1,1"):
    return (f"MEMTRACE: CTX 0x00005652657a2f00 - LAUNCH - Kernel pc 0x7f65 - Kernel name {name} - grid launch id {launch} - "
            f"grid size {grid} - block size {block} - nregs 16 - shmem 0 - cuda stream id 0")  # fmt: skip


def test_nvbit_several_launches_listed(tmp_path, run_cli):
    """Without --launch the import stopped at the second launch's first line; it now lists every launch."""
    p = tmp_path / "m.log"
    lines = [_launch_line(0, "_Z3fooPf"), _memtrace(0, "0,0,0", 0, "LDG.E", 0x1000), _memtrace(0, "1,0,0", 1, "LDG.E", 0x1080),
             _launch_line(1, "_Z3barPfi"), _memtrace(1, "0,0,0", 0, "STG.E", 0x9000),
             _memtrace(0, "1,0,0", 0, "LDG.E", 0x1100), _memtrace(7, "0,0,0", 0, "LDG.E", 0x5000)]  # fmt: skip
    p.write_text("\n".join(lines) + "\n")
    one_line_error(*run_cli("import", "nvbit", p, "-o", tmp_path / "t.parquet"),
                   f"{p}: the log holds 3 launches; pick one with --launch N: launch 0 (_Z3fooPf, 3 rows), "
                   "launch 1 (_Z3barPfi, 1 row), launch 7 (unnamed: no launch line, 1 row)")  # fmt: skip
    one_line_error(*run_cli("import", "nvbit", p, "-o", tmp_path / "t.parquet", "--launch", 4),
                   f"{p}: no accesses of grid launch 4 (it holds launch 0 (_Z3fooPf, 3 rows), launch 1")  # fmt: skip
    code, _, err = run_cli("import", "nvbit", p, "-o", tmp_path / "t.parquet", "--launch", 1)
    assert code == 0, err


@pytest.mark.parametrize(
    "line, words",
    [
        (_launch_line(0, "k", grid="2147483648,1,1"), "line 1: launch line: grid x is 2147483648, CUDA allows"),
        (_launch_line(0, "k", block="64,64,1"), "line 1: launch line: block (64, 64, 1) has 4096 threads"),
        (
            _launch_line(0, "k", grid="2147483647,1,1"),
            ": launch 0: grid (2147483647, 1, 1) x block (64, 1, 1) is 4294967294 warps",
        ),
        ("", "line 2: CTA (0, 0, 99999) or warp 0 beyond CUDA's grid"),
        ("", "line 2: a MEMTRACE line that does not parse"),
    ],
)
def test_nvbit_sizes_refused(tmp_path, run_cli, line, words):
    p = tmp_path / "m.log"
    access = _memtrace(0, "0,0,0", 0, "LDG.E", 0x1000)
    if "99999" in words:
        access = _memtrace(0, "0,0,99999", 0, "LDG.E", 0x1000)
    elif "does not parse" in words:
        access = access.replace("CTA 0,0,0", "CTA 0,0," + "9" * 30)
    p.write_text((line or _launch_line(0, "k")) + "\n" + access + "\n")
    one_line_error(*run_cli("import", "nvbit", p, "-o", tmp_path / "t.parquet"), str(p), words)


# ---- PORPLE ---------------------------------------------------------------------------------------------


def _porple_stride(tmp_path: Path) -> Path:
    """The shape of PORPLE's md_stride.txt (no block_Y line, 16-byte elements read past array_size in a
    second loop) and cfd_stride.txt (one array read to 4.6 times its array_size)."""
    head = "dimension 1 1\nsizeof 16 4\nblock_X 32 200\narray_size 512 4096\n"
    acc = [f"0 0 0 0 {t} {t}" for t in range(32)] + [f"0 0 0 1 {t} {32 + t}" for t in range(11)]
    acc += [f"1 0 1 0 {t} {t * 150}" for t in range(32)] + ["1 0 1 1 0 4710"]
    p = tmp_path / "stride.txt"
    p.write_text(head + "\n".join(acc) + "\n")
    return p


def test_porple_accesses_beyond_array_size_extend_the_array(tmp_path, run_cli, caplog):
    """The import refused such traces, even with --skip-bad-lines; now the arrays grow and the trace says so."""
    import logging

    import traces

    p = _porple_stride(tmp_path)
    out = tmp_path / "p.parquet"
    for extra in ((), ("--skip-bad-lines",)):
        with caplog.at_level(logging.WARNING, logger="traces.importers.porple"):
            code, _, err = run_cli("import", "porple", p, "-o", out, *extra)
        assert code == 0, err
        t = traces.read(out)  # every lane inside its (extended) object
        a0, a1 = t.info.objects
        assert (a0.size, a1.size) == (43 * 16, 4711 * 4)  # 1.34x and 4.6x
        assert a0.base == 1 << 32 and a1.base == (1 << 32) + 1024  # laid out by the extended sizes: no overlap
        assert int((t.obj == -1).sum()) == 0
        src = t.info.source
        assert src["extended"] == {
            "array0": {"array_size": 512, "extended_to": 688, "ratio": 1.344, "accesses_beyond": 11, "first_line": 37,
                       "last_element": 42},
            "array1": {"array_size": 4096, "extended_to": 18844, "ratio": 4.601, "accesses_beyond": 26, "first_line": 55,
                       "last_element": 4710},
        }  # fmt: skip
        assert src["warnings"][1] == ("array 1: 26 accesses (first on line 55) reach element 4710, beyond its array_size "
                                      "of 4096 bytes; extended to 18844 bytes (4.601x)")  # fmt: skip
        assert "size of array1 (accesses beyond array_size)" in src["estimated"]
        assert any("extended to 688 bytes" in r.getMessage() for r in caplog.records)
        caplog.clear()


# ---- nvprof counters (placement model --counters) ---------------------------------------------------------


def _counters(tmp_path: Path, column: str, value: str) -> Path:
    from fuzzing import COUNTER_COLUMNS, seeds_counters

    tmp_path.mkdir(parents=True, exist_ok=True)
    seeds_counters(tmp_path)
    p = tmp_path / "counters.csv"
    lines = p.read_text().splitlines()
    row = lines[1].replace('"192,256"', "192.256").split(",")
    row[COUNTER_COLUMNS.index(column)] = value
    p.write_text("\n".join([lines[0], ",".join(row)]) + "\n")
    return p


@pytest.mark.parametrize(
    "column, value, words",
    [
        (
            "Block.Y",
            "nan",
            "row 1: Block.Y: expected a positive whole number, got 'nan'",
        ),  # was ValueError from int(nan)
        ("Grid.X", "inf", "row 1: Grid.X: expected a positive whole number, got 'inf'"),  # was OverflowError
        ("Block.Y", "32", "row 1: Grid/Block: block (64, 32, 1) has 2048 threads"),
        ("Duration", "1e999", "row 1: Duration: expected a number in [0, 1e+18], got '1e999'"),
        ("inst_executed", "-5", "row 1: inst_executed: expected a number in [0, 1e+18], got '-5'"),
        (
            "L2.Hit.Rate..L1.Reads.",
            "59918",
            "row 1: L2.Hit.Rate..L1.Reads.: expected a number in [0, 100]",
        ),  # gave negative times
        ("Registers.Per.Thread", "300000", "row 1: Registers.Per.Thread: expected a number in [0, 255]"),
        ("bandwith", "1e-300", "row 1: bandwith: expected a number in [0.001, 1e+06]"),  # was ZeroDivisionError
        ("num_of_cores", "inf", "row 1: num_of_cores: expected a number in [1, 262144]"),
        (
            "L2",
            "inf",
            "row 1: L2: expected a number in [0.001, 10000]",
        ),  # was OverflowError (benchmarks/fuzz.py counters, input 903)
    ],
)
def test_counters_values_refused(tmp_path, run_cli, column, value, words):
    p = _counters(tmp_path, column, value)
    one_line_error(*run_cli("model", "gpuperf", "--counters", p, "--json"), f"{p} {words}")


def test_counters_warps_launched_below_one_take_the_launch(tmp_path, run_cli):
    """warps_launched = 1e-320 divided every count into infinities and NaN times (benchmarks/fuzz.py counters, input 5691)."""
    import json

    p = _counters(tmp_path, "warps_launched", "1e-320")
    code, out, err = run_cli("model", "gpuperf", "--counters", p, "--json")
    assert code == 0, err
    row = json.loads(out)["rows"][0]
    q = _counters(tmp_path / "launch", "warps_launched", "131072")  # 65536 blocks of 64 threads: 2 warps each
    code, out2, err = run_cli("model", "gpuperf", "--counters", q, "--json")
    assert code == 0, err
    assert row["predicted_s"] == json.loads(out2)["rows"][0]["predicted_s"] > 0


def test_counters_file_that_is_a_folder(tmp_path, run_cli):
    one_line_error(*run_cli("model", "bsp", "--counters", tmp_path), f"{tmp_path}: is a folder, expected a file")


# ---- measurements (placement train) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "csv, words",
    [
        (
            b"trace,placement,measured_ns\nt.parquet,,1e999\n",
            "line 2: measured_ns: expected a time in ns in (0, 1e+18], got '1e999'",
        ),
        (b"trace,placement,measured_ns\nt.parquet\n", "line 2: measured_ns: missing"),  # was TypeError on None
        (b'trace,placement,measured_ns\n"t\x00.parquet",,5\n', "line 2: trace: a path holding a NUL character"),
        (b"trace,placement,measured_ns\nt.parquet,\xff\xfe,5\n", "not a text file (byte 38 is not UTF-8)"),
        (
            b'trace,placement,measured_ns\nt.parquet,"' + b"x" * 200_000 + b'",5\n',
            "line 2: not a CSV row (field larger than field limit",
        ),
        # was read as if the row's last field were not there
        (b"trace,placement,measured_ns\nt.parquet,,5\nt.parquet,,5,900\n", "line 3: 4 fields, the header has 3"),
        (b"trace,placement,measured_ns,trace\nt.parquet,,5,u.parquet\n", "column 'trace' named twice in the header"),
        # named the command line's option, where the CSV's column is at fault
        (b"trace,placement,measured_ns\nt.parquet,,5\nt.parquet,A=Q,4\n", "line 3: placement 'A=Q': unknown space 'Q'"),
    ],
)
def test_measurements_refused(tmp_path, run_cli, csv, words):
    from tracemaker import vecadd

    import traces

    traces.write(tmp_path / "t.parquet", *vecadd(2, 2))
    p = tmp_path / "m.csv"
    p.write_bytes(csv)
    one_line_error(*run_cli("train", p, "--gpu", "k80", "-o", tmp_path / "c.toml"), str(p), words)
    assert not (tmp_path / "c.toml").exists()


# ---- --objects files and model parameter files -----------------------------------------------------------


@pytest.mark.parametrize(
    "line, words",
    [
        ("base = 0x" + "f" * 20, "'base' must be a non-negative integer below 2^64"),  # was OverflowError in inference
        ("base = 0xfffffffffffffff0", "base 0xfffffffffffffff0 + size 256 ends beyond the 64-bit address space"),
        ("elem_bytes = true", "elem_bytes must be one of (1, 2, 4, 8, 16), got True"),
        ("space = [1]", "space [1] is not one of"),  # was TypeError (unhashable list)
        (
            "shape = [0x" + "f" * 4000 + ", 2]",
            "shape a tuple holding an integer too long to print x 4 B exceeds size 256",
        ),
        (
            "base = 0x" + "f" * 4000,
            "'base' must be a non-negative integer below 2^64, got an integer of 16000 bits",
        ),  # was ValueError from repr()
    ],
)
def test_objects_file_values_refused(tmp_path, run_cli, line, words):
    from fuzzing import seeds_porple

    seeds_porple(tmp_path)
    toml = tmp_path / "o.toml"
    key = line.split(" ")[0]
    body = {"base": "base = 0x10000", "elem_bytes": "", "space": "", "shape": ""}
    body[key] = line
    toml.write_text('[[object]]\nname = "A"\nsize = 256\n' + "\n".join(body.values()) + "\n")
    one_line_error(*run_cli("import", "porple", tmp_path / "one.txt", "--objects", toml, "-o", tmp_path / "t.parquet"),
                   f"{toml}: object 1 ('A'): {words}")  # fmt: skip


@pytest.mark.parametrize("value", ["nan", "inf", "9" * 30])
def test_model_parameter_file_numbers_finite(tmp_path, run_cli, value):
    text = (ROOT / "configs" / "examples" / "hong-kim-table2.toml").read_text()
    p = tmp_path / "k.toml"
    p.write_text(re.sub(r"^comp_insts = 27", f"comp_insts = {value}", text, flags=re.M))
    one_line_error(
        *run_cli("model", "mwp-cwp", "--kernel", p), f"{p}: kernel.comp_insts: expected a finite number in [0, 1e+18]"
    )


def test_model_parameter_file_machine_values_the_models_divide_by(tmp_path, run_cli):
    text = (ROOT / "configs" / "examples" / "hong-kim-table2.toml").read_text()
    p = tmp_path / "k.toml"
    p.write_text(re.sub(r"^clock_mhz = 1000.0", "clock_mhz = 0", text, flags=re.M))  # was ZeroDivisionError in BSP
    for model in ("mwp-cwp", "gpuperf", "bsp"):
        one_line_error(
            *run_cli("model", model, "--kernel", p), f"{p}: machine.clock_mhz: must be at least 1e-06, got 0.0"
        )


@pytest.mark.parametrize(
    "line, where, words",
    [
        ("[k1]:", "line 6", "expected a header line"),  # a prefix with nothing after: was ValueError (unpack)
        ("0 0 0 0 1 " + "9" * 25, "line 6", "six non-negative integers of at most 17 digits"),  # was OverflowError
        ("0 0 0 0 " + "9" * 17 + " 1", "line 6", "thread 99999999999999999: grid x is"),  # was a 2 EiB allocation
        ("sizeof 4 " + "9" * 30, "line 6", "expected a header line"),
    ],
)
def test_porple_lines_refused(tmp_path, run_cli, line, where, words):
    p = tmp_path / "t.txt"
    p.write_text(
        "dimension 1 2\nsizeof 4 8\nblock_X 64 8\nblock_Y 1 8\narray_size 256 512\n" + line + "\n0 0 0 0 1 1\n"
    )
    one_line_error(*run_cli("import", "porple", p, "-o", tmp_path / "p.parquet"), f"{p} {where}: ", words)


def test_trace_with_a_column_name_that_is_not_utf8(tmp_path, run_cli):
    """pyarrow raised UnicodeDecodeError opening it (found by benchmarks/fuzz.py iter_batches, input 14082)."""
    import traces
    from tracemaker import vecadd

    p = tmp_path / "t.parquet"
    traces.write(p, *vecadd(2, 2))
    data = p.read_bytes()
    assert data.count(b"mask") >= 1
    p.write_bytes(data.replace(b"mask", b"\xe1ask"))
    for reader in (traces.read, lambda q: list(traces.iter_batches(q))):
        with pytest.raises(TraceError, match="not a readable Parquet file"):
            reader(p)
    one_line_error(*run_cli("info", p), str(p), "not a readable Parquet file")


def test_measurements_with_a_column_the_model_does_not_read(tmp_path, run_cli, caplog):
    """A notes column is kept (it is common), and said to be unread rather than silently dropped."""
    import logging

    from tracemaker import vecadd

    import traces

    traces.write(tmp_path / "t.parquet", *vecadd(2, 2))
    p = tmp_path / "m.csv"
    p.write_text("trace,placement,measured_ns,notes\nt.parquet,,5000,x\nt.parquet,,4000,\n")
    with caplog.at_level(logging.WARNING, logger="placement.training"):
        rc, _, err = run_cli("train", p, "--gpu", "k80", "-o", tmp_path / "c.toml")
    assert rc == 0, err
    said = [r.getMessage() for r in caplog.records if "not read" in r.getMessage()]
    assert said == [f"{p}: column 'notes' is not read (the model takes trace, placement and measured_ns)"]


@pytest.mark.parametrize("name, words", [("va,l", "holds ','"), ("va=l", "holds '='"), ("a;b", "holds ';'"),
                                         ("a b", "holds ' '"), ("a\nb", "holds '\\n'"), ("", "is empty")])  # fmt: skip
def test_object_names_place_cannot_address_are_refused(tmp_path, run_cli, name, words):
    """`--place 'va,l=T'` splits the name: such an object could never be moved, and a newline broke `info`'s table."""
    import traces

    p = _with_metadata(tmp_path, lambda d: d["objects"][0].update(name=name))
    with pytest.raises(TraceError) as info:
        traces.read_info(p)
    assert info.value.field == "objects[0].name" and words in str(info.value), str(info.value)
    one_line_error(*run_cli("info", p), f"{p}: objects[0].name: object name {name!r} {words}")
    # the --objects file of an import says the same
    from fuzzing import seeds_porple

    seeds_porple(tmp_path)
    toml = tmp_path / "o.toml"
    toml.write_text(f'[[object]]\nname = "{name.encode("unicode_escape").decode()}"\nbase = 0x10000\nsize = 256\n')
    out = tmp_path / "t2.parquet"
    err = run_cli("import", "porple", tmp_path / "one.txt", "--objects", toml, "-o", out)
    one_line_error(*err, f"{toml}: object 1")
    assert not out.exists()


def test_training_on_one_measurement_names_the_file(tmp_path, run_cli):
    from tracemaker import vecadd

    import traces

    traces.write(tmp_path / "t.parquet", *vecadd(2, 2))
    p = tmp_path / "one.csv"
    p.write_text("trace,placement,measured_ns\nt.parquet,,1000\n")
    one_line_error(*run_cli("train", p, "--gpu", "k80", "-o", tmp_path / "c.toml"),
                   f"{p}: training needs at least 2 measured placements, got 1")  # fmt: skip


def test_objects_file_with_two_objects_over_the_same_bytes(tmp_path, run_cli):
    """Was "objects 'A' and 'B' overlap", naming no file; objects of two families (global and shared) may share
    numbers, their address spaces being apart."""
    from fuzzing import seeds_porple

    seeds_porple(tmp_path)
    toml = tmp_path / "o.toml"
    body = '[[object]]\nname = "A"\nbase = 0x10000\nsize = 256\n[[object]]\nname = "B"\nbase = 0x10080\nsize = 256\n'
    toml.write_text(body)
    one_line_error(*run_cli("import", "porple", tmp_path / "one.txt", "--objects", toml, "-o", tmp_path / "t.parquet"),
                   f"{toml}: object 2 ('B') overlaps object 1 ('A'): [0x10080, +256) and [0x10000, +256)")  # fmt: skip
    from traces.importers.objects import load_objects_toml

    toml.write_text(body.replace('name = "B"\n', 'name = "B"\nspace = "shared"\n'))
    assert [s.name for s in load_objects_toml(toml)] == ["A", "B"]
