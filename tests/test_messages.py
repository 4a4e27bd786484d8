"""What a new user reads (issue 34): messages that name the right problem, text that reads right."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT
from expect import one_line

EX = ROOT / "configs" / "examples"


# ---- input files ------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["import", "nvbit"], ["import", "porple"], ["info"], ["rank"]])
def test_a_folder_given_for_a_file(tmp_path, run_cli, argv):
    """Was: "no such file" (import) and "not a readable trace file ... [Errno 21]" (info, rank)."""
    d = tmp_path / "adir"
    d.mkdir()
    extra = ["-o", tmp_path / "t.parquet"] if argv[0] == "import" else ["--gpu", "k80"] if argv[0] == "rank" else []
    one_line(*run_cli(*argv, d, *extra), f"{d}: is a folder, expected a file")


@pytest.mark.parametrize("fmt, what", [("porple", "a PORPLE trace"), ("nvbit", "an NVBit mem_trace log"),
                                       ("accelsim", "an Accel-Sim trace")])  # fmt: skip
def test_a_parquet_trace_given_to_an_importer(tmp_path, run_cli, fmt, what):
    """Was: ~380 characters of quoted binary (porple, accelsim), and for nvbit exit 0 with a trace of no rows."""
    src = EX / "vecadd.parquet"
    err = one_line(*run_cli("import", fmt, src, "-o", tmp_path / "t.parquet"), f"{src}: is a Parquet file, not {what}")
    assert "\\x" not in err and len(err) < 250 + len(str(src)) * 2
    assert not (tmp_path / "t.parquet").exists()


@pytest.mark.parametrize("size", ["99999999999999999999", "4294967296"])
def test_a_size_beyond_the_kernels_int(tmp_path, run_cli, size):
    """Was an internal error (OverflowError from numpy, or a 96 GiB allocation)."""
    code, out, err = run_cli("bench", "gen", "vecadd", "--size", size, "-o", tmp_path / "v.parquet")
    one_line(code, out, err, "vecadd: --size n must be at most 2,147,483,647")
    assert not (tmp_path / "v.parquet").exists()


def test_out_of_memory_is_said_in_one_line(tmp_path, run_cli, monkeypatch):
    """An input too big for the machine (numpy's MemoryError while a trace is generated): exit 2, not "a bug"."""
    from traces import generators

    def too_big(*a, **k):
        raise MemoryError("Unable to allocate 48.0 GiB for an array with shape (201326592, 32) and data type uint64")

    monkeypatch.setattr(generators, "generate", too_big)
    code, out, err = run_cli("bench", "gen", "vecadd", "--size", "4096", "-o", tmp_path / "v.parquet")
    one_line(code, out, err, "out of memory (Unable to allocate 48.0 GiB", "give a smaller --size")
    assert not (tmp_path / "v.parquet").exists()


@pytest.mark.parametrize(
    "argv", [["rank"], ["evaluate"], ["evaluate", "--stream", "yes"], ["evaluate", "--place", "A=T"]]
)
def test_a_build_the_gpu_cannot_launch(tmp_path, run_cli, argv):
    """Was "illegal placement (launch): 72 registers per thread outside c2050's 0..63": no file named, and a
    "placement" blamed where the traced build (an sm_80 kernel of 72 registers a thread; Fermi allows 63) is what
    cannot run, whatever the placement."""
    import dataclasses

    import placement
    import traces
    from placement.placements import IllegalPlacement
    from tracemaker import vecadd

    cols, info = vecadd()
    path = tmp_path / "v.parquet"
    traces.write(path, cols, dataclasses.replace(info, regs_per_thread=72))
    line = one_line(*run_cli(argv[0], path, "--gpu", "c2050", *argv[1:]))
    assert line.endswith(f"error: {path}: the traced build cannot run on c2050, whatever the placement (launch): 72 "
                         "registers per thread outside c2050's 0..63\n"), line  # fmt: skip
    with pytest.raises(IllegalPlacement, match="kernel 'vecadd': the traced build cannot run on c2050"):
        placement.rank(traces.read(path), "c2050")
    assert placement.evaluate(path, "k80").target.time_ns > 0  # the K80 allows 255


def test_a_binary_line_is_not_quoted(tmp_path, run_cli):
    bad = tmp_path / "p.txt"
    bad.write_bytes(b"sizeof 4\n\x01\x02\x03\xff\xfe" * 40 + b"\n")
    err = one_line(
        *run_cli("import", "porple", bad, "-o", tmp_path / "t.parquet"), f"{bad} line 2: ", "got binary data"
    )
    assert "\\x" not in err and len(err) < 250 + len(str(bad))


def test_an_nvbit_log_without_accesses(tmp_path, run_cli):
    """Was: exit 0 and a trace of no rows."""
    log = tmp_path / "log.txt"
    log.write_text("hello\nworld\n")
    one_line(
        *run_cli("import", "nvbit", log, "-o", tmp_path / "t.parquet"), f"{log}: no memory access lines", "in 2 lines"
    )
    assert not (tmp_path / "t.parquet").exists()


# ---- text ---------------------------------------------------------------------------------------------


def test_the_sample_as_the_best_placement():
    """Was: "The best placement (sample) is 0 % faster than the sample"."""
    from placement.uncertainty import notes

    (line,) = notes(100.0, [100.0, 104.0], ["sample", "A=T"])
    assert line.startswith("The sample placement is already the best") and "0 %" not in line
    (line,) = notes(100.0, [100.0, 104.0], ["A=T", "sample"])  # as fast, not "0 % faster"
    assert "(A=T) is as fast as the sample" in line and "0 %" not in line
    (line,) = notes(100.0, [95.0, 100.0], ["A=T", "sample"])
    assert "(A=T) is 5.3 % faster than the sample, within 17 %" in line


def test_counts_of_one(tmp_path, run_cli):
    """Was: "over 1 warps"."""
    from placement.units import plural

    assert [plural(n, "warp") for n in (0, 1, 2, 8192)] == ["0 warps", "1 warp", "2 warps", "8,192 warps"]
    t = tmp_path / "t.parquet"
    code, out, err = run_cli("bench", "gen", "vecadd", "--size", "32", "--block", "32", "-o", t)
    assert code == 0, err
    assert out.rstrip().endswith("16 instructions over 1 warp")
    code, out, err = run_cli("info", t)
    assert code == 0, err
    assert "3 warp-level memory instructions from 1 warp\n" in out and "executed 16 over 1 warp;" in out
    code, out, err = run_cli("convert", t, "-o", tmp_path / "t.arrow")
    assert code == 0, err
    assert ": 3 rows of vecadd" in out


def test_report_renders_code_not_backticks():
    """Was: the text output's `placement train ...` with its backticks in the HTML."""
    import placement
    from placement.report import render

    page = render(placement.rank(EX / "vecadd.parquet", "k80", top=3, hints=True))
    prose = re.sub(r"<pre>.*?</pre>|<svg.*?</svg>|<style>.*?</style>", "", page, flags=re.S)
    assert "`" not in prose
    assert "<code>placement train MEASURED.csv --gpu k80 -o coeffs.toml</code>" in page


def test_a_builds_own_shared_memory_beyond_the_gpu_is_named_so(tmp_path, run_cli):
    """Was "the kernel's shared arrays () need 60,000 bytes per block": no array is in shared memory, the
    build's own smem_per_block is what does not fit."""
    import dataclasses

    import traces
    from tracemaker import vecadd

    cols, info = vecadd()
    path = tmp_path / "v.parquet"
    traces.write(path, cols, dataclasses.replace(info, smem_per_block=60000))
    line = one_line(*run_cli("rank", path, "--gpu", "k80"))
    assert line.endswith("whatever the placement (shared): the kernel's own shared memory (smem_per_block) needs "
                         "60,000 bytes per block; k80 allows 49,152\n"), line  # fmt: skip


def test_windows_beyond_the_accesses_name_that_alone(run_cli):
    """Was "... need 16 bytes of shared memory per block ... (k80 allows 49,152), or a warp makes fewer than 100
    accesses": the shared memory fitted; the windows were too many for the accesses."""
    ex = Path(__file__).resolve().parents[1] / "configs" / "examples" / "conv1d.parquet"
    line = one_line(*run_cli("evaluate", ex, "--gpu", "k80", "--place", "mask=S;windows=100"))
    assert line.endswith("windows=100: the staged tiles of mask: a warp makes fewer than 100 accesses to them, so at "
                         "most 8 windows\n"), line  # fmt: skip
