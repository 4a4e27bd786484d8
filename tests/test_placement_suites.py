"""benchmarks/make_placement_suites.py's H100 suite and benchmarks/placement_accuracy.py's figures."""

import csv
import hashlib
import json
import math
import tomllib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement.batch import load_suite
from placement.gpu import get_gpu
from traces import generators
from conftest import benchmark_script

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "configs" / "suites" / "h100_variants.toml"


def _load(name: str):
    return benchmark_script(name)


@pytest.fixture(scope="module")
def mk():
    return _load("make_placement_suites")


@pytest.fixture(scope="module")
def acc():
    return _load("placement_accuracy")


@pytest.mark.parametrize("gen,size,block", [
    ("vecadd", {"n": 4096}, [256]),
    ("conv1d", {"n": 4096, "mask_width": 7}, [128]),
    ("conv2d_channels", {"width": 64, "height": 32, "channels": 3, "mask": 3}, [16, 16]),
    ("conv2d_channels", {"width": 64, "height": 32, "channels": 1, "mask": 5}, [32, 8]),
    ("matvec", {"rows": 256, "cols": 128}, [128]),
    ("histogram", {"n": 8192, "bins": 256}, [512]),
    ("matmul_naive", {"W": 64}, [8]),
])  # fmt: skip
def test_trace_rows_is_the_generators_row_count(mk, gen, size, block):
    cols, _ = generators.generate(gen, list(size.values()), block)
    assert mk.trace_rows(gen, size) == len(next(iter(cols.values())))


def test_traced_size_halves_the_scale_parameter_until_the_trace_holds(mk):
    # vecadd: 3 rows a warp; 2^26 -> 6.3 M rows, 2^25 -> 3,145,728 > 3 M, 2^24 -> 1.57 M
    assert mk.traced_size("vecadd", {"n": 1 << 26}) == {"n": 1 << 24}
    assert mk.traced_size("vecadd", {"n": 1 << 24}) == {"n": 1 << 24}
    # conv2d_channels 2048^2, 3 channels, 3x3: 55 rows a warp; height 1024 -> 3.6 M, 512 -> 1.8 M (width kept)
    assert mk.traced_size("conv2d_channels", {"width": 2048, "height": 2048, "channels": 3, "mask": 3}) == {
        "width": 2048,
        "height": 512,
        "channels": 3,
        "mask": 3,
    }
    # matvec 8192^2: (2 * cols + 1) * 256 warps; cols 4096 -> 2.1 M (rows, the grid, kept)
    assert mk.traced_size("matvec", {"rows": 8192, "cols": 8192}) == {"rows": 8192, "cols": 4096}
    # matmul W: (2W + 1) W^2 / 32; 512 -> 8.4 M, 256 -> 1.05 M
    assert mk.traced_size("matmul", {"W": 2048}) == {"W": 256}


def test_variant_codes_map_to_placements(mk):
    assert mk.h100_placement("vecadd", "a=G,b=G") == ("", "")
    assert mk.h100_placement("vecadd", "a=T,b=R") == ("a=T,b=R", "")
    assert mk.h100_placement("conv1d", "in=S/G,mask=C") == ("in=S/G,mask=C", "")
    # a staged variant keeps its measured windows, scaled to keep its tiles where a smaller W is traced; the tiled
    # kernel is the textbook tiling, W / TILE windows of the traced W, read in its unrolled k loop; a tile wider than
    # the traced matrix is out
    assert mk.h100_placement("matmul", "M=S/G,N=S/G;windows=4") == ("M=S/G,N=S/G;windows=4", "")
    assert mk.h100_placement("matmul", "M=S/G,N=S/G;windows=4", {"W": 256}, [16], {"W": 1024}) == (
        "M=S/G,N=S/G;windows=1",
        "",
    )
    assert mk.h100_placement("matmul", "tiled", {"W": 256}, [16], {"W": 1024}) == (
        "M=S/G,N=S/G;windows=16;unrolled",
        "",
    )
    assert mk.h100_placement("matmul", "M=S/G,N=S/G;windows=2", {"W": 256}, [16], {"W": 1024})[0] is None
    assert mk.h100_placement("conv2d_channels", "in=S/G-bbox,mask=G") == ("in=S/G", "")
    for kernel, v in (("conv1d", "in=R*,mask=G"), ("conv1d", "in=G,mask=R*"), ("matmul", "tiled")):
        p, why = mk.h100_placement(kernel, v)
        assert p is None and why


HEADER = ["group", "kernel", "variant", "size", "block", "grid", "smem_bytes", "med_us", "check", "note"]


def _write(path: Path, rows: list[tuple]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        for kernel, variant, size, block, smem, med in rows:
            w.writerow(["gen", kernel, variant, size, block, "1x1x1", smem, med, "ok", ""])


def test_h100_suite_from_hand_made_data(mk, tmp_path):
    d = tmp_path / "h100-placements"
    d.mkdir()
    # histogram 2^16, 256 bins, block 256: privatized bins are 1024 B (the tool's tile); 2048 B is not
    run1 = [("vecadd", "a=G,b=G", "n=67108864", "256x1x1", 0, "10.0"),
            ("vecadd", "a=G,b=R", "n=67108864", "256x1x1", 0, "20.0"),
            ("conv1d", "in=G,mask=G", "n=4096;mask_width=7", "128x1x1", 0, "5.0"),
            ("conv1d", "in=R*,mask=G", "n=4096;mask_width=7", "128x1x1", 0, "4.0"),
            ("histogram", "bins=G", "n=65536;bins=256", "256x1x1", 0, "30.0"),
            ("histogram", "bins=S/G", "n=65536;bins=256", "256x1x1", 1024, "3.0"),
            ("histogram", "bins=G", "n=65536;bins=256", "512x1x1", 0, "30.0"),
            ("histogram", "bins=S/G", "n=65536;bins=256", "512x1x1", 2048, "3.0")]  # fmt: skip
    run2 = [r[:5] + ({"10.0": "12.0", "20.0": "21.0"}.get(r[5], r[5]),) for r in run1]
    _write(d / "variants-run1.csv", run1)
    _write(d / "variants-run2.csv", run2)
    _write(
        d / "variants-extra.csv",
        [
            ("empty", "empty", "grid=1", "256x1x1", 0, "3.9"),
            ("histogram", "bins=G", "n=131072;bins=256", "256x1x1", 0, "60.0"),
        ],
    )
    text = mk.h100_suite(tmp_path)
    doc = tomllib.loads(text)
    entries = {e["id"]: e for e in doc["entry"]}
    assert list(entries) == ["vecadd-67108864-b256", "conv1d-4096-7-b128", "histogram-65536-256-b256",
                             "histogram-65536-256-b512", "histogram-131072-256-b256"]  # fmt: skip
    v = entries["vecadd-67108864-b256"]
    assert v["size"] == [1 << 24] and v["block"] == [256]
    assert v["placements"] == ["", "b=R"] and v["measured_ns"] == [11000.0, 20500.0]  # medians of two runs
    # traced at 2^24 of the measured 2^26: the same blocks of 256 elements, 65,536 of 262,144
    assert v["launch_ctas"] == 262144 and mk.RATIOS_ONLY not in v["note"] and "n=16777216" in v["note"]
    assert "65,536 of the measured launch's 262,144 blocks" in v["note"]
    c = entries["conv1d-4096-7-b128"]
    assert "launch_ctas" not in c
    assert c["placements"] == [""] and c["measured_ns"] == [5000.0] and mk.RATIOS_ONLY not in c["note"]
    assert entries["histogram-65536-256-b256"]["placements"] == ["", "bins=S/G"]
    assert entries["histogram-65536-256-b512"]["placements"] == [""]  # 2048 B measured: not the tool's tile
    assert "variants-extra.csv" in entries["histogram-131072-256-b256"]["note"]
    assert "conv1d in=R*,mask=G" in text and "histogram bins=S/G" in text and "2048 B measured" in text
    assert "empty" not in entries


def test_bundled_h100_suite_parses_and_holds(mk):
    suite = load_suite(SUITE)
    assert suite.gpus == ["h100"]
    assert {e.source.generator for e in suite.entries} <= set(generators.names())
    notes = {e["id"]: e["note"] for e in tomllib.loads(SUITE.read_text())["entry"]}
    for e in suite.entries:
        assert e.placements[0] == "" and len(e.measured_ns) == len(e.placements)
        spec = generators.get(e.source.generator)
        size = dict(zip((p.name for p in spec.size), e.source.size))
        assert mk.trace_rows(e.source.generator, size) <= mk.MAX_TRACE_ROWS
        measured = e.id.split("-")[1:-1]  # the measured size's values, in the generator's order
        smaller = list(map(int, measured)) != list(size.values())
        # a smaller trace says the measured launch's blocks where its blocks are the same, else is ratios only
        assert (smaller and e.source.launch_ctas is None) == (mk.RATIOS_ONLY in notes[e.id]), e.id
        assert e.source.launch_ctas is None or (smaller and e.source.generator != "matvec"), e.id


@pytest.mark.parametrize(
    "kernel, gen, size, block",
    [("vecadd", "vecadd", {"n": 5000}, [256]), ("conv1d", "conv1d", {"n": 4096, "mask_width": 7}, [128]),
     ("histogram", "histogram", {"n": 3000, "bins": 256}, [512]),
     ("conv2d_channels", "conv2d_channels", {"width": 80, "height": 40, "channels": 3, "mask": 3}, [16, 16]),
     ("conv2d_kt", "conv2d_kt", {"width": 192, "height": 72}, [32, 4, 2, 2])],
)  # fmt: skip
def test_launch_blocks_is_the_generators_grid(mk, kernel, gen, size, block):
    _, info = generators.generate(gen, list(size.values()), block)
    assert mk.launch_blocks(kernel, size, block) == info.ctas
    assert mk.launch_blocks("matvec", {"rows": 64, "cols": 64}, [128]) is None


def _rows():
    def r(entry, placement, measured, model, tau, kernel="k1"):
        return {
            "entry": entry,
            "gpu": "h100",
            "kernel": kernel,
            "placement": placement,
            "measured_ns": measured,
            "model_ns": model,
            "kendall_tau": tau,
        }

    return [
        r("A", "sample", 100_000.0, 50_000.0, 1.0), r("A", "x=R", 80_000.0, 45_000.0, 1.0),
        r("A", "x=T", 130_000.0, 55_000.0, 1.0),
        r("B", "sample", 10_000.0, 10_000.0, -1.0, "k2"), r("B", "x=R", 9_500.0, 12_000.0, -1.0, "k2"),
        r("C", "sample", 50_000.0, 10_000.0, 1.0, "k2"), r("C", "x=R", 60_000.0, 11_000.0, 1.0, "k2"),
    ]  # fmt: skip


def test_score_rows_hand_computed(acc):
    s = acc.score_rows(_rows(), {"C"})
    # ratio errors: A |0.9/0.8 - 1| = 0.125, |1.1/1.3 - 1| = 0.1538; B |1.2/0.95 - 1| = 0.2632; C |1.1/1.2 - 1| = 0.0833
    assert s["placements"] == 4
    assert s["median_ratio_error"] == pytest.approx((0.125 + 0.2 / 1.3) / 2)
    assert s["significant_effects"] == 3 and s["sign_right"] == 3  # B's 5 % is no effect
    assert s["top1_share"] == pytest.approx(2 / 3) and s["near_top1_share"] == pytest.approx(2 / 3)  # B: 10.0 > 9.69
    assert s["median_kendall_tau"] == 1.0  # B and C have two placements: no tau
    # absolute: A only (B under 20 us, C ratios only): |0.5 - 1|, |45/80 - 1|, |55/130 - 1|
    assert s["abs_placements"] == 3 and s["median_abs_error"] == pytest.approx(0.5)
    assert s["median_model_over_measured"] == pytest.approx(0.5)
    none = acc.score_rows(_rows(), None, "no suite")
    assert none["median_abs_error"] is None and none["abs_left_out"] == "no suite"
    assert acc.score_rows(_rows(), set())["abs_placements"] == 5  # C's 50 and 60 us count too


def test_placement_kinds_leave_out_the_window_count(acc):
    assert acc.placement_kind("M=S/G,N=S/G;windows=32;unrolled") == "M=S/G,N=S/G;unrolled"
    assert acc.placement_kind("input=S/G;windows=1") == "input=S/G"
    assert acc.placement_kind("a=S/G;windows=12") == "a=S/G"
    assert acc.placement_kind("x=R") == "x=R" and acc.placement_kind("sample") == "sample"


def test_figures_per_kind_of_placement_by_hand(acc):
    kinds = acc.by_kind(acc.score_rows(_rows(), set())["rows"])
    assert set(kinds) == {("k1", "x=R"), ("k1", "x=T"), ("k2", "x=R")}
    # k1 x=R: A measured 0.8, predicted 0.9 (a 20 % effect, the right sign)
    a = kinds["k1", "x=R"]
    assert (a["placements"], a["significant_effects"], a["sign_right"]) == (1, 1, 1)
    assert a["median_ratio_error"] == pytest.approx(0.125) and a["median_predicted_ratio"] == pytest.approx(0.9)
    assert kinds["k1", "x=T"]["median_ratio_error"] == pytest.approx(1 - 1.1 / 1.3)
    # k2 x=R: B 0.95 against 1.2 (no effect), C 1.2 against 1.1: one effect, its sign right
    b = kinds["k2", "x=R"]
    assert (b["placements"], b["significant_effects"], b["sign_right"]) == (2, 1, 1)
    assert b["median_ratio_error"] == pytest.approx((1.2 / 0.95 - 1 + 1 - 1.1 / 1.2) / 2)
    assert b["mean_ratio_error"] == pytest.approx(b["median_ratio_error"])
    assert b["median_measured_ratio"] == pytest.approx((0.95 + 1.2) / 2)
    assert b["median_predicted_ratio"] == pytest.approx((1.2 + 1.1) / 2)


def test_score_reads_the_ratios_only_marks_from_the_suite(acc, tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('[[entry]]\nid = "A"\nnote = "x"\n[[entry]]\nid = "C"\nnote = "traced smaller (ratios only): y"\n')
    table = pa.Table.from_pylist(_rows())
    meta = {
        "suite": {"path": str(suite), "resolved": str(suite), "sha256": hashlib.sha256(suite.read_bytes()).hexdigest()}
    }
    out = tmp_path / "r.parquet"
    pq.write_table(table.replace_schema_metadata({b"placement.batch": json.dumps(meta).encode()}), out)
    assert acc.ratios_only_entries(str(out)) == ({"C"}, "")
    s = acc.score(str(out))
    assert s["abs_placements"] == 3 and s["median_abs_error"] == pytest.approx(0.5)
    assert s["by_kernel"]["k1"]["median_ratio_error"] == pytest.approx((0.125 + 0.2 / 1.3) / 2)
    assert s["by_kernel"]["k2"]["placements"] == 2 and math.isclose(s["by_kernel"]["k2"]["top1_share"], 0.5)
    suite.write_text(suite.read_text() + "\n")
    ids, why = acc.ratios_only_entries(str(out))
    assert ids is None and "changed" in why
    s = acc.score(str(out))
    assert s["median_abs_error"] is None and s["gpu_override"] is None


def test_results_priced_with_gpu_say_so(acc, tmp_path, capsys):
    """A results file of `placement batch --gpu` has no measured rows to score: the script says why."""
    from placement import batch

    suite = tmp_path / "s.toml"
    suite.write_text('gpu = "k80"\n[[entry]]\ngenerator = "vecadd"\nsize = [2048]\nplacements = ["", "a=T"]\n'
                     "measured_ns = [1000.0, 900.0]\n")  # fmt: skip
    out = tmp_path / "r.parquet"
    batch.run(suite, out, gpu="v100")
    s = acc.score(str(out))
    assert s["gpu_override"] == "v100" and s["placements"] == 0 and s["median_ratio_error"] is None
    assert acc.main([str(out)]) == 0
    assert (
        "priced on v100 with placement batch --gpu: the suite's measured times are left out" in capsys.readouterr().out
    )


def test_a_measured_conv_cache_becomes_a_suite_the_batch_reads(mk, tmp_path):
    # benchmarks/conv2d_kt_variants.py's JSON on another GPU: Kernel Tuner's keys, times in ms; a shape missing
    # one of its four builds (ptxas refused it) is left out
    kt = _load("conv2d_kt_variants")
    cache = {}
    for n, shape in enumerate(kt.shapes()):
        for ro, sh in kt.VARIANTS:
            if shape == (16, 1, 1, 1) and (ro, sh) == (1, 1):
                continue
            bx, by, tx, ty = shape
            cache[kt.key(shape, ro, sh)] = {"block_size_x": bx, "block_size_y": by, "tile_size_x": tx,
                                            "tile_size_y": ty, "read_only": ro, "use_shmem": sh, "use_padding": 0,
                                            "time": 1.0 + 0.1 * n + 0.01 * (2 * ro + sh)}  # fmt: skip
    doc = {"device_name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "nvcc": "Build cuda_13.0", "image": 4096,
           "repeat": 7, "cache": cache}  # fmt: skip
    src = tmp_path / "conv2d_kt.json"
    src.write_text(json.dumps(doc))
    assert mk.main(["--out", str(tmp_path), "--conv-cache", str(src), "--conv-gpu", "h100"]) == 0
    suite = load_suite(tmp_path / "kerneltuner_conv_h100.toml")
    assert suite.gpus == ["h100"] and suite.name == "kerneltuner-conv-h100"
    entries = {e.id: e for e in suite.entries}
    assert len(entries) == len(kt.shapes()) - 1 == 31 and "conv-16x1-t1x1" not in entries
    e = entries["conv-32x4-t2x2"]
    n = kt.shapes().index((32, 4, 2, 2))
    assert e.placements == ("", "input=R", "input=S/G;windows=1;unrolled", "input=S/R;windows=1;unrolled")  # one window
    # G, R, S/G, S/R: (read_only, use_shmem) = (0, 0), (1, 0), (0, 1), (1, 1), timed 0.01 ms x (2 ro + sh) apart
    assert list(e.measured_ns) == pytest.approx([(1.0 + 0.1 * n + 0.01 * k) * 1e6 for k in (0, 2, 1, 3)])
    # the measured launch: 4096 / (32 x 2) x 4096 / (4 x 2) blocks; the trace's time is scaled to it, so the
    # absolute times compare (no ratios-only mark)
    assert e.source.launch_ctas == 64 * 512 and mk.RATIOS_ONLY not in e.note
    w, h = e.source.size
    assert f"traced at {w} x {h}: {(w // 64) * (h // 8):,} of its 32,768 blocks" in e.note


def test_bundled_h200_conv_suite_holds_every_shape_the_sm_can_launch(mk):
    # configs/suites/kerneltuner_conv_h200.toml, made from conv2d_kt_variants.py on an H200 (30 Nov 2026): a shape is
    # in it exactly when each of its four builds fits the SM's 65,536 registers (the sm_90 register tables, each
    # warp's registers in units of 256); the three left out are the 2 x 2 tiles of 64 x 8, 128 x 4 and 128 x 8
    # threads, whose plain builds take 254, 164 and 254 registers a thread
    kt = _load("conv2d_kt_variants")
    suite = load_suite(ROOT / "configs" / "suites" / "kerneltuner_conv_h200.toml")
    assert suite.gpus == ["h200"] and suite.name == "kerneltuner-conv-h200"
    sm = get_gpu("h200").compute
    entries = {e.id: e for e in suite.entries}

    def launchable(shape, ro, sh):
        regs = kt.table_registers(shape, ro, sh, "sm_90")
        warps = shape[0] * shape[1] // 32 or 1
        return warps * math.ceil(regs * 32 / sm.reg_alloc_unit) * sm.reg_alloc_unit <= sm.regs_per_sm

    left_out = []
    for shape in kt.shapes():
        bx, by, tx, ty = shape
        if not all(launchable(shape, ro, sh) for ro, sh in kt.VARIANTS):
            left_out.append(shape)
            continue
        e = entries[f"conv-{bx}x{by}-t{tx}x{ty}"]
        assert e.placements == ("", "input=R", "input=S/G;windows=1;unrolled", "input=S/R;windows=1;unrolled")
        assert len(e.measured_ns) == 4 and all(t > 0 for t in e.measured_ns)
        assert e.source.launch_ctas == (4096 // (bx * tx)) * (4096 // (by * ty))
    assert left_out == [(64, 8, 2, 2), (128, 4, 2, 2), (128, 8, 2, 2)]
    assert len(entries) == len(kt.shapes()) - 3 == 29


def test_two_conv_runs_become_one_suite_at_their_mean(mk, tmp_path):
    # two runs on one GPU: each build both timed at the mean of the two (ms), the run-to-run spread in the header;
    # a build one run did not time is left out, so its shape is; not_launched builds of either run are named
    k1, k2 = "32,4,1,1,0,0,0,1,15,15", "32,4,1,1,1,0,0,1,15,15"
    run1 = {"cache": {k1: {"time": 1.0}, k2: {"time": 2.0}, "x": {"time": 5.0}}, "not_launched": {"a": "r"}}
    run2 = {"cache": {k1: {"time": 1.2}, k2: {"time": 2.0}}, "not_launched": {"b": "r"}}
    doc = mk.merge_conv_runs([run1, run2])
    assert doc["cache"][k1]["time"] == pytest.approx(1.1) and doc["cache"][k1]["times"] == [1.0, 1.2]
    assert doc["cache"][k2]["time"] == 2.0 and "x" not in doc["cache"] and doc["runs"] == 2
    # |1.0 / 1.1 - 1| = |1.2 / 1.1 - 1| = 9.09 %, the k2 pair 0 %: median (of 4) the upper middle, 9.09 %; most 9.09 %
    assert doc["spread"] == pytest.approx((100 / 11, 100 / 11))
    assert set(doc["not_launched"]) == {"a", "b"}
    assert mk.merge_conv_runs([run1]) is run1


def _conv_entry(**kw):
    e = {"block_size_x": 32, "block_size_y": 4, "tile_size_x": 1, "tile_size_y": 1, "read_only": 0, "use_shmem": 0,
         "use_padding": 0, "time": 1.5}  # fmt: skip
    e.update(kw)
    return e


@pytest.mark.parametrize("text,says", [
    (None, "cannot read: No such file or directory"),
    ('{"cache": {"k": ', "not JSON"),
    (b"\xff\xfe", "not JSON"),
    ("[1, 2]", 'no "cache" object'),
    ('{"cache": {}}', 'no "cache" object'),
    ('{"cache": {"k": 3}}', "cache entry 'k': expected an object, got int"),
    (json.dumps({"cache": {"k": _conv_entry(read_only=True)}}), "cache entry 'k': read_only: expected an integer"),
    (json.dumps({"cache": {"k": _conv_entry(tile_size_y="2")}}), "tile_size_y: expected an integer, got '2'"),
    (json.dumps({"cache": {"k": _conv_entry(time=-1.0)}}), "time: expected a positive finite number (ms), got -1.0"),
    (json.dumps({"cache": {"k": _conv_entry(time=float("inf"))}}), "got inf"),
    (json.dumps({"cache": {"k": _conv_entry(time="fast")}}), "time: expected a positive finite number (ms), got 'fast'"),
])  # fmt: skip
def test_a_bad_conv_cache_is_one_line_and_exit_2_with_nothing_written(mk, tmp_path, capsys, text, says):
    src = tmp_path / "run.json"
    if isinstance(text, bytes):
        src.write_bytes(text)
    elif text is not None:
        src.write_text(text)
    out = tmp_path / "out"
    out.mkdir()
    assert mk.main(["--out", str(out), "--conv-cache", str(src), "--conv-gpu", "h100"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"make_placement_suites: {src}: ") and says in err[0]
    assert list(out.iterdir()) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=12), kids, max_size=4),
                    max_leaves=12))  # fmt: skip
def test_any_json_is_read_or_refused_with_the_files_name(mk, tmp_path, doc):
    # whatever JSON a run file holds, read_conv_run returns it checked or raises SuiteInputError naming the file
    src = tmp_path / "any.json"
    src.write_text(json.dumps(doc))
    try:
        got = mk.read_conv_run(src)
    except mk.SuiteInputError as e:
        assert str(e).startswith(f"{src}: ") and "\n" not in str(e)
        return
    assert all(isinstance(v[k], int) for v in got["cache"].values() for k in mk.CONV_KEYS)


def test_a_data_folder_missing_a_file_writes_no_suite(mk, tmp_path, capsys):
    # the suites from ../shared/data are all made before any is written: a missing file is one line, exit 2
    data, out = tmp_path / "data", tmp_path / "out"
    (data / "gpuperfpredict" / "Apps-Gpus").mkdir(parents=True)
    out.mkdir()
    assert mk.main(["--data", str(data), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Apps-Gpus/matMul_gpu-" in err[0] and "cannot read: No such file" in err[0]
    assert list(out.iterdir()) == []
    assert mk.main(["--data", str(data), "--out", str(tmp_path / "nowhere")]) == 2


def test_the_conv_timer_keys_its_builds_as_kernel_tuner_does():
    # the A100 cache's key of the 32 x 4 block, 2 x 2 tiles, __ldg and staged: block, tile, read_only,
    # use_padding, use_shmem, use_cmem, filter height and width
    kt = _load("conv2d_kt_variants")
    assert kt.key((32, 4, 2, 2), 1, 1) == "32,4,2,2,1,0,1,1,15,15"
    data = ROOT.parent / "shared" / "data" / "kerneltuner-convolution" / "A100.json.gz"
    if not data.exists():
        pytest.skip(f"no {data}: the key is checked against the literal only")
    import gzip

    assert kt.key((32, 4, 2, 2), 1, 1) in json.load(gzip.open(data))["cache"]


def test_the_conv_timer_without_a_gpu_says_so_in_one_line(capsys):
    kt = _load("conv2d_kt_variants")
    assert kt.main(["-o", "/nonexistent/x.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("conv2d_kt_variants: no CUDA GPU")


@pytest.mark.parametrize(
    ("suite", "gpu", "n", "gflops", "rel"),
    [
        # SGEMM_CUDA's README, RTX A6000, 4092^3: kernel 2 1986.5, kernel 3 2980.3 GFLOP/s
        ("sgemm_cuda_a6000", "rtxa6000", 4092, (1986.5, 2980.3), 1e-9),
        # matmul-cuda's README, Tesla V100 (SXM2), 4096^3: kernel 2 2311.7, kernel 3 4263.2 GFLOP/s
        ("matmul_cuda_v100", "v100-sxm2", 4096, (2311.7, 4263.2), 1e-8),
        # Fast-CUDA-Kernels' README, RTX 4090, 4096^3: Memory Coalesce 4,887.4, Memory Blocking 6,592.0 GFLOP/s
        # (its times are the README's elapsed seconds, which these GFLOP/s round)
        ("fast_cuda_kernels_rtx4090", "rtx4090", 4096, (4887.4, 6592.0), 1e-4),
    ],
)
def test_published_tiling_suite_is_its_readme_table(acc, suite, gpu, n, gflops, rel):
    """The hand-written suites of a published naive/tiled pair: times 2 x n^3 flop at the README's GFLOP/s of the
    coalesced naive kernel and the textbook tiling, the generator's matmul_naive at 32 x 32 on the GPU the README
    names, its 32-wide tiles over W = 512 (16 windows), scored as ratios."""
    (e,) = load_suite(ROOT / "configs" / "suites" / f"{suite}.toml").entries
    flop = 2 * n**3
    assert e.measured_ns == pytest.approx((flop / gflops[0], flop / gflops[1]), rel=rel)
    assert e.measured_ns[1] / e.measured_ns[0] == pytest.approx(gflops[0] / gflops[1], rel=rel)
    assert e.gpus == (gpu,) and e.source.generator == "matmul_naive"
    assert e.source.size == (512,) and e.source.block == (32,)
    assert e.placements == ("", f"M=S/G,N=S/G;windows={512 // 32};unrolled")
    assert acc.RATIOS_ONLY in e.note


def test_matmul_cuda_v100_suite_is_the_sxm2_card():
    """matmul-cuda's V100 32GB: the README's 15,700 GFLOP/s peak is 5,120 cores x 2 x 1,530 MHz, the catalog's
    v100-sxm2 (the bundled v100 is the PCIe card's 1,380 MHz)."""
    g = get_gpu("v100-sxm2")
    assert g.compute.sms * g.compute.cores_per_sm * 2 * g.compute.clock_mhz / 1e3 == pytest.approx(15_667, abs=1)


def test_fast_cuda_kernels_rtx4090_suite_is_the_readme_seconds():
    """Fast-CUDA-Kernels' README gives elapsed seconds (Memory Coalesce 0.028121, Memory Blocking 0.020849): the
    suite's times are those, exactly."""
    (e,) = load_suite(ROOT / "configs" / "suites" / "fast_cuda_kernels_rtx4090.toml").entries
    assert e.measured_ns == (0.028121e9, 0.020849e9)


def test_h100_matmul_512_suite_is_the_measured_runs(shared_data, acc):
    """configs/suites/h100_matmul_512.toml: each entry is the W = 512 launch of ../shared/data/h100-placements (the
    mean of the two runs' med_us, as h100_variants.toml takes it) traced at that size, so scored in absolute time
    too; its staged variants at their measured windows and the textbook tiling at W / TILE windows."""
    runs = {}
    for name in ("variants-run1.csv", "variants-run2.csv"):
        with open(shared_data / "h100-placements" / name, newline="") as f:
            for r in csv.DictReader(f):
                if r["kernel"] == "matmul" and r["size"] == "W=512":
                    runs.setdefault((r["block"], r["variant"]), []).append(float(r["med_us"]))
    s = load_suite(ROOT / "configs" / "suites" / "h100_matmul_512.toml")
    assert [e.id for e in s.entries] == ["matmul-512-b8", "matmul-512-b16", "matmul-512-b32"]
    for e, windows in zip(s.entries, (1, 2, 4)):
        t = e.source.block[0]
        assert e.gpus == ("h100",) and e.source.size == (512,) and acc.RATIOS_ONLY not in e.note
        assert e.placements == ("", f"M=S/G,N=S/G;windows={windows}", f"M=S/G,N=S/G;windows={512 // t};unrolled")
        block = f"{t}x{t}x1"
        variants = ("M=G,N=G", f"M=S/G,N=S/G;windows={windows}", "tiled")
        expect = [1000 * sum(runs[block, v]) / 2 for v in variants]
        assert all(len(runs[block, v]) == 2 for v in variants)
        assert list(e.measured_ns) == pytest.approx(expect, rel=1e-12)


def test_gpuperfpredict_suite_takes_each_build_its_dlcm(shared_data, mk):
    """gpuperfpredict's matMul_gpu was timed in two builds: with Tile_Width an argument (5 parameters, the
    Makefile.common with -Xptxas -dlcm=ca) and a macro (4, the one with -D Tile_Width and no -dlcm). The suite
    takes dlcm = "ca" for the first only, and the GTX-980's counters say the same: the second's L2 reads are
    every sector its unified cache was asked for (nothing kept in L1), the first's under 15 % of that count."""
    import pandas as pd

    text, skipped = mk.matmul_suite(shared_data)
    assert skipped == []
    suite = {e["id"]: e for e in tomllib.loads(text)["entry"]}
    assert len(suite) == 18
    cached = {i for i, e in suite.items() if e.get("dlcm") == "ca"}
    assert cached == {f"matmul-{g}-W{w}-b16" for g in ("k40", "gtx980") for w in (256, 512)}
    runs = pd.read_csv(shared_data / "gpuperfpredict" / "Apps-Gpus" / "matMul_gpu-GTX-980.csv")
    runs = runs[runs["Input.Size"].isin(mk.MATMUL_SIZES)]
    assert len(runs) == 6
    for _, r in runs.iterrows():
        missed = r["tex0_cache_sector_misses"] + r["tex1_cache_sector_misses"]
        build_ca = f"matmul-gtx980-W{r['Input.Size']}-b{r['Block.X']}" in cached
        assert (r["Kernel.1"].count(",") == 4) == build_ca
        # 5 sectors a warp and k step (block 8: 4 rows of M, 8 floats of N; block 32: 1 and 32), all from the L2
        warp_k = r["warps_launched"] * r["Input.Size"]
        assert (missed >= 5 * warp_k) != build_ca
        assert (r["L2.Read.Transactions"] < 0.15 * 5 * warp_k) == build_ca
