"""The figures every benchmark script prints: wall time, CPU time and peak RSS, the same way.

The machine these scripts run on is shared, so wall time alone says little: CPU time
(``time.process_time``: this process's user + system time, all threads) and the CPU
time of finished child processes (``getrusage(RUSAGE_CHILDREN)``: worker pools, a
peer tool run in a subprocess) are printed beside it, and so is peak RSS
(``ru_maxrss``: the high-water mark of this process since it started, and of its
largest finished child; Linux reports it in KiB).

    with measure("simulate_cache") as m:
        ...
    print(m.line())          # simulate_cache: wall 0.52 s, CPU 0.50 s, peak RSS 312 MiB
    m.figures.cpu_s          # the numbers, for ratios

A child's CPU time counts once the child has been waited for (a pool shut down, a
``subprocess.run`` returned), so measure around the whole pool or subprocess. A
child's ``ru_maxrss`` on Linux can include the RSS it inherited from this process
when it was forked, so a script that wants a child's own peak reads the child's
``VmHWM`` (``bench_read.py`` does).
"""

from __future__ import annotations

import resource
import statistics
import sys
import time
from dataclasses import dataclass

KIB = 1024
MIB = 1024 * 1024
RSS_UNIT = 1 if sys.platform == "darwin" else KIB  # ru_maxrss: bytes on macOS, KiB on Linux


@dataclass(frozen=True)
class Figures:
    """What one measured step cost."""

    wall_s: float
    cpu_s: float
    """This process's CPU time (user + system, all threads)."""
    children_cpu_s: float
    """CPU time of the child processes that finished during the step."""
    peak_rss_mib: float
    """This process's peak RSS since it started (not only during the step)."""
    children_peak_rss_mib: float
    """The largest peak RSS of a finished child process (0 without one)."""

    @property
    def total_cpu_s(self) -> float:
        return self.cpu_s + self.children_cpu_s

    def describe(self) -> str:
        s = f"wall {self.wall_s:.2f} s, CPU {self.cpu_s:.2f} s"
        if self.children_cpu_s > 0:
            s += f" + children {self.children_cpu_s:.2f} s = {self.total_cpu_s:.2f} s"
        s += f", peak RSS {self.peak_rss_mib:,.0f} MiB"
        if self.children_peak_rss_mib > 0:
            s += f" (largest child {self.children_peak_rss_mib:,.0f} MiB)"
        return s


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def status_mib(key: str) -> float | None:
    """This process's ``key`` (``VmHWM``, ``RssAnon``, ...) in ``/proc/self/status``, in MiB; None where absent."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * KIB / MIB
    except OSError:
        pass
    return None


def peak_rss_mib(who: int = resource.RUSAGE_SELF) -> float:
    """Peak resident memory. For this process, Linux's VmHWM where it exists: ``ru_maxrss`` of a
    process started by fork + exec also counts the forked parent's pages before the exec."""
    hwm = status_mib("VmHWM") if who == resource.RUSAGE_SELF else None
    return hwm if hwm is not None else resource.getrusage(who).ru_maxrss * RSS_UNIT / MIB


class measure:
    """Context manager measuring the step inside it; ``figures`` and ``line()`` after it ends."""

    def __init__(self, label: str):
        self.label = label
        self.figures: Figures | None = None

    def __enter__(self) -> "measure":
        self._child0 = _children_cpu()
        self._cpu0 = time.process_time()
        self._wall0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.perf_counter() - self._wall0
        cpu = time.process_time() - self._cpu0
        self.figures = Figures(wall, cpu, _children_cpu() - self._child0, peak_rss_mib(),
                               peak_rss_mib(resource.RUSAGE_CHILDREN))  # fmt: skip

    def line(self) -> str:
        assert self.figures is not None, "line() after the with block"
        return f"{self.label}: {self.figures.describe()}"


def ratios_line(label: str, ratios: list[float]) -> str:
    """'label: median 3.41x of 5 runs (3.12, 3.40, ...)' for peer ratios measured in the same run."""
    rs = ", ".join(f"{r:.2f}" for r in ratios)
    return f"{label}: median {statistics.median(ratios):.2f}x of {len(ratios)} run(s) ({rs})"


def run_footer(started: float, cpu0: float) -> str:
    """Whole-script figures, for the last line of a script: wall since ``started``, CPU since ``cpu0``."""
    ch = _children_cpu()
    return (f"whole run: wall {time.perf_counter() - started:.1f} s, CPU {time.process_time() - cpu0:.1f} s"
            + (f" + children {ch:.1f} s" if ch > 0 else "")
            + f", peak RSS {peak_rss_mib():,.0f} MiB"
            + (f" (largest child {peak_rss_mib(resource.RUSAGE_CHILDREN):,.0f} MiB)" if ch > 0 else ""))  # fmt: skip


def timed_main(main, stream=None) -> int:
    """Run a script's ``main()`` and print its whole-run figures after it (to stderr by default,
    so a script whose standard output is data keeps it clean); returns main's exit status."""
    started, cpu0 = time.perf_counter(), time.process_time()
    try:
        return main()
    finally:
        print(run_footer(started, cpu0), file=stream or sys.stderr, flush=True)


class AnonPeak:
    """The peak of this process's anonymous resident memory (Linux's ``RssAnon``: the heap and arrays, not the pages
    of mapped files, which the kernel can drop and read again) while the block runs, sampled every ``every_s`` in a
    thread (peak RSS, ``VmHWM``, also counts a mapped file's pages: ``placement trace``'s record file). 0 where
    ``/proc/self/status`` is absent.

        with AnonPeak() as a:
            ...
        a.peak_mib
    """

    def __init__(self, every_s: float = 0.002):
        import threading

        self.every_s = every_s
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @staticmethod
    def now_mib() -> float:
        return status_mib("RssAnon") or 0.0

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_mib = max(self.peak_mib, self.now_mib())
            self._stop.wait(self.every_s)

    def __enter__(self) -> "AnonPeak":
        self.peak_mib = self.now_mib()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mib = max(self.peak_mib, self.now_mib())
