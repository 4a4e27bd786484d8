"""kill -9: pool workers end with their parent, and no partial output or stray temporary file outlives the next run.

Each command runs in a child Python that SIGKILLs itself at a chosen moment
(when a worker pool is up, or when the finished temporary file is about to be
renamed onto the output, the last moment before the output exists), so the tests
do not depend on timing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import traces

ROOT = Path(__file__).resolve().parents[1]
LINUX = sys.platform.startswith("linux")
WAIT_S = 60  # upper bound on waiting for processes to end (never reached when things work)

# Run `placement ARGV...`, SIGKILLing this process when os.replace is about to put a file named NAME in place.
_KILL_AT_RENAME = """\
import os, signal, sys
from pathlib import Path
name, argv = sys.argv[1], sys.argv[2:]
real = os.replace
def replace(src, dst, *a, **k):
    if Path(dst).name == name:
        os.kill(os.getpid(), signal.SIGKILL)   # no cleanup, no finally
    return real(src, dst, *a, **k)
os.replace = replace
from placement.cli import main
sys.exit(main(argv))
"""

# The search's worker pool with an evaluation that never ends: each worker prints its pid and sleeps
# (the runner evaluates the first placement of a set of spaces here, before it forks; that one returns).
_POOL = """\
import os, sys, time
from collections import namedtuple
import placement.search
from placement.search import _Runner

placement.search.worth_processes = lambda work_s, workers: True  # the pool whatever the work
P = namedtuple("P", "spaces n windows unrolled pad", defaults=(None, False, None))  # placement.Placement's fields
PARENT = os.getpid()

class Slow:
    evaluations = 0
    n_rows = 0
    parallel = True
    def evaluate(self, p):
        if os.getpid() == PARENT:
            return None
        os.write(1, f"{os.getpid()}\\n".encode())  # one write: the two workers' lines do not interleave
        time.sleep(600)
    def evaluate_many(self, ps):  # what a worker is sent: placements of one group (evaluator.group_key)
        return [self.evaluate(p) for p in ps]

# one set of spaces (evaluated here first), the other two placements in two groups: one to each worker
_Runner(Slow(), 2, None).many([P((("x", a), ("y", b)), n) for n, (a, b) in enumerate(["GT", "TG", "GT"])])
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def _wait_gone(pids: list[int]) -> list[int]:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


@pytest.mark.skipif(not LINUX, reason="reads /proc to find the workers")
def test_search_workers_die_with_their_parent():
    """Before the fix the two workers, parented to init, slept on after the kill."""
    proc = subprocess.Popen([sys.executable, "-c", _POOL], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    workers = []
    try:
        workers = [int(proc.stdout.readline()) for _ in range(2)]
        assert sorted(workers) == sorted(_children(proc.pid))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        left = _wait_gone(workers)
        assert left == [], f"workers {left} outlived their parent"
    finally:
        _reap(proc, workers)


def _reap(proc: subprocess.Popen, workers: list[int]) -> None:
    """End whatever a failed test left running."""
    for w in workers:
        if _alive(w):
            os.kill(w, signal.SIGKILL)
    proc.kill()
    proc.wait()


_BATCH_KILL = """\
import json, os, signal, sys
from placement import batch
def progress(done, total):
    kids = sys.modules["__main__"].children(os.getpid())
    if len(kids) >= 2:  # the pool's workers (the first chunk runs in this process, before them)
        print(json.dumps(kids), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return out
batch.run(sys.argv[1], sys.argv[2], workers=2, progress=progress)
"""

SUITE = """\
gpu = "k80"

[[entry]]
generator = "triad"
size = [4096]
placements = ["", "B=S", "A=T", "A=T,B=T", "C=S", "A=C"]

[[entry]]
generator = "vecadd"
size = [2048]
placements = ["", "a=T", "b=C", "a=T,b=T", "v=S", "a=S"]
"""


@pytest.mark.skipif(not LINUX, reason="reads /proc to find the workers")
def test_batch_workers_die_with_their_parent_and_the_run_resumes(tmp_path, run_cli):
    suite = tmp_path / "s.toml"
    suite.write_text(SUITE)
    out = tmp_path / "r.parquet"
    proc = subprocess.Popen([sys.executable, "-c", _BATCH_KILL, str(suite), str(out)], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)  # fmt: skip
    workers = []
    try:
        workers = json.loads(proc.stdout.readline())
        assert len(workers) == 2
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        assert _wait_gone(workers) == []
    finally:
        _reap(proc, workers)
    assert not out.exists()
    code, stdout, err = run_cli("batch", suite, "-o", out, "--workers", "2")
    assert code == 0, err
    run_cli("batch", suite, "-o", tmp_path / "clean.parquet")
    assert pq.read_table(out).to_pylist() == pq.read_table(tmp_path / "clean.parquet").to_pylist()
    assert _strays(tmp_path) == []


def _killed_at_rename(name: str, *argv) -> None:
    proc = subprocess.run([sys.executable, "-c", _KILL_AT_RENAME, name, *map(str, argv)], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def _strays(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.tmp"))


def test_import_killed_while_writing(tmp_path, run_cli):
    from fuzzing import seeds_porple

    src = seeds_porple(tmp_path)[0].path
    out = tmp_path / "t.parquet"
    _killed_at_rename(out.name, "import", "porple", src, "-o", out)
    assert not out.exists()  # nothing half-written under the output's name
    assert len(_strays(tmp_path)) == 1  # the killed writer's temporary file
    code, _, err = run_cli("import", "porple", src, "-o", out)
    assert code == 0, err
    assert len(traces.read(out)) == 4
    assert _strays(tmp_path) == []


def test_rank_report_killed_while_writing_keeps_the_old_report(tmp_path, run_cli):
    from tracemaker import vecadd

    t = tmp_path / "t.parquet"
    traces.write(t, *vecadd(2, 2))
    report = tmp_path / "r.html"
    report.write_text("the previous report")
    _killed_at_rename(report.name, "rank", t, "--gpu", "k80", "--workers", 2, "--report", report)
    assert report.read_text() == "the previous report"
    assert len(_strays(tmp_path)) == 1
    code, _, err = run_cli("rank", t, "--gpu", "k80", "--report", report)
    assert code == 0, err
    assert report.read_text().startswith("<!doctype html>") and _strays(tmp_path) == []


def test_batch_killed_while_writing_the_results(tmp_path, run_cli):
    suite = tmp_path / "s.toml"
    suite.write_text(SUITE)
    out = tmp_path / "r.parquet"
    _killed_at_rename(out.name, "batch", suite, "-o", out, "--workers", 2)
    assert not out.exists() and len(_strays(tmp_path)) == 1
    code, stdout, err = run_cli("batch", suite, "-o", out)
    assert code == 0, err
    assert "(0 tasks run, 12 resumed)" in stdout  # every part was on disk before the kill
    assert len(pq.read_table(out)) == 12 and _strays(tmp_path) == []
