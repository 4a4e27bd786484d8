"""Every reader, fed mutated input: a result or a clean InputError with a one-line message, nothing else.

The targets, seeds and mutations are ``tests/fuzzing.py``'s; hypothesis drives the
mutations through ``st.randoms()`` for a bounded number of examples per target
(derandomized, so every run tries the same inputs; ``benchmarks/fuzz.py`` runs
long campaigns). No example database is written.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzing

EXAMPLES = {"gpu": 30, "measurements": 15, "suite": 30, "accelsim": 30, "read": 30, "iter_batches": 30}
DEFAULT_EXAMPLES = 25


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    root = tmp_path_factory.mktemp("seeds")
    out = {}
    for name, target in fuzzing.TARGETS.items():
        d = root / name
        d.mkdir()
        out[name] = target.seeds(d)
    return out


def _check(target: fuzzing.Target, seed: fuzzing.Seed, rng, root: Path) -> None:
    work = Path(tempfile.mkdtemp(dir=root))
    try:
        variant = rng.randrange(target.variants)
        path, what = fuzzing.mutate(rng, seed, work)
        kind, msg = fuzzing.outcome(target, path, variant, work)
        assert kind in ("accepted", "error"), f"{target.name} ({seed.member.name}, {what}, variant {variant}): {msg}"
    finally:
        fuzzing.cleanup(work)


@pytest.mark.parametrize("name", list(fuzzing.TARGETS))
def test_seeds_are_accepted(seeds, name, tmp_path):
    """Unmutated, every seed reads (or is refused only where the target says so): the fuzzing starts from valid input."""
    target = fuzzing.TARGETS[name]
    for seed in seeds[name]:
        for v in range(target.variants):
            kind, msg = fuzzing.outcome(target, seed.path, v, tmp_path)
            if (seed.path.name, v) in target.rejected_seeds:
                assert kind == "error", msg
            else:
                assert kind == "accepted", f"{seed.path.name} variant {v}: {msg}"


@pytest.mark.parametrize("name", list(fuzzing.TARGETS))
def test_mutated_input_gives_a_result_or_a_clean_error(seeds, name, tmp_path):
    target = fuzzing.TARGETS[name]

    @settings(max_examples=EXAMPLES.get(name, DEFAULT_EXAMPLES), deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
    @given(st.integers(0, len(seeds[name]) - 1), st.randoms(use_true_random=False))
    def run(i, rng):
        _check(target, seeds[name][i], rng, tmp_path)

    run()


@pytest.mark.parametrize("name", list(fuzzing.TARGETS))
def test_paths_that_are_not_readable_files(seeds, name, tmp_path):
    """A folder, a file that cannot be read, a dangling link and an empty file in place of each seed's file."""
    import random

    target = fuzzing.TARGETS[name]
    kinds = set()
    for i, seed in enumerate(seeds[name]):
        for k in range(12):
            work = tmp_path / f"w{i}-{k}"
            work.mkdir()
            src = seed.path if seed.path.is_dir() else seed.path.parent
            shutil.copytree(src, work / "in", symlinks=True)
            path = work / "in" / seed.path.relative_to(src) if seed.path != src else work / "in"
            kinds.add(fuzzing.mutate_path(random.Random(k), work / "in" / seed.member.relative_to(src)))
            kind, msg = fuzzing.outcome(target, path, 0, work)
            assert kind in ("accepted", "error"), f"{seed.member.name}: {msg}"
            fuzzing.cleanup(work)
    assert {"directory", "dangling link", "empty"} <= kinds
