#!/usr/bin/env bash
# Every check that waits on a GPU, in one device call (the tool library's `run`; carry [".whl"]), most wanted first,
# each step under its own time limit so that the call fits the 10 minutes one command may take (590 s in all; the
# first step builds the injection library with nvcc). Each step's output
# goes to $OUT/<step>.log and its exit status to $OUT/steps.txt ($OUT: the device's result folder; ./gpu-session-out
# elsewhere). Without a GPU every step fails at once with its one-line reason.
#
#   .whl/  wheels the device cannot download (it reaches nothing outside): OR-Tools and what it needs, for the
#          device's Python (README, "Trace your own kernel"):
#          python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#            --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#            -d .whl ortools==9.15.6755 protobuf==6.33.1 immutabledict
#
#   bash benchmarks/gpu_session.sh            # on the device, from the repository root
#
# The steps:
# 1. bench-trace-each / bench-trace-one: `placement trace`'s recording once its ring wraps (1.05-1.3 M records a
#    second on an H100, 26 Nov 2026, whatever the ring's size), with the waiting warps polling the host's drained
#    count each (the default) or one at a time (PLACEMENT_TRACE_POLL=one, the experiment that tests the guess that
#    the polls flood the bus): benchmarks/bench_trace.py at n = 2^22 and 2^24;
# 2. calibrate: `placement calibrate --quick`, whose global atomics across L2 units (atomic_global_spread) have not
#    run on a GPU yet;
# 3. trace-apps: tests/test_sanitizer_gpu.py, the five trace apps against the generators (10 passed on an H100).
set -u
PY=${PYTHON:-python3}
OUT=${OUT:-$PWD/gpu-session-out}
mkdir -p "$OUT"
: >"$OUT/steps.txt"
export PYTHONPATH=$PWD
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install --quiet --no-deps --target /tmp/gpu-session-site .whl/*.whl >"$OUT/wheels.log" 2>&1 \
        && export PYTHONPATH=/tmp/gpu-session-site:$PWD
fi

step() {  # step NAME LIMIT_S COMMAND...
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "$name rc=$rc ${limit}s-limit $((SECONDS - t0))s" | tee -a "$OUT/steps.txt"
}

step nvidia-smi 20 nvidia-smi
step bench-trace-each 180 "$PY" benchmarks/bench_trace.py --sizes 22,24 --repeat 1 --poll each
step bench-trace-one 120 "$PY" benchmarks/bench_trace.py --sizes 22,24 --repeat 1 --poll one
step calibrate 120 "$PY" -m placement.cli calibrate --quick -o "$OUT/calibrated.toml" --json
step trace-apps 150 "$PY" -m pytest -q -p no:cacheprovider tests/test_sanitizer_gpu.py
