"""`placement batch`: suites, results files, resuming, and the local and Dask executors."""

from __future__ import annotations

import importlib
import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.stats import kendalltau

from expect import close
from placement import api, batch, units
from traces import generators

ROOT = Path(__file__).resolve().parents[1]

# Small kernels: the whole suite is a few dozen tasks of milliseconds each.
SUITE = """\
name = "small"
gpu = "k80"

[[entry]]
id = "triad"
generator = "triad"
size = [4096]
placements = ["", "B=S", "A=T", "A=T,B=T"]
measured_ns = [5000.0, 4100.0, 5200.0, 4900.0]

[[entry]]
id = "transpose"
generator = "transpose"
size = [128, 128]
placements = ["", "idata=2T", "idata=T"]
gpu = ["k80", "v100"]

[[entry]]
trace = "vec.parquet"
placements = ["", "a=T", "b=C"]

[[entry]]
id = "reduction-rank"
generator = "reduction"
size = [16384, 16]
rank = true
top = 3
"""
# tasks: 4 + 3*2 + 3 + 1 (the ranking)
TASKS = 14


def _suite(tmp_path: Path, text: str = SUITE) -> Path:
    vec = tmp_path / "vec.parquet"
    if not vec.exists():
        generators.write("vecadd", vec, [2048], [128])
    p = tmp_path / "suite.toml"
    p.write_text(text)
    return p


def _rows(path) -> list[dict]:
    rows = pq.read_table(path).to_pylist()
    for r in rows:
        r.pop("task", None)
    return rows


def test_small_suite_end_to_end(run_cli, tmp_path):
    suite = _suite(tmp_path)
    out = tmp_path / "r.parquet"
    code, stdout, err = run_cli("batch", suite, "-o", out, "--workers", "2", "--json")
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["tasks_run"] == TASKS and doc["tasks_resumed"] == 0
    assert not batch.parts_dir(out).exists()
    t = pq.read_table(out)
    rows = t.to_pylist()
    # 4 + 3 + 3 + 3 placements, 3 ranked
    assert len(rows) == doc["rows"] == 16
    # suite order, one row per (entry, gpu, placement)
    assert [(r["entry"], r["gpu"]) for r in rows[:10]] == [("triad", "k80")] * 4 + [("transpose", "k80")] * 3 + [
        ("transpose", "v100")
    ] * 3
    assert [r["placement"] for r in rows[:4]] == ["sample", "B=S/G", "A=T", "A=T,B=T"]
    assert len({(r["entry"], r["gpu"], r["placement_full"]) for r in rows}) == len(rows)
    # the experiment, in the Parquet metadata
    exp = batch.read_experiment(out)
    assert exp["suite"]["sha256"] == batch.load_suite(suite).sha256
    assert exp["suite"]["path"] == str(suite) and exp["gpus"] == ["k80", "v100"] and exp["version"]
    # terms and events flattened
    assert {"t_comp", "t_mem", "t_overlap", "events.e_global", "row_buffer.hit", "caches.l2.global.misses"} <= set(
        t.column_names
    )
    # measured: predicted = measured sample x T(target) / T(sample); error; rank agreement
    tri = rows[:4]
    meas = [5000.0, 4100.0, 5200.0, 4900.0]
    for r, m in zip(tri, meas):
        assert r["prediction_basis"] == "measured sample"
        assert r["predicted_ns"] == pytest.approx(5000.0 * r["cycles"] / tri[0]["cycles"], rel=1e-12)
        assert r["error"] == pytest.approx(r["predicted_ns"] / m - 1.0)
    assert tri[0]["error"] == pytest.approx(0.0, abs=1e-12)
    tau = kendalltau([r["predicted_ns"] for r in tri], meas).statistic
    assert all(r["kendall_tau"] == pytest.approx(tau) for r in tri)
    # top-1: the predicted fastest is the measured fastest, B=S/G at 4100 ns
    assert tri[0]["top1_hit"] == (min(tri, key=lambda r: r["predicted_ns"])["placement"] == "B=S/G")
    assert all(r["kendall_tau"] is None and r["measured_ns"] is None for r in rows[4:])
    # the ranking: top 3 in order
    ranked = [r for r in rows if r["entry"] == "reduction-rank"]
    assert [r["rank"] for r in ranked] == [1, 2, 3]
    assert ranked == sorted(ranked, key=lambda r: r["model_ns"])
    # a trace-file entry, named after its file
    assert [r["placement"] for r in rows if r["entry"] == "vec"] == ["sample", "a=T", "b=C"]

    # the screen summary; a rerun finds every row present and leaves the file as it was
    before = out.read_bytes()
    code, stdout, err = run_cli("batch", suite, "-o", out)
    assert code == 0, err
    assert f"(0 tasks run, {TASKS} resumed)" in stdout
    assert "triad" in stdout and "tau" in stdout and "top-1 hits" in stdout
    assert out.read_bytes() == before
    # the mean |error| is the triad's three moved placements': its sample row is 0 by construction (until 4 Dec 2026
    # it was averaged in); 4 placements measured
    mean = sum(abs(r["error"]) for r in tri[1:]) / 3
    assert (f"measured placements: 4; mean |error| {units.share(mean)} over 3 (left out: 1 sample row, whose measured time the "
            "predictions are scaled to)") in stdout  # fmt: skip


def test_workers_do_not_change_results(tmp_path):
    suite = _suite(tmp_path)
    batch.run(suite, tmp_path / "a.parquet", workers=1)
    batch.run(suite, tmp_path / "b.parquet", workers=2)
    assert _rows(tmp_path / "a.parquet") == _rows(tmp_path / "b.parquet")


def test_other_suite_refused(run_cli, tmp_path):
    suite = _suite(tmp_path)
    out = tmp_path / "r.parquet"
    assert batch.run(suite, out).rows == 16
    old = batch.load_suite(suite).sha256
    suite.write_text(SUITE.replace("size = [4096]", "size = [8192]"))
    new = batch.load_suite(suite).sha256
    code, stdout, err = run_cli("batch", suite, "-o", out)
    assert code == 2 and stdout == ""
    assert old in err and new in err and "same suite" in err


def _not_utf8(n: int) -> pa.Array:
    """A string column of ``n`` values whose first is not UTF-8 (pyarrow builds it unchecked, as a corrupted file
    reads)."""
    offsets = pa.py_buffer(np.arange(n + 1, dtype=np.int32).tobytes())
    return pa.Array.from_buffers(pa.string(), n, [None, offsets, pa.py_buffer(b"\xbd" + b"x" * (n - 1))])


def test_a_results_file_a_run_did_not_write_is_refused(run_cli, tmp_path):
    # were internal errors (KeyError: 'entry_index', UnicodeDecodeError; benchmarks/fuzz.py results --seed 3602):
    # resuming reads the rows back and sorts them by the suite order they record
    suite = _suite(tmp_path)
    out = tmp_path / "r.parquet"
    assert batch.run(suite, out).rows == 16
    t = pq.read_table(out)
    n = t.num_rows
    cases = [
        (t.drop_columns(["entry_index"]), "(row 0: entry_index: no value)"),
        (t.set_column(t.column_names.index("position"), "position", pa.array(["x"] * n)),
         "(row 0: position: 'x', not an integer)"),
        (t.set_column(t.column_names.index("task"), "task", _not_utf8(n)), "(text that is not UTF-8 (invalid start byte))"),
        (t.replace_schema_metadata({b"placement.batch": b"\xbd{"}), "no placement.batch metadata that a run wrote"),
        (t.replace_schema_metadata({b"placement.batch": b"[1, 2]"}), "no placement.batch metadata that a run wrote"),
    ]  # fmt: skip
    for k, (table, words) in enumerate(cases):
        bad = tmp_path / f"bad{k}.parquet"
        pq.write_table(table, bad)
        code, stdout, err = run_cli("batch", suite, "-o", bad)
        assert code == 2 and stdout == "" and err.count("\n") == 1 and f"{bad}: " in err and words in err, err
        assert not batch.parts_dir(bad).exists()  # refused before anything was written


def test_a_part_a_run_did_not_write_runs_again(tmp_path, caplog):
    suite = _suite(tmp_path)
    out = tmp_path / "r.parquet"

    def stop(done, total):
        if done:
            raise KeyboardInterrupt  # a user's ^C after the first chunk

    with pytest.raises(KeyboardInterrupt):
        batch.run(suite, out, workers=1, progress=stop)
    (part,) = batch.parts_dir(out).glob("*.parquet")
    t = pq.read_table(part)
    pq.write_table(t.drop_columns(["gpu_index"]), part)
    with caplog.at_level("WARNING"):
        r = batch.run(suite, out, workers=1)
    assert r.rows == 16 and r.skipped == 0 and r.computed == TASKS
    assert "not a readable results part (row 0: gpu_index: no value); its tasks run again" in caplog.text
    batch.run(suite, tmp_path / "clean.parquet", workers=1)
    assert _rows(out) == _rows(tmp_path / "clean.parquet")


_KILLER = """\
import os, signal, sys
from placement import batch

def progress(done, total):
    if done >= int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)   # no cleanup, no finally

batch.run(sys.argv[1], sys.argv[2], workers=1, progress=progress)
"""


def _tasks_in_parts(out) -> int:
    keys = set()
    for p in batch.parts_dir(out).glob("*.parquet"):
        keys |= {r["task"] for r in pq.read_table(p).to_pylist()}
    return len(keys)


def test_killed_run_resumes_without_loss_or_duplicates(run_cli, tmp_path):
    suite = _suite(tmp_path)
    out = tmp_path / "r.parquet"
    script = tmp_path / "killer.py"
    script.write_text(_KILLER)
    proc = subprocess.run([sys.executable, str(script), str(suite), str(out), "5"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not out.exists()
    assert (batch.parts_dir(out) / "experiment.json").exists()
    kept = _tasks_in_parts(out)
    assert 5 <= kept < TASKS

    code, stdout, err = run_cli("batch", suite, "-o", out, "--workers", "2")
    assert code == 0, err
    assert f"({TASKS - kept} tasks run, {kept} resumed)" in stdout
    batch.run(suite, tmp_path / "clean.parquet", workers=1)
    assert _rows(out) == _rows(tmp_path / "clean.parquet")


def test_a_killed_runs_trace_folder_goes_with_the_next_batch_run(tmp_path, monkeypatch):
    # a streamed run SIGKILLed part way leaves its folder of generated traces (no finally runs); the next batch run
    # removes it (its lock is free), even one that writes no folder of its own, while a running batch's folder
    # (locked) and a folder without a lock file stay
    import os
    import tempfile

    from placement.batch import spill as spill_mod

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    suite = _suite(tmp_path)
    script = tmp_path / "killer.py"
    script.write_text(_KILLER.replace("progress=progress)", "progress=progress, stream='yes')"))
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.run([sys.executable, str(script), str(suite), str(tmp_path / "k.parquet"), "3"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    (left,) = tmp.iterdir()
    assert left.name.startswith("placement-batch-") and len(list(left.glob("trace-*.parquet"))) == 3
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    (tmp / "placement-batch-by-hand").mkdir()  # no lock file: left alone
    running = spill_mod.SpillFolder()  # this process's lock: a batch still running
    assert os.path.basename(running.name).startswith("placement-batch-")
    batch.run(str(suite), str(tmp_path / "r.parquet"), workers=1, stream="no")  # writes no folder, sweeps
    assert sorted(p.name for p in tmp.iterdir()) == sorted([os.path.basename(running.name), "placement-batch-by-hand"])
    assert spill_mod.sweep() == []  # a second lock on the same file fails while the first is held
    running.cleanup()
    running.cleanup()  # once
    assert [p.name for p in tmp.iterdir()] == ["placement-batch-by-hand"]


def test_trace_folders_where_the_file_system_refuses_locks(tmp_path, monkeypatch):
    # (some NFS mounts): the folder is made and removed all the same, and a sweep passes it by
    import errno
    import os

    from placement.batch import spill as spill_mod

    def refuse(fd, op):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(spill_mod.fcntl, "flock", refuse)
    folder = spill_mod.SpillFolder(str(tmp_path))
    assert os.path.basename(folder.name).startswith("placement-batch-") and os.path.isdir(folder.name)
    assert spill_mod.sweep(str(tmp_path)) == [] and os.path.isdir(folder.name)
    folder.cleanup()
    assert list(tmp_path.iterdir()) == []


def test_failure_mid_run_keeps_completed_rows(tmp_path):
    """An exception part way (here from the progress hook) with worker processes."""
    suite = _suite(tmp_path)
    out = tmp_path / "r.parquet"

    def progress(done, total):
        if done >= 4:
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        batch.run(suite, out, workers=2, progress=progress)
    assert not out.exists()
    kept = _tasks_in_parts(out)
    assert 4 <= kept < TASKS
    res = batch.run(suite, out, workers=2)
    assert (res.computed, res.skipped, res.rows) == (TASKS - kept, kept, 16)
    batch.run(suite, tmp_path / "clean.parquet", workers=1)
    assert _rows(out) == _rows(tmp_path / "clean.parquet")


def test_chunks_keep_each_sample_once_per_worker():
    """Chunks: an (entry, GPU) splits over workers only with MIN_CHUNK placements a piece; longest first."""
    s = batch.load_suite("table4")
    small = batch.Suite(path=s.path, sha256=s.sha256, name=s.name, description=s.description,
                        entries=tuple(e for e in s.entries if e.id in ("neuralnet", "spmv", "triad")),
                        options=s.options)  # fmt: skip
    p = batch.plan(small)
    one = batch.chunks(p, p.tasks, 1)
    assert sorted(len(c) for c in one) == [2, 5, 9]
    two = batch.chunks(p, p.tasks, 2)
    assert sorted(len(c) for c in two) == [2, 4, 5, 5]  # spmv's 9 in two
    assert sorted(t.key for c in two for t in c) == sorted(t.key for t in p.tasks)
    cost = [p.trace_rows[c[0].trace_key] * (len(c) + (0 if any(t.position == 0 for t in c) else 1)) for c in two]
    assert cost == sorted(cost, reverse=True)


def test_dask_local_cluster_matches_local(run_cli, tmp_path):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed")
    suite = _suite(tmp_path)
    batch.run(suite, tmp_path / "local.parquet", workers=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        address = cluster.scheduler_address.removeprefix("tcp://")
        code, stdout, err = run_cli("batch", suite, "-o", tmp_path / "dask.parquet", "--executor", f"dask://{address}")
        assert code == 0, err
        with distributed.Client(cluster) as client:
            built = client.run(lambda: __import__("placement.batch").batch._CACHE.built)
    assert _rows(tmp_path / "dask.parquet") == _rows(tmp_path / "local.parquet")
    # one evaluator per (trace, GPU) per worker at most: 5 such pairs in the suite
    assert len(built) == 2 and all(n <= 5 for n in built.values()) and sum(built.values()) >= 5


def test_dask_no_scheduler(run_cli, tmp_path, monkeypatch):
    pytest.importorskip("distributed", reason="dask[distributed] is not installed")
    monkeypatch.setattr(batch.execute, "DASK_CONNECT_TIMEOUT", "1s")
    suite = _suite(tmp_path)

    def planned(*a, **k):
        raise AssertionError("the suite was planned (its traces generated) before the scheduler was tried")

    monkeypatch.setattr(batch, "plan", planned)  # said before the plan's minutes of generating
    code, _, err = run_cli("batch", suite, "-o", tmp_path / "r.parquet", "--executor", "dask://127.0.0.1:1")
    assert code == 2 and "no Dask scheduler at tcp://127.0.0.1:1" in err


BAD = {
    "missing gpu": (
        '[[entry]]\nid = "t"\ngenerator = "triad"\nplacements = [""]\n',
        "entry 1 ('t'): missing key 'gpu'",
    ),
    "missing placements": (
        'gpu = "k80"\n[[entry]]\nid = "t"\ngenerator = "triad"\n',
        "entry 1 ('t'): expected exactly one of 'placements'",
    ),
    "unknown generator": (
        'gpu = "k80"\n[[entry]]\ngenerator = "triad"\nplacements = [""]\n[[entry]]\nid = "x"\ngenerator = "nosuch"\nplacements = [""]\n',
        "entry 2 ('x'): unknown generator 'nosuch'; known: vecadd, triad",
    ),
    "unknown object": (
        'gpu = "k80"\n[[entry]]\nid = "t"\ngenerator = "triad"\nsize = [1024]\nplacements = ["", "D=T"]\n',
        "entry 1 ('t'): placement 'D=T': unknown object 'D' in kernel triad; objects: A, B, C",
    ),
    "unknown key": (
        'gpu = "k80"\n[[entry]]\nid = "t"\ngenerator = "triad"\nplacement = [""]\n',
        "entry 1 ('t'): unknown key 'placement'; known keys: id, trace",
    ),
    "illegal placement": (
        'gpu = "k80"\n[[entry]]\nid = "t"\ngenerator = "triad"\nsize = [1024]\nplacements = ["C=T"]\n',
        "entry 1 ('t'): placement 'C=T' on k80: illegal placement (written)",
    ),
    "measured length": (
        'gpu = "k80"\n[[entry]]\nid = "t"\ngenerator = "triad"\nsize = [1024]\nplacements = ["", "A=T"]\nmeasured_ns = [1.0]\n',
        "entry 1 ('t'): measured_ns must be a list of 2 positive times",
    ),
    "duplicate": (
        'gpu = "k80"\n[[entry]]\nid = "t"\ngenerator = "triad"\nsize = [1024]\nplacements = ["A=G", ""]\n',
        "entry 1 ('t'): placement '' is the same placement as 'A=G'",
    ),
    "bad dlcm": (
        'gpu = "k80"\n[[entry]]\nid = "t"\ngenerator = "triad"\ndlcm = "cs"\nplacements = [""]\n',
        "entry 1 ('t'): dlcm must be one of 'ca', 'cg' (the build's -Xptxas -dlcm), got 'cs'",
    ),
    "dlcm of a trace file": (
        'gpu = "k80"\n[[entry]]\ntrace = "t.parquet"\ndlcm = "ca"\nplacements = [""]\n',
        "entry 1: size, block, dlcm and launch_ctas go with 'generator', not with 'trace'",
    ),
    # an id with a newline split the summary table's rows (was accepted)
    "control character in id": (
        'gpu = "k80"\n[[entry]]\nid = "v\\na"\ngenerator = "triad"\nplacements = [""]\n',
        "entry 1: id must be a non-empty string without '|' or control characters",
    ),
    "no trace file": (
        'gpu = "k80"\n[[entry]]\ntrace = "nope.parquet"\nplacements = [""]\n',
        "entry 1: trace file",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_suite_exit_2(run_cli, tmp_path, case):
    text, expected = BAD[case]
    suite = tmp_path / "bad.toml"
    suite.write_text(text)
    out = tmp_path / "r.parquet"
    code, stdout, err = run_cli("batch", suite, "-o", out)
    assert code == 2 and stdout == ""
    assert err.startswith(f"placement batch: error: {suite}: ")
    assert expected in err, err
    assert not out.exists() and not batch.parts_dir(out).exists()


def test_a_run_that_failed_before_its_first_result_leaves_nothing_to_resume(run_cli, tmp_path):
    # a trace whose row 5 names object 7 of 3 fails the run (exit 2) before any result: no parts folder is left, so
    # the suite fixed runs at once; a parts folder of a suite's manifest alone (as runs before 4 Dec 2026 left
    # behind) holds nothing to resume and does not refuse another suite either
    vec = tmp_path / "vec.parquet"
    generators.write("vecadd", vec, [2048], [128])
    t = pq.read_table(vec)
    obj = t.column("obj").to_numpy().copy()
    obj[5] = 7
    bad = tmp_path / "bad.parquet"
    pq.write_table(t.set_column(t.schema.get_field_index("obj"), "obj", pa.array(obj, pa.int16())), bad)
    suite = tmp_path / "s.toml"
    suite.write_text('name = "s"\ngpu = "k80"\n[[entry]]\ntrace = "bad.parquet"\nplacements = ["", "a=T"]\n')
    out = tmp_path / "r.parquet"
    code, stdout, err = run_cli("batch", suite, "-o", out)
    assert code == 2 and stdout == "" and len(err.strip().splitlines()) == 1 and "bad.parquet" in err, err
    assert not out.exists() and not batch.parts_dir(out).exists()
    batch.parts_dir(out).mkdir()
    (batch.parts_dir(out) / "experiment.json").write_text('{"suite": {"sha256": "0"}}')
    suite.write_text(suite.read_text().replace("bad.parquet", "vec.parquet"))
    code, stdout, err = run_cli("batch", suite, "-o", out)
    assert code == 0 and "(2 tasks run, 0 resumed)" in stdout, err
    assert not batch.parts_dir(out).exists() and len(pq.read_table(out)) == 2


def test_table4_suite_is_valid():
    """The shipped suite parses, and every placement names real objects and is legal on the K80."""
    s = batch.load_suite("table4")
    assert [e.id for e in s.entries][:3] == ["bfs", "fft", "neuralnet"] and s.gpus == ["k80"]
    text = (ROOT / "configs" / "suites" / "table4.toml").read_text()
    assert text.startswith("# The placement tests of Huang & Li, Table IV")
    # object names are checked against the kernels in plan(); generating them all is the slow part of
    # a batch run, so only a few cheap ones are planned here
    small = batch.Suite(path=s.path, sha256=s.sha256, name=s.name, description=s.description,
                        entries=tuple(e for e in s.entries if e.id in ("neuralnet", "spmv", "triad", "md5hash")),
                        options=s.options)  # fmt: skip
    p = batch.plan(small)
    assert len(p.tasks) == 5 + 9 + 2 + 2


def test_windows_asked_for_are_their_own_tasks(run_cli, tmp_path):
    # two staged codes of the same spaces (";windows=K": as measured) are two tasks, rows and labels, each staged in
    # its windows; a placement and the same with windows are not the same placement
    suite = _suite(
        tmp_path,
        """\
name = "windows"
gpu = "k40"

[[entry]]
id = "mm"
generator = "matmul_naive"
size = [64]
block = [16]
placements = ["", "M=S,N=S;windows=1", "M=S,N=S;windows=4", "M=S,N=S"]
measured_ns = [9000.0, 8000.0, 7000.0, 7500.0]
""",
    )
    out = tmp_path / "w.parquet"
    code, _, err = run_cli("batch", suite, "-o", out)
    assert code == 0, err
    rows = sorted(pq.read_table(out).to_pylist(), key=lambda r: r["position"])
    assert [r["placement"] for r in rows] == ["sample", "M=S/G,N=S/G;windows=1", "M=S/G,N=S/G;windows=4", "M=S/G,N=S/G"]
    assert [r["staging.windows"] for r in rows[1:3]] == [1, 4]
    assert len({r["task"] for r in rows}) == 4


def test_gpu_option_prices_every_entry_on_that_gpu(run_cli, tmp_path):
    """--gpu: the suite's entries on one GPU, without the measured times of the suite's own GPUs; each row is
    the row that GPU gets as the suite's own (the transpose entry lists v100 beside k80)."""
    suite = _suite(tmp_path)
    own = tmp_path / "own.parquet"
    batch.run(suite, own)
    out = tmp_path / "v100.parquet"
    code, stdout, err = run_cli("batch", suite, "-o", out, "--gpu", "v100", "--json")
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["gpus"] == ["v100"] and doc["gpu_override"] == "v100"
    rows = _rows(out)
    # 4 + 3 + 3 placements and a top 3: the transpose entry once, on v100 only
    assert len(rows) == 13 and {r["gpu"] for r in rows} == {"v100"}
    assert all(r["measured_ns"] is None and r["kendall_tau"] is None for r in rows)
    assert all(r["prediction_basis"] != "measured sample" for r in rows if r["entry"] == "triad")
    ref = [r for r in _rows(own) if r["entry"] == "transpose" and r["gpu"] == "v100"]
    got = [r for r in rows if r["entry"] == "transpose"]
    assert [(r["placement"], r["model_ns"], r["cycles"]) for r in got] == [
        (r["placement"], r["model_ns"], r["cycles"]) for r in ref
    ]
    assert batch.read_experiment(out)["gpu_override"] == "v100"
    # the same run again resumes; the same file priced on another GPU is refused, nothing written
    code, stdout, err = run_cli("batch", suite, "-o", out, "--gpu", "v100")
    assert code == 0 and "(0 tasks run, 11 resumed)" in stdout and "priced on v100 (--gpu)" in stdout
    before = out.read_bytes()
    code, stdout, err = run_cli("batch", suite, "-o", out, "--gpu", "k80")
    assert code == 2 and stdout == "" and len(err.strip().splitlines()) == 1
    assert "holds results on v100, but this run prices on k80" in err
    assert out.read_bytes() == before and not batch.parts_dir(out).exists()


@pytest.mark.parametrize("gpu", ["no-such-gpu", "missing.toml"])
def test_gpu_option_bad_gpu_exit_2(run_cli, tmp_path, gpu):
    suite = _suite(tmp_path)
    out = tmp_path / "r.parquet"
    code, stdout, err = run_cli("batch", suite, "-o", out, "--gpu", gpu)
    assert code == 2 and stdout == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("placement batch: error: --gpu: ") and gpu in err
    assert not out.exists() and not batch.parts_dir(out).exists()


def test_gpu_option_takes_a_configuration_file(tmp_path, monkeypatch):
    """A configuration file for --gpu is read from the working folder (not the suite's), made absolute."""
    suite = _suite(tmp_path)
    monkeypatch.chdir(ROOT)
    s = batch.load_suite(suite, gpu="configs/gpus/a100.toml")
    want = str((ROOT / "configs" / "gpus" / "a100.toml").resolve())
    assert s.gpu_override == want and s.gpus == [want]
    assert all(e.gpus == (want,) and e.measured_ns is None for e in s.entries)
    assert batch.load_suite(suite).entries[0].measured_ns == (5000.0, 4100.0, 5200.0, 4900.0)


# Trace files evaluated streamed (`--stream`, as `placement evaluate` streams a big one): the same rows.
STREAMED_SUITE = """\
name = "streamed"
gpu = "h100"

[[entry]]
id = "matmul"
trace = "mm.parquet"
placements = ["", "M=T", "M=S/G,N=S/G;windows=8;unrolled", "M=T,N=2T", "P=S/G"]

[[entry]]
id = "matmul-rank"
trace = "mm.parquet"
rank = true
top = 3

[[entry]]
id = "vecadd"
trace = "vec.parquet"
placements = ["", "a=T"]
"""


def _streamed_suite(tmp_path: Path, order=None) -> Path:
    import traces

    cols, info = generators.generate("matmul_naive", [64], [8])
    if order is not None:  # the rows in another order of blocks (each warp's rows still in program order)
        idx = np.argsort(order(cols["cta"]), kind="stable")
        cols = {k: v[idx] for k, v in cols.items()}
    traces.write(tmp_path / "mm.parquet", cols, info)
    return _suite(tmp_path, STREAMED_SUITE)


def _same_rows(a: list[dict], b: list[dict]) -> None:
    # streamed results equal the whole path's: every count exactly, times to 1e-12 relative (the queues' variances
    # are summed in another order: placement.evaluate_stream); absent values NaN in both
    close(a, b, "rows", rel=1e-12, nan_ok=True)


@pytest.mark.parametrize("workers", [1, 2])
def test_streamed_trace_files_give_the_whole_paths_rows(tmp_path, workers):
    suite = _streamed_suite(tmp_path)
    whole = batch.run(str(suite), str(tmp_path / "whole.parquet"), workers=workers, stream="no")
    streamed = batch.run(str(suite), str(tmp_path / "streamed.parquet"), workers=workers, stream="yes")
    assert whole.rows == streamed.rows == 5 + 3 + 2
    _same_rows(_rows(tmp_path / "whole.parquet"), _rows(tmp_path / "streamed.parquet"))
    s = batch.load_suite(suite)
    files = {e.source.key for e in s.entries}
    assert batch.plan(s, "yes").streamed == files and batch.plan(s, "no").streamed == frozenset()
    assert batch.plan(s).streamed == frozenset()  # 'auto': both are far below placement.api.WHOLE_TRACE_BUDGET


def test_auto_streams_the_trace_files_too_big_to_evaluate_whole(tmp_path, monkeypatch):
    suite = batch.load_suite(_streamed_suite(tmp_path))
    mm, vec = (e.source for e in suite.entries[::2])
    rows = {s.key: __import__("traces").num_rows(s.path) for s in (mm, vec)}
    assert rows[vec.key] < rows[mm.key]
    # the budget between the two files' whole-trace estimates (placement.api.WHOLE_BYTES_PER_ROW a row)
    monkeypatch.setattr(api, "WHOLE_TRACE_BUDGET", (rows[vec.key] + 1) * api.WHOLE_BYTES_PER_ROW)
    assert batch.plan(suite).streamed == {mm.key}
    monkeypatch.setattr(api, "WHOLE_TRACE_BUDGET", (rows[vec.key] - 1) * api.WHOLE_BYTES_PER_ROW)
    assert batch.plan(suite).streamed == {mm.key, vec.key}


def test_a_streamed_trace_file_is_never_read_whole(tmp_path, monkeypatch):
    # neither the plan (the staged placements' footprints: placement.streamstaging, two reads) nor a task loads it
    import traces

    from placement.batch import execute, suite as suite_mod

    suite = _streamed_suite(tmp_path)

    def refuse(*a, **k):
        raise AssertionError("read whole")

    for mod, name in ((suite_mod.TraceSource, "load"), (traces, "read")):  # (execute's `traces` is the same module)
        monkeypatch.setattr(mod, name, refuse)
    r = batch.run(str(suite), str(tmp_path / "s.parquet"), workers=1, stream="yes")
    assert r.rows == 10
    keys = {e.source.key for e in batch.load_suite(suite).entries}
    held = {k: n for k, n in execute._CACHE.held().items() if k in keys}
    assert held and set(held.values()) == {0}, held  # streamed evaluators, holding no rows
    with pytest.raises(AssertionError, match="read whole"):  # the whole path reads it
        batch.plan(batch.load_suite(suite), "no")


def test_a_trace_file_out_of_block_order_is_evaluated_whole(tmp_path, caplog, monkeypatch):
    # as `placement evaluate` does: a warning, then the whole path's rows (block 0's rows last, read 1,024 rows at a
    # time: the blocks before it are walked when it comes)
    for mod in ("placement.evaluate_stream", "placement.batch.plan"):
        monkeypatch.setattr(importlib.import_module(mod), "STREAM_ROWS", 1024)
    suite = _streamed_suite(tmp_path, order=lambda cta: np.where(cta == 0, 1 << 20, cta))
    whole = batch.run(str(suite), str(tmp_path / "whole.parquet"), workers=1, stream="no")
    with caplog.at_level("WARNING"):
        streamed = batch.run(str(suite), str(tmp_path / "streamed.parquet"), workers=1, stream="yes")
    assert whole.rows == streamed.rows == 10
    assert "evaluating the whole trace instead" in caplog.text
    _same_rows(_rows(tmp_path / "whole.parquet"), _rows(tmp_path / "streamed.parquet"))


def test_stream_yes_with_even_banks_exit_2(run_cli, tmp_path):
    suite = _streamed_suite(tmp_path)
    suite.write_text(STREAMED_SUITE.replace('gpu = "h100"\n', 'gpu = "h100"\n[options]\neven_banks = true\n', 1))
    out = tmp_path / "r.parquet"
    code, _, err = run_cli("batch", suite, "-o", out, "--workers", "1", "--stream", "yes")
    assert code == 2 and err.count("\n") == 1, err
    assert "even_banks" in err and "--stream yes" in err and err.count("entry 1") == 1, err
    assert not out.exists()
    code, _, err = run_cli("batch", suite, "-o", out, "--workers", "1", "--stream", "maybe")
    assert code == 2 and "--stream" in err


@pytest.mark.parametrize("stream", ["yes", "no"])
def test_a_bad_row_in_a_streamed_trace_file_exit_2(tmp_path, stream):
    # a lane address outside every object, in the middle of the file: one line naming the file and the row, exit 2,
    # no results file (with a staged placement the plan reads the rows; without, the task does)
    import traces

    cols, info = generators.generate("matmul_naive", [64], [8])
    cols["addr"][9000, 3] = 8  # an active lane (the mask is full) at address 8
    traces.write(tmp_path / "mm.parquet", cols, info, validate=False)
    for placements in ('["", "M=S/G,N=S/G;windows=8;unrolled"]', '["", "M=T"]'):
        suite = tmp_path / "s.toml"
        suite.write_text(f'gpu = "h100"\n[[entry]]\ntrace = "mm.parquet"\nplacements = {placements}\n')
        out = tmp_path / "r.parquet"
        # a process of its own: what it logs reaches the real stderr (in-process, the CLI's log handler does not)
        proc = subprocess.run([sys.executable, "-m", "placement.cli", "batch", str(suite), "-o", str(out),
                               "--workers", "1", "--stream", stream], capture_output=True, text=True, cwd=ROOT)  # fmt: skip
        code, stdout, err = proc.returncode, proc.stdout, proc.stderr
        assert code == 2 and stdout == "" and err.count("\n") == 1 and "Traceback" not in err, err
        assert "mm.parquet" in err and "row 9000" in err, err
        assert not out.exists()


def test_generated_traces_stream_from_files_the_run_removes(tmp_path, monkeypatch):
    import tempfile

    plan_mod = importlib.import_module("placement.batch.plan")

    spill = tmp_path / "tmp"
    spill.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spill))
    suite = _suite(tmp_path)
    whole = batch.run(str(suite), str(tmp_path / "whole.parquet"), workers=2, stream="no")
    streamed = batch.run(str(suite), str(tmp_path / "streamed.parquet"), workers=2, stream="yes")
    assert whole.rows == streamed.rows
    _same_rows(_rows(tmp_path / "whole.parquet"), _rows(tmp_path / "streamed.parquet"))
    assert list(spill.iterdir()) == []
    for again in ("again1", "again2"):  # in this process twice: the second run's evaluators read its own files
        batch.run(str(suite), str(tmp_path / f"{again}.parquet"), workers=1, stream="yes")
        _same_rows(_rows(tmp_path / "whole.parquet"), _rows(tmp_path / f"{again}.parquet"))
    assert list(spill.iterdir()) == []
    p = batch.plan(batch.load_suite(suite), "yes")
    generated = {e.source.key for e in p.suite.entries if e.source.path is None}
    assert len(generated) == 3 and set(p.files) == generated and p.streamed >= generated and not p.loaded
    for key, f in p.files.items():  # the plan's traces, once each, in block order
        t = p.sources[key].load()
        np.testing.assert_array_equal(__import__("traces").read(f).addr, t.addr)
    p.cleanup()
    assert list(spill.iterdir()) == []
    # an entry whose tasks are all done (a resumed run's) gets no file: a finished run started again writes none
    written = []
    real = plan_mod.traces.write
    monkeypatch.setattr(plan_mod.traces, "write", lambda *a, **k: written.append(a[0]) or real(*a, **k))
    gen_tasks = [t for t in p.tasks if t.trace_key in generated]
    pending = batch.plan(p.suite, "yes", done=[t.key for t in gen_tasks[1:]])
    assert set(pending.files) == {gen_tasks[0].trace_key} and written
    pending.cleanup()
    assert batch.plan(p.suite, "yes", done=[t.key for t in gen_tasks]).files == {}
    written.clear()
    res = batch.run(str(suite), str(tmp_path / "streamed.parquet"), workers=1, stream="yes")
    assert (res.computed, res.skipped, written) == (0, len(p.tasks), [])
    # a suite refused after a trace was written leaves nothing behind
    bad = suite.with_name("bad.toml")
    bad.write_text(SUITE + '\n[[entry]]\nid = "bad"\ngenerator = "triad"\nsize = [4096]\nplacements = ["Q=T"]\n')
    with pytest.raises(batch.SuiteError, match="unknown object 'Q'"):
        batch.plan(batch.load_suite(bad), "yes")
    assert list(spill.iterdir()) == []


def test_auto_writes_a_generated_trace_to_stream_only_over_several_waves(tmp_path, monkeypatch):
    # a stream holds a wave of resident blocks: a generated trace of one or two waves is held whole either way, so
    # 'auto' writes (and streams) only those of SPILL_MIN_WAVES waves or more. vecadd in 256-thread blocks: 8 blocks
    # an SM (2,048 threads), so 104 a wave on the K80's 13 SMs and 1,056 on the H100's 132
    plan_mod = importlib.import_module("placement.batch.plan")
    from placement.gpu import get_gpu

    p = tmp_path / "s.toml"
    sizes = ((1 << 15, '"k80"'), (1 << 20, '"k80"'), (4097 * 256, '["k80", "h100"]'))
    p.write_text("\n".join(f'[[entry]]\nid = "v{n}"\ngenerator = "vecadd"\nsize = [{n}]\nblock = [256]\ngpu = {g}\n'
                           'placements = ["", "a=T"]\n' for n, g in sizes))  # fmt: skip
    suite = batch.load_suite(p)
    infos = [e.source.load().info for e in suite.entries]
    assert [plan_mod.waves(i, [get_gpu(g) for g in e.gpus]) for i, e in zip(infos, suite.entries)] == [
        pytest.approx(128 / 104), pytest.approx(4096 / 104), pytest.approx(4097 / 1056)]  # fmt: skip
    monkeypatch.setattr(api, "WHOLE_TRACE_BUDGET", 0)  # every trace too big to evaluate whole
    keys = [e.source.key for e in suite.entries]
    with_auto = batch.plan(suite)
    assert set(with_auto.files) == with_auto.streamed == {keys[1]}  # 39.4 waves; 1.2 and, on the H100, 3.9 not
    assert set(batch.plan(suite, "yes").files) == set(keys)
    monkeypatch.setattr(api, "WHOLE_TRACE_BUDGET", 1 << 40)
    assert batch.plan(suite).files == {}


def test_files_a_run_did_not_write_are_left_in_the_parts_folder(run_cli, tmp_path, caplog):
    """The end of a run removed the whole RESULTS.parts folder, a user's notes and an unreadable part with it."""
    import logging

    generators.write("vecadd", tmp_path / "vec.parquet", [2048], [128])
    suite = tmp_path / "s.toml"
    suite.write_text('name = "s"\ngpu = "k80"\n[[entry]]\ntrace = "vec.parquet"\nplacements = ["", "a=T"]\n')
    out = tmp_path / "r.parquet"
    parts = batch.parts_dir(out)
    parts.mkdir()
    (parts / "notes.txt").write_text("keep\n")
    (parts / "junk.parquet").write_text("x\n")
    with caplog.at_level(logging.WARNING, logger="placement.batch"):
        code, stdout, err = run_cli("batch", suite, "-o", out)
    assert code == 0 and "(2 tasks run, 0 resumed)" in stdout, err
    assert len(pq.read_table(out)) == 2
    assert sorted(f.name for f in parts.iterdir()) == ["junk.parquet", "notes.txt"]
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "junk.parquet: not a readable results part" in said
    assert f"{parts}: left in place, holding files no run wrote (junk.parquet, notes.txt)" in said


def test_a_suite_entry_whose_trace_is_a_folder(run_cli, tmp_path):
    """Was "trace file '.../somedir' does not exist" of a path that exists."""
    (tmp_path / "somedir").mkdir()
    suite = tmp_path / "s.toml"
    suite.write_text('gpu = "k80"\n[[entry]]\ntrace = "somedir"\nplacements = [""]\n')
    code, out, err = run_cli("batch", suite, "-o", tmp_path / "r.parquet")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"trace '{tmp_path / 'somedir'}' is a folder, expected a trace file" in err, err
