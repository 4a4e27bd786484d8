"""Bad input never crashes (issue 19): each defect the fuzzers found, pinned by an input that showed it.

Every case goes through the command where one exists: exit 2, one line on stderr
naming the file and the key, row or line, nothing on stdout, no output file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from traces.errors import InputError, TraceError

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


def test_input_error_message_is_one_line():
    e = InputError("t.parquet: not a readable Parquet file: Couldn't deserialize thrift\nDeserializing page header failed.\n")
    assert str(e) == "t.parquet: not a readable Parquet file: Couldn't deserialize thrift Deserializing page header failed."
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
        (lambda d: d["instructions"].update(warps=5), "instructions.warps", "5 warps, but grid (2, 1, 1) x block (64, 1, 1) runs 4"),
        (lambda d: d["objects"][0].update(base=(1 << 64) - 8), "objects[0].size", "ends beyond the global address space"),
        (lambda d: d.update(measured={"time_ns": 1 << 1100, "gpu": "k80"}), "measured.time_ns", "finite number of ns"),
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
