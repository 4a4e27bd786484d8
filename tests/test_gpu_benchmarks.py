"""The GPU-only benchmark scripts where no GPU is: benchmarks/atomic_contention.py's, l1_wavefronts.py's and
address_issue.py's kernels compile to the instructions they say they measure (nvcc and nvdisasm, skipped without
them), l1_wavefronts.py's predictions by hand, each script's main() runs on a stand-in for CuPy that checks every
launch's arguments against its kernel's parameters (a scalar of the wrong width reaches a GPU as other bits), and
each script says what is missing in one line and exits 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _kernel_launches import check_args, kernel_params, sass_of
from traces.sanitizer import build

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def test_atomic_contention_kernels_are_red_and_atomg(tmp_path):
    import atomic_contention

    fns = sass_of(tmp_path, atomic_contention.SOURCE, "sm_90")
    red, atom = fns["red"].opcodes, fns["atom"].opcodes
    # the result unused: a reduction, no atomic; the result summed: an atomic, no reduction
    assert any(o.startswith("REDG.E.ADD") for o in red) and not any(o.startswith("ATOMG") for o in red)
    assert any(o.startswith("ATOMG.E.ADD") for o in atom) and not any(o.startswith("REDG") for o in atom)


@pytest.mark.skipif(build.driver_problem() is None, reason="a GPU driver is here: the scripts would run")
@pytest.mark.parametrize(
    "script,args,start",
    [
        ("bench_trace", ["--sizes", "10"], "bench_trace: "),
        ("l1_wavefronts", ["--iters", "1"], "l1_wavefronts: no CUDA GPU"),
        ("atomic_contention", ["--iters", "1"], "atomic_contention: no CUDA GPU"),
        ("address_issue", ["--iters", "1"], "address_issue: no CUDA GPU"),
    ],
)
def test_gpu_scripts_without_a_gpu_are_one_line_exit_2(script, args, start):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{script}.py"), *args],
                       capture_output=True, text=True, cwd=ROOT, check=False)  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith(start)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_l1_wavefronts_loop_issues_each_counted_load_once(tmp_path, arch):
    # the lanes' offsets are one read-only load before the loop; the loop (one basic block, not unrolled) issues
    # exactly the LOADS loads the script counts an iteration, plain LDG in one kernel and LDG.E.CONSTANT in the
    # other, in 19 instructions: 2.4 a load, an issue bound of 0.6 cycles a load and SM over 4 schedulers. (The
    # loop before 1 Dec 2026 issued 8 loads for the 16 counted: nvcc merged two iterations' loads of one line.)
    import l1_wavefronts

    assert int(re.search(r"#define LOADS (\d+)", l1_wavefronts.SOURCE).group(1)) == l1_wavefronts.LOADS == 8
    fns = sass_of(tmp_path, l1_wavefronts.SOURCE, arch, "-std=c++17")
    for kind, timed in (("plain", "LDG.E"), ("readonly", "LDG.E.CONSTANT")):
        f = fns[kind]
        loads = [i for i, o in enumerate(f.opcodes) if o.startswith("LDG")]
        assert f.opcodes[loads[0]] == "LDG.E.CONSTANT" and f.block[loads[0]] != f.block[loads[1]], kind
        loop = [o for o, b in zip(f.opcodes, f.block, strict=True) if b == f.block[loads[1]]]
        assert [o for o in loop if o.startswith("LDG")] == [timed] * l1_wavefronts.LOADS, (kind, loop)
        assert all(f.block[i] == f.block[loads[1]] for i in loads[1:]) and loop[-1] == "BRA", kind
        assert len(loop) == l1_wavefronts.LOOP_INSTRUCTIONS == 19, (kind, loop)
    assert l1_wavefronts.ISSUE_BOUND == pytest.approx(19 / 8 / 4) and l1_wavefronts.ISSUE_BOUND < 0.6


def test_l1_wavefronts_predictions_by_hand():
    from l1_wavefronts import PATTERNS, predicted

    # (the walk's cycles, the most distinct words one bank serves, the lines touched)
    assert predicted(PATTERNS["aligned 128 B"]) == (1.0, 1, 1)
    # sectors 0-3 of one line and 0 of the next, words 1-32: banks 1-31 and 0, one word each
    assert predicted(PATTERNS["128 B from +4 B"]) == (1.25, 1, 2)
    assert predicted(PATTERNS["128 B from +32 B"]) == (1.0, 1, 2)  # sectors 1-3 and 0: four positions, once each
    assert predicted(PATTERNS["halves, 2nd in the next line, same sectors"]) == (1.0, 2, 2)
    assert predicted(PATTERNS["halves, 2nd in the next line, other sectors"]) == (1.0, 1, 2)
    # 16,440 bytes on: 56 bytes into a line, so the second half takes sectors 1-3 of it (5 sectors in all)
    # and words 4,110-4,125: banks 14-29 over the first half's 0-15, two words in banks 14 and 15
    assert predicted(PATTERNS["halves, 2nd one Kernel Tuner row on"]) == (1.25, 2, 2)
    assert predicted(PATTERNS["8 lines, sector 0 of each"]) == (2.0, 8, 8)
    assert predicted(PATTERNS["8 lines, sectors 0-3 in turn"]) == (2.0, 2, 8)
    assert predicted(PATTERNS["32 lines, sector 0 of each"]) == (8.0, 32, 32)
    assert predicted(PATTERNS["32 lines, sectors 0-3 in turn"]) == (8.0, 8, 32)
    assert all(len(v) == 32 and len(set(v)) == 32 for v in PATTERNS.values())


class _StandInCupy:
    """What the GPU scripts call of CuPy, over numpy; ``launches`` records (kernel, grid, block, args)."""

    int32, int64, uint32, float32 = np.int32, np.int64, np.uint32, np.float32
    asarray = staticmethod(lambda values, dtype: np.asarray(values, dtype))
    ones = staticmethod(lambda n, dtype: np.ones(n, dtype))
    zeros = staticmethod(lambda n, dtype: np.zeros(n, dtype))

    def __init__(self, source: str, sms: int = 4):
        self.params, self.sms, self.launches, cp = kernel_params(source), sms, [], self

        class RawModule:
            def __init__(self, code, options=()):
                assert code == source

            def get_function(self, name):
                assert name in cp.params, name
                return name

        self.RawModule = RawModule

    def device(self, script):
        return self, {"multiProcessorCount": self.sms, "clockRate": 1_000_000, "major": 9}, "Stand-in"

    def median_ms(self, ms_of):
        """A median_launch_ms that checks each launch's arguments against its kernel's parameters (count, and each
        scalar's dtype: a wrong one reaches the GPU as other bits) and answers ``ms_of(kernel, args)``."""

        def median_launch_ms(cp, fn, grid, block, args, repeat, before=None):
            check_args(fn, self.params[fn], args)
            if before is not None:
                before()
            self.launches.append((fn, grid, block, args))
            return ms_of(fn, args)

        return median_launch_ms


def _run_main(monkeypatch, module, cp, ms_of, *argv):
    monkeypatch.setattr(module, "cupy_device", cp.device)
    monkeypatch.setattr(module, "median_launch_ms", cp.median_ms(ms_of))
    monkeypatch.setattr(sys, "argv", [f"{module.__name__}.py", *argv])
    return module.main()


def test_l1_wavefronts_main_on_a_stand_in_gpu(monkeypatch, capsys):
    # main() against a stand-in for CuPy (4 SMs at 1 GHz): each launch is timed so that a load takes the pattern's
    # bank-rule cycles x 1.15 (__ldg half that), so every line's arguments and sums are exercised without a GPU.
    # At --iters 10: 32 warps an SM x 10 x 8 loads; a figure under 1.25 x the 0.59-cycle issue bound is marked.
    import l1_wavefronts as lw

    cp = _StandInCupy(lw.SOURCE)

    def ms_of(kernel, args):
        buf, offs, iters, step, sink = args
        assert int(iters) == 10 and int(step) == 0 and buf.size * 4 >= max(offs) + 7 * 37 * 128 + 4
        return 1.15 * lw.predicted(list(offs)).banks * (0.5 if kernel == "readonly" else 1) * (32 * 10 * 8) / 1e6

    assert _run_main(monkeypatch, lw, cp, ms_of, "--iters", "10") == 0
    out = capsys.readouterr().out.splitlines()
    assert "issue bound 0.59 cycles a load (19 instructions for 8 loads on 4 schedulers)" in out[0]
    assert len(out) == 2 + len(lw.PATTERNS) and [k for k, *_ in cp.launches] == ["plain", "readonly"] * len(lw.PATTERNS)
    assert {(g, b) for _, g, b, _ in cp.launches} == {(16, 256)}  # 32 warps an SM
    rows = {line[:46].strip(): line[46:].split() for line in out[2:]}
    # walk, banks, lines, plain cycles, its ratio to the aligned load, __ldg cycles (0.575: marked), its ratio
    assert rows["aligned 128 B"] == ["1.00", "1", "1", "1.15", "1.00", "0.57*", "1.00"]
    assert rows["32 lines, sector 0 of each"] == ["8.00", "32", "32", "36.80", "32.00", "18.40", "32.00"]


def test_address_issue_main_on_a_stand_in_gpu(monkeypatch, capsys, tmp_path):
    # every kind at every occupancy, each launch's arguments as its kernel takes them; a load taking 2 cycles and
    # the index forms 3: the table's cycles and ratios, and the --json file's rows
    import address_issue as ai

    cp = _StandInCupy(ai.SOURCE)

    def ms_of(kernel, args):  # 4 warps a block, one block a scheduler: the cycles a load at 1 warp a scheduler
        return (3.0 if "index" in kernel else 2.0) * 4 * 1024 * ai.TAPS / 1e6

    out_json = tmp_path / "a.json"
    assert _run_main(monkeypatch, ai, cp, ms_of, "--iters", "1024", "--json", str(out_json)) == 0
    assert len(cp.launches) == len(ai.KINDS) * len(ai.WARPS_PER_SCHEDULER)
    assert [g for _, g, _, _ in cp.launches[:: len(ai.KINDS)]] == [4 * w for w in ai.WARPS_PER_SCHEDULER]
    rows = json.loads(out_json.read_text())["rows"]
    # the launch's time held, so a load's cycles fall with the warps a scheduler: 2 and 3 x that many
    assert {(r["kind"], round(r["cycles_per_load"] * r["warps_per_scheduler"], 6), round(r["vs_plain"], 6))
            for r in rows} == {(k, 3.0 if "index" in k else 2.0, 1.5 if "index" in k else 1.0) for k in ai.KINDS}  # fmt: skip
    assert capsys.readouterr().out.count("\n") == 2 + len(rows)


def test_atomic_contention_main_on_a_stand_in_gpu(monkeypatch, capsys):
    # both kernels over every pattern, each launch's arguments as its kernel takes them (atom has the sink), the
    # counters zeroed before each timed launch
    import atomic_contention as ac

    cp = _StandInCupy(ac.SOURCE)
    assert _run_main(monkeypatch, ac, cp, lambda kernel, args: 1.0, "--iters", "4") == 0
    assert [k for k, *_ in cp.launches] == ["red"] * len(ac.PATTERNS) + ["atom"] * len(ac.PATTERNS)
    assert all(len(a) == (7 if k == "atom" else 6) for k, _, _, a in cp.launches)
    assert capsys.readouterr().out.count("\n") == 3 + 2 * len(ac.PATTERNS)


def test_l1_wavefronts_banks_are_the_models_bank_conflict_degree():
    # the script's banks column is the rule cachesim's walk applies where l1_data_banks is set: its
    # bank_conflict_degree over 32 banks of 4 bytes, for every pattern and every alignment of the convolution's
    from l1_wavefronts import PATTERNS, conv_patterns, predicted

    from cachesim._coalesce_kernels import bank_conflict_degree

    words, counts, full = np.empty(32 * 16, np.uint64), np.empty(32, np.int64), np.uint32(0xFFFFFFFF)
    for name, offsets in {**PATTERNS, **conv_patterns()}.items():
        row = np.asarray(offsets, np.uint64) + np.uint64(1 << 20)  # a line-aligned base
        assert predicted(offsets).banks == bank_conflict_degree(full, row, 4, 32, 4, words, counts), name


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_address_issue_loops_are_the_four_kinds_they_name(tmp_path, arch):
    # the loop (the basic block of the timed loads) of each kind: its length LOOP_INSTRUCTIONS, its TAPS loads of
    # the kind's opcode and TAPS FFMAs; the index forms are the Kernel Tuner convolution's __ldg(&in[index + c]),
    # 7 more IMAD.WIDE and 8 more IADD3 than the pointer forms, whose loads take c as an immediate
    import address_issue as ai

    fns = sass_of(tmp_path, ai.SOURCE, arch, "-std=c++17")
    load_op = {"plain": "LDG.E", "ldg_pointer": "LDG.E.CONSTANT", "ldg_index": "LDG.E.CONSTANT", "asm_index": "LDG.E"}
    loops = {}
    for kind in ai.KINDS:
        f = fns[kind]
        loads = [i for i, o in enumerate(f.opcodes) if o.startswith("LDG")]
        assert len(loads) == ai.TAPS and all(f.opcodes[i] == load_op[kind] for i in loads), kind
        loop = [o for o, b in zip(f.opcodes, f.block, strict=True) if b == f.block[loads[0]]]
        assert all(f.block[i] == f.block[loads[0]] for i in loads) and loop[-1] == "BRA", kind
        assert len(loop) == ai.LOOP_INSTRUCTIONS[arch][kind] and loop.count("FFMA") == ai.TAPS, (kind, loop)
        loops[kind] = loop
    for idx, ptr in (("ldg_index", "ldg_pointer"), ("asm_index", "plain")):
        assert loops[idx].count("IMAD.WIDE") - loops[ptr].count("IMAD.WIDE") == ai.TAPS - 1
        assert loops[idx].count("IADD3") - loops[ptr].count("IADD3") == ai.TAPS
        assert [o for o in loops[ptr] if "LDG" not in o] == [o for o in loops["plain"] if "LDG" not in o]
    assert ai.instructions_per_load("ldg_index", arch) / ai.instructions_per_load("plain", arch) == pytest.approx(
        {"sm_80": 38 / 23, "sm_90": 37 / 23}[arch]
    )


def test_median_launch_ms_warms_up_once_then_takes_the_median_of_the_timed_launches():
    # a stand-in for CuPy: each timed launch between two events takes the next of the given times
    from _cupy_device import median_launch_ms

    times, calls, resets = iter([3.0, 1.0, 2.0, 9.0, 4.0]), [], []

    class Event:
        def record(self):
            pass

        def synchronize(self):
            pass

    class Cuda:
        Event = staticmethod(lambda: Event())

        @staticmethod
        def get_elapsed_time(start, stop):
            return next(times)

    class Cp:
        cuda = Cuda

    def fn(grid, block, args):
        calls.append((grid, block, args))

    ms = median_launch_ms(Cp, fn, 8, 128, ("a",), 5, before=lambda: resets.append(len(calls)))
    assert ms == 3.0  # the median of 3, 1, 2, 9, 4
    assert calls == [((8,), (128,), ("a",))] * 6  # one warm-up, then 5 timed
    assert resets == [1, 2, 3, 4, 5]  # before each timed launch, not before the warm-up
