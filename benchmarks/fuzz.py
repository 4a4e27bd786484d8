"""Fuzz campaigns against every reader: mutated inputs must give a result or a clean InputError.

    python benchmarks/fuzz.py TARGET|all --inputs N [--seed S] [--timeout SECONDS] [--keep DIR]
    python benchmarks/fuzz.py TARGET --replay I [--seed S] --keep DIR     # write input I to DIR and read it here

The targets, their seed inputs and the mutations are ``tests/fuzzing.py``'s (the
test suite runs the same property on a few examples per target with hypothesis).
Input ``I`` of a target is a pure function of (target, I, --seed), so every
finding is reproduced with ``--replay``.

Each target runs in a worker process that reads one input at a time; the parent
gives each input ``--timeout`` seconds, after which it counts a hang, kills the
worker and starts another. A worker that dies (a segfault, the memory limit) is a
crash. Workers run under a 4 GiB address-space limit so that a reader allocating
by a claim in the file fails instead of swapping the machine. Per target the
table gives: inputs tried, clean errors (InputError with a one-line message),
accepted inputs, crashes, hangs, wall time, the workers' CPU time (without the
warm-up: each seed read once, which loads numba's cache) and their peak resident memory; each distinct crash is listed once with an input to replay.
No hypothesis database is used.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

ADDRESS_SPACE_LIMIT = 4 << 30


def _rng(seed: int, target: str, i: int) -> random.Random:
    return random.Random(f"{seed}:{target}:{i}")


def _materialize(target_name: str, i: int, seed: int, seeds_dir: Path, work: Path):
    """Input i: (target, path, variant, what was mutated); ``work`` must not exist."""
    import fuzzing

    target = fuzzing.TARGETS[target_name]
    seeds = _seeds(target, seeds_dir)
    rng = _rng(seed, target_name, i)
    s = seeds[rng.randrange(len(seeds))]
    variant = rng.randrange(target.variants)
    work.mkdir(parents=True)
    path, what = fuzzing.mutate(rng, s, work)
    return target, path, variant, f"{s.member.name}: {what}, variant {variant}"


_SEEDS: dict[str, list] = {}


def _seeds(target, seeds_dir: Path) -> list:
    if target.name not in _SEEDS:
        d = seeds_dir / target.name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        _SEEDS[target.name] = target.seeds(d)
    return _SEEDS[target.name]


def _worker(conn, target_name: str, seed: int, seeds_dir: Path, scratch: Path) -> None:
    import logging

    import fuzzing

    logging.disable(logging.CRITICAL)  # readers log warnings on skipped lines; the table is the output
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))
    # Warm-up, outside the clock: every seed and variant once (imports, numba's cache loads
    # or first compilations); each must be accepted, or the campaign fuzzes nothing.
    target = fuzzing.TARGETS[target_name]
    rejected = []
    for s in _seeds(target, seeds_dir):
        for v in range(target.variants):
            work = scratch / "warm"
            work.mkdir(parents=True)
            kind, msg = fuzzing.outcome(target, s.path, v, work)
            fuzzing.cleanup(work)
            if kind != "accepted" and not (kind == "error" and (s.path.name, v) in target.rejected_seeds):
                rejected.append(f"seed {s.path.name} variant {v}: {kind} {msg}")
    ru = resource.getrusage(resource.RUSAGE_SELF)
    conn.send((rejected, ru.ru_utime + ru.ru_stime))
    while True:
        i = conn.recv()
        if i is None:
            conn.send(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
            return
        work = scratch / f"w{i}"
        try:
            target, path, variant, what = _materialize(target_name, i, seed, seeds_dir, work)
            kind, msg = fuzzing.outcome(target, path, variant, work)
        finally:
            fuzzing.cleanup(work)
        conn.send((kind, msg, what))


class _Pool:
    """One worker process for one target, restarted after a hang or a death."""

    def __init__(self, target: str, seed: int, seeds_dir: Path, scratch: Path):
        self.args = (target, seed, seeds_dir, scratch)
        self.ctx = multiprocessing.get_context("fork")
        self.proc = None
        self.conn = None
        self.exitcode = None
        self.warmup_cpu = 0.0
        self.peak_kib = 0
        """The largest resident memory of the workers that ended normally (killed ones cannot say)."""

    def start(self) -> list[str]:
        """Start a worker; returns the seeds it could not read (none, normally)."""
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child, *self.args), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        rejected, cpu = self.conn.recv()  # after the warm-up
        self.warmup_cpu += cpu
        return rejected

    def ask(self, i: int, timeout: float) -> tuple[str, str, str]:
        if self.proc is None:
            self.start()
        self.conn.send(i)
        if self.conn.poll(timeout):
            try:
                return self.conn.recv()
            except EOFError:
                pass
        alive = self.proc.is_alive()
        self.stop(kill=True)
        if not alive:
            return "crash", f"worker died (exit code {self.exitcode})", ""
        return "hang", f"no answer in {timeout} s", ""

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if kill:
            self.proc.kill()
        else:
            self.conn.send(None)
            self.peak_kib = max(self.peak_kib, self.conn.recv())
        self.proc.join()
        self.exitcode = self.proc.exitcode
        self.conn.close()
        self.proc = None


def _children_usage() -> tuple[float, int]:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # the workers that ended, warm-ups included
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def campaign(target: str, inputs: int, seed: int, timeout: float, tmp: Path, keep: Path | None) -> dict:
    scratch = tmp / "scratch" / target
    scratch.mkdir(parents=True, exist_ok=True)
    pool = _Pool(target, seed, tmp / "seeds", scratch)
    counts: Counter = Counter()
    findings: dict[str, tuple[int, str, str]] = {}
    cpu0, _ = _children_usage()
    rejected = pool.start()
    if rejected:
        pool.stop()
        raise SystemExit(f"{target}: seeds not accepted: " + "; ".join(rejected))
    t0 = time.perf_counter()
    for i in range(inputs):
        kind, msg, what = pool.ask(i, timeout)
        counts[kind] += 1
        if kind in ("crash", "hang"):
            key = _finding_key(kind, msg)
            findings.setdefault(key, (i, msg, what))
            if keep is not None:
                _save(target, i, seed, tmp, keep)
    pool.stop()
    wall = time.perf_counter() - t0
    cpu1, _ = _children_usage()
    return {
        "target": target, "inputs": inputs, "errors": counts["error"], "accepted": counts["accepted"],
        "crashes": counts["crash"], "hangs": counts["hang"], "wall_s": wall, "cpu_s": cpu1 - cpu0 - pool.warmup_cpu,
        "peak_rss_mib": pool.peak_kib / 1024, "findings": findings,
    }  # fmt: skip


def _finding_key(kind: str, msg: str) -> str:
    """Crashes of one kind: the message without paths, numbers and quoted values."""
    msg = re.sub(r"/\S*|'[^']*'|\"[^\"]*\"|0x[0-9a-fA-F]+|\d+", "_", msg)
    return kind + ": " + " ".join(msg.split()[:8])


def _save(target: str, i: int, seed: int, tmp: Path, keep: Path) -> None:
    dst = keep / f"{target}-{i}"
    if dst.exists():
        return
    _, path, variant, what = _materialize(target, i, seed, tmp / "seeds", dst)
    (dst / "README").write_text(f"target {target}, input {i}, --seed {seed}, variant {variant}: {what}\nread: {path}\n")


def replay(target_name: str, i: int, seed: int, keep: Path) -> int:
    import fuzzing

    tmp = Path(tempfile.mkdtemp(prefix="fuzz-"))
    dst = keep / f"{target_name}-{i}"
    shutil.rmtree(dst, ignore_errors=True)
    target, path, variant, what = _materialize(target_name, i, seed, tmp / "seeds", dst)
    print(f"input {i} of {target_name} ({what}) is {path}")
    print(fuzzing.outcome(target, path, variant, dst))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    import fuzzing

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", choices=[*fuzzing.TARGETS, "all"])
    ap.add_argument("--inputs", type=int, default=1000, help="inputs per target (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per input before it counts as a hang")
    ap.add_argument("--keep", type=Path, help="folder to write each crashing or hanging input to")
    ap.add_argument(
        "--replay", type=int, metavar="I", help="materialize input I into --keep and read it in this process"
    )
    args = ap.parse_args(argv)
    if args.replay is not None:
        if args.target == "all" or args.keep is None:
            ap.error("--replay needs one target and --keep DIR")
        return replay(args.target, args.replay, args.seed, args.keep)
    names = list(fuzzing.TARGETS) if args.target == "all" else [args.target]
    tmp = Path(tempfile.mkdtemp(prefix="fuzz-"))
    results = []
    try:
        for name in names:
            r = campaign(name, args.inputs, args.seed, args.timeout, tmp, args.keep)
            results.append(r)
            print(f"{name}: {r['inputs']} inputs, {r['errors']} clean errors, {r['accepted']} accepted, "
                  f"{r['crashes']} crashes, {r['hangs']} hangs ({r['wall_s']:.1f} s)", file=sys.stderr, flush=True)  # fmt: skip
    finally:
        fuzzing.cleanup(tmp)
    head = ("target", "inputs", "clean errors", "accepted", "crashes", "hangs", "wall s", "CPU s", "peak RSS MiB")
    rows = [(r["target"], r["inputs"], r["errors"], r["accepted"], r["crashes"], r["hangs"], f"{r['wall_s']:.1f}",
             f"{r['cpu_s']:.1f}", f"{r['peak_rss_mib']:.0f}") for r in results]  # fmt: skip
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for row in (head, *rows):
        print("  ".join(str(x).rjust(w) if j else str(x).ljust(w) for j, (x, w) in enumerate(zip(row, widths))))
    bad = 0
    for r in results:
        for key, (i, msg, what) in sorted(r["findings"].items()):
            bad += 1
            print(f"\n{r['target']} input {i} ({what}): {msg}\n  replay: python benchmarks/fuzz.py {r['target']} "
                  f"--replay {i} --seed {args.seed} --keep DIR")  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _measure import timed_main

    # per target above: the workers' wall, CPU and peak RSS; here: the whole run's
    sys.exit(timed_main(main, sys.stdout))
